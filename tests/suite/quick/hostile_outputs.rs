//! A hostile server's text through every output at once (issue 30, items 1
//! and 4): a tiny in-test server answers every POST with a problem+json
//! whose `type`, `title` and `detail` carry workflow commands, terminal
//! escapes, HTML, links, a comment opener and a bidi override; no real
//! sandbox-agent sends that, which is the point. The run is the issue's
//! repro under `GITHUB_ACTIONS=true`; then `show` and `show --cell` read
//! its folder. Each output shows the text (so it really got there) and
//! none acts on it: stdout, stderr, `show`, report.txt (terminal), the
//! annotations (GitHub), report.md and the step summary (Markdown), while
//! report.json keeps it byte for byte.

use crate::support;
use crate::support::fake_http::{self, FakeServer};
use std::path::Path;
use std::process::Output;

/// What the server's `detail` says.
const DETAIL: &str = "\r::error::X <img src=x onerror=alert(1)> [link](http://evil) <!-- \x1b]0;title\x07\x1b[2J \u{202e}gnp.exe\n::add-mask::x <script>alert(1)</script> ![i](http://evil/i.png) <http://evil> a|b";
/// The short problem type the server's `type` ends with.
const TYPE: &str = "<b>bad</b>\u{202e}";

fn hostile_server() -> FakeServer {
    FakeServer::start(|request| {
        if request.method == "GET" && request.target.ends_with("/v1/health") {
            return fake_http::reply("200 OK", "application/json", r#"{"status":"ok"}"#);
        }
        let body = serde_json::json!({
            "type": format!("urn:sandbox-agent:error:{TYPE}"),
            "title": "\r::warning::T <script>",
            "status": 400,
            "detail": DETAIL,
        });
        fake_http::reply(
            "400 Bad Request",
            "application/problem+json",
            &body.to_string(),
        )
    })
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// What a terminal, or the GitHub runner reading it, would act on.
fn assert_terminal_safe(what: &str, text: &str) {
    for bad in ['\r', '\x1b', '\x07', '\u{202e}', '\u{9b}'] {
        assert!(!text.contains(bad), "{bad:?} raw in {what}:\n{text}");
    }
    for line in text.lines() {
        let command = line.trim_start().starts_with("::");
        let ours = line.starts_with("::error title=continuity%3A ")
            || line.starts_with("::warning title=continuity%3A ");
        assert!(
            !command || ours,
            "{what} starts a workflow command: {line:?}"
        );
    }
}

/// What a Markdown renderer would turn into markup.
fn assert_markdown_safe(what: &str, text: &str) {
    assert_terminal_safe(what, text);
    for bad in [
        "<img",
        "<script",
        "<!--",
        "<b>",
        "<http",
        "](http",
        "[link]",
        "http://evil",
    ] {
        assert!(!text.contains(bad), "{bad:?} live in {what}:\n{text}");
    }
    // Shown as it was sent.
    assert!(
        text.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{what}:\n{text}"
    );
}

fn run(base_url: &str, out: &Path, summary: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "run",
        "--base-url",
        base_url,
        "--timeout-ms",
        "3000",
        "--scenario",
        "native-continuity",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    support::continuity_with(
        &args,
        &[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
            ("SA_RESTART_CMD", "true"),
            ("SA_RESTART_WAIT_SEC", "0"),
        ],
    )
}

/// The messages of every signature in report.json.
fn messages(report: &serde_json::Value) -> Vec<String> {
    let mut found = Vec::new();
    for cell in report["cells"].as_array().unwrap() {
        for phase in cell["phases"].as_array().unwrap() {
            if let Some(message) = phase["signature"]["message"].as_str() {
                found.push(message.to_string());
            }
        }
    }
    found
}

#[test]
fn a_hostile_servers_text_is_shown_and_never_acted_on_in_any_output() {
    let server = hostile_server();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let summary = dir.path().join("summary.md");
    let run = run(&server.base_url(), &out, &summary, &[]);
    let (stdout, stderr) = (text(&run.stdout), text(&run.stderr));
    assert!(
        server.requests().iter().any(|r| r.method == "POST"),
        "the run talked to the hostile server: {stderr}"
    );

    // report.json: the server's words, byte for byte.
    let report = support::report(&out);
    let kept = messages(&report);
    assert!(
        kept.iter().any(|m| m.contains(DETAIL)),
        "report.json keeps the detail exactly: {kept:?}"
    );
    let raw = std::fs::read_to_string(out.join("report.json")).unwrap();
    let again: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(again, report);

    // Terminal outputs: the text is there, as escapes.
    assert_terminal_safe("stdout", &stdout);
    assert_terminal_safe("stderr", &stderr);
    assert!(
        stdout.contains(": \\r::error::X <img"),
        "the failure block shows the detail's first line:\n{stdout}"
    );
    let annotations: Vec<&str> = stdout.lines().filter(|l| l.starts_with("::")).collect();
    assert!(
        !annotations.is_empty(),
        "GITHUB_ACTIONS=true annotates:\n{stdout}"
    );
    for line in &annotations {
        assert!(line.contains(": \\r::error::X <img"), "{line}");
        assert!(!line.contains("%0A") && !line.contains("%0D"), "{line}");
    }
    let txt = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert_terminal_safe("report.txt", &txt);
    assert!(txt.contains("\\u{202e}"), "report.txt:\n{txt}");

    let folder = out.to_str().unwrap();
    let shown = support::continuity_with(&["show", folder], &[("GITHUB_ACTIONS", "true")]);
    assert_terminal_safe("show", &text(&shown.stdout));
    assert_terminal_safe("show (stderr)", &text(&shown.stderr));
    let cell = report["cells"][0]["target"].as_str().unwrap().to_string() + "/native-continuity";
    let timeline = support::continuity_with(
        &["show", folder, "--cell", &cell],
        &[("GITHUB_ACTIONS", "true")],
    );
    let timeline_out = text(&timeline.stdout);
    assert_terminal_safe("show --cell", &timeline_out);
    assert_terminal_safe("show --cell (stderr)", &text(&timeline.stderr));
    for escaped in [
        ": \\r::error::X <img",
        "\\x1b]0;title\\x07\\x1b[2J",
        "\\u{202e}gnp.exe\\n::add-mask::x <script>",
    ] {
        assert!(
            timeline_out.contains(escaped),
            "show --cell shows {escaped}:\n{timeline_out}"
        );
    }

    // Markdown outputs.
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert_markdown_safe("report.md", &md);
    let step_summary = std::fs::read_to_string(&summary).unwrap();
    assert_markdown_safe("the step summary", &step_summary);

    // JSON lines on stdout: exact too; the annotations move to stderr.
    let json_run = self::run(
        &server.base_url(),
        &dir.path().join("json"),
        &dir.path().join("summary-json.md"),
        &["--message-format", "json"],
    );
    let lines = text(&json_run.stdout);
    let events: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    let finished = events
        .iter()
        .find(|e| e["type"] == "cell-finished")
        .expect("a cell-finished event");
    assert!(
        messages(&serde_json::json!({ "cells": [finished["cell"]] }))
            .iter()
            .any(|m| m.contains(DETAIL)),
        "the event keeps the detail exactly: {finished}"
    );
    assert_terminal_safe("stderr of the JSON run", &text(&json_run.stderr));
}
