#!/usr/bin/env bash
# The chaos soak (issue 48): `--target chaos` over SEEDS run seeds, one run
# per seed (each cell's schedule is drawn from the run's seed and the cell),
# then the determinism check (one seed, --repeat REPEAT: one schedule and
# one verdict in every attempt), then a replay: the first seed whose cells
# did not all pass (else the first seed) run again by `continuity rerun`
# from its run folder, which must draw the same schedules and stop at the
# same boundaries. Prints a line per cell (seed, client, scenario, verdict
# @ boundary, the schedule), what the failing schedules have in common, the
# harness overhead per cell against its floor, and the checks' results.
#
#   bench/chaos.sh                        # 20 seeds, both clients, native-continuity and restart-mid-turn
#   SEEDS=5 bench/chaos.sh                # fewer
#   FIRST_SEED=100 bench/chaos.sh         # seeds FIRST_SEED .. FIRST_SEED+SEEDS-1 (default 1)
#   CLIENTS=rust bench/chaos.sh           # one client
#   SCENARIOS="native-continuity" bench/chaos.sh
#   REPEAT=5 REPEAT_SEED=48 bench/chaos.sh  # the determinism check's settings (defaults)
#   OUT=reports/chaos bench/chaos.sh      # keep the run folders there
#   BIN=target/debug/continuity bench/chaos.sh   # without the release build
#
# Exit status: 0 when every check held (the repeats agree, the replay drew
# the same schedules and boundaries), 1 when one did not, 2 when a run
# wrote no report.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
seeds=${SEEDS:-20}
first=${FIRST_SEED:-1}
repeat=${REPEAT:-5}
repeat_seed=${REPEAT_SEED:-48}
out=${OUT:-$(mktemp -d)/chaos}
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=$repo/target/release/continuity
fi
args=()
for client in ${CLIENTS:-rust ts-sdk}; do
  args+=(--client "$client")
done
for scenario in ${SCENARIOS:-native-continuity restart-mid-turn}; do
  args+=(--scenario "$scenario")
done
mkdir -p "$out"

# One run into $1 with the rest as arguments; a run without a report stops the soak.
run() {
  local dir=$1
  shift
  NO_COLOR=1 "$BIN" run --target chaos --jobs 2 --out "$dir" "$@" >"$dir.log" 2>&1 || true
  if [ ! -f "$dir/report.json" ]; then
    echo "no report in $dir:" >&2
    tail -20 "$dir.log" >&2
    exit 2
  fi
}

started=$(date +%s)
for seed in $(seq "$first" $((first + seeds - 1))); do
  run "$out/seed-$seed" "${args[@]}" --seed "$seed"
done
soak_s=$(($(date +%s) - started))
run "$out/repeat" --seed "$repeat_seed" --repeat "$repeat" --client rust --scenario native-continuity

# The replay: the first seed that did not pass whole, else the first seed.
replayed=$(python3 - "$out" "$first" "$seeds" <<'EOF'
import json, sys
out, first, seeds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for seed in range(first, first + seeds):
    cells = json.load(open(f"{out}/seed-{seed}/report.json"))["cells"]
    if any(c["verdict"] != "pass" for c in cells):
        print(seed)
        break
else:
    print(first)
EOF
)
NO_COLOR=1 "$BIN" rerun "$out/seed-$replayed" --out "$out/replay" >"$out/replay.log" 2>&1 || true
[ -f "$out/replay/report.json" ] || { echo "the rerun wrote no report:" >&2; tail -20 "$out/replay.log" >&2; exit 2; }

python3 - "$out" "$first" "$seeds" "$replayed" "$soak_s" <<'EOF'
import json, sys
from collections import Counter
out, first, seeds, replayed, soak_s = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])

def key(c):
    return (c.get("client") or "rust", c["scenario"])

def outcome(c):
    return c["verdict"] + (" @ " + c["failureBoundary"] if c.get("failureBoundary") else "")

def faults(s):
    return "; ".join(f"{f['atMs']/1000:.1f}s {f['fault']} {f['on']}" + (f" {f['holdMs']/1000:.1f}s" if f['holdMs'] else "") for f in s["faults"])

verdicts, kinds_failed, kinds_all = Counter(), Counter(), Counter()
floor = overhead = 0
ratios = []
print(f"chaos soak: seeds {first}..{first + seeds - 1}, wall {soak_s} s ({soak_s / 60:.1f} min)")
print(f"{'seed':>4} {'client':<7} {'scenario':<18} {'verdict':<44} schedule")
for seed in range(first, first + seeds):
    for c in json.load(open(f"{out}/seed-{seed}/report.json"))["cells"]:
        client, scenario = key(c)
        verdicts[c["verdict"]] += 1
        s = c.get("schedule")
        print(f"{seed:>4} {client:<7} {scenario:<18} {outcome(c):<44} {faults(s) if s else '-'}")
        for f in (s or {}).get("faults", []):
            kind = f"{f['fault']} {f['on']}"
            kinds_all[kind] += 1
            if c["verdict"] != "pass":
                kinds_failed[kind] += 1
        if c.get("floorMs"):
            floor += c["floorMs"]
            overhead += c.get("overheadMs", 0)
            ratios.append(c.get("overheadMs", 0) / c["floorMs"])
print("verdicts: " + ", ".join(f"{v} {n}" for v, n in verdicts.most_common()))
print("faults in failing cells / in all cells:")
for kind, n in kinds_all.most_common():
    print(f"  {kind:<22} {kinds_failed[kind]:>3} / {n}")
if ratios:
    ratios.sort()
    print(f"harness overhead: {overhead / 1000:.1f} s over a floor of {floor / 1000:.1f} s "
          f"({100 * overhead / floor:.1f} %); per cell median {100 * ratios[len(ratios) // 2]:.1f} %, "
          f"max {100 * ratios[-1]:.1f} %")

ok = True
rep = json.load(open(f"{out}/repeat/report.json"))["cells"][0]
attempts = rep.get("attempts") or [rep]
schedules = {json.dumps(a.get("schedule"), sort_keys=True) for a in attempts}
outcomes = Counter(outcome(a) for a in attempts)
same = len(schedules) == 1 and len(outcomes) == 1
ok &= same
print(f"--repeat {len(attempts)} (seed of the run: see {out}/repeat): {len(schedules)} schedule(s), "
      f"verdicts {dict(outcomes)}: {'the same every time' if same else 'DIFFER'}")

before = {key(c): c for c in json.load(open(f"{out}/seed-{replayed}/report.json"))["cells"]}
after = {key(c): c for c in json.load(open(f"{out}/replay/report.json"))["cells"]}
for k, c in before.items():
    again = after.get(k)
    if again is None:
        print(f"replay of seed {replayed}: {k} did not run again")
        ok = False
        continue
    same_schedule = c.get("schedule") == again.get("schedule")
    same_outcome = outcome(c) == outcome(again)
    ok &= same_schedule and same_outcome
    print(f"replay of seed {replayed} by rerun: {' × '.join(k)}: schedule {'same' if same_schedule else 'DIFFERENT'}, "
          f"{outcome(c)} -> {outcome(again)}{'' if same_outcome else '   <- boundary differs'}")
sys.exit(0 if ok else 1)
EOF
