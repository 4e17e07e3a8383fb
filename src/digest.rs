//! SHA-256 of what a run depended on (a candidate binary, a config file, a
//! scenario's text), as lowercase hex: what `report.json` records so that
//! `continuity rerun` can tell a file that changed since the run from one
//! that did not. ring computes it (already built for rustls).

use std::io::Read;
use std::path::Path;

/// The SHA-256 of `bytes`, in lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(ring::digest::digest(&ring::digest::SHA256, bytes).as_ref())
}

/// The SHA-256 of a regular file's bytes, read in pieces (a server binary
/// is tens of MB). Anything else is refused before a byte is read: a FIFO
/// would block the read, a device such as `/dev/zero` never ends it.
pub(crate) fn sha256_file(path: &Path) -> Result<String, crate::user_file::UserFileError> {
    let (mut file, _) = crate::user_file::open_regular(path)?;
    let io = |e: std::io::Error| crate::user_file::UserFileError {
        path: path.to_path_buf(),
        why: crate::user_file::Why::Io(e),
    };
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buffer).map_err(io)?;
        if n == 0 {
            break;
        }
        context.update(&buffer[..n]);
    }
    Ok(hex(context.finish().as_ref()))
}

/// Bytes as lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_digest_of_abc() {
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(sha256_hex(b"abc"), abc);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"abc").unwrap();
        assert_eq!(sha256_file(&file).unwrap(), abc);
    }

    /// Issue 43, item 6: the digest of `/dev/zero` (a report's path, or a
    /// user's) spun at 100 % CPU, and of a FIFO blocked for ever.
    #[test]
    fn only_a_regular_file_has_a_digest() {
        let e = sha256_file(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let e = sha256_file(&fifo).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        assert!(sha256_file(dir.path()).is_err());
    }
}
