#!/usr/bin/env bash
# Installs the npm packages the tests use (each folder with a package-lock.json under
# cmd/ or tools/, e.g. the OpenAI Node library the gateway's Node test drives, or the MCP
# reference server and TypeScript SDK of tools/mcp), exactly as locked.
# Without node or npm it installs them from the Debian packages when CI=true and exits
# with a note otherwise (the tests that need them then skip, or fail under CI=true).
# A folder whose lock is already installed is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
	if [[ "${CI:-}" != "true" ]]; then
		echo "npm-deps: node or npm is not installed; the Node tests will skip" >&2
		exit 0
	fi
	sudo=()
	[[ $(id -u) -eq 0 ]] || sudo=(sudo)
	"${sudo[@]}" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq nodejs npm >/dev/null
fi

while IFS= read -r lock; do
	dir=$(dirname "$lock")
	stamp="$dir/node_modules/.agentd-installed-lock"
	if [[ -f "$stamp" ]] && cmp -s "$lock" "$stamp"; then
		continue
	fi
	echo "npm-deps: npm ci in $dir"
	(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
	cp "$lock" "$stamp"
done < <(find cmd tools -name package-lock.json -not -path '*/node_modules/*' | sort)
