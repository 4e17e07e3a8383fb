#!/usr/bin/env bash
# Time to diagnosis, side by side in one run: the bug reporter's SDK script
# (bench/repro-restart-continuity.mjs, sandbox-agent SDK 0.4.2) and continuity,
# against the same real sandbox-agent 0.4.2 on loopback, restarted the same way.
#
#   bench/time-to-diagnosis.sh            # phase deadline 10 s (SA_TIMEOUT_MS)
#   SA_TIMEOUT_MS=60000 bench/time-to-diagnosis.sh   # the bug report's setting
#
# Prints, for each tool, its wall time and what it said about the two
# post-restart prompts. Needs node/npm and python3; installs the SDK into the
# continuity cache folder on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
timeout_ms=${SA_TIMEOUT_MS:-10000}
version=0.4.2

cargo build --release --quiet
bin=$repo/target/release/continuity
. "$repo/bench/lib/standalone-server.sh"
install_bench_sdk "$version"

work=$(mktemp -d)
cleanup() {
  stop_standalone_server "$work"
  rm -rf "$work"
}
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap - EXIT && echo "work folder: $work" >&2

# The same restart for both tools (bench/lib/standalone-server.sh).
start_standalone_server "$work" "$bin"

now_ms() { python3 -c 'import time; print(int(time.time() * 1000))'; }
common=(SA_BASE_URL="$base" SA_AGENT=mock SA_TIMEOUT_MS="$timeout_ms" SA_RESTART_CMD="$work/restart.sh" SA_RESTART_WAIT_SEC=0)

cp "$repo/bench/repro-restart-continuity.mjs" "$sdk/"
start=$(now_ms)
# With Node's default (throw), the SDK's unhandled rejection around the restart
# ("fetch failed: other side closed") kills the script before it reports; the
# bug report logged it and went on, as --unhandled-rejections=warn does.
(cd "$sdk" && env "${common[@]}" node --unhandled-rejections=warn repro-restart-continuity.mjs > "$work/sdk.json" 2> "$work/sdk.err" < /dev/null) || true
sdk_ms=$(( $(now_ms) - start ))

start=$(now_ms)
env "${common[@]}" "$bin" run --out "$work/continuity" > /dev/null 2> "$work/continuity.err" || true
continuity_ms=$(( $(now_ms) - start ))

python3 - "$work" "$sdk_ms" "$continuity_ms" "$timeout_ms" <<'EOF'
import json, re, sys
work, sdk_ms, continuity_ms, timeout_ms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

def sdk_phase(report, name):
    p = report["native"]["phases"].get(name)
    if p is None:
        return "not run"
    return "ok" if p["ok"] else p["error"]["message"]

try:
    text = open(f"{work}/sdk.json").read()
    sdk = json.loads(text[text.index("{"):])
    sdk_rows = [sdk_phase(sdk, "promptSameHandleAfterRestart"), sdk_phase(sdk, "promptAfterResume"),
                "ok" if sdk["rehydrate"]["ok"] else "failed"]
except Exception as e:  # the SDK script can die on an unhandled rejection
    err = open(f"{work}/sdk.err").read().strip().splitlines()
    sdk_rows = [f"no report ({e}); stderr: {err[-1] if err else ''}"] * 3

report = json.load(open(f"{work}/continuity/report.json"))
def cell(scenario):
    return next(c for c in report["cells"] if c["scenario"] == scenario)
def phase(name):
    p = next(p for p in cell("native-continuity")["phases"] if p["name"] == name)
    if p["ok"]:
        return f"ok ({p['durationMs']} ms)"
    sig = p.get("signature") or {}
    return f"{sig.get('message', p['outcome'])[:60]} ({p['durationMs']} ms)"
cont_rows = [phase("promptSameHandleAfterRestart"), phase("promptAfterResume"), cell("recreate-rehydrate")["verdict"]]

rows = [("wall time", f"{sdk_ms / 1000:.1f} s", f"{continuity_ms / 1000:.1f} s"),
        ("promptSameHandleAfterRestart", sdk_rows[0], cont_rows[0]),
        ("promptAfterResume", sdk_rows[1], cont_rows[1]),
        ("recreate + rehydrate", sdk_rows[2], cont_rows[2])]
print(f"time to diagnosis, phase deadline {timeout_ms} ms, sandbox-agent 0.4.2 restarted once per scenario\n")
w0 = max(len(r[0]) for r in rows); w1 = max(len(r[1]) for r in rows + [("", "SDK repro script", "")])
print(f"{'':<{w0}}  {'SDK repro script':<{w1}}  continuity")
for a, b, c in rows:
    print(f"{a:<{w0}}  {b:<{w1}}  {c}")
EOF
