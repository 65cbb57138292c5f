package engine_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/internal/wiretest"
	"github.com/agentd-dev/agentd/engine/op"
)

// render is the JSON value v describes, as wiretest.JSON decodes JSON text.
func render(tb testing.TB, v engine.View) any {
	switch v.Kind() {
	case engine.ViewBool:
		return v.Bool()
	case engine.ViewInt:
		return json.Number(strconv.FormatInt(v.Int(), 10))
	case engine.ViewString:
		return v.Str()
	case engine.ViewTime:
		return v.Time().Format(time.RFC3339Nano)
	case engine.ViewValue:
		return wiretest.JSON(tb, v.Value())
	case engine.ViewArray:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = render(tb, v.Index(i))
		}
		return out
	case engine.ViewObject:
		out := map[string]any{}
		for i := range v.NumField() {
			name, f, ok := v.Field(i)
			if got := v.MemberIndex(name); got != i {
				tb.Fatalf("MemberIndex(%q) = %d, want %d", name, got, i)
			}
			if got := v.MemberIndex(name + "_"); got != -1 {
				tb.Fatalf("MemberIndex(%q) = %d, want -1", name+"_", got)
			}
			if ok {
				out[name] = render(tb, f)
			}
		}
		if len(out) != v.Len() {
			tb.Fatalf("Len() = %d for %d members", v.Len(), len(out))
		}
		return out
	}
	return nil
}

// member is the declared member of v named name.
func member(tb testing.TB, v engine.View, name string) engine.View {
	i := v.MemberIndex(name)
	if i < 0 {
		tb.Fatalf("no member %q", name)
	}
	_, m, _ := v.Field(i)
	return m
}

// TestView_AgreesWithJSON: the View of generated plans, steps, results and calls, nil
// ones included, describes exactly what encoding/json writes for them.
func TestView_AgreesWithJSON(t *testing.T) {
	r := wiretest.Rand(1)
	check := func(what string, v engine.View, x any) {
		t.Helper()
		wiretest.Same(t, what, render(t, v), wiretest.JSON(t, x))
	}
	for range 2000 {
		p, res, call := wiretest.Plan(r), wiretest.Result(r), wiretest.Call(r)
		check("plan", engine.ViewOf(p), p)
		check("result", engine.ViewOf(res), res)
		check("call", engine.ViewOf(call), call)
		if len(p.Steps) > 0 {
			check("step", engine.ViewOf(&p.Steps[0]), &p.Steps[0])
		}
	}
	check("nil plan", engine.ViewOf((*engine.RoutingPlan)(nil)), (*engine.RoutingPlan)(nil))
	check("nil call", engine.ViewOf((*op.Call)(nil)), (*op.Call)(nil))
	if v := member(t, engine.ViewOf(&engine.RoutingPlan{}), "steps"); v.Kind() != engine.ViewNull {
		t.Fatalf("nil steps are %v, want null", v.Kind())
	}
}

func TestView_SharesStringSlices(t *testing.T) {
	s := engine.RoutingStep{DependsOn: []string{"a"}}
	v := member(t, engine.ViewOf(&s), "depends_on")
	if deps, ok := v.Strings(); !ok || &deps[0] != &s.DependsOn[0] {
		t.Fatalf("Strings() = %v, %v; want the step's own slice", deps, ok)
	}
}

func TestViewOf_PanicsOnTypesJSONWouldRenderDifferently(t *testing.T) {
	for name, f := range map[string]func(){
		"float":    func() { engine.ViewOf(&struct{ F float64 }{}) },
		"embedded": func() { engine.ViewOf(&struct{ engine.NeedsUserInput }{}) },
		"string": func() {
			engine.ViewOf(&struct {
				N int `json:",string"`
			}{})
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: ViewOf did not panic", name)
				}
			}()
			f()
		}()
	}
}

// Values of one Go type share a ViewType, so that a member index found on one holds for
// the next; values of other types, and null, do not.
func TestView_Type(t *testing.T) {
	a, b := engine.ViewOf(&engine.RoutingStep{StepID: "a"}), engine.ViewOf(&engine.RoutingStep{StepID: "b", Namespace: "n"})
	plan := engine.ViewOf(&engine.RoutingPlan{})
	if a.Type() != b.Type() {
		t.Error("two steps have different ViewTypes")
	}
	if a.Type() == plan.Type() || a.Type() == (engine.View{}).Type() {
		t.Error("a step has the ViewType of a plan or of null")
	}
	if i := a.MemberIndex("namespace"); i < 0 || i != b.MemberIndex("namespace") {
		t.Errorf("MemberIndex(namespace) = %d and %d", i, b.MemberIndex("namespace"))
	}
}

// StringMember and MapMember read a string or a map[string]any member as Field does
// (a nil map is null), and no member of another type; a member is present exactly when
// encoding/json writes it.
func TestView_StringAndMapMembers(t *testing.T) {
	type wire struct {
		A  string          `json:"a"`
		B  string          `json:"b,omitempty"`
		C  string          `json:"c,omitzero"`
		D  string          `json:"d,omitempty,omitzero"`
		MA map[string]any  `json:"ma"`
		MB map[string]any  `json:"mb,omitempty"`
		MC map[string]any  `json:"mc,omitzero"`
		MD map[string]any  `json:"md,omitzero,omitempty"`
		P  *string         `json:"p"`
		PM *map[string]any `json:"pm"`
		V  any             `json:"v"`
		N  int             `json:"n"`
	}
	p, full, empty := "x", map[string]any{"k": 1.0}, map[string]any{}
	for _, w := range []wire{
		{},
		{MA: empty, MB: empty, MC: empty, MD: empty},
		{A: "a", B: "b", C: "c", D: "d", MA: full, MB: full, MC: full, MD: full, P: &p, PM: &full, V: full, N: 1},
	} {
		written := wiretest.JSON(t, &w).(map[string]any)
		v := engine.ViewOf(&w)
		for i := range v.NumField() {
			name, f, present := v.Field(i)
			s, sPresent, isString := v.StringMember(i)
			m, mPresent, isMap := v.MapMember(i)
			_, inJSON := written[name]
			switch {
			case isString != slices.Contains([]string{"a", "b", "c", "d"}, name):
				t.Errorf("%+v: member %s: isString = %v", w, name, isString)
			case isMap != slices.Contains([]string{"ma", "mb", "mc", "md"}, name):
				t.Errorf("%+v: member %s: isMap = %v", w, name, isMap)
			case (isString && sPresent != inJSON) || (isMap && mPresent != inJSON):
				t.Errorf("%+v: member %s: present = %v; encoding/json writes it: %v", w, name, sPresent || mPresent, inJSON)
				t.Errorf("%+v: member %s: isMap = %v", w, name, isMap)
			case isString && (sPresent != present || present && s != f.Str()):
				t.Errorf("%+v: member %s: StringMember = %q, %v; Field = %v, %v", w, name, s, sPresent, f, present)
			case isMap && mPresent != present:
				t.Errorf("%+v: member %s: MapMember present = %v; Field = %v", w, name, mPresent, present)
			case isMap && present && (m == nil) != (f.Kind() == engine.ViewNull):
				t.Errorf("%+v: member %s: MapMember = %v; Field = %v", w, name, m, f)
			case isMap && present && m != nil && !reflect.DeepEqual(f.Value(), m):
				t.Errorf("%+v: member %s: MapMember = %v; Field = %v", w, name, m, f.Value())
			}
		}
	}
}
