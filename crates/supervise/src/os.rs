//! Every `unsafe` block of continuity: the calls into libc that std does
//! not make for us (signals, pidfds, terminal settings, the user table),
//! each a small safe function whose comment says why it is sound. Every
//! other module of the workspace denies unsafe code; this one alone allows
//! it. A pid or group handed here is checked so that no call can reach
//! every process (`kill(-1)`) or our own group (`kill(0)`).

#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// The refusal of a pid that would signal more than one process.
fn not_one_process(pid: i32) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{pid} names no single process"),
    )
}

/// Sends `signal` to the process `pid` (kill(2)); signal 0 only checks.
pub fn signal_process(pid: i32, signal: i32) -> io::Result<()> {
    if pid <= 0 {
        return Err(not_one_process(pid));
    }
    // SAFETY: kill(2) on one positive pid; no memory is touched.
    if unsafe { libc::kill(pid, signal) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sends `signal` to every process of the group `pgid`; false if none
/// received it (or `pgid` names no group of another process).
pub(crate) fn signal_group(pgid: i32, signal: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: kill(2) with a negative pid signals a process group; no memory is touched.
    unsafe { libc::kill(-pgid, signal) == 0 }
}

/// Whether a process with this pid exists (and may be signalled by us).
pub fn process_exists(pid: i32) -> bool {
    signal_process(pid, 0).is_ok()
}

/// Whether a signal failed because its process is gone (`ESRCH`).
pub fn no_such_process(error: &io::Error) -> bool {
    error.raw_os_error() == Some(libc::ESRCH)
}

/// Whether continuity runs as root (its effective user).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The user and group ids of the user `name`, from the user table.
pub fn user_ids(name: &str) -> Option<(u32, u32)> {
    let c_name = std::ffi::CString::new(name).ok()?;
    // SAFETY: getpwnam returns a pointer to static storage or null; it is
    // read at once, before any other call could overwrite it.
    let entry = unsafe { libc::getpwnam(c_name.as_ptr()) };
    if entry.is_null() {
        return None;
    }
    // SAFETY: non-null, as checked above.
    Some(unsafe { ((*entry).pw_uid, (*entry).pw_gid) })
}

/// The terminal's width in columns from the kernel (`TIOCGWINSZ`), when
/// `fd` is a terminal that knows it.
pub fn terminal_columns(fd: BorrowedFd<'_>) -> Option<u16> {
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `winsize` into the struct we own.
    let ok = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_col > 0).then_some(size.ws_col)
}

/// A terminal's settings from before [`quiet_control_echo`] changed them.
pub struct TerminalSettings(libc::termios);

/// Turns off the terminal's echo of control keys (`ECHOCTL`, the `^C` a
/// Ctrl-C prints) on `fd`; the settings before, to [`restore_settings`],
/// or `None` when `fd` is no terminal or kept them.
pub fn quiet_control_echo(fd: BorrowedFd<'_>) -> Option<TerminalSettings> {
    // SAFETY: an all-zero termios is a valid value for tcgetattr to fill.
    let mut settings: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: tcgetattr on an open descriptor, into a termios we own.
    if unsafe { libc::tcgetattr(fd.as_raw_fd(), &mut settings) } != 0 {
        return None;
    }
    let saved = settings;
    settings.c_lflag &= !libc::ECHOCTL;
    // SAFETY: tcsetattr on the same descriptor with settings it gave us.
    let set = unsafe { libc::tcsetattr(fd.as_raw_fd(), libc::TCSANOW, &settings) } == 0;
    set.then_some(TerminalSettings(saved))
}

/// Puts back the settings [`quiet_control_echo`] found on `fd`.
pub fn restore_settings(fd: BorrowedFd<'_>, saved: &TerminalSettings) {
    // SAFETY: the settings tcgetattr gave, back on the same terminal.
    unsafe { libc::tcsetattr(fd.as_raw_fd(), libc::TCSANOW, &saved.0) };
}

/// A pidfd for `pid` (pidfd_open(2)): while it is open, the number cannot
/// name another process for us.
pub(crate) fn pidfd_open(pid: i32) -> Option<OwnedFd> {
    if pid <= 0 {
        return None;
    }
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    // SAFETY: a descriptor pidfd_open just gave us, owned by no one else.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Signals the process a pidfd holds (pidfd_send_signal(2)); false if it is gone.
pub(crate) fn pidfd_send_signal(pidfd: BorrowedFd<'_>, signal: i32) -> bool {
    // SAFETY: pidfd_send_signal(2) on an open pidfd; no siginfo.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            signal,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        ) == 0
    }
}

/// Writes `bytes` to a socket without a SIGPIPE should its reader be gone
/// (`MSG_NOSIGNAL`): an `EPIPE` instead, whatever that signal's disposition.
pub(crate) fn send_without_sigpipe(socket: BorrowedFd<'_>, bytes: &[u8]) -> io::Result<usize> {
    // SAFETY: send(2) of a live buffer of `bytes.len()` bytes on an open socket.
    let sent = unsafe {
        libc::send(
            socket.as_raw_fd(),
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_NOSIGNAL,
        )
    };
    usize::try_from(sent).map_err(|_| io::Error::last_os_error())
}

/// Ignores each of `signals` from now on.
pub(crate) fn ignore_signals(signals: &[i32]) {
    for &signal in signals {
        // SAFETY: ignoring a signal installs no handler code.
        unsafe { libc::signal(signal, libc::SIG_IGN) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_pid_reaches_every_process_or_our_own_group() {
        for pid in [0, -1, -42] {
            assert!(signal_process(pid, 0).is_err(), "{pid}");
        }
        assert!(!signal_group(0, 0));
        assert!(!signal_group(1, 0));
        assert!(pidfd_open(0).is_none());
    }

    #[test]
    fn a_process_that_is_gone_is_told_apart() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        assert!(!process_exists(pid));
        let gone = signal_process(pid, 0).unwrap_err();
        assert!(no_such_process(&gone), "{gone}");
        assert!(process_exists(std::process::id() as i32));
    }
}
