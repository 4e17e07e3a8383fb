#!/usr/bin/env bash
# Whose CPU one shard of the gate matrix uses: runs shard K of N
# (`--partition cost:K/N`, the matrix of bench/lib/gate-matrix.sh, as
# scale.sh runs it) with Linux process accounting on, then prints its wall
# time and the CPU of every process that exited meanwhile, by program
# (bench/lib/cpu_by_program.py): the agents, the Rivet Engine, node,
# continuity, sandbox-agent... Over the cores, that CPU is the least wall
# time the shard can take on this machine. Run it on a quiet machine:
# accounting sees every process, not only the shard's.
#
# Needs root and Debian's `acct` package (accton, dump-acct).
#
#   bench/shard-cpu.sh                 # shard 4 of 4, --jobs 4
#   K=1 N=4 bench/shard-cpu.sh --jobs 2
#   BIN=/path/to/continuity bench/shard-cpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
k=${K:-4}
n=${N:-4}
for tool in accton dump-acct; do
  command -v "$tool" >/dev/null 2>&1 || { echo "$tool not found: apt-get install acct (and run as root)" >&2; exit 2; }
done
source bench/lib/gate-matrix.sh
if [ -z "${BIN:-}" ]; then cargo build --release --quiet; fi
bin=${BIN:-$repo/target/release/continuity}
work=$(mktemp -d)
trap 'accton off >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
[ -n "${KEEP:-}" ] && trap 'accton off >/dev/null 2>&1 || true' EXIT && echo "work folder: $work" >&2
jobs=(--jobs 4)
for arg in "$@"; do [ "$arg" = --jobs ] && jobs=(); done

: >"$work/acct"
accton "$work/acct" >/dev/null
start=$(date +%s%N)
code=0
"$bin" run "${matrix[@]}" "${jobs[@]}" "$@" --partition "cost:$k/$n" --out "$work/shard" \
  >"$work/log.txt" 2>&1 || code=$?
wall=$((($(date +%s%N) - start) / 1000000))
accton off >/dev/null
# Exit 1 (cells not passing) is the matrix's finding; 2 and 64 are the bench's failure.
if [ "$code" -gt 1 ]; then
  echo "continuity exit $code" >&2
  tail -n 20 "$work/log.txt" >&2
  exit "$code"
fi
cores=$(nproc)
echo "shard cost:$k/$n: $(python3 -c "import json; print(len(json.load(open('$work/shard/report.json'))['cells']))") cells (run with: ${jobs[*]} $*), wall $((wall / 1000)).$((wall % 1000 / 100))s on $cores cores"
python3 bench/lib/cpu_by_program.py "$work/acct" "$cores"
