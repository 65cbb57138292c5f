// Package probe attacks the required after-planning policy of a compiled config
// generation with generated plans and reports each plan it allows that a careful
// reviewer would not expect to pass (`agentd probe`).
//
// Seeds are the plans the directory already knows: one single-step plan per catalog
// capability, the after_planning plans of tests/*.yaml and the plans of requests/*.json
// (API bodies, or eval scripts of {call, body}); the catalog's plans carry the request
// metadata of the first of the others that has some and, when the after_planning stage
// reads the metadata, are repeated with each other metadata the others hold (each
// tenant, say). Every seed is reviewed unmutated; the operation identities (namespace,
// agent_name, metadata.capability) of the plans the whole after_planning stage accepts
// are the allowed identities, overall and per request metadata, and the catalog
// capabilities whose single-step plan the policy rejects are the denied ones.
//
// Each mutation (see Mutations) rewrites a seed in its wire form, JSON as the API
// receives it, and the result goes through what the daemon does with a plan: the API's
// strict decoding (unknown members are rejected), plan validation (docs/semantics.md
// §2) and the after_planning stage of the generation's pipeline, in process, recording
// nothing. A mutated plan is a finding when the stage accepts it and its accepted plan
// holds a step whose operation identity is not one the policy allowed unmutated. A
// mutation of the request metadata (a member missing, null, empty, another value such
// as an unknown tenant, retyped) is judged against what its seed's own metadata was
// allowed: a request that lacks or blanks what its metadata said must get no more than
// the request that said it, even when another request context may use the identity.
//
// Labels (docs/semantics.md §8.21): a test's plan starts from its given.labels and
// given.history. When the after_planning stage or the guards read the request's flow
// (CEL labels, call.labels or history; Rego input.labels or input.history), every seed
// without a flow of its own is repeated under each label the config declares alone and
// under all of them (at most eight sets), so that a rule firing only with a label is
// exercised; a case with a flow is judged against what the seeds with the same metadata
// and flow got through, and, when the guards read the flow, an accepted plan's calls go
// through the guards too (engine.Generation.EvaluateCall) and a denied one ends the case
// (Ending RejectedGuard). A reader of the labels whose decisions on the seeds no label
// set changes is a LabelFinding: its label rules never fire.
//
// Each finding is minimized (steps, then step members, request metadata and the phase
// removed one at a time while it stays a finding), then evaluated once more with OPA's
// tracer to name the deny rule that should have caught it and where that rule stopped.
// A run is deterministic for a seed: candidates are generated in a fixed order, the
// seed picks homoglyph positions, hidden-step positions and the sample kept when there
// are more candidates than Options.MaxPlans; Options.Timeout bounds its time.
package probe
