#!/usr/bin/env bash
# Drives a running agentd (see README.md) exactly as an orchestrator would: one request
# whose plan passes the allow-list, one trade the allow-list rejects, calls outside the
# accepted plan denied, a trade held for an approval at call time and run once approved,
# PII redaction, the execution record, and a cached answer.
# Needs curl and jq. AGENTD is the daemon's base URL.
set -euo pipefail
# shellcheck source=../lib/walkthrough.bash
source "$(dirname "${BASH_SOURCE[0]}")/../lib/walkthrough.bash"
run=$$

echo "== 1. an allowed request: quote ACME for tenant acme"
call POST /v1/hooks/before_planning '{"request_id":"quote-'$run'","request":"What is ACME trading at? (run '$run')","metadata":{"tenant":"acme"}}'
expect 200 '.enrichments.rag_context == "Tenant: acme" and (.short_circuit == null)' "before_planning adds the tenant context"
call POST /v1/hooks/after_planning '{"request_id":"quote-'$run'","plan":{"plan_id":"p1","steps":[{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","instruction":"quote ACME","metadata":{"capability":"stock_quote","parameters":{"symbol":"ACME"}}}]}}'
expect 200 '.plan.steps[0].step_id == "step-1"' "after_planning allows stock_quote"
call POST /v1/operations/check '{"operation":"tool_call","call":{"request_id":"quote-'$run'","step_id":"step-1","namespace":"demo-tools","agent_name":"stock-service","capability":"stock_quote","parameters":{"symbol":"ACME"}}}'
expect 200 '.allowed == true' "the quote tool call passes the guards"
call POST /v1/operations/finish '{"request_id":"quote-'$run'","step_id":"step-1","status":"succeeded","response":{"data":{"price":182.5,"currency":"USD"}}}'
expect 200 '.status == "succeeded"' "the orchestrator reports the quote's finish"
call POST /v1/hooks/after_execution '{"request_id":"quote-'$run'","result":{"plan_id":"p1","success":true,"steps":[{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","capability":"stock_quote","success":true,"response":{"data":{"price":182.5,"currency":"USD"}}}]}}'
expect 200 '.invocations[0].effects[0].effect_id == "audit"' "after_execution records the audit effect"
call POST /v1/hooks/after_synthesis '{"request_id":"quote-'$run'","response":"ACME trades at 182.50 USD. Questions: ir@acme.example"}'
expect 200 '.response == "ACME trades at 182.50 USD. Questions: [REDACTED]"' "after_synthesis redacts the e-mail address"
call GET "/v1/executions/quote-$run"
expect 200 '.status == "succeeded" and .final_response_source == "after_synthesis_hooks" and (.pipeline_hooks | length) == 6' "the execution record has every invocation"

echo "== 2. the same question again is answered from the cache"
call POST /v1/hooks/before_planning '{"request_id":"again-'$run'","request":"  what is acme trading at? (RUN '$run')","metadata":{"tenant":"acme"}}'
expect 200 '.short_circuit.kind == "cache" and (.short_circuit.response | contains("[REDACTED]"))' "before_planning short-circuits from the cache"

echo "== 3. a trade is rejected by the plan allow-list"
call POST /v1/hooks/before_planning '{"request_id":"trade-'$run'","request":"Buy 100 ACME","metadata":{"tenant":"acme"}}'
expect 200 '.short_circuit == null' "before_planning"
call POST /v1/hooks/after_planning '{"request_id":"trade-'$run'","plan":{"plan_id":"p2","steps":[{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","instruction":"buy ACME","metadata":{"capability":"execute_trade","parameters":{"symbol":"ACME","amount":18250}}}]}}'
expect 403 '.error.type == "required_after_planning" and .error.hook == "allowed-operations" and .error.violations[0].code == "capability_not_allowed" and .error.violations[0].step_id == "step-1"' "after_planning rejects execute_trade (403)"
call GET "/v1/executions/trade-$run"
expect 200 '.status == "failed" and ((.phases // []) | length) == 0' "the failed record keeps the hook evidence and no accepted plan"

call POST /v1/operations/check '{"operation":"tool_call","call":{"request_id":"trade-'$run'","step_id":"step-1","namespace":"demo-tools","agent_name":"stock-service","capability":"execute_trade","parameters":{"symbol":"ACME","amount":18250}}}'
expect 409 '.error.type == "request_failed"' "the refused request takes no tool call (409)"

echo "== 4. calls outside the accepted plan are denied"
call POST /v1/operations/check '{"operation":"tool_call","call":{"request_id":"quote-'$run'","step_id":"step-1","namespace":"demo-tools","agent_name":"stock-service","capability":"execute_trade","parameters":{"symbol":"ACME"}}}'
expect 403 '.allowed == false and .denial.code == "plan_mismatch"' "execute_trade under the quote step's id is denied"
call POST /v1/operations/check '{"operation":"tool_call","call":{"request_id":"quote-'$run'","step_id":"step-9","namespace":"demo-tools","agent_name":"stock-service","capability":"stock_quote","parameters":{"symbol":"ACME"}}}'
expect 403 '.denial.code == "not_in_accepted_plan"' "a step no accepted plan has is denied"
call POST /v1/operations/check '{"operation":"tool_call","call":{"request_id":"quote-'$run'","step_id":"step-1","namespace":"demo-tools","agent_name":"stock-service","capability":"stock_quote","parameters":{"symbol":"ACME"}}}'
expect 403 '.denial.code == "step_already_executed"' "the quote step does not run twice"
call GET "/v1/executions/quote-$run"
expect 200 '[.operations[].outcome] == ["allow","deny","deny","deny"] and .operations[0].finish.status == "succeeded"' "the record shows every check and the quote's finish"

echo "== 5. the broker may trade, but a trade above the limit waits for an approval"
call POST /v1/hooks/before_planning '{"request_id":"broker-'$run'","request":"Buy ACME for 25000","metadata":{"tenant":"acme"}}'
expect 200 '.short_circuit == null' "before_planning"
call POST /v1/hooks/after_planning '{"request_id":"broker-'$run'","plan":{"plan_id":"p3","steps":[{"step_id":"step-1","agent_name":"broker","namespace":"demo-tools","instruction":"buy ACME","metadata":{"capability":"execute_trade","parameters":{"symbol":"ACME","amount":25000}}}]}}'
expect 200 '.plan.steps[0].agent_name == "broker"' "after_planning allows the broker's trade"
call POST /v1/operations/check '{"operation":"tool_call","call":{"request_id":"broker-'$run'","step_id":"step-1","namespace":"demo-tools","agent_name":"broker","capability":"execute_trade","parameters":{"symbol":"ACME","amount":25000}}}'
expect 403 '.allowed == false and .denial.code == "approval_required" and .approval.status == "pending" and (.approval.url | startswith("/v1/approvals/"))' "the trade guard holds 25000 for an approval (403)"
approval=$(jq -r .approval.id <<<"$body")
show "approval" '.approval'
call GET "/v1/approvals?status=pending&request_id=broker-$run"
expect 200 '[.approvals[].id] == ["'"$approval"'"] and .approvals[0].rule == "trade-limit" and .approvals[0].parameters.amount == 25000' "the approval is listed as pending"
call POST /v1/operations/check '{"operation":"tool_call","call":{"request_id":"broker-'$run'","step_id":"step-1","namespace":"demo-tools","agent_name":"broker","capability":"execute_trade","parameters":{"symbol":"ACME","amount":25000}}}'
expect 403 '.denial.code == "approval_required" and .approval.id == "'"$approval"'"' "until it is decided, the same trade is held again"
# An approver token decides (AGENTD_APPROVER_TOKEN; AGENTD_TOKEN when unset).
orchestrator=("${AUTH[@]}")
if [[ -n "${AGENTD_APPROVER_TOKEN:-}" ]]; then AUTH=(-H "Authorization: Bearer $AGENTD_APPROVER_TOKEN"); fi
call POST "/v1/approvals/$approval" '{"decision":"approve","comment":"confirmed with the client"}'
expect 200 '.status == "approved" and .comment == "confirmed with the client"' "an approver approves the trade"
AUTH=("${orchestrator[@]}")
call POST /v1/operations/check '{"operation":"tool_call","call":{"request_id":"broker-'$run'","step_id":"step-1","namespace":"demo-tools","agent_name":"broker","capability":"execute_trade","parameters":{"symbol":"ACME","amount":25000}}}'
expect 200 '.allowed == true and .approval.id == "'"$approval"'" and .approval.status == "approved"' "the approved trade passes its check once"
call POST /v1/operations/finish '{"request_id":"broker-'$run'","step_id":"step-1","status":"succeeded","response":{"data":{"order_id":"o-'$run'"}}}'
expect 200 '.status == "succeeded"' "the orchestrator reports the trade's finish"
call POST /v1/operations/check '{"operation":"tool_call","call":{"request_id":"broker-'$run'","step_id":"step-1","namespace":"demo-tools","agent_name":"broker","capability":"execute_trade","parameters":{"symbol":"ACME","amount":25000}}}'
expect 403 '.allowed == false and .denial.code == "step_already_executed"' "a second run of the trade is denied"
call GET "/v1/executions/broker-$run"
expect 200 '[.operations[].approval.status] == ["pending","pending","approved",null] and .operations[2].approval.comment == "confirmed with the client"' "the record shows the approval and its decision on each check"

echo "== 6. operators see metrics"
out=$(curl -sS "${AUTH[@]}" "$AGENTD/metrics")
grep -q '^agentd_stage_calls_total' <<<"$out" || { echo "FAIL: metrics"; exit 1; }
echo "ok   /metrics exports agentd_stage_calls_total"
echo "walkthrough passed"
