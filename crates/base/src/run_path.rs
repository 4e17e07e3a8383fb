//! A run folder is data from wherever it was made (a CI artifact someone
//! downloaded): every file a command reads from one is opened here, and
//! only here, beneath the folder. [`RunRoot`] holds the folder open and
//! [`RunRoot::open_file`] opens a path a report names (a cell's `trace`, the
//! report itself) with the kernel's `openat2(RESOLVE_BENEATH)`, so no path
//! form (absolute, `..`, a symlink anywhere on the way) reaches outside it,
//! and no gap lies between the check and the open. What is opened must be a
//! regular file (a FIFO, a socket or a device is refused without blocking)
//! and no larger than the caller's limit; its identity (device, inode) lets
//! a reader take a file named by several cells once.

use crate::untrusted::Untrusted;
use crate::user_file::Why;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// A path a report names that could not be opened inside its run folder.
#[derive(Debug, thiserror::Error)]
pub enum RunPathError {
    /// The path leads outside the folder (or nowhere a report may point).
    #[error("the report's path {} leads outside its run folder {}: {why}", shown(.given), .run_dir.display())]
    Outside {
        given: String,
        run_dir: PathBuf,
        why: &'static str,
    },
    /// The path stays inside, but what is there cannot be read as a file.
    #[error("{}/{}: {why}", .run_dir.display(), shown(.given))]
    File {
        given: String,
        run_dir: PathBuf,
        why: Why,
    },
}

impl RunPathError {
    /// Whether nothing is at the path (a trace a run never wrote).
    pub fn is_missing(&self) -> bool {
        matches!(
            self,
            RunPathError::File {
                why: Why::Missing,
                ..
            }
        )
    }
}

/// A report's text in a message: escaped, quoted.
fn shown(given: &str) -> String {
    format!("\"{}\"", Untrusted::new(given).terminal())
}

/// Which file an opened file is: the same (device, inode) is the same file
/// whatever path or link led to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileId {
    dev: u64,
    ino: u64,
}

/// A regular file opened beneath a run folder.
#[derive(Debug)]
pub struct RunFile {
    pub file: File,
    /// The folder joined with the path as the report names it, for messages.
    pub path: PathBuf,
    pub id: FileId,
    /// Its size when opened (at most the limit it was opened with).
    pub len: u64,
    limit: u64,
}

impl RunFile {
    /// Its text, refused when it grew past the limit it was opened with or
    /// is not UTF-8.
    pub fn read_text(self) -> Result<String, Why> {
        let mut bytes = Vec::with_capacity(self.len as usize);
        self.file
            .take(self.limit + 1)
            .read_to_end(&mut bytes)
            .map_err(Why::Io)?;
        if bytes.len() as u64 > self.limit {
            return Err(Why::TooLarge {
                size: bytes.len() as u64,
                limit: self.limit,
            });
        }
        String::from_utf8(bytes).map_err(|e| {
            Why::Io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("not UTF-8 text ({e})"),
            ))
        })
    }

    /// A reader that stops one byte past the limit (the caller sees a file
    /// that grew as longer than it may be).
    pub fn bounded(self) -> std::io::Take<File> {
        self.file.take(self.limit + 1)
    }
}

/// A run folder held open: the one place files of a run folder are opened.
#[derive(Debug)]
pub struct RunRoot {
    /// As given (`.` for a report named without a folder).
    dir: PathBuf,
    handle: File,
}

impl RunRoot {
    /// Opens the folder `dir` (a link to a folder is that folder: the user
    /// named it). An empty path is the current folder.
    pub fn open(dir: &Path) -> Result<RunRoot, RunPathError> {
        let dir = match dir.as_os_str().is_empty() {
            true => PathBuf::from("."),
            false => dir.to_path_buf(),
        };
        let refuse = |why| RunPathError::File {
            given: String::new(),
            run_dir: dir.clone(),
            why,
        };
        let meta = std::fs::metadata(&dir).map_err(|e| refuse(why_of(e)))?;
        if !meta.is_dir() {
            return Err(refuse(Why::WrongKind("not a folder")));
        }
        let handle = File::open(&dir).map_err(|e| refuse(why_of(e)))?;
        Ok(RunRoot { dir, handle })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Opens `relative` (as a report names it) beneath the folder: refused
    /// when empty, absolute, climbing with `..`, or resolving (links
    /// followed) outside the folder; when what is there is not a regular
    /// file; or when it is larger than `limit` bytes.
    pub fn open_file(&self, relative: &str, limit: u64) -> Result<RunFile, RunPathError> {
        let outside = |why| RunPathError::Outside {
            given: relative.to_string(),
            run_dir: self.dir.clone(),
            why,
        };
        let bad_file = |why| RunPathError::File {
            given: relative.to_string(),
            run_dir: self.dir.clone(),
            why,
        };
        if relative.is_empty() {
            return Err(outside("an empty path"));
        }
        if relative.contains('\0') {
            return Err(outside("a NUL byte in the path"));
        }
        for part in Path::new(relative).components() {
            match part {
                Component::Normal(_) | Component::CurDir => {}
                Component::ParentDir => return Err(outside("it climbs out with `..`")),
                Component::RootDir | Component::Prefix(_) => {
                    return Err(outside("an absolute path"))
                }
            }
        }
        let file = self.open_beneath(relative).map_err(|e| match e {
            Opened::Escapes => outside("a symlink leads out of the folder"),
            Opened::Io(e) => bad_file(why_of(e)),
        })?;
        let meta = file.metadata().map_err(|e| bad_file(Why::Io(e)))?;
        if let Some(what) = not_a_file(&meta) {
            return Err(bad_file(Why::WrongKind(what)));
        }
        if meta.len() > limit {
            return Err(bad_file(Why::TooLarge {
                size: meta.len(),
                limit,
            }));
        }
        Ok(RunFile {
            file,
            path: self.dir.join(relative),
            id: FileId {
                dev: meta.dev(),
                ino: meta.ino(),
            },
            len: meta.len(),
            limit,
        })
    }

    /// The kernel resolves `relative` beneath the folder's handle: a path
    /// (or a link on it) that would leave is refused by the open itself.
    /// Opened without blocking (a FIFO's open returns at once, to be
    /// refused by its type) and without taking a terminal.
    fn open_beneath(&self, relative: &str) -> Result<File, Opened> {
        use rustix::fs::{Mode, OFlags, ResolveFlags};
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        match rustix::fs::openat2(&self.handle, relative, flags, Mode::empty(), resolve) {
            Ok(fd) => Ok(File::from(fd)),
            Err(e) if e == rustix::io::Errno::XDEV || e == rustix::io::Errno::LOOP => {
                Err(Opened::Escapes)
            }
            // A kernel before 5.6, or a sandbox that forbids the call.
            Err(e) if e == rustix::io::Errno::NOSYS || e == rustix::io::Errno::PERM => {
                self.open_checked(relative, flags)
            }
            Err(e) => Err(Opened::Io(e.into())),
        }
    }

    /// Without `openat2`: the path resolved (links followed) must stay in
    /// the folder, and the resolved path is opened without following a
    /// final link.
    fn open_checked(&self, relative: &str, flags: rustix::fs::OFlags) -> Result<File, Opened> {
        let root = self.dir.canonicalize().map_err(Opened::Io)?;
        let real = self.dir.join(relative).canonicalize().map_err(Opened::Io)?;
        if !real.starts_with(&root) {
            return Err(Opened::Escapes);
        }
        let fd = rustix::fs::open(
            &real,
            flags | rustix::fs::OFlags::NOFOLLOW,
            rustix::fs::Mode::empty(),
        )
        .map_err(|e| Opened::Io(e.into()))?;
        Ok(File::from(fd))
    }
}

/// Why an open beneath the folder failed.
enum Opened {
    Escapes,
    Io(std::io::Error),
}

fn why_of(e: std::io::Error) -> Why {
    match e.kind() {
        std::io::ErrorKind::NotFound => Why::Missing,
        _ => Why::Io(e),
    }
}

/// What an opened file is, in words, when it is not a regular file.
fn not_a_file(meta: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    match () {
        _ if t.is_file() => None,
        _ if t.is_dir() => Some("a folder"),
        _ if t.is_fifo() => Some("a FIFO (named pipe)"),
        _ if t.is_socket() => Some("a socket"),
        _ if t.is_char_device() || t.is_block_device() => Some("a device"),
        _ => Some("not a file"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_that_stay_in_the_run_folder_open() {
        let tmp = tempfile::tempdir().unwrap();
        let run = tmp.path().join("run");
        std::fs::create_dir_all(run.join("cells/a")).unwrap();
        std::fs::write(run.join("cells/a/trace.jsonl"), "x").unwrap();
        std::fs::write(tmp.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("secret"), run.join("cells/a/link")).unwrap();
        std::os::unix::fs::symlink(tmp.path(), run.join("cells/up")).unwrap();
        std::os::unix::fs::symlink("a/trace.jsonl", run.join("cells/inner")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", run.join("cells/zero")).unwrap();
        let root = RunRoot::open(&run).unwrap();
        let ok = root.open_file("cells/a/trace.jsonl", 10).unwrap();
        assert_eq!(ok.read_text().unwrap(), "x");
        // A link that stays inside is that file, by its identity.
        let a = root.open_file("cells/a/trace.jsonl", 10).unwrap();
        let b = root.open_file("cells/inner", 10).unwrap();
        assert_eq!(a.id, b.id);
        assert!(root
            .open_file("cells/missing/trace.jsonl", 10)
            .unwrap_err()
            .is_missing());
        for (given, why) in [
            ("/etc/passwd", "absolute"),
            ("../secret", "`..`"),
            ("cells/../../secret", "`..`"),
            ("cells/a/link", "symlink"),
            ("cells/up/secret", "symlink"),
            ("cells/zero", "symlink"),
            ("", "empty"),
            ("cells/a", "a folder"),
        ] {
            let e = root.open_file(given, 10).unwrap_err();
            assert!(e.to_string().contains(why), "{given}: {e}");
        }
        let e = root.open_file("cells/a/trace.jsonl", 0).unwrap_err();
        assert!(
            matches!(
                e,
                RunPathError::File {
                    why: Why::TooLarge { .. },
                    ..
                }
            ),
            "{e}"
        );
    }

    /// A report named without a folder (`show report.json`) has the
    /// current folder as its run folder: the check once did nothing for it.
    #[test]
    fn an_empty_folder_is_the_current_one_and_confines_as_any_other() {
        let root = RunRoot::open(Path::new("")).unwrap();
        assert_eq!(root.dir(), Path::new("."));
        let e = root
            .open_file("../../../../../etc/passwd", 1 << 20)
            .unwrap_err();
        assert!(e.to_string().contains("`..`"), "{e}");
    }

    #[test]
    fn a_fifo_or_a_socket_is_refused_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let _socket = std::os::unix::net::UnixListener::bind(tmp.path().join("sock")).unwrap();
        let root = RunRoot::open(tmp.path()).unwrap();
        let e = root.open_file("fifo", 10).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        let e = root.open_file("sock", 10).unwrap_err();
        assert!(
            e.to_string().contains("socket") || e.to_string().contains("No such device"),
            "{e}"
        );
    }

    #[test]
    fn a_hostile_path_is_shown_escaped() {
        let tmp = tempfile::tempdir().unwrap();
        let root = RunRoot::open(tmp.path()).unwrap();
        let e = root
            .open_file("/x\n::error::y\x1b[2J", 10)
            .unwrap_err()
            .to_string();
        assert!(!e.contains('\n') && !e.contains('\x1b'), "{e:?}");
    }
}
