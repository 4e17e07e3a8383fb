//! The docs stay a web a newcomer can follow: README.md is a landing page
//! of at most 200 lines, every relative link in the repository's Markdown
//! points to a file (and a heading) that exists, every doc can be reached
//! from the README by following links, and every `--flag` the user docs
//! name is one that `continuity --help` (or a subcommand's) lists.
//!
//! Quick: it reads files and runs `--help`, nothing else.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Component, Path, PathBuf};

const README_MAX_LINES: usize = 200;

/// Flags the docs name that belong to other programs: cargo, node, npm,
/// pnpm, tar, and `--token` in a managed restart command (docs/usage.md,
/// secrets).
const FOREIGN_FLAGS: &[&str] = &[
    "--all",
    "--all-targets",
    "--frozen-lockfile",
    "--git",
    "--ignore-scripts",
    "--install-links",
    "--lib",
    "--locked",
    "--no-audit",
    "--no-fund",
    "--nocapture",
    "--pack-destination",
    "--path",
    "--prefix",
    "--release",
    "--strip-components",
    "--term-new",
    "--term-old",
    "--test",
    "--token",
    "--unhandled-rejections",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every Markdown file the project keeps (relative to the root), sorted.
fn markdown_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(root().join(&dir)).expect("read dir") {
            let entry = entry.expect("dir entry");
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = dir.join(&name);
            if entry.file_type().expect("file type").is_dir() {
                let skip = name.starts_with('.')
                    || ["target", "node_modules", "reports"].contains(&name.as_str());
                if !skip {
                    dirs.push(rel);
                }
            } else if name.ends_with(".md") {
                files.push(rel);
            }
        }
    }
    files.sort();
    files
}

/// The user docs whose flags must be continuity's: the README and docs/.
fn user_docs() -> Vec<PathBuf> {
    markdown_files()
        .into_iter()
        .filter(|p| p == Path::new("README.md") || p.starts_with("docs"))
        .collect()
}

fn read(rel: &Path) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{}: {e}", rel.display()))
}

/// The lines outside fenced code blocks, with their 1-based numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match fence {
            Some(marker) if trimmed.starts_with(marker) => fence = None,
            Some(_) => {}
            None if trimmed.starts_with("```") => fence = Some("```"),
            None if trimmed.starts_with("~~~") => fence = Some("~~~"),
            None => lines.push((i + 1, line)),
        }
    }
    lines
}

/// A line with its inline code spans removed (their text is not a link).
fn without_code_spans(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|c| **c == '`').count();
        let close = (i + run..chars.len()).find(|&j| {
            chars[j..].iter().take_while(|c| **c == '`').count() == run
                && (j == 0 || chars[j - 1] != '`')
        });
        match close {
            Some(j) => i = j + run,
            None => {
                out.extend(&chars[i..i + run]);
                i += run;
            }
        }
    }
    out
}

/// The link targets of one line of prose: inline `[text](target)` and
/// reference definitions `[label]: target`.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut targets = Vec::new();
    let trimmed = line.trim_start();
    if trimmed.starts_with('[') {
        if let Some(end) = trimmed.find("]:") {
            if let Some(target) = trimmed[end + 2..].split_whitespace().next() {
                targets.push(target.to_string());
            }
        }
    }
    let mut rest = line.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].split_whitespace().next().unwrap_or("");
        targets.push(target.trim_matches(|c| c == '<' || c == '>').to_string());
        rest = &after[end..];
    }
    targets
}

/// GitHub's anchor for a heading: lower case, letters, digits, `-` and `_`
/// kept, spaces to `-`, everything else dropped.
fn slug(heading: &str) -> String {
    without_code_spans_keep_text(heading)
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// A heading's text as GitHub renders it: code spans keep their text.
fn without_code_spans_keep_text(heading: &str) -> String {
    heading.replace('`', "")
}

/// The anchors of a Markdown file's headings, duplicates numbered as GitHub does.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(match *n {
            0 => base.clone(),
            k => format!("{base}-{k}"),
        });
        *n += 1;
    }
    out
}

/// `a/b/../c` → `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

struct Link {
    from: PathBuf,
    line: usize,
    target: String,
    /// The file it points to, relative to the root.
    file: PathBuf,
    anchor: Option<String>,
}

/// Every relative link of a Markdown file.
fn relative_links(rel: &Path) -> Vec<Link> {
    let text = read(rel);
    let dir = rel.parent().unwrap_or(Path::new(""));
    let mut links = Vec::new();
    for (line, content) in prose_lines(&text) {
        for target in link_targets(content) {
            let external = ["http://", "https://", "mailto:"]
                .iter()
                .any(|s| target.starts_with(s));
            if target.is_empty() || external {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a.to_string())),
                None => (target.as_str(), None),
            };
            let file = match path {
                "" => rel.to_path_buf(),
                p => normalize(&dir.join(p)),
            };
            links.push(Link {
                from: rel.to_path_buf(),
                line,
                target: target.clone(),
                file,
                anchor,
            });
        }
    }
    links
}

#[test]
fn the_readme_is_a_landing_page_of_at_most_200_lines() {
    let lines = read(Path::new("README.md")).lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines (at most {README_MAX_LINES}): move reference material to docs/<topic>.md and link it"
    );
}

#[test]
fn every_relative_link_points_to_a_file_and_heading_that_exist() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for md in markdown_files() {
        for link in relative_links(&md) {
            checked += 1;
            let at = format!("{}:{}: ({})", link.from.display(), link.line, link.target);
            let target = root().join(&link.file);
            if !target.exists() {
                broken.push(format!("{at}: no such file {}", link.file.display()));
                continue;
            }
            let Some(anchor) = &link.anchor else { continue };
            if link.file.extension().is_some_and(|e| e == "md") {
                let known = anchors(&read(&link.file));
                if !known.contains(anchor) {
                    broken.push(format!(
                        "{at}: no heading #{anchor} in {} (it has: {})",
                        link.file.display(),
                        known.into_iter().collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} links found: is the link reader broken?"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_doc_is_reachable_from_the_readme() {
    let mut reached = BTreeSet::from([PathBuf::from("README.md")]);
    let mut queue = VecDeque::from([PathBuf::from("README.md")]);
    while let Some(md) = queue.pop_front() {
        for link in relative_links(&md) {
            let is_md = link.file.extension().is_some_and(|e| e == "md");
            if is_md && root().join(&link.file).is_file() && reached.insert(link.file.clone()) {
                queue.push_back(link.file);
            }
        }
    }
    let unreached: Vec<String> = markdown_files()
        .into_iter()
        .filter(|md| !reached.contains(md))
        .map(|md| md.display().to_string())
        .collect();
    assert!(
        unreached.is_empty(),
        "not reachable by links from README.md: {unreached:?}"
    );
}

/// The `--long-flags` of a text, in order of first appearance.
fn long_flags(text: &str) -> BTreeSet<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut flags = BTreeSet::new();
    let mut i = 0;
    while i + 2 < chars.len() {
        let starts = chars[i] == '-'
            && chars[i + 1] == '-'
            && chars[i + 2].is_ascii_lowercase()
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '-'));
        if !starts {
            i += 1;
            continue;
        }
        let end = (i + 2..chars.len())
            .find(|&j| {
                !(chars[j].is_ascii_lowercase() || chars[j].is_ascii_digit() || chars[j] == '-')
            })
            .unwrap_or(chars.len());
        let flag: String = chars[i..end].iter().collect();
        flags.insert(flag.trim_end_matches('-').to_string());
        i = end;
    }
    flags
}

fn help(args: &[&str]) -> String {
    let out = crate::support::continuity_command(args)
        .arg("--help")
        .output()
        .expect("run continuity --help");
    assert!(
        out.status.success(),
        "continuity {args:?} --help failed: {out:?}"
    );
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// The subcommands a help text lists under `Commands:` (without `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// Every long flag of `continuity` and of each of its subcommands' help.
fn known_flags() -> BTreeSet<String> {
    let mut known = BTreeSet::new();
    let mut queue: VecDeque<Vec<String>> = VecDeque::from([Vec::new()]);
    while let Some(path) = queue.pop_front() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let text = help(&args);
        known.extend(long_flags(&text));
        for sub in subcommands(&text) {
            let mut next = path.clone();
            next.push(sub);
            queue.push_back(next);
        }
    }
    known
}

#[test]
fn every_flag_the_docs_name_is_in_continuitys_help() {
    let known = known_flags();
    assert!(
        known.contains("--jobs") && known.contains("--dir") && known.contains("--allow-missing"),
        "the help reader missed subcommand flags: {known:?}"
    );
    let mut unknown = Vec::new();
    for md in user_docs() {
        for (n, line) in read(&md).lines().enumerate() {
            for flag in long_flags(line) {
                if !known.contains(&flag) && !FOREIGN_FLAGS.contains(&flag.as_str()) {
                    unknown.push(format!("{}:{}: {flag}", md.display(), n + 1));
                }
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "flags the docs name that no `continuity … --help` lists (a typo, a removed flag, or another program's: add those to FOREIGN_FLAGS):\n{}",
        unknown.join("\n")
    );
}

#[test]
fn the_link_and_anchor_readers_agree_with_github() {
    assert_eq!(
        slug("Several stacks at once: `--jobs N`"),
        "several-stacks-at-once---jobs-n"
    );
    assert_eq!(
        slug("The Rivet layer (RivetKit 2.3.19)"),
        "the-rivet-layer-rivetkit-2319"
    );
    assert_eq!(
        slug("The sandbox's files, processes and terminals"),
        "the-sandboxs-files-processes-and-terminals"
    );
    assert_eq!(
        anchors("# A\n## A\n```\n# not a heading\n```\n## b_c"),
        BTreeSet::from(["a".to_string(), "a-1".to_string(), "b_c".to_string()])
    );
    assert_eq!(
        link_targets("see [x](docs/a.md#b) and `[y](not/a/link.md)`, [z]( c.md )"),
        vec!["docs/a.md#b", "c.md"]
    );
    assert_eq!(link_targets("[ref]: ../x.md"), vec!["../x.md"]);
    assert_eq!(
        long_flags("run --jobs 4 --client=rust, not a---b nor |---|"),
        BTreeSet::from(["--jobs".to_string(), "--client".to_string()])
    );
}
