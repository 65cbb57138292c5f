package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/expr"
)

// effectStatuses are the values of the effect action's status param.
var effectStatuses = []string{
	string(engine.EffectPending), string(engine.EffectSucceeded), string(engine.EffectPartial),
	string(engine.EffectFailed), string(engine.EffectSkipped),
}

func init() {
	register(&Spec{
		Name:          "effect",
		KeepsResponse: true,
		Summary:       "Reports a hook effect (recorded in the execution record beside the invocation).",
		Params: []Param{
			{Name: "id", Type: text(), Required: true, Doc: "effect id, stable within the invocation"},
			{Name: "name", Type: text(), Doc: "display name"},
			{Name: "status", Type: enum(effectStatuses...), Default: string(engine.EffectSucceeded), Doc: "the effect's status"},
			{Name: "summary", Type: celExpr(expr.String), Doc: "one-line summary"},
			{Name: "data", Type: celExpr(expr.Any), Doc: "structured data, stored as JSON"},
		},
		Compile: func(p *Params) Action {
			return &effect{
				id:      p.String("id"),
				name:    p.String("name"),
				status:  engine.EffectStatus(p.Enum("status")),
				summary: p.Expr("summary"),
				data:    p.Expr("data"),
				now:     p.Services().Now,
			}
		},
	})
	register(&Spec{
		Name:          "log",
		KeepsResponse: true,
		Summary:       "Writes a structured log line with the request id, generation and hook.",
		Params: []Param{
			{Name: "message", Type: celExpr(expr.String), Required: true, Doc: "the message"},
			{Name: "level", Type: enum("debug", "info", "warn", "error"), Default: "info", Doc: "the log level"},
		},
		Compile: func(p *Params) Action {
			var level slog.Level
			_ = level.UnmarshalText([]byte(p.Enum("level")))
			return &logLine{hook: p.Hook(), message: p.Expr("message"), level: level, logger: p.Services().Logger}
		},
	})
}

type effect struct {
	id, name      string
	status        engine.EffectStatus
	summary, data *expr.Program
	now           func() time.Time
}

func (a *effect) Run(ctx context.Context, s *State) error {
	e := engine.Effect{EffectID: a.id, SchemaVersion: 1, Name: a.name, Status: a.status, StartedAt: a.now().UTC()}
	if a.summary != nil {
		summary, err := a.summary.EvalString(ctx, s.Vars())
		if err != nil {
			return fmt.Errorf("effect summary: %w", err)
		}
		e.Summary = summary
	}
	if a.data != nil {
		v, err := a.data.Eval(ctx, s.Vars())
		if err != nil {
			return fmt.Errorf("effect data: %w", err)
		}
		if e.Data, err = json.Marshal(v); err != nil {
			return fmt.Errorf("effect data: %w", err)
		}
	}
	return engine.ReportEffect(ctx, e)
}

type logLine struct {
	hook    string
	message *expr.Program
	level   slog.Level
	logger  *slog.Logger
}

func (a *logLine) Run(ctx context.Context, s *State) error {
	if !a.logger.Enabled(ctx, a.level) {
		return nil
	}
	msg, err := a.message.EvalString(ctx, s.Vars())
	if err != nil {
		return fmt.Errorf("log message: %w", err)
	}
	a.logger.Log(ctx, a.level, msg, "hook", a.hook, "stage", string(s.Stage), "request_id", s.Info.ID, "generation", s.Info.Generation)
	return nil
}
