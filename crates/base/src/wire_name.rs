//! The wire names of the enums above the schema whose variants strum
//! lists (the built-in targets, the step kinds): [`parse`] and [`names`]
//! over strum's `VariantArray`, the same lookup as the schema's
//! ([`continuity_schema::wire_name`], where [`of`] and the serializer
//! that reads a variant's serde name live).

pub use continuity_schema::wire_name::of;
use continuity_schema::wire_name::{names_among, parse_among};
use serde::Serialize;

/// The variant of `T` that serde names `name`, if one is.
pub fn parse<T: Serialize + strum::VariantArray + Copy>(name: &str) -> Option<T> {
    parse_among(T::VARIANTS, name)
}

/// Every variant's name, in order, joined by `, ` (for an error that lists
/// what would have been accepted).
pub fn names<T: Serialize + strum::VariantArray>() -> String {
    names_among(T::VARIANTS)
}

#[cfg(test)]
mod tests {
    use super::{names, parse};
    use serde::Serialize;

    #[derive(Debug, Clone, Copy, PartialEq, Serialize, strum::VariantArray)]
    #[serde(rename_all = "kebab-case")]
    enum Listed {
        TsSdk,
        #[serde(rename = "indexeddb")]
        IndexedDb,
    }

    #[test]
    fn a_strum_listed_enum_is_read_back_from_its_names() {
        assert_eq!(parse::<Listed>("ts-sdk"), Some(Listed::TsSdk));
        assert_eq!(parse::<Listed>("indexeddb"), Some(Listed::IndexedDb));
        assert_eq!(parse::<Listed>("TsSdk"), None);
        assert_eq!(names::<Listed>(), "ts-sdk, indexeddb");
    }
}
