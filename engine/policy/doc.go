// Package policy compiles Rego once and evaluates it many times for agentd.
//
// Compile parses every module with Rego v1 syntax, compiles them together with the
// stock built-ins of the linked OPA version minus the network ones (http.send and every
// net.* function), and merges the data documents into one read-only in-memory store. It
// reports every problem at once as a diag.List whose entries carry a stable diag.Kind
// and a file:line:column. The resulting *Bundle is immutable and safe for concurrent
// use; the caller owns file reading and passes contents in, so a Bundle never touches
// disk.
//
// Bundle.Prepare turns a data reference such as data.agentd.plan into a *Query, prepared
// once. PlanDecision and GuardDecision evaluate it under a per-evaluation deadline and
// decode the after-planning and operation-guard decision documents, failing closed: an
// undefined document, an evaluation error, a timeout or a document of the wrong shape
// is an error, never an "allow". PlanInput and CallInput build the evaluation input
// directly as Rego values from the inputs' engine.View, without a JSON round trip.
// Query.NewPlanMemo memoizes the plan decisions of deterministic policies, keyed by the
// input paths they can observe (package reads).
package policy
