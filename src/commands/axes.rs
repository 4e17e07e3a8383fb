//! The matrix's axes from the command line and the config file: which
//! agents, clients, server points, SDK point and stores the cells run with,
//! each checked with a message naming its flag. Nothing here runs a cell:
//! the runner builds the matrix from these ([`crate::runner::Matrix`]) and
//! runs it, whatever mix of axes was asked for.

use super::CommandError;
use crate::cli::{ClientArg, PersistArg, RunArgs};
use crate::runner::{
    AgentPoint, Axes, ClientKind, PersistChoice, PersistPoint, SdkPoint, ServerPoint,
};

/// What the user asked for on each axis; the store may still depend on
/// the stack (its Rivet actor when it runs one and none was chosen).
pub(super) struct Chosen {
    pub agents: Vec<String>,
    pub clients: Vec<ClientKind>,
    pub servers: Vec<ServerPoint>,
    pub sdk: SdkPoint,
    /// `--persist` (repeatable), else the config's `[run] persist`: each
    /// once, in their order; empty when neither names one.
    pub persists: Vec<PersistPoint>,
}

impl Chosen {
    /// What the user asked for: `agents` resolved already (flag, seed
    /// environment, config), `config_persist` the config's stores.
    pub fn of(
        args: &RunArgs,
        agents: Vec<String>,
        config_persist: &[PersistChoice],
    ) -> Result<Chosen, CommandError> {
        Ok(Chosen {
            agents,
            clients: clients(&args.clients),
            servers: servers(&args.server_version)?,
            sdk: SdkPoint::registry(
                args.sdk_version
                    .as_deref()
                    .unwrap_or(crate::stack::rivet::PINNED_SDK_VERSION),
            ),
            persists: persists(&args.persist, config_persist),
        })
    }

    /// The axes of the run, on `servers` (the chosen ones on the local
    /// stack, the deployment's own otherwise) with `persist` when the user
    /// chose no store.
    pub fn axes(&self, servers: Vec<ServerPoint>, persist: PersistPoint) -> Axes {
        Axes {
            agents: self
                .agents
                .iter()
                .map(|name| AgentPoint {
                    name: name.clone(),
                    real: crate::stack::agents::real(name).is_some(),
                })
                .collect(),
            clients: self.clients.clone(),
            servers,
            sdks: vec![self.sdk.clone()],
            persists: match self.persists.is_empty() {
                true => vec![persist],
                false => self.persists.clone(),
            },
        }
    }

    /// The usage error for a deployment continuity did not start: it has
    /// one server (several `--server-version`s cannot be chosen there) and
    /// no Rivet layer to host the TypeScript SDK in.
    pub fn refuse_on_a_deployment(&self) -> Result<(), CommandError> {
        if self.servers.len() > 1 {
            return Err(CommandError::usage("several --server-version values make a version axis on the local stack; with --base-url or a config base_url the server's version is whatever runs there"));
        }
        if self.clients.contains(&ClientKind::Browser) {
            return Err(CommandError::usage("--client browser runs the SDK in headless Chromium on a page continuity's local stack serves (sandbox-agent allows that page's origin); a --base-url/--config deployment has neither (run without --base-url and --config targets, or use --client rust)"));
        }
        if self.clients.contains(&ClientKind::TsSdk) {
            return Err(CommandError::usage("--client ts-sdk runs the TypeScript SDK inside a RivetKit actor of continuity's local stack; a --base-url/--config deployment has no Rivet layer continuity can host it in (run without --base-url and --config targets, or use --client rust)"));
        }
        Ok(())
    }
}

/// The `--client` values, each once, `rust` when none.
fn clients(given: &[ClientArg]) -> Vec<ClientKind> {
    let mut clients: Vec<ClientKind> = Vec::new();
    for c in given {
        let kind = match c {
            ClientArg::Rust => ClientKind::Rust,
            ClientArg::TsSdk => ClientKind::TsSdk,
            ClientArg::Browser => ClientKind::Browser,
        };
        if !clients.contains(&kind) {
            clients.push(kind);
        }
    }
    if clients.is_empty() {
        clients.push(ClientKind::Rust);
    }
    clients
}

/// The `--server-version` values, each once (clap gives the pinned one
/// when none); a version given twice is a usage error.
fn servers(given: &[String]) -> Result<Vec<ServerPoint>, CommandError> {
    let mut servers: Vec<ServerPoint> = Vec::new();
    for v in given {
        let v = v.trim();
        if v.is_empty() {
            return Err(CommandError::usage("--server-version: empty version"));
        }
        if servers.iter().any(|known| known.label == v) {
            return Err(CommandError::usage(format!(
                "--server-version {v} is given twice"
            )));
        }
        servers.push(ServerPoint::registry(v));
    }
    if servers.is_empty() {
        servers.push(ServerPoint::registry(
            crate::stack::sandbox_agent::DEFAULT_VERSION,
        ));
    }
    Ok(servers)
}

/// The `--persist` values, else the config's, each once in their order
/// (empty: the stack's default store).
fn persists(flags: &[PersistArg], config: &[PersistChoice]) -> Vec<PersistPoint> {
    let given: Vec<PersistPoint> = match flags.is_empty() {
        true => config.iter().filter_map(config_point).collect(),
        false => flags.iter().map(|f| flag_point(*f)).collect(),
    };
    let mut points: Vec<PersistPoint> = Vec::new();
    for point in given {
        if !points.contains(&point) {
            points.push(point);
        }
    }
    points
}

fn flag_point(arg: PersistArg) -> PersistPoint {
    match arg {
        PersistArg::Memory => PersistPoint::Memory,
        PersistArg::Sqlite => PersistPoint::Sqlite,
        PersistArg::Postgres => PersistPoint::Postgres,
        PersistArg::Rivet => PersistPoint::Rivet,
        PersistArg::Indexeddb => PersistPoint::IndexedDb,
    }
}

/// The store `[run] persist` names (it names stores by kind only: never
/// a stack's resolved or absent one).
fn config_point(choice: &PersistChoice) -> Option<PersistPoint> {
    match choice {
        PersistChoice::Memory => Some(PersistPoint::Memory),
        PersistChoice::Sqlite => Some(PersistPoint::Sqlite),
        PersistChoice::Postgres => Some(PersistPoint::Postgres),
        PersistChoice::Rivet => Some(PersistPoint::Rivet),
        PersistChoice::IndexedDb => Some(PersistPoint::IndexedDb),
        PersistChoice::Custom { .. } | PersistChoice::Unavailable { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_alone_is_the_default_and_repeats_collapse() {
        assert_eq!(clients(&[]), [ClientKind::Rust]);
        assert_eq!(
            clients(&[ClientArg::Rust, ClientArg::Rust]),
            [ClientKind::Rust]
        );
        assert_eq!(
            clients(&[ClientArg::TsSdk, ClientArg::Rust, ClientArg::TsSdk]),
            [ClientKind::TsSdk, ClientKind::Rust]
        );
    }

    #[test]
    fn persist_flags_win_over_the_config_and_repeats_collapse() {
        assert!(persists(&[], &[]).is_empty());
        assert_eq!(
            persists(&[], &[PersistChoice::Sqlite]),
            [PersistPoint::Sqlite]
        );
        assert_eq!(
            persists(
                &[
                    PersistArg::Postgres,
                    PersistArg::Memory,
                    PersistArg::Postgres
                ],
                &[PersistChoice::Sqlite]
            ),
            [PersistPoint::Postgres, PersistPoint::Memory]
        );
    }

    #[test]
    fn a_version_given_twice_is_refused() {
        let two = servers(&["0.4.0".into(), "0.4.2".into()]).unwrap();
        assert_eq!(two[1], ServerPoint::registry("0.4.2"));
        let e = servers(&["0.4.2".into(), "0.4.2".into()]).unwrap_err();
        assert!(e.to_string().contains("given twice"), "{e}");
        assert_eq!(servers(&[]).unwrap().len(), 1);
    }
}
