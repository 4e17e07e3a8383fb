#!/usr/bin/env bash
# The process faults on sandbox-agent (issue 48): one run per target, each
# on a fresh stack, with both clients on the four built-in scenarios and
# restart-mid-turn (`--jobs 1`, `--seed 48`; the store's pauses under
# `--persist postgres`). Prints a line per target: its wall time, its
# verdicts (an `error` or `skipped` cell is a fault that did not take or
# a stack that could not run it), and per client the harness overhead
# against the floor (report.json's floorMs/overheadMs): the sum over the
# target's cells, and the cell furthest above its floor.
#
#   bench/process-faults.sh                                   # every process-fault target
#   TARGETS="agent-process whole-stack" bench/process-faults.sh
#   OUT=reports/process-faults bench/process-faults.sh        # keep the run folders there
#   BIN=target/debug/continuity bench/process-faults.sh       # without the release build
#
# Exit status: 0 when no cell was an error or skipped, 1 otherwise, 2 when
# a run wrote no report.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
out=${OUT:-$(mktemp -d)/process-faults}
targets=${TARGETS:-agent-process whole-stack chaos agent-pause gateway-pause rivet-pause rivet-engine-pause store-pause agent-pause-long gateway-pause-long rivet-pause-long rivet-engine-pause-long store-pause-long}
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=$repo/target/release/continuity
fi
mkdir -p "$out"
scenarios=(--scenario native-continuity --scenario recreate-rehydrate --scenario sandbox-reconnect
  --scenario native-load --scenario restart-mid-turn)

for target in $targets; do
  extra=()
  case $target in store-*) extra=(--persist postgres) ;; esac
  started=$(date +%s)
  NO_COLOR=1 "$BIN" run --target "$target" "${scenarios[@]}" --client rust --client ts-sdk \
    --jobs 1 --seed 48 --overall-timeout-ms 7200000 "${extra[@]}" --out "$out/$target" --force \
    >"$out/$target.log" 2>&1 || true
  if [ ! -f "$out/$target/report.json" ]; then
    echo "no report for $target:" >&2
    tail -20 "$out/$target.log" >&2
    exit 2
  fi
  echo "$target $(($(date +%s) - started)) $(cut -d' ' -f1 /proc/loadavg)" >>"$out/walls"
done

python3 - "$out" $targets <<'EOF'
import json, sys
from collections import Counter
out, targets = sys.argv[1], sys.argv[2:]
walls = {}
for line in open(f"{out}/walls"):
    target, wall, load = line.split()
    walls[target] = (int(wall), load)
bad = 0
total = {}
print(f"{'target':<24} {'wall':>6} {'load':>5}  {'verdicts':<40} overhead/floor per client (worst cell)")
for target in targets:
    cells = json.load(open(f"{out}/{target}/report.json"))["cells"]
    verdicts = Counter(c["verdict"] for c in cells)
    bad += verdicts["error"] + verdicts["skipped"]
    per = []
    for client in ("rust", "ts-sdk"):
        mine = [c for c in cells if (c.get("client") or "rust") == client and c.get("floorMs")]
        floor = sum(c["floorMs"] for c in mine)
        over = sum(c.get("overheadMs", 0) for c in mine)
        t = total.setdefault(client, [0, 0])
        t[0] += floor
        t[1] += over
        worst = max(mine, key=lambda c: c.get("overheadMs", 0) / c["floorMs"], default=None)
        worst_text = (f"{worst['scenario']} {100 * worst.get('overheadMs', 0) / worst['floorMs']:.0f} %"
                      if worst else "-")
        per.append(f"{client} {100 * over / floor:.1f} % ({worst_text})" if floor else f"{client} -")
    wall, load = walls.get(target, (0, "-"))
    counts = ", ".join(f"{v} {n}" for v, n in verdicts.most_common())
    print(f"{target:<24} {wall:>5}s {load:>5}  {counts:<40} {'; '.join(per)}")
for client, (floor, over) in total.items():
    print(f"all targets, {client}: overhead {over / 1000:.1f} s over a floor of {floor / 1000:.1f} s "
          f"({100 * over / floor:.1f} %)")
print(f"error or skipped cells: {bad}")
sys.exit(1 if bad else 0)
EOF
