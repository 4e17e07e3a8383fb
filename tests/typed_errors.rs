//! Keeps errors typed: no function outside test code returns
//! `Result<_, String>` (nor holds one in its return type), in the main
//! crate or in any crate of the workspace. A string error cannot be told
//! apart by its caller, so it is classified by its words: what the
//! one-shape work removed, and what a later feature brought back once.
//!
//! Test code is left out: items under `#[cfg(test)]`, and the files of a
//! module declared under it (`#[cfg(test)] mod props;`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `#[cfg(test)]` and friends (`cfg(all(test, unix))`), but not `cfg(not(test))`.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        let syn::Meta::List(list) = &a.meta else {
            return false;
        };
        let tokens = list.tokens.to_string();
        list.path.is_ident("cfg")
            && tokens
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .any(|w| w == "test")
            && !tokens.contains("not")
    })
}

/// The folder a file's child modules live in: `a/b.rs` → `a/b/`, and
/// `mod.rs`, `lib.rs`, `main.rs` → their own folder.
fn child_dir(file: &Path) -> PathBuf {
    let parent = file.parent().expect("a parent");
    match file.file_stem().and_then(|s| s.to_str()) {
        Some("mod" | "lib" | "main") => parent.to_path_buf(),
        Some(stem) => parent.join(stem),
        None => parent.to_path_buf(),
    }
}

/// The files (and folders) of the modules `file` declares test-only.
fn test_only_modules(file: &Path, ast: &syn::File) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for item in &ast.items {
        let syn::Item::Mod(m) = item else { continue };
        if m.content.is_some() || !is_test_only(&m.attrs) {
            continue;
        }
        let path_attr = m.attrs.iter().find_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        });
        let name = m.ident.to_string();
        match path_attr {
            Some(p) => out.push(file.parent().expect("a parent").join(p)),
            None => {
                let dir = child_dir(file);
                out.push(dir.join(format!("{name}.rs")));
                out.push(dir.join(&name));
            }
        }
    }
    out
}

/// Whether `ty` is, or holds, `Result<_, String>`.
fn holds_string_result(ty: &syn::Type) -> bool {
    let syn::Type::Path(path) = ty else {
        return false;
    };
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return false;
    };
    let types: Vec<&syn::Type> = args
        .args
        .iter()
        .filter_map(|a| match a {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .collect();
    let is_string = |t: &syn::Type| {
        matches!(t, syn::Type::Path(p)
            if p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "String"))
    };
    (last.ident == "Result" && types.len() == 2 && is_string(types[1]))
        || types.into_iter().any(holds_string_result)
}

/// The functions of one file that return a string error.
#[derive(Default)]
struct Finder {
    found: Vec<String>,
}

impl Finder {
    fn check(&mut self, sig: &syn::Signature) {
        if let syn::ReturnType::Type(_, ty) = &sig.output {
            if holds_string_result(ty) {
                self.found.push(sig.ident.to_string());
            }
        }
    }
}

impl<'ast> Visit<'ast> for Finder {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test_only(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test_only(&f.attrs) {
            self.check(&f.sig);
            syn::visit::visit_item_fn(self, f);
        }
    }
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if !is_test_only(&i.attrs) {
            syn::visit::visit_item_impl(self, i);
        }
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_test_only(&f.attrs) {
            self.check(&f.sig);
            syn::visit::visit_impl_item_fn(self, f);
        }
    }
    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if !is_test_only(&f.attrs) {
            self.check(&f.sig);
            syn::visit::visit_trait_item_fn(self, f);
        }
    }
}

/// The string-error functions of `source`, by name.
fn string_errors(source: &str) -> Vec<String> {
    let ast = syn::parse_file(source).expect("a source that parses");
    let mut finder = Finder::default();
    finder.visit_file(&ast);
    finder.found
}

/// Every source root of the workspace: `src/`, each `crates/*/src/`.
fn source_roots() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut roots = vec![root.join("src")];
    for entry in std::fs::read_dir(root.join("crates")).expect("read crates/") {
        let src = entry.expect("dir entry").path().join("src");
        if src.is_dir() {
            roots.push(src);
        }
    }
    roots
}

#[test]
fn no_function_outside_tests_returns_a_string_error() {
    let mut files = Vec::new();
    for root in source_roots() {
        rust_files(&root, &mut files);
    }
    let parsed: Vec<(PathBuf, String, syn::File)> = files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("read source");
            let ast = syn::parse_file(&text)
                .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
            (path, text, ast)
        })
        .collect();
    let test_only: BTreeSet<PathBuf> = parsed
        .iter()
        .flat_map(|(path, _, ast)| test_only_modules(path, ast))
        .collect();
    assert!(
        test_only
            .iter()
            .any(|p| p.ends_with("acp/transport/props.rs")),
        "the test-only module files were not found: {test_only:?}"
    );
    let mut offenders = Vec::new();
    for (path, text, _) in &parsed {
        if test_only.iter().any(|t| path.starts_with(t)) {
            continue;
        }
        for name in string_errors(text) {
            offenders.push(format!("{}: fn {name}", path.display()));
        }
    }
    assert!(
        offenders.is_empty(),
        "these return `Result<_, String>`; give them a typed error (thiserror):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_finder_sees_string_errors_in_fns_methods_and_nested_types_but_not_in_tests() {
    let source = r#"
        fn a() -> Result<(), String> { Ok(()) }
        fn b() -> std::result::Result<u8, std::string::String> { Ok(1) }
        fn c() -> Option<Vec<Result<u8, String>>> { None }
        fn typed() -> Result<(), Error> { Ok(()) }
        fn text() -> String { String::new() }
        struct S;
        impl S { fn d(&self) -> Result<S, String> { Ok(S) } }
        trait T { fn e() -> Result<(), String>; }
        #[cfg(test)]
        fn in_test() -> Result<(), String> { Ok(()) }
        #[cfg(test)]
        mod tests { fn f() -> Result<(), String> { Ok(()) } }
        #[cfg(not(test))]
        fn g() -> Result<(), String> { Ok(()) }
    "#;
    assert_eq!(string_errors(source), ["a", "b", "c", "d", "e", "g"]);
}

#[test]
fn a_module_declared_for_tests_is_left_out_by_its_files() {
    let ast = syn::parse_file(
        "#[cfg(test)] mod props;\n#[cfg(test)] #[path = \"x/y.rs\"] mod y;\nmod live;",
    )
    .unwrap();
    let found = test_only_modules(Path::new("src/acp/transport.rs"), &ast);
    assert_eq!(
        found,
        [
            PathBuf::from("src/acp/transport/props.rs"),
            PathBuf::from("src/acp/transport/props"),
            PathBuf::from("src/acp/x/y.rs"),
        ]
    );
}
