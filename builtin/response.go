package builtin

import (
	"context"
	"regexp"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/engine"
)

var afterSynthesis = []engine.Stage{engine.StageAfterSynthesis}

// redactPatterns are the named patterns of the redact action.
var redactPatterns = map[string]string{
	"email":       `[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`,
	"phone":       `\+?\d{1,3}[ .-]?\(?\d{2,4}\)?[ .-]?\d{3,4}[ .-]?\d{3,4}`,
	"credit_card": `\b(?:\d[ -]?){12,18}\d\b`,
	"ssn":         `\b\d{3}-\d{2}-\d{4}\b`,
	"ipv4":        `\b(?:\d{1,3}\.){3}\d{1,3}\b`,
}

func init() {
	register(&Spec{
		Name:    "redact",
		Summary: "Replaces every match of named patterns (email, phone, credit_card, ssn, ipv4) and custom regexes in the response.",
		Stages:  afterSynthesis,
		Params: []Param{
			{Name: "patterns", Type: "list of `email` \\| `phone` \\| `credit_card` \\| `ssn` \\| `ipv4`", Doc: "named patterns"},
			{Name: "regex", Type: "list of string", Doc: "RE2 regular expressions"},
			{Name: "replacement", Type: "string", Doc: "default `[REDACTED]`"},
		},
		Compile: compileRedact,
	})
	register(&Spec{
		Name:    "truncate",
		Summary: "Cuts the response to at most `max_bytes` bytes on a UTF-8 boundary and appends `suffix` when it cut.",
		Stages:  afterSynthesis,
		Params: []Param{
			{Name: "max_bytes", Type: "integer", Required: true, Doc: "maximum length in bytes, suffix included"},
			{Name: "suffix", Type: "string", Doc: "default `…`"},
		},
		Compile: func(p *Params) Action {
			a := &truncate{max: p.Int("max_bytes", 1, 1), suffix: p.String("suffix", "…")}
			if len(a.suffix) >= a.max {
				p.Errorf("suffix", "suffix (%d bytes) must be shorter than max_bytes (%d)", len(a.suffix), a.max)
			}
			return a
		},
	})
}

func compileRedact(p *Params) Action {
	a := &redact{replacement: p.String("replacement", "[REDACTED]")}
	for _, name := range p.Strings("patterns") {
		src, ok := redactPatterns[name]
		if !ok {
			p.Errorf("patterns", "unknown pattern %q (known: credit_card, email, ipv4, phone, ssn)", name)
			continue
		}
		a.res = append(a.res, regexp.MustCompile(src))
	}
	for _, src := range p.Strings("regex") {
		re, err := regexp.Compile(src)
		if err != nil {
			p.Errorf("regex", "invalid regex %q: %v", src, err)
			continue
		}
		a.res = append(a.res, re)
	}
	if !p.Has("patterns") && !p.Has("regex") {
		p.Errorf("patterns", "redact needs `patterns` or `regex`")
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
