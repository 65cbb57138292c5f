package decisionlog

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
)

// FileOptions configure NewFileSink.
type FileOptions struct {
	Path string
	// MaxBytes is the size past which the file is rotated; 0 means DefaultFileMaxBytes.
	MaxBytes int64
	// Keep is how many rotated files are kept (Path.1, the newest, to Path.Keep); 0
	// keeps none.
	Keep int
}

// DefaultFileMaxBytes applies when FileOptions.MaxBytes is 0.
const DefaultFileMaxBytes = 100 << 20

// NewFileSink appends each event as one JSON line to a file (created 0600). When a line
// would take the file past MaxBytes, the file is rotated first: Path.N-1 becomes
// Path.N (the one beyond Keep is overwritten), Path becomes Path.1, and a new Path is
// started. Lines are buffered and written whenever the logger is idle. A write that
// fails loses the lines buffered since the last one that did (counted as
// write_failed); the next event opens the file again.
func NewFileSink(opts FileOptions) (Sink, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultFileMaxBytes
	}
	s := &fileSink{opts: opts}
	if err := s.open(); err != nil {
		return nil, err
	}
	return s, nil
}

type fileSink struct {
	opts FileOptions
	f    *os.File
	w    *bufio.Writer
	size int64
	// pending counts the lines in w not yet written to the file.
	pending int
	in      *instruments
	// failing is set from a failure until the next successful write: one warning each.
	failing bool
}

func (s *fileSink) name() string         { return "file" }
func (s *fileSink) wants() wants         { return wants{payload: true, line: true} }
func (s *fileSink) bind(in *instruments) { s.in = in }

func (s *fileSink) open() error {
	f, err := os.OpenFile(s.opts.Path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("decision log file: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("decision log file: %w", err)
	}
	s.f, s.w, s.size = f, bufio.NewWriterSize(f, 64<<10), info.Size()
	return nil
}

func (s *fileSink) write(_ *Event, line []byte) {
	n := int64(len(line)) + 1
	if s.w != nil && s.size > 0 && s.size+n > s.opts.MaxBytes {
		if err := s.rotate(); err != nil {
			s.fail(err, 1)
			return
		}
	}
	if s.w == nil {
		if err := s.open(); err != nil {
			s.fail(err, 1)
			return
		}
	}
	_, _ = s.w.Write(line)
	if err := s.w.WriteByte('\n'); err != nil {
		s.fail(err, 1)
		return
	}
	s.size += n
	s.pending++
}

// rotate writes out and closes the file and shifts the rotated ones by one.
func (s *fileSink) rotate() error {
	s.flush()
	if s.f == nil {
		return nil // the flush failed and closed it: the next write starts over
	}
	err := s.f.Close()
	s.f, s.w = nil, nil
	if s.opts.Keep == 0 {
		return errors.Join(err, os.Remove(s.opts.Path), s.open())
	}
	for i := s.opts.Keep - 1; i >= 1; i-- {
		if rerr := os.Rename(s.rotated(i), s.rotated(i+1)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	return errors.Join(err, os.Rename(s.opts.Path, s.rotated(1)), s.open())
}

func (s *fileSink) rotated(i int) string { return fmt.Sprintf("%s.%d", s.opts.Path, i) }

func (s *fileSink) flush() {
	if s.w == nil || s.pending == 0 {
		return
	}
	if err := s.w.Flush(); err != nil {
		s.fail(err, 0)
		return
	}
	s.in.wrote("file", s.pending)
	s.pending, s.failing = 0, false
}

// fail counts the buffered lines and n more as lost, logs err, and closes the file so
// that the next write opens it again.
func (s *fileSink) fail(err error, n int) {
	s.in.drop("file", DropWriteFailed, s.pending+n)
	if !s.failing {
		s.in.warn("file", err)
	}
	s.failing = true
	if s.f != nil {
		_ = s.f.Close()
	}
	s.f, s.w, s.pending = nil, nil, 0
}

func (s *fileSink) close(context.Context) error {
	s.flush()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f, s.w = nil, nil
	return err
}
