# Shared by the examples' walkthrough.sh scripts, which play an orchestrator against a
# running agentd with curl and check each answer with jq. Source it; it needs curl and
# jq. AGENTD is the daemon's base URL; AGENTD_TOKEN, when set, the bearer token. A
# walkthrough run with -v (or AGENTD_VERBOSE=1) prints each request and answer.
AGENTD=${AGENTD:-http://127.0.0.1:8181}
AUTH=()
if [[ -n "${AGENTD_TOKEN:-}" ]]; then AUTH=(-H "Authorization: Bearer $AGENTD_TOKEN"); fi
VERBOSE=${AGENTD_VERBOSE:-}
if [[ "${1:-}" == "-v" ]]; then VERBOSE=1; fi

# exchange METHOD PATH BODY: with -v, prints the request just sent and the answer in
# status and body.
exchange() {
  [[ -n "$VERBOSE" ]] || return 0
  echo "  > $1 $2"
  if [[ -n "$3" ]]; then jq . <<<"$3" | sed 's/^/    /'; fi
  echo "  < $status"
  (jq . <<<"$body" 2>/dev/null || echo "$body") | sed 's/^/    /'
}

# call METHOD PATH [BODY] -> sets status and body
call() {
  local out
  out=$(curl -sS -X "$1" "${AUTH[@]}" -H 'Content-Type: application/json' -w '\n%{http_code}' \
    ${3:+--data "$3"} "$AGENTD$2")
  status=${out##*$'\n'}
  body=${out%$'\n'*}
  exchange "$1" "$2" "${3:-}"
}

# expect STATUS JQ-FILTER DESCRIPTION: the last answer has STATUS and passes the filter.
expect() {
  if [[ "$status" != "$1" ]] || ! jq -e "$2" <<<"$body" >/dev/null; then
    echo "FAIL: $3 (HTTP $status)"; echo "$body"; exit 1
  fi
  echo "ok   $3"
}

# show LABEL JQ-FILTER: prints a field of the last answer, indented.
show() {
  echo "     $1: $(jq -c "$2" <<<"$body")"
}
