// Package mcpgw is agentd's MCP gateway: an MCP server (streamable HTTP at /mcp, or
// stdio for `agentd mcp`) in front of the upstream MCP servers of the live generation's
// gateways.mcp section, that puts every tool call through the request driver. It is an
// adapter: the driver owns every stage semantic, the gateway maps the protocol to it.
//
// Sessions. Each MCP session is one agentd request, id "mcp-<session id>" (returned in
// the X-Agentd-Request-Id header over HTTP and in every tool result's _meta under
// "dev.agentd/request_id"). The request opens on the live generation with its first
// tools/call and stays on that generation (engine.Driver.Resume); its record appears
// with that call. Its metadata is {gateway: mcp, client: {name, version}}.
//
// tools/call. Each call is the request's next plan phase with one step: step_id
// "step-N" (N counts the session's calls), namespace and agent_name the upstream's,
// capability the tool's upstream name, metadata.parameters the arguments. The phase
// is admitted by the engine (Session.Admit): the whole after_planning stage, the
// required review included, and then the tool_call check of the step the stage
// accepted; only then is the admitted call forwarded, with its canonical arguments
// (the accepted parameters encoded anew; parameters with member names that differ
// only by case are refused, ambiguous_parameters).
// Any refusal (an invalid plan, the review's rejection, a guard's denial, a refused or
// failed driver call) is a tool result with isError true whose text is "<code>:
// <reason>" and whose _meta "dev.agentd/refusal" is {code, reason}; the upstream is
// not called. A call a rule holds for an approval (approval_required) names the
// approval and its URL in the text and as _meta "dev.agentd/refusal".approval {id,
// status, expires_at, url}; the same call (same tool, same arguments) sent again is
// checked again as the step it was admitted as, with no new review, and once approved
// it is forwarded once (docs/semantics.md §8.20). After each forwarded call, before its
// answer, the driver is told how the step ended (Driver.Finish), so the labels of its
// result are the request's before the client sees it (a server with meta_labels may
// state more in the result's _meta "dev.agentd/labels"; a result the driver cannot
// take is answered as a tool error); then, beside the answer, the combined result of
// the session's calls so far goes to after_execution. A name no upstream offers (names are case-sensitive, and a
// qualified name exists only for a collision) is refused with unknown_tool and never
// reaches the driver or an upstream. A session's phases are reviewed one at a time;
// forwarded calls run concurrently. A rejection by the required review refuses that
// call and is recorded, but does not end the request: the session's request opens with
// independent phases (engine.Opening.PhasesIndependent), so each call is reviewed on
// its own. A refusal that does end it (request_failed after a hook panic, a retired or
// expired generation, a record over its budget) leaves a session that lists no tools.
//
// tools/list. The upstreams' tools, each under its own name, or as
// "<server>__<tool>" when several upstreams offer that name (the first in
// configuration order keeps a qualified name that equals another listed name), are
// listed only when a one-step plan with the session's next step id could pass the
// after_planning stage now (Session.Evaluate, which records nothing). A tool the
// server's catalog entry (gateways.mcp.servers[].tools) does not list therefore never
// shows: config.Load makes each server a catalog agent whose capabilities are those
// tools, so plan validation, not the gateway, decides.
//
// Resources and prompts pass through unreviewed, but only those the server's
// `resources` URI patterns and `prompts` names allow; the others are neither listed nor
// served. List-changed notifications of upstreams reach every session; a new
// generation notifies tools/list_changed. Progress notifications of a forwarded call
// reach the calling session; a call the client cancels is cancelled upstream.
//
// Upstreams. The gateway follows the live generation: a server whose command,
// directory, environment, URL or headers changed is restarted, the others keep their
// connection. A stdio server is spawned with exactly its env and env_pass variables,
// its stderr logged line by line; a line on its stdout that is not a JSON-RPC message
// is dropped with a log line (a response it meant is answered with an error, so the
// call gets an error result). A server that exits or whose connection breaks fails
// its in-flight calls with an error result and is reconnected with exponential backoff
// while every session stays open. Each forwarded call has the tool's timeout. Status
// reports each upstream's state, last error and restarts (GET /v1/status, gateways.mcp).
//
// Telemetry. With Config.TracerProvider, the messages the gateway serves and sends are
// spans after the OpenTelemetry MCP conventions (telemetry.go): a SERVER span per
// client message, whose parent is the trace context in its params._meta; a CLIENT
// span per upstream message, whose trace context goes into its params._meta. The
// driver's spans of a call join the trace of its server span.
package mcp
