//! Live progress on a real terminal: `continuity run` on a pty (made by
//! `script` from util-linux) against the real sandbox-agent, its output
//! replayed through a terminal emulator (vt100). While a cell waits, its
//! worker's line keeps moving (spinner and elapsed time); finished cells
//! are numbered in order of completion; the live area is gone from the
//! screen before the final output, and at once on Ctrl-C. Off a terminal
//! the same run prints plain lines only.

use crate::support;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const COLUMNS: u16 = 80;

/// A secret the run knows (a `*_TOKEN` variable's value), in a scenario's
/// name: every line drawn or printed shows `[redacted]` instead.
const SECRET: &str = "s3cr3tv4lue99";

/// Two scenarios: one whose cell waits 2.5 s (so its line must move), one
/// quick; the first is named with [`SECRET`].
fn scenarios(dir: &Path) -> String {
    let scenarios = dir.join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    for (name, ms) in [(format!("hold-{SECRET}"), 2500), ("quick".into(), 100)] {
        std::fs::write(
            scenarios.join(format!("{name}.toml")),
            format!(
                "name = \"{name}\"\ndescription = \"waits {ms} ms\"\nverdict = [\"wait\"]\n\
                 [[phase]]\nname = \"connect\"\nstep = \"connect\"\nclient = \"c\"\n\
                 [[phase]]\nname = \"wait\"\nstep = \"sleep\"\nms = {ms}\n\
                 [[cleanup]]\nname = \"dispose\"\nstep = \"dispose\"\nclient = \"c\"\n"
            ),
        )
        .unwrap();
    }
    scenarios.display().to_string()
}

/// `continuity run` on a pty of [`COLUMNS`] columns; `keys` are typed into
/// it once the output so far contains `when`. Returns the raw bytes.
fn run_on_a_pty(dir: &Path, keys: Option<(&str, &str)>) -> String {
    let (config, _) = support::managed_agent_config(dir, &[]);
    let scenarios = scenarios(dir);
    let out = dir.join("out");
    let bin = env!("CARGO_BIN_EXE_continuity");
    // COLUMNS is left out on the command itself: the shell would set it.
    let command = format!(
        "stty cols {COLUMNS} rows 30; exec env -u COLUMNS {bin} run --config {} --scenarios-dir {scenarios} --out {}",
        config.display(),
        out.display()
    );
    let mut script = Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .env_remove("SA_BASE_URL")
        .env_remove("SA_RESTART_CMD")
        .env_remove("SA_TOKEN")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("NO_COLOR")
        .env("TERM", "xterm-256color")
        .env("PROGRESS_TEST_TOKEN", SECRET)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("`script` (util-linux) runs the command on a pty");
    let mut stdin = script.stdin.take().unwrap();
    let mut stdout = script.stdout.take().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                seen.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        })
    };
    if let Some((keys, when)) = keys {
        let started = Instant::now();
        while !String::from_utf8_lossy(&seen.lock().unwrap()).contains(when) {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "never saw {when:?}: {}",
                String::from_utf8_lossy(&seen.lock().unwrap())
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // The terminal turns ^C into SIGINT for the run, as a keyboard would.
        stdin.write_all(keys.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }
    let status = script.wait().unwrap();
    drop(stdin);
    reader.join().unwrap();
    let raw = String::from_utf8_lossy(&seen.lock().unwrap()).into_owned();
    assert!(status.code().is_some(), "{raw}");
    raw
}

/// The screen the raw output leaves, top to bottom (tall, so nothing scrolls off).
fn final_screen(raw: &str) -> Vec<String> {
    let size = |n: u16| std::num::NonZeroU16::new(n).unwrap();
    let mut parser = vt100::Parser::new(size(2000), size(COLUMNS), 0);
    parser.process(
        raw.replace('\n', "\r\n")
            .replace("\r\r\n", "\r\n")
            .as_bytes(),
    );
    let lines: Vec<String> = parser
        .screen()
        .rows(0, COLUMNS)
        .map(|l| l.trim_end().to_string())
        .collect();
    let end = lines
        .iter()
        .rposition(|l| !l.is_empty())
        .map_or(0, |i| i + 1);
    lines[..end].to_vec()
}

fn spinner_glyph(line: &str) -> bool {
    line.chars()
        .next()
        .is_some_and(|c| ('⠁'..='⣿').contains(&c))
}

#[test]
fn on_a_terminal_running_cells_move_and_the_area_is_gone_before_the_tables() {
    let dir = tempfile::tempdir().unwrap();
    let raw = run_on_a_pty(dir.path(), None);
    // While the held cell waits, its line is redrawn with its time going up.
    let frames: Vec<&str> = raw
        .split(['\r', '\n'])
        .filter(|l| l.contains("agent × hold-[redacted] "))
        .collect();
    for second in ["0s", "1s", "2s"] {
        assert!(
            frames
                .iter()
                .any(|f| f.contains(&format!("hold-[redacted] \x1b[2m{second}"))
                    || f.contains(&format!("hold-[redacted] {second}"))),
            "no frame of the held cell at {second}: {frames:?}"
        );
    }
    assert!(raw.contains("cells, 1 running"), "the run's bar: {raw}");
    assert!(!raw.contains(SECRET), "a secret on the terminal: {raw}");

    let screen = final_screen(&raw);
    let text = screen.join("\n");
    assert!(
        !screen
            .iter()
            .any(|l| spinner_glyph(l) || l.contains(" running")),
        "the live area is left on the screen:\n{text}"
    );
    let first = screen
        .iter()
        .position(|l| l.starts_with("[1/2] "))
        .expect(&text);
    let second = screen
        .iter()
        .position(|l| l.starts_with("[2/2] "))
        .expect(&text);
    let summary = screen.iter().position(|l| l == "summary").expect(&text);
    assert!(first < second && second < summary, "{text}");
    assert!(screen.iter().all(|l| l.chars().count() <= COLUMNS as usize));
}

#[test]
fn ctrl_c_takes_the_live_area_away_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let raw = run_on_a_pty(dir.path(), Some(("\x03", "agent × hold-[redacted] ")));
    let screen = final_screen(&raw);
    let text = screen.join("\n");
    // The interrupt's words fit the terminal's width, never wrapped mid-sentence.
    let said = screen
        .iter()
        .find(|l| l.contains("interrupted (Ctrl-C): stopping"))
        .expect(&text);
    assert!(said.trim_end().ends_with("the partial report"), "{text}");
    assert!(
        screen
            .iter()
            .any(|l| l.trim_end() == "(Ctrl-C again to kill everything now)"),
        "{text}"
    );
    assert!(
        !screen
            .iter()
            .any(|l| spinner_glyph(l) || l.contains(" running")),
        "the live area is left on the screen:\n{text}"
    );
}

#[test]
fn off_a_terminal_the_lines_are_plain_and_counted_as_cells_finish() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = support::managed_agent_config(dir.path(), &[]);
    let scenarios = scenarios(dir.path());
    let out = dir.path().join("out");
    let run = support::continuity_with(
        &[
            "run",
            "--config",
            config.to_str().unwrap(),
            "--scenarios-dir",
            &scenarios,
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    support::assert_exit(&run, continuity::exit_codes::OK);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        !stderr.contains('\x1b') && !stderr.contains('\r'),
        "{stderr}"
    );
    let counted: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with('['))
        .map(|l| l.split(']').next().unwrap())
        .collect();
    assert_eq!(counted, ["[1/2", "[2/2"], "{stderr}");
}
