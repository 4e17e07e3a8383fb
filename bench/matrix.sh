#!/usr/bin/env bash
# The matrix side by side, in one run on this machine (release build):
#   1. the bug reporter's SDK script (bench/repro-restart-continuity.mjs,
#      sandbox-agent SDK 0.4.2) at its defaults (60 s deadline per step, 6 s
#      wait after the restart), against sandbox-agent 0.4.2 and its mock
#      agent, restarted by SIGTERM to its group and a start on the same port
#      (as bench/time-to-diagnosis.sh). It runs one scenario against one
#      target per invocation, and can only restart what a shell command can:
#      its figure is one cell, the agent × native-continuity one;
#   2. continuity run --jobs 1 over the default local matrix
#      (every built-in target × the default scenarios: 7 × 4 today);
#   3. continuity run --jobs N over the same matrix, for each N in JOBS
#      (default: the number of CPUs, at least 2 — the default of --jobs);
#   4. continuity run --jobs N (the first of JOBS) with both clients,
#      --client rust --client ts-sdk: the floor and overhead per client.
# Prints wall times (whole run, and the cells after the stacks are up),
# floor and overhead, the harness's peak RSS (and per worker), whether the
# verdicts are identical, and the ratios; then, per client, the floor, the
# overhead above it and the cells with the most.
#
#   bench/matrix.sh
#   JOBS=4 bench/matrix.sh
#   JOBS="2 4 6" bench/matrix.sh     # several N side by side
#   SKIP_SEED=1 bench/matrix.sh     # without the SDK script (no npm install)
#   CLIENTS="rust ts-sdk" bench/matrix.sh   # the two-client matrix (40 cells)
#   BIN=/path/to/continuity bench/matrix.sh # another build, side by side (no build)
#   SKIP_CLIENTS=1 bench/matrix.sh  # without the two-client run
#   bench/matrix.sh --target agent --target gateway   # extra arguments go to every `continuity run`
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
version=0.4.2
jobs=${JOBS:-$(python3 -c 'import os; print(max(2, os.cpu_count() or 1))')}
clients=()
for c in ${CLIENTS:-}; do clients+=(--client "$c"); done

if [ -z "${BIN:-}" ]; then cargo build --release --quiet; fi
bin=${BIN:-$repo/target/release/continuity}
. "$repo/bench/lib/standalone-server.sh"
work=$(mktemp -d)
cleanup() {
  stop_standalone_server "$work"
  rm -rf "$work"
}
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap - EXIT && echo "work folder: $work" >&2

. "$repo/bench/lib/peak-rss.sh"
# Wall time and peak RSS of the harness process ("WALL_MS PEAK_KB").
measure() { run_measured "$work/out.txt" "$@"; }

seed_ms=""
if [ -z "${SKIP_SEED:-}" ]; then
  install_bench_sdk "$version"
  start_standalone_server "$work" "$bin"
  cp "$repo/bench/repro-restart-continuity.mjs" "$sdk/"
  # At its defaults: only where to connect, which agent and how to restart.
  read -r seed_ms _ < <(measure sh -c "cd '$sdk' && SA_BASE_URL='$base' SA_AGENT=mock SA_RESTART_CMD='$work/restart.sh' node --unhandled-rejections=warn repro-restart-continuity.mjs < /dev/null")
  stop_standalone_server "$work"
fi

read -r one_ms one_kb < <(measure "$bin" run "${clients[@]}" "$@" --jobs 1 --out "$work/jobs1")
runs=()
for n in $jobs; do
  read -r many_ms many_kb < <(measure "$bin" run "${clients[@]}" "$@" --jobs "$n" --out "$work/jobs$n-many")
  runs+=("$n:$many_ms:$many_kb")
done
clients_spec=""
if [ -z "${SKIP_CLIENTS:-}" ]; then
  n=${jobs%% *}
  # Exit 1 (failed cells) is the matrix's finding, not the bench's failure.
  read -r clients_ms _ < <(measure "$bin" run "$@" --jobs "$n" --client rust --client ts-sdk --out "$work/clients" || true)
  clients_spec="$n:$clients_ms"
fi

python3 - "$work" "$one_ms" "$one_kb" "${seed_ms:-}" "$clients_spec" "${runs[@]}" <<'PY'
import json, sys
work = sys.argv[1]
one_ms, one_kb = int(sys.argv[2]), int(sys.argv[3])
seed_ms = int(sys.argv[4]) if sys.argv[4] else None
clients_spec = sys.argv[5]
one = json.load(open(f"{work}/jobs1/report.json"))
runs = []
for spec in sys.argv[6:]:
    n, ms, kb = map(int, spec.split(":"))
    runs.append((n, ms, kb, json.load(open(f"{work}/jobs{n}-many/report.json"))))
def verdicts(r):
    return [(c["target"], c["scenario"], c.get("client"), c["verdict"], c.get("failureBoundary")) for c in r["cells"]]
def timing(r):
    t = r["run"]
    return t.get("floorMs", 0), t.get("overheadMs", 0)
def cell_ms(r, target, scenario):
    return next(c["durationMs"] for c in r["cells"] if c["target"] == target and c["scenario"] == scenario and c.get("client", "rust") == "rust")
def workers_of(r):
    return 1 + sum(1 for l in r["run"]["logs"] if l["name"].startswith("stack-") and l["name"].endswith(" sandbox-agent"))
clients = sorted({c.get("client", "rust") for c in one["cells"]})
print(f"matrix: {len(one['cells'])} cells ({len(one['run']['targets'])} targets x {len(one['run']['scenarios'])} scenarios x {len(clients)} client(s): {', '.join(clients)}), sandbox-agent {one['run']['serverVersion'].removeprefix('sandbox-agent ')}, release build")
print(f"{'run':<34} {'wall':>8} {'cells':>8} {'floor':>8} {'overhead':>9} {'peak RSS':>9} {'per worker':>10}")
def row(name, wall, r, kb, n):
    floor, over = timing(r)
    cells = r["run"]["durationMs"]
    pct = f"{over/floor*100:.0f}%" if floor else "-"
    print(f"{name:<34} {wall/1000:7.1f}s {cells/1000:7.1f}s {floor/1000:7.1f}s {over/1000:6.1f}s {pct:>3} {kb/1024:7.1f}MB {kb/1024/n:8.1f}MB")
if seed_ms is not None:
    print(f"{'SDK script, 1 cell (agent x nc)':<34} {seed_ms/1000:7.1f}s")
row("continuity --jobs 1", one_ms, one, one_kb, 1)
for n, ms, kb, r in runs:
    row(f"continuity --jobs {n} ({workers_of(r)} stacks)", ms, r, kb, workers_of(r))
same = True
for n, ms, kb, r in runs:
    agree = verdicts(one) == verdicts(r)
    same = same and agree
    print(f"verdicts --jobs {n} vs --jobs 1: {'identical' if agree else 'DIFFERENT'}")
    print(f"ratio wall --jobs 1 / --jobs {n}: {one_ms/ms:.2f}x; cells after the stack is up: {one['run']['durationMs']/r['run']['durationMs']:.2f}x")
    if not agree:
        for a, b in zip(verdicts(one), verdicts(r)):
            if a != b:
                print(f"  {a} != {b}")
if seed_ms is not None:
    nc = cell_ms(one, "agent", "native-continuity")
    best = min(r["run"]["durationMs"] for _, _, _, r in runs)
    print(f"ratio SDK script / continuity's same cell (agent x native-continuity, {nc/1000:.1f}s): {seed_ms/nc:.1f}x")
    print(f"SDK script x {len(one['cells'])} cells (one per invocation, if it could restart every target): ~{seed_ms*len(one['cells'])/1000:.0f}s, {seed_ms*len(one['cells'])/best:.0f}x continuity's fastest cells above")
def per_client(label, r):
    """Floor and overhead per client over the cells that ran, and the cells with the most overhead."""
    by = {}
    for c in r["cells"]:
        if "floorMs" not in c:
            continue
        by.setdefault(c.get("client") or "rust", []).append(c)
    print(f"overhead per client ({label}):")
    print(f"  {'client':<8} {'cells':>5} {'floor':>8} {'overhead':>9} {'':>5}  most above the floor")
    for client, cells in by.items():
        floor = sum(c["floorMs"] for c in cells)
        over = sum(c["overheadMs"] for c in cells)
        pct = f"{over/floor*100:.1f}%" if floor else "-"
        worst = sorted(cells, key=lambda c: -c["overheadMs"])[:3]
        most = ", ".join(f"{c['target']} x {c['scenario']} {c['overheadMs']}ms" for c in worst if c["overheadMs"] > 0)
        print(f"  {client:<8} {len(cells):>5} {floor/1000:7.1f}s {over/1000:8.2f}s {pct:>5}  {most or '-'}")
for n, ms, kb, r in runs:
    per_client(f"continuity --jobs {n}", r)
if clients_spec:
    n, ms = clients_spec.split(":")
    both = json.load(open(f"{work}/clients/report.json"))
    print(f"continuity --jobs {n} --client rust --client ts-sdk: {int(ms)/1000:.1f}s wall, {both['run']['durationMs']/1000:.1f}s of cells")
    per_client(f"--jobs {n}, both clients", both)
if not same:
    sys.exit(1)
PY
