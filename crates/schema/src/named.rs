//! A value of a closed set (a client, a store) as a report names it:
//! [`Named`]. A report from elsewhere (another continuity version, or a
//! hostile writer) may name a client or a store this one does not know,
//! and reading it must not fail: such a name is a [`Named`] that is not
//! [`Named::known`]. Kept as written, it writes back the same bytes, takes
//! the inert form every human rendering gives a report's text (`inert.rs`
//! reads it back as the unknown name it is), never equals a known value,
//! and is never run: no fact of a client or a store is asked of it.

use crate::wire_name::Listed;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

/// A value of a closed set (a client, a store) as a report names it: one
/// this continuity knows, or a name it does not, kept as written. Equal,
/// hashed and ordered by its name, as `report.json` writes it, so a join
/// or a sort does what it did when points held text.
#[derive(Debug, Clone)]
pub struct Named<T>(Repr<T>);

/// Private, so an unknown name is never one of `T`'s: [`Named::parse`]
/// makes every known name the known value.
#[derive(Debug, Clone)]
enum Repr<T> {
    Known(T),
    Unknown(String),
}

impl<T: Copy + Serialize + Listed + 'static> Named<T> {
    /// A known value.
    pub const fn of(value: T) -> Named<T> {
        Named(Repr::Known(value))
    }

    /// The value `name` names, or the unknown name itself: never an error.
    pub fn parse(name: &str) -> Named<T> {
        match crate::wire_name::parse(name) {
            Some(known) => Named(Repr::Known(known)),
            None => Named(Repr::Unknown(name.to_string())),
        }
    }

    /// The value, when this continuity knows it.
    pub fn known(&self) -> Option<T> {
        match self.0 {
            Repr::Known(value) => Some(value),
            Repr::Unknown(_) => None,
        }
    }

    /// Whether it is `value`.
    pub fn is(&self, value: T) -> bool
    where
        T: PartialEq,
    {
        self.known() == Some(value)
    }

    /// Its name as `report.json` writes it: the known value's (serde's),
    /// else the name as read. Text from outside when unknown: it reaches
    /// an output only through the sanitiser, as any report text does.
    pub fn name(&self) -> &str {
        match &self.0 {
            Repr::Known(value) => crate::wire_name::of(value),
            Repr::Unknown(name) => name,
        }
    }
}

impl<T: Copy + Serialize + Listed + 'static> From<T> for Named<T> {
    fn from(value: T) -> Named<T> {
        Named::of(value)
    }
}

impl<T: Copy + Serialize + Listed + 'static> PartialEq for Named<T> {
    fn eq(&self, other: &Named<T>) -> bool {
        self.name() == other.name()
    }
}

impl<T: Copy + Serialize + Listed + 'static> Eq for Named<T> {}

impl<T: Copy + Serialize + Listed + 'static> Hash for Named<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name().hash(state);
    }
}

impl<T: Copy + Serialize + Listed + 'static> PartialOrd for Named<T> {
    fn partial_cmp(&self, other: &Named<T>) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T: Copy + Serialize + Listed + 'static> Ord for Named<T> {
    fn cmp(&self, other: &Named<T>) -> Ordering {
        self.name().cmp(other.name())
    }
}

impl<T: Copy + Serialize + Listed + 'static> fmt::Display for Named<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl<T: Copy + Serialize + Listed + 'static> Serialize for Named<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de, T: Copy + Serialize + Listed + 'static> Deserialize<'de> for Named<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Named<T>, D::Error> {
        let name = String::deserialize(deserializer)?;
        Ok(Named::parse(&name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClientKind, Store};

    #[test]
    fn a_known_name_is_its_value_and_writes_back_the_same() {
        for &kind in ClientKind::all() {
            let named = Named::<ClientKind>::parse(kind.name());
            assert_eq!(named.known(), Some(kind));
            assert!(named.is(kind));
            assert_eq!(named.name(), kind.name());
            assert_eq!(named, Named::of(kind));
        }
        for &store in Store::all() {
            let named: Named<Store> = serde_json::from_value(store.name().into()).unwrap();
            assert_eq!(named.known(), Some(store));
            assert_eq!(serde_json::to_value(&named).unwrap(), store.name());
        }
    }

    /// A name this continuity does not know reads as itself: no error, no
    /// known value, the same bytes written back, equal only to itself.
    #[test]
    fn an_unknown_name_is_kept_as_written_and_is_no_known_value() {
        let deno: Named<ClientKind> = serde_json::from_str(r#""deno""#).unwrap();
        assert_eq!(deno.known(), None);
        assert!(!ClientKind::all().iter().any(|&k| deno.is(k)));
        assert_eq!(deno.name(), "deno");
        assert_eq!(serde_json::to_string(&deno).unwrap(), r#""deno""#);
        assert_eq!(deno, Named::parse("deno"));
        assert_ne!(deno, Named::of(ClientKind::Rust));
        let hostile = "x\u{1b}[2J\n::error::y";
        let store = Named::<Store>::parse(hostile);
        assert_eq!((store.known(), store.name()), (None, hostile));
        assert_eq!(serde_json::to_value(&store).unwrap(), hostile);
    }

    /// Equality, hashing and order are by name, as when points held text:
    /// a sort of points orders clients `browser`, `rust`, `ts-sdk`.
    #[test]
    fn named_values_order_by_their_names() {
        let mut clients: Vec<Named<ClientKind>> = ["ts-sdk", "rust", "deno", "browser"]
            .into_iter()
            .map(Named::parse)
            .collect();
        clients.sort();
        let names: Vec<&str> = clients.iter().map(Named::name).collect();
        assert_eq!(names, ["browser", "deno", "rust", "ts-sdk"]);
    }
}
