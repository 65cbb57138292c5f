// Package decisionlog writes one decision event for every stage call and operation
// check the request driver finishes, and for every call it refuses: who decided what
// (decision id, request, stage or operation, generation, policy revision, each hook's
// decision, violations or denial, cause, timings) and on what (the call's payload, with
// the masks of the generation's decision_log section applied; see config.DecisionLog).
//
// A Logger is an engine.Observer. It never blocks a decision: a report is put on a
// bounded queue (a full queue drops the event and counts it) and a single worker
// builds, masks, encodes and hands each event to the sinks: the JSON log, a file with
// size-based rotation, an HTTP endpoint that takes batches. A sink that is slow or
// down costs the worker, never a caller; its drops are counted in
// agentd.decision_log.dropped.
package decisionlog
