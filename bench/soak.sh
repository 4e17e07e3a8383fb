#!/usr/bin/env bash
# Soak: the local matrix (every target × every built-in scenario) with
# --repeat 20 on a release build, then the verdict histogram per cell and
# the wall time. The harness has no flakiness of its own when every row has
# a single verdict.
#
#   bench/soak.sh                  # --repeat 20, report folder under a temp dir
#   REPEAT=5 bench/soak.sh         # shorter
#   OUT=reports/soak bench/soak.sh # keep the run folder there
#   OVERALL_TIMEOUT_MS=…           # the run's --overall-timeout-ms (default 4 h: the
#                                  # default 30 min cuts a --repeat 20 matrix short)
#   bench/soak.sh --target rivet-engine   # extra arguments go to `continuity run`
#
# Exit status: 0 when every cell has one verdict across its attempts, 1 when
# some cell's verdict varies, 2 when the run itself did not complete.
# Needs nginx, node/npm (as the local stack does) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${REPEAT:-20}
overall_ms=${OVERALL_TIMEOUT_MS:-14400000}
out=${OUT:-$(mktemp -d)/soak}

cargo build --release --quiet
bin=${CARGO_TARGET_DIR:-target}/release/continuity
started=$(date +%s.%N)
set +e
NO_COLOR=1 "$bin" run --repeat "$repeat" --overall-timeout-ms "$overall_ms" --out "$out" "$@" >/dev/null 2>"$out.stderr"
status=$?
set -e
ended=$(date +%s.%N)
if [ ! -f "$out/report.json" ]; then
  echo "the run wrote no report (exit $status):" >&2
  tail -20 "$out.stderr" >&2
  exit 2
fi

python3 - "$out/report.json" "$started" "$ended" "$status" <<'EOF'
import json, sys
from collections import Counter, OrderedDict
report = json.load(open(sys.argv[1]))
wall = float(sys.argv[3]) - float(sys.argv[2])
cells = OrderedDict()
durations = {}
# Schema v2: a cell holds its attempts (none listed when it ran once).
runs = []
for c in report["cells"]:
    target = c["target"] + (f" · {c['agent']}" if c.get("agent") else "")
    for a in c.get("attempts") or [c]:
        runs.append((target, c["scenario"], a))
for target, scenario, a in runs:
    key = (target, scenario)
    label = a["verdict"]
    if a.get("failureBoundary"):
        label += " @ " + a["failureBoundary"]
    cells.setdefault(key, Counter())[label] += 1
    durations.setdefault(key, []).append(a["durationMs"] / 1000)
print(f"soak: --repeat {report['run']['repeat']}, {len(runs)} attempts of {len(report['cells'])} cells, "
      f"wall time {wall:.0f} s ({wall / 60:.1f} min), continuity exit {sys.argv[4]}")
print(f"{'target':<15} {'scenario':<20} {'verdicts (count)':<44} cell s (min/median/max)")
varying = 0
for (target, scenario), counts in cells.items():
    verdicts = ", ".join(f"{v}: {n}" for v, n in counts.most_common())
    d = sorted(durations[(target, scenario)])
    spread = f"{d[0]:.1f}/{d[len(d) // 2]:.1f}/{d[-1]:.1f}"
    flag = "" if len(counts) == 1 else "   <- varies"
    varying += len(counts) > 1
    print(f"{target:<15} {scenario:<20} {verdicts:<44} {spread}{flag}")
restarts = [r for t, _, a in runs for r in a["restarts"] if t.startswith("rivet-engine")]
if restarts:
    ready = [r["readyMs"] for r in restarts if r.get("readyMs") is not None]
    if ready:
        print(f"rivet-engine restarts: ready (actor answers) after {min(ready)/1000:.1f}–{max(ready)/1000:.1f} s")
print("identical verdicts in every attempt" if varying == 0 else f"{varying} cell(s) with varying verdicts")
if report["run"]["interrupted"]:
    print("the run was interrupted")
sys.exit(1 if varying else 0)
EOF
