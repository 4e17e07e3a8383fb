//! Keeps the recipes of ARCHITECTURE.md ("How to add…") true: a source
//! file that lists every variant of a recipe's type in a `match` (no
//! default arm, so a new variant does not compile until it is given its
//! arm there) is a file that recipe's throwaway example touches, so the
//! recipe must name it. A match with a default arm is not counted: a new
//! variant takes the default there without a change.
//!
//! It reads every crate of the workspace through the layer check's reader
//! (`tests/layers/read.rs`), test code left out.

// The layer check's reader: which files a crate's module tree reaches
// from `src/lib.rs`, test-only `mod` lines not followed. Only that of it
// is used here, so its graph's other parts are unread.
#[allow(dead_code)]
#[path = "layers/read.rs"]
mod read;

use read::{crate_roots, is_test_only};
use std::collections::BTreeSet;
use std::path::Path;
use syn::visit::Visit;

/// A recipe of ARCHITECTURE.md and the types whose variants it adds.
struct Recipe {
    heading: &'static str,
    types: &'static [&'static str],
    /// Where those types are seen (a path prefix from the workspace's
    /// root): another crate may have a type of the same name (the fault
    /// proxy's `Step`).
    within: &'static [&'static str],
}

const RECIPES: &[Recipe] = &[
    Recipe {
        heading: "### A step kind",
        types: &["Step", "StepKind"],
        within: &["src/"],
    },
    Recipe {
        heading: "### A restart target",
        types: &["BuiltinTarget"],
        within: &["src/", "crates/"],
    },
    Recipe {
        heading: "### An axis",
        types: &["Axis", "AxisValue"],
        within: &["src/", "crates/"],
    },
    Recipe {
        heading: "### A client",
        types: &["ClientKind", "ClientChoice", "CellClient"],
        within: &["src/", "crates/"],
    },
];

/// The types of `types` that a `match` lists every arm of by variant, with
/// no default arm (`_`, or a bare binding).
#[derive(Default)]
struct ListingMatches<'a> {
    types: &'a [&'a str],
    /// The type of the `impl` block being read (what `Self::` names).
    self_type: Option<String>,
    /// The one of `types` whose variants the file imports (`use T::*`),
    /// which a bare `Variant` arm names.
    glob: Option<String>,
    found: BTreeSet<String>,
}

/// Where a pattern is read: the types a recipe adds variants to, the
/// `impl` it is in and the type whose variants the file imports.
struct Scope<'a> {
    types: &'a [&'a str],
    self_type: Option<&'a str>,
    glob: Option<&'a str>,
}

/// The type a pattern names a variant of (`Step::Restart`,
/// `StepKind::Prompt if …`, `Step::Connect { .. } | Step::Dispose { .. }`,
/// `step @ (…)`, `Self::Agent` in its `impl`, `Agent` after `use
/// BuiltinTarget::*`), if it is one of `types`; `Err(())` for a default
/// arm (`_`, or a binding: a lower-case name).
fn variant_of(pat: &syn::Pat, scope: &Scope<'_>) -> Result<Option<String>, ()> {
    let path = match pat {
        syn::Pat::Wild(_) => return Err(()),
        syn::Pat::Ident(p) => match &p.subpat {
            Some((_, sub)) => return variant_of(sub, scope),
            None if p.ident.to_string().starts_with(char::is_uppercase) => {
                return Ok(scope.glob.map(str::to_string))
            }
            None => return Err(()),
        },
        syn::Pat::Or(or) => {
            let mut named = None;
            for case in &or.cases {
                if let Some(ty) = variant_of(case, scope)? {
                    named = Some(ty);
                }
            }
            return Ok(named);
        }
        syn::Pat::Paren(p) => return variant_of(&p.pat, scope),
        syn::Pat::Path(p) => &p.path,
        syn::Pat::Struct(p) => &p.path,
        syn::Pat::TupleStruct(p) => &p.path,
        _ => return Ok(None),
    };
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let owner = segments
        .len()
        .checked_sub(2)
        .map(|i| segments[i].as_str())
        .map(|owner| match (owner, scope.self_type) {
            ("Self", Some(ty)) => ty,
            _ => owner,
        });
    Ok(owner
        .filter(|owner| scope.types.contains(owner))
        .map(str::to_string))
}

impl<'ast> Visit<'ast> for ListingMatches<'_> {
    fn visit_expr_match(&mut self, m: &'ast syn::ExprMatch) {
        let scope = Scope {
            types: self.types,
            self_type: self.self_type.as_deref(),
            glob: self.glob.as_deref(),
        };
        let arms: Result<Vec<Option<String>>, ()> = m
            .arms
            .iter()
            .map(|arm| variant_of(&arm.pat, &scope))
            .collect();
        if let Ok(arms) = arms {
            self.found.extend(arms.into_iter().flatten());
        }
        syn::visit::visit_expr_match(self, m);
    }
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test_only(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test_only(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if is_test_only(&i.attrs) {
            return;
        }
        let ty = match &*i.self_ty {
            syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        };
        let outer = std::mem::replace(&mut self.self_type, ty);
        syn::visit::visit_item_impl(self, i);
        self.self_type = outer;
    }
}

/// The one of `types` whose variants `source` imports with `use …T::*`.
fn glob_import<'a>(source: &str, types: &[&'a str]) -> Option<&'a str> {
    let mut globbed = types.iter().copied().filter(|ty| {
        source.contains(&format!("use {ty}::*;")) || source.contains(&format!("::{ty}::*;"))
    });
    let first = globbed.next();
    first.filter(|_| globbed.next().is_none())
}

/// Which of `types` some `match` in `source` lists every arm of by variant.
fn listed_in(source: &str, types: &[&str]) -> BTreeSet<String> {
    let ast = syn::parse_file(source).expect("a source that parses");
    let mut finder = ListingMatches {
        types,
        glob: glob_import(source, types).map(str::to_string),
        ..ListingMatches::default()
    };
    finder.visit_file(&ast);
    finder.found
}

/// Every product source file of the workspace (test code left out), by
/// its path from the workspace root, with its text.
fn product_files() -> Vec<(String, String)> {
    let top = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for root in crate_roots() {
        let files = read::crate_files(&root);
        let graph = read::read(&files);
        assert!(graph.unreadable.is_empty(), "{:?}", graph.unreadable);
        let prefix = root.strip_prefix(top).expect("under the workspace");
        for file in graph.top_of_file.keys() {
            let path = prefix.join(file).to_string_lossy().replace('\\', "/");
            out.push((path, files[file].clone()));
        }
    }
    out
}

/// The text of one recipe: from its heading to the next heading.
fn recipe<'a>(architecture: &'a str, heading: &str) -> &'a str {
    let start = architecture
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has no `{heading}`"));
    let body = &architecture[start + heading.len() + 2..];
    let end = body.find("\n#").unwrap_or(body.len());
    &body[..end]
}

#[test]
fn each_recipe_names_every_file_that_lists_its_types_variants() {
    let top = Path::new(env!("CARGO_MANIFEST_DIR"));
    let architecture = std::fs::read_to_string(top.join("ARCHITECTURE.md")).unwrap();
    let files = product_files();
    let mut missing = Vec::new();
    for Recipe {
        heading,
        types,
        within,
    } in RECIPES
    {
        let text = recipe(&architecture, heading);
        let seen = files
            .iter()
            .filter(|(path, _)| within.iter().any(|w| path.starts_with(w)));
        for (path, source) in seen {
            let listed = listed_in(source, types);
            if !listed.is_empty() && !text.contains(&format!("`{path}`")) {
                missing.push(format!(
                    "{path} lists every {} in a match: `{heading}` must name it (or give that match a default arm)",
                    listed.into_iter().collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn the_finder_counts_matches_without_a_default_arm_and_not_in_tests() {
    let source = r#"
        fn a(s: Step) { match s { Step::A => {}, Step::B { .. } | Step::C(_) => {} } }
        fn b(s: Step) { match s { Step::A => {}, _ => {} } }
        fn c(k: StepKind) { match k { StepKind::A if x => {}, other => {} } }
        fn d(k: Other) { match k { Other::A => {}, Other::B => {} } }
        fn e(k: StepKind) { match k { k @ (StepKind::A | StepKind::B) => {} } }
        impl Kind { fn h(self) { match self { Self::A => {}, Self::B => {} } } }
    "#;
    assert_eq!(
        listed_in(source, &["Step", "StepKind", "Kind"]),
        BTreeSet::from([
            "Kind".to_string(),
            "Step".to_string(),
            "StepKind".to_string()
        ])
    );
    assert!(listed_in(
        "fn g(s: Step) { match s { Step::A => {}, s => {} } }",
        &["Step"]
    )
    .is_empty());
    let in_tests = "#[cfg(test)] mod tests { fn f(s: Step) { match s { Step::A => {} } } }";
    assert!(listed_in(in_tests, &["Step"]).is_empty());
    let globbed =
        "fn i(t: Target) { use Target::*; match t { Agent => {}, Gateway | Rivet => {} } }";
    assert_eq!(
        listed_in(globbed, &["Target"]),
        BTreeSet::from(["Target".to_string()])
    );
    let bound = "fn j(t: Target) { use Target::*; match t { Agent => {}, other => {} } }";
    assert!(listed_in(bound, &["Target"]).is_empty());
}
