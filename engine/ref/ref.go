// Package ref parses the template references that planner steps use to consume the
// output of earlier steps: a `{{step-1.response.data.price}}` token inside a step
// parameter names a step id and a dot-separated path into that step's result.
//
// The grammar is deliberately strict. A token opens at `{{` and closes at the first
// following `}}`; tokens whose content starts with the case-sensitive prefix `step-`
// are references (ScanFor also takes tokens naming an id the caller knows, for step ids
// without the prefix), everything else (`{{user.name}}`, `{{#if}}`, stray braces) is
// ignored. A reference is `{{<id>.<path>}}` where id matches `[\w-]+` (ASCII word
// characters and hyphens), and path is one or more non-empty `[\w-]+` segments joined by
// single dots. Whitespace inside the braces is not allowed: `{{ step-1.x }}` is reported
// as malformed rather than ignored, so a padded reference cannot slip past validation.
// `{{step-1}}`, `{{step-1.}}`, `{{step-1..x}}` and an unclosed `{{step-1.x` are malformed
// too. In a run of three or more opening braces the token opens at the last `{{`, so
// `{{{step-1.x}}}` contains the reference `{{step-1.x}}`.
//
// The grammar is docs/semantics.md §2.9. Scan is a hand-written single pass over the
// string. It does not allocate when the string contains no `{{`, which is the common
// case for parameter values. Walk visits every string inside a decoded JSON value so
// callers can scan parameters recursively.
package ref

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Prefix is the token content prefix that marks a step reference.
const Prefix = "step-"

// maxTokenLen bounds MalformedError.Token so diagnostics stay small.
const maxTokenLen = 128

// Reasons reported by MalformedError. They are stable; tests and callers may compare
// them, though the error's Offset and Token are usually what a user needs.
const (
	ReasonWhitespace   = "whitespace inside braces"
	ReasonMissingPath  = "missing path after step id"
	ReasonEmptySegment = "empty path segment"
	ReasonInvalidChar  = "invalid character"
	ReasonUnclosed     = "unclosed token"
)

// Ref is one well-formed step reference found in a string.
type Ref struct {
	// StepID is the referenced step id, including its "step-" prefix.
	StepID string
	// Path is the dot-separated path after the id; it always has at least one element.
	Path []string
	// Raw is the complete token as it appears in the input, braces included.
	Raw string
	// Offset is the byte offset of Raw in the scanned string.
	Offset int
}

// MalformedError reports a `{{step-…}}` token that does not have the form
// `{{<id>.<path>}}`.
type MalformedError struct {
	// Token is the offending text from its opening `{{` up to and including the first
	// `}}`, or to the end of the input when unclosed, truncated to a bounded length at a
	// UTF-8 boundary. It is always a substring of the scanned input at Offset.
	Token string
	// Offset is the byte offset of the token's opening `{{`.
	Offset int
	// Reason is one of the Reason constants, possibly followed by detail.
	Reason string
}

func (e *MalformedError) Error() string {
	return "malformed step reference " + strconv.Quote(e.Token) + " at offset " +
		strconv.Itoa(e.Offset) + ": " + e.Reason
}

// Scan returns every step reference in s, in order of appearance. Tokens that are not
// step references are ignored. At the first malformed step token Scan stops and returns
// (nil, *MalformedError). A string without `{{` yields (nil, nil) without allocating.
func Scan(s string) ([]Ref, error) { return ScanFor(s, nil) }

// ScanFor is Scan that also takes `{{<id>.<path>}}` tokens whose id does not start
// with Prefix as references when known(id) reports true: a plan whose step ids are
// free-form ("search", "s1") has its references to those steps checked like any
// other. Such a token is held to the same grammar (`{{search}}` alone is malformed);
// a token whose id is not known is ignored, as is every token when known is nil.
func ScanFor(s string, known func(id string) bool) ([]Ref, error) {
	var refs []Ref
	off := 0
	for {
		k := strings.Index(s[off:], "{{")
		if k < 0 {
			return refs, nil
		}
		start := off + k
		for start+2 < len(s) && s[start+2] == '{' {
			start++
		}
		body := start + 2
		p := body
		for p < len(s) && isSpace(s[p]) {
			p++
		}
		if !strings.HasPrefix(s[p:], Prefix) && !knownID(s, p, known) {
			off = body
			continue
		}
		if p > body {
			return nil, malformed(s, start, ReasonWhitespace)
		}
		r, end, err := parseRef(s, start)
		if err != nil {
			return nil, err
		}
		refs = append(refs, r)
		off = end
	}
}

// knownID reports whether the word at offset p is an id known reports.
func knownID(s string, p int, known func(string) bool) bool {
	if known == nil {
		return false
	}
	q := p
	for q < len(s) && isWord(s[q]) {
		q++
	}
	return q > p && known(s[p:q])
}

// parseRef parses the step token whose `{{` is at start and whose content is known to
// begin with a step id. It returns the reference and the offset just past its `}}`.
func parseRef(s string, start int) (Ref, int, error) {
	i := start + 2
	idEnd := i
	for idEnd < len(s) && isWord(s[idEnd]) {
		idEnd++
	}
	if idEnd >= len(s) {
		return Ref{}, 0, malformed(s, start, ReasonUnclosed)
	}
	switch c := s[idEnd]; {
	case c == '.':
	case strings.HasPrefix(s[idEnd:], "}}"):
		return Ref{}, 0, malformed(s, start, ReasonMissingPath)
	default:
		return Ref{}, 0, badChar(s, start, idEnd)
	}
	segs := 1
	p := idEnd + 1
	segStart := p
	for {
		if p >= len(s) {
			return Ref{}, 0, malformed(s, start, ReasonUnclosed)
		}
		c := s[p]
		if isWord(c) {
			p++
			continue
		}
		closing := strings.HasPrefix(s[p:], "}}")
		if p == segStart && (c == '.' || closing) {
			return Ref{}, 0, malformed(s, start, ReasonEmptySegment)
		}
		if c == '.' {
			segs++
			p++
			segStart = p
			continue
		}
		if closing {
			break
		}
		return Ref{}, 0, badChar(s, start, p)
	}
	path := make([]string, 0, segs)
	q := idEnd + 1
	for j := q; j <= p; j++ {
		if j == p || s[j] == '.' {
			path = append(path, s[q:j])
			q = j + 1
		}
	}
	end := p + 2
	return Ref{StepID: s[i:idEnd], Path: path, Raw: s[start:end], Offset: start}, end, nil
}

// badChar reports the unexpected byte at offset at inside the token opened at start. A
// token that never closes is reported as unclosed, whatever else is wrong with it.
func badChar(s string, start, at int) error {
	if !strings.Contains(s[start+2:], "}}") {
		return malformed(s, start, ReasonUnclosed)
	}
	if isSpace(s[at]) {
		return malformed(s, start, ReasonWhitespace)
	}
	r, _ := utf8.DecodeRuneInString(s[at:])
	return malformed(s, start, ReasonInvalidChar+" "+strconv.QuoteRune(r)+" at offset "+strconv.Itoa(at))
}

func malformed(s string, start int, reason string) *MalformedError {
	end := len(s)
	if k := strings.Index(s[start+2:], "}}"); k >= 0 {
		end = start + 2 + k + 2
	}
	if end-start > maxTokenLen {
		end = start + maxTokenLen
		for end > start && !utf8.RuneStart(s[end]) {
			end--
		}
	}
	return &MalformedError{Token: s[start:end], Offset: start, Reason: reason}
}

func isWord(c byte) bool {
	return c == '_' || c == '-' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
