package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/internal/redirect"
)

// maxRecordBytes bounds one answer of the daemon.
const maxRecordBytes = 64 << 20

// Fetch reads the records of a running daemon: base is its URL (the records list
// GET /v1/executions is asked) or a GET /v1/executions URL with filters. It follows
// the pages' next_cursor to the end and reads every listed record whole. token, when
// set, is sent as a bearer token (a viewer's will do); redirects are followed within
// base's origin only.
func Fetch(ctx context.Context, client *http.Client, base, token string) (*Set, error) {
	list, err := url.Parse(base)
	if err != nil || list.Host == "" || (list.Scheme != "http" && list.Scheme != "https") {
		return nil, fmt.Errorf("records URL %q: want http(s)://host[:port][/v1/executions?…]", base)
	}
	if list.Path == "" || list.Path == "/" {
		list.Path = "/v1/executions"
	}
	// The token must not follow a redirect to another origin.
	same := *client
	same.CheckRedirect = redirect.SameOrigin(list, 5)
	f := &fetcher{ctx: ctx, client: &same, token: token, origin: list.Scheme + "://" + list.Host}
	var items []json.RawMessage
	seen := map[string]bool{}
	for next := ""; ; {
		q := list.Query()
		if next != "" {
			q.Set("cursor", next)
		}
		list.RawQuery = q.Encode()
		var page struct {
			Records    []json.RawMessage `json:"records"`
			NextCursor string            `json:"next_cursor"`
		}
		if err := f.get(list.String(), &page); err != nil {
			return nil, err
		}
		items = append(items, page.Records...)
		if page.NextCursor == "" {
			break
		}
		if seen[page.NextCursor] {
			return nil, fmt.Errorf("GET %s: the list repeats cursor %q", list.Path, page.NextCursor)
		}
		seen[page.NextCursor], next = true, page.NextCursor
	}
	return classify(items, f.record)
}

type fetcher struct {
	ctx    context.Context
	client *http.Client
	token  string
	origin string
}

// record reads GET /v1/executions/{id}.
func (f *fetcher) record(id string) (*engine.ExecutionRecord, error) {
	var rec engine.ExecutionRecord
	return &rec, f.get(f.origin+"/v1/executions/"+url.PathEscape(id), &rec)
}

func (f *fetcher) get(u string, v any) error {
	req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if f.token != "" {
		req.Header.Set("Authorization", "Bearer "+f.token)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRecordBytes))
	if err != nil {
		return fmt.Errorf("GET %s: %w", req.URL.Path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", req.URL.Path, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", req.URL.Path, err)
	}
	return nil
}
