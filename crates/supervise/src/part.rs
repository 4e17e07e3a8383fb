//! A part of continuity's own that runs as a process of the stack (its
//! nginx gateway), watched through its pid file: a phase that cannot reach
//! the server asks whether such a part is gone, so that the failure is
//! blamed on the part, not on the server under test.

use continuity_base::errors::HarnessPart;
use std::path::PathBuf;

/// A part and the pid file its process writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartProcess {
    pub part: HarnessPart,
    pid_file: PathBuf,
}

impl PartProcess {
    pub fn new(part: HarnessPart, pid_file: PathBuf) -> PartProcess {
        PartProcess { part, pid_file }
    }

    /// Whether its process is gone: the pid file is missing or unreadable
    /// (the part stopped), or names no running process (killed: a zombie
    /// not yet reaped counts as gone).
    pub fn gone(&self) -> bool {
        let pid = std::fs::read_to_string(&self.pid_file)
            .ok()
            .and_then(|text| text.trim().parse::<i32>().ok());
        !pid.is_some_and(|pid| pid > 1 && super::owner::running_pid(pid))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_is_gone_once_its_pid_file_names_no_running_process() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("nginx.pid");
        let part = PartProcess::new(HarnessPart::Nginx, file.clone());
        assert!(part.gone(), "no pid file");
        std::fs::write(&file, format!("{}\n", std::process::id())).unwrap();
        assert!(!part.gone(), "this process runs");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Exited and not yet reaped: a zombie is gone.
        std::thread::sleep(std::time::Duration::from_millis(200));
        std::fs::write(&file, format!("{pid}\n")).unwrap();
        assert!(part.gone(), "a zombie");
        child.wait().unwrap();
        assert!(part.gone(), "reaped");
        std::fs::write(&file, "garbage").unwrap();
        assert!(part.gone(), "an unreadable pid");
    }
}
