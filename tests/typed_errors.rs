//! Keeps errors typed: no function outside test code returns
//! `Result<_, String>` (nor holds one in its return type), in the main
//! crate or in any crate of the workspace. A string error cannot be told
//! apart by its caller, so it is classified by its words: what the
//! one-shape work removed, and what a later feature brought back once.
//!
//! Test code is left out: items under `#[cfg(test)]`, and the files of a
//! module declared under it (`#[cfg(test)] mod props;`), which the layer
//! check's reader does not follow from `src/lib.rs`.

// The layer check's reader: which files a crate's module tree reaches
// from `src/lib.rs`, test-only `mod` lines not followed. Only that of it
// is used here, so its graph's other parts are unread.
#[allow(dead_code)]
#[path = "layers/read.rs"]
mod read;

use read::{crate_roots, is_test_only};
use std::path::Path;
use syn::visit::Visit;

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

#[test]
fn no_function_outside_tests_returns_a_string_error() {
    let mut offenders = Vec::new();
    for root in crate_roots() {
        let files = read::crate_files(&root);
        let graph = read::read(&files);
        assert!(
            graph.unreadable.is_empty(),
            "{}: {:?}",
            root.display(),
            graph.unreadable
        );
        // The library's module tree, and the binary's root beside it.
        let product = graph
            .top_of_file
            .keys()
            .map(String::as_str)
            .chain(files.contains_key("src/main.rs").then_some("src/main.rs"));
        for file in product {
            for name in string_errors(&files[file]) {
                offenders.push(format!("{}/{file}: fn {name}", root.display()));
            }
        }
        if root == Path::new(env!("CARGO_MANIFEST_DIR")) {
            // A test-only module's file is not reached; its parent is.
            let reached = |f: &str| graph.top_of_file.contains_key(f);
            assert!(reached("src/acp/transport.rs"));
            assert!(!reached("src/acp/transport/props.rs"));
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

/// The error types held to keeping their cause: a variant of one built
/// from another error keeps that error as its `#[source]` (or is it,
/// `transparent`), never only its words. Each type joins the list once its
/// string-built variants are typed.
const KEEP_THEIR_SOURCE: &[&str] = &["StackError"];

/// Where a held error type is built from another error's words: a tuple
/// variant given `format!(…)` or `.to_string()` of an error in scope (the
/// parameter of a `map_err` closure, or a closure or function parameter
/// whose type is an `…Error`).
#[derive(Default)]
struct Flattener {
    /// The errors in scope, innermost last.
    errors: Vec<String>,
    found: Vec<String>,
}

/// The identifier a simple pattern binds (`e`, `e: T`, `mut e`).
fn bound_ident(pat: &syn::Pat) -> Option<String> {
    match pat {
        syn::Pat::Ident(p) => Some(p.ident.to_string()),
        syn::Pat::Type(t) => bound_ident(&t.pat),
        _ => None,
    }
}

/// Whether `ty` names an error type (`io::Error`, `&ProxyError`).
fn is_error_type(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Reference(r) => is_error_type(&r.elem),
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident.to_string().ends_with("Error")),
        _ => false,
    }
}

impl Flattener {
    /// Whether `arg` is made of the words of an error in scope.
    fn flattens(&self, arg: &syn::Expr) -> bool {
        let names = |text: &str| {
            text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|word| self.errors.iter().any(|e| e == word))
        };
        match arg {
            syn::Expr::Macro(m) => {
                m.mac
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "format")
                    && names(&m.mac.tokens.to_string())
            }
            syn::Expr::MethodCall(call) if call.method == "to_string" => match &*call.receiver {
                syn::Expr::Path(p) => p.path.get_ident().is_some_and(|i| names(&i.to_string())),
                other => self.flattens(other),
            },
            syn::Expr::MethodCall(call) => self.flattens(&call.receiver),
            syn::Expr::Reference(r) => self.flattens(&r.expr),
            syn::Expr::Paren(p) => self.flattens(&p.expr),
            _ => false,
        }
    }

    /// Visits `body` with `params` (those that are errors) in scope.
    fn with_errors(&mut self, params: Vec<String>, visit: impl FnOnce(&mut Self)) {
        let depth = self.errors.len();
        self.errors.extend(params);
        visit(self);
        self.errors.truncate(depth);
    }

    fn typed_error_params<'a>(inputs: impl Iterator<Item = &'a syn::FnArg>) -> Vec<String> {
        inputs
            .filter_map(|arg| match arg {
                syn::FnArg::Typed(t) if is_error_type(&t.ty) => bound_ident(&t.pat),
                _ => None,
            })
            .collect()
    }
}

impl<'ast> Visit<'ast> for Flattener {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test_only(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if !is_test_only(&i.attrs) {
            syn::visit::visit_item_impl(self, i);
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test_only(&f.attrs) {
            let params = Self::typed_error_params(f.sig.inputs.iter());
            self.with_errors(params, |v| syn::visit::visit_item_fn(v, f));
        }
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_test_only(&f.attrs) {
            let params = Self::typed_error_params(f.sig.inputs.iter());
            self.with_errors(params, |v| syn::visit::visit_impl_item_fn(v, f));
        }
    }
    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        match call.args.first() {
            Some(syn::Expr::Closure(closure)) if call.method == "map_err" => {
                self.visit_expr(&call.receiver);
                let params = closure.inputs.iter().filter_map(bound_ident).collect();
                self.with_errors(params, |v| v.visit_expr(&closure.body));
            }
            _ => syn::visit::visit_expr_method_call(self, call),
        }
    }
    fn visit_expr_closure(&mut self, closure: &'ast syn::ExprClosure) {
        let params = closure
            .inputs
            .iter()
            .filter(|p| matches!(p, syn::Pat::Type(t) if is_error_type(&t.ty)))
            .filter_map(bound_ident)
            .collect();
        self.with_errors(params, |v| syn::visit::visit_expr_closure(v, closure));
    }
    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        if let syn::Expr::Path(path) = &*call.func {
            let segments: Vec<String> = path
                .path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect();
            let held = segments.len() >= 2
                && KEEP_THEIR_SOURCE.contains(&segments[segments.len() - 2].as_str());
            if held && !self.errors.is_empty() && call.args.iter().any(|a| self.flattens(a)) {
                self.found.push(segments.join("::"));
            }
        }
        syn::visit::visit_expr_call(self, call);
    }
}

/// Where `source` builds a held error from another error's words.
fn flattened_errors(source: &str) -> Vec<String> {
    let ast = syn::parse_file(source).expect("a source that parses");
    let mut finder = Flattener::default();
    finder.visit_file(&ast);
    finder.found
}

#[test]
fn an_error_built_from_another_keeps_it_as_its_source() {
    let mut offenders = Vec::new();
    for root in crate_roots() {
        let files = read::crate_files(&root);
        let graph = read::read(&files);
        for file in graph.top_of_file.keys() {
            for built in flattened_errors(&files[file]) {
                offenders.push(format!("{}/{file}: {built}", root.display()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "these build an error from another error's words; give the variant a `#[source]` (thiserror):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_flattener_sees_an_error_s_words_but_not_other_text_nor_tests() {
    let source = r#"
        fn a() { x.map_err(|e| StackError::Failed(format!("npm: {e}"))); }
        fn b() { x.map_err(|e| StackError::Failed(format!("npm: {}", e))); }
        fn c(e: ProxyError) -> StackError { StackError::Failed(e.to_string()) }
        fn d() { let f = |e: tokio_postgres::Error| StackError::Failed(format!("pg: {}", chain(&e))); }
        fn e() { x.map_err(|e| StackError::Failed(format!("x: {}", summarize(&e.to_string())))); }
        fn kept() { x.map_err(|source| StackError::Helper { what: "npm".into(), source }); }
        fn own_words(within: Duration) -> StackError { StackError::Failed(format!("not within {within:?}")) }
        fn untyped() { install(|dir| Err(StackError::Failed(format!("in {}", dir.display())))); }
        fn other_type() { x.map_err(|e| TargetError::Failed(format!("{e}"))); }
        #[cfg(test)]
        mod tests { fn t() { x.map_err(|e| StackError::Failed(e.to_string())); } }
    "#;
    assert_eq!(
        flattened_errors(source),
        [
            "StackError::Failed",
            "StackError::Failed",
            "StackError::Failed",
            "StackError::Failed",
            "StackError::Failed"
        ]
    );
}
