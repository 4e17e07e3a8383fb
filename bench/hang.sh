#!/usr/bin/env bash
# The hang detector against waiting every deadline out: the same matrix
# run twice, once with the hang grace (--hang-grace-ms, GRACE, 2000 by
# default) and once with --hang-grace-ms 0 (every phase waits its
# deadline out, as before the detector), the same seed, one after the
# other. Prints each run's cell time side by side (all cells, and per
# client), the cells whose time moved most, and checks what must not
# change:
#   - 0 false hangs: every phase judged `hung` in the first run is a
#     timeout (signature kind `timeout`) in the second;
#   - every cell's verdict, failure boundary and cause (the boundary
#     phase's signature cause) are the same in both, except cells flaky in
#     either run or that the expectations mark flaky.
# Exits 1 when either check fails.
#
#   bench/hang.sh                        # the default matrix, the long-turn and the other opt-in scenarios, three clients
#   MATRIX=default CLIENTS="rust ts-sdk" bench/hang.sh   # the issue's two-client default matrix
#   MATRIX=long-turn bench/hang.sh       # the long-turn scenarios against their timeout targets
#   MATRIX=opt-in bench/hang.sh          # restart-mid-turn, client-restart, sandbox-provider and gateway-reload-idle
#   MATRIX=gate SHARD=1/4 bench/hang.sh  # one cost shard of the 400-cell gate matrix (bench/lib/gate-matrix.sh)
#   BIN=target/debug/continuity bench/hang.sh   # another build (no build)
#   bench/hang.sh --jobs 4               # extra arguments go to every run
#
# CLIENTS (default "rust ts-sdk browser"; the browser keeps its sessions in
# IndexedDB, the others in the stack's Rivet actor), GRACE, SEED (47),
# EXPECT (ci/expect-sandbox-agent-0.4.2.toml), KEEP=1 keeps the run folders.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
grace=${GRACE:-2000}
seed=${SEED:-47}
expect=${EXPECT:-$repo/ci/expect-sandbox-agent-0.4.2.toml}
matrix_kind=${MATRIX:-all}
clients=${CLIENTS:-rust ts-sdk browser}

if [ -z "${BIN:-}" ]; then cargo build --release --quiet; fi
bin=${BIN:-$repo/target/release/continuity}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -n "${KEEP:-}" ] && trap - EXIT && echo "work folder: $work" >&2

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
case "$matrix_kind" in
  all) specs=("$default_spec" "$long_spec" "$optin_spec" "$race_spec") ;;
  default) specs=("$default_spec") ;;
  long-turn) specs=("$long_spec") ;;
  opt-in) specs=("$optin_spec" "$race_spec") ;;
  gate)
    CLIENTS=${CLIENTS:-rust ts-sdk}
    source bench/lib/gate-matrix.sh
    specs=("${matrix[*]} --partition cost:${SHARD:-1/4}")
    ;;
  *) echo "MATRIX=$matrix_kind: all, default, long-turn, opt-in or gate" >&2; exit 64 ;;
esac

now_ms() { python3 -c 'import time; print(int(time.time() * 1000))'; }
n=0
for spec in "${specs[@]}"; do
  n=$((n + 1))
  for side in hang wait; do
    case $side in hang) g=$grace ;; wait) g=0 ;; esac
    echo "run $n ($side, --hang-grace-ms $g): continuity run $spec" >&2
    start=$(now_ms)
    code=0
    # shellcheck disable=SC2086 # the spec is a list of arguments
    "$bin" run $spec --seed "$seed" --hang-grace-ms "$g" --expect "$expect" "$@" \
      --out "$work/$side-$n" >"$work/$side-$n.log" 2>&1 || code=$?
    echo "$(($(now_ms) - start))" >"$work/$side-$n.wall"
    # Exit 1 is cells not as expected: the comparison below says which.
    if [ "$code" -gt 1 ]; then
      echo "run $n ($side): continuity exit $code" >&2
      tail -n 20 "$work/$side-$n.log" >&2
      exit "$code"
    fi
  done
done

python3 - "$work" "$n" "$grace" "$bin" <<'EOF'
import json, sys
work, runs, grace, binary = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
AXES = ("target", "scenario", "serverVersion", "agent", "client", "sdkVersion", "persist")

def cells(side):
    out = {}
    for k in range(1, runs + 1):
        report = json.load(open(f"{work}/{side}-{k}/report.json"))
        for cell in report["cells"]:
            out[tuple(cell.get(a) for a in AXES)] = cell
    return out

def wall(side):
    return sum(int(open(f"{work}/{side}-{k}.wall").read()) for k in range(1, runs + 1)) / 1000

hang, wait = cells("hang"), cells("wait")
label = lambda key: " · ".join(str(v) for v in key if v is not None)
def secs(cs): return sum(c.get("durationMs", 0) for c in cs) / 1000

print(f"hang detector, --hang-grace-ms {grace} against 0 (every deadline waited out); {binary}")
print(f"{'':28}{'cells':>6}{'grace':>10}{'0':>10}{'less':>8}")
def row(name, keys):
    a, b = secs(hang[k] for k in keys), secs(wait[k] for k in keys)
    less = f"{(b - a) / b * 100:.0f} %" if b else "-"
    print(f"{name:28}{len(keys):>6}{a:>9.1f}s{b:>9.1f}s{less:>8}")
common = [k for k in hang if k in wait]
row("all cells (cell time)", common)
for client in sorted({k[4] or "rust" for k in common}):
    row(f"  client {client}", [k for k in common if (k[4] or "rust") == client])
print(f"{'run wall, both runs':28}{'':>6}{wall('hang'):>9.1f}s{wall('wait'):>9.1f}s")

moved = sorted(common, key=lambda k: wait[k]["durationMs"] - hang[k]["durationMs"], reverse=True)
print("\nthe cells whose time fell most:")
for k in moved[:8]:
    a, b = hang[k]["durationMs"] / 1000, wait[k]["durationMs"] / 1000
    if b - a < 1:
        break
    print(f"  {label(k):60} {b:7.1f}s -> {a:6.1f}s")

def flaky(key):
    return any(c[key]["verdict"] == "flaky" or (c[key].get("expectation") or {}).get("verdict") == "flaky"
               for c in (hang, wait))

def cause(cell):
    boundary = cell.get("failureBoundary")
    for p in cell.get("phases", []):
        if p["name"] == boundary and not p.get("cleanup"):
            sig = p.get("signature") or {}
            c = sig.get("cause") or {}
            return (c.get("kind"), c.get("httpStatus"), c.get("problemType"), c.get("error"))
    return None

false_hangs, changed, hung, skipped_flaky = [], [], 0, 0
for k in common:
    a, b = hang[k], wait[k]
    phases_b = {p["name"]: p for p in b.get("phases", []) if not p.get("cleanup")}
    for p in a.get("phases", []):
        if (p.get("signature") or {}).get("kind") != "hung":
            continue
        hung += 1
        other = phases_b.get(p["name"])
        kind = ((other or {}).get("signature") or {}).get("kind")
        if kind != "timeout":
            false_hangs.append(f"{label(k)} @ {p['name']}: hung, then {other['outcome'] if other else 'absent'} {kind or ''}")
    if flaky(k):
        skipped_flaky += 1
        continue
    mine = (a["verdict"], a.get("failureBoundary"), cause(a))
    theirs = (b["verdict"], b.get("failureBoundary"), cause(b))
    if mine != theirs:
        changed.append(f"{label(k)}: {theirs} -> {mine}")

unexpected = sorted(label(k) for k, c in hang.items()
                    if c["verdict"] != "skipped" and (c.get("expectation") or {}).get("outcome") not in (None, "expected"))
print(f"\nphases judged hung: {hung}; false hangs (not a timeout with the grace 0): {len(false_hangs)}")
for line in false_hangs:
    print(f"  {line}")
print(f"verdict, boundary or cause changed: {len(changed)} of {len(common) - skipped_flaky} cells ({skipped_flaky} flaky ones not compared)")
for line in changed:
    print(f"  {line}")
print(f"cells that ran and are not as the expectations say, with the grace: {len(unexpected)}")
for line in unexpected:
    print(f"  {line}")
hung_by = {}
for k in common:
    for p in hang[k].get("phases", []):
        if (p.get("signature") or {}).get("kind") == "hung":
            quiet = ((p.get("detail") or {}).get("hang") or {}).get("quietMs", 0)
            hung_by.setdefault(k[4] or "rust", []).append((p["durationMs"], quiet))
for client, seen in sorted(hung_by.items()):
    took, quiet = [t for t, _ in seen], [q for _, q in seen]
    print(f"hung phases, {client}: {len(seen)}; each took {min(took) / 1000:.1f}-{max(took) / 1000:.1f} s,"
          f" ended {min(quiet) / 1000:.1f}-{max(quiet) / 1000:.1f} s after the last activity (grace {grace / 1000:.1f} s)")
sys.exit(1 if false_hangs or changed else 0)
EOF
