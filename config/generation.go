package config

import (
	"time"

	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/policy"
)

// Generation is one compiled configuration: what the driver runs (the embedded
// engine.Generation, whose ID is a content hash of every loaded file, names and bytes,
// or the revision of the bundle it came from)
// and what describes it. It is immutable and safe for concurrent use; a reload builds a
// new one beside it.
type Generation struct {
	engine.Generation
	// Digest is the content hash of every loaded file (names and bytes). It is the ID
	// unless the generation was loaded under a bundle revision (reload.Reloader.LoadAs).
	Digest  string
	Dir     string
	Files   []string
	Catalog *engine.Catalog
	// Policies is the compiled Rego bundle (modules and data documents).
	Policies *policy.Bundle
	// Queries are the data references the rego steps and Rego guards query, sorted.
	Queries []string
	// Reads says which payload and flow variables the hooks of each stage and the guards (the
	// empty stage) may read: what a replay needs its source to have kept.
	Reads builtin.InputReads
	// DataMounts say where each data document is mounted, in file order.
	DataMounts []DataMount
	Hooks      []HookInfo
	Guards     []GuardInfo
	// LabelRules are the rules of the labels sections, in order.
	LabelRules []LabelInfo
	// Observers are the declarative operation observers, in order.
	Observers []ObserverInfo
	Gateways  Gateways
	// DecisionLog masks and drops the decision events of calls that run on this
	// generation; nil when the directory has no decision_log section.
	DecisionLog *DecisionLog
	// ApprovalNotify is where new pending approvals are announced (approvals.notify);
	// nil when the directory configures none.
	ApprovalNotify *ApprovalNotify
	// AllowBoundaryRemoval states that this generation may replace a live one with a
	// stronger boundary (settings.allow_boundary_removal): see reload.BoundaryError.
	AllowBoundaryRemoval bool
	LoadedAt             time.Time
}

// Gateways are the protocol gateways a generation configures; a nil member is not
// configured.
type Gateways struct {
	OpenAI *OpenAIGateway
	MCP    *MCPGateway
}

// DataMount is where a data file's document is mounted: data/agentd/allowlist.json is
// data.agentd (so its member allowlist is data.agentd.allowlist).
type DataMount struct {
	File string `json:"file"`
	Path string `json:"path"`
}

// HookInfo describes one compiled hook, in registration order.
type HookInfo struct {
	Name     string       `json:"name"`
	Stage    engine.Stage `json:"stage"`
	Required bool         `json:"required,omitempty"`
	// Mode is the hook's mode when it does not enforce.
	Mode  engine.RuleMode `json:"mode,omitempty"`
	When  string          `json:"when,omitempty"`
	Steps []string        `json:"steps"`
	// Notes are the steps' own descriptions (builtin.Describer), such as what a rego
	// step's decision memo is keyed on.
	Notes []string `json:"notes,omitempty"`
	File  string   `json:"file"`
	Line  int      `json:"line"`
	// EnforcingRego are the queries of the hook's rego steps in enforce mode.
	EnforcingRego []string `json:"-"`
	// UnrenderedKeys are the keys the hook's enrich steps set that no prompt renders
	// (see engine.RenderedKey).
	UnrenderedKeys []string `json:"-"`
}

// GuardInfo describes one compiled guard rule, in order.
// LabelInfo is one rule of a labels section: the label and its when, where declared.
type LabelInfo struct {
	Label string `json:"label"`
	When  string `json:"when"`
	File  string `json:"file"`
	Line  int    `json:"line"`
}

type GuardInfo struct {
	Name      string       `json:"name"`
	Operation op.Operation `json:"operation"`
	// Mode is the rule's mode when it does not enforce.
	Mode engine.RuleMode `json:"mode,omitempty"`
	// Effect is require_approval for a rule that holds calls for an approval
	// (empty: it denies).
	Effect string `json:"effect,omitempty"`
	Code   string `json:"code,omitempty"`
	Kind   string `json:"kind"`
	File   string `json:"file"`
	Line   int    `json:"line"`
}

// StageHooks returns the hooks of stage in run order.
func (g *Generation) StageHooks(stage engine.Stage) []HookInfo {
	var out []HookInfo
	for _, h := range g.Hooks {
		if h.Stage == stage {
			out = append(out, h)
		}
	}
	return out
}
