// Package replay re-runs recorded decisions against a candidate configuration: the
// plans a request's review accepted and rejected (each phase, with the steps accepted
// before it) and its operation checks (bound against the plan and runs recorded before
// them), and reports what would change: newly denied, newly allowed, changed
// violations or denial. It is `agentd replay`, the permission diff a CI job runs on a
// policy change.
//
// Decisions come from execution records (GET /v1/executions/{id}, a list of them, a
// page of GET /v1/executions, or JSON lines) or from a decision log file (JSON lines of
// decision events). A record or event of another schema version is skipped and named.
// The candidate writes nothing (compare.Services).
package replay
