#!/usr/bin/env python3
"""Runs a command and measures it, within a time limit and a memory cap.

  measure.py LIMIT_S CAP_MB WATCH OUT_CAP_MB LOG CMD...
      ->  prints "WALL_S PEAK_MB END"

WALL_S is its wall time; PEAK_MB the peak resident memory of the process
(its rusage's ru_maxrss, read when it is reaped: exact, however briefly it
peaked); END its exit code, "killed" when it ran past LIMIT_S (its process
group is killed), or "signal_N" when a signal ended it (6: an abort, which
is how a failed allocation ends a Rust program).

CAP_MB bounds its address space (RLIMIT_AS; 0: no cap), so a build that
would take the machine's memory (and other people's processes with it,
by the OOM killer) fails an allocation at the cap instead: its figure is
then "more than the cap". WATCH is the file or folder it writes (or -):
past OUT_CAP_MB there it is killed, END "wrote>N_MB", so a build that
would fill the shared disk stops first. stdout and stderr go to LOG.
"""
import os
import resource
import signal
import subprocess
import sys
import time

limit, cap_mb = float(sys.argv[1]), int(sys.argv[2])
watch, out_cap_mb = sys.argv[3], int(sys.argv[4])
log, cmd = sys.argv[5], sys.argv[6:]


def written(path):
    """Bytes under `path` (a file or a folder, links not followed)."""
    total = 0
    try:
        if not os.path.isdir(path):
            return os.lstat(path).st_size
        for root, _, files in os.walk(path):
            for name in files:
                try:
                    total += os.lstat(os.path.join(root, name)).st_size
                except OSError:
                    pass
    except OSError:
        pass
    return total


def capped():
    if cap_mb > 0:
        cap = cap_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def ended(status):
    if os.WIFSIGNALED(status):
        return f"signal_{os.WTERMSIG(status)}"
    return str(os.WEXITSTATUS(status))


with open(log, "w") as out:
    start = time.monotonic()
    child = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=capped,
    )
    end, polls = None, 0
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            wall = time.monotonic() - start
            end = ended(status)
            break
        polls += 1
        stop = None
        if time.monotonic() - start > limit:
            stop = "killed"
        elif watch != "-" and polls % 10 == 0 and written(watch) > out_cap_mb << 20:
            stop = f"wrote>{out_cap_mb}MB"
        if stop:
            os.killpg(child.pid, signal.SIGKILL)
            _, status, usage = os.wait4(child.pid, 0)
            wall = time.monotonic() - start
            end = stop
            break
        time.sleep(0.01)
    # The group may hold what the command started: nothing of it outlives this.
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
print(f"{wall:.1f} {usage.ru_maxrss / 1024:.0f} {end}")
