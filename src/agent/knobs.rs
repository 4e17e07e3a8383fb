//! The agent's fault knobs: read once from the environment, overridden per
//! prompt by `[[…]]` directives in the prompt text.

use crate::errors::Invalid;

/// A misbehaviour for one turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Never answer (until `session/cancel`).
    Hang,
    /// Exit the process with this code after the chunk, before the answer.
    Exit(i32),
    /// Write a line that is not JSON before the answer.
    Malformed,
}

/// What the agent does on a turn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Knobs {
    pub delay_ms: u64,
    pub fault: Option<Fault>,
    pub load_session: bool,
    /// `[[once:KEY]]`: this prompt's fault and delay apply only the first
    /// time KEY is seen by this server's agents (a pass on retry, made on purpose).
    pub once: Option<String>,
    /// `[[stream:K/N]]`: K `agent_message_chunk`s spread over N ms before the answer.
    pub stream: Option<Stream>,
    /// `[[turn:ID]]`: the tag the streamed chunks (and the sent record) carry.
    pub turn: Option<String>,
    /// `[[long:TOTAL/GAP]]`: the turn lasts TOTAL ms, with a chunk every
    /// GAP ms or (`idle`) none until its answer.
    pub long: Option<Long>,
}

/// A long turn: how long it lasts and what the agent says meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Long {
    pub total_ms: u64,
    pub gap: Gap,
}

/// What a long turn sends while it lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gap {
    /// A chunk every this many milliseconds.
    Every(u64),
    /// Nothing until the answer: a stream and a POST both silent.
    Idle,
}

/// The longest a long turn may last: 10 minutes (a real 310 s turn fits).
const MAX_LONG_MS: u64 = 10 * 60 * 1000;

impl Long {
    /// `TOTAL/GAP` (milliseconds, GAP ≤ TOTAL) or `TOTAL/idle`.
    pub(crate) fn parse(text: &str) -> Result<Long, Invalid> {
        let (total, gap) = text.trim().split_once('/').ok_or_else(|| {
            Invalid(format!(
                "expected TOTAL_MS/GAP_MS or TOTAL_MS/idle, got {text:?}"
            ))
        })?;
        let total_ms: u64 = total
            .trim()
            .parse()
            .ok()
            .filter(|ms| (1..=MAX_LONG_MS).contains(ms))
            .ok_or_else(|| {
                Invalid(format!(
                    "the turn's length must be 1..={MAX_LONG_MS} ms, got {total:?}"
                ))
            })?;
        let gap = match gap.trim() {
            "idle" => Gap::Idle,
            every => Gap::Every(
                every
                    .parse()
                    .ok()
                    .filter(|ms| (1..=total_ms).contains(ms))
                    .ok_or_else(|| {
                        Invalid(format!(
                            "the gap between chunks must be 1..={total_ms} ms or `idle`, got {every:?}"
                        ))
                    })?,
            ),
        };
        Ok(Long { total_ms, gap })
    }

    /// The chunks it streams (K every GAP ms over TOTAL), or `None` when idle.
    pub(crate) fn stream(self) -> Option<Stream> {
        match self.gap {
            Gap::Idle => None,
            Gap::Every(gap) => Some(Stream {
                chunks: u32::try_from(self.total_ms / gap)
                    .unwrap_or(u32::MAX)
                    .clamp(1, 10_000),
                over_ms: self.total_ms,
            }),
        }
    }
}

/// A streamed turn: `chunks` chunks, evenly over `over_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stream {
    pub chunks: u32,
    pub over_ms: u64,
}

impl Stream {
    /// `K/N`: K chunks (1..=10000) over N milliseconds.
    pub(crate) fn parse(text: &str) -> Result<Stream, Invalid> {
        let (k, n) = text
            .trim()
            .split_once('/')
            .ok_or_else(|| Invalid(format!("expected CHUNKS/MS, got {text:?}")))?;
        let chunks: u32 = k
            .trim()
            .parse()
            .ok()
            .filter(|k| (1..=10_000).contains(k))
            .ok_or_else(|| Invalid(format!("chunks must be 1..=10000, got {k:?}")))?;
        let over_ms = n
            .trim()
            .parse()
            .map_err(|_| Invalid(format!("duration must be milliseconds, got {n:?}")))?;
        Ok(Stream { chunks, over_ms })
    }
}

impl Fault {
    fn parse(text: &str) -> Result<Fault, Invalid> {
        match text.trim() {
            "hang" => Ok(Fault::Hang),
            "malformed" => Ok(Fault::Malformed),
            other => {
                match other.strip_prefix("exit:") {
                    Some(code) => code.trim().parse().map(Fault::Exit).map_err(|_| {
                        Invalid(format!("exit code must be an integer, got {code:?}"))
                    }),
                    None => Err(Invalid(format!(
                        "unknown fault {other:?} (expected hang, exit:CODE or malformed)"
                    ))),
                }
            }
        }
    }
}

impl Knobs {
    /// Reads `CONTINUITY_AGENT_DELAY_MS`, `CONTINUITY_AGENT_FAULT`,
    /// `CONTINUITY_AGENT_LOAD_SESSION`, `CONTINUITY_AGENT_STREAM`,
    /// `CONTINUITY_AGENT_LONG`.
    pub(crate) fn from_env() -> Result<Knobs, Invalid> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    pub(crate) fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Knobs, Invalid> {
        let delay_ms = match var("CONTINUITY_AGENT_DELAY_MS") {
            Some(v) if !v.trim().is_empty() => v.trim().parse().map_err(|_| {
                Invalid(format!(
                    "CONTINUITY_AGENT_DELAY_MS must be milliseconds, got {v:?}"
                ))
            })?,
            _ => 0,
        };
        let fault = match var("CONTINUITY_AGENT_FAULT") {
            Some(v) if !v.trim().is_empty() => Some(
                Fault::parse(&v).map_err(|e| Invalid(format!("CONTINUITY_AGENT_FAULT: {e}")))?,
            ),
            _ => None,
        };
        let stream = match var("CONTINUITY_AGENT_STREAM") {
            Some(v) if !v.trim().is_empty() => Some(
                Stream::parse(&v).map_err(|e| Invalid(format!("CONTINUITY_AGENT_STREAM: {e}")))?,
            ),
            _ => None,
        };
        let long = match var("CONTINUITY_AGENT_LONG") {
            Some(v) if !v.trim().is_empty() => {
                Some(Long::parse(&v).map_err(|e| Invalid(format!("CONTINUITY_AGENT_LONG: {e}")))?)
            }
            _ => None,
        };
        let load_session = matches!(
            var("CONTINUITY_AGENT_LOAD_SESSION")
                .as_deref()
                .map(str::trim),
            Some("1" | "true" | "yes")
        );
        Ok(Knobs {
            delay_ms,
            fault,
            load_session,
            once: None,
            stream,
            turn: None,
            long,
        })
    }

    /// These knobs with the prompt's directives applied; unknown directives are ignored.
    pub(crate) fn for_prompt(&self, text: &str) -> Knobs {
        let mut turn = self.clone();
        let mut rest = text;
        while let Some(start) = rest.find("[[") {
            let Some(len) = rest[start + 2..].find("]]") else {
                break;
            };
            let directive = &rest[start + 2..start + 2 + len];
            if let Some(key) = directive.strip_prefix("once:") {
                if !key.trim().is_empty() {
                    turn.once = Some(key.trim().to_string());
                }
            } else if let Some(stream) = directive.strip_prefix("stream:") {
                if let Ok(stream) = Stream::parse(stream) {
                    turn.stream = Some(stream);
                }
            } else if let Some(long) = directive.strip_prefix("long:") {
                if let Ok(long) = Long::parse(long) {
                    turn.long = Some(long);
                }
            } else if let Some(tag) = directive.strip_prefix("turn:") {
                if !tag.trim().is_empty() {
                    turn.turn = Some(tag.trim().to_string());
                }
            } else if let Some(ms) = directive.strip_prefix("delay:") {
                if let Ok(ms) = ms.trim().parse() {
                    turn.delay_ms = ms;
                }
            } else if let Ok(fault) = Fault::parse(directive) {
                turn.fault = Some(fault);
            }
            rest = &rest[start + 2 + len + 2..];
        }
        turn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn reads_the_environment() {
        let k = Knobs::from_vars(env(&[
            ("CONTINUITY_AGENT_DELAY_MS", "250"),
            ("CONTINUITY_AGENT_FAULT", "exit:3"),
            ("CONTINUITY_AGENT_LOAD_SESSION", "1"),
        ]))
        .unwrap();
        assert_eq!(
            k,
            Knobs {
                delay_ms: 250,
                fault: Some(Fault::Exit(3)),
                load_session: true,
                once: None,
                stream: None,
                turn: None,
                long: None,
            }
        );
    }

    #[test]
    fn rejects_bad_values_with_the_variable_name() {
        let e = Knobs::from_vars(env(&[("CONTINUITY_AGENT_FAULT", "explode")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("CONTINUITY_AGENT_FAULT") && e.contains("explode"),
            "{e}"
        );
        let e = Knobs::from_vars(env(&[("CONTINUITY_AGENT_DELAY_MS", "soon")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("CONTINUITY_AGENT_DELAY_MS"), "{e}");
    }

    #[test]
    fn directives_override_for_one_prompt() {
        let base = Knobs::default();
        assert_eq!(
            base.for_prompt("please [[delay:40]] then [[hang]]")
                .delay_ms,
            40
        );
        assert_eq!(base.for_prompt("[[hang]]").fault, Some(Fault::Hang));
        assert_eq!(base.for_prompt("[[exit:7]]").fault, Some(Fault::Exit(7)));
        assert_eq!(
            base.for_prompt("[[malformed]]").fault,
            Some(Fault::Malformed)
        );
        assert_eq!(base.for_prompt("plain [[nonsense]] [[unclosed").fault, None);
        let once = base.for_prompt("[[exit:3]] [[once:first-try]]");
        assert_eq!(once.once.as_deref(), Some("first-try"));
        assert_eq!(once.fault, Some(Fault::Exit(3)));
        assert_eq!(base.for_prompt("[[once: ]]").once, None);
        let long = base.for_prompt("go [[stream:20/3000]] [[turn:long-1]]");
        assert_eq!(
            (long.stream, long.turn.as_deref()),
            (
                Some(Stream {
                    chunks: 20,
                    over_ms: 3000
                }),
                Some("long-1")
            )
        );
        assert_eq!(base.for_prompt("[[stream:0/10]] [[stream:x]]").stream, None);
    }

    #[test]
    fn the_stream_variable_is_checked() {
        let k = Knobs::from_vars(env(&[("CONTINUITY_AGENT_STREAM", "5/100")])).unwrap();
        assert_eq!(
            k.stream,
            Some(Stream {
                chunks: 5,
                over_ms: 100
            })
        );
        let e = Knobs::from_vars(env(&[("CONTINUITY_AGENT_STREAM", "lots")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("CONTINUITY_AGENT_STREAM"), "{e}");
    }

    #[test]
    fn a_long_turn_lasts_its_length_with_chunks_or_idle() {
        let base = Knobs::default();
        let chatty = base.for_prompt("work [[long:4000/500]]").long.unwrap();
        assert_eq!(
            chatty.stream(),
            Some(Stream {
                chunks: 8,
                over_ms: 4000
            })
        );
        let idle = base.for_prompt("work [[long:4000/idle]]").long.unwrap();
        assert_eq!(
            (idle.total_ms, idle.gap, idle.stream()),
            (4000, Gap::Idle, None)
        );
        for bad in [
            "[[long:0/idle]]",
            "[[long:100/200]]",
            "[[long:x/idle]]",
            "[[long:5]]",
        ] {
            assert_eq!(base.for_prompt(bad).long, None, "{bad}");
        }
        let e = Knobs::from_vars(env(&[("CONTINUITY_AGENT_LONG", "300000/0")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("CONTINUITY_AGENT_LONG") && e.contains("gap"),
            "{e}"
        );
        let k = Knobs::from_vars(env(&[("CONTINUITY_AGENT_LONG", "310000/idle")])).unwrap();
        assert_eq!(k.long.map(|l| l.total_ms), Some(310_000));
    }
}
