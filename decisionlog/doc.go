// Package decisionlog writes one decision event for every stage call and operation
// check the request driver finishes, and for every call it refuses: who decided what
// (decision id, request, stage or operation, generation, policy revision, each hook's
// decision, violations or denial, cause, timings) and on what (the call's payload, with
// the masks of the generation's decision_log section applied; see config.DecisionLog).
//
// A Logger is an engine.Observer. It never blocks a decision: a report is put on a
// bounded queue (a full queue drops the event and counts it) and a single worker
// builds, masks, encodes and hands each event to the sinks: the JSON log, a file with
// size-based rotation, an HTTP endpoint that takes batches (agentd's events, or OPA's
// decision-log shape). A sink that is slow or down costs the worker, never a caller;
// its drops are counted in agentd.decision_log.dropped.
//
// Every transport writes through it because it observes the driver they share: a host
// (agentd serve, or a program embedding agentd, as examples/embedding does) builds one
// Logger with New, passes it as (one of) the engine.DriverConfig Observer of the one
// driver it hands the stage API and the gateways, and calls Close once the calls have
// ended, which writes out what is queued. Options.Rules gives the masks and drop rules
// of a generation by id (a reload.Registry's Get). An event's JSON layout is Event,
// versioned by SchemaVersion; readers such as agentd replay skip other versions.
package decisionlog
