# Sourced by bench scripts: run a command and measure it.
#
#   run_measured LOG CMD... -> runs CMD with stdout and stderr to LOG and
#                              prints "WALL_MS PEAK_KB": its wall time and
#                              the peak RSS of that process itself (VmHWM,
#                              polled until it exits), not of the stack's
#                              servers it starts, which /usr/bin/time would
#                              fold in (its ru_maxrss is the largest of the
#                              reaped descendants).

run_measured() {
  local log=$1 start pid hwm=0 v
  shift
  start=$(python3 -c 'import time; print(int(time.time() * 1000))')
  "$@" >"$log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    v=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    if [ -n "$v" ] && [ "$v" -gt "$hwm" ]; then hwm=$v; fi
    sleep 0.02
  done
  wait "$pid" || true
  echo "$(( $(python3 -c 'import time; print(int(time.time() * 1000))') - start )) $hwm"
}
