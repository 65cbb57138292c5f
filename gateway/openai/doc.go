// Package openai is the OpenAI-compatible chat-completions gateway (docs/semantics.md
// §10.1): an agent that talks to a model through POST /v1/chat/completions gets
// agentd's four stages, the required plan review and the operation guards by pointing
// its base URL at the daemon. It is a thin adapter over the request driver
// (engine.Driver) and adds no stage semantics:
//
//   - a call whose last message is from the user opens the request (Driver.Open) and
//     runs before_planning on that text and the body's metadata; an accepted short
//     circuit is answered as a completion without calling the upstream, otherwise the
//     enrichments reach the model as a system message (engine.RenderEnrichments);
//   - a call whose last messages are tool results resumes the request, reports each
//     result of the last round, and runs after_execution on the combined result of the
//     turn's tool messages;
//   - an upstream reply with tool_calls is the next plan phase: one step per call,
//     admitted by the engine (engine.Session.Admit: the whole after_planning stage,
//     then a tool_call check per accepted step); only the admitted calls reach the
//     client, written by the gateway from their canonical form (ids it issues, the
//     reviewed parameters encoded anew), never as the upstream's bytes;
//   - a reply without tool calls goes through after_synthesis, which completes the
//     request, and the client gets the rewritten content in an answer the gateway
//     writes (no member of the upstream's reply that the review did not see).
//
// Client bodies, upstream replies and tool call arguments that a reader could take
// differently from the review (repeated member names, names that fold together, a
// read member in another case) are refused (vetMembers). Each user turn is a new
// request (requestID); its cache dimensions cover the whole conversation and the
// tenant (cacheVary).
//
// A call a guard holds for an approval is withheld naming the approval and its URL; a
// turn's first round whose every call is held keeps its request open and is kept (see
// held.go), so that the same conversation sent again after the approval gets exactly
// the approved calls without the model being asked again (docs/semantics.md §8.20).
//
// The gateway reads gateways.openai of the live generation for every call, and of the
// request's own generation once the request is known, so configuration hot-reloads with
// the rest. Tool calls are never streamed before their phase is accepted.
package openai
