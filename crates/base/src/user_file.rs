//! Paths a user names and continuity reads: each is checked for its file
//! type before anything reads it, so a FIFO, a socket or a device never
//! hangs a command (or feeds it endless bytes), and every read is capped.
//! [`read_text`] opens without blocking and checks the opened file itself
//! (no gap between the check and the read); [`check_kind`] looks at a path
//! that another program (tar, npm, the binary's own `--version`) reads.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What a path must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    /// A folder or a regular file (an SDK's package folder or tarball).
    FileOrFolder,
}

/// Why a user's path was not read: the path, and why.
#[derive(Debug, thiserror::Error)]
#[error("{}: {why}", .path.display())]
pub struct UserFileError {
    pub path: PathBuf,
    pub why: Why,
}

/// Why a path was not read (the message without the path).
#[derive(Debug, thiserror::Error)]
pub enum Why {
    #[error("no such file")]
    Missing,
    #[error("{0}, not a regular file")]
    WrongKind(&'static str),
    #[error("{size} bytes, over the {} MiB a file read here may hold", .limit / (1024 * 1024))]
    TooLarge { size: u64, limit: u64 },
    #[error("{0}")]
    Io(#[source] std::io::Error),
}

impl Why {
    fn of(source: std::io::Error) -> Why {
        match source.kind() {
            std::io::ErrorKind::NotFound => Why::Missing,
            _ => Why::Io(source),
        }
    }
}

/// What a file type is, in words; `None` for what `kind` accepts.
fn refused(meta: &std::fs::Metadata, kind: Kind) -> Option<&'static str> {
    let t = meta.file_type();
    match () {
        _ if t.is_file() => None,
        _ if t.is_dir() => (kind == Kind::File).then_some("a folder"),
        _ if t.is_fifo() => Some("a FIFO (named pipe)"),
        _ if t.is_socket() => Some("a socket"),
        _ if t.is_char_device() || t.is_block_device() => Some("a device"),
        _ => Some("not a file"),
    }
}

/// Checks that `path` (links followed) is of `kind`, without opening it.
pub fn check_kind(path: &Path, kind: Kind) -> Result<std::fs::Metadata, UserFileError> {
    let error = |why| UserFileError {
        path: path.to_path_buf(),
        why,
    };
    let meta = std::fs::metadata(path).map_err(|e| error(Why::of(e)))?;
    match refused(&meta, kind) {
        None => Ok(meta),
        Some(what) => Err(error(Why::WrongKind(what))),
    }
}

/// The regular file `path`, opened for reading: a FIFO is opened
/// non-blocking (so the open returns at once) and, as a socket or a device
/// (`/dev/zero`, which never ends), refused by the type of what was opened.
pub fn open_regular(path: &Path) -> Result<(std::fs::File, std::fs::Metadata), UserFileError> {
    let error = |why| UserFileError {
        path: path.to_path_buf(),
        why,
    };
    let io = |e| error(Why::of(e));
    let file = std::fs::File::options()
        .read(true)
        // rustix's flag is the kernel's own number, without unsafe or libc.
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    match refused(&meta, Kind::File) {
        Some(what) => Err(error(Why::WrongKind(what))),
        None => Ok((file, meta)),
    }
}

/// The text of the regular file `path` ([`open_regular`]), refused over
/// `limit` bytes.
pub fn read_text(path: &Path, limit: u64) -> Result<String, UserFileError> {
    let error = |why| UserFileError {
        path: path.to_path_buf(),
        why,
    };
    let io = |e| error(Why::of(e));
    let (file, meta) = open_regular(path)?;
    let too_large = |size| error(Why::TooLarge { size, limit });
    if meta.len() > limit {
        return Err(too_large(meta.len()));
    }
    // The file may grow between the stat and the read: read one byte past
    // the limit to see it.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|e| {
        io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text ({e})"),
        ))
    })
}

/// Writes a temporary file beside `path` (`write` fills it, buffered) and
/// renames it into place: onto nothing unless `replace` (a file that
/// appeared meanwhile is kept, and the rename fails), else onto whatever is
/// there (a link there is itself replaced, never followed).
pub fn place_file(
    path: &Path,
    replace: bool,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    use std::io::Write;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
        .and_then(|f| {
            let mut out = std::io::BufWriter::new(f);
            write(&mut out)?;
            out.flush()?;
            out.get_ref().sync_all()
        });
    let placed = written.and_then(|()| match replace {
        true => std::fs::rename(&temp, path),
        false => rustix::fs::renameat_with(
            rustix::fs::CWD,
            &temp,
            rustix::fs::CWD,
            path,
            rustix::fs::RenameFlags::NOREPLACE,
        )
        .map_err(std::io::Error::from),
    });
    if placed.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    placed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fifo(dir: &Path) -> PathBuf {
        let path = dir.join("fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .expect("mkfifo runs");
        assert!(status.success());
        path
    }

    #[test]
    fn a_fifo_is_refused_at_once_never_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = fifo(dir.path());
        // With no writer, a blocking open would never return.
        let e = read_text(&fifo, 1024).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        let e = check_kind(&fifo, Kind::FileOrFolder).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        let e = read_text(Path::new("/dev/zero"), 1024).unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
        assert!(check_kind(dir.path(), Kind::FileOrFolder).is_ok());
        assert!(check_kind(dir.path(), Kind::File).is_err());
    }

    #[test]
    fn a_file_over_the_limit_is_refused_without_reading_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        // Sparse: the size is there, the bytes are not.
        std::fs::File::create(&path)
            .unwrap()
            .set_len(4 << 30)
            .unwrap();
        let e = read_text(&path, 64 << 20).unwrap_err();
        assert!(matches!(e.why, Why::TooLarge { .. }), "{e}");
        assert!(e.to_string().contains("64 MiB"), "{e}");
        std::fs::write(&path, "small").unwrap();
        assert_eq!(read_text(&path, 64 << 20).unwrap(), "small");
    }
}
