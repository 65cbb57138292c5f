package viewer

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// TracePlaceholders are the placeholders a trace URL template may hold. The viewer
// puts in the invocation's values, each escaped as a URL query component; an
// invocation without a trace id (recorded while the daemon did not trace) gets no link
// from a template that uses {trace_id} or {span_id}.
//
//	{trace_id}   the trace of the invocation's span (32 hex digits)
//	{span_id}    the invocation's span (16 hex digits)
//	{span_name}  its span name, pipeline.hook.<stage>.<hook>
//	{hook}       the hook's name
//	{stage}      the stage
//	{request_id} the request id
var TracePlaceholders = []string{"trace_id", "span_id", "span_name", "hook", "stage", "request_id"}

var placeholder = regexp.MustCompile(`\{[^{}]*\}`)

// CheckTraceURL returns an error unless template is an absolute http or https URL
// whose placeholders are all TracePlaceholders, e.g.
// http://jaeger:16686/trace/{trace_id}?uiFind={span_id}.
func CheckTraceURL(template string) error {
	var unknown []string
	probe := placeholder.ReplaceAllStringFunc(template, func(p string) string {
		if !slices.Contains(TracePlaceholders, strings.Trim(p, "{}")) {
			unknown = append(unknown, p)
		}
		return "x"
	})
	if len(unknown) > 0 {
		return fmt.Errorf("trace URL template: unknown placeholder %s (known: {%s})", unknown[0], strings.Join(TracePlaceholders, "}, {"))
	}
	u, err := url.Parse(probe)
	if err != nil {
		return fmt.Errorf("trace URL template: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("trace URL template: %q is not an absolute http or https URL", template)
	}
	return nil
}
