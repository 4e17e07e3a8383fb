//! The first stage: `continuity.toml` exactly as written. Serde only, every
//! table closed to unknown keys, spans kept wherever the second stage may
//! need to point at a line. Integers are `i64` so that a negative timeout
//! reaches the checks (and their message) instead of failing in serde.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use std::marker::PhantomData;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    #[serde(default)]
    pub run: Option<RawRun>,
    #[serde(default)]
    pub targets: Option<Ordered<Spanned<RawTarget>>>,
    pub faults: Option<Spanned<RawFaults>>,
}

/// `[faults]`: a fault proxy in front of the base URL, and more hops.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFaults {
    pub base_url_hop: Option<Spanned<String>>,
    #[serde(default)]
    pub hops: Option<Ordered<Spanned<RawHop>>>,
}

/// `[faults.hops.NAME]`: a proxy listening on `listen`, forwarding to `upstream`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHop {
    pub listen: Spanned<String>,
    pub upstream: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRun {
    pub base_url: Option<Spanned<String>>,
    pub agent: Option<Spanned<String>>,
    pub timeout_ms: Option<Spanned<i64>>,
    pub overall_timeout_ms: Option<Spanned<i64>>,
    pub hang_grace_ms: Option<Spanned<i64>>,
    pub repeat: Option<Spanned<i64>>,
    /// One store name, or a list of them (the persistence axis).
    pub persist: Option<Spanned<toml::Value>>,
    pub token_env: Option<Spanned<String>>,
    pub secret_env: Option<Spanned<Vec<Spanned<String>>>>,
    pub expect: Option<Spanned<String>>,
    pub retries: Option<Spanned<i64>>,
    pub seed: Option<Spanned<i64>>,
    pub jobs: Option<Spanned<i64>>,
    pub server_bin: Option<Spanned<Vec<Spanned<String>>>>,
    pub sdk: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub headers: Option<Ordered<Spanned<String>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTarget {
    pub restart: Option<Spanned<RawRestart>>,
    /// A network fault instead of a restart: `hop`, `toxic`, `hold_ms` and
    /// the toxic's own parameters, so an open table.
    pub fault: Option<Spanned<toml::Table>>,
    pub ready: Option<Spanned<RawReady>>,
    pub ready_timeout_ms: Option<Spanned<i64>>,
    pub independent: Option<bool>,
}

/// One table for every restart kind, so a user who writes two kinds gets
/// "choose one" rather than serde's "data did not match any variant".
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRestart {
    pub managed: Option<Spanned<RawManaged>>,
    pub command: Option<Spanned<String>>,
    pub timeout_ms: Option<Spanned<i64>>,
    pub signal: Option<Spanned<String>>,
    pub pid_file: Option<Spanned<String>>,
    pub http: Option<Spanned<String>>,
    pub method: Option<Spanned<String>>,
    pub expect_status: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawManaged {
    pub command: Spanned<Vec<String>>,
    #[serde(default)]
    pub env: Option<Ordered<String>>,
    pub cwd: Option<String>,
    pub log: Option<String>,
    pub stop_signal: Option<Spanned<String>>,
    pub grace_ms: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawReady {
    pub http: Option<Spanned<String>>,
    pub status: Option<Spanned<i64>>,
    pub interval_ms: Option<Spanned<i64>>,
    pub tcp: Option<Spanned<String>>,
    pub delay_ms: Option<Spanned<i64>>,
}

/// A TOML table read as a list of entries in file order: targets restart
/// in the order the user wrote them, headers are sent in that order.
#[derive(Debug)]
pub(super) struct Ordered<T>(pub Vec<(String, T)>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OrderedVisitor<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for OrderedVisitor<T> {
            type Value = Ordered<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, T>()? {
                    entries.push((key, value));
                }
                Ok(Ordered(entries))
            }
        }

        deserializer.deserialize_map(OrderedVisitor(PhantomData))
    }
}
