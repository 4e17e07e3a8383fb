//! Every renderer given a report whose foreign text is hostile (issue 30,
//! items 1 and 4): a server's problem detail and type, a cell's reason, a
//! restart command's stderr, the server's own version. The terminal
//! renderings show it escaped, the Markdown ones as literal text, the
//! annotations as one command line each; none acts on it.

use super::fixture;
use super::github::{annotations, render_step_summary};
use super::timeline::render_timeline;
use super::*;

const HOSTILE: &str = "x\r::error::X\n::add-mask::m \x1b]0;title\x07\x1b[2J <img src=x onerror=alert(1)> <script>s</script> [l](http://evil) <http://evil> <!-- \u{202e}z";

fn hostile_report() -> Report {
    let mut r = fixture::report();
    r.run.server_version = Some(HOSTILE.into());
    for cell in &mut r.cells {
        cell.reason = Some(HOSTILE.into());
        for phase in &mut cell.phases {
            if let Some(sig) = &mut phase.signature {
                sig.message = HOSTILE.into();
                sig.problem_type = Some("<b>t</b>\r::error::P".into());
                sig.observed = Some(HOSTILE.into());
            }
        }
        for restart in &mut cell.restarts {
            restart.detail = Some(HOSTILE.into());
        }
    }
    r
}

fn assert_inert_on_a_terminal(what: &str, text: &str) {
    for bad in ['\r', '\x1b', '\x07', '\u{202e}'] {
        assert!(!text.contains(bad), "{bad:?} raw in {what}:\n{text}");
    }
    for line in text.lines() {
        assert!(
            !line.trim_start().starts_with("::"),
            "{what} starts a workflow command: {line:?}"
        );
    }
}

fn assert_inert_in_markdown(what: &str, text: &str) {
    assert_inert_on_a_terminal(what, text);
    for bad in ["<img", "<script", "<!--", "<b>", "<http", "](http"] {
        assert!(!text.contains(bad), "{bad:?} live in {what}:\n{text}");
    }
}

#[test]
fn foreign_text_is_shown_and_never_acted_on_by_any_renderer() {
    let r = hostile_report();
    assert!(r.cells.iter().any(|c| c.boundary_signature().is_some()));
    let layout = Layout {
        width: 120,
        color: false,
        folder: "out".into(),
    };
    let terminal = render_terminal(&r, &layout);
    assert_inert_on_a_terminal("the terminal", &terminal);
    assert!(terminal.contains("x\\r::error::X"), "{terminal}");
    assert_inert_on_a_terminal("report.txt", &render_text(&r, false));
    for cell in &r.cells {
        let timeline = render_timeline(cell, &[]);
        assert_inert_on_a_terminal("show --cell", &timeline);
    }
    let markdown = render_markdown(&r);
    assert_inert_in_markdown("report.md", &markdown);
    assert!(
        markdown.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{markdown}"
    );
    assert_inert_in_markdown("the step summary", &render_step_summary(&r, "out"));
    let notes = annotations(&r);
    assert!(!notes.is_empty());
    for note in &notes {
        let line = note.as_str();
        assert!(!line.contains(['\r', '\n', '\x1b', '\x07']), "{line:?}");
        assert!(line.starts_with("::error title=") || line.starts_with("::warning title="));
    }
}

/// How a restart's target went down (`RestartResult::down`: it may quote
/// a probe's error text) was in report.json and the trace but shown by
/// neither `show --cell` nor report.md: both show it now, inert.
#[test]
fn a_restarts_down_observation_is_shown_inert_by_the_timeline_and_report_md() {
    use crate::trace::event::{self, Event, Line};
    let mut r = fixture::report();
    let cell = r.cells.iter_mut().find(|c| !c.restarts.is_empty()).unwrap();
    let down = format!("the probe failed: {HOSTILE}");
    cell.restarts[0].down = Some(down.clone());
    let events = [
        Line {
            t: 0.0,
            event: Event::PhaseStart(event::PhaseStart {
                phase: "restart".into(),
                step: "restart".into(),
            }),
        },
        Line {
            t: 1.0,
            event: Event::RestartEnd(event::RestartEnd {
                ok: true,
                action: "managed".into(),
                restart_ms: 10,
                ready_ms: Some(20),
                down: Some(down),
                detail: None,
            }),
        },
        Line {
            t: 2.0,
            event: Event::PhaseEnd(event::PhaseEnd {
                phase: "restart".into(),
                outcome: "ok".into(),
                ms: 2,
            }),
        },
    ];
    let timeline = render_timeline(cell, &events);
    assert_inert_on_a_terminal("show --cell", &timeline);
    assert!(
        timeline.contains("; down: the probe failed: x\\r::error::X"),
        "{timeline}"
    );
    let markdown = render_markdown(&r);
    assert_inert_in_markdown("report.md", &markdown);
    let restarts = &markdown[markdown.find("## Restart timings").unwrap()..];
    assert!(restarts.contains("| down |"), "{restarts}");
    assert!(
        restarts.contains("the probe failed: x ::error::X"),
        "{restarts}"
    );
}

/// Text that forges a line, a workflow command and terminal actions.
const FORGING: &str =
    "h\n::error::FORGED\rFORGED\x1b[31mred\x1b[2J\x07\u{202e}<b>x</b>\u{2028}FORGED";

/// `report` with every string the model reads back replaced by `text`
/// (one at a time, kept where the report still reads: a verdict's word
/// must stay one), as a run folder from elsewhere may hold it. Returns
/// how many fields took it.
pub(crate) fn every_field(report: &Report, text: &str) -> (Report, usize) {
    fn walk(at: &mut serde_json::Value, path: &mut Vec<String>, leaves: &mut Vec<String>) {
        match at {
            serde_json::Value::String(_) => leaves.push(
                path.iter()
                    .map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1")))
                    .collect(),
            ),
            serde_json::Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    path.push(i.to_string());
                    walk(item, path, leaves);
                    path.pop();
                }
            }
            serde_json::Value::Object(map) => {
                for (key, value) in map.iter_mut() {
                    path.push(key.clone());
                    walk(value, path, leaves);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    let mut value = serde_json::to_value(report).unwrap();
    let mut leaves = Vec::new();
    walk(&mut value, &mut Vec::new(), &mut leaves);
    let mut taken = 0;
    for pointer in leaves {
        let before = value.pointer(&pointer).cloned().unwrap();
        *value.pointer_mut(&pointer).unwrap() = serde_json::Value::String(text.into());
        if serde_json::from_value::<Report>(value.clone()).is_ok() {
            taken += 1;
        } else {
            *value.pointer_mut(&pointer).unwrap() = before;
        }
    }
    (serde_json::from_value(value).unwrap(), taken)
}

/// Neither a raw character a terminal or the runner acts on, nor a line
/// that the hostile text began (a workflow command, a forged line).
pub(crate) fn assert_no_forged_line(what: &str, text: &str) {
    for bad in ['\r', '\x1b', '\x07', '\u{202e}', '\u{2028}'] {
        assert!(!text.contains(bad), "{bad:?} raw in {what}:\n{text}");
    }
    for line in text.lines() {
        let line = line.trim_start();
        assert!(
            !line.starts_with("::") && !line.starts_with("FORGED"),
            "{what} holds a forged line: {line:?}\n{text}"
        );
    }
}

/// Issue 43, item 4: a run folder from elsewhere is untrusted in every
/// field, not only in the server's words: phase and boundary names, the
/// agent, the server version and the run's id were written raw into
/// report.md, report.txt and junit.xml (`::error::` lines under GitHub),
/// and item 5: baseline's header and left-out comments, into the TOML.
#[test]
fn every_string_field_of_a_report_reaches_every_output_inert() {
    for base in [
        fixture::report(),
        fixture::repeated_report(),
        fixture::candidates("sandbox-agent 0.4.2"),
    ] {
        let (r, taken) = every_field(&base, FORGING);
        assert!(taken > 40, "only {taken} fields took the text");
        let layout = Layout {
            width: 120,
            color: false,
            folder: "out".into(),
        };
        assert_no_forged_line("the terminal", &render_terminal(&r, &layout));
        assert_no_forged_line("report.txt", &render_text(&r, false));
        let markdown = render_markdown(&r);
        assert_no_forged_line("report.md", &markdown);
        assert!(!markdown.contains("<b>"), "{markdown}");
        assert_no_forged_line("the step summary", &render_step_summary(&r, "out"));
        assert_no_forged_line("junit.xml", &render_junit(&r).unwrap());
        for cell in &r.cells {
            assert_no_forged_line("show --cell", &render_timeline(cell, &[]));
        }
        let rows = crate::compare::compare(&base, &r);
        assert_no_forged_line(
            "compare",
            &crate::compare::render_comparison(&base, &r, &rows, false),
        );
        for note in annotations(&r) {
            let line = note.as_str();
            assert!(!line.contains(['\r', '\n', '\x1b', '\x07']), "{line:?}");
        }
        let baseline =
            crate::baseline::render_baseline(&r, &crate::baseline::Quarantine::default());
        assert_no_forged_line("baseline", &baseline.text);
        // What TOML reads: one table per cell recorded, none forged.
        let toml: toml::Value =
            toml::from_str(&baseline.text).unwrap_or_else(|e| panic!("{e}\n{}", baseline.text));
        let entries = toml["expect"].as_array().map_or(0, Vec::len);
        assert_eq!(
            entries + baseline.left_out.len(),
            r.cells.len(),
            "one entry per cell, none forged:\n{}",
            baseline.text
        );
    }
}

/// A client or store this continuity does not know, as a report from a
/// later version (or a hostile one) may name it: the report still reads
/// through the reader every command uses, writes back the same JSON, runs
/// as no known client (nothing of the real SDK's is read of it), and every
/// output shows it inert.
#[test]
fn an_unknown_client_or_store_reads_and_reaches_every_output_inert() {
    let mut value = serde_json::to_value(fixture::candidates("sandbox-agent 0.4.2")).unwrap();
    for cell in value["cells"].as_array_mut().unwrap() {
        cell["client"] = FORGING.into();
        cell["persist"] = "mysql".into();
    }
    let r = crate::upgrade::parse_report(&value.to_string()).unwrap();
    assert_eq!(serde_json::to_value(&r).unwrap(), value, "the same JSON");
    for cell in &r.cells {
        assert_eq!(cell.point.client().known(), None);
        assert_eq!(cell.point.client().name(), FORGING);
        assert_eq!(cell.point.store().and_then(|s| s.known()), None);
        assert_eq!(cell.point_label(&r.run, Axis::Sdk), None, "no SDK host");
    }
    let layout = Layout {
        width: 120,
        color: false,
        folder: "out".into(),
    };
    assert_no_forged_line("the terminal", &render_terminal(&r, &layout));
    assert_no_forged_line("report.txt", &render_text(&r, false));
    let markdown = render_markdown(&r);
    assert_no_forged_line("report.md", &markdown);
    assert!(!markdown.contains("<b>"), "{markdown}");
    assert!(
        markdown.contains("## Unhandled rejections in the SDK\n\nnone recorded."),
        "{markdown}"
    );
    assert_no_forged_line("the step summary", &render_step_summary(&r, "out"));
    assert_no_forged_line("junit.xml", &render_junit(&r).unwrap());
    for cell in &r.cells {
        assert_no_forged_line("show --cell", &render_timeline(cell, &[]));
    }
    let baseline = crate::baseline::render_baseline(&r, &crate::baseline::Quarantine::default());
    assert_no_forged_line("baseline", &baseline.text);
    toml::from_str::<toml::Value>(&baseline.text).unwrap();
}
