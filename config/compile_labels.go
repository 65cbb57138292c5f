package config

import (
	"context"
	"log/slog"
	"slices"
	"strconv"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
	"github.com/agentd-dev/agentd/engine/expr"
	"github.com/agentd-dev/agentd/engine/op"
)

// labelRule attaches label to a reported result when its when is true.
type labelRule struct {
	label string
	when  *expr.Program
}

// labeler is the engine.Labeler of a generation's labels: sections, in document
// order.
type labeler struct {
	rules  []labelRule
	logger *slog.Logger
}

// Labels implements engine.Labeler: every label whose when is true of the step call
// and its result, once each, in declaration order. A when that fails to evaluate
// attaches its label (fail closed: a label only ever adds restrictions) and is logged.
func (lb *labeler) Labels(ctx context.Context, call *op.Call, result any) []string {
	var out []string
	vars := expr.Vars{Request: call.Request, Metadata: call.Metadata, Call: call, Reported: result}
	for _, r := range lb.rules {
		if slices.Contains(out, r.label) {
			continue
		}
		match, err := r.when.EvalBool(ctx, &vars)
		if err != nil {
			lb.logger.WarnContext(ctx, "label rule failed; its label is attached", "label", r.label, "step", call.StepID, "error", err)
			match = true
		}
		if match {
			out = append(out, r.label)
		}
	}
	return out
}

// compileLabels compiles the labels sections of every document, in order: each when
// is CEL in the label scope (call, result) under the generation's cost limit. A
// generation declares at most
// engine.MaxRequestLabels distinct labels, so no request can carry more. nil when no
// document declares labels; the infos list the rules.
func (l *loader) compileLabels() (engine.Labeler, []LabelInfo) {
	var rules []labelRule
	var infos []LabelInfo
	var names []string
	for _, d := range l.docs {
		for i, n := range d.list("labels") {
			field := "labels[" + strconv.Itoa(i) + "]"
			name := get(n, "label") // the schema checked it is a label name (engine.ValidLabel)
			if !slices.Contains(names, name.Value) {
				if names = append(names, name.Value); len(names) == engine.MaxRequestLabels+1 {
					l.errs = append(l.errs, d.src.Errorf(diag.KindSchema, name, field+".label",
						"a config declares at most %d distinct labels", engine.MaxRequestLabels))
				}
			}
			c := l.context(d, "", "labels")
			if prg := c.Expr(get(n, "when"), field+".when", expr.Label, expr.Bool); prg != nil {
				rules = append(rules, labelRule{label: name.Value, when: prg})
				infos = append(infos, LabelInfo{Label: name.Value, When: get(n, "when").Value, File: d.src.Name, Line: n.Line})
			}
		}
	}
	if len(rules) == 0 {
		return nil, nil
	}
	return &labeler{rules: rules, logger: l.opts.Logger}, infos
}
