//! A cell's coordinates, one type: [`Point`] (target × scenario, and the
//! value of each [`Axis`] the run had), and the one [`Axis`] enum every
//! layer names an axis by (`compare --axis`, `run.points`, messages).
//! Each axis's spellings live here once: its name (serde's), its key in
//! `report.json`, its heading word and its part of a row label. Every join
//! ("the same cell on another client, version, SDK, store") is
//! [`Point::with`] then an equality, never a list of fields.

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
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

/// How many axes a [`Point`] holds a value for.
const AXES: usize = 5;

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
    pub(crate) const LABEL_ORDER: [Axis; AXES] = [
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

    /// Its column's heading in the summary matrix.
    pub fn column(self) -> &'static str {
        match self {
            Axis::Persist => "store",
            other => other.name(),
        }
    }

    /// What a row label puts before the value (`agent · ts-sdk · sdk fix @ 0.4.2`).
    fn label_prefix(self) -> &'static str {
        match self {
            Axis::Server => " @ ",
            Axis::Sdk => " · sdk ",
            _ => " · ",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    fn of_field(key: &str) -> Option<Axis> {
        Axis::ALL.into_iter().find(|a| a.field() == key)
    }
}

/// A name that is no axis's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{:?} is not an axis ({})", .0, Axis::ALL.map(Axis::name).join(", "))]
pub struct UnknownAxis(pub String);

impl std::str::FromStr for Axis {
    type Err = UnknownAxis;

    fn from_str(text: &str) -> Result<Axis, UnknownAxis> {
        Axis::ALL
            .into_iter()
            .find(|a| a.name() == text)
            .ok_or_else(|| UnknownAxis(text.to_string()))
    }
}

/// A cell's coordinates: target × scenario, and its value on each axis it
/// names (a run names an axis when it has more than one value there, see
/// `runner::Matrix`). Also a cell's identity across runs, shards and
/// expectations: two cells are the same cell when their points are equal.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Point {
    pub target: String,
    pub scenario: String,
    values: [Option<String>; AXES],
}

impl Point {
    /// `target × scenario`, naming no axis.
    pub fn new(target: impl Into<String>, scenario: impl Into<String>) -> Point {
        Point {
            target: target.into(),
            scenario: scenario.into(),
            values: Default::default(),
        }
    }

    /// Its value on `axis`, when it names one.
    pub fn get(&self, axis: Axis) -> Option<&str> {
        self.values[axis.index()].as_deref()
    }

    /// Sets (or with `None` clears) its value on `axis`.
    pub fn set(&mut self, axis: Axis, value: Option<String>) {
        self.values[axis.index()] = value;
    }

    /// The same point with `value` on `axis` (or none): the same cell on
    /// another client, version, SDK or store.
    pub fn with(&self, axis: Axis, value: Option<&str>) -> Point {
        let mut point = self.clone();
        point.set(axis, value.map(str::to_string));
        point
    }

    /// The axes it names, each with its value, in `report.json`'s order.
    pub fn named(&self) -> impl Iterator<Item = (Axis, &str)> {
        Axis::ALL
            .into_iter()
            .filter_map(|axis| self.get(axis).map(|v| (axis, v)))
    }

    /// What follows the target in a row label: ` · AGENT`, ` · CLIENT`,
    /// ` · sdk SDK`, ` · STORE`, then ` @ VERSION`; `None` naming no axis.
    pub fn suffix(&self) -> Option<String> {
        let suffix: String = Axis::LABEL_ORDER
            .into_iter()
            .filter_map(|axis| {
                self.get(axis)
                    .map(|v| format!("{}{v}", axis.label_prefix()))
            })
            .collect();
        (!suffix.is_empty()).then_some(suffix)
    }

    /// The row label: the target and [`Point::suffix`].
    pub fn label(&self) -> String {
        format!("{}{}", self.target, self.suffix().unwrap_or_default())
    }
}

/// `target × scenario · agent · client · sdk SDK · store @ version`, as
/// messages name a cell: one inert line (a report from elsewhere names
/// its cells as it likes).
impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let suffix = self.suffix().unwrap_or_default();
        let name = format!("{} × {}{suffix}", self.target, self.scenario);
        f.write_str(&crate::untrusted::Untrusted::new(&name).terminal())
    }
}

/// A cell's keys in `report.json` (flattened into the cell): `target`,
/// `scenario`, `serverVersion` (always, `null` without a server axis, as
/// v2 always wrote it), then each other axis's key when it names one.
impl Serialize for Point {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("target", &self.target)?;
        map.serialize_entry("scenario", &self.scenario)?;
        for axis in Axis::ALL {
            let value = self.get(axis);
            if value.is_some() || axis == Axis::Server {
                map.serialize_entry(axis.field(), &value)?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Point {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Point, D::Error> {
        deserializer.deserialize_map(PointVisitor)
    }
}

struct PointVisitor;

impl<'de> Visitor<'de> for PointVisitor {
    type Value = Point;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a cell's target, scenario and axis values")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Point, A::Error> {
        let (mut target, mut scenario) = (None, None);
        let mut point = Point::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "target" => target = Some(map.next_value::<String>()?),
                "scenario" => scenario = Some(map.next_value::<String>()?),
                other => match Axis::of_field(other) {
                    Some(axis) => point.set(axis, map.next_value::<Option<String>>()?),
                    // The cell's other keys: not the point's.
                    None => {
                        map.next_value::<de::IgnoredAny>()?;
                    }
                },
            }
        }
        point.target = target.ok_or_else(|| de::Error::missing_field("target"))?;
        point.scenario = scenario.ok_or_else(|| de::Error::missing_field("scenario"))?;
        Ok(point)
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
    fn a_point_labels_and_displays_its_axes_in_one_order() {
        let point = Point::new("agent", "native-continuity")
            .with(Axis::Server, Some("0.4.2"))
            .with(Axis::Persist, Some("sqlite"))
            .with(Axis::Client, Some("ts-sdk"))
            .with(Axis::Sdk, Some("fix"));
        assert_eq!(point.label(), "agent · ts-sdk · sdk fix · sqlite @ 0.4.2");
        assert_eq!(
            point.to_string(),
            "agent × native-continuity · ts-sdk · sdk fix · sqlite @ 0.4.2"
        );
        assert_eq!(
            Point::new("agent", "s").to_string(),
            "agent × s",
            "no axis, no suffix"
        );
    }

    #[test]
    fn a_point_round_trips_as_v2_wrote_it() {
        let point = Point::new("agent", "s").with(Axis::Client, Some("rust"));
        let json = serde_json::to_string(&point).unwrap();
        assert_eq!(
            json,
            r#"{"target":"agent","scenario":"s","serverVersion":null,"client":"rust"}"#
        );
        assert_eq!(serde_json::from_str::<Point>(&json).unwrap(), point);
    }

    /// Reports written before cells carried a `Point` read back and write
    /// out the same JSON: the v2 shape is unchanged.
    #[test]
    fn a_v2_report_round_trips_unchanged() {
        for text in [
            include_str!("../../../tests/fixtures/terminal/report.json"),
            include_str!("../../../tests/fixtures/report-v2/report.json"),
        ] {
            let report: crate::Report = serde_json::from_str(text).unwrap();
            let original: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_value(&report).unwrap(), original);
        }
    }
}
