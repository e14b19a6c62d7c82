# Sourced by the scripts that need tools from the npm registry which are not dependencies of the
# hub (a Node 22 or 24 binary, the conformance suite, third-party MCP clients). `npm_cached DIR
# PKG...` installs the packages once into DIR (a private package.json there) and leaves a stamp,
# so later runs cost nothing; change a version and it installs again.
npm_cached() { # dir package...
  local dir="$1"
  shift
  local names="$*"
  names="${names//\//_}"
  local stamp="$dir/.installed-${names// /+}"
  if [ ! -f "$stamp" ]; then
    rm -rf "$dir" && mkdir -p "$dir"
    echo '{"private":true}' >"$dir/package.json"
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "$@" >/dev/null)
    touch "$stamp"
  fi
}
