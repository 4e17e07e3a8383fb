//! Which client runs a cell: continuity's own (`rust`), the real
//! TypeScript SDK hosted in the Rivet app (`ts-sdk`), or the same SDK in
//! headless Chromium (`browser`). One type for the client axis, from the
//! command line (`--client` lists [`ClientKind::all`] with their help) to
//! the report, which names a cell's client by it, and the expectations,
//! which match their `client` glob against it. Each name is its variant's
//! in kebab case, as serde writes it: spelled nowhere else.

use serde::{Deserialize, Serialize};

crate::listed_enum! {
    /// Which client runs a cell: a value of the client axis.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum ClientKind {
        /// continuity's SDK-faithful Rust client.
        Rust,
        /// The real TypeScript SDK, hosted in the local stack's Rivet app.
        TsSdk,
        /// The same SDK bundled for the browser, in a page of headless Chromium.
        Browser,
    }
}

impl ClientKind {
    /// Every client, in `--client`'s order; the first is continuity's own,
    /// which a cell naming no client (a run with no client axis) ran.
    pub fn all() -> &'static [ClientKind] {
        <ClientKind as crate::wire_name::Listed>::VARIANTS
    }

    /// The name reports carry: `rust`, `ts-sdk`, `browser`.
    pub fn name(self) -> &'static str {
        crate::wire_name::of(&self)
    }

    /// What `--client NAME` runs, as its help says it.
    pub fn help(self) -> &'static str {
        match self {
            ClientKind::Rust => {
                "continuity's own client, reproducing the TypeScript SDK's semantics"
            }
            ClientKind::TsSdk => "The real `sandbox-agent` npm SDK, hosted in a RivetKit actor",
            ClientKind::Browser => {
                "The same SDK bundled for the browser, in headless Chromium (local stack only)"
            }
        }
    }

    /// Whether the SDK axis applies to the client: the hosted client loads
    /// each SDK point's module. The browser page bundles the app's pinned
    /// SDK, so `--sdk-version` and `--sdk` do not multiply its cells.
    pub fn hosts_sdk(self) -> bool {
        matches!(self, ClientKind::TsSdk)
    }

    /// Whether the client runs the real TypeScript SDK (hosted or in the
    /// browser), so its cells are compared with continuity's own (and it
    /// makes sandboxes through the stack's `SandboxProvider`, which
    /// continuity's own client has no call for).
    pub fn runs_real_sdk(self) -> bool {
        // A match, not `!matches!(Rust)`: a new client says which it is.
        match self {
            ClientKind::Rust => false,
            ClientKind::TsSdk | ClientKind::Browser => true,
        }
    }

    /// Whether the client runs in a page of headless Chromium: the local
    /// stack prepares Chromium and serves the page, its `fetch` has no
    /// response-headers timeout to lower, and it keeps its sessions in
    /// IndexedDB or the SDK's memory only.
    pub fn runs_in_a_page(self) -> bool {
        matches!(self, ClientKind::Browser)
    }

    /// The part of a cell's folder and key that keeps its cells apart from
    /// the other clients' at the same index (every client runs the same
    /// matrix in one run folder): its name and a dash, none for
    /// continuity's own (the client of a run with no client axis).
    pub fn tag(self) -> String {
        match self {
            ClientKind::Rust => String::new(),
            _ => format!("{}-", self.name()),
        }
    }

    /// Why the client runs on continuity's local stack only, if it does:
    /// the usage error of a run on a deployment (`--base-url`, a config's
    /// `base_url`) naming it.
    pub fn needs_local_stack(self) -> Option<&'static str> {
        match self {
            ClientKind::Rust => None,
            ClientKind::TsSdk => Some("--client ts-sdk runs the TypeScript SDK inside a RivetKit actor of continuity's local stack; a --base-url/--config deployment has no Rivet layer continuity can host it in (run without --base-url and --config targets, or use --client rust)"),
            ClientKind::Browser => Some("--client browser runs the SDK in headless Chromium on a page continuity's local stack serves (sandbox-agent allows that page's origin); a --base-url/--config deployment has neither (run without --base-url and --config targets, or use --client rust)"),
        }
    }

    /// What the `client` restart target does to the client.
    pub fn client_restart(self) -> ClientRestart {
        match self {
            ClientKind::Rust => ClientRestart::Renewed,
            ClientKind::TsSdk => ClientRestart::HostProcess,
            ClientKind::Browser => ClientRestart::PageReload,
        }
    }

    /// The store the client keeps its sessions in when the run names none:
    /// the stack's own (`stack`: its Rivet actor, else SQLite) for the
    /// clients in a server-side process, IndexedDB for the page, which
    /// can open no store of a server's.
    pub fn default_store(self, stack: crate::store::Store) -> crate::store::Store {
        match self {
            ClientKind::Rust | ClientKind::TsSdk => stack,
            ClientKind::Browser => crate::store::Store::IndexedDb,
        }
    }
}

/// What the `client` restart target does to a cell's client
/// ([`ClientKind::client_restart`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientRestart {
    /// The cell drops its clients and makes new ones (continuity's own,
    /// which lives in the cell).
    Renewed,
    /// The process that hosts the SDK client (the RivetKit runner) is
    /// killed and started again.
    HostProcess,
    /// The page is reloaded, as a deploy or a user reloads it: its storage
    /// stays, its SDK clients do not.
    PageReload,
}

/// A name that is no client's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownClient(pub String);

impl std::fmt::Display for UnknownClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let known = crate::wire_name::names::<ClientKind>();
        write!(f, "{:?} is no client ({known})", self.0)
    }
}

impl std::error::Error for UnknownClient {}

/// A client from its name, as `--client` or a report writes it.
impl std::str::FromStr for ClientKind {
    type Err = UnknownClient;

    fn from_str(name: &str) -> Result<ClientKind, UnknownClient> {
        crate::wire_name::parse(name).ok_or_else(|| UnknownClient(name.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_is_named_once_and_read_back() {
        let names: Vec<_> = ClientKind::all().iter().map(|k| k.name()).collect();
        assert_eq!(names, ["rust", "ts-sdk", "browser"]);
        for kind in ClientKind::all() {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.name());
            assert_eq!(kind.name().parse::<ClientKind>(), Ok(*kind));
        }
        let unknown = "deno".parse::<ClientKind>().unwrap_err().to_string();
        assert!(unknown.contains("rust, ts-sdk, browser"), "{unknown}");
    }

    #[test]
    fn a_client_s_tag_is_its_name_but_continuity_s_own_has_none() {
        let tags: Vec<_> = ClientKind::all().iter().map(|k| k.tag()).collect();
        assert_eq!(tags, ["", "ts-sdk-", "browser-"]);
    }

    #[test]
    fn only_the_sdk_clients_need_the_local_stack_and_each_says_what_for() {
        assert_eq!(ClientKind::Rust.needs_local_stack(), None);
        for kind in [ClientKind::TsSdk, ClientKind::Browser] {
            let why = kind.needs_local_stack().unwrap();
            assert!(
                why.starts_with(&format!("--client {} ", kind.name())),
                "{why}"
            );
        }
    }

    /// A client's facts agree with each other, so a new client cannot be
    /// given one that contradicts another: its `client` restart is its
    /// host process's exactly when it hosts the SDK, a reload exactly when
    /// it runs in a page, a renewal exactly when it is continuity's own;
    /// only the real SDK needs the local stack; only the default is untagged.
    #[test]
    fn each_client_s_facts_agree_with_each_other() {
        for &kind in ClientKind::all() {
            let restart = kind.client_restart();
            assert_eq!(restart == ClientRestart::HostProcess, kind.hosts_sdk());
            assert_eq!(restart == ClientRestart::PageReload, kind.runs_in_a_page());
            assert_eq!(restart == ClientRestart::Renewed, !kind.runs_real_sdk());
            assert_eq!(kind.needs_local_stack().is_some(), kind.runs_real_sdk());
            assert_eq!(kind.tag().is_empty(), kind == ClientKind::all()[0]);
        }
    }

    #[test]
    fn the_page_keeps_its_sessions_in_indexeddb_the_others_in_the_stack_store() {
        use crate::store::Store;
        for stack in [Store::Rivet, Store::Sqlite] {
            assert_eq!(ClientKind::Rust.default_store(stack), stack);
            assert_eq!(ClientKind::TsSdk.default_store(stack), stack);
            assert_eq!(ClientKind::Browser.default_store(stack), Store::IndexedDb);
        }
    }
}
