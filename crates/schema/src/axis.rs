//! The axes of the matrix besides target and scenario: the one [`Axis`]
//! enum every layer names an axis by (`compare --axis`, `run.points`,
//! messages), with each axis's spellings once (its name, serde's; its key
//! in `report.json`; its heading word; its part of a row label), and
//! [`AxisValue`], a cell's typed value on one axis, one variant per axis.
//! The client and the store are closed sets with a type of their own
//! ([`ClientKind`], [`Store`], each as a [`Named`], which keeps a name
//! this continuity does not know); the server and SDK points and the
//! agent are names a user gives (a registry version, a candidate's label,
//! an agent's name), kept as the text they are.

use crate::named::Named;
use crate::{ClientKind, Store};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// An axis of the matrix besides target and scenario. The variants are in
/// `report.json`'s order of a cell's keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    /// The sandbox-agent server point (`--server-version`, `--server-bin`).
    Server,
    /// The agent (`--agent`).
    Agent,
    /// The client (`--client`).
    Client,
    /// The SDK point a hosted client runs (`--sdk-version`, `--sdk`).
    Sdk,
    /// The session store (`--persist`).
    Persist,
}

/// How many axes there are: a `Point` holds a value for each.
pub const AXES: usize = 5;

impl Axis {
    /// Every axis, in `report.json`'s order.
    pub const ALL: [Axis; AXES] = [
        Axis::Server,
        Axis::Agent,
        Axis::Client,
        Axis::Sdk,
        Axis::Persist,
    ];

    /// The order a row label lists the axes in: the server last, as
    /// ` @ VERSION` after the others.
    pub const LABEL_ORDER: [Axis; AXES] = [
        Axis::Agent,
        Axis::Client,
        Axis::Sdk,
        Axis::Persist,
        Axis::Server,
    ];

    /// How `--axis`, `run.points` and messages name it (serde's name).
    pub fn name(self) -> &'static str {
        crate::wire_name::of(&self)
    }

    /// Its key on a cell in `report.json`.
    pub fn field(self) -> &'static str {
        match self {
            Axis::Server => "serverVersion",
            Axis::Sdk => "sdkVersion",
            other => other.name(),
        }
    }

    /// The word headings put before a point's label (`server 0.4.2`, `SDK fix`).
    pub fn title(self) -> &'static str {
        match self {
            Axis::Sdk => "SDK",
            other => other.name(),
        }
    }

    /// The names its values may take, when they are a fixed set (the
    /// clients', the stores'); `None` for an axis of labels a user gives.
    pub fn known_names(self) -> Option<Vec<&'static str>> {
        match self {
            Axis::Client => Some(ClientKind::all().iter().map(|c| c.name()).collect()),
            Axis::Persist => Some(Store::all().iter().map(|s| s.name()).collect()),
            Axis::Server | Axis::Agent | Axis::Sdk => None,
        }
    }

    /// What its values are and the `run` flags that give them, in a
    /// sentence (what `compare --axis` and an axis's own flag say of it).
    pub fn about(self) -> &'static str {
        match self {
            Axis::Server => "The server points (`--server-version`, `--server-bin`).",
            Axis::Agent => "The agents (`--agent`).",
            Axis::Client => "The clients (`--client`).",
            Axis::Sdk => "The SDK points (`--sdk-version`, `--sdk`).",
            Axis::Persist => "The session stores (`--persist`).",
        }
    }

    /// Its column's heading in the summary matrix.
    pub fn column(self) -> &'static str {
        match self {
            Axis::Persist => "store",
            other => other.name(),
        }
    }

    /// What a row label puts before the value (`agent · ts-sdk · sdk fix @ 0.4.2`).
    pub(crate) fn label_prefix(self) -> &'static str {
        match self {
            Axis::Server => " @ ",
            Axis::Sdk => " · sdk ",
            _ => " · ",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }

    pub(crate) fn of_field(key: &str) -> Option<Axis> {
        Axis::ALL.into_iter().find(|a| a.field() == key)
    }
}

/// A name that is no axis's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownAxis(pub String);

impl std::fmt::Display for UnknownAxis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let known = Axis::ALL.map(Axis::name).join(", ");
        write!(f, "{:?} is not an axis ({known})", self.0)
    }
}

impl std::error::Error for UnknownAxis {}

impl std::str::FromStr for Axis {
    type Err = UnknownAxis;

    fn from_str(text: &str) -> Result<Axis, UnknownAxis> {
        Axis::ALL
            .into_iter()
            .find(|a| a.name() == text)
            .ok_or_else(|| UnknownAxis(text.to_string()))
    }
}

/// A cell's value on one axis: the variant is the axis.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AxisValue {
    /// A server point's label: its registry version, or a candidate's label.
    Server(String),
    /// An agent's name.
    Agent(String),
    Client(Named<ClientKind>),
    /// An SDK point's label: its registry version, or a candidate's label.
    Sdk(String),
    Persist(Named<Store>),
}

impl AxisValue {
    /// The value `name` names on `axis`, as `report.json`, `--cell` or an
    /// expectation writes it: never an error (an unknown client or store
    /// is kept as an unknown [`Named`]).
    pub fn parse(axis: Axis, name: &str) -> AxisValue {
        match axis {
            Axis::Server => AxisValue::Server(name.to_string()),
            Axis::Agent => AxisValue::Agent(name.to_string()),
            Axis::Client => AxisValue::Client(Named::parse(name)),
            Axis::Sdk => AxisValue::Sdk(name.to_string()),
            Axis::Persist => AxisValue::Persist(Named::parse(name)),
        }
    }

    /// The axis it is a value of.
    pub fn axis(&self) -> Axis {
        match self {
            AxisValue::Server(_) => Axis::Server,
            AxisValue::Agent(_) => Axis::Agent,
            AxisValue::Client(_) => Axis::Client,
            AxisValue::Sdk(_) => Axis::Sdk,
            AxisValue::Persist(_) => Axis::Persist,
        }
    }

    /// Its name as `report.json` writes it (see [`Named::name`]).
    pub fn name(&self) -> &str {
        match self {
            AxisValue::Server(label) | AxisValue::Agent(label) | AxisValue::Sdk(label) => label,
            AxisValue::Client(client) => client.name(),
            AxisValue::Persist(store) => store.name(),
        }
    }
}

impl From<ClientKind> for AxisValue {
    fn from(client: ClientKind) -> AxisValue {
        AxisValue::Client(client.into())
    }
}

impl From<Store> for AxisValue {
    fn from(store: Store) -> AxisValue {
        AxisValue::Persist(store.into())
    }
}

impl fmt::Display for AxisValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Its name, as `report.json` and the JSON events write it.
impl Serialize for AxisValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_axis_is_named_once_and_parsed_back() {
        for axis in Axis::ALL {
            assert_eq!(axis.name().parse::<Axis>(), Ok(axis));
        }
        assert_eq!(Axis::Persist.name(), "persist");
        assert_eq!(Axis::Sdk.field(), "sdkVersion");
        assert!("store".parse::<Axis>().is_err());
    }

    #[test]
    fn every_axis_parses_to_its_own_variant() {
        for axis in Axis::ALL {
            let value = AxisValue::parse(axis, "x");
            assert_eq!(value.axis(), axis);
            assert_eq!(value.name(), "x");
        }
        assert_eq!(
            AxisValue::parse(Axis::Client, "ts-sdk"),
            AxisValue::from(ClientKind::TsSdk)
        );
    }

    #[test]
    fn a_client_or_store_is_its_own_type_on_its_axis() {
        for &kind in ClientKind::all() {
            let value = AxisValue::parse(Axis::Client, kind.name());
            assert_eq!(value, AxisValue::from(kind));
            assert!(matches!(&value, AxisValue::Client(k) if k.is(kind)));
        }
        for &store in Store::all() {
            let value = AxisValue::parse(Axis::Persist, store.name());
            assert_eq!(value, AxisValue::from(store));
            assert_eq!(serde_json::to_value(&value).unwrap(), store.name());
        }
        let unknown = AxisValue::parse(Axis::Persist, "mysql");
        assert!(matches!(&unknown, AxisValue::Persist(s) if s.known().is_none()));
        assert_eq!(serde_json::to_value(&unknown).unwrap(), "mysql");
    }

    /// The axes of a fixed set of names list them (what an expectation's
    /// glob on the axis must match); the others take any label.
    #[test]
    fn only_the_client_and_store_axes_have_known_names() {
        for axis in Axis::ALL {
            let names = axis.known_names();
            match axis {
                // Every client's name, each its own: the list is
                // ClientKind's (its own test holds the names), so a new
                // client is no change here.
                Axis::Client => {
                    let names = names.unwrap();
                    assert_eq!(names.len(), ClientKind::all().len());
                    for (name, kind) in names.iter().zip(ClientKind::all()) {
                        assert_eq!(name.parse::<ClientKind>(), Ok(*kind));
                    }
                }
                Axis::Persist => assert_eq!(names.unwrap().len(), Store::all().len()),
                _ => assert_eq!(names, None, "{axis:?}"),
            }
        }
    }

    /// Values order by their names, as when points held text: a sort of
    /// stores puts `indexeddb` before `memory`.
    #[test]
    fn values_order_by_their_names() {
        let mut stores = [Store::Sqlite, Store::IndexedDb, Store::Memory].map(AxisValue::from);
        stores.sort();
        assert_eq!(
            stores.map(|s| s.to_string()),
            ["indexeddb", "memory", "sqlite"]
        );
    }
}
