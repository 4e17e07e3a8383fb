#!/usr/bin/env bash
# The seed's goal, measured on the local stack: a fault cell whose toxic
# acts on half the connections (reset_peer, toxicity 0.5, on the gateway
# hop) makes the same toxic decisions in RUNS runs of one seed, and others
# across seeds. Each run's decisions are read from its cell's trace: the
# fault_action events (what the proxy decided for each connection of the
# cell that carried data in the window: a reset, or `spared` by the draw;
# two connections' actions may interleave either way, which is timing, so
# they are listed by connection). Prints each run's decisions, how many
# distinct lists each group gave, and the connections decided otherwise in
# two runs of the group: 0 for the one seed (whose lists may still differ
# by which connections carried data in the window, the client's timing),
# some across seeds.
#
#   bench/seed.sh
#   RUNS=10 SEED=4242 bench/seed.sh
#   BIN=target/debug/continuity bench/seed.sh    # without the release build
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
runs=${RUNS:-10}
seed=${SEED:-4242}
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=$repo/target/release/continuity
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/faults.toml" <<'TOML'
[targets.gateway-coin]
fault = { hop = "gateway", toxic = "reset_peer", timeout = 0, toxicity = 0.5, hold_ms = 3000 }
TOML

# One run of the cell with seed $1 into $2; prints its decisions on one line.
decisions() {
  "$BIN" run --config "$work/faults.toml" --target gateway-coin \
    --scenario native-continuity --seed "$1" --jobs 1 --out "$2" >"$2.log" 2>&1 || true
  node -e '
    const fs = require("fs"), dir = process.argv[1];
    const report = JSON.parse(fs.readFileSync(dir + "/report.json", "utf8"));
    const cell = report.cells[0];
    const seen = fs.readFileSync(dir + "/" + cell.trace, "utf8").trim().split("\n")
      .map(JSON.parse).filter(e => e.ev === "fault_action")
      .sort((a, b) => a.conn - b.conn)  // stable: each connection in order
      .map(e => `${e.action}@conn${e.conn}`);
    console.log(`${cell.verdict} ${seen.join(" ") || "(none)"}`);
  ' "$2"
}

group() {
  local name=$1; shift
  : >"$work/$name"
  local i=0
  for s in "$@"; do
    i=$((i + 1))
    line=$(decisions "$s" "$work/$name-$i")
    echo "  seed $s: $line"
    echo "${line#* }" >>"$work/$name"
  done
  echo "  $name: $(sort -u "$work/$name" | wc -l) distinct decision lists in $# runs," \
    "$(conflicts "$work/$name") connection(s) decided otherwise in two runs"
}

# How many connection numbers got different decisions in the lists of file $1.
conflicts() {
  tr ' ' '\n' <"$1" | grep '@conn' | sort -u | sed 's/.*@//' | sort | uniq -d | wc -l
}

echo "== $runs runs with --seed $seed"
group same $(for _ in $(seq 1 "$runs"); do echo "$seed"; done)
echo "== $runs runs with --seed 1..$runs"
group across $(seq 1 "$runs")
