//! An enum's name on the wire, read from its serde attributes: the one
//! place a unit variant is spelled (`rename_all`, `rename`), so a table
//! or a log line that prints `as_str()` writes what `report.json` and
//! `trace.jsonl` write. [`parse`] and [`names`] read such an enum's
//! names back from its list of variants ([`Listed`], which
//! [`listed_enum!`](crate::listed_enum) derives for the schema's closed
//! sets, the client and store axes; strum's `VariantArray` gives the
//! list for the enums above the schema, the built-in targets and step
//! kinds): one lookup, not one per enum.

use serde::ser::{self, Impossible, Serialize, Serializer};
use std::fmt;

/// A fieldless enum with the list of its variants, in declaration order.
/// The schema crate depends on serde alone, so [`listed_enum!`](crate::listed_enum)
/// derives this where strum's `VariantArray` would: the list is the
/// enum's own, never written by hand.
pub trait Listed: Sized + 'static {
    const VARIANTS: &'static [Self];
}

/// Declares a fieldless enum (its attributes and each variant's kept as
/// written) and its [`Listed`] list of variants, from the one list.
#[macro_export]
macro_rules! listed_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $( $(#[$vmeta])* $variant ),*
        }

        impl $crate::wire_name::Listed for $name {
            const VARIANTS: &'static [$name] = &[$($name::$variant),*];
        }
    };
}

/// The name serde writes for `value`, a unit variant of a fieldless enum
/// (`Verdict::Flaky` → `flaky`). Anything else has no such name: `""`,
/// which a test of that enum catches at once.
pub fn of<T: Serialize>(value: &T) -> &'static str {
    value.serialize(VariantName).unwrap_or_default()
}

/// The variant of `T` that serde names `name`, if one is.
pub fn parse<T: Serialize + Listed + Copy>(name: &str) -> Option<T> {
    parse_among(T::VARIANTS, name)
}

/// Every variant's name, in order, joined by `, ` (for an error that lists
/// what would have been accepted).
pub fn names<T: Serialize + Listed>() -> String {
    names_among(T::VARIANTS)
}

/// The one of `variants` that serde names `name`, if one is: [`parse`]
/// over any list (strum's, for the enums above the schema).
pub fn parse_among<T: Serialize + Copy>(variants: &[T], name: &str) -> Option<T> {
    variants.iter().copied().find(|v| of(v) == name)
}

/// The names of `variants`, in order, joined by `, `: [`names`] over any list.
pub fn names_among<T: Serialize>(variants: &[T]) -> String {
    variants.iter().map(of).collect::<Vec<_>>().join(", ")
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

    crate::listed_enum! {
        #[derive(Debug, Clone, Copy, PartialEq, Serialize)]
        #[serde(rename_all = "kebab-case")]
        enum Sampled {
            TsSdk,
            /// A variant's own attributes are kept.
            #[serde(rename = "indexeddb")]
            IndexedDb,
        }
    }

    #[test]
    fn a_listed_enum_is_read_back_from_its_names() {
        assert_eq!(parse::<Sampled>("ts-sdk"), Some(Sampled::TsSdk));
        assert_eq!(parse::<Sampled>("indexeddb"), Some(Sampled::IndexedDb));
        assert_eq!(parse::<Sampled>("TsSdk"), None);
        assert_eq!(names::<Sampled>(), "ts-sdk, indexeddb");
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
