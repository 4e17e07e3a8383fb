#!/usr/bin/env bash
# The matrix a release gates on, as CI runs it: its N shards
# (`--partition KIND:K/N`), one after another on this machine (release
# build), each as a CI job would run it (its own stacks, `--jobs` at its
# default). Prints, side by side, each shard's cells, wall time (the whole
# run, stacks included), the cells' time after the stacks are up, their
# floor and the overhead above it, and the CPU time it used (alone and over
# the machine's cores: the least wall time it could take here, whatever
# `--jobs`); then the slowest shard over the mean,
# the total, and whether the merged shards are the whole matrix (each cell
# once, `continuity merge`).
#
# The matrix, by default 400 cells: five targets × five scenarios × four
# agents × two clients × two server versions (about 35 min on 2 cores).
#
#   bench/scale.sh                          # 4 shards, cost split
#   SHARDS=2 PARTITION=count bench/scale.sh # 2 shards, round-robin by name
#   TIMINGS=runs/merged bench/scale.sh      # cost split by a previous run's durations
#   TARGETS=agent SCENARIOS="native-continuity recreate-rehydrate" AGENTS=mock \
#     CLIENTS=rust SERVERS=0.4.2 SHARDS=2 bench/scale.sh   # a quick check
#   BIN=/path/to/continuity bench/scale.sh  # another build (no build)
#   bench/scale.sh --retries 1              # extra arguments go to every shard's run
#   bench/scale.sh --jobs 4                 # more workers (stacks) than cores
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
shards=${SHARDS:-4}
kind=${PARTITION:-cost}
case "$kind" in cost | count | hash) ;; *) echo "PARTITION=$kind: cost, count or hash" >&2; exit 64 ;; esac
source bench/lib/gate-matrix.sh
timings=()
if [ -n "${TIMINGS:-}" ]; then timings=(--timings "$TIMINGS"); fi

if [ -z "${BIN:-}" ]; then cargo build --release --quiet; fi
bin=${BIN:-$repo/target/release/continuity}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -n "${KEEP:-}" ] && trap - EXIT && echo "work folder: $work" >&2

now_ms() { python3 -c 'import time; print(int(time.time() * 1000))'; }
walls=()
for k in $(seq 1 "$shards"); do
  echo "shard $kind:$k/$shards ..." >&2
  start=$(now_ms)
  code=0
  # The CPU time of the run and every process under it (its stacks, their
  # agents). A process orphaned on the way (Claude Code, the agents'
  # ripgrep) would be reaped by init and not counted: the wrapper is their
  # subreaper and reaps them. Over the cores, it is the least wall time the
  # shard can take.
  python3 -c 'import ctypes, os, resource, subprocess, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
code = subprocess.call(sys.argv[2:])
until = time.time() + 10
while time.time() < until:
    try:
        if os.waitpid(-1, os.WNOHANG)[0] == 0:
            time.sleep(0.1)
    except ChildProcessError:
        break
r = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write(str(int((r.ru_utime + r.ru_stime) * 1000)))
sys.exit(code)' "$work/cpu-$k.txt" \
    "$bin" run "${matrix[@]}" "${timings[@]}" "$@" --partition "$kind:$k/$shards" \
    --out "$work/shard-$k" >"$work/log-$k.txt" 2>&1 || code=$?
  walls+=("$(($(now_ms) - start))")
  # Exit 1 (cells not passing) is the matrix's finding; 2 and 64 are the bench's failure.
  if [ "$code" -gt 1 ]; then
    echo "shard $k/$shards: continuity exit $code" >&2
    tail -n 20 "$work/log-$k.txt" >&2
    exit "$code"
  fi
done
shard_dirs=()
for k in $(seq 1 "$shards"); do shard_dirs+=("$work/shard-$k"); done
# Exit 1 is a merged matrix with cells not passing; 64 a refusal.
code=0
"$bin" merge --out "$work/merged" "${shard_dirs[@]}" >"$work/merge.txt" 2>&1 || code=$?
merged=ok
if [ "$code" -gt 1 ]; then merged="refused: $(tail -n 1 "$work/merge.txt")"; fi

python3 - "$work" "$kind" "$shards" "$merged" "${walls[@]}" <<'PY'
import json, os, sys
work, kind, n, merged = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
walls = [int(w) for w in sys.argv[5:]]
cores = os.cpu_count() or 1
cpus = [int(open(f"{work}/cpu-{k}.txt").read()) for k in range(1, n + 1)]
rows = []
for k in range(1, n + 1):
    r = json.load(open(f"{work}/shard-{k}/report.json"))
    ran = [c for c in r["cells"] if c["verdict"] != "skipped"]
    rows.append((k, len(r["cells"]), len(ran), walls[k - 1], r["run"]["durationMs"],
                 r["run"].get("floorMs", 0), r["run"].get("overheadMs", 0), r["cells"]))
first = json.load(open(f"{work}/shard-1/report.json"))["run"]
AXES = ("serverVersion", "agent", "client", "sdkVersion", "persist")
values = {a: {c[a] for row in rows for c in row[7] if c.get(a)} for a in AXES}
axes = "".join(f" x {len(v)} {a}" for a, v in values.items() if v)
print(f"matrix: {sum(r[1] for r in rows)} cells ({len(first['targets'])} targets x {len(first['scenarios'])} scenarios{axes}), {n} shards, --partition {kind}:K/{n}")
def held(cells):
    """How many of the shard's cells each client and agent has (the axes that vary)."""
    parts = []
    for axis in ("client", "agent"):
        if len(values[axis]) > 1:
            parts.append(" ".join(f"{v} {sum(1 for c in cells if c.get(axis) == v)}" for v in sorted(values[axis])))
    return "; ".join(parts) or "-"
print(f"{'shard':<14} {'cells':>5} {'ran':>4} {'wall':>8} {'cells':>8} {'floor':>8} {'overhead':>9} {'cpu':>8} {'cpu/' + str(cores):>8}  held")
for (k, cells, ran, wall, dur, floor, over, listed), cpu in zip(rows, cpus):
    pct = f"{over/floor*100:.0f}%" if floor else "-"
    print(f"{kind}:{k}/{n:<8} {cells:>5} {ran:>4} {wall/1000:7.1f}s {dur/1000:7.1f}s {floor/1000:7.1f}s {over/1000:6.1f}s {pct:>3} {cpu/1000:7.1f}s {cpu/cores/1000:7.1f}s  {held(listed)}")
mean = sum(walls) / len(walls)
print(f"slowest / mean (wall): {max(walls)/mean:.3f}  (slowest {max(walls)/1000:.1f}s, mean {mean/1000:.1f}s)")
print(f"total: {sum(walls)/1000:.1f}s wall one after another, {sum(r[4] for r in rows)/1000:.1f}s of cells, {sum(cpus)/1000:.1f}s of CPU ({sum(cpus)/cores/1000:.1f}s over {cores} cores)")
seen = {}
for row in rows:
    for c in row[7]:
        key = json.dumps({k: v for k, v in c.items() if k in ("target", "scenario") + AXES}, sort_keys=True)
        seen[key] = seen.get(key, 0) + 1
twice = sum(1 for v in seen.values() if v > 1)
if merged == "ok":
    merged = f"{len(json.load(open(f'{work}/merged/report.json'))['cells'])} cells"
print(f"merged (continuity merge): {merged}; across the shards {len(seen)} distinct cells, {twice} in more than one shard")
PY
