package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
)

// crashCopy copies the store's directory as a crash would leave it: the bolt file and
// the journals as the kernel holds them now, with no Close (what a SIGKILL keeps).
func crashCopy(t *testing.T, dir string) string {
	t.Helper()
	to := t.TempDir()
	for _, name := range []string{FileName, JournalName, RetiredJournalName} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if name == RetiredJournalName && errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// fillJournal writes records r-0, r-1, … of status at revision 1, with responses of
// 4,000 bytes, until the journal has passed its checkpoint size (one journal retired),
// and returns how many it wrote.
func fillJournal(t *testing.T, s *Store, status engine.RecordStatus, at time.Time) int {
	t.Helper()
	n := checkpointBytes/4000 + 10
	for i := range n {
		rec := record(fmt.Sprint("r-", i), 1, status, at)
		rec.FinalResponse = strings.Repeat("x", 4000)
		if err := s.Put(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// Writes answered before a crash are found after it: a stage call's state and record
// (one commit under Defer), a cache entry and a rate-limit count, read back from the
// journal at Open; a frame the crash cut short, or whose checksum does not match, ends
// the journal and is not applied; Open leaves the journal empty, its writes in the bolt
// file.
func TestJournal_AnsweredWritesSurviveACrash(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openDir(t, dir, Options{})
	dctx, flush := s.Defer(ctx)
	if err := s.PutRequest(dctx, &engine.RequestState{ID: "r", Request: "buy", Revision: 1}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(dctx, record("r", 1, engine.RecordRunning, time.Now())); err != nil {
		t.Fatal(err)
	}
	if err := flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.PutCache(ctx, "k", store.CacheEntry{Response: "42"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Allow(ctx, "tenant", 5, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, record("r", 2, engine.RecordSucceeded, time.Now())); err != nil {
		t.Fatal(err)
	}
	for _, tail := range []struct {
		name  string
		frame func() []byte
	}{
		{"none", func() []byte { return nil }},
		{"cut short", func() []byte {
			f := appendFrame(nil, []write{{stamp: 1 << 50, value: encodeValue(value{kind: kindCache, key: "torn"}, []byte(`{}`))}})
			return f[:len(f)-3]
		}},
		{"checksum mismatch", func() []byte {
			f := appendFrame(nil, []write{{stamp: 1 << 50, value: encodeValue(value{kind: kindCache, key: "torn"}, []byte(`{}`))}})
			f[len(f)-1] ^= 0xff
			return f
		}},
	} {
		t.Run(tail.name, func(t *testing.T) {
			copied := crashCopy(t, dir)
			journal := filepath.Join(copied, JournalName)
			if fi, err := os.Stat(journal); err != nil || fi.Size() == 0 {
				t.Fatalf("journal before the restart: %v, %v; want the writes in it", fi, err)
			}
			f, err := os.OpenFile(journal, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(tail.frame()); err != nil {
				t.Fatal(err)
			}
			_ = f.Close()
			again := openDir(t, copied, Options{})
			if fi, err := os.Stat(journal); err != nil || fi.Size() != 0 {
				t.Fatalf("journal after Open: %v, %v; want it empty", fi, err)
			}
			if st, ok, err := again.GetRequest(ctx, "r"); err != nil || !ok || st.Request != "buy" || st.Revision != 1 {
				t.Fatalf("state after the crash = %+v, %v, %v", st, ok, err)
			}
			if rec, err := again.Get(ctx, "r"); err != nil || rec.Revision != 2 || rec.Status != engine.RecordSucceeded {
				t.Fatalf("record after the crash = %+v, %v", rec, err)
			}
			if e, ok, err := again.GetCache(ctx, "k"); err != nil || !ok || e.Response != "42" {
				t.Fatalf("cache entry after the crash = %+v, %v, %v", e, ok, err)
			}
			if _, ok, _ := again.GetCache(ctx, "torn"); ok {
				t.Fatal("the write of a damaged frame was applied")
			}
			if allowed, err := again.Allow(ctx, "tenant", 1, time.Hour); err != nil || allowed {
				t.Fatalf("second event of a window counted before the crash: allowed %v, %v; want refused", allowed, err)
			}
			if got := strings.Join(keys(t, again, kindRecord), ","); got != "r" {
				t.Fatalf("records in the bolt file: %q", got)
			}
		})
	}
}

// A crash while a retired journal waits for its checkpoint loses nothing: Open applies
// the retired journal's writes, then the newer journal's (a record written in one and
// rewritten in the other reads as rewritten, its earlier value gone), and leaves no
// retired journal and an empty journal behind; a retired journal cut short drops the
// newer journal's writes, so that what survives is a prefix of what was committed.
// Commits go on while a checkpoint waits.
func TestJournal_CrashBeforeTheRetiredJournalsCheckpoint(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openDir(t, dir, Options{})
	s.checkpointing.Lock() // the checkpoint waits
	at := time.Now()
	n := fillJournal(t, s, engine.RecordRunning, at)
	if _, err := os.Stat(filepath.Join(dir, RetiredJournalName)); err != nil {
		t.Fatalf("no retired journal after %d bytes of writes: %v", n*4000, err)
	}
	if err := s.Put(ctx, record("r-0", 2, engine.RecordSucceeded, at)); err != nil {
		t.Fatal(err)
	}
	copied, torn := crashCopy(t, dir), crashCopy(t, dir)
	s.checkpointing.Unlock()

	// A power loss that cut the retired journal short drops the newer journal too.
	retired := filepath.Join(torn, RetiredJournalName)
	fi, err := os.Stat(retired)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(retired, fi.Size()-3); err != nil {
		t.Fatal(err)
	}
	if rec, err := openDir(t, torn, Options{}).Get(ctx, "r-0"); err != nil || rec.Revision != 1 {
		t.Fatalf("r-0 after a torn retired journal = %+v, %v; want revision 1 (the newer journal dropped)", rec, err)
	}

	again := openDir(t, copied, Options{})
	if rec, err := again.Get(ctx, "r-0"); err != nil || rec.Revision != 2 || rec.Status != engine.RecordSucceeded {
		t.Fatalf("r-0 after the crash = %+v, %v; want revision 2", rec, err)
	}
	if rec, err := again.Get(ctx, fmt.Sprint("r-", n-1)); err != nil || len(rec.FinalResponse) != 4000 {
		t.Fatalf("the last record after the crash = %v", err)
	}
	if _, err := os.Stat(filepath.Join(copied, RetiredJournalName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("retired journal after Open: %v; want none", err)
	}
	if fi, err := os.Stat(filepath.Join(copied, JournalName)); err != nil || fi.Size() != 0 {
		t.Fatalf("journal after Open: %v, %v; want it empty", fi, err)
	}
	if got := len(keys(t, again, kindRecord)); got != n {
		t.Fatalf("%d records in the bolt file, want %d (one value each)", got, n)
	}
}

// Once the journal holds checkpointBytes it is retired, and in the background its
// writes go into the bolt file and it is emptied; reads find every value before,
// during and after.
func TestJournal_CheckpointMovesItsWritesToTheBoltFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openDir(t, dir, Options{})
	n := fillJournal(t, s, engine.RecordSucceeded, time.Now())
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		s.committing.Lock()
		size, retired := s.journal.size, s.retired != nil
		s.release()
		if size < checkpointBytes && !retired {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("journal still holds %d bytes", size)
		}
	}
	s.mu.Lock()
	pending := len(s.pending)
	s.mu.Unlock()
	if pending >= n {
		t.Fatalf("%d of %d values still pending after the checkpoint", pending, n)
	}
	for _, id := range []string{"r-0", fmt.Sprint("r-", n-1)} {
		if rec, err := s.Get(ctx, id); err != nil || len(rec.FinalResponse) != 4000 {
			t.Fatalf("Get(%s) after the checkpoint = %v", id, err)
		}
	}
	if got := len(keys(t, s, kindRecord)); got != n {
		t.Fatalf("%d records in the bolt file, want %d", got, n)
	}
}

// FuzzReadFrames: any journal decodes to writes or an error, never a panic; the
// writes read encode back, in one frame, to a journal that reads the same, whole.
func FuzzReadFrames(f *testing.F) {
	f.Add(appendFrame(nil, []write{{stamp: 1, value: []byte("v")}, {stamp: 2}}))
	f.Add(appendFrame(appendFrame(nil, []write{{stamp: 7, value: []byte{}}}), nil))
	f.Add(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 12), 0))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		writes, _, err := readFrames(data)
		if err != nil {
			return
		}
		again, whole, err := readFrames(appendFrame(nil, writes))
		if err != nil || !whole || len(again) != len(writes) {
			t.Fatalf("%d writes read back as %d (whole %v), %v", len(writes), len(again), whole, err)
		}
		for i, w := range writes {
			if again[i].stamp != w.stamp || (again[i].value == nil) != (w.value == nil) || !bytes.Equal(again[i].value, w.value) {
				t.Fatalf("write %d = %+v, read back as %+v", i, w, again[i])
			}
		}
	})
}

// apply leaves out a value that a later write of the same journal deletes, and its
// deletion; every other write reaches the file in order.
func TestApply_ValuesDeletedInTheJournalAreLeftOut(t *testing.T) {
	db, err := bbolt.Open(filepath.Join(t.TempDir(), FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	writes := [][]write{
		{{stamp: 1, value: []byte("older")}},
		{{stamp: 2, value: []byte("a")}, {stamp: 3, value: []byte("b")}, {stamp: 2}, {stamp: 1},
			{stamp: 4, value: []byte{}}, {stamp: 9}, {stamp: 5, value: []byte("c")}, {stamp: 3}},
	}
	got := map[uint64]string{}
	if err := db.Update(func(tx *bbolt.Tx) error {
		if _, err := tx.CreateBucket(bucketLog); err != nil {
			return err
		}
		for _, w := range writes {
			if err := apply(tx, w); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketLog).ForEach(func(k, v []byte) error {
			got[binary.BigEndian.Uint64(k)] = string(v)
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	if want := map[uint64]string{4: "", 5: "c"}; !maps.Equal(got, want) {
		t.Fatalf("the log holds %v, want %v", got, want)
	}
}
