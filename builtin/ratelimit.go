package builtin

import (
	"context"
	"fmt"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/expr"
	"github.com/agentd-dev/agentd/engine/store"
)

func init() {
	register(&Spec{
		Name:    "rate_limit",
		Summary: "Counts requests per CEL key in fixed windows; over the limit it answers with an authoritative short circuit.",
		Stages:  beforePlanning,
		Params: []Param{
			{Name: "key", Type: celExpr(expr.String), Required: true, Doc: "what to count by, e.g. `metadata.tenant`"},
			{Name: "limit", Type: integer(1), Required: true, Doc: "requests allowed per window"},
			{Name: "window", Type: duration(), Required: true, Doc: "window length, e.g. `1m`"},
			{Name: "response", Type: text(), Default: "rate limit exceeded", Doc: "the answer when limited"},
			{Name: "on_key_error", Type: enum("deny", "allow"), Default: "deny",
				Doc: "when the key fails to evaluate: `deny` answers as if limited (fail closed), `allow` lets the request through unlimited as a hook error (fail open)"},
		},
		Compile: func(p *Params) Action {
			return &rateLimit{
				hook:           p.Hook(),
				key:            p.Expr("key"),
				limit:          p.Int("limit"),
				window:         p.Duration("window"),
				response:       p.String("response"),
				denyOnKeyError: p.Enum("on_key_error") == "deny",
				limiter:        p.Services().Limiter,
			}
		},
	})
}

type rateLimit struct {
	hook     string
	key      *expr.Program
	limit    int
	window   time.Duration
	response string
	// denyOnKeyError answers a request whose key fails to evaluate as limited.
	denyOnKeyError bool
	limiter        store.Limiter
}

func (a *rateLimit) Run(ctx context.Context, s *State) error {
	key, err := a.key.EvalString(ctx, s.Vars())
	if err != nil {
		err = fmt.Errorf("rate_limit key: %w", err)
		if !a.denyOnKeyError {
			return err
		}
		a.limited(s)
		return engine.ReportEffect(ctx, engine.Effect{
			EffectID: "rate_limit.key", Name: "rate_limit key", Status: engine.EffectFailed, StartedAt: time.Now().UTC(),
			Summary: "the key did not evaluate; answered as limited (on_key_error: deny)", Error: err.Error(),
		})
	}
	ok, err := a.limiter.Allow(ctx, "ratelimit:"+a.hook+":"+key, a.limit, a.window)
	if err != nil || ok {
		return err
	}
	a.limited(s)
	return nil
}

// limited answers the request with the limit's authoritative short circuit.
func (a *rateLimit) limited(s *State) {
	s.Decision = &engine.ShortCircuitDecision{
		ShortCircuit: &engine.ShortCircuit{Response: a.response, Source: "rate_limit"},
		Kind:         engine.KindAuthoritative,
	}
}
