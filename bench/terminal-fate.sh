#!/usr/bin/env bash
# What a gateway restart does to an open terminal WebSocket, by time since
# the restart: runs the built-in sandbox-reconnect scenario on the local
# stack's `gateway` (stop/start) and `gateway-reload` (SIGHUP) targets, once
# as shipped (the old socket is used at once) and once with a pause before
# the old socket is used (default 7000 ms: past nginx's 5 s
# worker_shutdown_timeout). Prints, per target and pause, whether a line
# still went through the old socket, its close code, and whether a reattach
# worked.
#
#   bench/terminal-fate.sh            # pauses 0 and 7000 ms
#   bench/terminal-fate.sh 2000 7000  # other pauses
#
# Needs nginx, node/npm and python3 (the local stack's programs).
set -euo pipefail
cd "$(dirname "$0")/.."
pauses=("$@")
[ "${#pauses[@]}" -gt 0 ] || pauses=(0 7000)

cargo build --quiet
bin=$PWD/target/debug/continuity
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

printf '%-15s %8s  %-14s %-50s %s\n' target pause_ms old_socket close reattach
for pause in "${pauses[@]}"; do
  mkdir -p "$work/s$pause"
  python3 - "$pause" "$work/s$pause/fate.toml" <<'PY'
import sys
pause, out = int(sys.argv[1]), sys.argv[2]
s = open("scenarios/sandbox-reconnect.toml").read()
s = s.replace('name = "sandbox-reconnect"', 'name = "terminal-fate"')
if pause > 0:
    s = s.replace('[[phase]]\nname = "probeAfterRestart"',
                  f'[[phase]]\nname = "pause"\nstep = "sleep"\nms = {pause}\n\n[[phase]]\nname = "probeAfterRestart"')
open(out, "w").write(s)
PY
  "$bin" run --scenarios-dir "$work/s$pause" --target gateway --target gateway-reload \
    --out "$work/out$pause" >/dev/null 2>&1 || true
  python3 - "$work/out$pause/report.json" "$pause" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for cell in report["cells"]:
    phases = {p["name"]: p for p in cell["phases"]}
    echo = phases["oldTerminalEcho"]
    reattach = phases["reattachTerminal"]
    close = (echo.get("signature") or {}).get("message", "")
    print(f'{cell["target"]:<15} {sys.argv[2]:>8}  {"carries lines" if echo["ok"] else "dead":<14} {close[:50]:<50} {"ok" if reattach["ok"] else "failed"}')
PY
done
