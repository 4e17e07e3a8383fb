//! The matrix, built whole before any cell runs: the values of every axis
//! ([`Axes`]: agents, clients, server points, SDK points, session stores)
//! and every cell with its full point ([`CellPoint`]), in matrix order,
//! with the shard's selection (`--partition`) applied. A new axis is a new
//! field here and one more loop in [`Matrix::build`]; a new value of an
//! existing axis (a candidate server binary, another store) is only a new
//! entry in its list. The attempt is the one axis not built here: a
//! cell's attempts (`--repeat`, `--retries`) depend on its outcomes, so
//! the runner numbers them as they run.

use super::client_axis::ClientKind;
use crate::partition::{cell_name, Partition};
use crate::report::{AxisPoint, Cell, PointAxis, PointSource};
use crate::scenario::Scenario;
use std::path::PathBuf;

/// The agent a run uses when none is named; cells then name no agent.
pub const DEFAULT_AGENT: &str = "mock";

/// Where a server point's sandbox-agent comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerSource {
    /// `@sandbox-agent/cli-linux-x64@VERSION` from the npm registry.
    Registry(String),
    /// A sandbox-agent binary on disk (a candidate build, `--server-bin`),
    /// with what it reports about itself (`sandbox-agent 0.4.2`): run as it
    /// is, switched to as a registry version is.
    Binary { path: PathBuf, reports: String },
    /// Whatever runs behind `--base-url`: continuity neither chooses nor
    /// switches it.
    Deployment,
}

/// One point of the server axis: the label cells and reports name it by,
/// and where its binary comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerPoint {
    pub label: String,
    pub source: ServerSource,
}

impl ServerPoint {
    /// A registry version, labelled by its version (`0.4.2`).
    pub fn registry(version: &str) -> ServerPoint {
        ServerPoint {
            label: version.to_string(),
            source: ServerSource::Registry(version.to_string()),
        }
    }

    /// The deployment's own server.
    pub fn deployment() -> ServerPoint {
        ServerPoint {
            label: "deployment".into(),
            source: ServerSource::Deployment,
        }
    }
}

/// Where an SDK point's `sandbox-agent` package comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SdkSource {
    /// `sandbox-agent@VERSION` from the npm registry.
    Registry(String),
    /// A candidate's packages on disk (`--sdk`): folders or `npm pack`
    /// tarballs, the SDK first, then packages that replace its
    /// dependencies of the same name; `version` is the SDK package's own.
    Package {
        paths: Vec<PathBuf>,
        version: String,
    },
}

/// One point of the SDK axis (the package the hosted client runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SdkPoint {
    pub label: String,
    pub source: SdkSource,
}

impl SdkPoint {
    /// A registry version, labelled by its version.
    pub fn registry(version: &str) -> SdkPoint {
        SdkPoint {
            label: version.to_string(),
            source: SdkSource::Registry(version.to_string()),
        }
    }
}

/// A cell's session store: one value of the persistence axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersistPoint {
    /// The SDK's in-memory store, per client.
    Memory,
    /// A SQLite file per cell attempt, in the run folder.
    Sqlite,
    /// The local stack's Postgres, a schema per cell attempt.
    Postgres,
    /// The local stack's Rivet actor.
    Rivet,
    /// IndexedDB in the browser client's page, a database per cell attempt.
    IndexedDb,
}

impl PersistPoint {
    /// The name reports give the store.
    pub fn name(self) -> &'static str {
        match self {
            PersistPoint::Memory => "memory",
            PersistPoint::Sqlite => "sqlite",
            PersistPoint::Postgres => "postgres",
            PersistPoint::Rivet => "rivet",
            PersistPoint::IndexedDb => "indexeddb",
        }
    }
}

/// One value of the agent axis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentPoint {
    pub name: String,
    /// A real agent talks to the stack's fake model provider: only then
    /// does the provider's log judge its cells.
    pub real: bool,
}

/// The values of every axis but target and scenario, each list in the
/// order its cells run and show.
#[derive(Debug, Clone, PartialEq)]
pub struct Axes {
    pub agents: Vec<AgentPoint>,
    pub clients: Vec<ClientKind>,
    pub servers: Vec<ServerPoint>,
    /// The SDK points a hosted client runs; a client that hosts no SDK
    /// (`rust`) has one cell per point of the other axes, with no SDK.
    pub sdks: Vec<SdkPoint>,
    pub persists: Vec<PersistPoint>,
}

impl Axes {
    /// Which axes cells name: those with more than one value, the client
    /// when it is not `rust` alone, and the agent when it is not the
    /// default `mock` alone (so a run without axes writes the reports it
    /// always wrote).
    fn named(&self) -> Named {
        Named {
            agent: self.agents.len() > 1 || self.agents.iter().any(|a| a.name != DEFAULT_AGENT),
            client: self.clients != [ClientKind::Rust],
            server: self.servers.len() > 1,
            sdk: self.sdks.len() > 1,
            persist: self.persists.len() > 1,
        }
    }
}

impl Axes {
    /// The server and SDK points as the report records them: every server
    /// point but a deployment's, the SDK points when a client hosts one.
    pub fn points(&self) -> Vec<AxisPoint> {
        let mut points: Vec<AxisPoint> = self
            .servers
            .iter()
            .filter_map(|server| {
                let (source, version, paths) = match &server.source {
                    ServerSource::Registry(version) => {
                        (PointSource::Registry, version.clone(), vec![])
                    }
                    ServerSource::Binary { path, reports } => (
                        PointSource::Binary,
                        reports.clone(),
                        vec![path.display().to_string()],
                    ),
                    ServerSource::Deployment => return None,
                };
                Some(AxisPoint {
                    axis: PointAxis::Server,
                    label: server.label.clone(),
                    source,
                    version,
                    paths,
                })
            })
            .collect();
        if self.clients.iter().any(|c| c.hosts_sdk()) {
            points.extend(self.sdks.iter().map(|sdk| {
                let (source, version, paths) = match &sdk.source {
                    SdkSource::Registry(version) => {
                        (PointSource::Registry, version.clone(), vec![])
                    }
                    SdkSource::Package { paths, version } => (
                        PointSource::Package,
                        version.clone(),
                        paths.iter().map(|p| p.display().to_string()).collect(),
                    ),
                };
                AxisPoint {
                    axis: PointAxis::Sdk,
                    label: sdk.label.clone(),
                    source,
                    version,
                    paths,
                }
            }));
        }
        points
    }
}

#[derive(Debug, Clone, Copy)]
struct Named {
    agent: bool,
    client: bool,
    server: bool,
    sdk: bool,
    persist: bool,
}

/// Everything that makes one cell of the matrix what it is.
#[derive(Debug, Clone, PartialEq)]
pub struct CellPoint {
    pub target: String,
    pub scenario: String,
    pub agent: String,
    /// See [`AgentPoint::real`].
    pub real_agent: bool,
    pub client: ClientKind,
    pub server: ServerPoint,
    /// `None` for a client that hosts no SDK.
    pub sdk: Option<SdkPoint>,
    pub persist: PersistPoint,
}

/// What a cell's record names of its point: the values of the axes the
/// run had (see [`Axes::named`]), as `report.json` spells them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CellLabels {
    pub server_version: Option<String>,
    pub agent: Option<String>,
    pub client: Option<String>,
    pub sdk_version: Option<String>,
    pub persist: Option<String>,
}

impl CellLabels {
    fn of(point: &CellPoint, named: Named) -> CellLabels {
        CellLabels {
            server_version: named.server.then(|| point.server.label.clone()),
            agent: named.agent.then(|| point.agent.clone()),
            client: named.client.then(|| point.client.name().to_string()),
            sdk_version: point
                .sdk
                .as_ref()
                .filter(|_| named.sdk)
                .map(|s| s.label.clone()),
            persist: named.persist.then(|| point.persist.name().to_string()),
        }
    }

    /// Writes the labels into the cell's record.
    pub fn stamp(&self, cell: &mut Cell) {
        cell.server_version = self.server_version.clone();
        cell.agent = self.agent.clone();
        cell.client = self.client.clone();
        cell.sdk_version = self.sdk_version.clone();
        cell.persist = self.persist.clone();
    }

    /// The name shards deal cells by: `target/scenario` (`@version` on a
    /// version axis, as before the other axes existed), then ` · VALUE`
    /// for each other axis the run had, so each point is a cell of its own.
    fn shard_name(&self, target: &str, scenario: &str) -> String {
        let mut name = cell_name(target, scenario, self.server_version.as_deref());
        for value in [&self.agent, &self.client, &self.sdk_version, &self.persist]
            .into_iter()
            .flatten()
        {
            name.push_str(" · ");
            name.push_str(value);
        }
        name
    }
}

/// One cell to run (or report as skipped): its place and its point.
#[derive(Debug, Clone)]
pub struct PlannedCell {
    /// 1-based, in matrix order: events and the report's order.
    pub index: usize,
    /// Index into the run's scenarios.
    pub scenario: usize,
    pub point: CellPoint,
    pub labels: CellLabels,
}

/// The matrix of a run (or of its shard).
#[derive(Debug, Clone)]
pub struct Matrix {
    pub axes: Axes,
    pub targets: Vec<String>,
    pub scenarios: Vec<String>,
    /// The cells this run holds, in matrix order.
    pub cells: Vec<PlannedCell>,
}

impl Matrix {
    /// Every point of `targets` × `scenarios` × the axes, outermost first:
    /// server, client, SDK (hosted clients only), store, agent, target,
    /// scenario; then only the shard's cells, renumbered from 1.
    pub fn build(
        targets: Vec<String>,
        scenarios: &[Scenario],
        axes: Axes,
        partition: Option<&Partition>,
    ) -> Matrix {
        let named = axes.named();
        let mut all: Vec<(usize, CellPoint)> = Vec::new();
        for server in &axes.servers {
            for client in &axes.clients {
                let sdks: Vec<Option<&SdkPoint>> = match client.hosts_sdk() {
                    true => axes.sdks.iter().map(Some).collect(),
                    false => vec![None],
                };
                for sdk in sdks {
                    for persist in &axes.persists {
                        for agent in &axes.agents {
                            for target in &targets {
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
        let labelled: Vec<(usize, CellPoint, CellLabels)> = all
            .into_iter()
            .map(|(s, point)| {
                let labels = CellLabels::of(&point, named);
                (s, point, labels)
            })
            .collect();
        let selected = match partition {
            Some(p) => {
                let names: Vec<String> = labelled
                    .iter()
                    .map(|(_, p, l)| l.shard_name(&p.target, &p.scenario))
                    .collect();
                p.selects(&names)
            }
            None => vec![true; labelled.len()],
        };
        let cells = labelled
            .into_iter()
            .zip(selected)
            .filter(|(_, keep)| *keep)
            .enumerate()
            .map(|(n, ((scenario, point, labels), _))| PlannedCell {
                index: n + 1,
                scenario,
                point,
                labels,
            })
            .collect();
        Matrix {
            targets,
            scenarios: scenarios.iter().map(|s| s.name.clone()).collect(),
            axes,
            cells,
        }
    }

    /// The axes cells name, each with its values (`agent`, `client`,
    /// `serverVersion`, `sdkVersion`, `persist`, as `report.json` names
    /// them): what a run's progress shows before its first cell.
    pub fn named_axes(&self) -> Vec<(&'static str, Vec<String>)> {
        let named = self.axes.named();
        let axes = &self.axes;
        [
            (
                named.agent,
                "agent",
                axes.agents.iter().map(|a| a.name.clone()).collect(),
            ),
            (
                named.client,
                "client",
                axes.clients.iter().map(|c| c.name().to_string()).collect(),
            ),
            (
                named.server,
                "serverVersion",
                axes.servers.iter().map(|s| s.label.clone()).collect(),
            ),
            (
                named.sdk,
                "sdkVersion",
                axes.sdks.iter().map(|s| s.label.clone()).collect(),
            ),
            (
                named.persist,
                "persist",
                axes.persists.iter().map(|p| p.name().to_string()).collect(),
            ),
        ]
        .into_iter()
        .filter(|(named, _, _)| *named)
        .map(|(_, name, values)| (name, values))
        .collect()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A rust cell of `target` × native-continuity on server point `server`.
    pub(in crate::runner) fn point(target: &str, server: &str) -> CellPoint {
        CellPoint {
            target: target.into(),
            scenario: "native-continuity".into(),
            agent: DEFAULT_AGENT.into(),
            real_agent: false,
            client: ClientKind::Rust,
            server: ServerPoint::registry(server),
            sdk: None,
            persist: PersistPoint::Sqlite,
        }
    }

    fn scenarios(names: &[&str]) -> Vec<Scenario> {
        let all = crate::scenario::builtin_scenarios();
        names
            .iter()
            .map(|n| all.iter().find(|s| s.name == *n).unwrap().clone())
            .collect()
    }

    fn axes() -> Axes {
        Axes {
            agents: vec![AgentPoint {
                name: DEFAULT_AGENT.into(),
                real: false,
            }],
            clients: vec![ClientKind::Rust],
            servers: vec![ServerPoint::registry("0.4.2")],
            sdks: vec![SdkPoint::registry("0.4.2")],
            persists: vec![PersistPoint::Sqlite],
        }
    }

    fn targets() -> Vec<String> {
        vec!["agent".into(), "gateway".into()]
    }

    #[test]
    fn one_value_per_axis_names_nothing_and_shards_keep_their_names() {
        let s = scenarios(&["native-continuity", "recreate-rehydrate"]);
        let m = Matrix::build(targets(), &s, axes(), None);
        assert_eq!(m.cells.len(), 4);
        assert!(m.cells.iter().all(|c| c.labels == CellLabels::default()));
        assert!(m.named_axes().is_empty());
        assert_eq!(
            m.cells[0].labels.shard_name("agent", "native-continuity"),
            "agent/native-continuity"
        );
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
        let m = Matrix::build(vec!["agent".into()], &s, axes.clone(), None);
        let points: Vec<(Option<&str>, Option<&str>, bool)> = m
            .cells
            .iter()
            .map(|c| {
                (
                    c.labels.client.as_deref(),
                    c.labels.server_version.as_deref(),
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
                ("client", vec!["rust".to_string(), "ts-sdk".into()]),
                ("serverVersion", vec!["0.4.0".to_string(), "0.4.2".into()])
            ]
        );
        let mut cell =
            crate::report::attempts::aggregate("agent", "native-continuity", None, Vec::new());
        m.cells[3].labels.stamp(&mut cell);
        assert_eq!(cell.label(), "agent · ts-sdk @ 0.4.2");
        // Two shards hold every cell once between them.
        let mut held = 0;
        for k in 1..=2 {
            let p: Partition = format!("count:{k}/2").parse().unwrap();
            let shard = Matrix::build(vec!["agent".into()], &s, axes.clone(), Some(&p));
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
            .all(|c| c.labels.agent.as_deref() == Some("codex")));
        assert!(m.cells.iter().all(|c| c.point.real_agent));
    }
}
