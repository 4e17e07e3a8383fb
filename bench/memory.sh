#!/usr/bin/env bash
# Peak resident memory of continuity: a normal full matrix (the local stack,
# every target × scenario) beside a run against a server whose every ACP
# answer is a 100 MB body and whose event stream sends one 100 MB line.
# The target is ≤ 64 MB in both: bodies and stream lines are refused past
# the 4 MiB envelope limit while streaming, never buffered whole.
#
#   bench/memory.sh            # builds target/release/continuity if needed
#   CONTINUITY=target/debug/continuity bench/memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${CONTINUITY:-target/release/continuity}
if [ ! -x "$BIN" ]; then cargo build --release --quiet; fi
work=$(mktemp -d)
server_pid=""
cleanup() { [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

. bench/lib/peak-rss.sh
# Peak RSS in MB of the harness process itself (bench/lib/peak-rss.sh).
peak_mb() {
  local kb
  read -r _ kb < <(run_measured "$work/out.txt" "$@")
  awk -v k="$kb" 'BEGIN {printf "%.1f", k/1024}'
}

normal=$(peak_mb "$BIN" run --out "$work/normal")
normal_cells=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["cells"]))' "$work/normal/report.json")

# One hostile run: the server in mode $1 (post: 100 MB bodies; stream: 100 MB SSE lines).
hostile_run() {
  HOSTILE=$1 node bench/hostile-server.mjs >"$work/port-$1" &
  server_pid=$!
  for _ in $(seq 50); do [ -s "$work/port-$1" ] && break; sleep 0.1; done
  local port; port=$(cat "$work/port-$1")
  SA_RESTART_CMD=true peak_mb "$BIN" run --base-url "http://127.0.0.1:$port" \
    --timeout-ms 20000 --out "$work/hostile-$1"
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}
limit_hit() {
  python3 - "$work/hostile-$1/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
sigs = [p["signature"] for c in r["cells"] for p in c["phases"] if p.get("signature") and "envelope limit" in p["signature"]["message"]]
print(f'{sigs[0]["kind"]}: {sigs[0]["message"]}' if sigs else "no size-limit signature")
PY
}
post=$(hostile_run post)
stream=$(hostile_run stream)

printf '%-46s %10s\n' "run" "peak RSS"
printf '%-46s %7s MB\n' "full local matrix ($normal_cells cells)" "$normal"
printf '%-46s %7s MB\n' "server answering every POST with 100 MB" "$post"
printf '%-46s %7s MB\n' "server streaming one 100 MB SSE line" "$stream"
echo "POST run:   $(limit_hit post)"
echo "stream run: $(limit_hit stream)"
