//! Signals as a config file spells them (`"SIGTERM"` or `"TERM"`) and the
//! libc numbers they stand for: the one table that config checks, restart
//! actions, messages and process supervision all read.

use std::fmt;
use std::str::FromStr;

/// The signals a restart may send, in the order error messages list them.
const SIGNALS: &[(&str, i32)] = &[
    ("SIGTERM", libc::SIGTERM),
    ("SIGKILL", libc::SIGKILL),
    ("SIGHUP", libc::SIGHUP),
    ("SIGINT", libc::SIGINT),
    ("SIGQUIT", libc::SIGQUIT),
    ("SIGUSR1", libc::SIGUSR1),
    ("SIGUSR2", libc::SIGUSR2),
];

/// A Unix signal. Parsed from a name in [`SIGNALS`]; displayed as its name
/// (`SIGTERM`), or `signal 34` for a number outside the table (a process may
/// die of any signal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Signal(i32);

impl Signal {
    pub const TERM: Signal = Signal(libc::SIGTERM);
    pub const KILL: Signal = Signal(libc::SIGKILL);
    pub const HUP: Signal = Signal(libc::SIGHUP);
    pub const INT: Signal = Signal(libc::SIGINT);
    /// Pauses a process (the `pause` faults); no restart sends it.
    pub const STOP: Signal = Signal(libc::SIGSTOP);
    /// Wakes a paused process.
    pub const CONT: Signal = Signal(libc::SIGCONT);

    /// Any signal number, e.g. the one an exit status reports.
    pub fn from_number(number: i32) -> Signal {
        Signal(number)
    }

    /// The libc number, for kill(2).
    pub fn number(self) -> i32 {
        self.0
    }
}

impl PartialEq<i32> for Signal {
    fn eq(&self, number: &i32) -> bool {
        self.0 == *number
    }
}

impl FromStr for Signal {
    type Err = UnknownSignal;

    /// `"SIGTERM"`, `"TERM"` and `"sigterm"` all name `SIGTERM`.
    fn from_str(name: &str) -> Result<Signal, UnknownSignal> {
        let upper = name.trim().to_ascii_uppercase();
        let full = if upper.starts_with("SIG") {
            upper
        } else {
            format!("SIG{upper}")
        };
        SIGNALS
            .iter()
            .find(|(known, _)| *known == full)
            .map(|(_, number)| Signal(*number))
            .ok_or_else(|| UnknownSignal {
                given: name.to_string(),
            })
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let paused = [("SIGSTOP", libc::SIGSTOP), ("SIGCONT", libc::SIGCONT)];
        match SIGNALS
            .iter()
            .chain(&paused)
            .find(|(_, number)| *number == self.0)
        {
            Some((name, _)) => f.write_str(name),
            None => write!(f, "signal {}", self.0),
        }
    }
}

/// A signal name the harness does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown signal `{given}`; expected one of {}", known_signals())]
pub struct UnknownSignal {
    pub given: String,
}

/// `SIGTERM, SIGKILL, …` for messages.
pub(crate) fn known_signals() -> String {
    SIGNALS
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_and_without_the_sig_prefix() {
        let parse = |name: &str| name.parse::<Signal>();
        assert_eq!(parse("SIGTERM"), Ok(Signal(libc::SIGTERM)));
        assert_eq!(parse("TERM"), Ok(Signal(libc::SIGTERM)));
        assert_eq!(parse("hup"), Ok(Signal(libc::SIGHUP)));
        assert_eq!(parse("SIGUSR2"), Ok(Signal(libc::SIGUSR2)));
        let e = parse("SIGFOO").unwrap_err();
        assert!(e.to_string().contains("SIGFOO"), "{e}");
        assert!(e.to_string().contains("SIGQUIT"), "{e}");
        assert_eq!(Signal::from_number(libc::SIGINT).to_string(), "SIGINT");
    }

    #[test]
    fn a_number_outside_the_table_is_shown_as_a_number() {
        assert_eq!(Signal::from_number(34).to_string(), "signal 34");
        assert_eq!(Signal::TERM, libc::SIGTERM);
        assert_eq!(Signal::KILL.number(), libc::SIGKILL);
    }
}
