#!/usr/bin/env bash
# Soak: the full default local matrix (every target × the four default
# scenarios × both clients, --client rust --client ts-sdk) once, then with
# --repeat 20, on a release build. Prints the verdict histogram per cell
# (every attempt of a cell should have one verdict), the wall time of both
# runs side by side, and the repeated run's wall time against REPEAT × the
# single run's (the goal: at most REPEAT × one run + 5 %).
#
#   bench/soak.sh                  # --repeat 20, report folders under a temp dir
#   REPEAT=3 bench/soak.sh         # shorter
#   OUT=reports/soak bench/soak.sh # keep the run folders there (OUT, OUT-once)
#   OVERALL_TIMEOUT_MS=…           # the runs' --overall-timeout-ms (default 6 h: the
#                                  # default 30 min cuts a --repeat 20 matrix short)
#   SKIP_ONCE=1 bench/soak.sh      # no single run first (no ratio printed)
#   CLIENTS=rust bench/soak.sh     # one client (default: "rust ts-sdk")
#   bench/soak.sh --target rivet-engine   # extra arguments go to both `continuity run`s
#
# Exit status: 0 when every cell has one verdict across its attempts and the
# repeated run took at most REPEAT × one run + 5 %, 1 when some cell's
# verdict varies or the time is over, 2 when a run itself did not complete
# (no report, interrupted, or a hang cut by the overall timeout).
# Needs nginx, node/npm (as the local stack does) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${REPEAT:-20}
overall_ms=${OVERALL_TIMEOUT_MS:-21600000}
out=${OUT:-$(mktemp -d)/soak}
clients=()
for client in ${CLIENTS:-rust ts-sdk}; do
  clients+=(--client "$client")
done

cargo build --release --quiet
bin=${CARGO_TARGET_DIR:-target}/release/continuity

# One `continuity run`: its wall time in seconds in $wall_s, its exit in $status.
run_once() {
  local dir=$1
  shift
  local started ended
  started=$(date +%s.%N)
  set +e
  NO_COLOR=1 "$bin" run "${clients[@]}" --overall-timeout-ms "$overall_ms" --out "$dir" "$@" \
    >/dev/null 2>"$dir.stderr"
  status=$?
  set -e
  ended=$(date +%s.%N)
  if [ ! -f "$dir/report.json" ]; then
    echo "the run wrote no report (exit $status):" >&2
    tail -20 "$dir.stderr" >&2
    exit 2
  fi
  wall_s=$(python3 -c "print(f'{$ended - $started:.1f}')")
}

mkdir -p "$(dirname "$out")"
once_wall=""
if [ -z "${SKIP_ONCE:-}" ]; then
  run_once "$out-once" "$@"
  once_wall=$wall_s
  once_status=$status
fi
run_once "$out" --repeat "$repeat" "$@"
wall=$wall_s

python3 - "$out/report.json" "$wall" "$status" "$once_wall" "${once_status:-}" "$out-once/report.json" <<'EOF'
import json, sys
from collections import Counter, OrderedDict
report = json.load(open(sys.argv[1]))
wall, status = float(sys.argv[2]), sys.argv[3]
once_wall, once_status = sys.argv[4], sys.argv[5]
repeat = report["run"]["repeat"]
cells = OrderedDict()
durations = {}
# Schema v2: a cell holds its attempts (none listed when it ran once).
runs = []
for c in report["cells"]:
    target = c["target"] + (f" · {c['agent']}" if c.get("agent") else "")
    client = c.get("client") or "rust"
    for a in c.get("attempts") or [c]:
        runs.append((target, client, c["scenario"], a))
for target, client, scenario, a in runs:
    key = (target, client, scenario)
    label = a["verdict"]
    if a.get("failureBoundary"):
        label += " @ " + a["failureBoundary"]
    cells.setdefault(key, Counter())[label] += 1
    durations.setdefault(key, []).append(a["durationMs"] / 1000)
print(f"soak: --repeat {repeat}, {len(runs)} attempts of {len(report['cells'])} cells, "
      f"wall time {wall:.0f} s ({wall / 60:.1f} min), continuity exit {status}")
print(f"{'target':<15} {'client':<7} {'scenario':<20} {'verdicts (count)':<48} cell s (min/median/max)")
varying = 0
for (target, client, scenario), counts in cells.items():
    verdicts = ", ".join(f"{v}: {n}" for v, n in counts.most_common())
    d = sorted(durations[(target, client, scenario)])
    spread = f"{d[0]:.1f}/{d[len(d) // 2]:.1f}/{d[-1]:.1f}"
    flag = "" if len(counts) == 1 else "   <- varies"
    varying += len(counts) > 1
    print(f"{target:<15} {client:<7} {scenario:<20} {verdicts:<48} {spread}{flag}")
restarts = [r for t, _, _, a in runs for r in a["restarts"] if t.startswith("rivet-engine")]
if restarts:
    ready = [r["readyMs"] for r in restarts if r.get("readyMs") is not None]
    if ready:
        print(f"rivet-engine restarts: ready (actor answers) after {min(ready)/1000:.1f}–{max(ready)/1000:.1f} s")
incomplete = report["run"]["interrupted"]
over = False
if once_wall:
    once = float(once_wall)
    once_report = json.load(open(sys.argv[6]))
    same = {(c["target"], c.get("client") or "rust", c["scenario"]): c["verdict"] for c in once_report["cells"]}
    differs = [k for k, counts in cells.items() if len(counts) == 1 and
               (k[0].split(" · ")[0], k[1], k[2]) in same and
               next(iter(counts)).split(" @ ")[0] != same[(k[0].split(" · ")[0], k[1], k[2])]]
    ratio = wall / (repeat * once)
    over = ratio > 1.05
    print(f"wall time: one run {once:.0f} s (exit {once_status}), --repeat {repeat} {wall:.0f} s "
          f"= {ratio:.3f} × {repeat} runs (goal ≤ 1.05){'   <- over' if over else ''}")
    if differs:
        print(f"{len(differs)} cell(s) whose verdict differs from the single run's: "
              + ", ".join(" × ".join(k) for k in differs))
        varying += len(differs)
print("identical verdicts in every attempt" if varying == 0 else f"{varying} cell(s) with varying verdicts")
if incomplete:
    print("the run was interrupted (a hang cut by the overall timeout?)")
sys.exit(2 if incomplete else 1 if varying or over else 0)
EOF
