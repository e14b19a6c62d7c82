#!/usr/bin/env bash
# The official MCP conformance suite against moonhub serving examples/conformance (npm run
# conformance). Installs Node 22 (the suite needs it; the hub stays on the Node that runs npm)
# and the two suite versions under .cache/conformance/, starts the hub on a free port, and runs
# server mode with --suite all three times:
#   @modelcontextprotocol/conformance@0.1.16             (stable, 2025 revisions)
#   @modelcontextprotocol/conformance@0.2.0-alpha.12 --spec-version 2025-11-25
#   @modelcontextprotocol/conformance@0.2.0-alpha.12 --spec-version 2026-07-28
# Fails when any run reports a failure. No expected-failure lists.
# Env: CONFORMANCE_RUNS="stable alpha-2025 alpha-2026" (a subset), CONFORMANCE_SCENARIO=name.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
source scripts/conformance-env.sh

[ -f dist/src/cli/main.js ] || npm run build >/dev/null

log="$cache/hub.log"
node bin/moonhub.js serve --plugins examples/conformance --port 0 --no-watch >"$log" 2>&1 &
hub=$!
trap 'kill "$hub" 2>/dev/null || true' EXIT
url=""
for _ in $(seq 1 100); do
  url="$(grep -o 'http://127.0.0.1:[0-9]*/mcp' "$log" | head -1 || true)"
  [ -n "$url" ] && break
  if ! kill -0 "$hub" 2>/dev/null; then
    cat "$log" >&2
    exit 1
  fi
  sleep 0.1
done
[ -n "$url" ] || { echo "error: the hub did not start" >&2; cat "$log" >&2; exit 1; }
echo "moonhub at $url"

runs="${CONFORMANCE_RUNS:-stable alpha-2025 alpha-2026}"
scenario=()
[ -n "${CONFORMANCE_SCENARIO:-}" ] && scenario=(--scenario "$CONFORMANCE_SCENARIO")
status=0
summary=""
for run in $runs; do
  case "$run" in
    stable) bin="$stable_bin"; extra=(); label="conformance@$stable_version" ;;
    alpha-2025) bin="$alpha_bin"; extra=(--spec-version 2025-11-25); label="conformance@$alpha_version 2025-11-25" ;;
    alpha-2026) bin="$alpha_bin"; extra=(--spec-version 2026-07-28); label="conformance@$alpha_version 2026-07-28" ;;
    *) echo "unknown run: $run" >&2; exit 2 ;;
  esac
  echo
  echo "==> $label"
  out="$cache/$run.out"
  set +e
  if [ ${#scenario[@]} -gt 0 ]; then
    "$node22" "$bin" server --url "$url" "${scenario[@]}" "${extra[@]}" >"$out" 2>&1
  else
    "$node22" "$bin" server --url "$url" --suite all "${extra[@]}" >"$out" 2>&1
  fi
  rc=$?
  set -e
  grep -E '^(✓|✗) ' "$out" || true
  total="$(grep -E '^Total: ' "$out" | tail -1 || true)"
  echo "$total"
  summary="$summary$label: ${total:-no total (exit $rc)}"$'\n'
  if [ "$rc" -ne 0 ] || ! grep -qE "^(Total: [0-9]+ passed, 0 failed|Passed: [0-9]+/[0-9]+, 0 failed)" "$out"; then
    status=1
    echo "--- failures ($out)"
    grep -E -B2 -A8 'FAILURE|✗' "$out" | head -200 || true
  fi
done
echo
echo "==> summary"
printf '%s' "$summary"
exit "$status"
