#!/usr/bin/env bash
# The README's examples with real third-party MCP clients (the MCP Inspector CLI, mcporter,
# mcp-remote, the SDK v1 client, the Vercel AI SDK's MCP client), over HTTP and stdio:
# installs them once under .cache/ (scripts/clients-env.sh), builds, and runs
# test/clients/third-party-clients.test.ts. Set CLIENTS_E2E_NO_BUILD=1 to skip the build.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
# shellcheck source=scripts/clients-env.sh
source "$root/scripts/clients-env.sh"
[ "${CLIENTS_E2E_NO_BUILD:-}" = "1" ] || npm run build >/dev/null
MOONHUB_CLIENTS_E2E=1 node --test --test-timeout=300000 dist/test/clients/third-party-clients.test.js
