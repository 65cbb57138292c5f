// Package approvalhook announces new pending approvals to the webhook a generation
// configures (approvals.notify): an engine.Observer that queues, for each check that
// opened an approval, a signed JSON POST, and a sender that delivers them in order with
// retries. The queue is bounded: when it is full an announcement is dropped and
// logged, never the check delayed.
//
// The payload, a chat-ops bot's input:
//
//	{"event": "approval.pending", "approval": {id, status, request_id, step_id,
//	  namespace, agent_name, capability, tenant, parameters, parameters_sha256, rule,
//	  code, reason, decision_id, created_at, expires_at, url}}
//
// with the headers Content-Type: application/json, X-Agentd-Event: approval.pending
// and X-Agentd-Signature: sha256=<hex HMAC-SHA256 of the body under the secret>.
package approvalhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/api"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

// Event is the payload's event name.
const Event = "approval.pending"

// Options configure a Notifier; zero values take the defaults.
type Options struct {
	// Queue bounds the announcements waiting to be sent; 0 means 1024.
	Queue int
	// Attempts bounds the tries of one announcement; 0 means 5.
	Attempts int
	// Backoff is the wait after the first failed try, doubled after each; 0 means
	// 500ms.
	Backoff time.Duration
	// Timeout bounds one try; 0 means 10s.
	Timeout time.Duration
	Client  *http.Client
	Logger  *slog.Logger
}

// Payload is the body of an announcement.
type Payload struct {
	Event    string       `json:"event"`
	Approval api.Approval `json:"approval"`
}

// Notifier is the observer that announces new pending approvals, and the sender.
type Notifier struct {
	notify func() *config.ApprovalNotify
	opts   Options
	// mu guards closed and the sends on queue against Close.
	mu     sync.RWMutex
	closed bool
	queue  chan job
	done   chan struct{}
}

type job struct {
	to   config.ApprovalNotify
	body []byte
}

// New returns a notifier that announces to what notify returns (the live
// generation's approvals.notify, nil for none) and starts its sender; Close stops it.
func New(notify func() *config.ApprovalNotify, opts Options) *Notifier {
	if opts.Queue <= 0 {
		opts.Queue = 1024
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 5
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 500 * time.Millisecond
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	n := &Notifier{notify: notify, opts: opts, queue: make(chan job, opts.Queue), done: make(chan struct{})}
	go n.send()
	return n
}

// Checked implements engine.Observer: a check that opened an approval (the approval's
// decision id is the check's) queues its announcement.
func (n *Notifier) Checked(ctx context.Context, r *engine.CheckReport) {
	a := r.Approval
	if a == nil || a.Status != engine.ApprovalPending || a.DecisionID != r.DecisionID {
		return
	}
	to := n.notify()
	if to == nil {
		return
	}
	body, err := json.Marshal(Payload{Event: Event, Approval: api.ApprovalOf(a)})
	if err != nil {
		n.opts.Logger.ErrorContext(ctx, "approval webhook: encode", "approval", a.ID, "error", err.Error())
		return
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.closed {
		return
	}
	select {
	case n.queue <- job{to: *to, body: body}:
	default:
		n.opts.Logger.WarnContext(ctx, "approval webhook: queue full, announcement dropped", "approval", a.ID, "queue", n.opts.Queue)
	}
}

// Staged implements engine.Observer: stage calls open no approval.
func (n *Notifier) Staged(context.Context, *engine.StageReport) {}

// Refused implements engine.Observer: a refused call opens no approval.
func (n *Notifier) Refused(context.Context, engine.Stage, string, *engine.RefusalError) {}

// Sign is the X-Agentd-Signature value of body under secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// send delivers the queued announcements in order until Close.
func (n *Notifier) send() {
	defer close(n.done)
	for j := range n.queue {
		wait := n.opts.Backoff
		for attempt := 1; ; attempt++ {
			err := n.post(j)
			if err == nil {
				break
			}
			if attempt >= n.opts.Attempts {
				n.opts.Logger.Error("approval webhook: announcement not delivered", "url", j.to.URL, "attempts", attempt, "error", err.Error())
				break
			}
			time.Sleep(wait)
			wait *= 2
		}
	}
}

// post makes one try: a 2xx answer delivers.
func (n *Notifier) post(j job) error {
	ctx, cancel := context.WithTimeout(context.Background(), n.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.to.URL, bytes.NewReader(j.body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Agentd-Event", Event)
	req.Header.Set("X-Agentd-Signature", Sign(j.to.Secret, j.body))
	resp, err := n.opts.Client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("answered %s", resp.Status)
	}
	return nil
}

// Close stops taking announcements and waits until the queued ones are delivered or
// given up, or ctx ends.
func (n *Notifier) Close(ctx context.Context) error {
	n.mu.Lock()
	if !n.closed {
		n.closed = true
		close(n.queue)
	}
	n.mu.Unlock()
	select {
	case <-n.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
