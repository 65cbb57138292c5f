package store

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/engine"
)

// RecordLister lists execution records: GET /v1/executions. Implementations must be
// safe for concurrent use.
//
// Order: newest first by UpdatedAt at millisecond precision, then by request id
// ascending. Paging is by position: Page.NextCursor names the place after the last
// record the call looked at, so a record written again while a client pages moves to
// the front (it shows on a first page again and may be missing from later ones), and a
// page may hold fewer than Limit records while NextCursor is set (a store bounds the
// records one call examines). Follow NextCursor until it is empty.
type RecordLister interface {
	// List returns the records q selects, or a *QueryError when q is invalid.
	List(ctx context.Context, q Query) (Page, error)
}

// QueryableRecords is an engine.RecordStore that also lists its records by a Query, as
// every store of this module is; the stage API's record routes read through it.
type QueryableRecords interface {
	engine.RecordStore
	RecordLister
}

// Query selects execution records. Every set field must match (they combine with
// AND); the zero Query selects every record.
type Query struct {
	Status    engine.RecordStatus
	Lifecycle engine.RequestLifecycle // as of the call: an open record past OpenUntil is abandoned
	Stage     engine.Stage            // a hook invocation of that stage was recorded
	Hook      string                  // a hook of that name was invoked
	Reason    engine.Reason           // an invocation's decision had that reason
	// Violation is a code a refusal or a would-deny finding named: a policy violation
	// of a rejected plan, the plan rule an invalid plan broke, an operation denial's
	// code, or what a rule in warn or audit mode would have denied (a violation code, a
	// guard's code).
	Violation string
	Guard     engine.CheckOutcome // an operation check had that outcome
	// Generation is the config generation the request ran on.
	Generation string
	// Tenant selects the records of that tenant (the tenant the request's metadata
	// names); a caller confined to a tenant (engine.WithTenant) sees its own only.
	Tenant string
	// Since (inclusive) and Until (exclusive) bound UpdatedAt; zero is unbounded.
	Since, Until time.Time
	// IDContains selects request ids containing it, ignoring ASCII case.
	IDContains string
	// Limit is the page size: 0 means DefaultLimit, at most MaxLimit.
	Limit int
	// Cursor is a previous page's NextCursor; empty starts at the newest record.
	Cursor string
}

// Page is one page of a record list.
type Page struct {
	Records []Summary `json:"records"`
	// NextCursor continues the list; empty when the list is complete.
	NextCursor string `json:"next_cursor,omitempty"`
}

// Page sizes.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// maxFilterLen bounds the text filters.
const maxFilterLen = 256

// QueryError is an invalid query: Param names the query parameter at fault (status,
// cursor, …) and Reason says what is wrong with it.
type QueryError struct {
	Param  string
	Reason string
}

func (e *QueryError) Error() string { return "invalid query parameter " + e.Param + ": " + e.Reason }

// Validate returns a *QueryError naming the first invalid field, or nil.
func (q *Query) Validate() error {
	oneOf := func(param, v string, allowed ...string) error {
		if v == "" || slices.Contains(allowed, v) {
			return nil
		}
		return &QueryError{Param: param, Reason: fmt.Sprintf("%q is none of %s", v, strings.Join(allowed, ", "))}
	}
	stages := make([]string, len(engine.Stages))
	for i, s := range engine.Stages {
		stages[i] = string(s)
	}
	for _, err := range []error{
		oneOf("status", string(q.Status), string(engine.RecordRunning), string(engine.RecordSucceeded), string(engine.RecordFailed)),
		oneOf("lifecycle", string(q.Lifecycle), string(engine.LifecycleOpen), string(engine.LifecycleCompleted),
			string(engine.LifecycleFailed), string(engine.LifecycleAbandoned)),
		oneOf("stage", string(q.Stage), stages...),
		oneOf("guard", string(q.Guard), string(engine.CheckAllow), string(engine.CheckDeny), string(engine.CheckGuardError)),
	} {
		if err != nil {
			return err
		}
	}
	for _, f := range []struct{ param, v string }{{"hook", q.Hook}, {"reason", string(q.Reason)}, {"violation", q.Violation},
		{"generation", q.Generation}, {"tenant", q.Tenant}, {"id", q.IDContains}} {
		if len(f.v) > maxFilterLen || !utf8.ValidString(f.v) {
			return &QueryError{Param: f.param, Reason: fmt.Sprintf("must be valid UTF-8 of at most %d bytes", maxFilterLen)}
		}
	}
	switch {
	case q.Limit < 0 || q.Limit > MaxLimit:
		return &QueryError{Param: "limit", Reason: fmt.Sprintf("must be between 1 and %d", MaxLimit)}
	case !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until):
		return &QueryError{Param: "until", Reason: "must be after since"}
	}
	if _, err := parseCursor(q.Cursor); err != nil {
		return err
	}
	return nil
}

// PageSize is the page size q asks for.
func (q *Query) PageSize() int {
	if q.Limit == 0 {
		return DefaultLimit
	}
	return q.Limit
}

// Match reports whether the record s summarizes passes every filter of q but the
// cursor, its lifecycle taken as of now.
func (q *Query) Match(s *Summary, now time.Time) bool {
	switch {
	case q.Status != "" && s.Status != q.Status,
		q.Generation != "" && s.Generation != q.Generation,
		q.Tenant != "" && s.Tenant != q.Tenant,
		q.Lifecycle != "" && s.LifecycleAt(now) != q.Lifecycle,
		q.Stage != "" && !slices.Contains(s.Stages, q.Stage),
		q.Hook != "" && !slices.Contains(s.Hooks, q.Hook),
		q.Reason != "" && !slices.Contains(s.Reasons, q.Reason),
		q.Violation != "" && !slices.Contains(s.Violations, q.Violation),
		q.Guard != "" && !slices.Contains(s.Guards, q.Guard),
		!q.Since.IsZero() && s.UpdatedAt.Before(q.Since),
		!q.Until.IsZero() && !s.UpdatedAt.Before(q.Until),
		q.IDContains != "" && !containsFold(s.RequestID, q.IDContains):
		return false
	}
	return true
}

// containsFold reports whether s contains sub, ignoring ASCII case.
func containsFold(s, sub string) bool {
	return strings.Contains(asciiLower(s), asciiLower(sub))
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			return strings.Map(func(r rune) rune {
				if 'A' <= r && r <= 'Z' {
					return r + 'a' - 'A'
				}
				return r
			}, s)
		}
	}
	return s
}

// Position is a place in the list order: a record's UpdatedAt in Unix milliseconds
// and its request id. The zero Position is before the newest record.
type Position struct {
	Millis int64
	ID     string
}

// PositionOf returns the position of the record s summarizes; an UpdatedAt before
// 1970 counts as 1970.
func PositionOf(s *Summary) Position {
	return Position{Millis: max(s.UpdatedAt.UnixMilli(), 0), ID: s.RequestID}
}

// Before reports whether p comes before o in the list order (newer, or as new with a
// smaller request id). The zero Position comes before every other.
func (p Position) Before(o Position) bool {
	if p.IsZero() || o.IsZero() {
		return p.IsZero() && !o.IsZero()
	}
	if p.Millis != o.Millis {
		return p.Millis > o.Millis
	}
	return p.ID < o.ID
}

// IsZero reports whether p is the start of the list.
func (p Position) IsZero() bool { return p == Position{} }

// cursorVersion starts every cursor, so that a change of its form is told apart.
const cursorVersion = "1:"

// Cursor encodes p as an opaque cursor; the zero Position is the empty cursor.
func (p Position) Cursor() string {
	if p.IsZero() {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(cursorVersion + strconv.FormatInt(p.Millis, 10) + ":" + p.ID))
}

// CursorPosition returns the position q's cursor names (zero for no cursor).
func (q *Query) CursorPosition() (Position, error) { return parseCursor(q.Cursor) }

func parseCursor(c string) (Position, error) {
	if c == "" {
		return Position{}, nil
	}
	bad := &QueryError{Param: "cursor", Reason: "not a cursor this API returned"}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(c)
	if err != nil || !strings.HasPrefix(string(raw), cursorVersion) {
		return Position{}, bad
	}
	ms, id, ok := strings.Cut(strings.TrimPrefix(string(raw), cursorVersion), ":")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil || n < 0 || id == "" || strconv.FormatInt(n, 10) != ms { // one spelling per position
		return Position{}, bad
	}
	return Position{Millis: n, ID: id}, nil
}
