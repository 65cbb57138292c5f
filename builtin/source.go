package builtin

import (
	"bytes"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/agentd-dev/agentd/engine/diag"
)

// Source is one config file being loaded: its name (relative to the config directory)
// and contents, used to turn yaml.Node positions into diag positions.
type Source struct {
	Name  string
	Data  []byte
	lines [][]byte
}

// NewSource returns a Source over data.
func NewSource(name string, data []byte) *Source {
	return &Source{Name: name, Data: data, lines: bytes.Split(data, []byte{'\n'})}
}

// Pos returns the position of n with a byte column.
func (s *Source) Pos(n *yaml.Node) diag.Pos {
	if n == nil || n.Line <= 0 {
		return diag.Pos{}
	}
	var line []byte
	if n.Line-1 < len(s.lines) {
		line = s.lines[n.Line-1]
	}
	return diag.Pos{Line: n.Line, Column: diag.ByteColumn(line, n.Column)}
}

// SnippetPos maps a position inside the text of scalar n (an embedded CEL expression;
// 1-based line and byte column, as expr reports them) to the file, accounting
// for quotes and block scalars. A position past the end of the text maps to just after
// its last character. Inside a quoted scalar whose escapes span lines the file line
// cannot be recovered, so such positions map to the scalar's start.
func (s *Source) SnippetPos(n *yaml.Node, line, col int) diag.Pos {
	lines := strings.Split(strings.TrimRight(n.Value, "\n"), "\n")
	if line > len(lines) {
		line, col = len(lines), len(lines[len(lines)-1])+1
	}
	p := s.Pos(n)
	switch n.Style {
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		if line > 1 {
			return p
		}
		p.Column++
	case yaml.LiteralStyle, yaml.FoldedStyle:
		if start, indent, ok := diag.BlockScalar(s.Data, n.Line); ok {
			return start.AdvanceIndented(line, col, indent)
		}
	}
	return p.Advance(line, col)
}

// Errorf returns a diag error of kind at n's position.
func (s *Source) Errorf(kind diag.Kind, n *yaml.Node, field, format string, args ...any) *diag.Error {
	return s.ErrorAt(kind, s.Pos(n), field, fmt.Sprintf(format, args...))
}

// ErrorAt returns a diag error of kind at p.
func (s *Source) ErrorAt(kind diag.Kind, p diag.Pos, field, msg string) *diag.Error {
	return &diag.Error{Kind: kind, File: s.Name, Line: p.Line, Column: p.Column, Field: field, Message: msg}
}
