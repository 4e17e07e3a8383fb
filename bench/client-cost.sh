#!/usr/bin/env bash
# Where each client's cells spend their time, side by side (issue 35, item
# 3): one run over the same targets and scenarios with every client, then,
# per client, the cells' median wall time, their floor and the harness's
# overhead above it, and the mean time of each step kind (connect, session
# creation, prompts, the restart, cleanup). A hosted client's connect is
# its actor's creation and the SDK's connect (and, for the browser, the
# page's start); its cleanup holds the SDK's dispose.
#
#   bench/client-cost.sh
#   CLIENTS="rust ts-sdk" bench/client-cost.sh
#   BIN=target/debug/continuity bench/client-cost.sh --target agent
# Extra arguments go to `continuity run` (default: --target agent --target
# gateway --scenario native-continuity --scenario recreate-rehydrate).
set -euo pipefail
cd "$(dirname "$0")/.."
clients=()
for c in ${CLIENTS:-rust ts-sdk browser}; do clients+=(--client "$c"); done
if [ -z "${BIN:-}" ]; then cargo build --release --quiet; fi
bin=${BIN:-target/release/continuity}
args=("$@")
if [ "${#args[@]}" -eq 0 ]; then
  args=(--target agent --target gateway --scenario native-continuity --scenario recreate-rehydrate)
fi
out=$(mktemp -d)/run
trap 'rm -rf "$(dirname "$out")"' EXIT
start=$(date +%s.%N)
"$bin" run "${clients[@]}" --jobs 1 "${args[@]}" --out "$out" >/dev/null 2>&1 || true
end=$(date +%s.%N)
[ -f "$out/report.json" ] || { echo "client-cost: the run wrote no report.json" >&2; exit 1; }
python3 - "$out/report.json" "$start" "$end" <<'PY'
import json, statistics, sys
report = json.load(open(sys.argv[1]))
wall = float(sys.argv[3]) - float(sys.argv[2])
kinds = ["connect", "create_session", "prompt", "restart", "destroy_session", "dispose"]
by_client, skipped = {}, {}
for cell in report["cells"]:
    client = cell.get("client") or "rust"
    if cell["verdict"] == "skipped":
        skipped.setdefault(client, cell.get("reason") or "")
        continue
    by_client.setdefault(client, []).append(cell)
print(f"run: {len(report['cells'])} cells, {wall:.1f}s wall")
for client, reason in sorted(skipped.items()):
    print(f"{client}: skipped: {reason}")
head = f"{'client':8} {'cells':>5} {'median':>8} {'floor':>8} {'overhead':>9}"
head += "".join(f" {k[:10]:>10}" for k in kinds) + f" {'other':>8}"
print(head + "   (step columns: mean ms per cell)")
for client, cells in sorted(by_client.items()):
    per = {k: 0.0 for k in kinds + ["other"]}
    for cell in cells:
        for phase in cell["phases"]:
            step = phase["step"] if phase["step"] in kinds else "other"
            per[step] += phase["durationMs"]
    n = len(cells)
    med = statistics.median(c["durationMs"] for c in cells) / 1000
    floor = sum(c.get("floorMs") or 0 for c in cells) / 1000
    over = sum(c.get("overheadMs") or 0 for c in cells) / 1000
    row = f"{client:8} {n:>5} {med:>7.1f}s {floor:>7.1f}s {over:>8.1f}s"
    row += "".join(f" {per[k] / n:>10.0f}" for k in kinds) + f" {per['other'] / n:>8.0f}"
    print(row)
PY
