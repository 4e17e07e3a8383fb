#!/usr/bin/env bash
# The always-on checker's cost (issue 46's goals), on this machine, release build:
#   1. a 100 MB trace (made up: turns of session updates as every party records
#      them, one duplicate among them) checked line by line: time, MB/s, and
#      the checking process's peak resident memory (goal: at most 64 MB);
#   2. what the stream tap on a hop's fault proxy costs a stream: SSE
#      throughput through a proxy with no tap and with one (the cells' own
#      streams carry kilobytes; this is a flood, the tap's worst case);
#   3. the checker's cost to a real run's cells (goal: under 2 % of a cell's
#      time): a run of the local stack, then every attempt's trace checked
#      again, the checker's time with what the hops' taps wrote (each
#      tapped event timed as the tap writes it) against the cell's own.
# The machine is shared: the 1-minute load average is printed beside each part.
#
#   bench/checker.sh
#   MB=100 RUN_ARGS="--target agent --target gateway" bench/checker.sh
#   SKIP_RUN=1 bench/checker.sh     # parts 1 and 2 only
#   RUN_DIRS="runs/a runs/b" bench/checker.sh   # part 3 on run folders made already
set -euo pipefail
cd "$(dirname "$0")/.."
mb=${MB:-100}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
load() { cut -d' ' -f1 /proc/loadavg; }

cargo bench --quiet -p continuity-check --bench checker --no-run 2>/dev/null
checker=$(ls -t target/release/deps/checker-* | grep -v '\.d$' | head -1)

echo "== 1. a ${mb} MB trace (load $(load))"
"$checker" generate "$work/trace.jsonl" "$mb" 2>/dev/null
"$checker" check "$work/trace.jsonl"
rm -f "$work/trace.jsonl"

echo
echo "== 2. the stream tap on a hop (load $(load))"
cargo bench --quiet -p continuity-faults --bench tap -- "$mb" 3 2>/dev/null

[ -n "${SKIP_RUN:-}" ] && exit 0
if [ -n "${RUN_DIRS:-}" ]; then
  for dir in $RUN_DIRS; do
    echo
    echo "== 3. the cells of $dir (load $(load))"
    "$checker" run "$dir"
  done
  exit 0
fi
cargo build --release --quiet
echo
args=${RUN_ARGS:---target agent --target gateway --target gateway-reload}
echo "== 3. a run's cells: continuity run $args (load $(load))"
target/release/continuity run $args --out "$work/run" >"$work/run.log" 2>&1 || true
grep -E "cells passed" "$work/run.log" || { tail -20 "$work/run.log"; exit 1; }
"$checker" run "$work/run"
echo "(load $(load) at the end)"
