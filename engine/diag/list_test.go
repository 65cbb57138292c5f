package diag

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

func e(file string, line, col int, kind Kind, msg string) *Error {
	return &Error{Kind: kind, File: file, Line: line, Column: col, Message: msg}
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{e("a.yaml", 3, 7, KindSchema, "bad"), "a.yaml:3:7: schema: bad"},
		{e("a.yaml", 3, 0, KindSchema, "bad"), "a.yaml:3: schema: bad"},
		{e("a.yaml", 0, 7, KindIO, "bad"), "a.yaml: io: bad"},
		{e("", 3, 7, KindCELSyntax, "bad"), "3:7: cel_syntax: bad"},
		{e("", 0, 0, KindTooManyErrors, "bad"), "too_many_errors: bad"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestNormalize(t *testing.T) {
	a1 := e("a.yaml", 1, 1, KindSchema, "x")
	a2 := e("a.yaml", 2, 1, KindSchema, "x")
	a10 := e("a.yaml", 10, 1, KindSchema, "x")
	a2c5 := e("a.yaml", 2, 5, KindSchema, "x")
	b1 := e("b.yaml", 1, 1, KindCELSyntax, "x")
	b1kind := e("b.yaml", 1, 1, KindCELTypeCheck, "x")
	b1msg := e("b.yaml", 1, 1, KindCELTypeCheck, "y")
	tests := []struct {
		name  string
		in    List
		max   int
		want  List
		kinds []Kind
	}{
		{name: "empty", in: nil, max: 10, want: List{}},
		{name: "drops nil", in: List{nil, a1, nil}, max: 0, want: List{a1}},
		{
			name: "sorts by file, line (numerically), column, kind, message",
			in:   List{b1msg, a10, b1kind, a2c5, b1, a2, a1},
			want: List{a1, a2, a2c5, a10, b1, b1kind, b1msg},
		},
		{
			name: "removes exact duplicates only",
			in: List{a1, e("a.yaml", 1, 1, KindSchema, "x"), a2,
				&Error{Kind: KindSchema, File: "a.yaml", Line: 1, Column: 1, Message: "x", Field: "f"}},
			want: List{a1, &Error{Kind: KindSchema, File: "a.yaml", Line: 1, Column: 1, Message: "x", Field: "f"}, a2},
		},
		{
			name:  "caps and counts the dropped",
			in:    List{b1, a10, a2, a1},
			max:   2,
			want:  List{a1, a2, {Kind: KindTooManyErrors, Message: "too many errors: 2 more not shown"}},
			kinds: []Kind{KindSchema, KindSchema, KindTooManyErrors},
		},
		{
			name: "cap counts after deduplication",
			in:   List{a1, a1, a2, a2},
			max:  2,
			want: List{a1, a2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			got := tt.in.Normalize(tt.max)
			if !equal(got, tt.want) {
				t.Errorf("Normalize(%d) =\n%s\nwant\n%s", tt.max, dump(got), dump(tt.want))
			}
			if !slices.Equal(in, tt.in) {
				t.Errorf("Normalize modified its receiver")
			}
			if tt.kinds != nil && !slices.Equal(got.Kinds(), tt.kinds) {
				t.Errorf("Kinds() = %v, want %v", got.Kinds(), tt.kinds)
			}
		})
	}
}

func TestNormalizeIsIdempotent(t *testing.T) {
	l := List{e("c", 1, 1, KindIO, "x"), e("b", 1, 1, KindIO, "x"), e("a", 1, 1, KindIO, "x")}
	once := l.Normalize(1)
	twice := once.Normalize(1)
	if !equal(once, twice) {
		t.Fatalf("second Normalize changed the list:\n%s\nvs\n%s", dump(once), dump(twice))
	}
	more := append(slices.Clone(once), e("d", 1, 1, KindIO, "x")).Normalize(1)
	if got, want := more[len(more)-1].Message, "too many errors: 3 more not shown"; got != want {
		t.Errorf("merged summary = %q, want %q", got, want)
	}
	if got, want := more.Error(), "a:1:1: io: x (and 3 more)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestListError(t *testing.T) {
	tests := []struct {
		l    List
		want string
	}{
		{List{}, "no errors"},
		{List{e("a", 1, 2, KindIO, "x")}, "a:1:2: io: x"},
		{List{e("a", 1, 2, KindIO, "x"), e("b", 0, 0, KindIO, "y"), e("c", 0, 0, KindIO, "z")}, "a:1:2: io: x (and 2 more)"},
	}
	for _, tt := range tests {
		if got := tt.l.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestAsList(t *testing.T) {
	one := e("a", 1, 1, KindIO, "x")
	l := List{one, e("b", 1, 1, KindIO, "y")}
	tests := []struct {
		name string
		err  error
		want List
		ok   bool
	}{
		{"list", l, l, true},
		{"wrapped list", fmt.Errorf("load: %w", l), l, true},
		{"lone error", fmt.Errorf("load: %w", one), List{one}, true},
		{"other", errors.New("x"), nil, false},
		{"nil", nil, nil, false},
	}
	for _, tt := range tests {
		got, ok := AsList(tt.err)
		if ok != tt.ok || !slices.Equal(got, tt.want) {
			t.Errorf("%s: AsList = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	var first *Error
	if !errors.As(fmt.Errorf("load: %w", l), &first) || first != one {
		t.Errorf("errors.As(*Error) on a List = %v, want the first entry", first)
	}
}

func equal(a, b List) bool {
	return slices.EqualFunc(a, b, func(x, y *Error) bool { return compare(x, y) == 0 })
}

func dump(l List) string {
	s := ""
	for _, e := range l {
		s += fmt.Sprintf("  %#v\n", *e)
	}
	return s
}
