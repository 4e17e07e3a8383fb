"""Whose CPU a run used: every process that exited while process
accounting was on (the `acct` file given, read with `dump-acct`), summed by
program. An accounting record names the process by its last thread's
name, so a program is known by its threads' names too: opencode is a Bun
(JavaScriptCore) binary whose threads are JITWorker, HeapHelper, Bun Pool
and HTTP Client; continuity's tokio threads are tokio-runtime-w,
sandbox-agent's and codex-acp's tokio-rt-worker; Claude Code runs on node
under the title `claude`.

Usage: python3 cpu_by_program.py ACCT_FILE [CORES]
"""
import collections, subprocess, sys

PROGRAMS = [
    ("opencode (Bun)", ("JITWorker", "HeapHelper", "Bun Pool", "HTTP Client", "opencode")),
    ("Rivet Engine", ("rivet-engine",)),
    ("node: the RivetKit app, claude-agent-acp, the fake provider", ("node",)),
    ("Claude Code (node)", ("claude",)),
    ("ripgrep (the agents' file search)", ("rg",)),
    ("continuity", ("continuity", "tokio-runtime-w")),
    ("sandbox-agent, codex-acp (tokio)", ("sandbox-agent", "tokio-rt-worker", "codex-acp", "sqlx-sqlite-wor")),
    ("nginx", ("nginx",)),
    ("postgres", ("postgres",)),
    ("chromium", ("chrom",)),
]


def program(comm):
    for name, prefixes in PROGRAMS:
        if comm.startswith(prefixes):
            return name
    return "other: " + comm


def main():
    cores = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    out = subprocess.run(["dump-acct", sys.argv[1]], capture_output=True, text=True, check=True)
    cpu, count = collections.Counter(), collections.Counter()
    for line in out.stdout.splitlines():
        fields = [f.strip() for f in line.split("|")]
        if len(fields) < 4:
            continue
        # user and system time, in clock ticks (100 a second)
        seconds = (float(fields[2]) + float(fields[3])) / 100.0
        name = program(fields[0])
        cpu[name] += seconds
        count[name] += 1
    total = sum(cpu.values())
    print(f"CPU of every process that exited: {total:.1f}s ({total / cores:.1f}s over {cores} cores)")
    shown = 0.0
    for name, seconds in cpu.most_common():
        if seconds < total * 0.005:
            continue
        shown += seconds
        print(f"  {name:<62} {seconds:7.1f}s {100 * seconds / total:5.1f}%  ({count[name]} processes)")
    rest = max(total - shown, 0.0)
    print(f"  {'the rest':<62} {rest:7.1f}s {100 * rest / max(total, 1e-9):5.1f}%")


if __name__ == "__main__":
    main()
