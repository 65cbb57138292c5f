package builtin

import (
	"context"
	"regexp"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/engine"
)

var afterSynthesis = []engine.Stage{engine.StageAfterSynthesis}

// redactPatterns are the named patterns of the redact action, in documentation order.
var redactPatterns = []struct{ name, re string }{
	{"email", `[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`},
	{"phone", `\+?\d{1,3}[ .-]?\(?\d{2,4}\)?[ .-]?\d{3,4}[ .-]?\d{3,4}`},
	{"credit_card", `\b(?:\d[ -]?){12,18}\d\b`},
	{"ssn", `\b\d{3}-\d{2}-\d{4}\b`},
	{"ipv4", `\b(?:\d{1,3}\.){3}\d{1,3}\b`},
}

// redactPattern returns the regular expression of the named pattern name.
func redactPattern(name string) *regexp.Regexp {
	for _, p := range redactPatterns {
		if p.name == name {
			return regexp.MustCompile(p.re)
		}
	}
	panic("builtin: unknown redact pattern " + name) // Params.Strings admits declared names only
}

// redactPatternNames lists the names of redactPatterns.
func redactPatternNames() []string {
	names := make([]string, len(redactPatterns))
	for i, p := range redactPatterns {
		names[i] = p.name
	}
	return names
}

func init() {
	register(&Spec{
		Name:    "redact",
		Summary: "Replaces every match of named patterns and custom regexes in the response.",
		Stages:  afterSynthesis,
		Params: []Param{
			{Name: "patterns", Type: enumList(redactPatternNames()...), Doc: "named patterns"},
			{Name: "regex", Type: textList(), Doc: "RE2 regular expressions"},
			{Name: "replacement", Type: text(), Default: "[REDACTED]", Doc: "what replaces each match"},
		},
		RequireAny: []string{"patterns", "regex"},
		Compile:    compileRedact,
	})
	register(&Spec{
		Name:    "truncate",
		Summary: "Cuts the response to at most `max_bytes` bytes on a UTF-8 boundary and appends `suffix` when it cut.",
		Stages:  afterSynthesis,
		Params: []Param{
			{Name: "max_bytes", Type: integer(1), Required: true, Doc: "maximum length in bytes, suffix included"},
			{Name: "suffix", Type: text(), Default: "…", Doc: "appended when the response was cut"},
		},
		Compile: func(p *Params) Action {
			a := &truncate{max: p.Int("max_bytes"), suffix: p.String("suffix")}
			if a.max > 0 && len(a.suffix) >= a.max { // max 0: max_bytes is reported already
				p.Errorf("suffix", "suffix (%d bytes) must be shorter than max_bytes (%d)", len(a.suffix), a.max)
			}
			return a
		},
	})
}

func compileRedact(p *Params) Action {
	a := &redact{replacement: p.String("replacement")}
	for _, name := range p.Strings("patterns") {
		a.res = append(a.res, redactPattern(name))
	}
	for _, src := range p.Strings("regex") {
		re, err := regexp.Compile(src)
		if err != nil {
			p.Errorf("regex", "invalid regex %q: %v", src, err)
			continue
		}
		a.res = append(a.res, re)
	}
	return a
}

type redact struct {
	res         []*regexp.Regexp
	replacement string
}

func (a *redact) Run(_ context.Context, s *State) error {
	for _, re := range a.res {
		s.Response = re.ReplaceAllLiteralString(s.Response, a.replacement)
	}
	return nil
}

type truncate struct {
	max    int
	suffix string
}

func (a *truncate) Run(_ context.Context, s *State) error {
	if len(s.Response) <= a.max {
		return nil
	}
	cut := a.max - len(a.suffix)
	for cut > 0 && !utf8.RuneStart(s.Response[cut]) {
		cut--
	}
	s.Response = s.Response[:cut] + a.suffix
	return nil
}
