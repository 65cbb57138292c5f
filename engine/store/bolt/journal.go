package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"go.etcd.io/bbolt"
)

// JournalName is the name of the store's journal in its directory, beside FileName;
// RetiredJournalName that of the journal retired for a checkpoint, whose writes are
// older than the journal's.
const (
	JournalName        = "agentd.journal"
	RetiredJournalName = "agentd.journal.retired"
)

// checkpointBytes is the journal's size past which it is retired and its writes are
// applied to the bolt file (checkpoint).
const checkpointBytes = 4 << 20

// The journal is what makes a commit cheap: a commit appends its batch to the journal
// in one write (and, in SyncAlways, fsyncs it) instead of running a bbolt transaction,
// whose copy-on-write B+tree rewrites a leaf and every branch above it and writes each
// page apart. Once the journal holds checkpointBytes it is retired (renamed to
// RetiredJournalName) and a new one takes the commits, while in the background one
// bbolt transaction applies every write the retired one holds, in order, and empties
// it; Open applies what a crash left in both the same way, the retired one first.
// Until their checkpoint the values the journals hold stay pending in memory
// (Store.pending), where reads find them.
//
// A batch is one frame:
//
//	length of the body (4 bytes, big-endian) | CRC-32C of the body (4) | body
//
// and the body is the batch's writes, each
//
//	stamp (8 bytes, big-endian) | length of the value (4), or 0xffffffff for a deletion | value
//
// A frame cut short or whose checksum does not match ends the journal: it is the write
// a crash interrupted, which was never answered (a commit is answered after its frame
// is written whole).
type journal struct {
	f    *os.File
	size int64
	buf  []byte // the frame being written, reused
}

// deletion is the length that marks a deletion in a journal frame.
const deletion = 0xffffffff

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// openJournal opens (creating it if need be) the journal at path.
func openJournal(path string) (*journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return &journal{f: f}, nil
}

// append writes the frame of writes at the journal's end, fsyncing it when sync is
// set. A failed append may leave part of the frame, which replay ignores; the caller
// stops the store.
func (j *journal) append(writes []write, sync bool) error {
	j.buf = appendFrame(j.buf[:0], writes)
	if _, err := j.f.WriteAt(j.buf, j.size); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	j.size += int64(len(j.buf))
	if sync {
		if err := j.f.Sync(); err != nil {
			return fmt.Errorf("journal: fsync: %w", err)
		}
	}
	return nil
}

// appendFrame appends the frame of writes to b.
func appendFrame(b []byte, writes []write) []byte {
	start := len(b)
	b = append(b, make([]byte, 8)...)
	for _, w := range writes {
		b = binary.BigEndian.AppendUint64(b, w.stamp)
		if w.value == nil {
			b = binary.BigEndian.AppendUint32(b, deletion)
			continue
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(w.value)))
		b = append(b, w.value...)
	}
	body := b[start+8:]
	binary.BigEndian.PutUint32(b[start:], uint32(len(body)))
	binary.BigEndian.PutUint32(b[start+4:], crc32.Checksum(body, castagnoli))
	return b
}

// replay returns the writes of the journal's frames up to the first incomplete or
// damaged one, in order.
func (j *journal) replay() ([]write, error) {
	data, err := io.ReadAll(io.NewSectionReader(j.f, 0, 1<<62))
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	j.size = int64(len(data))
	writes, _, err := readFrames(data)
	return writes, err
}

// readFrames returns the writes of the frames data begins with, up to the first
// incomplete frame or the first whose checksum does not match, and whether that is
// all of data (whole); the values share data. A frame whose checksum matches and
// whose body does not decode is an error: the journal is damaged, not cut short.
func readFrames(data []byte) (writes []write, whole bool, err error) {
	for len(data) >= 8 {
		n := uint64(binary.BigEndian.Uint32(data))
		if n > uint64(len(data)-8) || crc32.Checksum(data[8:8+n], castagnoli) != binary.BigEndian.Uint32(data[4:]) {
			break
		}
		if writes, err = decodeFrame(writes, data[8:8+n]); err != nil {
			return nil, false, err
		}
		data = data[8+n:]
	}
	return writes, len(data) == 0, nil
}

// decodeFrame appends the writes of a frame's body to writes; the values share body.
func decodeFrame(writes []write, body []byte) ([]write, error) {
	for len(body) > 0 {
		if len(body) < 12 {
			return nil, errors.New("journal: a frame ends inside a write")
		}
		w := write{stamp: binary.BigEndian.Uint64(body)}
		n := binary.BigEndian.Uint32(body[8:])
		body = body[12:]
		if n != deletion {
			if uint64(n) > uint64(len(body)) {
				return nil, errors.New("journal: a value runs past its frame")
			}
			// An empty value is a value (a rate-limit window's), never a deletion.
			w.value, body = body[:n:n], body[n:]
		}
		writes = append(writes, w)
	}
	return writes, nil
}

// empty truncates the journal once its writes are in the bolt file, fsyncing the
// truncation when sync is set (so that a power loss cannot bring back writes the bolt
// file has since replaced).
func (j *journal) empty(sync bool) error {
	if err := j.f.Truncate(0); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	j.size = 0
	if sync {
		if err := j.f.Sync(); err != nil {
			return fmt.Errorf("journal: fsync: %w", err)
		}
	}
	return nil
}

// apply writes writes to the log bucket of tx, in order, leaving out a value that a
// later write in writes deletes, and its deletion: a request's state and record are
// rewritten at each stage call and check, and each rewrite deletes the value it
// replaces, so most of what a journal holds never needs to reach the file.
func apply(tx *bbolt.Tx, writes []write) error {
	log := tx.Bucket(bucketLog)
	// Stamps only grow: a split page is left full rather than half full.
	log.FillPercent = 1
	// deleted holds the stamps writes deletes: true once the value was left out.
	deleted := make(map[uint64]bool)
	for _, w := range writes {
		if w.value == nil {
			deleted[w.stamp] = false
		}
	}
	for _, w := range writes {
		var err error
		switch left, ok := deleted[w.stamp]; {
		case w.value != nil && ok:
			deleted[w.stamp] = true
		case w.value != nil:
			err = log.Put(stampKey(w.stamp), w.value)
		case !left:
			err = log.Delete(stampKey(w.stamp))
		}
		if err != nil {
			return fmt.Errorf("stamp %d: %w", w.stamp, err)
		}
	}
	return nil
}

// replayRetired returns the writes of the retired journal at path, none when there is
// none, and whether it was read whole. A retired journal that a power loss cut short
// (its writes were not all on disk when the newer journal's were) means the newer
// journal's writes are to be dropped too, so that what survives is a prefix of what
// was committed.
func replayRetired(path string) (writes []write, whole bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("journal: %w", err)
	}
	return readFrames(data)
}

// removeRetired removes the retired journal of the store in dir, once its writes are
// in the bolt file.
func removeRetired(dir string) error {
	if err := os.Remove(filepath.Join(dir, RetiredJournalName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// syncDir fsyncs directory dir, so that a rename or a new file in it survives a power
// loss.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
