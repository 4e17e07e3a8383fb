//! The bug report's own cell on the real SDK (`--client ts-sdk --target
//! agent --scenario native-continuity`): the SDK's prompt gets `400
//! invalid_request`, it keeps the 400 to itself and its promise never
//! settles. The hang detector ends both prompts after the restart as
//! `hung`, long before their deadline, naming the 400 in the evidence; the
//! verdict, boundary and cause are those the timeout had. (How long it
//! takes is measured in bench/hang.sh, not asserted here.) Needs node and
//! nginx, as the local stack does; without them it fails, loudly.

use crate::support;

use continuity::exit_codes;
use serde_json::Value;

#[test]
fn the_bug_reports_cell_on_the_real_sdk_is_hung_with_the_400_in_its_evidence() {
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let run = support::continuity_with(
        &[
            "run",
            "--client",
            "ts-sdk",
            "--target",
            "agent",
            "--scenario",
            "native-continuity",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    support::assert_exit(&run, exit_codes::FAILED);
    let report = support::report(&out);
    let cell = &report["cells"][0];
    assert_eq!(
        (cell["client"].as_str(), cell["target"].as_str()),
        (Some("ts-sdk"), Some("agent"))
    );
    assert_eq!(cell["verdict"], "fail", "{cell}");
    assert_eq!(cell["failureBoundary"], "promptSameHandleAfterRestart");

    let prompt = support::phase(cell, "promptSameHandleAfterRestart");
    assert_eq!(prompt["outcome"], "fail", "{prompt}");
    let sig = &prompt["signature"];
    assert_eq!(sig["kind"], "hung", "{sig}");
    // The cause a timeout named, and the 400 with its time in the evidence.
    assert_eq!(sig["cause"]["httpStatus"], 400, "{sig}");
    assert_eq!(sig["cause"]["problemType"], "invalid_request", "{sig}");
    let message = sig["message"].as_str().unwrap();
    assert!(
        message.starts_with("the server answered HTTP 400 invalid_request to POST ")
            && message.contains(" ms; ")
            && message.ends_with(
                "the ts-sdk client made no request, held no stream and scheduled no retry for 2.0 s: its prompt never settled"
            ),
        "{message}"
    );
    let hang = &prompt["detail"]["hang"];
    assert_eq!(hang["call"], "prompt", "{hang}");
    assert_eq!(hang["graceMs"], 2000, "{hang}");
    let answer = &hang["lastAnswer"];
    assert!(
        answer["what"]
            .as_str()
            .is_some_and(|w| w.contains("HTTP 400 invalid_request")),
        "{hang}"
    );
    let answered = answer["atMs"].as_f64().unwrap();
    let quiet_from = hang["quietFromMs"].as_f64().unwrap();
    assert!(
        answered >= 0.0 && quiet_from >= answered,
        "the 400 came in the phase, the quiet after it: {hang}"
    );
    assert!(hang["quietMs"].as_f64().unwrap() >= 2000.0, "{hang}");
    // The phase ended before its deadline: it was diagnosed, not waited out.
    let took = prompt["durationMs"].as_u64().unwrap();
    assert!(took < prompt["deadlineMs"].as_u64().unwrap(), "{prompt}");

    // The prompt after resumeSession hangs with nothing on the wire at all.
    let after = support::phase(cell, "promptAfterResume");
    assert_eq!(after["signature"]["kind"], "hung", "{after}");

    // The trace holds the 400 inside the phase, as the SDK's actor recorded it.
    let trace = out.join(cell["trace"].as_str().unwrap());
    let events: Vec<Value> = std::fs::read_to_string(trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        events.iter().any(|e| e["ev"] == "http"
            && e["method"] == "POST"
            && e["status"] == 400
            && e["client"] == "ts-sdk"),
        "the SDK's 400 in the trace"
    );
}
