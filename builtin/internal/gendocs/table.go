package main

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/builtin"
)

// The markers around the action table in the README.
const (
	actionsBegin = "<!-- actions:begin -->"
	actionsEnd   = "<!-- actions:end -->"
)

// spliceTable returns readme with the text between the action markers replaced by the
// action table.
func spliceTable(readme []byte) ([]byte, error) {
	begin := bytes.Index(readme, []byte(actionsBegin))
	end := bytes.Index(readme, []byte(actionsEnd))
	if begin < 0 || end < begin || bytes.Count(readme, []byte(actionsBegin)) != 1 || bytes.Count(readme, []byte(actionsEnd)) != 1 {
		return nil, errors.New("want " + actionsBegin + " and then " + actionsEnd + ", once each")
	}
	begin += len(actionsBegin)
	var b bytes.Buffer
	b.Write(readme[:begin])
	b.WriteString("\n" + table())
	b.Write(readme[end:])
	return b.Bytes(), nil
}

// table renders the action reference as a Markdown table, one row per action.
func table() string {
	var b strings.Builder
	b.WriteString("| action | stages | params | what it does |\n| --- | --- | --- | --- |\n")
	for _, name := range builtin.Names() {
		s, _ := builtin.Lookup(name)
		stages := "any"
		if s.Stages != nil {
			parts := make([]string, len(s.Stages))
			for i, st := range s.Stages {
				parts[i] = "`" + string(st) + "`"
			}
			stages = strings.Join(parts, ", ")
		}
		params := make([]string, len(s.Params))
		for i, p := range s.Params {
			params[i] = paramCell(p)
		}
		if len(s.RequireAny) > 0 {
			params = append(params, "at least one of "+codeList(s.RequireAny, " or ")+" is required")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", name, stages, strings.Join(params, "<br>"), escape(s.Summary))
	}
	return b.String()
}

// paramCell describes one param: `name` (type, required or default): doc.
func paramCell(p builtin.Param) string {
	facts := []string{typeText(p.Type)}
	if p.Required {
		facts = append(facts, "required")
	}
	if p.Default != nil {
		facts = append(facts, "default "+defaultText(p.Default))
	}
	return fmt.Sprintf("`%s` (%s): %s", p.Name, strings.Join(facts, ", "), escape(p.Doc))
}

func typeText(t builtin.Type) string {
	switch t.Kind {
	case builtin.KindInt:
		return "integer ≥ " + strconv.Itoa(t.Min)
	case builtin.KindEnum:
		return codeList(t.Values, ` \| `)
	case builtin.KindEnumList:
		return "list of " + codeList(t.Values, ` \| `)
	case builtin.KindStringList:
		return "list of string"
	case builtin.KindStringMap:
		return "map of string"
	case builtin.KindCEL:
		return "CEL " + t.Result.String()
	case builtin.KindCELMap:
		return "map of CEL " + t.Result.String()
	}
	return string(t.Kind)
}

// defaultText writes a default as code; a string that is not printable as it is gets
// quoted ("\n").
func defaultText(v any) string {
	switch v := v.(type) {
	case string:
		if q := strconv.Quote(v); q[1:len(q)-1] != v {
			return "`" + q + "`"
		}
		return "`" + v + "`"
	case time.Duration:
		return "`" + formatDuration(v) + "`"
	}
	return fmt.Sprintf("`%v`", v)
}

func codeList(values []string, sep string) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = "`" + v + "`"
	}
	return strings.Join(parts, sep)
}

// escape keeps a | in text from ending a table cell.
func escape(text string) string {
	return strings.ReplaceAll(text, "|", `\|`)
}
