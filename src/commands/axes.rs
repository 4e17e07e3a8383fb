//! The matrix's axes from the command line and the config file: which
//! agents, clients, server points, SDK point and stores the cells run with,
//! each checked with a message naming its flag. Nothing here runs a cell:
//! the runner builds the matrix from these ([`crate::runner::Matrix`]) and
//! runs it, whatever mix of axes was asked for.
//!
//! Over 400 lines on purpose: its tests build `Chosen` (and the run's
//! axes) whole, so a new axis's field is written in this one file, the
//! axis recipe's file for this module; with the tests in a file apart the
//! recipe would be six files, not five.

use super::candidates::{self, Source};
use super::CommandError;
use crate::cli::{AxisFlags, RunArgs};
use crate::config::Config;
use crate::persist::Store;
use crate::report::Axis;
use crate::runner::{AgentPoint, Axes, ClientKind, SdkPoint, ServerPoint, ServerSource};

/// What the user asked for on each axis; the store may still depend on
/// the stack (its Rivet actor when it runs one and none was chosen).
pub(super) struct Chosen {
    pub agents: Vec<String>,
    pub clients: Vec<ClientKind>,
    pub servers: Vec<ServerPoint>,
    pub sdks: Vec<SdkPoint>,
    /// `--persist` (repeatable), else the config's `[run] persist`: each
    /// once, in their order; empty when neither names one.
    pub persists: Vec<Store>,
}

impl Chosen {
    /// What the user asked for: `agents` resolved already (flag, seed
    /// environment, config), `config_persist` the config's stores.
    /// Candidate binaries and SDKs are checked here, before any stack.
    pub(super) async fn of(
        args: &RunArgs,
        config: Option<&Config>,
        agents: Vec<String>,
        config_persist: &[Store],
    ) -> Result<Chosen, CommandError> {
        let clients = clients(&args.clients);
        refuse_repeats(&args.axis_flags)?;
        let (bins, bins_from) = match (&args.server_bins, config) {
            (flags, _) if !flags.is_empty() => (flags.clone(), "--server-bin"),
            (_, Some(c)) => (c.run.server_bin.clone(), "run.server_bin"),
            (_, None) => (Vec::new(), "--server-bin"),
        };
        let (sdk_specs, sdks_from) = match (&args.sdks, config) {
            (flags, _) if !flags.is_empty() => (flags.clone(), "--sdk"),
            (_, Some(c)) => (c.run.sdk.clone(), "run.sdk"),
            (_, None) => (Vec::new(), "--sdk"),
        };
        if !args.sdks.is_empty() && !clients.iter().any(|c| c.hosts_sdk()) {
            return Err(CommandError::usage(format!(
                "--sdk {}: only the hosted client runs an SDK: add --client ts-sdk",
                args.sdks[0]
            )));
        }
        let mut servers = registry_points(
            &args.server_version,
            "--server-version",
            ServerPoint::registry,
        )?;
        for spec in &bins {
            let point = candidates::server_bin(spec, Source { flag: bins_from }).await?;
            refuse_taken(&servers, &point.label, bins_from, spec)?;
            servers.push(point);
        }
        if servers.is_empty() {
            servers.push(ServerPoint::registry(
                crate::stack::sandbox_agent::DEFAULT_VERSION,
            ));
        }
        let mut sdks = registry_points(&args.sdk_version, "--sdk-version", SdkPoint::registry)?;
        for spec in &sdk_specs {
            let point = candidates::sdk(spec, Source { flag: sdks_from })?;
            refuse_taken(&sdks, &point.label, sdks_from, spec)?;
            sdks.push(point);
        }
        if sdks.is_empty() {
            sdks.push(SdkPoint::registry(crate::stack::rivet::PINNED_SDK_VERSION));
        }
        Ok(Chosen {
            agents,
            clients,
            servers,
            sdks,
            persists: persists(&args.persist, config_persist),
        })
    }

    /// The axes of the run, on `servers` (the chosen ones on the local
    /// stack, the deployment's own otherwise); `persist` is the stack's
    /// store, under each client's own default when the user chose none.
    pub(super) fn axes(&self, servers: Vec<ServerPoint>, persist: Store) -> Axes {
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
            sdks: self.sdks.clone(),
            persists: self.persists.clone(),
            stack_store: persist,
        }
    }

    /// The values chosen on `axis`, as its flag (`--AXIS`) takes them,
    /// for the run's recipe (`run.recipe`), which a rerun gives back to
    /// that flag; `None` for the server and SDK points, which the report
    /// records with their builds (`run.points`).
    pub(super) fn values(&self, axis: Axis) -> Option<Vec<String>> {
        let names = |names: Vec<&str>| Some(names.into_iter().map(str::to_string).collect());
        match axis {
            Axis::Agent => Some(self.agents.clone()),
            Axis::Client => names(self.clients.iter().map(|c| c.name()).collect()),
            Axis::Persist => names(self.persists.iter().map(|p| p.name()).collect()),
            Axis::Server | Axis::Sdk => None,
        }
    }

    /// The labels of the server points.
    pub(super) fn server_labels(&self) -> Vec<String> {
        self.servers.iter().map(|s| s.label.clone()).collect()
    }

    /// The labels of the SDK points, when a client runs an SDK.
    pub(super) fn sdk_labels(&self) -> Vec<String> {
        match self.clients.iter().any(|c| c.hosts_sdk()) {
            true => self.sdks.iter().map(|s| s.label.clone()).collect(),
            false => Vec::new(),
        }
    }

    /// The usage error for a deployment continuity did not start: it has
    /// one server (several `--server-version`s, or a binary, cannot be
    /// chosen there) and no Rivet layer to host the TypeScript SDK in.
    pub(super) fn refuse_on_a_deployment(&self) -> Result<(), CommandError> {
        if let Some(bin) = self.servers.iter().find_map(|s| match &s.source {
            ServerSource::Binary { path, .. } => Some(path),
            _ => None,
        }) {
            return Err(CommandError::usage(format!("--server-bin {}: a binary runs on continuity's local stack; with --base-url or a config base_url the server is whatever runs there", bin.display())));
        }
        if self.servers.len() > 1 {
            return Err(CommandError::usage("several --server-version values make a version axis on the local stack; with --base-url or a config base_url the server's version is whatever runs there"));
        }
        // The last in `--client`'s order first: the page's refusal when
        // both SDK clients are named, as it has always been.
        let local_only = ClientKind::all()
            .iter()
            .rev()
            .filter(|c| self.clients.contains(c))
            .find_map(|c| c.needs_local_stack());
        match local_only {
            Some(why) => Err(CommandError::usage(why)),
            None => Ok(()),
        }
    }
}

/// The registry versions a flag names, each once (a version given twice
/// is a usage error).
fn registry_points<P>(
    given: &[String],
    flag: &str,
    point: impl Fn(&str) -> P,
) -> Result<Vec<P>, CommandError>
where
    P: Labelled,
{
    let mut points: Vec<P> = Vec::new();
    for v in given {
        let v = v.trim();
        if v.is_empty() {
            return Err(CommandError::usage(format!("{flag}: empty version")));
        }
        if points.iter().any(|known| known.label() == v) {
            return Err(CommandError::usage(format!("{flag} {v} is given twice")));
        }
        points.push(point(v));
    }
    Ok(points)
}

/// A value given twice to an axis's made flag (`--AXIS`, see
/// [`AxisFlags`]) would be two columns of one name: refused, as a
/// version given twice is.
fn refuse_repeats(flags: &AxisFlags) -> Result<(), CommandError> {
    refuse_repeats_on(flags, AxisFlags::axes())
}

fn refuse_repeats_on(
    flags: &AxisFlags,
    axes: impl Iterator<Item = Axis>,
) -> Result<(), CommandError> {
    for axis in axes {
        let values = flags.values(axis);
        let repeated = values
            .iter()
            .enumerate()
            .find_map(|(i, v)| values[..i].contains(v).then_some(v));
        if let Some(v) = repeated {
            return Err(CommandError::usage(format!(
                "--{} {v} is given twice",
                axis.name()
            )));
        }
    }
    Ok(())
}

/// A point of an axis, known by its label.
trait Labelled {
    fn label(&self) -> &str;
}

impl Labelled for ServerPoint {
    fn label(&self) -> &str {
        &self.label
    }
}

impl Labelled for SdkPoint {
    fn label(&self) -> &str {
        &self.label
    }
}

/// Two points of one axis with one label would be one column: refused,
/// naming the flag and the spec.
fn refuse_taken<P: Labelled>(
    points: &[P],
    label: &str,
    flag: &str,
    spec: &str,
) -> Result<(), CommandError> {
    if points.iter().any(|p| p.label() == label) {
        return Err(CommandError::usage(format!(
            "{flag} {spec}: another point of the axis is labelled `{label}` already: give each its own label ({flag} NAME=…)"
        )));
    }
    Ok(())
}

/// The `--client` values, each once, `rust` when none.
fn clients(given: &[ClientKind]) -> Vec<ClientKind> {
    let mut clients: Vec<ClientKind> = Vec::new();
    for &kind in given {
        if !clients.contains(&kind) {
            clients.push(kind);
        }
    }
    if clients.is_empty() {
        clients.push(ClientKind::Rust);
    }
    clients
}

/// The `--persist` values, else the config's, each once in their order
/// (empty: the stack's default store).
fn persists(flags: &[Store], config: &[Store]) -> Vec<Store> {
    let given = match flags.is_empty() {
        true => config,
        false => flags,
    };
    let mut points: Vec<Store> = Vec::new();
    for &point in given {
        if !points.contains(&point) {
            points.push(point);
        }
    }
    points
}

/// The run's line on its session stores, printed before its first cell:
/// the stores the user named, or each client's own default.
pub(super) fn stores_line(axes: &Axes) -> String {
    let names = |stores: &[Store]| {
        stores
            .iter()
            .map(|s| s.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !axes.persists.is_empty() {
        return format!("continuity: session store: {}", names(&axes.persists));
    }
    let by_client = axes.client_stores();
    if by_client.is_empty() {
        return format!(
            "continuity: session store: {} (the default; --persist names another)",
            names(&axes.all_stores())
        );
    }
    let each: Vec<String> = axes
        .all_stores()
        .into_iter()
        .map(|store| {
            let clients: Vec<&str> = by_client
                .iter()
                .filter(|(_, s)| *s == store)
                .map(|(c, _)| c.name())
                .collect();
            format!("{store} ({})", clients.join(", "))
        })
        .collect();
    format!(
        "continuity: session stores: {}, each client's own default (--persist names one for every client)",
        each.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stores_line_names_each_clients_own_default() {
        let mut axes = crate::runner::Axes {
            agents: Vec::new(),
            clients: vec![ClientKind::Rust, ClientKind::TsSdk, ClientKind::Browser],
            servers: Vec::new(),
            sdks: Vec::new(),
            persists: Vec::new(),
            stack_store: Store::Rivet,
        };
        assert_eq!(
            stores_line(&axes),
            "continuity: session stores: rivet (rust, ts-sdk), indexeddb (browser), each client's own default (--persist names one for every client)"
        );
        axes.clients = vec![ClientKind::Browser];
        assert_eq!(
            stores_line(&axes),
            "continuity: session store: indexeddb (the default; --persist names another)"
        );
        axes.persists = vec![Store::Postgres, Store::Memory];
        assert_eq!(
            stores_line(&axes),
            "continuity: session store: postgres, memory"
        );
    }

    /// The usage error of an SDK client on a deployment, word for word;
    /// with both named, the page's.
    #[test]
    fn a_client_of_the_local_stack_on_a_deployment_is_refused_in_its_words() {
        let chosen = |clients: Vec<ClientKind>| Chosen {
            agents: Vec::new(),
            clients,
            servers: vec![ServerPoint::registry("0.4.2")],
            sdks: Vec::new(),
            persists: Vec::new(),
        };
        let refused = |clients| match chosen(clients).refuse_on_a_deployment() {
            Err(CommandError::Usage(message)) => Some(message),
            Err(other) => panic!("{other}"),
            Ok(()) => None,
        };
        let ts_sdk = "--client ts-sdk runs the TypeScript SDK inside a RivetKit actor of continuity's local stack; a --base-url/--config deployment has no Rivet layer continuity can host it in (run without --base-url and --config targets, or use --client rust)";
        let browser = "--client browser runs the SDK in headless Chromium on a page continuity's local stack serves (sandbox-agent allows that page's origin); a --base-url/--config deployment has neither (run without --base-url and --config targets, or use --client rust)";
        assert_eq!(refused(vec![ClientKind::Rust]), None);
        assert_eq!(
            refused(vec![ClientKind::Rust, ClientKind::TsSdk]).as_deref(),
            Some(ts_sdk)
        );
        assert_eq!(refused(vec![ClientKind::Browser]).as_deref(), Some(browser));
        assert_eq!(
            refused(vec![ClientKind::TsSdk, ClientKind::Browser]).as_deref(),
            Some(browser)
        );
    }

    #[test]
    fn rust_alone_is_the_default_and_repeats_collapse() {
        assert_eq!(clients(&[]), [ClientKind::Rust]);
        assert_eq!(
            clients(&[ClientKind::Rust, ClientKind::Rust]),
            [ClientKind::Rust]
        );
        assert_eq!(
            clients(&[ClientKind::TsSdk, ClientKind::Rust, ClientKind::TsSdk]),
            [ClientKind::TsSdk, ClientKind::Rust]
        );
    }

    #[test]
    fn persist_flags_win_over_the_config_and_repeats_collapse() {
        assert!(persists(&[], &[]).is_empty());
        assert_eq!(persists(&[], &[Store::Sqlite]), [Store::Sqlite]);
        assert_eq!(
            persists(
                &[Store::Postgres, Store::Memory, Store::Postgres],
                &[Store::Sqlite]
            ),
            [Store::Postgres, Store::Memory]
        );
    }

    /// On an axis's made flag (two axes with flags of their own stand
    /// in: today's all have one).
    #[test]
    fn a_value_given_twice_to_an_axis_flag_is_refused() {
        let given = |agents: &[&str]| {
            AxisFlags::given(vec![
                (Axis::Agent, agents.iter().map(|a| a.to_string()).collect()),
                (Axis::Persist, vec!["sqlite".into()]),
            ])
        };
        let axes = || [Axis::Agent, Axis::Persist].into_iter();
        assert!(refuse_repeats_on(&given(&["a", "b"]), axes()).is_ok());
        let refused = refuse_repeats_on(&given(&["a", "b", "a"]), axes()).unwrap_err();
        assert_eq!(refused.to_string(), "--agent a is given twice");
    }

    #[test]
    fn a_version_given_twice_is_refused() {
        let two = registry_points(
            &["0.4.0".into(), "0.4.2".into()],
            "--server-version",
            ServerPoint::registry,
        )
        .unwrap();
        assert_eq!(two[1], ServerPoint::registry("0.4.2"));
        let e = registry_points(
            &["0.4.2".into(), "0.4.2".into()],
            "--sdk-version",
            SdkPoint::registry,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("--sdk-version 0.4.2 is given twice"),
            "{e}"
        );
        let taken = refuse_taken(&two, "0.4.2", "--server-bin", "./sandbox-agent").unwrap_err();
        assert!(taken.to_string().contains("labelled `0.4.2`"), "{taken}");
    }
}
