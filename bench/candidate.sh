#!/usr/bin/env bash
# What a candidate costs: the worked example of docs/verify-a-fix.md (the
# registry's SDK 0.4.2 patched with tests/fixtures/candidate-sdk/
# fix-189.patch, --client ts-sdk, the targets and scenarios the committed
# expectations cover, gated on them), three runs side by side:
#   1. the release alone (--sdk-version 0.4.2);
#   2. the release beside a candidate whose content is new to the cache
#      (a marker file makes its hash new): it is installed first;
#   3. the same again, the candidate unchanged: no install.
# Prints each run's wall time, the time the candidate's install took (from
# the run's own progress line), the cells, and whether the release's cells
# got the same verdicts in all three runs and the candidate's cells the
# same in 2 and 3.
#
#   bench/candidate.sh
#   BIN=/path/to/continuity bench/candidate.sh   # another build (no build)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
if [ -z "${BIN:-}" ]; then cargo build --release --quiet; fi
bin=${BIN:-$repo/target/release/continuity}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -n "${KEEP:-}" ] && trap - EXIT && echo "work folder: $work" >&2
. "$repo/bench/lib/peak-rss.sh"

(cd "$work" && npm pack sandbox-agent@0.4.2 --loglevel=error >/dev/null)
mkdir "$work/fix"
tar -xzf "$work/sandbox-agent-0.4.2.tgz" -C "$work/fix" --strip-components=1
patch -s -d "$work/fix" -p1 <"$repo/tests/fixtures/candidate-sdk/fix-189.patch"
# New content, so a new cache folder: run 2 installs it, run 3 does not.
echo "bench $(date +%s%N)" >"$work/fix/BENCH-MARKER"

gated=(--client ts-sdk --target agent --target gateway
  --scenario native-continuity --scenario sandbox-reconnect
  --expect "$repo/ci/expect-sandbox-agent-0.4.2.toml" --allow-fixed --jobs 1)
read -r alone_ms _ < <(run_measured "$work/alone.log" "$bin" run "${gated[@]}" \
  --sdk-version 0.4.2 --out "$work/alone")
read -r cold_ms _ < <(run_measured "$work/cold.log" "$bin" run "${gated[@]}" \
  --sdk-version 0.4.2 --sdk "fix=$work/fix" --out "$work/cold")
read -r warm_ms _ < <(run_measured "$work/warm.log" "$bin" run "${gated[@]}" \
  --sdk-version 0.4.2 --sdk "fix=$work/fix" --out "$work/warm")

python3 - "$work" "$alone_ms" "$cold_ms" "$warm_ms" <<'PY'
import json, re, sys
work, alone_ms, cold_ms, warm_ms = sys.argv[1], *map(int, sys.argv[2:])
def report(name):
    return json.load(open(f"{work}/{name}/report.json"))
def install_s(name):
    log = open(f"{work}/{name}.log").read()
    m = re.search(r"installed the candidate SDK .* in ([0-9.]+) s", log)
    return f"{float(m.group(1)):.1f}s" if m else "none"
def verdicts(r, sdk):
    return sorted((c["target"], c["scenario"], c["verdict"], (c.get("expectation") or {}).get("outcome"))
                  for c in r["cells"] if c.get("sdkVersion") == sdk)
runs = {"alone": report("alone"), "cold": report("cold"), "warm": report("warm")}
print(f"{'run (--client ts-sdk, --jobs 1)':<40} {'wall':>7} {'cells':>6} {'after up':>9} {'install':>8}")
for name, label, ms in [("alone", "release alone (--sdk-version 0.4.2)", alone_ms),
                        ("cold", "release + candidate, new content", cold_ms),
                        ("warm", "release + candidate, unchanged", warm_ms)]:
    r = runs[name]
    print(f"{label:<40} {ms/1000:6.1f}s {len(r['cells']):>6} {r['run']['durationMs']/1000:8.1f}s {install_s(name):>8}")
same_release = verdicts(runs["alone"], "0.4.2") == verdicts(runs["cold"], "0.4.2") == verdicts(runs["warm"], "0.4.2")
same_fix = verdicts(runs["cold"], "fix") == verdicts(runs["warm"], "fix")
print(f"release's cells alike in all three runs: {'yes' if same_release else 'NO'}; candidate's alike in both: {'yes' if same_fix else 'NO'}")
fixed = [f"{t} x {s}" for t, s, v, o in verdicts(runs["warm"], "fix") if o == "fixed"]
print(f"fixed by the candidate: {', '.join(fixed) or 'nothing'}")
print(f"ratio wall with the candidate (unchanged) / release alone: {warm_ms/alone_ms:.2f}x; a new candidate's extra: {(cold_ms-warm_ms)/1000:.1f}s")
if not (same_release and same_fix):
    sys.exit(1)
PY
