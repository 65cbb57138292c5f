package decisionlog

import (
	"strconv"
	"strings"
	"testing"
)

// writes records every Write it is given.
type writes struct{ got []string }

func (w *writes) Write(p []byte) (int, error) {
	w.got = append(w.got, string(p))
	return len(p), nil
}

// Lines wait for flush, which writes them whole, at most lineWrite bytes at a time
// (a longer line alone), in order, and keeps nothing.
func TestLineBatch_WritesWholeLinesAtFlush(t *testing.T) {
	w := &writes{}
	b := &lineBatch{w: w}
	var want strings.Builder
	for i := range 200 {
		line := strings.Repeat(strconv.Itoa(i%10), 1+i*7%300) + "\n"
		if i == 100 {
			line = strings.Repeat("L", 3*lineWrite) + "\n"
		}
		b.Write([]byte(line))
		want.WriteString(line)
	}
	if len(w.got) != 0 {
		t.Fatalf("%d writes before flush", len(w.got))
	}
	b.flush()
	for i, p := range w.got {
		if !strings.HasSuffix(p, "\n") || len(p) > lineWrite && strings.Count(p, "\n") > 1 {
			t.Errorf("write %d: %d bytes, %d lines: not whole lines within %d bytes", i, len(p), strings.Count(p, "\n"), lineWrite)
		}
	}
	if got := strings.Join(w.got, ""); got != want.String() {
		t.Errorf("wrote %d bytes, want the %d gathered", len(got), want.Len())
	}
	b.flush()
	if n := len(w.got); n < 3 || strings.Join(w.got, "") != want.String() {
		t.Errorf("a second flush wrote again: %d writes", n)
	}
}
