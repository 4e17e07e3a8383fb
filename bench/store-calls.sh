#!/usr/bin/env bash
# The session store's per-call latency on the local stack (Rivet Engine +
# RivetKit runner, actor `persist`):
#   1. each route the Rivet driver can take, timed with curl, N calls each:
#      through the key (`?rvt-method=getOrCreate&rvt-key=K`, the engine looks
#      the key up on every request), `rvt-method=get`, and by actor id
#      (`/gateway/{actorId}/…`, what the driver uses once an answer named the
#      actor), for a read (getSession) and a write (updateSession);
#   2. the driver itself in a run: `continuity run --target gateway
#      --scenario native-continuity --jobs 1`, its trace's `store` events per
#      call, and the cell's floor and overhead.
# Prints medians and 90th percentiles in ms.
#
#   bench/store-calls.sh
#   N=50 BIN=target/release/continuity bench/store-calls.sh
set -euo pipefail
cd "$(dirname "$0")/.."
n=${N:-30}
if [ -z "${BIN:-}" ]; then
  cargo build --quiet
  BIN=$PWD/target/debug/continuity
fi
work=$(mktemp -d)
cleanup() {
  "$BIN" stack down --dir "$work/st" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

"$BIN" stack up --dir "$work/st" >/dev/null 2>&1
endpoint=$(python3 -c 'import json,sys; print(next(c["url"] for c in json.load(open(sys.argv[1]))["components"] if c["target"]=="rivet-engine"))' "$work/st/stack.json")
key=$(curl -sf "$endpoint/actors?namespace=default&name=persist" | python3 -c 'import json,sys; print(json.load(sys.stdin)["actors"][0]["key"])')
id=$(curl -sf "$endpoint/actors?namespace=default&name=persist&key=$key" | python3 -c 'import json,sys; print(json.load(sys.stdin)["actors"][0]["actor_id"])')
record='{"args":[{"id":"bench","agent":"mock","agentSessionId":"a","lastConnectionId":"c","createdAt":1}]}'

# route ACTION BODY: N timings in ms, one a line.
time_route() {
  local url=$1 body=$2
  for _ in $(seq "$n"); do
    curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -X POST \
      -H 'content-type: application/json' -H 'x-rivet-encoding: json' -d "$body" "$url"
  done | awk '$1 != 200 { print "HTTP " $1 > "/dev/stderr"; exit 1 } { print $2 * 1000 }'
}
stats() { sort -n | awk '{ v[NR] = $1 } END { printf "median %6.1f  p90 %6.1f  (n=%d)\n", v[int((NR + 1) / 2)], v[int(NR * 0.9 + 0.5)], NR }'; }

echo "per route, curl, N=$n (engine $endpoint, key $key, actor $id):"
for action in getSession updateSession; do
  body='{"args":["bench"]}'
  [ "$action" = updateSession ] && body=$record
  query="rvt-namespace=default&rvt-pool=default&rvt-key=$key"
  printf '  %-13s key getOrCreate  ' "$action"; time_route "$endpoint/gateway/persist/action/$action?rvt-method=getOrCreate&$query" "$body" | stats
  printf '  %-13s key get          ' "$action"; time_route "$endpoint/gateway/persist/action/$action?rvt-method=get&$query" "$body" | stats
  printf '  %-13s actor id         ' "$action"; time_route "$endpoint/gateway/$id/action/$action" "$body" | stats
done
"$BIN" stack down --dir "$work/st" >/dev/null

NO_COLOR=1 "$BIN" run --target gateway --scenario native-continuity --jobs 1 --out "$work/run" >/dev/null 2>&1 || true
echo "the driver in a run (trace store events):"
python3 - "$work/run" <<'PY'
import glob, json, sys
calls = {}
for path in glob.glob(sys.argv[1] + "/cells/*/trace.jsonl"):
    for line in open(path):
        e = json.loads(line)
        if e.get("ev") == "store":
            calls.setdefault(e["call"], []).append(e["ms"])
for call, ms in sorted(calls.items()):
    ms.sort()
    print(f"  {call:13} median {ms[(len(ms) - 1) // 2]:6.1f}  max {ms[-1]:6.1f}  (n={len(ms)})")
PY
grep -E '^time:|native-continuity' "$work/run/report.txt" | grep -E 'time:|[0-9]+ +┆ +[0-9]+' || true
