//! The matrix, built whole before any cell runs: the values of every axis
//! ([`Axes`]: agents, clients, server points, SDK points, session stores)
//! and every cell with its full point ([`CellPoint`]), in matrix order,
//! with the shard's selection (`--partition`) applied. A new axis is a new
//! field here and one more loop in [`Matrix::build`]; a new value of an
//! existing axis (a candidate server binary, another store) is only a new
//! entry in its list. The attempt is the one axis not built here: a
//! cell's attempts (`--repeat`, `--retries`) depend on its outcomes, so
//! the runner numbers them as they run.
//!
//! Over 400 lines on purpose: each axis's point types (server, SDK, agent)
//! and the build of every cell in matrix order from them (`Axes`, `points`,
//! `Matrix::build`, the shard) change together when an axis is added, so the
//! axis recipe touches this one file (ARCHITECTURE.md, "An axis"); the cost
//! model is apart (`matrix/cost.rs`).

pub(crate) mod cost;

use super::client_axis::ClientKind;
use crate::partition::{cell_name, Partition};
use crate::persist::Store;
use crate::report::{Axis, AxisPoint, AxisValue, Point, PointSource, TargetName};
use crate::scenario::Scenario;
use crate::targets::TargetId;
use cost::Timings;
use std::path::PathBuf;

/// The agent a run uses when none is named; cells then name no agent.
pub(crate) const DEFAULT_AGENT: &str = "mock";

/// Where a server point's sandbox-agent comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ServerSource {
    /// `@sandbox-agent/cli-linux-x64@VERSION` from the npm registry.
    Registry(String),
    /// A sandbox-agent binary on disk (a candidate build, `--server-bin`),
    /// with what it reports about itself (`sandbox-agent 0.4.2`): run as it
    /// is, switched to as a registry version is; `sha256`, its bytes'
    /// digest when the run checked it (what `rerun` compares).
    Binary {
        path: PathBuf,
        reports: String,
        sha256: String,
    },
    /// Whatever runs behind `--base-url`: continuity neither chooses nor
    /// switches it.
    Deployment,
}

/// One point of the server axis: the label cells and reports name it by,
/// and where its binary comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerPoint {
    pub label: String,
    pub source: ServerSource,
}

impl ServerPoint {
    /// A registry version, labelled by its version (`0.4.2`).
    pub(crate) fn registry(version: &str) -> ServerPoint {
        ServerPoint {
            label: version.to_string(),
            source: ServerSource::Registry(version.to_string()),
        }
    }

    /// The deployment's own server.
    pub(crate) fn deployment() -> ServerPoint {
        ServerPoint {
            label: "deployment".into(),
            source: ServerSource::Deployment,
        }
    }
}

/// Where an SDK point's `sandbox-agent` package comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SdkSource {
    /// `sandbox-agent@VERSION` from the npm registry.
    Registry(String),
    /// A candidate's packages on disk (`--sdk`): folders or `npm pack`
    /// tarballs, the SDK first, then packages that replace its
    /// dependencies of the same name; `version` is the SDK package's own,
    /// `sha256` the digest of everything the packages hold.
    Package {
        paths: Vec<PathBuf>,
        version: String,
        sha256: String,
    },
}

/// One point of the SDK axis (the package the hosted client runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SdkPoint {
    pub label: String,
    pub source: SdkSource,
}

impl SdkPoint {
    /// A registry version, labelled by its version.
    pub(crate) fn registry(version: &str) -> SdkPoint {
        SdkPoint {
            label: version.to_string(),
            source: SdkSource::Registry(version.to_string()),
        }
    }
}

/// One value of the agent axis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AgentPoint {
    pub name: String,
    /// A real agent talks to the stack's fake model provider: only then
    /// does the provider's log judge its cells.
    pub real: bool,
}

/// The values of every axis but target and scenario, each list in the
/// order its cells run and show.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Axes {
    pub agents: Vec<AgentPoint>,
    pub clients: Vec<ClientKind>,
    pub servers: Vec<ServerPoint>,
    /// The SDK points a hosted client runs; a client that hosts no SDK
    /// (`rust`) has one cell per point of the other axes, with no SDK.
    pub sdks: Vec<SdkPoint>,
    /// The stores the user named (`--persist`, the config's), each cell
    /// on every one; empty: each client on its own default over
    /// `stack_store` ([`ClientKind::default_store`]).
    pub persists: Vec<Store>,
    /// The stack's store, for a run that names none: its Rivet actor when
    /// it runs one, else SQLite.
    pub stack_store: Store,
}

impl Axes {
    /// Which axes cells name: those with more than one value, the client
    /// when it is not `rust` alone, and the agent when it is not the
    /// default `mock` alone (so a run without axes writes the reports it
    /// always wrote).
    fn named(&self) -> Vec<Axis> {
        Axis::ALL
            .into_iter()
            .filter(|axis| match axis {
                Axis::Agent => {
                    self.agents.len() > 1 || self.agents.iter().any(|a| a.name != DEFAULT_AGENT)
                }
                Axis::Client => self.clients != [ClientKind::Rust],
                Axis::Server => self.servers.len() > 1,
                Axis::Sdk => self.sdks.len() > 1,
                Axis::Persist => self.persists.len() > 1,
            })
            .collect()
    }

    /// The values of `axis`, as cells name them, in run order.
    fn values(&self, axis: Axis) -> Vec<String> {
        match axis {
            Axis::Agent => self.agents.iter().map(|a| a.name.clone()).collect(),
            Axis::Client => self.clients.iter().map(|c| c.name().to_string()).collect(),
            Axis::Server => self.servers.iter().map(|s| s.label.clone()).collect(),
            Axis::Sdk => self.sdks.iter().map(|s| s.label.clone()).collect(),
            Axis::Persist => self
                .all_stores()
                .iter()
                .map(|p| p.name().to_string())
                .collect(),
        }
    }

    /// The stores `client`'s cells run on: every one the user named, else
    /// the client's own default.
    pub(crate) fn stores(&self, client: ClientKind) -> Vec<Store> {
        match self.persists.is_empty() {
            true => vec![client.default_store(self.stack_store)],
            false => self.persists.clone(),
        }
    }

    /// Every store some cell runs on, each once, in run order.
    pub(crate) fn all_stores(&self) -> Vec<Store> {
        let mut all: Vec<Store> = Vec::new();
        for store in self.clients.iter().flat_map(|c| self.stores(*c)) {
            if !all.contains(&store) {
                all.push(store);
            }
        }
        all
    }

    /// Each client with its store, when the run named none and the
    /// clients' defaults differ (`rivet` for `rust`, `indexeddb` for
    /// `browser`): what `report.json` and the run's first lines say, since
    /// cells then name no store of their own. Empty otherwise.
    pub(crate) fn client_stores(&self) -> Vec<(ClientKind, Store)> {
        if !self.persists.is_empty() || self.all_stores().len() < 2 {
            return Vec::new();
        }
        self.clients
            .iter()
            .map(|c| (*c, c.default_store(self.stack_store)))
            .collect()
    }
}

impl Axes {
    /// The server and SDK points as the report records them: every server
    /// point but a deployment's, the SDK points when a client hosts one.
    pub(crate) fn points(&self) -> Vec<AxisPoint> {
        let mut points: Vec<AxisPoint> = self
            .servers
            .iter()
            .filter_map(|server| {
                let (source, version, paths, sha256) = match &server.source {
                    ServerSource::Registry(version) => {
                        (PointSource::Registry, version.clone(), vec![], None)
                    }
                    ServerSource::Binary {
                        path,
                        reports,
                        sha256,
                    } => (
                        PointSource::Binary,
                        reports.clone(),
                        vec![path.display().to_string()],
                        Some(sha256.clone()),
                    ),
                    ServerSource::Deployment => return None,
                };
                Some(AxisPoint {
                    axis: Axis::Server,
                    label: server.label.clone(),
                    source,
                    version,
                    paths,
                    sha256,
                })
            })
            .collect();
        if self.clients.iter().any(|c| c.hosts_sdk()) {
            points.extend(self.sdks.iter().map(|sdk| {
                let (source, version, paths, sha256) = match &sdk.source {
                    SdkSource::Registry(version) => {
                        (PointSource::Registry, version.clone(), vec![], None)
                    }
                    SdkSource::Package {
                        paths,
                        version,
                        sha256,
                    } => (
                        PointSource::Package,
                        version.clone(),
                        paths.iter().map(|p| p.display().to_string()).collect(),
                        Some(sha256.clone()),
                    ),
                };
                AxisPoint {
                    axis: Axis::Sdk,
                    label: sdk.label.clone(),
                    source,
                    version,
                    paths,
                    sha256,
                }
            }));
        }
        points
    }
}

/// Everything that makes one cell of the matrix what it is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CellPoint {
    pub target: TargetId,
    pub scenario: String,
    pub agent: String,
    /// See [`AgentPoint::real`].
    pub real_agent: bool,
    pub client: ClientKind,
    pub server: ServerPoint,
    /// `None` for a client that hosts no SDK.
    pub sdk: Option<SdkPoint>,
    pub persist: Store,
}

impl CellPoint {
    /// Its value on `axis`, as cells name it (`None`: no SDK for a client
    /// that runs none).
    pub(crate) fn value(&self, axis: Axis) -> Option<AxisValue> {
        match axis {
            Axis::Agent => Some(AxisValue::Agent(self.agent.clone())),
            Axis::Client => Some(self.client.into()),
            Axis::Server => Some(AxisValue::Server(self.server.label.clone())),
            Axis::Sdk => self.sdk.as_ref().map(|s| AxisValue::Sdk(s.label.clone())),
            Axis::Persist => Some(self.persist.into()),
        }
    }

    /// The seed of this cell's attempt `attempt` in a run of `run_seed`:
    /// from every coordinate of its point, named or not.
    pub(crate) fn seed(&self, run_seed: u64, attempt: u32) -> u64 {
        crate::seed::for_cell(run_seed, &self.named(&Axis::ALL).to_string(), attempt)
    }

    /// The seed of the cell's schedule of faults (a `chaos` cell's): the
    /// run's and the cell's, the same for every attempt (attempts count
    /// from 1, so none has this seed).
    pub(crate) fn schedule_seed(&self, run_seed: u64) -> u64 {
        self.seed(run_seed, 0)
    }

    /// The point a cell's record names: target × scenario and its values
    /// on the `named` axes (see [`Axes::named`]), as `report.json` has them.
    fn named(&self, named: &[Axis]) -> Point {
        let mut point = Point::new(&self.target, &self.scenario);
        for value in named.iter().filter_map(|axis| self.value(*axis)) {
            point.set(value);
        }
        point
    }
}

/// A target as the report names it: its name (a built-in target's and a
/// deployment's own of the same name read back alike; the report keeps
/// no more of a target's identity).
impl From<&TargetId> for TargetName {
    fn from(id: &TargetId) -> TargetName {
        TargetName::new(id.name())
    }
}

/// The name shards deal cells by: `target/scenario` (`@version` on a
/// version axis, as before the other axes existed), then ` · VALUE` for
/// each other axis the run had, so each point is a cell of its own.
fn shard_name(point: &Point) -> String {
    let mut name = cell_name(&point.target, &point.scenario, point.name_on(Axis::Server));
    for value in point.named().filter(|value| value.axis() != Axis::Server) {
        name.push_str(" · ");
        name.push_str(value.name());
    }
    name
}

/// One cell to run (or report as skipped): its place and its point.
#[derive(Debug, Clone)]
pub(crate) struct PlannedCell {
    /// 1-based, in matrix order: events and the report's order.
    pub index: usize,
    /// Index into the run's scenarios.
    pub scenario: usize,
    pub point: CellPoint,
    /// The point as its record names it: the run's named axes only.
    pub named: Point,
    /// What it is expected to take, in ms (`--timings`, else the built-in estimate).
    pub expected_ms: u64,
}

/// The shard a run holds: `--partition`, and for a `cost:` split the
/// previous run's durations (`--timings`; empty: the built-in estimates).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shard<'a> {
    pub partition: &'a Partition,
    pub timings: &'a Timings,
}

/// Every point of `targets` × `scenarios` × the axes with its scenario's
/// index, outermost first: server, client, SDK (hosted clients only),
/// store, agent, target, scenario.
fn points(targets: &[TargetId], scenarios: &[Scenario], axes: &Axes) -> Vec<(usize, CellPoint)> {
    let mut all: Vec<(usize, CellPoint)> = Vec::new();
    for server in &axes.servers {
        for client in &axes.clients {
            let sdks: Vec<Option<&SdkPoint>> = match client.hosts_sdk() {
                true => axes.sdks.iter().map(Some).collect(),
                false => vec![None],
            };
            for sdk in sdks {
                for persist in &axes.stores(*client) {
                    for agent in &axes.agents {
                        for target in targets {
                            for (s, scenario) in scenarios.iter().enumerate() {
                                all.push((
                                    s,
                                    CellPoint {
                                        target: target.clone(),
                                        scenario: scenario.name.clone(),
                                        agent: agent.name.clone(),
                                        real_agent: agent.real,
                                        client: *client,
                                        server: server.clone(),
                                        sdk: sdk.cloned(),
                                        persist: *persist,
                                    },
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    all
}

/// The matrix of a run (or of its shard).
#[derive(Debug, Clone)]
pub(crate) struct Matrix {
    pub axes: Axes,
    pub targets: Vec<TargetId>,
    pub scenarios: Vec<String>,
    /// The cells this run holds, in matrix order.
    pub cells: Vec<PlannedCell>,
}

impl Matrix {
    /// Every point of `targets` × `scenarios` × the axes ([`points`]),
    /// then only the shard's cells, renumbered from 1.
    pub(crate) fn build(
        targets: Vec<TargetId>,
        scenarios: &[Scenario],
        axes: Axes,
        shard: Option<Shard<'_>>,
    ) -> Matrix {
        let named = axes.named();
        let all = points(&targets, scenarios, &axes);
        let labelled: Vec<(usize, CellPoint, Point)> = all
            .into_iter()
            .map(|(s, point)| {
                let labels = point.named(&named);
                (s, point, labels)
            })
            .collect();
        // What each cell is expected to take: a `cost:` shard deals by it,
        // and the queue takes the longest first among equals.
        let estimates = Timings::default();
        let timings = shard.map_or(&estimates, |shard| shard.timings);
        let costs: Vec<u64> = labelled
            .iter()
            .map(|(_, point, named)| timings.expected_ms(point, named))
            .collect();
        let selected = match shard {
            Some(shard) => {
                let names: Vec<String> = labelled
                    .iter()
                    .map(|(_, _, named)| shard_name(named))
                    .collect();
                shard.partition.selects_by_cost(&names, &costs)
            }
            None => vec![true; labelled.len()],
        };
        let cells = labelled
            .into_iter()
            .zip(costs)
            .zip(selected)
            .filter(|(_, keep)| *keep)
            .enumerate()
            .map(
                |(n, (((scenario, point, named), expected_ms), _))| PlannedCell {
                    index: n + 1,
                    scenario,
                    point,
                    named,
                    expected_ms,
                },
            )
            .collect();
        Matrix {
            targets,
            scenarios: scenarios.iter().map(|s| s.name.clone()).collect(),
            axes,
            cells,
        }
    }

    /// Keeps only the cells whose point `keep` selects, renumbered from 1.
    pub(crate) fn keep(&mut self, keep: impl Fn(&Point) -> bool) {
        self.cells.retain(|c| keep(&c.named));
        for (n, cell) in self.cells.iter_mut().enumerate() {
            cell.index = n + 1;
        }
    }

    /// The axes cells name, each with its values (`agent`, `client`,
    /// `serverVersion`, `sdkVersion`, `persist`, as `report.json` names
    /// them): what a run's progress shows before its first cell.
    pub(crate) fn named_axes(&self) -> Vec<(Axis, Vec<String>)> {
        self.axes
            .named()
            .into_iter()
            .map(|axis| (axis, self.axes.values(axis)))
            .collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::targets::BuiltinTarget;

    /// A rust cell of `target` × native-continuity on server point
    /// `server`. Tests elsewhere take it and set the values they vary
    /// (`..point(…)`), so a new axis is a field here only.
    pub(crate) fn point(target: &str, server: &str) -> CellPoint {
        CellPoint {
            target: TargetId::of_name(target),
            scenario: "native-continuity".into(),
            agent: DEFAULT_AGENT.into(),
            real_agent: false,
            client: ClientKind::Rust,
            server: ServerPoint::registry(server),
            sdk: None,
            persist: Store::Sqlite,
        }
    }

    fn scenarios(names: &[&str]) -> Vec<Scenario> {
        let all = crate::scenario::builtin_scenarios();
        names
            .iter()
            .map(|n| all.iter().find(|s| s.name == *n).unwrap().clone())
            .collect()
    }

    /// One value on each axis: the agent, rust, 0.4.2, SDK 0.4.2, SQLite.
    /// Tests elsewhere take it and set the axes they vary (`..axes()`),
    /// so a new axis is a field here only.
    pub(in crate::runner) fn axes() -> Axes {
        Axes {
            agents: vec![AgentPoint {
                name: DEFAULT_AGENT.into(),
                real: false,
            }],
            clients: vec![ClientKind::Rust],
            servers: vec![ServerPoint::registry("0.4.2")],
            sdks: vec![SdkPoint::registry("0.4.2")],
            persists: vec![Store::Sqlite],
            stack_store: Store::Sqlite,
        }
    }

    fn targets() -> Vec<TargetId> {
        vec![BuiltinTarget::Agent.into(), BuiltinTarget::Gateway.into()]
    }

    #[test]
    fn one_value_per_axis_names_nothing_and_shards_keep_their_names() {
        let s = scenarios(&["native-continuity", "recreate-rehydrate"]);
        let m = Matrix::build(targets(), &s, axes(), None);
        assert_eq!(m.cells.len(), 4);
        assert!(m.cells.iter().all(|c| c.named.named().next().is_none()));
        assert!(m.named_axes().is_empty());
        assert_eq!(shard_name(&m.cells[0].named), "agent/native-continuity");
        let indices: Vec<usize> = m.cells.iter().map(|c| c.index).collect();
        assert_eq!(indices, [1, 2, 3, 4]);
    }

    /// Two clients × two server versions: every pair is a cell of its own,
    /// the SDK goes with the hosted client only, and a shard deals the
    /// points apart.
    #[test]
    fn every_axis_composes_with_every_other() {
        let s = scenarios(&["native-continuity"]);
        let mut axes = axes();
        axes.clients = vec![ClientKind::Rust, ClientKind::TsSdk];
        axes.servers = vec![
            ServerPoint::registry("0.4.0"),
            ServerPoint::registry("0.4.2"),
        ];
        let m = Matrix::build(vec![BuiltinTarget::Agent.into()], &s, axes.clone(), None);
        let points: Vec<(Option<&str>, Option<&str>, bool)> = m
            .cells
            .iter()
            .map(|c| {
                (
                    c.named.name_on(Axis::Client),
                    c.named.name_on(Axis::Server),
                    c.point.sdk.is_some(),
                )
            })
            .collect();
        assert_eq!(
            points,
            [
                (Some("rust"), Some("0.4.0"), false),
                (Some("ts-sdk"), Some("0.4.0"), true),
                (Some("rust"), Some("0.4.2"), false),
                (Some("ts-sdk"), Some("0.4.2"), true),
            ]
        );
        assert_eq!(
            m.named_axes(),
            [
                (Axis::Server, vec!["0.4.0".to_string(), "0.4.2".into()]),
                (Axis::Client, vec!["rust".to_string(), "ts-sdk".into()]),
            ]
        );
        let cell = crate::report::attempts::aggregate(m.cells[3].named.clone(), Vec::new());
        assert_eq!(cell.label(), "agent · ts-sdk @ 0.4.2");
        assert_eq!(
            shard_name(&m.cells[3].named),
            "agent/native-continuity@0.4.2 · ts-sdk"
        );
        // Two shards hold every cell once between them.
        let mut held = 0;
        for k in 1..=2 {
            let p: Partition = format!("count:{k}/2").parse().unwrap();
            let shard = Shard {
                partition: &p,
                timings: &Timings::default(),
            };
            let shard = Matrix::build(
                vec![BuiltinTarget::Agent.into()],
                &s,
                axes.clone(),
                Some(shard),
            );
            assert_eq!(shard.cells.len(), 2, "shard {k}");
            held += shard.cells.len();
        }
        assert_eq!(held, 4);
    }

    #[test]
    fn a_real_agent_or_several_name_their_agent() {
        let s = scenarios(&["native-continuity"]);
        let mut axes = axes();
        axes.agents = vec![AgentPoint {
            name: "codex".into(),
            real: true,
        }];
        let m = Matrix::build(targets(), &s, axes, None);
        assert!(m
            .cells
            .iter()
            .all(|c| c.named.name_on(Axis::Agent) == Some("codex")));
        assert!(m.cells.iter().all(|c| c.point.real_agent));
    }

    /// No `--persist`: each client on its own default, the browser on
    /// IndexedDB, without a persistence axis (the store follows the
    /// client); a store the user names holds for every client.
    #[test]
    fn each_client_runs_on_its_own_default_store_unless_one_is_named() {
        let s = scenarios(&["native-continuity"]);
        let mut axes = axes();
        axes.clients = vec![ClientKind::Rust, ClientKind::TsSdk, ClientKind::Browser];
        axes.persists = Vec::new();
        axes.stack_store = Store::Rivet;
        let m = Matrix::build(vec![BuiltinTarget::Agent.into()], &s, axes.clone(), None);
        let stores: Vec<(ClientKind, Store)> = m
            .cells
            .iter()
            .map(|c| (c.point.client, c.point.persist))
            .collect();
        assert_eq!(
            stores,
            [
                (ClientKind::Rust, Store::Rivet),
                (ClientKind::TsSdk, Store::Rivet),
                (ClientKind::Browser, Store::IndexedDb),
            ]
        );
        assert!(m
            .cells
            .iter()
            .all(|c| c.named.name_on(Axis::Persist).is_none()));
        assert_eq!(axes.all_stores(), [Store::Rivet, Store::IndexedDb]);
        assert_eq!(axes.client_stores().len(), 3);
        // One client, or a store the user named: nothing to tell apart.
        let mut browser = axes.clone();
        browser.clients = vec![ClientKind::Browser];
        assert_eq!(browser.all_stores(), [Store::IndexedDb]);
        assert!(browser.client_stores().is_empty());
        axes.persists = vec![Store::Memory];
        let m = Matrix::build(vec![BuiltinTarget::Agent.into()], &s, axes.clone(), None);
        assert!(m.cells.iter().all(|c| c.point.persist == Store::Memory));
        assert!(axes.client_stores().is_empty());
    }
}
