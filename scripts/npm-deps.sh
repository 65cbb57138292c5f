#!/usr/bin/env bash
# Installs the npm packages the MCP gateway's tests, hold-out check and example run:
# @modelcontextprotocol/server-everything (the reference MCP server, spawned over stdio)
# and @modelcontextprotocol/sdk (the official TypeScript SDK's client), at the versions
# tools/mcp/package-lock.json pins, into tools/mcp/node_modules.
#
#   scripts/npm-deps.sh          install exactly the locked versions (npm ci)
#
# Needs node and npm (node 20 or later). The MCP gateway tests skip locally without the
# packages and fail under CI=true.
set -euo pipefail
cd "$(dirname "$0")/../tools/mcp"

for tool in node npm; do
	command -v "$tool" >/dev/null 2>&1 || { echo "npm-deps: $tool is not installed" >&2; exit 1; }
done
npm ci --no-audit --no-fund --loglevel=error
