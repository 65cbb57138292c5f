// Package client is a Go client of agentd's HTTP API (docs/openapi.yaml): a typed
// call for every route of the stage API, the operation checks and finishes, effect
// updates, the execution records and the status.
//
// Every call takes a context, which bounds it with its retries. An error answer is
// returned as an *api.Error with its HTTP status. A call refused with a retryable
// refusal (api.Error.Retryable: the request's state changed concurrently, the store
// was unreachable) is made again, at most Options.MaxRetries times, after a backoff
// doubling from Options.Backoff up to Options.MaxBackoff; no other answer is retried,
// and neither is a transport error (the call may have been applied).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/api"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
)

// Options configure a Client.
type Options struct {
	// HTTPClient makes the calls; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Token is the bearer token sent with every call; "" sends none.
	Token string
	// MaxRetries bounds the retries of a call refused retryably; 0 means 3, a
	// negative value none.
	MaxRetries int
	// Backoff is the wait before the first retry, doubled before each next one up to
	// MaxBackoff; 0 means 50ms and 1s.
	Backoff, MaxBackoff time.Duration
}

// Client calls one daemon. It is safe for concurrent use.
type Client struct {
	base    *url.URL
	http    *http.Client
	token   string
	retries int
	backoff time.Duration
	max     time.Duration
}

// New returns a client of the API at base, the daemon's URL ("http://127.0.0.1:8080"
// or a prefix it is mounted under).
func New(base string, opts Options) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q is not an http(s) URL", base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	c := &Client{base: u, http: opts.HTTPClient, token: opts.Token, retries: opts.MaxRetries, backoff: opts.Backoff, max: opts.MaxBackoff}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	switch {
	case c.retries == 0:
		c.retries = 3
	case c.retries < 0:
		c.retries = 0
	}
	if c.backoff <= 0 {
		c.backoff = 50 * time.Millisecond
	}
	if c.max <= 0 {
		c.max = time.Second
	}
	return c, nil
}

// BeforePlanning opens a request and runs before_planning (POST /v1/hooks/before_planning).
func (c *Client) BeforePlanning(ctx context.Context, req *api.BeforePlanningRequest) (*api.BeforePlanningResponse, error) {
	return call[api.BeforePlanningResponse](ctx, c, http.MethodPost, "/v1/hooks/before_planning", nil, req)
}

// AfterPlanning runs after_planning on one phase's plan (POST
// /v1/hooks/after_planning); req.Explain asks for the explanations.
func (c *Client) AfterPlanning(ctx context.Context, req *api.AfterPlanningRequest) (*api.AfterPlanningResponse, error) {
	var q url.Values
	if req.Explain {
		q = url.Values{"explain": {"true"}}
	}
	return call[api.AfterPlanningResponse](ctx, c, http.MethodPost, "/v1/hooks/after_planning", q, req)
}

// AfterExecution reports the combined execution result (POST /v1/hooks/after_execution).
func (c *Client) AfterExecution(ctx context.Context, req *api.AfterExecutionRequest) (*api.AfterExecutionResponse, error) {
	return call[api.AfterExecutionResponse](ctx, c, http.MethodPost, "/v1/hooks/after_execution", nil, req)
}

// AfterSynthesis rewrites the synthesized response (POST /v1/hooks/after_synthesis).
func (c *Client) AfterSynthesis(ctx context.Context, req *api.AfterSynthesisRequest) (*api.AfterSynthesisResponse, error) {
	return call[api.AfterSynthesisResponse](ctx, c, http.MethodPost, "/v1/hooks/after_synthesis", nil, req)
}

// CheckOperation asks the guards about one call (POST /v1/operations/check). A
// denial is an answer, not an error: Allowed is false and Denial says why (the API
// answers it 403). A guard error (fail closed) is an *api.Error of type guard_error.
func (c *Client) CheckOperation(ctx context.Context, req *api.OperationCheckRequest) (*api.OperationCheckResponse, error) {
	return call[api.OperationCheckResponse](ctx, c, http.MethodPost, "/v1/operations/check", nil, req)
}

// FinishOperation reports how a checked tool_call step ended (POST /v1/operations/finish).
func (c *Client) FinishOperation(ctx context.Context, req *api.OperationFinishRequest) (*api.OperationFinishResponse, error) {
	return call[api.OperationFinishResponse](ctx, c, http.MethodPost, "/v1/operations/finish", nil, req)
}

// UpdateEffect completes or updates a pending effect (POST /v1/effects).
func (c *Client) UpdateEffect(ctx context.Context, req *api.EffectUpdateRequest) (*api.EffectUpdateResponse, error) {
	return call[api.EffectUpdateResponse](ctx, c, http.MethodPost, "/v1/effects", nil, req)
}

// Execution returns the stored record of a request (GET /v1/executions/{id}).
func (c *Client) Execution(ctx context.Context, id string) (*engine.ExecutionRecord, error) {
	return call[engine.ExecutionRecord](ctx, c, http.MethodGet, "/v1/executions/"+url.PathEscape(id), nil, nil)
}

// Executions lists the records q selects, newest first (GET /v1/executions); the
// page's NextCursor, set as q.Cursor, continues the list. q.Tenant is no parameter:
// the daemon confines a token bound to a tenant itself.
func (c *Client) Executions(ctx context.Context, q store.Query) (*store.Page, error) {
	return call[store.Page](ctx, c, http.MethodGet, "/v1/executions", listParams(q), nil)
}

// Approvals lists the approvals f selects, pending first (GET /v1/approvals); a token
// bound to a tenant sees only its tenant's.
func (c *Client) Approvals(ctx context.Context, f engine.ApprovalFilter) (*api.ApprovalList, error) {
	q := url.Values{}
	if f.Status != "" {
		q.Set("status", string(f.Status))
	}
	if f.RequestID != "" {
		q.Set("request_id", f.RequestID)
	}
	return call[api.ApprovalList](ctx, c, http.MethodGet, api.ApprovalsPath, q, nil)
}

// Approval reads one approval (GET /v1/approvals/{id}).
func (c *Client) Approval(ctx context.Context, id string) (*api.Approval, error) {
	return call[api.Approval](ctx, c, http.MethodGet, api.ApprovalsPath+"/"+url.PathEscape(id), nil, nil)
}

// DecideApproval approves or rejects approval id (POST /v1/approvals/{id}; approver
// and admin tokens). Re-sending the decision it has returns it unchanged; another
// decision on a decided approval, or any on an expired one, is an *api.Error of type
// approval_decided or approval_expired (409).
func (c *Client) DecideApproval(ctx context.Context, id string, req *api.ApprovalDecisionRequest) (*api.Approval, error) {
	return call[api.Approval](ctx, c, http.MethodPost, api.ApprovalsPath+"/"+url.PathEscape(id), nil, req)
}

// Status describes the live generation and the last reload (GET /v1/status).
func (c *Client) Status(ctx context.Context) (*api.StatusBody, error) {
	return call[api.StatusBody](ctx, c, http.MethodGet, "/v1/status", nil, nil)
}

// listParams are the query parameters of q.
func listParams(q store.Query) url.Values {
	v := url.Values{}
	set := func(name, value string) {
		if value != "" {
			v.Set(name, value)
		}
	}
	set("status", string(q.Status))
	set("lifecycle", string(q.Lifecycle))
	set("stage", string(q.Stage))
	set("hook", q.Hook)
	set("reason", string(q.Reason))
	set("violation", q.Violation)
	set("guard", string(q.Guard))
	set("generation", q.Generation)
	set("id", q.IDContains)
	set("cursor", q.Cursor)
	if !q.Since.IsZero() {
		v.Set("since", q.Since.Format(time.RFC3339Nano))
	}
	if !q.Until.IsZero() {
		v.Set("until", q.Until.Format(time.RFC3339Nano))
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

// call makes one call, retrying retryable refusals, and decodes its answer into a T.
func call[T any](ctx context.Context, c *Client, method, path string, query url.Values, body any) (*T, error) {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("client: encode %s %s: %w", method, path, err)
		}
	}
	u := *c.base
	u.Path += path
	u.RawQuery = query.Encode()
	wait := c.backoff
	for attempt := 0; ; attempt++ {
		out := new(T)
		err := c.once(ctx, method, u.String(), data, out)
		if err == nil {
			return out, nil
		}
		var e *api.Error
		if !errors.As(err, &e) || !e.Retryable() || attempt >= c.retries {
			return nil, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		wait = min(2*wait, c.max)
	}
}

// maxAnswer bounds the answers read: far above any record the daemon keeps.
const maxAnswer = 64 << 20

// once makes one HTTP call and decodes a 2xx answer (or an operation check's 403
// denial, which has no error object) into out, an error answer into an *api.Error.
func (c *Client) once(ctx context.Context, method, u string, data []byte, out any) error {
	var body io.Reader
	if data != nil {
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if data != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("client: %s %s: %w", method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("client: %s %s: read the answer: %w", method, req.URL.Path, err)
	}
	if resp.StatusCode < 300 {
		if err := json.Unmarshal(answer, out); err != nil {
			return fmt.Errorf("client: %s %s: decode the %d answer: %w", method, req.URL.Path, resp.StatusCode, err)
		}
		return nil
	}
	e := &api.Error{}
	if err := e.UnmarshalJSON(answer); err != nil {
		if _, denial := out.(*api.OperationCheckResponse); denial && resp.StatusCode == http.StatusForbidden && json.Unmarshal(answer, out) == nil {
			return nil // a denial: the check's answer, with Allowed false
		}
		return fmt.Errorf("client: %s %s: answered %s: %.200s", method, req.URL.Path, resp.Status, answer)
	}
	e.Status = resp.StatusCode
	return e
}
