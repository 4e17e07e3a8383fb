# Sourced by bench scripts: the reporter's SDK and a standalone sandbox-agent
# server of the same version, started on a free loopback port with
# continuity's scripted agent behind agent `mock`, and the one way both
# tools restart it (SIGTERM to its process group, start again on the same
# port, wait until /v1/health answers).
#
#   install_bench_sdk VERSION        -> sets $sdk (npm prefix) and $server
#   start_standalone_server WORK BIN -> writes WORK/restart.sh, starts the
#                                       server once, sets $base; the pid is
#                                       in WORK/server.pid
#   stop_standalone_server WORK      -> kills its process group, if running

install_bench_sdk() {
  local version=$1
  local cache=${CONTINUITY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/continuity}
  sdk=$cache/npm/bench-sdk-$version
  if [ ! -f "$sdk/.continuity-complete" ]; then
    echo "installing sandbox-agent@$version (SDK and server) into $sdk" >&2
    npm install --prefix "$sdk" --no-save --no-audit --no-fund --loglevel=error \
      "sandbox-agent@$version" "@sandbox-agent/cli-linux-x64@$version" >&2
    touch "$sdk/.continuity-complete"
  fi
  server=$sdk/node_modules/@sandbox-agent/cli-linux-x64/bin/sandbox-agent
  chmod +x "$server"
}

start_standalone_server() {
  local work=$1 bin=$2 port
  mkdir -p "$work/data/sandbox-agent/bin/agent_processes"
  printf '#!/bin/sh\nexec %q agent "$@"\n' "$bin" > "$work/data/sandbox-agent/bin/agent_processes/mock-acp"
  chmod +x "$work/data/sandbox-agent/bin/agent_processes/mock-acp"
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  base=http://127.0.0.1:$port
  cat > "$work/restart.sh" <<EOF
#!/usr/bin/env bash
set -eu
if [ -f "$work/server.pid" ]; then
  kill -TERM -- "-\$(cat "$work/server.pid")" 2>/dev/null || true
  while kill -0 -- "-\$(cat "$work/server.pid")" 2>/dev/null; do sleep 0.01; done
fi
XDG_DATA_HOME="$work/data" setsid "$server" server --no-token --no-telemetry -H 127.0.0.1 -p $port \
  >> "$work/server.log" 2>&1 < /dev/null &
echo \$! > "$work/server.pid"
for _ in \$(seq 1 500); do
  python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' "$base/v1/health" 2>/dev/null && exit 0
  sleep 0.02
done
echo "sandbox-agent did not come back" >&2; exit 1
EOF
  chmod +x "$work/restart.sh"
  "$work/restart.sh"
}

stop_standalone_server() {
  local work=$1
  [ -f "$work/server.pid" ] && kill -KILL -- "-$(cat "$work/server.pid")" 2>/dev/null || true
  rm -f "$work/server.pid"
}
