//! What a toxic is: Toxiproxy's toxics with their names, parameters and
//! units (`latency`, `bandwidth`, `slow_close`, `timeout`, `reset_peer`,
//! `slicer`, `limit_data`), plus `partition` and `down`, each checked from
//! what a user wrote (`name` + parameters) into a [`ToxicSpec`]. A leaf of
//! the fault proxy: the proxy applies specs, it never parses them.
//!
//! Over 400 lines on purpose: each toxic's name, parameters, units and
//! bounds are one table read by one checker (`params_of`, `parse_toxic`,
//! `toxic_of`, `Params`), and the tests below pin every refusal's message to
//! it.

use std::fmt;
use std::time::Duration;

/// Which way the data a toxic acts on flows (Toxiproxy's `stream`):
/// `upstream` from the client to the server, `downstream` back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    Upstream,
    Downstream,
}

impl Stream {
    pub fn as_str(self) -> &'static str {
        match self {
            Stream::Upstream => "upstream",
            Stream::Downstream => "downstream",
        }
    }
}

/// One toxic and its parameters, in Toxiproxy's units (milliseconds,
/// KB/s, bytes; the slicer's `delay` in microseconds).
#[derive(Debug, Clone, PartialEq)]
pub enum Toxic {
    /// Each chunk waits `latency` ± `jitter` from when it was read; order is kept.
    Latency { latency: Duration, jitter: Duration },
    /// At most `rate` KB/s.
    Bandwidth { rate: u64 },
    /// The end of the stream (FIN) passes `delay` late.
    SlowClose { delay: Duration },
    /// Data is dropped; the connection closes after `timeout` (never when
    /// zero), and when the toxic is removed (the stream has a hole).
    Timeout { timeout: Duration },
    /// The first chunk after the toxic applies is dropped and, `timeout`
    /// later, the connection is reset (TCP RST, `SO_LINGER` 0).
    ResetPeer { timeout: Duration },
    /// Chunks cut into pieces of about `average_size` ± `size_variation`
    /// bytes, `delay` apart.
    Slicer {
        average_size: usize,
        size_variation: usize,
        delay: Duration,
    },
    /// The connection closes once `bytes` have passed.
    LimitData { bytes: u64 },
    /// New connections hang (nothing reaches the server), open ones freeze
    /// both ways; what was held flows on when the partition heals.
    Partition,
    /// Open connections are closed, new ones refused (the listener closes).
    Down,
    /// A connection silent both ways for `idle` is closed (a load
    /// balancer's idle timeout: a held POST, a quiet stream).
    IdleCut { idle: Duration },
}

impl Toxic {
    /// Toxiproxy's name of the toxic.
    pub fn name(&self) -> &'static str {
        match self {
            Toxic::Latency { .. } => "latency",
            Toxic::Bandwidth { .. } => "bandwidth",
            Toxic::SlowClose { .. } => "slow_close",
            Toxic::Timeout { .. } => "timeout",
            Toxic::ResetPeer { .. } => "reset_peer",
            Toxic::Slicer { .. } => "slicer",
            Toxic::LimitData { .. } => "limit_data",
            Toxic::Partition => "partition",
            Toxic::Down => "down",
            Toxic::IdleCut { .. } => "idle_cut",
        }
    }

    /// Whether the toxic takes the whole hop, both ways (no `stream`).
    pub(crate) fn is_hop_wide(&self) -> bool {
        matches!(self, Toxic::Partition | Toxic::Down | Toxic::IdleCut { .. })
    }
}

/// Every toxic name, for listings and "did you mean".
pub const TOXIC_NAMES: [&str; 10] = [
    "latency",
    "bandwidth",
    "slow_close",
    "timeout",
    "reset_peer",
    "slicer",
    "limit_data",
    "partition",
    "down",
    "idle_cut",
];

/// A toxic as the proxy applies it: which way, and to what share of the
/// connections (`toxicity`, 0 to 1, drawn once per connection).
#[derive(Debug, Clone, PartialEq)]
pub struct ToxicSpec {
    pub toxic: Toxic,
    /// `None` for the hop-wide toxics (`partition`, `down`).
    pub stream: Option<Stream>,
    pub toxicity: f64,
}

impl ToxicSpec {
    /// `toxic` on `stream` for every connection.
    pub fn new(toxic: Toxic, stream: Stream) -> Self {
        let stream = (!toxic.is_hop_wide()).then_some(stream);
        ToxicSpec {
            toxic,
            stream,
            toxicity: 1.0,
        }
    }

    pub fn name(&self) -> &'static str {
        self.toxic.name()
    }

    /// `reset_peer downstream (timeout 0 ms)`, `partition`, `latency
    /// upstream (latency 300 ms, jitter 0 ms, toxicity 0.5)`.
    pub fn describe(&self) -> String {
        let mut params: Vec<String> = match &self.toxic {
            Toxic::Latency { latency, jitter } => vec![
                format!("latency {} ms", latency.as_millis()),
                format!("jitter {} ms", jitter.as_millis()),
            ],
            Toxic::Bandwidth { rate } => vec![format!("rate {rate} KB/s")],
            Toxic::SlowClose { delay } => vec![format!("delay {} ms", delay.as_millis())],
            Toxic::Timeout { timeout } | Toxic::ResetPeer { timeout } => {
                vec![format!("timeout {} ms", timeout.as_millis())]
            }
            Toxic::Slicer {
                average_size,
                size_variation,
                delay,
            } => vec![
                format!("average_size {average_size}"),
                format!("size_variation {size_variation}"),
                format!("delay {} µs", delay.as_micros()),
            ],
            Toxic::LimitData { bytes } => vec![format!("bytes {bytes}")],
            Toxic::IdleCut { idle } => vec![format!("idle {} ms", idle.as_millis())],
            Toxic::Partition | Toxic::Down => Vec::new(),
        };
        if self.toxicity < 1.0 {
            params.push(format!("toxicity {}", self.toxicity));
        }
        let mut text = self.name().to_string();
        if let Some(stream) = self.stream {
            text.push(' ');
            text.push_str(stream.as_str());
        }
        if !params.is_empty() {
            text.push_str(&format!(" ({})", params.join(", ")));
        }
        text
    }
}

/// A parameter as written: TOML and the command line give integers,
/// floats (`toxicity`) and strings (`stream`).
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    Int(i64),
    Float(f64),
    Text(String),
}

impl fmt::Display for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Param::Int(i) => write!(f, "{i}"),
            Param::Float(x) => write!(f, "{x}"),
            Param::Text(s) => write!(f, "{s:?}"),
        }
    }
}

/// Why a toxic was rejected; `key` is the parameter (empty for the name).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct ToxicError {
    pub key: String,
    pub reason: String,
}

fn reject(key: &str, reason: impl Into<String>) -> ToxicError {
    ToxicError {
        key: key.to_string(),
        reason: reason.into(),
    }
}

/// The largest duration a toxic takes: longer would outlast any phase.
const MAX_MS: i64 = 10 * 60 * 1000;
/// The slicer's delay between pieces, in microseconds: at most 10 s.
const MAX_SLICER_DELAY_US: i64 = 10_000_000;
/// Bandwidth, KB/s: at least 1, at most 10 GB/s.
const MAX_RATE: i64 = 10_000_000;
/// The slicer's pieces: at most 1 MiB.
const MAX_SLICE: i64 = 1 << 20;
/// `limit_data`: at most 1 TiB.
const MAX_BYTES: i64 = 1 << 40;

/// The parameters each toxic takes besides `stream` and `toxicity`.
fn params_of(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "latency" => &["latency", "jitter"],
        "bandwidth" => &["rate"],
        "slow_close" => &["delay"],
        "timeout" | "reset_peer" => &["timeout"],
        "slicer" => &["average_size", "size_variation", "delay"],
        "limit_data" => &["bytes"],
        "partition" | "down" => &[],
        "idle_cut" => &["idle"],
        _ => return None,
    })
}

/// The known name closest to `wanted`, when one is close enough to be a typo.
pub fn closest<'a>(wanted: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known
        .into_iter()
        .map(|k| (edit_distance(wanted, k), k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Checks a toxic as written: its name, its parameters (each known,
/// numeric, in range; missing ones take Toxiproxy's defaults, which are
/// zero), `stream` (`downstream` by default, as in Toxiproxy) and
/// `toxicity` (1 by default).
pub fn parse_toxic(name: &str, params: &[(String, Param)]) -> Result<ToxicSpec, ToxicError> {
    let Some(known) = params_of(name) else {
        let hint = closest(name, TOXIC_NAMES)
            .map(|c| format!(" (did you mean `{c}`?)"))
            .unwrap_or_default();
        return Err(reject(
            "",
            format!(
                "unknown toxic `{name}`{hint}; known: {}",
                TOXIC_NAMES.join(", ")
            ),
        ));
    };
    check_keys(name, known, params)?;
    let params = Params(params);
    let toxic = toxic_of(name, &params)?;
    let stream = match params.get("stream") {
        None => Stream::Downstream,
        Some(Param::Text(s)) if s == "upstream" => Stream::Upstream,
        Some(Param::Text(s)) if s == "downstream" => Stream::Downstream,
        Some(v) => {
            return Err(reject(
                "stream",
                format!("`stream` = {v}: expected \"upstream\" or \"downstream\""),
            ))
        }
    };
    let toxicity = match params.get("toxicity") {
        None => 1.0,
        Some(Param::Float(x)) if (0.0..=1.0).contains(x) => *x,
        Some(Param::Int(i)) if (0..=1).contains(i) => *i as f64,
        Some(v) => {
            return Err(reject(
                "toxicity",
                format!("`toxicity` = {v}: expected a share of the connections from 0 to 1"),
            ))
        }
    };
    if matches!(toxic, Toxic::Down) && toxicity < 1.0 {
        return Err(reject(
            "toxicity",
            "`down` takes the whole hop: its listener closes for every connection, so it has no `toxicity`",
        ));
    }
    let mut spec = ToxicSpec::new(toxic, stream);
    spec.toxicity = toxicity;
    Ok(spec)
}

/// Every parameter given is one the toxic `name` takes (its `known` ones,
/// `toxicity`, and `stream` unless it takes the whole hop).
fn check_keys(name: &str, known: &[&str], params: &[(String, Param)]) -> Result<(), ToxicError> {
    let hop_wide = matches!(name, "partition" | "down" | "idle_cut");
    for (key, _) in params {
        let allowed =
            known.contains(&key.as_str()) || key == "toxicity" || (key == "stream" && !hop_wide);
        if !allowed {
            let reason = if key == "stream" {
                format!("`{name}` takes the whole hop, both ways: it has no `stream`")
            } else {
                let mut takes: Vec<&str> = known.to_vec();
                if !hop_wide {
                    takes.push("stream");
                }
                takes.push("toxicity");
                format!(
                    "`{key}` is not a parameter of `{name}` (it takes: {})",
                    takes.join(", ")
                )
            };
            return Err(reject(key, reason));
        }
    }
    Ok(())
}

/// A toxic's parameters as written, read by name.
struct Params<'a>(&'a [(String, Param)]);

impl Params<'_> {
    fn get(&self, key: &str) -> Option<&Param> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// A whole number from `min` to `max`; `min` (at least 0) when missing.
    fn int(&self, key: &str, min: i64, max: i64, unit: &str) -> Result<i64, ToxicError> {
        match self.get(key) {
            None => Ok(min.max(0)),
            Some(Param::Int(v)) if (min..=max).contains(v) => Ok(*v),
            Some(v) => Err(reject(
                key,
                format!("`{key}` = {v}: expected a whole number of {unit} from {min} to {max}"),
            )),
        }
    }

    fn ms(&self, key: &str) -> Result<Duration, ToxicError> {
        self.int(key, 0, MAX_MS, "milliseconds")
            .map(|v| Duration::from_millis(v as u64))
    }
}

/// The toxic `name` (one of [`TOXIC_NAMES`]) with its own parameters.
fn toxic_of(name: &str, params: &Params<'_>) -> Result<Toxic, ToxicError> {
    let toxic = match name {
        "latency" => Toxic::Latency {
            latency: params.ms("latency")?,
            jitter: params.ms("jitter")?,
        },
        "bandwidth" => Toxic::Bandwidth {
            rate: match params.get("rate") {
                None => return Err(reject("rate", "`bandwidth` needs `rate`, in KB/s")),
                Some(_) => params.int("rate", 1, MAX_RATE, "KB/s")? as u64,
            },
        },
        "slow_close" => Toxic::SlowClose {
            delay: params.ms("delay")?,
        },
        "timeout" => Toxic::Timeout {
            timeout: params.ms("timeout")?,
        },
        "reset_peer" => Toxic::ResetPeer {
            timeout: params.ms("timeout")?,
        },
        "slicer" => {
            let average_size = match params.get("average_size") {
                None => {
                    return Err(reject(
                        "average_size",
                        "`slicer` needs `average_size`, in bytes",
                    ))
                }
                Some(_) => params.int("average_size", 1, MAX_SLICE, "bytes")?,
            };
            let size_variation = params.int("size_variation", 0, average_size - 1, "bytes")?;
            Toxic::Slicer {
                average_size: average_size as usize,
                size_variation: size_variation as usize,
                delay: Duration::from_micros(params.int(
                    "delay",
                    0,
                    MAX_SLICER_DELAY_US,
                    "microseconds",
                )? as u64),
            }
        }
        "limit_data" => Toxic::LimitData {
            bytes: params.int("bytes", 0, MAX_BYTES, "bytes")? as u64,
        },
        "partition" => Toxic::Partition,
        // A timeout of zero would cut every connection at once: at least 1 ms.
        "idle_cut" => Toxic::IdleCut {
            idle: match params.get("idle") {
                None => return Err(reject("idle", "`idle_cut` needs `idle`, in milliseconds")),
                Some(_) => {
                    Duration::from_millis(params.int("idle", 1, MAX_MS, "milliseconds")? as u64)
                }
            },
        },
        _ => Toxic::Down,
    };
    Ok(toxic)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pairs: &[(&str, Param)]) -> Vec<(String, Param)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn toxiproxy_names_parameters_and_defaults() {
        let spec = parse_toxic(
            "latency",
            &p(&[("latency", Param::Int(300)), ("jitter", Param::Int(20))]),
        )
        .unwrap();
        assert_eq!(
            spec.toxic,
            Toxic::Latency {
                latency: Duration::from_millis(300),
                jitter: Duration::from_millis(20)
            }
        );
        assert_eq!(
            (spec.stream, spec.toxicity),
            (Some(Stream::Downstream), 1.0)
        );
        assert_eq!(
            spec.describe(),
            "latency downstream (latency 300 ms, jitter 20 ms)"
        );
        let reset = parse_toxic(
            "reset_peer",
            &p(&[("stream", Param::Text("upstream".into()))]),
        )
        .unwrap();
        assert_eq!(reset.describe(), "reset_peer upstream (timeout 0 ms)");
        let slicer = parse_toxic(
            "slicer",
            &p(&[
                ("average_size", Param::Int(64)),
                ("size_variation", Param::Int(16)),
                ("delay", Param::Int(500)),
            ]),
        )
        .unwrap();
        assert_eq!(
            slicer.toxic,
            Toxic::Slicer {
                average_size: 64,
                size_variation: 16,
                delay: Duration::from_micros(500)
            }
        );
        let part = parse_toxic("partition", &p(&[("toxicity", Param::Float(0.5))])).unwrap();
        assert_eq!(
            (part.stream, part.describe().as_str()),
            (None, "partition (toxicity 0.5)")
        );
    }

    #[test]
    fn bad_toxics_say_what_is_wrong() {
        let e = parse_toxic("reset_per", &[]).unwrap_err();
        assert!(
            e.reason
                .contains("unknown toxic `reset_per` (did you mean `reset_peer`?)"),
            "{e}"
        );
        let e = parse_toxic("latency", &p(&[("latency", Param::Int(-5))])).unwrap_err();
        assert_eq!(e.key, "latency");
        assert!(e.reason.contains("from 0 to 600000"), "{e}");
        let e = parse_toxic("latency", &p(&[("latency", Param::Int(i64::MAX))])).unwrap_err();
        assert_eq!(e.key, "latency");
        let e = parse_toxic("bandwidth", &[]).unwrap_err();
        assert!(e.reason.contains("needs `rate`"), "{e}");
        let e = parse_toxic("bandwidth", &p(&[("rate", Param::Int(0))])).unwrap_err();
        assert_eq!(e.key, "rate");
        let e = parse_toxic(
            "slicer",
            &p(&[
                ("average_size", Param::Int(8)),
                ("size_variation", Param::Int(8)),
            ]),
        )
        .unwrap_err();
        assert_eq!(e.key, "size_variation");
        let e = parse_toxic("timeout", &p(&[("delay", Param::Int(1))])).unwrap_err();
        assert!(e.reason.contains("takes: timeout, stream, toxicity"), "{e}");
        let e = parse_toxic(
            "partition",
            &p(&[("stream", Param::Text("upstream".into()))]),
        )
        .unwrap_err();
        assert!(e.reason.contains("no `stream`"), "{e}");
        let e =
            parse_toxic("latency", &p(&[("stream", Param::Text("sideways".into()))])).unwrap_err();
        assert_eq!(e.key, "stream");
        let e = parse_toxic("latency", &p(&[("toxicity", Param::Float(1.5))])).unwrap_err();
        assert_eq!(e.key, "toxicity");
        let e = parse_toxic("down", &p(&[("toxicity", Param::Float(0.5))])).unwrap_err();
        assert_eq!(e.key, "toxicity");
        let e = parse_toxic("latency", &p(&[("latency", Param::Text("1s".into()))])).unwrap_err();
        assert!(e.reason.contains("\"1s\""), "{e}");
    }

    /// An idle cut of zero or below would close every connection at once.
    #[test]
    fn idle_cut_takes_the_hop_and_a_positive_limit() {
        let spec = parse_toxic("idle_cut", &p(&[("idle", Param::Int(2000))])).unwrap();
        assert_eq!(
            spec.toxic,
            Toxic::IdleCut {
                idle: Duration::from_millis(2000)
            }
        );
        assert_eq!(
            (spec.stream, spec.describe().as_str()),
            (None, "idle_cut (idle 2000 ms)")
        );
        for bad in [0, -1] {
            let e = parse_toxic("idle_cut", &p(&[("idle", Param::Int(bad))])).unwrap_err();
            assert_eq!(e.key, "idle");
            assert!(e.reason.contains("from 1 to 600000"), "{e}");
        }
        let e = parse_toxic("idle_cut", &[]).unwrap_err();
        assert!(e.reason.contains("needs `idle`"), "{e}");
        let e = parse_toxic(
            "idle_cut",
            &p(&[("stream", Param::Text("upstream".into()))]),
        )
        .unwrap_err();
        assert!(e.reason.contains("no `stream`"), "{e}");
    }
}
