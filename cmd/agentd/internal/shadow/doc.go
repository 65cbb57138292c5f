// Package shadow evaluates a second configuration beside the live one: every stage
// call that decides something (before_planning, after_planning, after_synthesis) and
// every operation check the live configuration decided is decided again by the shadow
// generation, off the response path, and each disagreement (outcome, violations,
// denial, final response) is reported as a decision event, a metric and a summary in
// /v1/status. A final response is reported by its digest (compare.Digest), never its
// text.
//
// The shadow writes nothing: its generation runs with a cache that never answers and
// rate limits that never count (compare.Services), on a copy of the call's input, and
// never touches a request's state, record or response. Its directory is loaded and
// watched like the live one, each in its own registry.
package shadow
