//! An enum's name on the wire, read from its serde attributes: the one
//! place a unit variant is spelled (`rename_all`, `rename`), so a table
//! or a log line that prints `as_str()` writes what `report.json` and
//! `trace.jsonl` write. [`parse`] and [`names`] read such an enum's
//! names back for the enums whose variants strum lists (the client and
//! store axes, the built-in targets): one lookup, not one per enum.

use serde::ser::{self, Impossible, Serialize, Serializer};
use std::fmt;

/// The name serde writes for `value`, a unit variant of a fieldless enum
/// (`Verdict::Flaky` → `flaky`). Anything else has no such name: `""`,
/// which a test of that enum catches at once.
pub fn of<T: Serialize>(value: &T) -> &'static str {
    value.serialize(VariantName).unwrap_or_default()
}

/// The variant of `T` that serde names `name`, if one is.
pub fn parse<T: Serialize + strum::VariantArray + Copy>(name: &str) -> Option<T> {
    T::VARIANTS.iter().copied().find(|v| of(v) == name)
}

/// Every variant's name, in order, joined by `, ` (for an error that lists
/// what would have been accepted).
pub fn names<T: Serialize + strum::VariantArray>() -> String {
    T::VARIANTS.iter().map(of).collect::<Vec<_>>().join(", ")
}

/// A serializer that only accepts a unit variant and returns its name.
struct VariantName;

#[derive(Debug)]
struct NotAUnitVariant;

impl fmt::Display for NotAUnitVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a unit variant")
    }
}

impl std::error::Error for NotAUnitVariant {}

impl ser::Error for NotAUnitVariant {
    fn custom<T: fmt::Display>(_: T) -> Self {
        NotAUnitVariant
    }
}

/// The methods for every value that is not a unit variant: an error.
macro_rules! refuse {
    ($($method:ident($($arg:ty),*)),* $(,)?) => {
        $(fn $method(self, $(_: $arg),*) -> Result<&'static str, NotAUnitVariant> {
            Err(NotAUnitVariant)
        })*
    };
}

impl Serializer for VariantName {
    type Ok = &'static str;
    type Error = NotAUnitVariant;
    type SerializeSeq = Impossible<&'static str, NotAUnitVariant>;
    type SerializeTuple = Impossible<&'static str, NotAUnitVariant>;
    type SerializeTupleStruct = Impossible<&'static str, NotAUnitVariant>;
    type SerializeTupleVariant = Impossible<&'static str, NotAUnitVariant>;
    type SerializeMap = Impossible<&'static str, NotAUnitVariant>;
    type SerializeStruct = Impossible<&'static str, NotAUnitVariant>;
    type SerializeStructVariant = Impossible<&'static str, NotAUnitVariant>;

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<&'static str, NotAUnitVariant> {
        Ok(variant)
    }

    refuse!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
    );

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<&'static str, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<&'static str, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<&'static str, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }

    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }
}

#[cfg(test)]
mod tests {
    use super::{names, of, parse};
    use serde::Serialize;

    #[derive(Debug, Clone, Copy, PartialEq, Serialize, strum::VariantArray)]
    #[serde(rename_all = "kebab-case")]
    enum Listed {
        TsSdk,
        #[serde(rename = "indexeddb")]
        IndexedDb,
    }

    #[test]
    fn a_listed_enum_is_read_back_from_its_names() {
        assert_eq!(parse::<Listed>("ts-sdk"), Some(Listed::TsSdk));
        assert_eq!(parse::<Listed>("indexeddb"), Some(Listed::IndexedDb));
        assert_eq!(parse::<Listed>("TsSdk"), None);
        assert_eq!(names::<Listed>(), "ts-sdk, indexeddb");
    }

    #[derive(Serialize)]
    #[serde(rename_all = "snake_case")]
    enum Sample {
        TooLarge,
        #[serde(rename = "acp")]
        AcpPost,
        Tuple(u8),
    }

    #[test]
    fn a_unit_variant_is_named_as_serde_writes_it_and_nothing_else_is() {
        assert_eq!(of(&Sample::TooLarge), "too_large");
        assert_eq!(of(&Sample::AcpPost), "acp");
        assert_eq!(of(&Sample::Tuple(1)), "");
        assert_eq!(of(&3u8), "");
    }
}
