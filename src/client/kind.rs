//! Which client runs a cell: continuity's own (`rust`), the real
//! TypeScript SDK hosted in the Rivet app (`ts-sdk`), or the same SDK in
//! headless Chromium (`browser`). One type for the client axis, from the
//! command line to the report, and the name each client gives itself.

use clap::ValueEnum;

/// Which client runs a cell: a value of the client axis, the one type
/// `--client` and the matrix take and the report's `client` names. Its
/// name is its variant's, in kebab case alike for clap and serde (a test
/// holds them together); the doc comments are `--client`'s help.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum ClientKind {
    /// continuity's own client, reproducing the TypeScript SDK's semantics.
    Rust,
    /// The real `sandbox-agent` npm SDK, hosted in a RivetKit actor.
    TsSdk,
    /// The same SDK bundled for the browser, in headless Chromium (local stack only).
    Browser,
}

impl ClientKind {
    /// The name reports carry: `rust`, `ts-sdk`, `browser`.
    pub fn name(self) -> &'static str {
        crate::wire_name::of(&self)
    }

    /// Whether the SDK axis applies to the client: the hosted client loads
    /// each SDK point's module. The browser page bundles the app's pinned
    /// SDK, so `--sdk-version` and `--sdk` do not multiply its cells.
    pub fn hosts_sdk(self) -> bool {
        matches!(self, ClientKind::TsSdk)
    }
}

/// A name that is no client's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{:?} is no client ({})", .0, ClientKind::value_variants().iter().map(|k| k.name()).collect::<Vec<_>>().join(", "))]
pub struct UnknownClient(pub String);

/// A client from its name, as a report writes it.
impl std::str::FromStr for ClientKind {
    type Err = UnknownClient;

    fn from_str(name: &str) -> Result<ClientKind, UnknownClient> {
        ClientKind::value_variants()
            .iter()
            .copied()
            .find(|k| k.name() == name)
            .ok_or_else(|| UnknownClient(name.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_reports_spell_every_client_alike() {
        for kind in ClientKind::value_variants() {
            assert_eq!(kind.to_possible_value().unwrap().get_name(), kind.name());
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.name());
            assert_eq!(kind.name().parse::<ClientKind>(), Ok(*kind));
        }
        assert!("deno".parse::<ClientKind>().is_err());
        let names: Vec<_> = ClientKind::value_variants()
            .iter()
            .map(|k| k.name())
            .collect();
        assert_eq!(names, ["rust", "ts-sdk", "browser"]);
    }
}
