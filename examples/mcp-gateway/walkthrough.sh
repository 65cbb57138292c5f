#!/usr/bin/env bash
# Drives a running agentd serving this directory (see README.md) as an MCP client would,
# over the streamable HTTP transport at /mcp, with curl: the session lists only the
# tools the allow-list lets through, an allowed call reaches the reference server, a
# call a guard denies, a call the allow-list rejects and the same tool under other
# names all come back as error results without reaching it, and the session's
# execution record shows every reviewed call. Needs curl and jq. AGENTD is the
# daemon's base URL.
set -euo pipefail
# shellcheck source=../lib/walkthrough.bash
source "$(dirname "${BASH_SOURCE[0]}")/../lib/walkthrough.bash"

# mcp METHOD [PARAMS]: one JSON-RPC request of the session -> sets status and body (the
# response message, from the event stream or a JSON body). Without a session yet, it
# starts one and sets SESSION and REQUEST_ID from the response headers.
mcp_id=0
mcp() {
  local headers out request
  mcp_id=$((mcp_id + 1))
  request="{\"jsonrpc\":\"2.0\",\"id\":$mcp_id,\"method\":\"$1\",\"params\":${2:-{\}}}"
  headers=$(mktemp)
  out=$(curl -sS -X POST "${AUTH[@]}" -D "$headers" -w '\n%{http_code}' \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    ${SESSION:+-H "Mcp-Session-Id: $SESSION" -H 'MCP-Protocol-Version: 2025-11-25'} \
    --data "$request" "$AGENTD/mcp")
  status=${out##*$'\n'}
  body=$(sed -n 's/^data: //p' <<<"${out%$'\n'*}")
  [[ -n "$body" ]] || body=${out%$'\n'*}
  if [[ -z "${SESSION:-}" ]]; then
    SESSION=$(sed -n 's/^Mcp-Session-Id: *\([^[:space:]]*\).*/\1/ip' "$headers")
    REQUEST_ID=$(sed -n 's/^X-Agentd-Request-Id: *\([^[:space:]]*\).*/\1/ip' "$headers")
  fi
  rm -f "$headers"
  exchange POST /mcp "$request"
}

echo "== 0. the gateway has connected the reference server"
for _ in $(seq 100); do
  call GET /v1/status
  jq -e '.gateways.mcp.servers[0].state == "ready"' <<<"$body" >/dev/null && break
  sleep 0.2
done
expect 200 '.gateways.mcp.servers[0].state == "ready"' "GET /v1/status shows the upstream everything ready"

echo "== 1. a session: initialize, and its agentd request id"
mcp initialize '{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"walkthrough","version":"1"}}'
expect 200 '.result.serverInfo.name == "agentd"' "initialize answers as agentd"
[[ "$REQUEST_ID" == "mcp-$SESSION" ]] || { echo "FAIL: X-Agentd-Request-Id is $REQUEST_ID"; exit 1; }
echo "ok   the session is agentd request $REQUEST_ID"
curl -sS -o /dev/null "${AUTH[@]}" -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -H "Mcp-Session-Id: $SESSION" -H 'MCP-Protocol-Version: 2025-11-25' \
  --data '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$AGENTD/mcp"

echo "== 2. tools/list: only what a one-step plan could pass the allow-list with"
mcp tools/list
expect 200 '[.result.tools[].name] | sort == ["echo","get-structured-content","get-sum","trigger-long-running-operation"]' \
  "four tools are listed: get-env is in the catalog but not allowed, the rest of the server's tools are not in the catalog"

echo "== 3. an allowed call is reviewed, guarded and forwarded"
mcp tools/call '{"name":"echo","arguments":{"message":"hello through agentd"}}'
expect 200 '(.result.isError | not) and .result.content[0].text == "Echo: hello through agentd" and .result._meta["dev.agentd/step_id"] == "step-1"' \
  "echo reaches the reference server as step-1"

echo "== 4. a guard denies a call at call time; the same tool with other arguments passes"
mcp tools/call '{"name":"get-sum","arguments":{"a":5000000,"b":1}}'
expect 200 '.result.isError and .result._meta["dev.agentd/refusal"].code == "sum_too_large"' "get-sum of five million: the sum-limit guard denies it"
mcp tools/call '{"name":"get-sum","arguments":{"a":40,"b":2}}'
expect 200 '(.result.isError | not) and .result.content[0].text == "The sum of 40 and 2 is 42."' "get-sum of 40 and 2 passes"

echo "== 5. calls outside the allow-list come back as error results and never reach the server"
mcp tools/call '{"name":"get-env","arguments":{}}'
expect 200 '.result.isError and .result._meta["dev.agentd/refusal"].code == "capability_not_allowed"' "get-env: the required review rejects it"
show reason '.result._meta["dev.agentd/refusal"].reason'
mcp tools/call '{"name":"Get-Env","arguments":{}}'
expect 200 '.result.isError and .result._meta["dev.agentd/refusal"].code == "unknown_tool"' "Get-Env: names are case-sensitive, no such tool"
mcp tools/call '{"name":"everything__get-env","arguments":{}}'
expect 200 '.result.isError and .result._meta["dev.agentd/refusal"].code == "unknown_tool"' "everything__get-env: names are qualified only when two servers collide"
mcp tools/call '{"name":"echo","arguments":{"message":"still here"}}'
expect 200 '(.result.isError | not) and .result.content[0].text == "Echo: still here"' "a refused call does not end the session: the next allowed call goes through"

echo "== 6. resources and prompts pass through only where the config allows"
mcp resources/list
expect 200 '[.result.resources[].uri] | length > 0 and all(startswith("demo://resource/static/document/"))' "resources/list shows the static documents only"
mcp resources/read '{"uri":"demo://resource/dynamic/text/1"}'
expect 200 '.error != null' "a resource the setting does not list is not found"
mcp prompts/list
expect 200 '[.result.prompts[].name] | sort == ["args-prompt","simple-prompt"]' "prompts/list shows the two allowed prompts"

echo "== 7. the session's execution record"
call GET "/v1/executions/$REQUEST_ID"
expect 200 '[.phases[].plan.steps[0].metadata.capability] == ["echo","get-sum","get-sum","echo"]' \
  "four reviewed phases were accepted: echo, both get-sum calls (the guard denied the first one at call time) and the last echo"
expect 200 '(.rejections | length) == 1 and .rejections[0].plan.steps[0].metadata.capability == "get-env" and .rejections[0].violations[0].code == "capability_not_allowed"' \
  "the rejected get-env plan is in the record, with the policy's violation"
expect 200 '[.result.steps[] | {capability, success}] == [{"capability":"echo","success":true},{"capability":"get-sum","success":true},{"capability":"echo","success":true}]' \
  "after_execution saw the three forwarded calls"
echo "walkthrough passed"
