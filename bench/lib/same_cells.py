"""Two run folders of the same matrix, cell by cell: the verdict, the
failure boundary, each phase's verdict and outcome, each restart's record
(phase, action, ok, whether it was seen down, its detail) and signature,
and the fault, restart, pause, kill, schedule and phase events of the
cell's trace, digits masked. Prints one line per cell and what differs;
the last line is SAME or DIFFERENT.

    python3 bench/lib/same_cells.py OLD_RUN NEW_RUN
"""

import difflib
import json
import os
import re
import sys

EVENTS = {
    "fault_start", "fault_end", "fault_action", "fault_ready",
    "component_stop", "component_start", "restart_start", "restart_end",
    "pause_start", "pause_end", "agent_kill", "agent_after",
    "schedule", "scheduled_start", "scheduled_end",
    "phase_start", "phase_end", "cell_end",
}
KEPT = {"ev", "hop", "toxic", "component", "fault", "on", "ok", "index",
        "phase", "verdict", "failure_boundary", "action", "server_same",
        "outcome", "detail"}


def masked(text):
    return re.sub(r"\d+", "N", text or "")


def cells(run):
    report = json.load(open(os.path.join(run, "report.json")))
    out = {}
    for c in report["cells"]:
        key = (c["target"], c["scenario"], c.get("client"), c.get("persist"))
        trace = []
        path = c.get("trace") and os.path.join(run, c["trace"])
        if path and os.path.exists(path):
            for line in open(path):
                event = json.loads(line)
                if event.get("ev") in EVENTS:
                    kept = {k: v for k, v in event.items() if k in KEPT}
                    trace.append(masked(json.dumps(kept, sort_keys=True)))
        out[key] = {
            "verdict": c["verdict"],
            "boundary": c.get("failureBoundary"),
            "phases": [(p.get("name"), p.get("verdict"), p.get("outcome"), p.get("ok"))
                       for p in c.get("phases", [])],
            "restarts": [(r.get("phase"), r.get("action"), r.get("ok"),
                          bool(r.get("down")), masked(r.get("detail"))[:120])
                         for r in c.get("restarts", [])],
            "signatures": [(p.get("name"), masked(json.dumps(p.get("signature"), sort_keys=True)))
                           for p in c.get("phases", []) if p.get("signature")],
            "events": trace,
        }
    return out


def main(old_run, new_run):
    old, new = cells(old_run), cells(new_run)
    same = True
    for key in sorted(set(old) | set(new), key=str):
        a, b = old.get(key), new.get(key)
        if a is None or b is None:
            print(key, "is in one run only")
            same = False
            continue
        for field in a:
            if a[field] != b[field]:
                same = False
                print(f"  {key[0]} × {key[1]}: {field} differs")
                if field == "events":
                    for line in difflib.unified_diff(a[field], b[field], lineterm="", n=0):
                        print("     ", line)
        print(f"{key[0]:22} {key[1]:20} {a['verdict']:5} @ {a['boundary']} | "
              f"{b['verdict']:5} @ {b['boundary']}")
    print("SAME" if same else "DIFFERENT")


if __name__ == "__main__":
    main(*sys.argv[1:3])
