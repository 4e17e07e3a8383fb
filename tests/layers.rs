//! Keeps the module picture in `src/lib.rs` true: every import runs down its
//! layer table, and no files import each other in a circle. The checker
//! itself is tested on small made-up crates, so a bad import really fails.
//!
//! It reads the main crate (`src/`) only: the lower layers are crates of
//! their own (`crates/`), whose edges cargo keeps (a crate cannot name one
//! above it), so what is left here is what crate edges cannot say: the
//! order of the main crate's modules, and circles between its files.
//!
//! One crate edge cargo cannot say is here too: the schema crate
//! (`crates/schema`, the published shape of report.json, trace.jsonl and
//! the JSON events) depends on serde and serde_json and nothing else, so
//! a tool that reads report.json pulls in no renderer.
//!
//! And CONTRIBUTING's size rule: a file over 400 lines, in the main crate
//! or any crate of the workspace, says why at its top ("Over 400 lines
//! ...") or is split.
//!
//! Run: `cargo test --test layers -- --nocapture` (prints the module graph).

#[path = "layers/checker.rs"]
mod checker;
#[path = "layers/read.rs"]
mod read;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use checker::{check, layer_table, Files};

fn crate_sources() -> Files {
    read::crate_files(Path::new(env!("CARGO_MANIFEST_DIR")))
}

#[test]
fn imports_run_down_the_layer_table_of_lib_rs_without_circles() {
    let files = crate_sources();
    let layers = layer_table(&files["src/lib.rs"]);
    assert!(
        layers.len() >= 5,
        "lib.rs lists its layers as `//! - `module`: ...` lines; found {layers:?}"
    );
    let findings = check(&files, &layers);
    print_module_graph(&files, &layers);
    assert!(
        findings.is_clean(),
        "the layers of src/lib.rs are not true:\n{findings}"
    );
}

/// The module-to-module picture, top layer first (for `--nocapture` readers).
fn print_module_graph(files: &Files, layers: &[Vec<String>]) {
    let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let edges = checker::edges(files);
    let two_way: Vec<String> = edges
        .iter()
        .filter(|e| e.nested && e.from < e.to)
        .filter(|e| {
            edges
                .iter()
                .any(|back| back.from == e.to && back.to == e.from)
        })
        .map(|e| format!("{} <-> {}", e.from, e.to))
        .collect();
    println!(
        "{} file imports. A module's file and its own submodules that use each other",
        edges.len()
    );
    println!(
        "(one module's inside, not counted as a circle): {}",
        two_way.len()
    );
    for pair in &two_way {
        println!("  {pair}");
    }
    println!("Modules, top layer first, and what each imports:");
    for e in edges {
        let (a, b) = (top(&e.from), top(&e.to));
        if a != b {
            uses.entry(a).or_default().insert(b);
        }
    }
    for line in layers {
        for m in line {
            let below: Vec<_> = uses.get(m).into_iter().flatten().cloned().collect();
            println!("{m:>10} -> {}", below.join(", "));
        }
    }
}

fn top(file: &str) -> String {
    let rest = file.trim_start_matches("src/");
    let head = rest.split('/').next().unwrap_or(rest);
    head.trim_end_matches(".rs").to_string()
}

/// A made-up crate: `app` over `store` over `util`.
fn synthetic(extra: &[(&str, &str)]) -> (Files, Vec<Vec<String>>) {
    let lib = "//! - `app`: the top\n//! - `store`: the middle\n//! - `util`: the bottom\n\
               pub mod app;\npub mod store;\npub mod util;\n";
    let mut files: Files = [
        ("src/lib.rs", lib),
        (
            "src/app.rs",
            "use crate::store::Store;\npub fn run(_: Store) {}\n",
        ),
        ("src/store/mod.rs", "mod disk;\npub use disk::Store;\n"),
        (
            "src/store/disk.rs",
            "pub struct Store;\npub fn size() -> usize { crate::util::KB }\n",
        ),
        ("src/util.rs", "pub const KB: usize = 1024;\n"),
    ]
    .into_iter()
    .map(|(p, t)| (p.to_string(), t.to_string()))
    .collect();
    for (p, t) in extra {
        files.insert(p.to_string(), t.to_string());
    }
    let layers = layer_table(&files["src/lib.rs"]);
    (files, layers)
}

#[test]
fn the_checker_passes_a_crate_whose_imports_point_down() {
    let (files, layers) = synthetic(&[]);
    assert_eq!(layers, vec![vec!["app"], vec!["store"], vec!["util"]]);
    let findings = check(&files, &layers);
    assert!(findings.is_clean(), "{findings}");
    let edges: Vec<_> = checker::edges(&files)
        .into_iter()
        .map(|e| (e.from, e.to))
        .collect();
    // `app` names `store::Store`, which is defined in disk.rs: the edge goes
    // to the definition; store/mod.rs's re-export of its child is no edge.
    assert!(
        edges.contains(&("src/app.rs".into(), "src/store/disk.rs".into())),
        "{edges:?}"
    );
    assert!(
        edges.contains(&("src/store/disk.rs".into(), "src/util.rs".into())),
        "{edges:?}"
    );
    assert!(
        !edges.iter().any(|(a, _)| a == "src/store/mod.rs"),
        "{edges:?}"
    );
    assert_eq!(edges.len(), 2, "{edges:?}");
}

#[test]
fn the_checker_fails_a_lower_layer_that_imports_a_higher_one() {
    let util =
        "pub const KB: usize = 1024;\npub fn go() { crate::app::run(crate::store::Store) }\n";
    let (files, layers) = synthetic(&[("src/util.rs", util)]);
    let findings = check(&files, &layers);
    let upward: Vec<_> = findings
        .upward
        .iter()
        .map(|e| (e.from.as_str(), e.to.as_str()))
        .collect();
    assert!(
        upward.contains(&("src/util.rs", "src/app.rs")),
        "{findings}"
    );
    assert!(
        upward.contains(&("src/util.rs", "src/store/disk.rs")),
        "{findings}"
    );
    // util -> app -> store -> util is also a circle of files.
    assert_eq!(findings.circles.len(), 1, "{findings}");
}

#[test]
fn the_checker_fails_an_upward_import_hidden_behind_a_use_alias_or_a_macro() {
    let util = "use crate::app as top;\npub const KB: usize = 1024;\n\
                pub fn show() -> String { format!(\"{:?}\", top::NAME) }\n";
    let app =
        "use crate::store::Store;\npub const NAME: &str = \"app\";\npub fn run(_: Store) {}\n";
    let (files, layers) = synthetic(&[("src/util.rs", util), ("src/app.rs", app)]);
    let findings = check(&files, &layers);
    assert_eq!(findings.upward.len(), 1, "{findings}");
    assert_eq!(findings.upward[0].to, "src/app.rs");
    assert!(findings.upward[0].names.contains("NAME"), "{findings}");
}

#[test]
fn the_checker_sees_paths_in_attribute_arguments() {
    let util = "pub const KB: usize = 1024;\n\
                #[derive(Debug)]\npub struct Args {\n    #[arg(long, default_value = crate::app::NAME)]\n    pub name: String,\n}\n";
    let app =
        "use crate::store::Store;\npub const NAME: &str = \"app\";\npub fn run(_: Store) {}\n";
    let (files, layers) = synthetic(&[("src/util.rs", util), ("src/app.rs", app)]);
    let findings = check(&files, &layers);
    assert_eq!(findings.upward.len(), 1, "{findings}");
    assert_eq!(
        (
            findings.upward[0].from.as_str(),
            findings.upward[0].to.as_str()
        ),
        ("src/util.rs", "src/app.rs")
    );
}

#[test]
fn the_checker_finds_sibling_files_that_import_each_other_inside_one_module() {
    let disk = "use super::cache::Cache;\npub struct Store;\npub fn hit(_: Cache) {}\n";
    let cache = "pub struct Cache;\npub fn fill() -> super::disk::Store { super::disk::Store }\n";
    let store = "mod cache;\nmod disk;\npub use disk::Store;\n";
    let (files, layers) = synthetic(&[
        ("src/store/disk.rs", disk),
        ("src/store/cache.rs", cache),
        ("src/store/mod.rs", store),
    ]);
    let findings = check(&files, &layers);
    assert!(findings.upward.is_empty(), "{findings}");
    assert_eq!(findings.circles.len(), 1, "{findings}");
    let tied: BTreeSet<_> = findings.circles[0]
        .iter()
        .map(|e| (e.from.as_str(), e.to.as_str()))
        .collect();
    assert_eq!(
        tied,
        BTreeSet::from([
            ("src/store/cache.rs", "src/store/disk.rs"),
            ("src/store/disk.rs", "src/store/cache.rs")
        ])
    );
}

#[test]
fn the_checker_leaves_test_code_out_and_reports_unlisted_modules() {
    let util =
        "pub const KB: usize = 1024;\n#[cfg(test)]\nmod tests {\n    use crate::app::run;\n}\n";
    let lib = "//! - `app`: the top\n//! - `store`, `gone`: the middle\n\
               pub mod app;\npub mod store;\npub mod util;\n";
    let (files, _) = synthetic(&[("src/util.rs", util), ("src/lib.rs", lib)]);
    let findings = check(&files, &layer_table(&files["src/lib.rs"]));
    assert!(
        findings.upward.is_empty() && findings.circles.is_empty(),
        "{findings}"
    );
    assert_eq!(
        findings.unlisted,
        vec![
            "module `util` is in no layer".to_string(),
            "`gone` is listed but is no module".to_string()
        ]
    );
}

#[test]
fn the_checker_reports_a_mod_line_without_its_file() {
    let (files, layers) = synthetic(&[("src/app.rs", "mod missing;\n")]);
    let findings = check(&files, &layers);
    assert_eq!(findings.unreadable.len(), 1, "{findings}");
    assert!(
        findings.unreadable[0].contains("mod missing;"),
        "{findings}"
    );
}

#[test]
fn a_module_and_its_own_submodules_using_each_other_make_no_circle() {
    let store = "mod disk;\npub const BLOCK: usize = 4;\npub fn open() -> usize { disk::size() }\n";
    let disk = "pub fn size() -> usize { super::BLOCK * crate::util::KB }\n";
    let (files, layers) = synthetic(&[("src/store/mod.rs", store), ("src/store/disk.rs", disk)]);
    let findings = check(&files, &layers);
    assert!(findings.is_clean(), "{findings}");
    let inside: Vec<_> = checker::edges(&files)
        .into_iter()
        .filter(|e| e.nested)
        .map(|e| (e.from, e.to))
        .collect();
    assert_eq!(
        inside,
        vec![
            (
                "src/store/disk.rs".to_string(),
                "src/store/mod.rs".to_string()
            ),
            (
                "src/store/mod.rs".to_string(),
                "src/store/disk.rs".to_string()
            )
        ]
    );
}

/// What the schema crate may depend on: serde and serde_json, nothing
/// else, and no dev or build dependencies either (`cargo tree -p
/// continuity-schema` then lists those two alone).
const SCHEMA_DEPENDENCIES: [&str; 2] = ["serde", "serde_json"];

/// The dependencies of a `Cargo.toml` beyond [`SCHEMA_DEPENDENCIES`], by
/// table (`dependencies`, `dev-dependencies`, `build-dependencies`, and
/// each `target.*` one's).
fn beyond_serde(manifest: &str) -> Vec<String> {
    let manifest: toml::Table = toml::from_str(manifest).expect("the manifest is TOML");
    let mut tables: Vec<(String, &toml::Value)> = Vec::new();
    let kinds = ["dependencies", "dev-dependencies", "build-dependencies"];
    for kind in kinds {
        if let Some(table) = manifest.get(kind) {
            tables.push((kind.to_string(), table));
        }
    }
    for (target, spec) in manifest
        .get("target")
        .and_then(|t| t.as_table())
        .into_iter()
        .flatten()
    {
        for kind in kinds {
            if let Some(table) = spec.get(kind) {
                tables.push((format!("target.{target}.{kind}"), table));
            }
        }
    }
    let mut found = Vec::new();
    for (kind, table) in tables {
        for name in table.as_table().into_iter().flat_map(|t| t.keys()) {
            if kind != "dependencies" || !SCHEMA_DEPENDENCIES.contains(&name.as_str()) {
                found.push(format!("{kind}: {name}"));
            }
        }
    }
    found
}

#[test]
fn the_schema_crate_depends_on_serde_and_serde_json_only() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/schema/Cargo.toml");
    let manifest = std::fs::read_to_string(&path).expect("crates/schema/Cargo.toml");
    let beyond = beyond_serde(&manifest);
    assert!(
        beyond.is_empty(),
        "continuity-schema may depend on serde and serde_json only; it names {beyond:?}"
    );
}

#[test]
fn the_schema_check_names_every_other_dependency() {
    let manifest = r#"
        [package]
        name = "continuity-schema"
        [dependencies]
        serde.workspace = true
        serde_json.workspace = true
        thiserror.workspace = true
        [dev-dependencies]
        serde.workspace = true
        [target.'cfg(unix)'.dependencies]
        libc = "0.2"
    "#;
    assert_eq!(
        beyond_serde(manifest),
        [
            "dependencies: thiserror",
            "dev-dependencies: serde",
            "target.cfg(unix).dependencies: libc",
        ]
    );
}

/// A file longer than this says why at the top of its `//!` comment.
const LONG_FILE_LINES: usize = 400;
/// The words that open that reason (CONTRIBUTING: "A module over ~400
/// lines needs a reason").
const LONG_FILE_MARKER: &str = "Over 400 lines";

/// The files of `files` over [`LONG_FILE_LINES`] whose top `//!` comment
/// (the inner doc lines before the first item, inner attributes and blank
/// lines between them allowed) lacks [`LONG_FILE_MARKER`], each with its
/// line count.
fn long_files_without_a_reason(files: &Files) -> Vec<String> {
    files
        .iter()
        .filter(|(_, text)| text.lines().count() > LONG_FILE_LINES)
        .filter(|(_, text)| {
            let top: Vec<&str> = text
                .lines()
                .map(str::trim_start)
                .take_while(|l| l.starts_with("//!") || l.starts_with("#![") || l.is_empty())
                .filter(|l| l.starts_with("//!"))
                .collect();
            !top.join(" ").contains(LONG_FILE_MARKER)
        })
        .map(|(path, text)| format!("{path} ({} lines)", text.lines().count()))
        .collect()
}

#[test]
fn every_file_over_400_lines_says_why_at_its_top() {
    let mut missing = Vec::new();
    for root in read::crate_roots() {
        let rel = root
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .expect("a crate root under the workspace")
            .to_string_lossy()
            .replace('\\', "/");
        for file in long_files_without_a_reason(&read::crate_files(&root)) {
            missing.push(match rel.as_str() {
                "" => file,
                dir => format!("{dir}/{file}"),
            });
        }
    }
    assert!(
        missing.is_empty(),
        "{} file(s) over {LONG_FILE_LINES} lines neither split nor saying why: split each along \
         its seam, or write at the top of its `//!` comment \"{LONG_FILE_MARKER} on purpose: \
         <what keeps it together, what was already split apart>\" (see \
         src/targets/readiness.rs):\n  {}",
        missing.len(),
        missing.join("\n  ")
    );
}

#[test]
fn the_size_check_finds_a_long_file_whose_reason_is_missing_or_not_at_its_top() {
    // A file of `top` and then one-line items up to `lines` lines.
    let file = |top: &str, lines: usize| {
        let rest = lines - top.lines().count();
        format!("{top}{}", "fn f() {}\n".repeat(rest))
    };
    let reason = "//! Over 400 lines on purpose: one loop.\n";
    let files: Files = [
        ("src/at_the_limit.rs", file("//! Owns a thing.\n", 400)),
        (
            "src/reasoned.rs",
            file(&format!("//! Owns a thing.\n//!\n{reason}"), 401),
        ),
        (
            "src/after_attributes.rs",
            file(
                &format!("//! Owns a thing.\n#![allow(unused)]\n\n{reason}"),
                401,
            ),
        ),
        ("src/bare.rs", file("//! Owns a thing.\n", 401)),
        (
            "src/below_an_item.rs",
            file(&format!("//! Owns a thing.\nfn g() {{}}\n{reason}"), 401),
        ),
        (
            "src/in_a_plain_comment.rs",
            file("// Over 400 lines on purpose: one loop.\n", 401),
        ),
    ]
    .into_iter()
    .map(|(p, t)| (p.to_string(), t))
    .collect();
    assert_eq!(
        long_files_without_a_reason(&files),
        [
            "src/bare.rs (401 lines)",
            "src/below_an_item.rs (401 lines)",
            "src/in_a_plain_comment.rs (401 lines)",
        ]
    );
}
