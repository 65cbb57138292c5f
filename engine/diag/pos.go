package diag

import (
	"bytes"
	"unicode/utf8"
)

// Pos is a 1-based position in a file; Column counts bytes. Zero means unknown.
type Pos struct {
	Line   int
	Column int
}

// Advance maps a 1-based position (line, col) that a compiler reports inside an
// embedded snippet — a CEL expression, a Rego query — to the file. p is the file
// position of the snippet's first byte; the snippet's later lines are assumed to start
// at column 1 of the following file lines. A line <= 0 (position unknown) maps to p.
//
// For a plain YAML scalar p is the node's position; for a quoted one it is one column
// to the right, past the quote (escape sequences are not accounted for). For a block
// scalar (| or >) use AdvanceIndented with the start and indentation from BlockScalar.
func (p Pos) Advance(line, col int) Pos { return p.AdvanceIndented(line, col, 0) }

// AdvanceIndented is Advance for a snippet whose lines each lost indent bytes of
// leading indentation, as the lines of a YAML block scalar do: snippet line 1 maps as in
// Advance, snippet line n > 1 to file line p.Line+n-1 at column indent+col. Folded (>)
// scalars join lines, so their positions are only approximate; literal (|) ones map
// exactly.
func (p Pos) AdvanceIndented(line, col, indent int) Pos {
	switch {
	case line <= 0:
		return p
	case line == 1:
		if col <= 0 {
			return p
		}
		return Pos{Line: p.Line, Column: p.Column + col - 1}
	default:
		if col <= 0 {
			return Pos{Line: p.Line + line - 1}
		}
		return Pos{Line: p.Line + line - 1, Column: indent + col}
	}
}

// BlockScalar locates the content of a YAML block scalar whose indicator (| or >) is on
// file line indicatorLine of src, the line yaml.v3 reports for the node. It returns the
// position of the content's first byte and the content's indentation in bytes, taken
// from the first non-blank content line, for use with AdvanceIndented. ok is false when
// src has no non-blank line after indicatorLine. Explicit indentation indicators (|2)
// are not interpreted.
func BlockScalar(src []byte, indicatorLine int) (start Pos, indent int, ok bool) {
	if indicatorLine <= 0 {
		return Pos{}, 0, false
	}
	lines := bytes.Split(src, []byte{'\n'})
	for i := indicatorLine; i < len(lines); i++ {
		line := bytes.TrimSuffix(lines[i], []byte{'\r'})
		n := len(line) - len(bytes.TrimLeft(line, " "))
		if n == len(line) {
			continue // blank lines belong to the scalar but do not set its indentation
		}
		return Pos{Line: indicatorLine + 1, Column: n + 1}, n, true
	}
	return Pos{}, 0, false
}

// ByteColumn converts a 1-based character column on line, as yaml.v3 reports it, into
// the 1-based byte column diag uses. A column past the end of the line counts one byte
// per missing character; a column <= 0 stays 0.
func ByteColumn(line []byte, char int) int {
	if char <= 0 {
		return 0
	}
	off := 0
	for range char - 1 {
		if off >= len(line) {
			off++
			continue
		}
		_, size := utf8.DecodeRune(line[off:])
		off += size
	}
	return off + 1
}
