package report

import (
	"strings"
	"testing"
	"time"
)

func TestFormats(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Count(1234567), "1,234,567"},
		{Count(999), "999"},
		{Count(-5000), "-5,000"},
		{NS(950), "950 ns"},
		{NS(12_345), "12.3 µs"},
		{Duration(3 * time.Millisecond), "3.00 ms"},
		{Duration(-251817 * time.Nanosecond), "−252 µs"},
		{Ratio(3, 2), "1.50×"},
		{Ratio(1, 0), "n/a"},
		{Bytes(3 << 20), "3.0 MiB"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestTableHasEveryRow(t *testing.T) {
	out := Table([]Row{{ID: "1a", Figure: "f", Agentd: "a", Peer: "p", Ratio: "r", Goal: "g"}, {ID: "2"}})
	if n := strings.Count(out, "\n"); n != 4 {
		t.Errorf("table has %d lines:\n%s", n, out)
	}
	if !strings.Contains(out, "| 1a | f | a | p | r | g |") {
		t.Errorf("table lacks row 1a:\n%s", out)
	}
}
