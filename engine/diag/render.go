package diag

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"
)

// gutter starts the quoted source line and the caret line.
const gutter = " | "

// Render writes every entry of l as `file:line:col: kind: message`. When source returns
// the file's content and the entry's line exists, the line follows verbatim (tabs
// included), and when the column is known a caret line marks it: the caret's prefix
// copies every tab of the source line before the column and puts one space for any other
// character, so the caret lines up however the terminal expands tabs. A column past the
// end of the line puts the caret just after the line.
//
// source may be nil; it is called at most once per file. Write errors are ignored: Render
// is for terminals and logs, and w is expected to buffer or never fail.
func (l List) Render(w io.Writer, source func(file string) ([]byte, bool)) {
	var b strings.Builder
	cache := map[string][]byte{}
	for _, e := range l {
		if e == nil {
			continue
		}
		b.WriteString(e.Error())
		b.WriteByte('\n')
		line, ok := sourceLine(e, source, cache)
		if !ok {
			continue
		}
		b.WriteString(gutter)
		b.Write(line)
		b.WriteByte('\n')
		if e.Column > 0 {
			b.WriteString(gutter)
			writeCaretPrefix(&b, line, e.Column)
			b.WriteString("^\n")
		}
	}
	_, _ = io.WriteString(w, b.String())
}

// sourceLine returns line e.Line of e.File without its line ending, if available.
func sourceLine(e *Error, source func(string) ([]byte, bool), cache map[string][]byte) ([]byte, bool) {
	if source == nil || e.File == "" || e.Line <= 0 {
		return nil, false
	}
	src, seen := cache[e.File]
	if !seen {
		var ok bool
		if src, ok = source(e.File); !ok {
			src = nil
		}
		cache[e.File] = src
	}
	if src == nil {
		return nil, false
	}
	for range e.Line - 1 {
		var ok bool
		if _, src, ok = cutLine(src); !ok {
			return nil, false
		}
	}
	line, _, _ := cutLine(src)
	return line, true
}

// cutLine splits src after its first line, and reports whether a line ending was
// found. A line ends at LF, CRLF or a lone CR, as YAML (whose parser positions most
// config errors) counts lines.
func cutLine(src []byte) (line, rest []byte, found bool) {
	i := bytes.IndexAny(src, "\r\n")
	switch {
	case i < 0:
		return src, nil, false
	case src[i] == '\r' && i+1 < len(src) && src[i+1] == '\n':
		return src[:i], src[i+2:], true
	}
	return src[:i], src[i+1:], true
}

// writeCaretPrefix writes the whitespace that puts a caret under byte column col.
func writeCaretPrefix(b *strings.Builder, line []byte, col int) {
	prefix := line[:min(col-1, len(line))]
	for len(prefix) > 0 {
		r, size := utf8.DecodeRune(prefix)
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
		prefix = prefix[size:]
	}
}
