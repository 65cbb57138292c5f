package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// object is a JSON object whose members keep their order.
type object []member

type member struct {
	key   string
	value any
}

// lineWidth is the widest line writeMember puts a whole value on; a wider value is
// written one member or element per line, in the style of the hand-written schema.
const lineWidth = 110

// writeMember writes `"key": value` at indent (the indentation of its line, already
// written).
func writeMember(b *bytes.Buffer, m member, indent string) {
	key := compact(m.key)
	b.WriteString(key + ": ")
	writeValue(b, m.value, indent, len(indent)+len(key)+2)
}

// writeValue writes v, which starts at column col of a line indented by indent.
func writeValue(b *bytes.Buffer, v any, indent string, col int) {
	flat := compact(v)
	if col+len(flat) <= lineWidth {
		b.WriteString(flat)
		return
	}
	inner := indent + "  "
	switch v := v.(type) {
	case object:
		b.WriteString("{")
		for i, m := range v {
			b.WriteString(comma(i) + "\n" + inner)
			writeMember(b, m, inner)
		}
		b.WriteString("\n" + indent + "}")
	case []any:
		b.WriteString("[")
		for i, e := range v {
			b.WriteString(comma(i) + "\n" + inner)
			writeValue(b, e, inner, len(inner))
		}
		b.WriteString("\n" + indent + "]")
	default:
		b.WriteString(flat)
	}
}

func comma(i int) string {
	if i == 0 {
		return ""
	}
	return ","
}

// compact returns v on one line, with a space after each colon and comma.
func compact(v any) string {
	switch v := v.(type) {
	case object:
		var b bytes.Buffer
		b.WriteString("{")
		for i, m := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(compact(m.key) + ": " + compact(m.value))
		}
		return b.String() + "}"
	case []any:
		var b bytes.Buffer
		b.WriteString("[")
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(compact(e))
		}
		return b.String() + "]"
	case []string:
		elems := make([]any, len(v))
		for i, s := range v {
			elems[i] = s
		}
		return compact(elems)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("gendocs: %v", err)) // only strings, numbers and booleans get here
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// jsonDefault is a param default as the schema states it; a duration is written as the
// config does.
func jsonDefault(v any) any {
	if d, ok := v.(time.Duration); ok {
		return formatDuration(d)
	}
	return v
}

// formatDuration writes d without the zero units time.Duration.String adds ("10m", not
// "10m0s").
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
