#!/usr/bin/env bash
# The hang detector against waiting every deadline out: the same matrix
# run with the hang grace (--hang-grace-ms, GRACE, 2000 by default) and
# with --hang-grace-ms 0 (every phase waits its deadline out, as before
# the detector), the same seed, alternately: ROUNDS times (default 1)
# the grace then 0, so load from others falls on both sides alike. Prints
# each run's cell time side by side (all cells, and per client) with the
# 1-minute load average sampled through it, the bug report's cell
# (agent · ts-sdk × native-continuity) when it ran, the cells whose time
# moved most, and checks, for each round's pair of runs, what must not
# change:
#   - 0 false hangs: every phase judged `hung` with the grace is a timeout
#     (signature kind `timeout`) with the grace 0;
#   - every cell's verdict, failure boundary and cause (the boundary
#     phase's signature cause) are the same in both, except cells flaky in
#     either run or that the expectations mark flaky.
# A cell whose verdict differs with no hung phase before the first phase
# where the two runs part was not changed by the detector (it acts only by
# ending a phase): it is listed apart, as varying by itself, and with
# ROUNDS > 1 the rounds of each side are compared with each other too.
# Exits 1 when either check fails.
#
#   bench/hang.sh                        # the default matrix, the long-turn and the other opt-in scenarios, three clients
#   MATRIX=default CLIENTS="rust ts-sdk" ROUNDS=2 bench/hang.sh   # the issue's two-client default matrix, twice each way
#   MATRIX=default,long-turn bench/hang.sh   # several, comma-separated: the default matrix and the long-turn scenarios
#   MATRIX=long-turn bench/hang.sh       # the long-turn scenarios against their timeout targets
#   MATRIX=opt-in bench/hang.sh          # restart-mid-turn, client-restart, sandbox-provider and gateway-reload-idle
#   MATRIX=gate SHARD=1/4 bench/hang.sh  # one cost shard of the 400-cell gate matrix (bench/lib/gate-matrix.sh)
#   BIN=target/debug/continuity bench/hang.sh   # another build (no build)
#   bench/hang.sh --jobs 2               # extra arguments go to every run
#   ANALYSE=/tmp/tmp.XXXX bench/hang.sh  # read the runs a KEEP=1 run left again, run nothing
#
# CLIENTS (default "rust ts-sdk browser"; the browser keeps its sessions in
# IndexedDB, the others in the stack's Rivet actor), GRACE, SEED (47),
# ROUNDS (1), EXPECT (ci/expect-sandbox-agent-0.4.2.toml), KEEP=1 keeps the
# run folders.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
grace=${GRACE:-2000}
seed=${SEED:-47}
expect=${EXPECT:-$repo/ci/expect-sandbox-agent-0.4.2.toml}
matrix_kind=${MATRIX:-all}
clients=${CLIENTS:-rust ts-sdk browser}

if [ -z "${BIN:-}" ] && [ -z "${ANALYSE:-}" ]; then cargo build --release --quiet; fi
bin=${BIN:-$repo/target/release/continuity}
work=${ANALYSE:-$(mktemp -d)}
sampler=
# The load sampler goes with the script, however it ends.
finish() {
  if [ -n "$sampler" ]; then kill "$sampler" 2>/dev/null || true; fi
  if [ -z "${KEEP:-}" ] && [ -z "${ANALYSE:-}" ]; then rm -rf "$work"; fi
}
trap finish EXIT
[ -n "${KEEP:-}" ] && [ -z "${ANALYSE:-}" ] && echo "work folder: $work" >&2

client_args=()
for c in $clients; do client_args+=(--client "$c"); done
# Each client with the store it can reach: skipped cells are the other pairs.
stores=(--persist rivet)
case " $clients " in *" browser "*) stores+=(--persist indexeddb) ;; esac

# The matrices, one `continuity run` each, as lines of arguments.
specs=()
default_spec="${client_args[*]} ${stores[*]}"
long_spec="--scenario long-turn --scenario long-turn-idle --target agent --target gateway-read-timeout --target gateway-idle-cut --target client-headers-timeout ${client_args[*]} ${stores[*]}"
# The other opt-in scenarios on the targets they are written for, and
# the opt-in reload race on the bug report's scenario.
optin_spec="--scenario restart-mid-turn --scenario client-restart --scenario sandbox-provider --target agent --target gateway --target client --target server-kill ${client_args[*]} ${stores[*]}"
race_spec="--scenario native-continuity --target gateway-reload-idle ${client_args[*]} ${stores[*]}"
rounds=${ROUNDS:-1}
add_specs() {
  case "$1" in
    all) specs+=("$default_spec" "$long_spec" "$optin_spec" "$race_spec") ;;
    default) specs+=("$default_spec") ;;
    long-turn) specs+=("$long_spec") ;;
    opt-in) specs+=("$optin_spec" "$race_spec") ;;
    gate)
      CLIENTS=${CLIENTS:-rust ts-sdk}
      source bench/lib/gate-matrix.sh
      specs+=("${matrix[*]} --partition cost:${SHARD:-1/4}")
      ;;
    *) echo "MATRIX=$1: all, default, long-turn, opt-in or gate (comma-separated)" >&2; exit 64 ;;
  esac
}
IFS=, read -r -a kinds <<<"$matrix_kind"
for kind in "${kinds[@]}"; do add_specs "$kind"; done

now_ms() { python3 -c 'import time; print(int(time.time() * 1000))'; }
# The 1-minute load average every 5 s while a run goes on, into file $1.
sample_load() { while :; do cut -d' ' -f1 /proc/loadavg >>"$1"; sleep 5; done; }
if [ -n "${ANALYSE:-}" ]; then
  # The rounds and runs the folder holds (hang-R-N.wall for each).
  rounds=$(find "$work" -maxdepth 1 -name 'hang-*-1.wall' | wc -l)
  n=$(find "$work" -maxdepth 1 -name 'hang-1-*.wall' | wc -l)
  specs=()
fi
for r in $(seq 1 "$rounds"); do
  [ -n "${ANALYSE:-}" ] && break
  n=0
  for spec in "${specs[@]}"; do
    n=$((n + 1))
    for side in hang wait; do
      case $side in hang) g=$grace ;; wait) g=0 ;; esac
      run="$side-$r-$n"
      echo "round $r, run $n ($side, --hang-grace-ms $g, load $(cut -d' ' -f1 /proc/loadavg)): continuity run $spec" >&2
      sample_load "$work/$run.load" &
      sampler=$!
      start=$(now_ms)
      code=0
      # shellcheck disable=SC2086 # the spec is a list of arguments
      "$bin" run $spec --seed "$seed" --hang-grace-ms "$g" --expect "$expect" "$@" \
        --out "$work/$run" >"$work/$run.log" 2>&1 || code=$?
      echo "$(($(now_ms) - start))" >"$work/$run.wall"
      echo "$code" >"$work/$run.code"
      kill "$sampler" && wait "$sampler" 2>/dev/null || true
      sampler=
      # Exit 1 is cells not as expected: the comparison below says which.
      if [ "$code" -gt 1 ]; then
        echo "round $r, run $n ($side): continuity exit $code" >&2
        tail -n 20 "$work/$run.log" >&2
        exit "$code"
      fi
    done
  done
done

python3 - "$work" "$rounds" "$n" "$grace" "$bin" <<'EOF'
import json, sys
work, rounds, runs, grace, binary = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
AXES = ("target", "scenario", "serverVersion", "agent", "client", "sdkVersion", "persist")
BUG = ("agent", "native-continuity", "ts-sdk")

def cells(side, r):
    out = {}
    for k in range(1, runs + 1):
        report = json.load(open(f"{work}/{side}-{r}-{k}/report.json"))
        for cell in report["cells"]:
            out[tuple(cell.get(a) for a in AXES)] = cell
    return out

def wall(side, r):
    return sum(int(open(f"{work}/{side}-{r}-{k}.wall").read()) for k in range(1, runs + 1)) / 1000

def codes(side, r):
    return ",".join(open(f"{work}/{side}-{r}-{k}.code").read().strip() for k in range(1, runs + 1))

def load(side, r):
    seen = [float(x) for k in range(1, runs + 1) for x in open(f"{work}/{side}-{r}-{k}.load").read().split()]
    return f"load {sum(seen) / len(seen):.1f} ({min(seen):.1f}-{max(seen):.1f})" if seen else "load -"

label = lambda key: " · ".join(str(v) for v in key if v is not None)
client_of = lambda key: key[4] or "rust"
def secs(cs): return sum(c.get("durationMs", 0) for c in cs) / 1000

def flaky(pair, key):
    return any(c[key]["verdict"] == "flaky" or (c[key].get("expectation") or {}).get("verdict") == "flaky"
               for c in pair)

def cause(cell):
    boundary = cell.get("failureBoundary")
    for p in cell.get("phases", []):
        if p["name"] == boundary and not p.get("cleanup"):
            sig = p.get("signature") or {}
            c = sig.get("cause") or {}
            return (c.get("kind"), c.get("httpStatus"), c.get("problemType"), c.get("error"))
    return None

def kind(phase):
    return (phase.get("signature") or {}).get("kind")

def hung_phases(cell):
    return [p for p in cell.get("phases", []) if kind(p) == "hung"]

def steps(cell):
    """Each phase and its outcome as the grace 0 would name it (a hung
    phase is the timeout it would have waited for)."""
    return [(p["name"], "timeout" if kind(p) == "hung" else p["outcome"])
            for p in cell.get("phases", []) if not p.get("cleanup")]

def after_a_hang(x, y):
    """Whether the grace run `x` ended a phase as hung at or before the
    first phase where it and `y` part: only then can the detector, which
    acts only by ending a phase, have made the difference."""
    a, b = steps(x), steps(y)
    part = next((i for i, step in enumerate(a) if i >= len(b) or step != b[i]), len(a))
    ran = [p for p in x.get("phases", []) if not p.get("cleanup")]
    return any(kind(p) == "hung" for p in ran[: part + 1])

def judged(cell):
    return (cell["verdict"], cell.get("failureBoundary"), cause(cell))

print(f"hang detector, --hang-grace-ms {grace} against 0 (every deadline waited out); {binary}")
print(f"{rounds} round(s), each the grace then 0; the 1-minute load average sampled every 5 s through each run (mean, range)")
failed = False
totals = {"hang": 0.0, "wait": 0.0}
for r in range(1, rounds + 1):
    hang, wait = cells("hang", r), cells("wait", r)
    common = [k for k in hang if k in wait]
    print(f"\nround {r}: grace {load('hang', r)}; 0 {load('wait', r)}")
    print(f"{'':28}{'cells':>6}{'grace':>10}{'0':>10}{'less':>8}")
    def row(name, keys):
        a, b = secs(hang[k] for k in keys), secs(wait[k] for k in keys)
        less = f"{(b - a) / b * 100:.0f} %" if b else "-"
        print(f"{name:28}{len(keys):>6}{a:>9.1f}s{b:>9.1f}s{less:>8}")
        return a, b
    a, b = row("all cells (cell time)", common)
    totals["hang"] += a
    totals["wait"] += b
    for client in sorted({client_of(k) for k in common}):
        row(f"  client {client}", [k for k in common if client_of(k) == client])
    # The detector saves time only in cells with a hung phase; the others'
    # difference is the load and the cells' own variance.
    row("  cells with a phase hung", [k for k in common if hung_phases(hang[k])])
    row("  cells with none", [k for k in common if not hung_phases(hang[k])])
    print(f"{'run wall':28}{'':>6}{wall('hang', r):>9.1f}s{wall('wait', r):>9.1f}s")
    print(f"{'exit codes (--expect)':28}{'':>6}{codes('hang', r):>10}{codes('wait', r):>10}")
    for k in common:
        if (k[0], k[1], client_of(k)) == BUG:
            print(f"{label(k):34}{hang[k]['durationMs'] / 1000:>9.1f}s{wait[k]['durationMs'] / 1000:>9.1f}s"
                  f"  ({hang[k]['verdict']} @ {hang[k].get('failureBoundary')}; {len(hung_phases(hang[k]))} phases hung)")

    moved = sorted(common, key=lambda k: wait[k]["durationMs"] - hang[k]["durationMs"], reverse=True)
    print("the cells whose time fell most:")
    for k in moved[:8]:
        x, y = hang[k]["durationMs"] / 1000, wait[k]["durationMs"] / 1000
        if y - x < 1:
            break
        print(f"  {label(k):60} {y:7.1f}s -> {x:6.1f}s")

    false_hangs, changed, by_itself, hung, skipped_flaky = [], [], [], 0, 0
    for k in common:
        x, y = hang[k], wait[k]
        phases_y = {p["name"]: p for p in y.get("phases", []) if not p.get("cleanup")}
        for p in hung_phases(x):
            hung += 1
            other = phases_y.get(p["name"])
            then = kind(other or {})
            if then != "timeout":
                false_hangs.append(f"{label(k)} @ {p['name']}: hung, then {other['outcome'] if other else 'absent'} {then or ''}")
        if flaky((hang, wait), k):
            skipped_flaky += 1
            continue
        mine, theirs = judged(x), judged(y)
        if mine != theirs:
            (changed if after_a_hang(x, y) else by_itself).append(f"{label(k)}: {theirs} -> {mine}")
    failed = failed or bool(false_hangs or changed)

    unexpected = sorted(label(k) for k, c in hang.items()
                        if c["verdict"] != "skipped" and (c.get("expectation") or {}).get("outcome") not in (None, "expected"))
    print(f"phases judged hung: {hung}; false hangs (not a timeout with the grace 0): {len(false_hangs)}")
    for line in false_hangs:
        print(f"  {line}")
    print(f"verdict, boundary or cause changed after a hung phase: {len(changed)} of {len(common) - skipped_flaky} cells ({skipped_flaky} flaky ones not compared)")
    for line in changed:
        print(f"  {line}")
    print(f"verdict, boundary or cause changed with no hung phase before the runs part (the cell varies by itself): {len(by_itself)}")
    for line in by_itself:
        print(f"  {line}")
    new = [line for line in unexpected if (hang[next(k for k in hang if label(k) == line)].get("expectation") or {}).get("outcome") == "new"]
    print(f"cells that ran and are not as the expectations say, with the grace: {len(unexpected)}"
          + (f" ({len(new)} of them new: no entry matches)" if new else ""))
    for line in unexpected:
        c = hang[next(k for k in hang if label(k) == line)]
        if line not in new:
            print(f"  {line}: {(c.get('expectation') or {}).get('outcome')}, {c['verdict']} @ {c.get('failureBoundary')}")
    hung_by = {}
    for k in common:
        for p in hung_phases(hang[k]):
            quiet = ((p.get("detail") or {}).get("hang") or {}).get("quietMs", 0)
            hung_by.setdefault(client_of(k), []).append((p["durationMs"], quiet))
    for client, seen in sorted(hung_by.items()):
        took, quiet = [t for t, _ in seen], [q for _, q in seen]
        print(f"hung phases, {client}: {len(seen)}; each took {min(took) / 1000:.1f}-{max(took) / 1000:.1f} s,"
              f" ended {min(quiet) / 1000:.1f}-{max(quiet) / 1000:.1f} s after the last activity (grace {grace / 1000:.1f} s)")
if rounds > 1:
    # How much a cell varies by itself: the rounds of one side against each other.
    for side, name in (("hang", "the grace"), ("wait", "0")):
        first = cells(side, 1)
        for r in range(2, rounds + 1):
            other = cells(side, r)
            differ = [label(k) for k in first if k in other and judged(first[k]) != judged(other[k])]
            print(f"\n{name}, round 1 against round {r}: verdict, boundary or cause differs in {len(differ)} cells")
            for line in differ:
                print(f"  {line}")
    a, b = totals["hang"], totals["wait"]
    print(f"\nall rounds, cell time: grace {a:.1f}s, 0 {b:.1f}s, {(b - a) / b * 100:.0f} % less")
sys.exit(1 if failed else 0)
EOF
