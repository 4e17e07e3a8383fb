//! Reads a crate's source files into its file-to-file imports: parses them
//! with syn and resolves every path they name to the file that defines the
//! item (through `use` aliases and re-exports).
//!
//! The rules, chosen so that the graph is the one a reader sees:
//! - an edge runs from a file to the file that *defines* what it names, so a
//!   name reached through a re-export (`pub use`) points at its definition;
//! - a module re-exporting its own descendants (`pub use child::Item`) only
//!   hands the name on: that line is no edge of its own;
//! - test code (`#[cfg(test)]` items and modules) is left out: it may reach
//!   anywhere for fixtures without shaping the product's layers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use syn::punctuated::Punctuated;
use syn::visit::Visit;

/// Source files by path relative to the crate root (`src/lib.rs`, ...).
pub type Files = BTreeMap<String, String>;

/// One `a -> b` import between two files, with the names `a` takes from `b`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub names: BTreeSet<String>,
    /// Between a module's file and the file of one of its own submodules
    /// (`mod.rs` and `action.rs` of one folder): a child naming what its
    /// parent defines for all its children (`super::Shared`), or a parent
    /// using its child. Such a pair is one module's inside, so it does not
    /// count towards a circle; siblings and strangers do.
    pub nested: bool,
}

/// A crate as the checker sees it.
pub struct CrateGraph {
    pub edges: Vec<Edge>,
    /// The modules `lib.rs` declares.
    pub top_modules: BTreeSet<String>,
    /// Each file's top-level module.
    pub top_of_file: BTreeMap<String, String>,
    /// Files that could not be read or parsed, or `mod` lines without a file.
    pub unreadable: Vec<String>,
}

/// Every crate of the workspace: the main one, each under `crates/`.
pub fn crate_roots() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut roots = vec![root.to_path_buf()];
    for entry in std::fs::read_dir(root.join("crates")).expect("read crates/") {
        let path = entry.expect("dir entry").path();
        if path.join("src/lib.rs").is_file() {
            roots.push(path);
        }
    }
    roots
}

/// Every `.rs` file under `root/src`, by its path relative to `root`.
pub fn crate_files(root: &Path) -> Files {
    let mut files = Files::new();
    let mut dirs = vec![root.join("src")];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(root)
                    .expect("under root")
                    .to_string_lossy()
                    .replace('\\', "/");
                files.insert(rel, std::fs::read_to_string(&path).expect("read source"));
            }
        }
    }
    files
}

/// Reads the crate rooted at `src/lib.rs` in `files`.
pub fn read(files: &Files) -> CrateGraph {
    let mut unreadable = Vec::new();
    let krate = Crate::read(files, &mut unreadable);
    CrateGraph {
        edges: krate.edges(),
        top_modules: krate.modules[0].mods.keys().cloned().collect(),
        top_of_file: krate
            .modules
            .iter()
            .rev()
            .map(|m| (m.file.clone(), m.top.clone()))
            .collect(),
        unreadable,
    }
}

/// A module of the crate: the file it lives in, what it defines, what it
/// imports, and the paths its code names.
#[derive(Default)]
struct Module {
    file: String,
    /// Top-level module this one belongs to (`""` for the crate root).
    top: String,
    parent: Option<usize>,
    children_dir: String,
    items: BTreeSet<String>,
    mods: BTreeMap<String, usize>,
    uses: Vec<Use>,
    globs: Vec<Use>,
    paths: Vec<Vec<String>>,
}

#[derive(Clone)]
struct Use {
    alias: String,
    path: Vec<String>,
    public: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum Target {
    Module(usize),
    /// An item defined in this module.
    Item(usize),
}

struct Crate {
    modules: Vec<Module>,
}

impl Crate {
    fn read(files: &Files, unreadable: &mut Vec<String>) -> Crate {
        let mut krate = Crate {
            modules: vec![Module {
                file: "src/lib.rs".into(),
                children_dir: "src".into(),
                ..Module::default()
            }],
        };
        match parse(files, "src/lib.rs") {
            Ok(file) => krate.add_items(0, &file.items, files, unreadable),
            Err(e) => unreadable.push(e),
        }
        krate
    }

    fn add_items(
        &mut self,
        at: usize,
        items: &[syn::Item],
        files: &Files,
        unreadable: &mut Vec<String>,
    ) {
        for item in items {
            if is_test_only(item_attrs(item)) {
                continue;
            }
            match item {
                syn::Item::Mod(m) => self.add_module(at, m, files, unreadable),
                syn::Item::Use(u) => {
                    let public = !matches!(u.vis, syn::Visibility::Inherited);
                    flatten_use(&u.tree, Vec::new(), public, &mut self.modules[at]);
                }
                other => {
                    if let Some(name) = item_name(other) {
                        self.modules[at].items.insert(name);
                    }
                    let mut collector = PathCollector {
                        module: &mut self.modules[at],
                    };
                    collector.visit_item(other);
                }
            }
        }
    }

    fn add_module(
        &mut self,
        at: usize,
        m: &syn::ItemMod,
        files: &Files,
        unreadable: &mut Vec<String>,
    ) {
        let name = m.ident.to_string();
        let parent = &self.modules[at];
        let top = if at == 0 {
            name.clone()
        } else {
            parent.top.clone()
        };
        let id = self.modules.len();
        if let Some((_, items)) = &m.content {
            let module = Module {
                file: parent.file.clone(),
                top,
                parent: Some(at),
                children_dir: format!("{}/{name}", parent.children_dir),
                ..Module::default()
            };
            self.modules.push(module);
            self.modules[at].mods.insert(name, id);
            self.add_items(id, items, files, unreadable);
            return;
        }
        let candidates = match path_attr(&m.attrs) {
            Some(p) => vec![format!("{}/{p}", dir_of(&parent.file))],
            None => vec![
                format!("{}/{name}.rs", parent.children_dir),
                format!("{}/{name}/mod.rs", parent.children_dir),
            ],
        };
        let Some(file) = candidates.iter().find(|c| files.contains_key(*c)).cloned() else {
            unreadable.push(format!(
                "`mod {name};` in {}: none of {candidates:?}",
                parent.file
            ));
            return;
        };
        let children_dir = match file.strip_suffix("/mod.rs") {
            Some(dir) => dir.to_string(),
            None => file.trim_end_matches(".rs").to_string(),
        };
        self.modules.push(Module {
            file: file.clone(),
            top,
            parent: Some(at),
            children_dir,
            ..Module::default()
        });
        self.modules[at].mods.insert(name, id);
        match parse(files, &file) {
            Ok(parsed) => self.add_items(id, &parsed.items, files, unreadable),
            Err(e) => unreadable.push(e),
        }
    }

    /// The module a file is the source of (not the inline modules inside it).
    fn module_of_file(&self, file: &str) -> Option<usize> {
        self.modules.iter().position(|m| m.file == file)
    }

    fn is_descendant(&self, mut module: usize, of: usize) -> bool {
        while let Some(parent) = self.modules[module].parent {
            if parent == of {
                return true;
            }
            module = parent;
        }
        false
    }

    /// Every file-to-file import, merged per pair of files.
    fn edges(&self) -> Vec<Edge> {
        let mut merged: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
        let mut add = |from: usize, to: usize, name: &str| {
            let (a, b) = (&self.modules[from].file, &self.modules[to].file);
            if a != b {
                merged
                    .entry((a.clone(), b.clone()))
                    .or_default()
                    .insert(name.to_string());
            }
        };
        for (id, module) in self.modules.iter().enumerate() {
            for u in module.uses.iter().chain(&module.globs) {
                let is_glob = u.alias == "*";
                match self.resolve_named(id, &u.path, 0) {
                    Some((Target::Item(def), name))
                        if !(u.public && self.is_descendant(def, id)) =>
                    {
                        add(id, def, name)
                    }
                    Some((Target::Module(m), _))
                        if is_glob && !(u.public && self.is_descendant(m, id)) =>
                    {
                        add(id, m, "*")
                    }
                    _ => {}
                }
            }
            for path in &module.paths {
                if let Some((Target::Item(def), name)) = self.resolve_named(id, path, 0) {
                    add(id, def, name);
                }
            }
        }
        merged
            .into_iter()
            .map(|((from, to), names)| {
                let nested = match (self.module_of_file(&from), self.module_of_file(&to)) {
                    (Some(a), Some(b)) => self.is_descendant(a, b) || self.is_descendant(b, a),
                    _ => false,
                };
                Edge {
                    from,
                    to,
                    names,
                    nested,
                }
            })
            .collect()
    }

    /// Where `path`, named in module `from`, leads: a module or the module
    /// that defines the item (the rest of the path, e.g. an enum variant or
    /// an associated function, stays in that item's file).
    fn resolve(&self, from: usize, path: &[String], depth: usize) -> Option<Target> {
        self.resolve_named(from, path, depth)
            .map(|(target, _)| target)
    }

    /// [`Crate::resolve`], with the segment that named the item.
    fn resolve_named<'p>(
        &self,
        from: usize,
        path: &'p [String],
        depth: usize,
    ) -> Option<(Target, &'p str)> {
        if depth > 16 || path.is_empty() {
            return None;
        }
        let mut at = match path[0].as_str() {
            "crate" => Target::Module(0),
            "self" => Target::Module(from),
            "super" => Target::Module(self.modules[from].parent?),
            first => self.lookup(from, first, depth)?,
        };
        let mut name = path[0].as_str();
        for segment in &path[1..] {
            let Target::Module(m) = at else { break };
            name = segment;
            at = match segment.as_str() {
                "super" => Target::Module(self.modules[m].parent?),
                segment => self.lookup(m, segment, depth)?,
            };
        }
        Some((at, name))
    }

    /// A name as seen from inside module `m`: a child module, an item it
    /// defines, or something it imports.
    fn lookup(&self, m: usize, name: &str, depth: usize) -> Option<Target> {
        let module = &self.modules[m];
        if let Some(&child) = module.mods.get(name) {
            return Some(Target::Module(child));
        }
        if module.items.contains(name) {
            return Some(Target::Item(m));
        }
        if let Some(u) = module.uses.iter().find(|u| u.alias == name) {
            return self.resolve(m, &u.path, depth + 1);
        }
        module
            .globs
            .iter()
            .find_map(|g| match self.resolve(m, &g.path, depth + 1) {
                Some(Target::Module(gm)) if gm != m => self.lookup(gm, name, depth + 1),
                _ => None,
            })
    }
}

/// Collects the paths an item's code names and its function-local `use`s.
struct PathCollector<'a> {
    module: &'a mut Module,
}

impl<'ast> Visit<'ast> for PathCollector<'_> {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            self.module
                .paths
                .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, path);
    }

    /// Attribute arguments name items too: clap's `default_value =
    /// crate::x::DEFAULT`, thiserror's `#[error("{}", super::ID)]`.
    fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
        let syn::Meta::List(list) = &attr.meta else {
            return;
        };
        if list.path.is_ident("cfg") {
            return;
        }
        let parser = Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
        if let Ok(exprs) = list.parse_args_with(parser) {
            for expr in &exprs {
                self.visit_expr(expr);
            }
        }
    }

    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !is_test_only(item_attrs(item)) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        flatten_use(&u.tree, Vec::new(), false, self.module);
    }

    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {}

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_test_only(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    /// Macro bodies are tokens to syn; most of ours (`format!`, `assert!`,
    /// `vec!`, `write!`) are expressions separated by commas.
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        let parser = Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
        if let Ok(exprs) = mac.parse_body_with(parser) {
            for expr in &exprs {
                self.visit_expr(expr);
            }
        }
    }
}

fn flatten_use(tree: &syn::UseTree, mut prefix: Vec<String>, public: bool, module: &mut Module) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten_use(&p.tree, prefix, public, module);
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            // `use a::b::{self}` names the module `b` itself.
            let alias = if name == "self" {
                prefix.last().cloned().unwrap_or_default()
            } else {
                name.clone()
            };
            if name != "self" {
                prefix.push(name);
            }
            module.uses.push(Use {
                alias,
                path: prefix,
                public,
            });
        }
        syn::UseTree::Rename(r) => {
            prefix.push(r.ident.to_string());
            module.uses.push(Use {
                alias: r.rename.to_string(),
                path: prefix,
                public,
            });
        }
        syn::UseTree::Glob(_) => module.globs.push(Use {
            alias: "*".into(),
            path: prefix,
            public,
        }),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                flatten_use(t, prefix.clone(), public, module);
            }
        }
    }
}

fn parse(files: &Files, path: &str) -> Result<syn::File, String> {
    let text = files
        .get(path)
        .ok_or_else(|| format!("{path}: no such file"))?;
    syn::parse_file(text).map_err(|e| format!("{path}: {e}"))
}

fn dir_of(file: &str) -> &str {
    file.rsplit_once('/').map_or("", |(dir, _)| dir)
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// `#[cfg(test)]` and friends (`cfg(all(test, unix))`), but not `cfg(not(test))`.
pub fn is_test_only(attrs: &[syn::Attribute]) -> bool {
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

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::ExternCrate(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::ForeignMod(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::TraitAlias(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

fn item_name(item: &syn::Item) -> Option<String> {
    let ident = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Macro(i) => i.ident.as_ref()?,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::TraitAlias(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}
