package expr

import (
	"time"

	"github.com/agentd-dev/agentd/engine"
)

// celValue is the value expressions see for v: its JSON form (engine.View) as Go values
// cel-go adapts, namely maps of the present members, lists, strings, bools, int64 for
// every integer (durations in nanoseconds), times as RFC 3339 strings with nanoseconds,
// and nil for null. A nil steps list is null, as in JSON: size(plan.steps) then fails
// to evaluate, like any other use of a missing value. String slices and the metadata,
// parameters and response values are shared, not copied.
func celValue(v engine.View) any {
	switch v.Kind() {
	case engine.ViewBool:
		return v.Bool()
	case engine.ViewInt:
		return v.Int()
	case engine.ViewString:
		return v.Str()
	case engine.ViewTime:
		return v.Time().Format(time.RFC3339Nano)
	case engine.ViewValue:
		return v.Value()
	case engine.ViewArray:
		if ss, ok := v.Strings(); ok {
			return ss
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = celValue(v.Index(i))
		}
		return out
	case engine.ViewObject:
		m := make(map[string]any, v.Len())
		for i := range v.NumField() {
			if name, f, ok := v.Field(i); ok {
				m[name] = celValue(f)
			}
		}
		return m
	}
	return nil
}
