//! Does each recipe of ARCHITECTURE.md ("How to add…") again: each
//! throwaway example in `tests/recipes/` (a recipe done on the tree by
//! hand, kept as its `git diff`) is applied to a copy of the tree, each
//! file it touches must be one its recipe names, and their number is held
//! against the count the recipe states (read from the recipe's own words,
//! so the doc and the test cannot disagree); the copy with every
//! throwaway applied must compile. A recipe that grew, a patch that no
//! longer applies, or a tree where a recipe's files no longer suffice
//! fails, naming the recipe and what to do.
//!
//! The copy and its build live under the test's target directory
//! (`recipe-scratch/`), never in the tree's own build: `cargo check`
//! writes no binary, and its target dir is its own, so the suite's
//! `target/debug/continuity` is left alone. The copy is synced, a file
//! written only when its bytes changed, so a second run with nothing
//! changed rechecks nothing.
//!
//! In the suite on purpose: a cold check of the copy is minutes of
//! compiling, which here runs (niced) beside the stack tests, whose time is
//! mostly waiting for restarts and deadlines, instead of after them.

mod scratch;

use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `tests/recipes/throwaways.toml`: one table per throwaway.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    throwaway: Vec<Throwaway>,
}

/// A recipe's throwaway example.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Throwaway {
    /// Its patch, in `tests/recipes/`.
    patch: String,
    /// The recipe's heading in ARCHITECTURE.md.
    recipe: String,
    /// The recipe's words right before the number of files it states.
    count: String,
}

/// What to do when a throwaway no longer holds, said with every failure.
const REDO: &str = "do the recipe again on a clean tree as its text says, then regenerate the patch (`git add -N` its new files, `git diff ':(exclude)tests/recipes' > tests/recipes/NAME.patch`, put the tree back; tests/recipes/throwaways.toml)";

fn top() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn recipes_dir() -> PathBuf {
    top().join("tests/recipes")
}

/// The text of one recipe: from its heading to the next heading, its
/// words on one line.
fn recipe_text(architecture: &str, heading: &str) -> Option<String> {
    let start = architecture.find(&format!("\n{heading}\n"))?;
    let body = &architecture[start + heading.len() + 2..];
    let end = body.find("\n#").unwrap_or(body.len());
    Some(body[..end].split_whitespace().collect::<Vec<_>>().join(" "))
}

/// A count as a recipe writes it: digits, or a word up to twelve.
fn number(word: &str) -> Option<usize> {
    const WORDS: [&str; 13] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve",
    ];
    let word = word
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    word.parse()
        .ok()
        .or_else(|| WORDS.iter().position(|w| *w == word))
}

/// The number of files the recipe `text` states right after `words`
/// (which it must hold exactly once).
fn stated_count(text: &str, words: &str) -> Result<usize, String> {
    let words = words.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut found = text.match_indices(&words);
    let (at, _) = found
        .next()
        .ok_or_else(|| format!("the recipe has no words {words:?} before its count of files"))?;
    if found.next().is_some() {
        return Err(format!(
            "the recipe has the words {words:?} twice: which count?"
        ));
    }
    let next = text[at + words.len()..].split_whitespace().next();
    next.and_then(number).ok_or_else(|| {
        format!(
            "the recipe's words {words:?} are followed by {:?}, not a count",
            next.unwrap_or("nothing")
        )
    })
}

/// The files a patch touches (made, changed or removed), by path.
fn touched_files(patch: &str) -> BTreeSet<String> {
    patch
        .lines()
        .filter_map(|line| line.strip_prefix("diff --git a/"))
        .filter_map(|paths| paths.split_once(" b/").map(|(_, b)| b.to_string()))
        .collect()
}

/// Whether the recipe `text` names `path` in backticks: the path itself,
/// a folder it is in (`tests/suite/real/`), or a pattern whose `<…>` parts
/// each stand for one word of a file name (`src/scenario/execute/<name>_client.rs`).
fn named_in(text: &str, path: &str) -> bool {
    text.split('`').skip(1).step_by(2).any(|name| {
        name == path
            || (name.ends_with('/') && path.starts_with(name))
            || pattern_matches(name, path)
    })
}

/// Whether `path` is `pattern` with each `<…>` part one word (letters,
/// digits, `_`, `-`).
fn pattern_matches(pattern: &str, path: &str) -> bool {
    let Some((head, rest)) = pattern.split_once('<') else {
        return pattern == path;
    };
    let Some((_, tail)) = rest.split_once('>') else {
        return false;
    };
    let Some(after) = path.strip_prefix(head) else {
        return false;
    };
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    (1..=after.len())
        .take_while(|&i| after[..i].chars().all(word))
        .any(|i| pattern_matches(tail, &after[i..]))
}

/// Whether the throwaway of `throwaway` touches no more files than its
/// recipe says; `Err` says what is wrong and what to do.
fn judge_count(throwaway: &Throwaway, architecture: &str, patch: &str) -> Result<usize, String> {
    let Throwaway {
        patch: name,
        recipe,
        count,
    } = throwaway;
    let text = recipe_text(architecture, recipe)
        .ok_or_else(|| format!("ARCHITECTURE.md has no `{recipe}`, the recipe tests/recipes/throwaways.toml gives {name}"))?;
    let stated = stated_count(&text, count).map_err(|e| {
        format!(
            "`{recipe}`: {e} (tests/recipes/throwaways.toml's `count` of {name} is those words)"
        )
    })?;
    let touched = touched_files(patch);
    if touched.is_empty() {
        return Err(format!(
            "tests/recipes/{name} is no patch (no `diff --git` line): {REDO}"
        ));
    }
    // `git diff > tests/recipes/NAME.patch` on a patch git tracks: the
    // shell empties it before git reads the tree, so its own diff is in it.
    if let Some(own) = touched.iter().find(|p| p.starts_with("tests/recipes/")) {
        return Err(format!(
            "tests/recipes/{name} touches {own}: a throwaway's own diff went into it; {REDO}"
        ));
    }
    let unnamed: Vec<&str> = touched
        .iter()
        .map(String::as_str)
        .filter(|path| !named_in(&text, path))
        .collect();
    if !unnamed.is_empty() {
        return Err(format!(
            "tests/recipes/{name} touches {}, which `{recipe}` does not name: name each file in the recipe (or the folder, `dir/`, or a pattern, `dir/<name>.rs`); else {REDO}",
            unnamed.join(", ")
        ));
    }
    if touched.len() > stated {
        return Err(format!(
            "`{recipe}` says {stated} files, but its throwaway tests/recipes/{name} touches {}: {}. If the recipe grew, say so in ARCHITECTURE.md with its count; else {REDO}",
            touched.len(),
            touched.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(touched.len())
}

fn read_table() -> Vec<Throwaway> {
    let path = recipes_dir().join("throwaways.toml");
    let text = std::fs::read_to_string(&path).expect("read tests/recipes/throwaways.toml");
    let table: Table = toml::from_str(&text).expect("tests/recipes/throwaways.toml");
    table.throwaway
}

/// Every patch in `tests/recipes/` is a throwaway of the table, and every
/// throwaway's patch is there.
fn patches_match_the_table(table: &[Throwaway]) -> Vec<String> {
    let listed: BTreeSet<&str> = table.iter().map(|t| t.patch.as_str()).collect();
    let mut problems = Vec::new();
    for entry in std::fs::read_dir(recipes_dir()).expect("read tests/recipes") {
        let name = entry
            .expect("dir entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if name.ends_with(".patch") && !listed.contains(name.as_str()) {
            problems.push(format!("tests/recipes/{name} is in no table of tests/recipes/throwaways.toml: give it its recipe there"));
        }
    }
    for name in listed {
        if !recipes_dir().join(name).is_file() {
            problems.push(format!(
                "tests/recipes/throwaways.toml names {name}, which is not in tests/recipes/"
            ));
        }
    }
    problems
}

#[test]
fn each_recipe_s_throwaway_touches_no_more_files_than_it_says_and_compiles() {
    let table = read_table();
    let architecture = std::fs::read_to_string(top().join("ARCHITECTURE.md")).unwrap();
    let mut problems = patches_match_the_table(&table);
    for t in &table {
        let Ok(patch) = std::fs::read_to_string(recipes_dir().join(&t.patch)) else {
            continue;
        };
        match judge_count(t, &architecture, &patch) {
            Ok(files) => eprintln!("{}: {files} files, `{}`", t.patch, t.recipe),
            Err(problem) => problems.push(problem),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));

    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target dir")
        .join("recipe-scratch");
    std::fs::create_dir_all(&dir).unwrap();
    // Two runs at once would sync into one copy: one at a time.
    let lock = std::fs::File::create(dir.join("lock")).unwrap();
    lock.lock().expect("lock the scratch copy");
    let started = Instant::now();
    let staging = dir.join("staging");
    if let Err(problem) = scratch::copy_and_apply(&table, &dir, &staging) {
        panic!("{problem}");
    }
    scratch::sync(&staging, &dir.join("tree"));
    eprintln!(
        "copied and patched in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    let checked = scratch::check(&dir.join("tree"), &dir.join("target"));
    eprintln!(
        "cargo check of the copy: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    if let Err(cargo) = checked {
        let all: Vec<&str> = table.iter().map(|t| t.patch.as_str()).collect();
        panic!(
            "the tree with every throwaway applied ({}) does not compile (the copy is in {}): a recipe's files no longer suffice, or a patch went stale. For each recipe whose patch the errors name: {REDO}\ncargo said:\n{cargo}",
            all.join(", "),
            dir.join("tree").display()
        );
    }
}

#[test]
fn a_recipe_s_count_is_read_from_its_words() {
    let text = "A client is five files. A step kind is 4 files; one the client takes (most are) six, a field included.";
    assert_eq!(stated_count(text, "A client is"), Ok(5));
    assert_eq!(stated_count(text, "A step kind is"), Ok(4));
    assert_eq!(stated_count(text, "(most are)"), Ok(6));
    assert!(stated_count(text, "An axis is")
        .unwrap_err()
        .contains("no words"));
    assert!(stated_count(text, "files").unwrap_err().contains("twice"));
    assert!(stated_count(text, "A client")
        .unwrap_err()
        .contains("not a count"));
}

/// A patch that touches one file more than its recipe says is refused,
/// naming the recipe, the files and what to do; one at the count passes;
/// a text with no `diff --git` line is no patch.
#[test]
fn a_throwaway_over_its_recipe_s_count_fails_naming_the_recipe() {
    let architecture =
        "# A\n\n### A thing\n\nA thing is two files: `a.rs` and\n`b.rs`, or `c.rs`.\n\n### Other\n\n`z.rs`\n";
    let throwaway = Throwaway {
        patch: "thing.patch".into(),
        recipe: "### A thing".into(),
        count: "A thing is".into(),
    };
    let diff = |paths: &[&str]| {
        paths
            .iter()
            .map(|p| format!("diff --git a/{p} b/{p}\n--- a/{p}\n+++ b/{p}\n@@ -1 +1 @@\n-a\n+b\n"))
            .collect::<String>()
    };
    assert_eq!(
        judge_count(&throwaway, architecture, &diff(&["a.rs", "b.rs"])),
        Ok(2)
    );
    let over = judge_count(&throwaway, architecture, &diff(&["a.rs", "b.rs", "c.rs"])).unwrap_err();
    assert!(
        over.contains("`### A thing` says 2 files")
            && over.contains("touches 3: a.rs, b.rs, c.rs")
            && over.contains("regenerate the patch"),
        "{over}"
    );
    let unnamed = judge_count(&throwaway, architecture, &diff(&["a.rs", "z.rs"])).unwrap_err();
    assert!(
        unnamed.contains("touches z.rs, which `### A thing` does not name"),
        "{unnamed}"
    );
    let itself = judge_count(
        &throwaway,
        architecture,
        &diff(&["a.rs", "tests/recipes/thing.patch"]),
    )
    .unwrap_err();
    assert!(
        itself.contains("touches tests/recipes/thing.patch: a throwaway's own diff"),
        "{itself}"
    );
    let not_a_patch = judge_count(&throwaway, architecture, "garbage\n").unwrap_err();
    assert!(not_a_patch.contains("is no patch"), "{not_a_patch}");
    let gone = Throwaway {
        recipe: "### A gone thing".into(),
        ..throwaway
    };
    assert!(judge_count(&gone, architecture, &diff(&["a.rs"]))
        .unwrap_err()
        .contains("has no `### A gone thing`"));
}

#[test]
fn a_recipe_names_a_file_by_its_path_its_folder_or_a_pattern() {
    let text = "1. `src/a.rs`: x. 2. `tests/suite/real/` 3. `src/execute/<name>_client.rs` and `docs/<topic>.md`";
    for path in [
        "src/a.rs",
        "tests/suite/real/restart.rs",
        "src/execute/twin_client.rs",
        "src/execute/ts-sdk_client.rs",
        "docs/clients.md",
    ] {
        assert!(named_in(text, path), "{path}");
    }
    for path in [
        "src/b.rs",
        "src/a.rs.bak",
        "tests/suite/quick/x.rs",
        "src/execute/_client.rs",
        "src/execute/a/b_client.rs",
        "docs/clients.txt",
        "x.",
    ] {
        assert!(!named_in(text, path), "{path}");
    }
}
