#!/usr/bin/env bash
# Runs a stock agent loop (agent/, the official OpenAI Go client, tools executed on the
# client) through the gateway of a running agentd (see README.md), in front of the
# scripted upstream (upstream/, which this script starts; no model runs): a quote the
# allow-list allows, a trade it rejects, an answer whose personal data is redacted,
# and the execution record of each.
# Needs go, curl and jq. AGENTD is the daemon's base URL; UPSTREAM_ADDR where the
# upstream listens (it must match `upstream:` in hooks/40-gateway.yaml).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/walkthrough.bash
source "$here/../lib/walkthrough.bash"
UPSTREAM_ADDR=${UPSTREAM_ADDR:-127.0.0.1:9300}
export UPSTREAM_API_KEY=${UPSTREAM_API_KEY:-demo-upstream-key}

bin=$(mktemp -d)
up_pid=
cleanup() {
	if [[ -n "$up_pid" ]]; then kill "$up_pid" 2>/dev/null || true; fi
	rm -rf "$bin"
}
trap cleanup EXIT

echo "== building the scripted upstream and the agent"
(cd "$here/../.." && go build -o "$bin/upstream" ./examples/openai-gateway/upstream && go build -o "$bin/agent" ./examples/openai-gateway/agent)
"$bin/upstream" -addr "$UPSTREAM_ADDR" -script "$here/upstream/script.json" -key-env UPSTREAM_API_KEY >"$bin/upstream.log" 2>&1 &
up_pid=$!
for _ in $(seq 100); do
	grep -q "listening" "$bin/upstream.log" && break
	sleep 0.1
done
grep -q "listening" "$bin/upstream.log" || { echo "FAIL: the scripted upstream did not start"; cat "$bin/upstream.log"; exit 1; }
echo "ok   scripted upstream at http://$UPSTREAM_ADDR/v1"

# agent ARGS... -> sets out; the agent's lines, also printed indented
agent() {
	out=$("$bin/agent" "$@")
	sed 's/^/     /' <<<"$out"
}

# has LINE DESCRIPTION: the agent printed LINE
has() {
	grep -qxF -- "$1" <<<"$out" || { echo "FAIL: $2: no line \"$1\""; exit 1; }
	echo "ok   $2"
}

echo "== 1. the agent asks for a quote: the round of tool calls passes the allow-list"
agent -tenant acme "What is ACME trading at?"
has 'tool_call: get_quote {"symbol":"ACME"}' "the reviewed get_quote call reaches the agent, which runs it"
has "answer: ACME trades at 182.50 USD." "the model answers from the tool result"
id=$(sed -n 's/^request_id: //p' <<<"$out")
call GET "/v1/executions/$id"
expect 200 '.lifecycle == "completed" and (.phases | length) == 1 and .phases[0].plan.steps[0].metadata.capability == "stock_quote" and (.phases[0].results | length) == 1' \
	"the record holds phase 1, its result, and the completed request"
show "hooks" '[.pipeline_hooks[] | "\(.hook_name):\(.status)"]'

echo "== 2. the agent is asked to trade: the allow-list rejects the round, no tool runs"
agent "Buy 100 ACME"
grep -q '^tool_call:' <<<"$out" && { echo "FAIL: a rejected tool call reached the agent"; exit 1; }
echo "ok   no tool call reaches the agent"
grep -q 'refused by policy. (decision [0-9a-f]*)' <<<"$out" || { echo "FAIL: the refusal does not name its decision"; exit 1; }
grep -q 'capability_not_allowed' <<<"$out" && { echo "FAIL: the refusal tells the user the policy's internals"; exit 1; }
echo "ok   the agent gets a refusal naming its decision id, not the policy's internals"
id=$(sed -n 's/^request_id: //p' <<<"$out")
call GET "/v1/executions/$id"
expect 200 '.status == "failed" and ((.phases // []) | length) == 0 and .rejections[0].violations[0].code == "capability_not_allowed"' \
	"the record is failed, holds no accepted plan, and keeps the violation"

echo "== 3. the model's answer carries personal data: after_synthesis redacts it (streamed)"
agent -stream "Who do I talk to about ACME?"
has "stream_mode: buffered" "the stream is buffered, since a hook may rewrite the answer"
has "answer: Write to [REDACTED] or call [REDACTED]." "the e-mail address and the phone number are redacted"
echo "walkthrough passed"
