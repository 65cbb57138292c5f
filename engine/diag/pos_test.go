package diag

import "testing"

func TestAdvance(t *testing.T) {
	start := Pos{Line: 4, Column: 11}
	tests := []struct {
		line, col int
		want      Pos
	}{
		{1, 1, Pos{4, 11}},
		{1, 6, Pos{4, 16}},
		{2, 3, Pos{5, 3}},
		{0, 0, start},
		{1, 0, start},
		{3, 0, Pos{6, 0}},
	}
	for _, tt := range tests {
		if got := start.Advance(tt.line, tt.col); got != tt.want {
			t.Errorf("Advance(%d, %d) = %v, want %v", tt.line, tt.col, got, tt.want)
		}
	}
}

func TestBlockScalar(t *testing.T) {
	src := []byte("hooks:\n  - when: |\n\n      x &&\n        y\n    stage: after_planning\n")
	start, indent, ok := BlockScalar(src, 2)
	if !ok || start != (Pos{3, 7}) || indent != 6 {
		t.Fatalf("BlockScalar = %v, %d, %v; want {3 7}, 6, true", start, indent, ok)
	}
	// The scalar's value is "\nx &&\n  y\n": "x" is at 2:1 and "y" at 3:3.
	if got, want := start.AdvanceIndented(2, 1, indent), (Pos{4, 7}); got != want {
		t.Errorf("x at %v, want %v", got, want)
	}
	if got, want := start.AdvanceIndented(3, 3, indent), (Pos{5, 9}); got != want {
		t.Errorf("y at %v, want %v", got, want)
	}
	if _, _, ok := BlockScalar([]byte("a: |\n"), 1); ok {
		t.Errorf("BlockScalar without content: ok = true")
	}
}

func TestByteColumn(t *testing.T) {
	line := []byte("q: \"héllo\" x")
	tests := []struct{ char, want int }{
		{0, 0}, {1, 1}, {5, 5}, {6, 6}, {7, 8}, {12, 13}, {14, 15},
	}
	for _, tt := range tests {
		if got := ByteColumn(line, tt.char); got != tt.want {
			t.Errorf("ByteColumn(%d) = %d, want %d", tt.char, got, tt.want)
		}
	}
}
