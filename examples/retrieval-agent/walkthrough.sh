#!/usr/bin/env bash
# Drives a running agentd (see README.md) exactly as an orchestrator would, against the
# retrieval-agent config: knowledge-base retrieval before planning (and its `when`
# opt-out), the Rego plan allow-list, the audit effect, answer redaction and truncation,
# the execution record, the per-user rate limit, and retrieval failing open.
#
# It builds and starts the knowledge-base service (kb/) itself on 127.0.0.1:18282, the
# address hooks/10-context.yaml points http.retrieve at, and stops it on exit.
# Needs go, curl and jq. AGENTD is the daemon's base URL.
set -euo pipefail
# shellcheck source=../lib/walkthrough.bash
source "$(dirname "${BASH_SOURCE[0]}")/../lib/walkthrough.bash"
KB_ADDR=127.0.0.1:18282 # must match the http.retrieve url in hooks/10-context.yaml
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
run="$(date +%s)-$$" # per-run id: request ids and users are fresh on every run

echo "== 0. start the knowledge base on $KB_ADDR"
tmp=$(mktemp -d)
kb_pid=
cleanup() {
  local rc=$?
  if [[ -n "$kb_pid" ]]; then kill "$kb_pid" 2>/dev/null || true; wait "$kb_pid" 2>/dev/null || true; fi
  if [[ $rc -ne 0 && -s "$tmp/kb.log" ]]; then echo "--- kb log ---"; cat "$tmp/kb.log"; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if (exec 3<>"/dev/tcp/${KB_ADDR%:*}/${KB_ADDR##*:}") 2>/dev/null; then
  echo "FAIL: $KB_ADDR is already in use. The walkthrough starts its own knowledge base there"
  echo "      (the address hooks/10-context.yaml fetches from); stop whatever listens on it"
  echo "      (e.g. a kb left running from 'go run ./examples/retrieval-agent/kb') and retry."
  exit 1
fi
(cd "$here" && go build -o "$tmp/kb" ./kb)
"$tmp/kb" -addr "$KB_ADDR" 2>"$tmp/kb.log" &
kb_pid=$!
for _ in $(seq 100); do
  if curl -fsS "http://$KB_ADDR/healthz" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$kb_pid" 2>/dev/null; then echo "FAIL: the knowledge base exited"; exit 1; fi
  sleep 0.1
done
curl -fsS "http://$KB_ADDR/healthz" >/dev/null || { echo "FAIL: the knowledge base is not healthy after 10s"; exit 1; }
echo "ok   kb answers /healthz"

echo "== 1. before_planning fetches context from the knowledge base"
call POST /v1/hooks/before_planning '{"request_id":"reset-'$run'","request":"How do I reset my password? (run '$run')","metadata":{"user":"alice-'$run'","topic":"accounts"}}'
expect 200 '.short_circuit == null and (.enrichments.rag_context | contains("[Password reset]"))' "kb-retrieval puts the KB snippet into rag_context"
show rag_context '.enrichments.rag_context'
expect 200 '.enrichments.user_profile == {"user":"alice-'$run'","locale":"en","topic":"accounts"}' "user-profile adds the user_profile enrichment"
expect 200 '[.invocations[] | [.hook_name, .status]] == [["per-user-rate-limit","succeeded"],["kb-retrieval","succeeded"],["user-profile","succeeded"]]' "all three before_planning hooks ran"

echo "== 2. the when condition: no_retrieval opts out of retrieval"
call POST /v1/hooks/before_planning '{"request_id":"optout-'$run'","request":"How do I reset my password? (run '$run')","metadata":{"user":"bob-'$run'","topic":"accounts","no_retrieval":true}}'
expect 200 '.short_circuit == null and (.enrichments | has("rag_context") | not) and (.invocations[] | select(.hook_name == "kb-retrieval") | .status == "skipped")' "kb-retrieval is skipped, no rag_context"

echo "== 3. a search plan runs to the end (request reset-$run)"
call POST /v1/hooks/after_planning '{"request_id":"reset-'$run'","plan":{"plan_id":"p1","steps":[{"step_id":"search","agent_name":"search","namespace":"docs","instruction":"find the password reset article","metadata":{"capability":"search","parameters":{"query":"password reset"}}},{"step_id":"summarize","agent_name":"search","namespace":"docs","instruction":"summarize it","depends_on":["search"],"metadata":{"capability":"summarize"}}]}}'
expect 200 '[.plan.steps[].step_id] == ["search","summarize"]' "after_planning: docs-allow-list allows docs/search search + summarize"
call POST /v1/hooks/after_execution '{"request_id":"reset-'$run'","result":{"plan_id":"p1","success":true,"steps":[{"step_id":"search","agent_name":"search","namespace":"docs","capability":"search","success":true,"response":{"data":{"snippets":["[Password reset] ..."]}}},{"step_id":"summarize","agent_name":"search","namespace":"docs","capability":"summarize","success":true,"response":{"data":{"summary":"Use Settings > Security."}}}]}}'
expect 200 '.invocations[0].effects[0].effect_id == "retrieval-audit" and .invocations[0].effects[0].summary == "2 steps, success=true"' "after_execution: execution-audit reports its effect (and logs a line)"
show effect '.invocations[0].effects[0] | {effect_id, summary, data}'
answer="To reset your password, open Settings > Security and choose Reset password; the link is valid for 30 minutes. Still stuck? Write to help.desk@example.com or call +1 415 555 0100, and mention your workspace name and when you asked."
call POST /v1/hooks/after_synthesis "$(jq -nc --arg id "reset-$run" --arg r "$answer" '{request_id: $id, response: $r}')"
expect 200 '(.response | contains("help.desk") or contains("555") | not) and (.response | contains("[REDACTED]"))' "after_synthesis: pii-redaction removes the e-mail address and phone number"
expect 200 '(.response | utf8bytelength) <= 200 and (.response | endswith(" [truncated]"))' "after_synthesis: answer-length cuts the answer to 200 bytes"
show response '.response'
call GET "/v1/executions/reset-$run"
expect 200 '.status == "succeeded" and .final_response_source == "after_synthesis_hooks" and ([.pipeline_hooks[].hook_name] == ["per-user-rate-limit","kb-retrieval","user-profile","docs-allow-list","execution-audit","pii-redaction","answer-length"])' "the execution record lists every invocation"
show pipeline_hooks '[.pipeline_hooks[] | "\(.phase)/\(.hook_name):\(.status)"]'

echo "== 4. a plan with a disallowed capability is rejected"
call POST /v1/hooks/before_planning '{"request_id":"fetch-'$run'","request":"What does the vendor site say about refunds? (run '$run')","metadata":{"user":"dave-'$run'"}}'
expect 200 '.short_circuit == null' "before_planning"
call POST /v1/hooks/after_planning '{"request_id":"fetch-'$run'","plan":{"plan_id":"p2","steps":[{"step_id":"fetch","agent_name":"search","namespace":"docs","instruction":"fetch the vendor page","metadata":{"capability":"web_fetch","parameters":{"url":"https://vendor.example/refunds"}}},{"step_id":"reindex","agent_name":"indexer","namespace":"admin","instruction":"rebuild the index","metadata":{"capability":"reindex"}}]}}'
expect 403 '.error.type == "required_after_planning" and .error.hook == "docs-allow-list" and ([.error.violations[] | [.step_id, .code]] | sort) == [["fetch","capability_not_allowed"],["reindex","namespace_not_allowed"]]' "after_planning rejects web_fetch and admin/indexer (403 with violation codes)"
show violations '[.error.violations[] | {step_id, code}]'
call GET "/v1/executions/fetch-$run"
expect 200 '.status == "failed" and ((.phases // []) | length) == 0' "the failed record keeps the hook evidence and no accepted plan"

echo "== 5. the per-user rate limit: 5 questions a minute"
for i in 1 2 3 4 5; do
  call POST /v1/hooks/before_planning '{"request_id":"limit-'$i'-'$run'","request":"Question '$i' about invoices (run '$run')","metadata":{"user":"carol-'$run'","topic":"billing"}}'
  expect 200 '.short_circuit == null' "carol's question $i of 5 goes on to planning"
done
call POST /v1/hooks/before_planning '{"request_id":"limit-6-'$run'","request":"Question 6 about invoices (run '$run')","metadata":{"user":"carol-'$run'","topic":"billing"}}'
expect 200 '.short_circuit.kind == "authoritative" and .short_circuit.source == "rate_limit" and .short_circuit.hook == "per-user-rate-limit" and ([.invocations[].hook_name] == ["per-user-rate-limit"])' "the sixth is answered by the rate limit (authoritative; no KB call)"
show short_circuit '.short_circuit.response'
call GET "/v1/executions/limit-6-$run"
expect 200 '.status == "succeeded" and .final_response_source == "before_planning_short_circuit"' "its record is complete: the short circuit is the final answer"
call POST /v1/hooks/before_planning '{"request_id":"other-'$run'","request":"Can I get a refund? (run '$run')","metadata":{"user":"erin-'$run'","topic":"billing"}}'
expect 200 '.short_circuit == null and (.enrichments.rag_context | contains("[Refund policy]"))' "another user is not limited"

echo "== 6. retrieval fails open when the knowledge base is down"
kill "$kb_pid"; wait "$kb_pid" 2>/dev/null || true; kb_pid=
call POST /v1/hooks/before_planning '{"request_id":"down-'$run'","request":"How do I export my data? (run '$run')","metadata":{"user":"frank-'$run'","topic":"data"}}'
expect 200 '.short_circuit == null and (.enrichments | has("rag_context") | not) and .enrichments.user_profile.user == "frank-'$run'"' "the request goes on without rag_context"
expect 200 '.invocations[] | select(.hook_name == "kb-retrieval") | .status == "failed" and .decision.reason == "hook_error"' "kb-retrieval is recorded as failed (hook_error)"
show error '.invocations[] | select(.hook_name == "kb-retrieval") | .error'
echo "walkthrough passed"
