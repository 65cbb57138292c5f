package config

import (
	"context"
	"log/slog"
	"slices"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/expr"
	"github.com/agentd-dev/agentd/engine/op"
)

// ObserverInfo describes one compiled operation observer, in order.
type ObserverInfo struct {
	Name      string       `json:"name"`
	Operation op.Operation `json:"operation"`
	On        []string     `json:"on"`
	File      string       `json:"file"`
	Line      int          `json:"line"`
}

// compileObservers compiles the operation observers of every document, in order:
// declarative begin/finish observers that write a log line for matching operations.
func (l *loader) compileObservers() ([]op.Around, []ObserverInfo) {
	var arounds []op.Around
	var infos []ObserverInfo
	for _, d := range l.docs {
		for i, n := range d.list("observers") {
			if a, info, ok := l.compileObserver(d, n, "observers["+strconv.Itoa(i)+"]", len(arounds)); ok {
				arounds = append(arounds, a)
				infos = append(infos, info)
			}
		}
	}
	return arounds, infos
}

func (l *loader) compileObserver(d document, n *yaml.Node, field string, index int) (op.Around, ObserverInfo, bool) {
	operation := op.Operation(get(n, "operation").Value)
	name := "observer-" + strconv.Itoa(index+1)
	if nn := get(n, "name"); nn != nil {
		name = nn.Value
	}
	info := ObserverInfo{Name: name, Operation: operation, On: []string{"begin", "finish"}, File: d.src.Name, Line: n.Line}
	c := l.context(d, "", name)
	before := len(l.errs)
	var when *expr.Program
	if w := get(n, "when"); w != nil {
		when = c.Expr(w, field+".when", expr.Guard, expr.Bool)
	}
	lg := get(n, "log")
	message := c.Expr(get(lg, "message"), field+".log.message", expr.Guard, expr.String)
	var level slog.Level
	if lv := get(lg, "level"); lv != nil {
		_ = level.UnmarshalText([]byte(lv.Value)) // the schema checked the name
	}
	if on := get(n, "on"); on != nil {
		info.On = nil
		for _, v := range on.Content {
			info.On = append(info.On, v.Value)
		}
	}
	if len(l.errs) > before {
		return op.Around{}, info, false
	}
	w := &logObserver{name: name, when: when, message: message, level: level, logger: l.opts.Logger,
		begin: slices.Contains(info.On, "begin"), finish: slices.Contains(info.On, "finish")}
	return op.Around{Name: name, Operations: []op.Operation{operation}, Begin: w.observe}, info, true
}

// logObserver writes a log line when a matching operation begins and when it finishes.
// The message is a CEL string over the call; a condition or message that fails to
// evaluate writes the line with the error instead (an observer never blocks).
type logObserver struct {
	name          string
	when, message *expr.Program
	level         slog.Level
	logger        *slog.Logger
	begin, finish bool
}

func (o *logObserver) observe(ctx context.Context, call op.Call) (context.Context, op.FinishFunc) {
	vars := guardVars(&call)
	if o.when != nil {
		if ok, err := o.when.EvalBool(ctx, vars); err != nil || !ok {
			if err != nil {
				o.logger.WarnContext(ctx, "observer condition failed", "observer", o.name, "error", err.Error())
			}
			return ctx, nil
		}
	}
	message, err := o.message.EvalString(ctx, vars)
	if err != nil {
		message = "observer message failed: " + err.Error()
	}
	if o.begin {
		o.write(ctx, call, message, "begin", nil)
	}
	if !o.finish {
		return ctx, nil
	}
	return ctx, func(r op.Result) { o.write(context.WithoutCancel(ctx), call, message, "finish", &r) }
}

func (o *logObserver) write(ctx context.Context, call op.Call, message, at string, r *op.Result) {
	attrs := []slog.Attr{
		slog.String("observer", o.name), slog.String("at", at), slog.String("operation", string(call.Operation)),
		slog.String("request_id", call.RequestID),
	}
	if call.StepID != "" {
		attrs = append(attrs, slog.String("step_id", call.StepID))
	}
	if id, ok := engine.DecisionIDFrom(ctx); ok {
		attrs = append(attrs, slog.String("decision_id", id))
	}
	if r != nil {
		attrs = append(attrs, slog.String("outcome", string(r.Outcome)))
	}
	o.logger.LogAttrs(ctx, o.level, message, attrs...)
}
