//! The scrub of a finished run folder: every file other programs wrote
//! there (component logs, session stores, their JSON) rewritten without the
//! run's secrets, once they have stopped; JSON keeps its keys and structure.

use super::{write_atomic, RunFolder};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

impl RunFolder {
    /// Rewrites every file under the folder that holds a secret: the logs
    /// and session stores other programs wrote there. Text is redacted as
    /// text; other bytes keep their length (a database stays readable).
    /// Returns the files it changed. Symbolic links are not followed.
    pub fn scrub(&self) -> io::Result<Vec<PathBuf>> {
        let mut changed = Vec::new();
        if self.redactor.is_empty() {
            return Ok(changed);
        }
        let mut pending = vec![self.dir.clone()];
        while let Some(dir) = pending.pop() {
            for entry in fs::read_dir(&dir)? {
                let entry = entry?;
                let kind = entry.file_type()?;
                let path = entry.path();
                if kind.is_dir() {
                    pending.push(path);
                } else if kind.is_file() && !written_redacted(&self.dir, &path) {
                    let bytes = fs::read(&path)?;
                    if let Some(clean) = self.scrubbed(&path, &bytes) {
                        if clean.len() == bytes.len() {
                            // In place: a database may be open elsewhere by inode.
                            fs::write(&path, &clean)?;
                        } else {
                            write_atomic(&path, &clean)?;
                        }
                        changed.push(path);
                    }
                }
            }
        }
        changed.sort();
        Ok(changed)
    }
}

impl RunFolder {
    /// A file's bytes with the secrets redacted; `None` when none was found.
    /// JSON (`.json`, and `.jsonl` line by line) keeps its keys and
    /// structure: only its string values are redacted; a line that does not
    /// parse is redacted as text.
    fn scrubbed(&self, path: &Path, bytes: &[u8]) -> Option<Vec<u8>> {
        let extension = path.extension().and_then(|e| e.to_str());
        let text = std::str::from_utf8(bytes).ok();
        match (extension, text) {
            (Some("json"), Some(text)) => match serde_json::from_str::<serde_json::Value>(text) {
                Ok(mut value) => {
                    let before = value.clone();
                    self.redactor.redact_json(&mut value);
                    (value != before).then(|| {
                        let mut out = serde_json::to_string_pretty(&value).unwrap_or_default();
                        if text.ends_with('\n') {
                            out.push('\n');
                        }
                        out.into_bytes()
                    })
                }
                Err(_) => self.redactor.redact_bytes(bytes),
            },
            (Some("jsonl"), Some(text)) => {
                let mut changed = false;
                let lines: Vec<String> = text
                    .split_inclusive('\n')
                    .map(|line| {
                        let body = line.trim_end_matches('\n');
                        let redacted = match serde_json::from_str::<serde_json::Value>(body) {
                            Ok(mut value) => {
                                let before = value.clone();
                                self.redactor.redact_json(&mut value);
                                (value != before).then(|| value.to_string())
                            }
                            Err(_) => match self.redactor.redact(body) {
                                std::borrow::Cow::Owned(text) => Some(text),
                                std::borrow::Cow::Borrowed(_) => None,
                            },
                        };
                        match redacted {
                            Some(body) => {
                                changed = true;
                                format!("{body}{}", &line[line.trim_end_matches('\n').len()..])
                            }
                            None => line.to_string(),
                        }
                    })
                    .collect();
                changed.then(|| lines.concat().into_bytes())
            }
            _ => self.redactor.redact_bytes(bytes),
        }
    }
}

/// The report files [`RunFolder::write_report`] wrote: redacted from the
/// model already, and structured, so the scrub leaves them as they are.
fn written_redacted(dir: &Path, path: &Path) -> bool {
    [
        "report.json",
        "junit.xml",
        "report.html",
        "report.txt",
        "report.md",
    ]
    .iter()
    .any(|name| path == dir.join(name))
}
