#!/usr/bin/env bash
# The MCP conformance suite in client mode against moonhub's upstream layer: for each scenario the
# suite starts a test server and runs test/conformance/client-driver.ts, which makes a hub proxy
# that server as an upstream and calls its tools as an agent would. Every client scenario that
# `list --client` names is run, one at a time, in three runs:
#   stable      @modelcontextprotocol/conformance@0.1.16, each scenario at its own revision
#   alpha       @0.2.0-alpha.12, each scenario at its own revision (2025-11-25 or 2026-07-28)
#   alpha-2026  @0.2.0-alpha.12 --spec-version 2026-07-28: the scenarios that apply at 2026-07-28
# Core, auth, back-compat (2025-03-26), draft and extension scenarios alike; fails when any
# scenario fails. No expected-failure lists. Node 22 and the suites are shared with
# scripts/conformance.sh (.cache/conformance/, installed once by scripts/conformance-env.sh).
# Env: CONFORMANCE_CLIENT_RUNS="stable alpha alpha-2026" (a subset),
#      CONFORMANCE_CLIENT_SCENARIOS="name ..." (only these), CONFORMANCE_CLIENT_JOBS=2 (in parallel),
#      CONFORMANCE_CLIENT_NO_BUILD=1 (dist/ is current).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
source scripts/conformance-env.sh

# Built already when called from the test suite (rebuilding there would rewrite dist/ under it).
[ -n "${CONFORMANCE_CLIENT_NO_BUILD:-}" ] || npm run build >/dev/null
driver="node $root/dist/test/conformance/client-driver.js"
out_root="$cache/client"
jobs="${CONFORMANCE_CLIENT_JOBS:-2}"
only=" ${CONFORMANCE_CLIENT_SCENARIOS:-} "

# Prints "name" for each client scenario the suite lists (at spec version $2 if given).
scenarios() { # bin [spec-version]
  "$node22" "$1" list --client | sed -n 's/^  - \([^ ]*\) \[\(.*\)\]$/\1 \2/p' |
    while read -r name versions; do
      [ -n "${2:-}" ] && [[ "$versions" != *"$2"* ]] && continue
      [ "$only" != "  " ] && [[ "$only" != *" $name "* ]] && continue
      echo "$name"
    done
}

# Runs one scenario; its log goes to $dir/<name>.log and a result line to $dir/<name>.result.
run_one() { # bin dir name [extra...]
  local bin="$1" dir="$2" name="$3" log
  shift 3
  log="$dir/${name//\//_}"
  if "$node22" "$bin" client --command "$driver" --scenario "$name" "$@" >"$log.log" 2>&1; then
    echo "ok" >"$log.result"
  else
    echo "fail" >"$log.result"
  fi
}

status=0
summary=""
start_all=$SECONDS
for run in ${CONFORMANCE_CLIENT_RUNS:-stable alpha alpha-2026}; do
  case "$run" in
    stable) bin="$stable_bin"; spec=""; label="conformance@$stable_version" ;;
    alpha) bin="$alpha_bin"; spec=""; label="conformance@$alpha_version" ;;
    alpha-2026) bin="$alpha_bin"; spec="2026-07-28"; label="conformance@$alpha_version 2026-07-28" ;;
    *) echo "unknown run: $run" >&2; exit 2 ;;
  esac
  extra=()
  [ -n "$spec" ] && extra=(--spec-version "$spec")
  dir="$out_root/$run"
  rm -rf "$dir" && mkdir -p "$dir"
  echo
  echo "==> client mode, $label"
  start=$SECONDS
  names=()
  while read -r name; do names+=("$name"); done < <(scenarios "$bin" "$spec")
  for name in "${names[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    run_one "$bin" "$dir" "$name" "${extra[@]}" &
  done
  wait
  passed=0 failed=0 checks_ok=0 checks_bad=0
  for name in "${names[@]}"; do
    log="$dir/${name//\//_}"
    # "Passed: 14/14, 0 failed, 0 warnings" (a skipped scenario prints none).
    counts="$(sed 's/\x1b\[[0-9;]*m//g' "$log.log" | grep -oE '^Passed: [0-9]+/[0-9]+, [0-9]+ failed, [0-9]+ warnings' | tail -1 || true)"
    if [ -n "$counts" ]; then
      read -r ok total bad warn < <(echo "$counts" | sed -E 's/Passed: ([0-9]+)\/([0-9]+), ([0-9]+) failed, ([0-9]+) warnings/\1 \2 \3 \4/')
      checks_ok=$((checks_ok + ok))
      checks_bad=$((checks_bad + bad + warn))
    fi
    if [ "$(cat "$log.result")" = ok ]; then
      passed=$((passed + 1))
      echo "✓ $name ${counts:+($counts)}"
    else
      failed=$((failed + 1))
      echo "✗ $name ${counts:+($counts)}"
      sed 's/\x1b\[[0-9;]*m//g' "$log.log" | grep -E 'FAILURE|WARNING|Error|error|timed out|exited|did not' | head -20 | sed 's/^/    /'
    fi
  done
  line="$label: $passed scenarios passed, $failed failed ($checks_ok checks passed, $checks_bad failed) in $((SECONDS - start)) s"
  echo "$line"
  summary="$summary$line"$'\n'
  [ "$failed" -eq 0 ] || status=1
done
echo
echo "==> client mode summary ($((SECONDS - start_all)) s; logs in $out_root)"
printf '%s' "$summary"
exit "$status"
