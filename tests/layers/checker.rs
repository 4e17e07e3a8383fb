//! The import checker behind `tests/layers.rs`: holds a crate's file-to-file
//! imports (read by `read.rs`) against the layer table of its `lib.rs`, and
//! reports imports that run up the table and files that import each other
//! in a circle.

use std::collections::BTreeSet;

use crate::read::{read, CrateGraph};
pub use crate::read::{Edge, Files};

/// What the checker found; empty vectors mean the picture is true.
#[derive(Debug, Default)]
pub struct Findings {
    /// Imports from a module to one on its own or a higher layer.
    pub upward: Vec<Edge>,
    /// Groups of files that import each other, with the edges inside each.
    pub circles: Vec<Vec<Edge>>,
    /// Top-level modules missing from the layer table, or listed but absent.
    pub unlisted: Vec<String>,
    /// Files that could not be read or parsed, or `mod` lines without a file.
    pub unreadable: Vec<String>,
}

impl Findings {
    pub fn is_clean(&self) -> bool {
        self.upward.is_empty()
            && self.circles.is_empty()
            && self.unlisted.is_empty()
            && self.unreadable.is_empty()
    }
}

impl std::fmt::Display for Findings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for e in &self.upward {
            writeln!(f, "upward import: {} -> {}: {}", e.from, e.to, names(e))?;
        }
        for (i, circle) in self.circles.iter().enumerate() {
            writeln!(f, "circle {}:", i + 1)?;
            for e in circle {
                writeln!(f, "  {} -> {}: {}", e.from, e.to, names(e))?;
            }
        }
        for m in &self.unlisted {
            writeln!(f, "layer table: {m}")?;
        }
        for u in &self.unreadable {
            writeln!(f, "unreadable: {u}")?;
        }
        Ok(())
    }
}

fn names(e: &Edge) -> String {
    e.names.iter().cloned().collect::<Vec<_>>().join(", ")
}

/// Every file-to-file import of the crate rooted at `src/lib.rs`.
pub fn edges(files: &Files) -> Vec<Edge> {
    read(files).edges
}

/// Checks `files` (rooted at `src/lib.rs`) against `layers`, top layer first;
/// a module may import only modules on later lines.
pub fn check(files: &Files, layers: &[Vec<String>]) -> Findings {
    let CrateGraph {
        edges,
        top_modules,
        top_of_file,
        unreadable,
    } = read(files);
    let mut findings = Findings {
        unreadable,
        ..Findings::default()
    };

    let rank = |module: &str| {
        layers
            .iter()
            .position(|line| line.iter().any(|m| m == module))
    };
    for m in &top_modules {
        if rank(m).is_none() {
            findings
                .unlisted
                .push(format!("module `{m}` is in no layer"));
        }
    }
    for m in layers.iter().flatten() {
        if !top_modules.contains(m) {
            findings
                .unlisted
                .push(format!("`{m}` is listed but is no module"));
        }
    }
    for e in &edges {
        let top = |file: &str| top_of_file.get(file).map_or("", String::as_str);
        let (from, to) = (top(&e.from), top(&e.to));
        if from == to {
            continue;
        }
        if let (Some(a), Some(b)) = (rank(from), rank(to)) {
            if b <= a {
                findings.upward.push(e.clone());
            }
        }
    }
    findings.circles = circles(&edges);
    findings
}

/// The layer table from `lib.rs`'s doc comment: each `//! - ` list item is a
/// line of the table, its module names the back-ticked words before the `:`.
pub fn layer_table(lib_rs: &str) -> Vec<Vec<String>> {
    lib_rs
        .lines()
        .filter_map(|l| l.strip_prefix("//! - "))
        .map(|item| {
            let head = item.split(':').next().unwrap_or("");
            head.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|line| !line.is_empty())
        .collect()
}

/// Files that import each other: the strongly connected components of more
/// than one file (Tarjan) over the edges that are not [`Edge::nested`],
/// each with the edges that tie it.
fn circles(edges: &[Edge]) -> Vec<Vec<Edge>> {
    let edges: Vec<&Edge> = edges.iter().filter(|e| !e.nested).collect();
    let nodes: BTreeSet<&str> = edges
        .iter()
        .flat_map(|e| [e.from.as_str(), e.to.as_str()])
        .collect();
    let nodes: Vec<&str> = nodes.into_iter().collect();
    let index_of = |n: &str| nodes.binary_search(&n).expect("node");
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for e in &edges {
        next[index_of(&e.from)].push(index_of(&e.to));
    }
    let mut t = Tarjan {
        next: &next,
        index: vec![None; nodes.len()],
        low: vec![0; nodes.len()],
        on_stack: vec![false; nodes.len()],
        stack: Vec::new(),
        counter: 0,
        components: Vec::new(),
    };
    for v in 0..nodes.len() {
        if t.index[v].is_none() {
            t.visit(v);
        }
    }
    let mut found: Vec<Vec<Edge>> = t
        .components
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let members: BTreeSet<&str> = c.iter().map(|&i| nodes[i]).collect();
            let mut inside: Vec<Edge> = edges
                .iter()
                .filter(|e| members.contains(e.from.as_str()) && members.contains(e.to.as_str()))
                .map(|e| (*e).clone())
                .collect();
            inside.sort();
            inside
        })
        .collect();
    found.sort();
    found
}

struct Tarjan<'a> {
    next: &'a [Vec<usize>],
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    counter: usize,
    components: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.counter);
        self.low[v] = self.counter;
        self.counter += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for &w in &self.next[v] {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}
