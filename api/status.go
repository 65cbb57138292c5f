package api

import (
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/bundle"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
)

// StatusBody is GET /v1/status: the live generation and the last reload.
type StatusBody struct {
	Generation     string                             `json:"generation,omitempty"`
	LoadedAt       string                             `json:"loaded_at,omitempty"`
	Files          []string                           `json:"files"`
	DataMounts     []config.DataMount                 `json:"data_mounts"`
	Hooks          map[engine.Stage][]config.HookInfo `json:"hooks"`
	RequiredHook   string                             `json:"required_hook,omitempty"`
	Guards         []config.GuardInfo                 `json:"guards"`
	Observers      []config.ObserverInfo              `json:"observers,omitempty"`
	PolicyRevision string                             `json:"policy_revision,omitempty"`
	PlanBinding    engine.BindingMode                 `json:"plan_binding,omitempty"`
	MaxRequestAge  string                             `json:"max_request_age,omitempty"`
	LastReload     reload.Status                      `json:"last_reload"`
	// Store is the kind of store states and records live in (bolt, memory or redis).
	Store string `json:"store,omitempty"`
	// Gateways is the state of each protocol gateway, under its name (openai, mcp).
	Gateways map[string]any `json:"gateways,omitempty"`
	// Shadow is the shadow configuration's generation, last reload and disagreements
	// with the live one, when agentd serve runs with --shadow (docs/openapi.yaml,
	// ShadowSummary); a client reads it as decoded JSON.
	Shadow any `json:"shadow,omitempty"`
	// Bundles is the state of each bundle the live config comes from (agentd serve
	// --bundle), in OPA's status field names, keyed by bundle name.
	Bundles map[string]bundle.Status `json:"bundles,omitempty"`
}
