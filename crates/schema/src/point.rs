//! A cell's coordinates, one type: [`Point`], target × scenario and the
//! typed value ([`AxisValue`]) of each [`Axis`] the run had, read from and
//! written to a cell's keys in `report.json`. Every join ("the same cell
//! on another client, version, SDK, store") is [`Point::with`] then an
//! equality, every selection [`Point::selects`], and a row of the matrix
//! is a point but its scenario; never a list of fields.

use super::axis::AXES;
pub use super::axis::{Axis, AxisValue, UnknownAxis};
pub use super::named::Named;
use crate::{ClientKind, Store, TargetName};
use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A cell's coordinates: target × scenario, and its value on each axis it
/// names (a run names an axis when it has more than one value there, see
/// `runner::Matrix`). Also a cell's identity across runs, shards and
/// expectations: two cells are the same cell when their points are equal.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Point {
    pub target: TargetName,
    pub scenario: String,
    /// Each axis's value at its [`Axis`]'s index: only [`Point::set`]
    /// writes one, at its own axis's.
    values: Values,
}

/// A point's value on each axis, at the axis's index.
type Values = [Option<AxisValue>; AXES];

/// The client a cell naming none ran: continuity's own.
static OWN_CLIENT: Named<ClientKind> = Named::of(ClientKind::Rust);

impl Point {
    /// `target × scenario`, naming no axis.
    pub fn new(target: impl Into<TargetName>, scenario: impl Into<String>) -> Point {
        Point {
            target: target.into(),
            scenario: scenario.into(),
            values: Default::default(),
        }
    }

    /// Its value on `axis`, when it names one.
    pub fn get(&self, axis: Axis) -> Option<&AxisValue> {
        self.values[axis.index()].as_ref()
    }

    /// The name of its value on `axis` (as `report.json` writes it), when
    /// it names one.
    pub fn name_on(&self, axis: Axis) -> Option<&str> {
        self.get(axis).map(AxisValue::name)
    }

    /// The client it ran: the one it names, else continuity's own (a run
    /// with no client axis ran only that).
    pub fn client(&self) -> &Named<ClientKind> {
        match self.get(Axis::Client) {
            Some(AxisValue::Client(client)) => client,
            _ => &OWN_CLIENT,
        }
    }

    /// The store it names, on a persistence axis.
    pub fn store(&self) -> Option<&Named<Store>> {
        match self.get(Axis::Persist) {
            Some(AxisValue::Persist(store)) => Some(store),
            _ => None,
        }
    }

    /// Sets its value on the axis `value` belongs to.
    pub fn set(&mut self, value: AxisValue) {
        let at = value.axis().index();
        self.values[at] = Some(value);
    }

    /// Names no value on `axis`.
    pub fn clear(&mut self, axis: Axis) {
        self.values[axis.index()] = None;
    }

    /// The same point with `value` on its axis: the same cell on another
    /// client, version, SDK or store.
    pub fn with(&self, value: impl Into<AxisValue>) -> Point {
        let mut point = self.clone();
        point.set(value.into());
        point
    }

    /// The same point naming no value on `axis`.
    pub fn without(&self, axis: Axis) -> Point {
        let mut point = self.clone();
        point.clear(axis);
        point
    }

    /// The values it names, in `report.json`'s order of their axes.
    pub fn named(&self) -> impl Iterator<Item = &AxisValue> {
        self.values.iter().flatten()
    }

    /// Whether `self`, a cell a recipe, a bisect or `show --cell` names,
    /// selects the cell at `cell`: the same target and scenario, and the
    /// same value on every axis `self` names (on an axis it does not
    /// name: any value).
    pub fn selects(&self, cell: &Point) -> bool {
        self.target == cell.target
            && self.scenario == cell.scenario
            && self
                .named()
                .all(|value| cell.get(value.axis()) == Some(value))
    }

    /// Its row of the matrix: the point but its scenario.
    pub fn row(&self) -> RowPoint<'_> {
        RowPoint {
            target: &self.target,
            values: &self.values,
        }
    }

    /// What follows the target in a row label ([`RowPoint::suffix`]).
    pub fn suffix(&self) -> Option<String> {
        self.row().suffix()
    }

    /// The row label: the target and [`Point::suffix`].
    pub fn label(&self) -> String {
        self.row().label()
    }
}

/// A row of the matrix: a [`Point`] but its scenario, the target and its
/// value on every axis, borrowed from a cell's point. The summary's rows,
/// the fix locations' pairs and their not-back lines key cells by it, so
/// two rows are one only when every value is the same, whatever their
/// labels read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RowPoint<'a> {
    pub target: &'a TargetName,
    values: &'a Values,
}

/// The values of a row that names no axis.
static NO_VALUES: Values = [const { None }; AXES];

impl<'a> RowPoint<'a> {
    /// The row of `target` naming no axis (a target of the run that no
    /// cell names).
    pub fn bare(target: &'a TargetName) -> RowPoint<'a> {
        RowPoint {
            target,
            values: &NO_VALUES,
        }
    }

    /// The name of its value on `axis`, when it names one.
    pub fn name_on(&self, axis: Axis) -> Option<&'a str> {
        self.values[axis.index()].as_ref().map(AxisValue::name)
    }

    /// What follows the target in a row label: ` · AGENT`, ` · CLIENT`,
    /// ` · sdk SDK`, ` · STORE`, then ` @ VERSION`; `None` naming no axis.
    pub fn suffix(&self) -> Option<String> {
        let suffix: String = Axis::LABEL_ORDER
            .into_iter()
            .filter_map(|axis| {
                self.name_on(axis)
                    .map(|v| format!("{}{v}", axis.label_prefix()))
            })
            .collect();
        (!suffix.is_empty()).then_some(suffix)
    }

    /// The row label: the target and [`RowPoint::suffix`].
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
            let value = self.name_on(axis);
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
                "target" => target = Some(map.next_value::<TargetName>()?),
                "scenario" => scenario = Some(map.next_value::<String>()?),
                other => match Axis::of_field(other) {
                    Some(axis) => match map.next_value::<Option<String>>()? {
                        Some(name) => point.set(AxisValue::parse(axis, &name)),
                        None => point.clear(axis),
                    },
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
    fn a_point_labels_and_displays_its_axes_in_one_order() {
        let point = Point::new("agent", "native-continuity")
            .with(AxisValue::Server("0.4.2".into()))
            .with(Store::Sqlite)
            .with(ClientKind::TsSdk)
            .with(AxisValue::Sdk("fix".into()));
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
        let point = Point::new("agent", "s").with(ClientKind::Rust);
        let json = serde_json::to_string(&point).unwrap();
        assert_eq!(
            json,
            r#"{"target":"agent","scenario":"s","serverVersion":null,"client":"rust"}"#
        );
        assert_eq!(serde_json::from_str::<Point>(&json).unwrap(), point);
    }

    /// A client or store this continuity does not know (a report from a
    /// later version, or a hostile one) reads as an unknown name: the
    /// point is read, is no known client's, writes back the same bytes,
    /// and displays on one inert line.
    #[test]
    fn a_point_naming_an_unknown_client_or_store_still_reads() {
        let json = r#"{"target":"agent","scenario":"s","serverVersion":null,"client":"deno\u001b[2J","persist":"mysql"}"#;
        let point: Point = serde_json::from_str(json).unwrap();
        assert_eq!(point.client().known(), None);
        assert_eq!(point.client().name(), "deno\u{1b}[2J");
        assert_eq!(point.store().map(Named::known), Some(None));
        assert_ne!(point, point.with(ClientKind::Rust));
        assert_eq!(serde_json::to_string(&point).unwrap(), json);
        assert_eq!(point.to_string(), "agent × s · deno\\x1b[2J · mysql");
    }

    #[test]
    fn a_point_names_a_value_only_on_its_own_axis() {
        let mut point = Point::new("agent", "s");
        assert!(
            point.client().is(ClientKind::Rust),
            "none named: continuity's own"
        );
        assert_eq!(point.get(Axis::Client), None);
        for axis in Axis::ALL {
            point.set(AxisValue::parse(axis, "x"));
        }
        for axis in Axis::ALL {
            assert_eq!(point.get(axis).map(AxisValue::axis), Some(axis));
            assert_eq!(point.name_on(axis), Some("x"));
        }
        let named: Vec<Axis> = point.named().map(AxisValue::axis).collect();
        assert_eq!(named, Axis::ALL);
        assert_eq!(point.without(Axis::Sdk).get(Axis::Sdk), None);
        point.clear(Axis::Client);
        assert!(point.client().is(ClientKind::Rust));
    }

    #[test]
    fn a_row_is_a_point_but_its_scenario() {
        let point = Point::new("agent", "native-continuity")
            .with(ClientKind::TsSdk)
            .with(AxisValue::Server("0.4.2".into()));
        let other_scenario = Point {
            scenario: "native-load".into(),
            ..point.clone()
        };
        assert_eq!(point.row(), other_scenario.row());
        assert_ne!(point.row(), point.without(Axis::Client).row());
        assert_eq!(point.row().label(), point.label());
        assert_eq!(point.row().name_on(Axis::Client), Some("ts-sdk"));
        let agent = TargetName::from("agent");
        let bare = RowPoint::bare(&agent);
        assert_eq!(bare, Point::new("agent", "s").row());
        assert_eq!((bare.suffix(), bare.label()), (None, "agent".to_string()));
    }

    #[test]
    fn a_cell_is_selected_by_what_the_selecting_point_names() {
        let cell = Point::new("agent", "native-continuity")
            .with(ClientKind::TsSdk)
            .with(AxisValue::Sdk("fix".into()));
        assert!(Point::new("agent", "native-continuity").selects(&cell));
        assert!(cell.selects(&cell));
        // Another SDK point.
        assert!(!cell.with(AxisValue::Sdk("0.4.2".into())).selects(&cell));
        assert!(!Point::new("gateway", "native-continuity").selects(&cell));
        assert!(!Point::new("agent", "native-load").selects(&cell));
        // A selected axis the cell does not name selects nothing.
        assert!(!Point::new("agent", "native-continuity")
            .with(Store::Sqlite)
            .selects(&cell));
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
