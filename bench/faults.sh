#!/usr/bin/env bash
# The fault proxy's two goals, measured on this machine (release build):
#   1. a toxic takes effect within 1 ms of being set, on an open connection
#      (cargo bench --bench faults: reset_peer, down, partition and its heal,
#      200 trials each; and a 64-byte round trip direct vs through a proxy);
#   2. with no toxic set, the proxies on every hop add at most 5 % to the
#      default matrix's wall time: the default matrix's restart targets
#      (agent, gateway, gateway-reload, rivet, rivet-engine x the default
#      scenarios) with the proxies on, and with CONTINUITY_FAULT_PROXIES=off,
#      ROUNDS times each, alternating (off, on, off, on, ...) so that a busy
#      moment of the machine does not land on one side only.
# Prints the figures side by side, the ratio, and whether the verdicts agree.
#
#   bench/faults.sh
#   JOBS=2 ROUNDS=3 bench/faults.sh
#   SKIP_MATRIX=1 bench/faults.sh     # only the set-to-effect figures
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
jobs=${JOBS:-2}
rounds=${ROUNDS:-2}

cargo build --release --quiet
echo "== 1. set to effect (cargo bench --bench faults)"
cargo bench --quiet --bench faults 2>/dev/null

[ -n "${SKIP_MATRIX:-}" ] && exit 0
bin=$repo/target/release/continuity
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -n "${KEEP:-}" ] && trap - EXIT && echo "work folder: $work" >&2
. "$repo/bench/lib/peak-rss.sh"
targets=(--target agent --target gateway --target gateway-reload --target rivet --target rivet-engine)

echo
echo "== 2. no toxic: the default matrix's restart targets, --jobs $jobs, $rounds rounds"
runs=()
for r in $(seq 1 "$rounds"); do
  for side in off on; do
    out="$work/$side-$r"
    read -r ms _ < <(CONTINUITY_FAULT_PROXIES=$side run_measured "$work/$side-$r.log" \
      "$bin" run --jobs "$jobs" "${targets[@]}" --out "$out")
    runs+=("$side:$r:$ms")
  done
done

python3 - "$work" "${runs[@]}" <<'PY'
import json, statistics, sys
work = sys.argv[1]
rows = {"off": [], "on": []}
verdicts = {"off": set(), "on": set()}
for spec in sys.argv[2:]:
    side, r, ms = spec.split(":")
    report = json.load(open(f"{work}/{side}-{r}/report.json"))
    cells = report["run"]["durationMs"]
    rows[side].append((int(ms), cells))
    verdicts[side].add(tuple((c["target"], c["scenario"], c["verdict"]) for c in report["cells"]))
    n = len(report["cells"])
print(f"{n} cells; wall = the whole run, cells = after the stacks are up")
print(f"{'proxies':<10} {'wall (each round)':<28} {'median wall':>12} {'median cells':>13}")
med = {}
for side in ("off", "on"):
    walls = [w for w, _ in rows[side]]
    cells = [c for _, c in rows[side]]
    med[side] = (statistics.median(walls), statistics.median(cells))
    each = ", ".join(f"{w/1000:.1f}s" for w in walls)
    print(f"{side:<10} {each:<28} {med[side][0]/1000:11.1f}s {med[side][1]/1000:12.1f}s")
wall = med["on"][0] / med["off"][0] - 1
cells = med["on"][1] / med["off"][1] - 1
print(f"the proxies add {wall*100:+.1f} % to the wall time, {cells*100:+.1f} % to the cells (goal: at most 5 %)")
same = verdicts["off"] == verdicts["on"] and len(verdicts["off"]) == 1
print(f"verdicts with and without the proxies: {'identical' if same else 'DIFFERENT'}")
if not same:
    for side in ("off", "on"):
        for v in verdicts[side]:
            print(f"  {side}: {[x for x in v if x[2] != 'pass']}")
PY
