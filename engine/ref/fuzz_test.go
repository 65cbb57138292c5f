package ref

import (
	"errors"
	"strings"
	"testing"
)

func FuzzScan(f *testing.F) {
	for _, seed := range []string{
		"", "plain", "{{step-1.response.data.price}}", "a {{step-1.x}} b {{step-2.y.z}} c",
		"{{step-1}}", "{{step-1.}}", "{{step-1..x}}", "{{step-1.x", "{{ step-1.x }}",
		"{{{step-1.x}}}", "{{user.name}}", "{{#if {{step-1.ok}}}}", "{{step-é.x}}", "{{step-.x}}",
		"}}{{", "{{", "{{step-", "{{step-1.x}}}}", "\xff{{step-1.\xfe}}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		refs, err := Scan(s)
		if !strings.Contains(s, "{{") {
			if refs != nil || err != nil {
				t.Fatalf("Scan(%q) = %v, %v; want nothing without {{", s, refs, err)
			}
			return
		}
		if err != nil {
			var me *MalformedError
			if !errors.As(err, &me) {
				t.Fatalf("Scan(%q) error %T, want *MalformedError", s, err)
			}
			if refs != nil {
				t.Fatalf("Scan(%q) returned refs with an error", s)
			}
			if me.Offset < 0 || me.Offset+len(me.Token) > len(s) || s[me.Offset:me.Offset+len(me.Token)] != me.Token {
				t.Fatalf("Scan(%q): Token %q is not the input at offset %d", s, me.Token, me.Offset)
			}
			if !strings.HasPrefix(me.Token, "{{") || len(me.Token) > maxTokenLen {
				t.Fatalf("Scan(%q): bad Token %q", s, me.Token)
			}
			return
		}
		prevEnd := 0
		for _, r := range refs {
			if !strings.Contains(s, r.Raw) {
				t.Fatalf("Scan(%q): Raw %q is not a substring", s, r.Raw)
			}
			if r.Offset < prevEnd || s[r.Offset:r.Offset+len(r.Raw)] != r.Raw {
				t.Fatalf("Scan(%q): Raw %q not at offset %d (after %d)", s, r.Raw, r.Offset, prevEnd)
			}
			prevEnd = r.Offset + len(r.Raw)
			if !strings.HasPrefix(r.StepID, Prefix) || len(r.Path) == 0 {
				t.Fatalf("Scan(%q): bad ref %+v", s, r)
			}
			if rebuilt := "{{" + r.StepID + "." + strings.Join(r.Path, ".") + "}}"; rebuilt != r.Raw {
				t.Fatalf("Scan(%q): ref %+v does not rebuild its Raw (%q)", s, r, rebuilt)
			}
			for _, seg := range append([]string{r.StepID}, r.Path...) {
				if seg == "" || strings.IndexFunc(seg, func(c rune) bool { return c > 127 || !isWord(byte(c)) }) >= 0 {
					t.Fatalf("Scan(%q): segment %q outside [\\w-]+", s, seg)
				}
			}
			again, err := Scan(r.Raw)
			if err != nil || len(again) != 1 || again[0].Raw != r.Raw {
				t.Fatalf("Scan(%q) of a returned Raw = %v, %v", r.Raw, again, err)
			}
		}
	})
}
