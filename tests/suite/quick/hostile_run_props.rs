//! Issue 43's goal as a property: run folders generated to be hostile —
//! control characters, forged lines and markup in every kind of field,
//! traces that are links out of the folder, FIFOs, devices, folders,
//! sparse giants, one file for many cells, `..` and absolute paths; a
//! recipe naming a deployment (a listener), a token variable, a config
//! and a candidate build shipped in the artifact — named in every path
//! form (the folder, its report.json, a bare report.json in the current
//! folder, `./run`), through every command that reads a run (`show`,
//! `show --cell`, `compare`, `baseline`, `check`, `merge`, `export`,
//! `rerun`).
//! Whatever is generated: no read outside the folder (a canary's text
//! appears in no output and no file written), no connection to where the
//! report points, nothing run from the artifact, no panic, no hang, and
//! no raw control character or forged line on stdout or stderr.

use crate::support::continuity_command;
use crate::support::hostile_run::{cell, mkfifo, report, run_within, trace, Listener};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

const CANARY: &str = "OUTSIDE-CANARY-4343";

/// Text that forges lines, workflow commands, terminal actions, markup.
const HOSTILE: &[&str] = &[
    "\n::error::FORGED",
    "\r::warning title=x::FORGED",
    "\u{1b}[2J\u{1b}]0;title\u{7}x",
    "\u{202e}FORGED\u{2066}",
    "<script>x</script>|[l](http://e)`c`",
    "x\u{85}\u{2028}FORGED",
    "  ::group::FORGED",
    "../../../etc/passwd",
    "é\u{7f}\t%0A::error::",
];

#[derive(Debug, Clone, Copy)]
enum TraceKind {
    None,
    Valid,
    LinkOut,
    DevZero,
    Fifo,
    Sparse,
    Shared,
    DotDot,
    Absolute,
    Folder,
}

#[derive(Debug, Clone, Copy)]
enum Recipe {
    Url,
    TokenEnv,
    Config,
    Candidate,
    DeviceConfig,
    BadDigest,
}

#[derive(Debug, Clone, Copy)]
enum Form {
    Folder,
    ReportFile,
    Bare,
    Relative,
}

#[derive(Debug, Clone)]
struct Shape {
    /// Which hostile text goes into which kind of field (index into [`HOSTILE`]).
    texts: Vec<usize>,
    traces: Vec<TraceKind>,
    recipe: Vec<Recipe>,
    form: Form,
}

fn shape() -> impl Strategy<Value = Shape> {
    let trace = prop_oneof![
        Just(TraceKind::None),
        Just(TraceKind::Valid),
        Just(TraceKind::LinkOut),
        Just(TraceKind::DevZero),
        Just(TraceKind::Fifo),
        Just(TraceKind::Sparse),
        Just(TraceKind::Shared),
        Just(TraceKind::DotDot),
        Just(TraceKind::Absolute),
        Just(TraceKind::Folder),
    ];
    let recipe = prop_oneof![
        Just(Recipe::Url),
        Just(Recipe::TokenEnv),
        Just(Recipe::Config),
        Just(Recipe::Candidate),
        Just(Recipe::DeviceConfig),
        Just(Recipe::BadDigest),
    ];
    let form = prop_oneof![
        Just(Form::Folder),
        Just(Form::ReportFile),
        Just(Form::Bare),
        Just(Form::Relative),
    ];
    (
        proptest::collection::vec(0..HOSTILE.len(), 9),
        proptest::collection::vec(trace, 1..5),
        proptest::collection::vec(recipe, 0..4),
        form,
    )
        .prop_map(|(texts, traces, recipe, form)| Shape {
            texts,
            traces,
            recipe,
            form,
        })
}

/// The artifact's folders: `base/run` (the run), `base/outside` (the canary).
struct Made {
    base: tempfile::TempDir,
    listener: Listener,
}

impl Made {
    fn run(&self) -> PathBuf {
        self.base.path().join("run")
    }
    fn marker(&self) -> PathBuf {
        self.base.path().join("RAN")
    }
}

fn make(shape: &Shape) -> Made {
    let made = Made {
        base: tempfile::tempdir().unwrap(),
        listener: Listener::start(),
    };
    let (base, run) = (made.base.path().to_path_buf(), made.run());
    std::fs::create_dir_all(run.join("cells/real")).unwrap();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::fs::write(
        base.join("outside/trace.jsonl"),
        trace(&format!("/{CANARY}")),
    )
    .unwrap();
    std::fs::write(run.join("cells/real/trace.jsonl"), trace("/v1/acp/shared")).unwrap();
    let text = |i: usize| HOSTILE[shape.texts[i % shape.texts.len()]];
    let mut cells = Vec::new();
    for (i, kind) in shape.traces.iter().enumerate() {
        let folder = run.join(format!("cells/c{i}"));
        std::fs::create_dir_all(&folder).unwrap();
        let mut path = Some(format!("cells/c{i}/trace.jsonl"));
        let file = folder.join("trace.jsonl");
        match kind {
            TraceKind::None => path = None,
            TraceKind::Valid => std::fs::write(&file, trace(&format!("/c{i}{}", text(i)))).unwrap(),
            TraceKind::LinkOut => {
                std::os::unix::fs::symlink(base.join("outside/trace.jsonl"), &file).unwrap()
            }
            TraceKind::DevZero => std::os::unix::fs::symlink("/dev/zero", &file).unwrap(),
            TraceKind::Fifo => mkfifo(&file),
            TraceKind::Sparse => std::fs::File::create(&file)
                .unwrap()
                .set_len(8 << 30)
                .unwrap(),
            TraceKind::Shared => path = Some("cells/real/trace.jsonl".into()),
            TraceKind::DotDot => path = Some("cells/../../outside/trace.jsonl".into()),
            TraceKind::Absolute => {
                path = Some(base.join("outside/trace.jsonl").display().to_string())
            }
            TraceKind::Folder => std::fs::create_dir_all(&file).unwrap(),
        }
        let mut c = cell(
            &format!("t{i}{}", text(i)),
            &format!("s{}", text(i + 1)),
            path.as_deref(),
        );
        c["phases"][0]["name"] = json!(format!("p{}", text(i + 2)));
        c["failureBoundary"] = json!(format!("p{}", text(i + 2)));
        c["reason"] = json!(text(i + 3));
        c["phases"][0]["signature"]["message"] = json!(text(i + 4));
        // A check the report says was made, in its words (`check` makes its own).
        c["checked"] = json!({
            "checked": [{"invariant": "store", "status": "unknown", "why": text(i + 5)}],
            "violations": [{
                "invariant": "stream", "breach": "gap", "hop": "client", "t": 1.0,
                "phase": text(i + 6), "detail": text(i + 7),
            }],
            "allowed": ["lost_tail"],
        });
        cells.push(c);
    }
    let mut r = report(&format!("id{}", text(5)), cells);
    r["run"]["agent"] = json!(format!("mock{}", text(6)));
    r["run"]["serverVersion"] = json!(format!("sandbox-agent 0.4.2{}", text(7)));
    r["run"]["baseUrl"] = json!(format!("http://h{}", text(8)));
    recipe(&mut r, &shape.recipe, &made);
    std::fs::write(run.join("report.json"), r.to_string()).unwrap();
    made
}

/// The recipe's instructions a report must never give.
fn recipe(r: &mut Value, kinds: &[Recipe], made: &Made) {
    let run = made.run();
    let script = format!(
        "#!/bin/sh\ntouch {}\necho sandbox-agent 0.4.2\n",
        made.marker().display()
    );
    for (name, body) in [("sandbox-agent", &script), ("continuity.toml", &script)] {
        let path = run.join(name);
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let digest = continuity::digest::sha256_hex(script.as_bytes());
    let recipe = &mut r["run"]["recipe"];
    for kind in kinds {
        match kind {
            Recipe::Url => recipe["baseUrl"] = json!(made.listener.url),
            Recipe::TokenEnv => recipe["tokenEnv"] = json!("HOSTILE_SECRET_KEY"),
            Recipe::Config => {
                recipe["config"] = json!({"path": "./continuity.toml", "sha256": digest})
            }
            Recipe::DeviceConfig => {
                recipe["config"] = json!({"path": "/dev/zero", "sha256": "0".repeat(64)})
            }
            Recipe::Candidate | Recipe::BadDigest => {}
        }
    }
    let points: Vec<Value> = kinds
        .iter()
        .filter_map(|k| match k {
            Recipe::Candidate => Some(digest.clone()),
            Recipe::BadDigest => Some("ü".repeat(40)),
            _ => None,
        })
        .enumerate()
        .map(|(i, sha)| {
            json!({
                "axis": "server", "label": format!("fix{i}"), "source": "binary",
                "version": "sandbox-agent 0.4.2", "paths": ["./sandbox-agent"], "sha256": sha,
            })
        })
        .collect();
    r["run"]["points"] = json!(points);
}

/// Every command that reads a run, `run` named in `form`; what each
/// printed, and the files it wrote.
fn read_through_every_command(made: &Made, form: Form) -> Vec<(String, std::process::Output)> {
    let (base, run) = (made.base.path(), made.run());
    let (cwd, named): (PathBuf, String) = match form {
        Form::Folder => (base.to_path_buf(), run.display().to_string()),
        Form::ReportFile => (
            base.to_path_buf(),
            run.join("report.json").display().to_string(),
        ),
        Form::Bare => (run.clone(), "report.json".into()),
        Form::Relative => (base.to_path_buf(), "./run".into()),
    };
    let out = |name: &str| base.join(name).display().to_string();
    let commands: Vec<Vec<String>> = vec![
        vec!["show".into(), named.clone()],
        vec![
            "show".into(),
            named.clone(),
            "--cell".into(),
            first_cell(&run),
        ],
        vec!["compare".into(), named.clone(), named.clone()],
        vec!["baseline".into(), named.clone()],
        vec!["check".into(), named.clone()],
        vec!["merge".into(), "--out".into(), out("merged"), named.clone()],
        vec![
            "export".into(),
            named.clone(),
            "--chrome-trace".into(),
            out("export.json"),
        ],
        // The user's deployment (nothing listens there): every rerun is
        // refused before anything starts, whatever the report holds.
        vec![
            "rerun".into(),
            named,
            "--base-url".into(),
            "http://127.0.0.1:9".into(),
        ],
    ];
    commands
        .into_iter()
        .map(|args| {
            let mut command = continuity_command(&args);
            command.current_dir(&cwd).envs([
                ("HOSTILE_SECRET_KEY", "s3cret-of-another-service"),
                ("SA_TOKEN", "the-users-own-token"),
            ]);
            (args.join(" "), run_within(command, Duration::from_secs(60)))
        })
        .collect()
}

/// `TARGET/SCENARIO` of the run's first cell, as `--cell` takes it.
fn first_cell(run: &Path) -> String {
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("report.json")).unwrap()).unwrap();
    let c = &r["cells"][0];
    format!(
        "{}/{}",
        c["target"].as_str().unwrap(),
        c["scenario"].as_str().unwrap()
    )
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                out.push(entry.path());
            }
        }
    }
    out
}

fn check(made: &Made, results: &[(String, std::process::Output)]) {
    for (what, output) in results {
        let code = output.status.code();
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            matches!(code, Some(0 | 1 | 2 | 64)),
            "{what}: exit {code:?}\n{printed}"
        );
        assert!(!printed.contains("panicked"), "{what}:\n{printed}");
        assert!(
            !printed.contains(CANARY),
            "{what} read outside the folder:\n{printed}"
        );
        assert!(
            !printed.contains("s3cret") && !printed.contains("the-users-own"),
            "{what}:\n{printed}"
        );
        for bad in [
            '\r', '\u{1b}', '\u{202e}', '\u{7}', '\u{85}', '\u{2028}', '\u{2066}',
        ] {
            assert!(
                !printed.contains(bad),
                "{what}: {bad:?} raw in\n{printed:?}"
            );
        }
        for line in printed.lines() {
            let line = line.trim_start();
            assert!(
                !line.starts_with("::") && !line.starts_with("FORGED"),
                "{what}: a forged line {line:?}\n{printed}"
            );
        }
    }
    let base = made.base.path();
    for file in files_under(&base.join("merged"))
        .into_iter()
        .chain([base.join("export.json")])
    {
        let Ok(bytes) = std::fs::read(&file) else {
            continue;
        };
        assert!(
            !String::from_utf8_lossy(&bytes).contains(CANARY),
            "{} holds the outside file's text",
            file.display()
        );
    }
    assert_eq!(
        made.listener.connections(),
        Vec::<String>::new(),
        "the report's URL was connected to"
    );
    assert!(!made.marker().exists(), "a program of the artifact ran");
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 12,
        max_shrink_iters: 16,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_hostile_run_folder_is_only_ever_read_as_data(shape in shape()) {
        let made = make(&shape);
        let results = read_through_every_command(&made, shape.form);
        check(&made, &results);
    }
}
