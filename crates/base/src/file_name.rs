//! File names built from user text (scenario and target names, ids): the
//! one sanitiser every such name goes through, so no name can climb out of
//! the folder it is put in (`/`, `..`, an absolute path), hide itself (a
//! leading `.`), or be too long for the file system. A leaf: it imports
//! nothing of the crate.

/// At most this many characters of the text are kept (a file name may be
/// 255 bytes; a few of these go into one, beside an index and a number).
const MAX_CHARS: usize = 64;

/// `text` as one path component: ASCII letters, digits, `-`, `_` and `.`
/// kept, everything else (`/`, `\`, spaces, other scripts) `_`; a leading
/// `.` is `_` too, so `.` and `..` never come out; never empty. Distinct
/// texts may give the same name: callers that need distinct files put an
/// index beside it.
pub fn safe(text: &str) -> String {
    let mut name: String = text
        .chars()
        .take(MAX_CHARS)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.starts_with('.') {
        name.replace_range(..1, "_");
    }
    if name.is_empty() {
        name.push('_');
    }
    name
}

#[cfg(test)]
mod tests {
    use super::safe;
    use std::path::{Component, Path};

    #[test]
    fn no_name_leaves_its_folder() {
        for hostile in [
            "/../../../../../../tmp/x/pwn",
            "team/alpha",
            "..",
            ".",
            "",
            "a\\..\\b",
            "/etc/passwd",
            ".hidden",
            "name with spaces and ü",
            &"x".repeat(300),
        ] {
            let name = safe(hostile);
            let path = Path::new("/run").join(&name);
            assert_eq!(
                path.parent(),
                Some(Path::new("/run")),
                "{hostile:?} → {name}"
            );
            assert!(
                matches!(
                    Path::new(&name).components().next(),
                    Some(Component::Normal(_))
                ),
                "{hostile:?} → {name}"
            );
            assert!(!name.starts_with('.') && name.len() <= 64, "{name}");
        }
        assert_eq!(safe("native-continuity"), "native-continuity");
        assert_eq!(safe("team/alpha"), "team_alpha");
        assert_eq!(safe("v0.4.2"), "v0.4.2");
        assert_eq!(safe(".."), "_.");
    }
}
