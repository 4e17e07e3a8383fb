#!/usr/bin/env python3
"""Run folders made to load a reader, for bench/bounds.sh.

  hostile_run.py shared-trace N DIR   N cells, each naming its own cell folder,
                                      every one a symlink to one folder holding
                                      one 8 MiB trace (what 40 such cells did
                                      to merge and export before issue 43)
  hostile_run.py cells N DIR          N small cells (a failing one in five), no
                                      traces: show, compare and baseline at scale
  hostile_run.py diagonal N DIR       N cells on the diagonal of N targets x N
                                      scenarios: a grid of N*N squares, N filled
  hostile_run.py points N DIR         N cells of one target and scenario, each on
                                      a server point of its own
  hostile_run.py expectations N FILE  an expectations file of N entries
"""
import json
import os
import sys

SCHEMA = "continuity.report/v2"
TRACE_SCHEMA = "continuity.trace/v1"
TRACE_BYTES = 8 * 1024 * 1024


def run_info(run_id, targets, scenarios):
    return {
        "id": run_id,
        "harnessVersion": "0.1.0",
        "startedAt": "2026-12-01T22:25:03.675Z",
        "finishedAt": "2026-12-01T22:25:41.529Z",
        "durationMs": 37854,
        "baseUrl": "http://127.0.0.1:2468",
        "agent": "mock",
        "serverVersion": "sandbox-agent 0.4.2",
        "timeoutMs": 30000,
        "overallTimeoutMs": 1800000,
        "repeat": 1,
        "persist": "sqlite",
        "targets": targets,
        "scenarios": scenarios,
        "interrupted": False,
        "logs": [],
        "retries": 0,
        "flakyResult": "pass",
        "partition": None,
        "shards": [],
    }


def phase(name, ok, signature=None):
    out = {
        "name": name,
        "step": "prompt",
        "verdict": True,
        "cleanup": False,
        "outcome": "ok" if ok else "fail",
        "ok": ok,
        "durationMs": 12,
        "deadlineMs": 30000,
        "detail": {},
    }
    if signature:
        out["signature"] = signature
    return out


def cell(target, scenario, failing, trace=None):
    signature = {"kind": "http", "httpStatus": 400, "message": "HTTP 400"}
    out = {
        "target": target,
        "scenario": scenario,
        "attempt": 1,
        "verdict": "fail" if failing else "pass",
        "durationMs": 40,
        "phases": [phase("p", not failing, signature if failing else None)],
        "restarts": [],
    }
    if failing:
        out["failureBoundary"] = "p"
    if trace:
        out["trace"] = trace
    return out


def totals(cells):
    failed = sum(1 for c in cells if c["verdict"] == "fail")
    return {
        "cells": len(cells),
        "passed": len(cells) - failed,
        "failed": failed,
        "errored": 0,
        "skipped": 0,
        "flaky": 0,
        "interrupted": 0,
    }


def write_report(folder, run_id, cells, targets, scenarios):
    os.makedirs(folder, exist_ok=True)
    report = {
        "schema": SCHEMA,
        "run": run_info(run_id, targets, scenarios),
        "totals": totals(cells),
        "cells": cells,
    }
    with open(os.path.join(folder, "report.json"), "w") as f:
        json.dump(report, f, separators=(",", ":"))


def trace_text():
    lines = [
        json.dumps({"t": 0, "ev": "trace", "schema": TRACE_SCHEMA, "level": "summary", "startedMs": 1764627903675.0}),
        json.dumps({"t": 1, "ev": "phase_start", "phase": "p", "step": "prompt"}),
    ]
    size = sum(len(line) + 1 for line in lines)
    t = 2.0
    while True:
        line = json.dumps({
            "t": t, "ev": "http", "method": "POST",
            "url": "/v1/acp/sdk-mock-4f1c9e?agent=mock", "purpose": "acp",
            "ms": 3.2, "sent": 512, "received": 2048, "status": 200,
        })
        if size + len(line) + 1 > TRACE_BYTES - 200:
            break
        lines.append(line)
        size += len(line) + 1
        t += 0.5
    lines.append(json.dumps({"t": t, "ev": "phase_end", "phase": "p", "outcome": "ok", "ms": int(t)}))
    return "\n".join(lines) + "\n"


def shared_trace(n, folder):
    real = os.path.join(folder, "cells", "real")
    os.makedirs(real, exist_ok=True)
    with open(os.path.join(real, "trace.jsonl"), "w") as f:
        f.write(trace_text())
    cells = []
    for i in range(n):
        name = f"c{i:04d}"
        os.symlink("real", os.path.join(folder, "cells", name))
        cells.append(cell(f"t{i:04d}", "s", i % 5 == 0, f"cells/{name}/trace.jsonl"))
    write_report(folder, f"shared-{n}", cells, sorted({c["target"] for c in cells}), ["s"])


def many_cells(n, folder):
    scenarios = [f"s{j:02d}" for j in range(100)]
    targets = [f"t{i:05d}" for i in range((n + 99) // 100)]
    cells = []
    for i in range(n):
        cells.append(cell(targets[i // 100], scenarios[i % 100], i % 5 == 0))
    write_report(folder, f"cells-{n}", cells, targets, scenarios)


def diagonal(n, folder):
    targets = [f"t{i:06d}" for i in range(n)]
    scenarios = [f"s{i:06d}" for i in range(n)]
    cells = [cell(targets[i], scenarios[i], i % 5 == 0) for i in range(n)]
    write_report(folder, f"diagonal-{n}", cells, targets, scenarios)


def points(n, folder):
    cells = []
    for i in range(n):
        c = cell("agent", "s", i % 5 == 0)
        c["serverVersion"] = f"0.{i}.0"
        cells.append(c)
    write_report(folder, f"points-{n}", cells, ["agent"], ["s"])


def expectations(n, path):
    with open(path, "w") as f:
        for i in range(n):
            f.write(
                f'[[expect]]\ntarget = "t{i:06d}"\nscenario = "s"\nverdict = "fail"\n'
                f'reason = "seen in run r{i}: a long enough reason to make each entry about a hundred bytes"\n\n'
            )


if __name__ == "__main__":
    mode, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    modes = {
        "shared-trace": shared_trace,
        "cells": many_cells,
        "diagonal": diagonal,
        "points": points,
        "expectations": expectations,
    }
    modes[mode](n, out)
