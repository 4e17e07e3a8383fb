//! Expectations: a file of known results (`--expect FILE`) and the one
//! judgement of a finished report against it that `run`, `merge` and the CI
//! gate share. Each cell gets an outcome — expected, regressed, changed,
//! fixed or new — and whether it fails the run.
//!
//! ```toml
//! [[expect]]
//! target = "agent"                       # glob; default "*"
//! scenario = "native-continuity"         # glob; default "*"
//! client = "rust"                        # glob; default "*" (`rust` or `ts-sdk`)
//! verdict = "fail"                       # pass | fail | error | skipped | not_applicable | flaky
//! boundary = "promptSameHandleAfterRestart"
//! signature = "http 400 invalid_request" # the short or the (masked) full signature
//! reason = "sandbox-agent #189: the server forgets ACP server ids on restart"
//! server_version = ">=0.4.2, <0.5"       # optional semver requirement
//! server = "candidate"                   # glob over server points' labels; default "*"
//! sdk = "candidate"                      # glob over SDK points' labels; default "*"
//! until = "2026-03-31"                   # optional: the last day it excuses the cell
//! issue = "https://github.com/o/r/issues/189" # optional: where the failure is tracked
//! turn = "lost"                          # optional: a long turn's fate (delivered, lost, unfinished, unknown)
//! invariant = "stream"                   # optional: the invariant an `integrity` failure broke
//! session_usable = false                 # optional: whether the session took the next prompt
//! ```
//!
//! `invariant` names the invariant the always-on checker found broken at
//! the boundary (`stream`, `application`, `store`, `requests`,
//! `ground_truth`): a cell that fails otherwise is `changed`.
//!
//! `turn` and `session_usable` pin a `long-turn` cell's fate (the cell's
//! `turn` in `report.json`) beside its failure: a cell that fails the same
//! way with another fate is `changed`.
//!
//! An entry with `until` is a quarantine that expires: after that day (in
//! UTC) a cell it would excuse is `expired` and fails the gate, and the
//! summaries list the entries that expire within [`EXPIRES_SOON_DAYS`].
//!
//! `verdict = "flaky"` is for a cell that can go either way by a known
//! race: it accepts a pass, and a fail or flaky cell whose failure is the
//! one the entry names (`signature` is required, `boundary` optional);
//! anything else is `changed`. Its `reason` says why the cell varies.
//!
//! A cell with no verdict on its restart (`not_applicable`: its client
//! could take none of the steps after it) is no pass: a `pass` or `flaky`
//! entry says nothing of it, so the next entry that matches decides, or
//! none does and it is `new`, which by itself fails nothing. An entry may
//! pin it with `verdict = "not_applicable"`.
//!
//! The first entry that matches a cell decides; an entry that never gets to
//! decide is reported by [`Expectations::shadowed`]. An entry that names no
//! `server` or `sdk` applies to every point of those axes, so a candidate
//! build is judged against what the release does; `server_version` is
//! matched against what the cell's server reports about itself (a
//! candidate binary built from 0.4.2 reports 0.4.2).
//!
//! Over 400 lines on purpose: a key of the file (above) is read and judged
//! through one entry type (`Entry`, its `Pattern`s and scopes), so the
//! checked reading of each key (the raw tables, `KEYS`, `Source`) and the
//! judgement of each cell against the entries (`judge_cell`, `may_vary`, the
//! quarantine's expiry) change together when a key is added, and a key's
//! refusal message sits beside what it means; the tests are apart
//! (`expect_tests.rs`).

use std::path::{Path, PathBuf};

use globset::{Glob, GlobMatcher};
use jiff::civil::Date;
use semver::{Version, VersionReq};
use serde::Deserialize;
use toml::Spanned;

use crate::errors::Invalid;

use super::axis::AXES;
use super::model::{
    Axis, Cell, ExpectOutcome, Fate, FlakyResult, Judgement, Named, Report, RunInfo, Verdict,
};

/// The verdicts an expectation may name: what a component does. A flaky
/// cell is judged as pass or fail (`--flaky-result`), and an interrupted
/// one says only that the run was stopped, so neither is expected. The one
/// vocabulary `--expect` reads and `baseline` writes.
pub(crate) const EXPECTABLE: [Verdict; 5] = [
    Verdict::Pass,
    Verdict::Fail,
    Verdict::Error,
    Verdict::Skipped,
    Verdict::NotApplicable,
];

/// How many days ahead the summaries list entries about to expire.
pub(crate) const EXPIRES_SOON_DAYS: i32 = 14;

/// What a cell that may go either way is expected as: a pass, or the one
/// failure its entry names.
pub(crate) const MAY_VARY: Verdict = Verdict::Flaky;

/// `pass, fail, error, skipped, not_applicable or flaky`.
fn expectable_words() -> String {
    let words: Vec<&str> = EXPECTABLE
        .iter()
        .chain([&MAY_VARY])
        .map(|v| v.as_str())
        .collect();
    let (last, rest) = words.split_last().expect("verdicts to expect");
    format!("{} or {last}", rest.join(", "))
}

/// A checked expectations file.
#[derive(Debug, Clone)]
pub struct Expectations {
    path: PathBuf,
    entries: Vec<Entry>,
}

#[derive(Debug, Clone)]
struct Entry {
    line: usize,
    target: Pattern,
    scenario: Pattern,
    /// Each axis's glob, at the axis's index, matched against the cell's
    /// value there as [`CellPlace`] gives it; none: any value.
    axes: [Option<Pattern>; AXES],
    verdict: Verdict,
    boundary: Option<String>,
    signature: Option<String>,
    reason: Option<String>,
    server_version: Option<VersionReq>,
    /// The last day the entry excuses a cell.
    until: Option<Date>,
    issue: Option<String>,
    /// A long turn's fate the failure comes with.
    turn: Option<Fate>,
    session_usable: Option<bool>,
    /// The invariant an `integrity` failure at the boundary broke.
    invariant: Option<continuity_check::Invariant>,
}

/// Where a cell ran, as entries match it: its point's value on each axis,
/// filled in from the run where the cell names none.
#[derive(Debug, Clone, Copy)]
struct CellPlace<'a> {
    /// The name of its value on each axis, at the axis's index: the label
    /// of its server point and of its SDK point (none for a client that
    /// runs no SDK), its own or the run's only one; its client (`rust`
    /// when it names none); its agent and its session store, its own or
    /// the run's only one.
    values: [Option<&'a str>; AXES],
    /// What its server reports about itself, for `server_version`.
    version: Option<&'a str>,
}

impl<'a> CellPlace<'a> {
    /// A cell's place: its own labels on an axis, else the run's only
    /// point; the version the point reports, else the cell's or run's.
    fn of(cell: &'a Cell, run: &'a RunInfo) -> CellPlace<'a> {
        let server = cell.point_label(run, Axis::Server);
        let point = server.and_then(|label| run.points_of(Axis::Server).find(|p| p.label == label));
        let version = point
            .map(|p| p.version.as_str())
            .or(cell.point.name_on(Axis::Server))
            .or(run.server_version.as_deref());
        // The run's value when it had one (several are comma-separated,
        // and then each cell names its own).
        let only = |value: &'a str| Some(value).filter(|v| !v.is_empty() && !v.contains(','));
        let values = Axis::ALL.map(|axis| match axis {
            Axis::Client => Some(cell.point.client().name()),
            Axis::Agent => cell.point.name_on(axis).or_else(|| only(&run.agent)),
            Axis::Persist => cell
                .point
                .name_on(axis)
                .or_else(|| run.store_of(cell.point.client()).map(Named::name))
                .or_else(|| only(&run.persist)),
            // The server, the SDK and any other axis: the cell's own
            // value, else the run's only point (`run.points`), else the
            // one value its recipe records (a cell names a value only on
            // an axis of several).
            other => cell.point_label(run, other).or_else(|| {
                match run.recipe.as_ref().map(|r| r.values(other)) {
                    Some([one]) => Some(one.as_str()),
                    _ => None,
                }
            }),
        });
        CellPlace { values, version }
    }
}

#[derive(Debug, Clone)]
struct Pattern {
    text: String,
    matcher: Matcher,
}

/// How a pattern matches: most name one cell's value, and are compared as
/// text; only one holding a glob's metacharacters is compiled (a compiled
/// glob is a regex of a few KiB: 27 000 entries of literals held 577 MB).
#[derive(Debug, Clone)]
enum Matcher {
    Any,
    Text,
    Glob(GlobMatcher),
}

/// Why an expectations file was refused: the file, the line, what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
/// The message names what the file and the run hold (a report's targets,
/// a file's values), shown on one inert line.
#[error("{}{}: {}", .path.display(), .line.map(|l| format!(":{l}")).unwrap_or_default(), crate::untrusted::Untrusted::new(.message).terminal())]
pub struct ExpectError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    expect: Vec<Spanned<RawEntry>>,
}

/// One `[[expect]]` table as written: its fields, and a glob for each axis
/// under the axis's name (read by [`RawEntry`]'s `Deserialize`, from
/// `Axis::ALL`, so a new axis is a key of the file unasked). Any other key
/// is refused, naming the keys an entry takes.
#[derive(Debug, Default)]
struct RawEntry {
    target: Option<Spanned<String>>,
    scenario: Option<Spanned<String>>,
    /// Each axis's glob, at the axis's index.
    axes: [Option<Spanned<String>>; AXES],
    verdict: Option<Spanned<String>>,
    boundary: Option<String>,
    signature: Option<String>,
    reason: Option<String>,
    server_version: Option<Spanned<String>>,
    until: Option<Spanned<String>>,
    issue: Option<Spanned<String>>,
    turn: Option<Spanned<String>>,
    session_usable: Option<bool>,
    invariant: Option<Spanned<String>>,
}

/// The keys of an entry that are no axis's, as the file spells them.
#[derive(Debug, Clone, Copy, Deserialize, strum::VariantNames)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
enum Field {
    Target,
    Scenario,
    Verdict,
    Boundary,
    Signature,
    Reason,
    ServerVersion,
    Until,
    Issue,
    Turn,
    SessionUsable,
    Invariant,
}

/// A key of an entry: a field, or an axis by its name.
enum Key {
    Field(Field),
    Axis(Axis),
}

/// Every key an entry takes, for the message refusing another: the
/// target and scenario, each axis's name, then the other fields.
static KEYS: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
    use strum::VariantNames;
    let (place, rest) = Field::VARIANTS.split_at(2);
    let axes = Axis::ALL.map(Axis::name);
    place.iter().chain(&axes).chain(rest).copied().collect()
});

/// Reads a key, refusing one no entry takes (inside the key, so the
/// error names the key's line).
struct KeySeed;

impl<'de> serde::de::DeserializeSeed<'de> for KeySeed {
    type Value = Key;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Key, D::Error> {
        use serde::de::{Error, IntoDeserializer};
        let name = String::deserialize(deserializer)?;
        if let Ok(axis) = name.parse::<Axis>() {
            return Ok(Key::Axis(axis));
        }
        let field: Result<Field, serde::de::value::Error> =
            Field::deserialize(name.as_str().into_deserializer());
        let keys: &'static [&'static str] = &KEYS;
        field
            .map(Key::Field)
            .map_err(|_| D::Error::unknown_field(&name, keys))
    }
}

impl<'de> Deserialize<'de> for RawEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<RawEntry, D::Error> {
        deserializer.deserialize_map(EntryVisitor)
    }
}

struct EntryVisitor;

impl<'de> serde::de::Visitor<'de> for EntryVisitor {
    type Value = RawEntry;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an [[expect]] table")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<RawEntry, A::Error> {
        let mut raw = RawEntry::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let field = match key {
                Key::Axis(axis) => {
                    raw.axes[axis.index()] = Some(map.next_value()?);
                    continue;
                }
                Key::Field(field) => field,
            };
            match field {
                Field::Target => raw.target = Some(map.next_value()?),
                Field::Scenario => raw.scenario = Some(map.next_value()?),
                Field::Verdict => raw.verdict = Some(map.next_value()?),
                Field::Boundary => raw.boundary = Some(map.next_value()?),
                Field::Signature => raw.signature = Some(map.next_value()?),
                Field::Reason => raw.reason = Some(map.next_value()?),
                Field::ServerVersion => raw.server_version = Some(map.next_value()?),
                Field::Until => raw.until = Some(map.next_value()?),
                Field::Issue => raw.issue = Some(map.next_value()?),
                Field::Turn => raw.turn = Some(map.next_value()?),
                Field::SessionUsable => raw.session_usable = Some(map.next_value()?),
                Field::Invariant => raw.invariant = Some(map.next_value()?),
            }
        }
        match raw.verdict {
            Some(_) => Ok(raw),
            None => Err(serde::de::Error::missing_field("verdict")),
        }
    }
}

/// An expectations file being read: its path and text, which its errors
/// name (with the line of the offending value).
struct Source<'a> {
    path: &'a Path,
    lines: crate::source_line::Lines,
}

impl Source<'_> {
    fn error(&self, offset: Option<usize>, message: String) -> ExpectError {
        ExpectError {
            path: self.path.to_path_buf(),
            line: offset.map(|o| self.lines.line_of(o)),
            message,
        }
    }

    /// One `[[expect]]` table, checked field by field in the file's order
    /// of concern: the verdict, the server requirement, then the patterns.
    fn entry(&self, spanned: Spanned<RawEntry>) -> Result<Entry, ExpectError> {
        let start = spanned.span().start;
        let raw = spanned.into_inner();
        let verdict = self.verdict(&raw)?;
        let server_version = raw
            .server_version
            .as_ref()
            .map(|v| self.version_req(v))
            .transpose()?;
        Ok(Entry {
            line: self.lines.line_of(start),
            target: self.pattern(&raw.target, "target")?,
            scenario: self.pattern(&raw.scenario, "scenario")?,
            axes: self.axes(&raw)?,
            verdict,
            boundary: raw.boundary.filter(|b| !b.trim().is_empty()),
            signature: raw.signature.filter(|s| !s.trim().is_empty()),
            reason: raw.reason.filter(|r| !r.trim().is_empty()),
            server_version,
            until: raw
                .until
                .as_ref()
                .map(|u| {
                    parse_date(u.get_ref())
                        .map_err(|e| self.error(Some(u.span().start), format!("`until` = {e}")))
                })
                .transpose()?,
            issue: raw
                .issue
                .as_ref()
                .map(|i| {
                    check_issue(i.get_ref())
                        .map_err(|e| self.error(Some(i.span().start), format!("`issue` = {e}")))
                })
                .transpose()?,
            turn: raw
                .turn
                .as_ref()
                .map(|t| {
                    parse_fate(t.get_ref())
                        .map_err(|e| self.error(Some(t.span().start), format!("`turn` = {e}")))
                })
                .transpose()?,
            session_usable: raw.session_usable,
            invariant: raw
                .invariant
                .as_ref()
                .map(|i| {
                    i.get_ref()
                        .parse::<continuity_check::Invariant>()
                        .map_err(|e| self.error(Some(i.span().start), format!("`invariant`: {e}")))
                })
                .transpose()?,
        })
    }

    /// The entry's verdict: an expectable one, or `flaky` with the
    /// signature of the failure the cell may end in.
    fn verdict(&self, raw: &RawEntry) -> Result<Verdict, ExpectError> {
        // Reading the entry refused one without a verdict already.
        let Some(given) = &raw.verdict else {
            return Err(self.error(None, "missing field `verdict`".into()));
        };
        let word = given.get_ref().as_str();
        let readable = EXPECTABLE.iter().chain([&MAY_VARY]);
        let Some(verdict) = readable.copied().find(|v| v.as_str() == word) else {
            return Err(self.error(
                Some(given.span().start),
                format!(
                    "`verdict` = {word:?} is not a verdict (expected {})",
                    expectable_words()
                ),
            ));
        };
        let names_failure =
            raw.signature.as_ref().is_some_and(|s| !s.trim().is_empty()) || raw.invariant.is_some();
        if verdict == MAY_VARY && !names_failure {
            return Err(self.error(
                Some(given.span().start),
                "`verdict` = \"flaky\" needs the `signature` of the failure the cell may end in (and its `reason`): it accepts a pass or that failure".into(),
            ));
        }
        Ok(verdict)
    }

    fn version_req(&self, v: &Spanned<String>) -> Result<VersionReq, ExpectError> {
        VersionReq::parse(v.get_ref()).map_err(|e| {
            self.error(
                Some(v.span().start),
                format!(
                    "`server_version` = {:?} is not a semver requirement (such as \"=0.4.2\" or \">=0.4, <0.5\"): {e}",
                    v.get_ref()
                ),
            )
        })
    }

    /// A glob field, `*` when absent.
    fn pattern(&self, field: &Option<Spanned<String>>, key: &str) -> Result<Pattern, ExpectError> {
        match field {
            None => Ok(Pattern::new("*").expect("`*` is a glob")),
            Some(s) => Pattern::new(s.get_ref()).map_err(|e| {
                self.error(
                    Some(s.span().start),
                    format!("`{key}` = {:?} is not a valid glob: {e}", s.get_ref()),
                )
            }),
        }
    }

    /// Each axis's glob, keyed by the axis's name; one of an axis whose
    /// values are a fixed set of names (the client, the store) must match
    /// one of them: a typo must not silently switch a gate off.
    fn axes(&self, raw: &RawEntry) -> Result<[Option<Pattern>; AXES], ExpectError> {
        let mut axes: [Option<Pattern>; AXES] = Default::default();
        for axis in Axis::ALL {
            let field = &raw.axes[axis.index()];
            let Some(given) = field else { continue };
            let pattern = self.pattern(field, axis.name())?;
            if let Some(names) = axis.known_names() {
                if !names.iter().any(|n| pattern.is_match(n)) {
                    return Err(self.error(
                        Some(given.span().start),
                        format!(
                            "`{}` = {:?} matches no {} ({})",
                            axis.name(),
                            pattern.text,
                            axis.column(),
                            names.join(", ")
                        ),
                    ));
                }
            }
            axes[axis.index()] = Some(pattern);
        }
        Ok(axes)
    }
}

/// How the exit code treats flaky, fixed and expired cells.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GateOptions {
    pub allow_fixed: bool,
    pub flaky_result: FlakyResult,
    /// The day `until` dates are judged against; `None`: today in UTC.
    pub today: Option<Date>,
}

/// A long turn's fate as `turn` names it.
fn parse_fate(text: &str) -> Result<Fate, Invalid> {
    let fates = [Fate::Delivered, Fate::Lost, Fate::Unfinished, Fate::Unknown];
    fates
        .into_iter()
        .find(|f| f.as_str() == text)
        .ok_or_else(|| {
            let words: Vec<&str> = fates.iter().map(|f| f.as_str()).collect();
            Invalid(format!(
                "{text:?} is not a turn's fate (expected {})",
                words.join(", ")
            ))
        })
}

/// Today's date in UTC: what `until` is judged against.
pub(crate) fn today_utc() -> Date {
    jiff::tz::TimeZone::UTC
        .to_datetime(jiff::Timestamp::now())
        .date()
}

/// `YYYY-MM-DD`, a real day: what `until` and `baseline --until` take.
pub fn parse_date(text: &str) -> Result<Date, Invalid> {
    let shaped = text.len() == 10
        && text.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            _ => b.is_ascii_digit(),
        });
    if !shaped {
        return Err(Invalid(format!("{text:?} is not a date as YYYY-MM-DD")));
    }
    text.parse::<Date>()
        .map_err(|e| Invalid(format!("{text:?} is not a day of the calendar: {e}")))
}

/// An `issue` must be a link a reader can follow.
pub fn check_issue(text: &str) -> Result<String, Invalid> {
    let link = url::Url::parse(text)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
    match link {
        Some(_) => Ok(text.to_string()),
        None => Err(Invalid(format!("{text:?} is not an http(s) URL"))),
    }
}

impl Expectations {
    pub fn load(path: &Path) -> Result<Expectations, ExpectError> {
        // An expectations file lists cells: a few KiB to a few hundred.
        let text = crate::user_file::read_text(path, 16 << 20).map_err(|e| ExpectError {
            path: path.to_path_buf(),
            line: None,
            message: format!("cannot read: {}", e.why),
        })?;
        Expectations::parse(path, &text)
    }

    /// Checks `text`; `path` names the file in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Expectations, ExpectError> {
        let file = Source {
            path,
            lines: crate::source_line::Lines::new(text),
        };
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            file.error(
                e.span().map(|s| s.start),
                e.message().trim_end().to_string(),
            )
        })?;
        let entries = raw
            .expect
            .into_iter()
            .map(|spanned| file.entry(spanned))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Expectations {
            path: path.to_path_buf(),
            entries,
        })
    }

    /// Refuses an entry whose target or scenario matches none the run
    /// knows (`targets`, `scenarios`: those it could run, not only those it
    /// runs, so one file gates a subset too): a typo must not silently
    /// switch a gate off.
    pub fn check_names(&self, targets: &[String], scenarios: &[String]) -> Result<(), ExpectError> {
        for entry in &self.entries {
            for (pattern, names, what) in [
                (&entry.target, targets, "target"),
                (&entry.scenario, scenarios, "scenario"),
            ] {
                if !names.iter().any(|n| pattern.is_match(n)) {
                    return Err(ExpectError {
                        path: self.path.clone(),
                        line: Some(entry.line),
                        message: format!(
                            "`{what}` = {:?} matches no {what} this run knows (its {what}s: {})",
                            pattern.text,
                            names.join(", ")
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// Refuses an entry whose `server` or `sdk` matches none of the run's
    /// points (`sdks` is empty when no client of the run runs an SDK, and
    /// then `sdk` is not checked): a typo must not switch a gate off.
    pub fn check_points(&self, servers: &[String], sdks: &[String]) -> Result<(), ExpectError> {
        for entry in &self.entries {
            for (axis, labels) in [(Axis::Server, servers), (Axis::Sdk, sdks)] {
                let what = axis.name();
                let Some(pattern) = &entry.axes[axis.index()] else {
                    continue;
                };
                if axis == Axis::Sdk && labels.is_empty() {
                    continue;
                }
                if !labels.iter().any(|l| pattern.is_match(l)) {
                    return Err(ExpectError {
                        path: self.path.clone(),
                        line: Some(entry.line),
                        message: format!(
                            "`{what}` = {:?} matches no {what} point of this run (its {what} points: {})",
                            pattern.text,
                            match labels.is_empty() {
                                true => "none: the server is the deployment's".to_string(),
                                false => labels.join(", "),
                            }
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// Judges every cell of `report` and records the file and options in it.
    pub fn judge(&self, report: &mut Report, options: GateOptions) {
        let run = report.run.clone();
        let today = options.today.unwrap_or_else(today_utc);
        for cell in &mut report.cells {
            let place = CellPlace::of(cell, &run);
            let entry = self.entries.iter().find(|e| e.matches(cell, place));
            let judgement = judge_cell(cell, entry, &self.path, options, today);
            cell.expectation = Some(judgement);
        }
        report.run.expect_file = Some(self.path.display().to_string());
        report.run.allow_fixed = options.allow_fixed;
        report.run.flaky_result = options.flaky_result;
    }
}

impl Expectations {
    /// Entries that match cells of `report` but decide none of them, because
    /// earlier entries match those cells first: almost always an ordering
    /// mistake (a catch-all written before the specific entries). A warning,
    /// not an error: the judgement itself is well defined.
    pub fn shadowed(&self, report: &Report) -> Vec<String> {
        let run = &report.run;
        let deciding = |cell: &Cell| {
            self.entries
                .iter()
                .position(|e| e.matches(cell, CellPlace::of(cell, run)))
        };
        self.entries
            .iter()
            .enumerate()
            .filter(|(i, entry)| {
                let matched: Vec<&Cell> = report
                    .cells
                    .iter()
                    .filter(|c| entry.matches(c, CellPlace::of(c, run)))
                    .collect();
                !matched.is_empty() && matched.iter().all(|c| deciding(c) != Some(*i))
            })
            .map(|(_, entry)| {
                format!(
                    "{}:{}: this entry decides no cell: entries above it match all of its cells first (the first matching entry decides)",
                    self.path.display(),
                    entry.line
                )
            })
            .collect()
    }
}

impl Pattern {
    fn new(text: &str) -> Result<Pattern, globset::Error> {
        // globset's metacharacters (a backslash escapes one); text without any
        // matches only itself.
        let matcher = match text {
            "*" => Matcher::Any,
            t if !t.contains(['*', '?', '[', ']', '{', '}', '\\']) => Matcher::Text,
            t => Matcher::Glob(Glob::new(t)?.compile_matcher()),
        };
        Ok(Pattern {
            text: text.to_string(),
            matcher,
        })
    }

    fn is_match(&self, value: &str) -> bool {
        match &self.matcher {
            Matcher::Any => true,
            Matcher::Text => self.text == value,
            Matcher::Glob(glob) => glob.is_match(value),
        }
    }
}

impl Entry {
    fn matches(&self, cell: &Cell, place: CellPlace<'_>) -> bool {
        let label = |pattern: &Option<Pattern>, value: Option<&str>| match pattern {
            None => true,
            Some(p) => value.is_some_and(|v| p.is_match(v)),
        };
        self.speaks_of(cell.verdict)
            && self.target.is_match(&cell.point.target)
            && self.scenario.is_match(&cell.point.scenario)
            && Axis::ALL
                .into_iter()
                .all(|axis| label(&self.axes[axis.index()], place.values[axis.index()]))
            && match &self.server_version {
                None => true,
                Some(req) => place
                    .version
                    .and_then(parse_version)
                    .is_some_and(|v| req.matches(&v)),
            }
    }
}

impl Entry {
    /// Whether the entry says anything of a cell that ended `verdict`: an
    /// entry that expects a pass (or a pass or one failure) says nothing
    /// of a cell with no verdict on its restart, which is no pass.
    fn speaks_of(&self, verdict: Verdict) -> bool {
        let expects_a_pass = matches!(self.verdict, Verdict::Pass | MAY_VARY);
        !(expects_a_pass && verdict == Verdict::NotApplicable)
    }
}

/// The semver in a server version string: `0.4.2`, `v0.4.2`, `sandbox-agent 0.4.2`.
pub fn parse_version(text: &str) -> Option<Version> {
    text.split_whitespace()
        .rev()
        .find_map(|word| Version::parse(word.trim_start_matches('v')).ok())
}

fn judge_cell(
    cell: &Cell,
    entry: Option<&Entry>,
    path: &Path,
    options: GateOptions,
    today: Date,
) -> Judgement {
    let got = match cell.verdict {
        Verdict::Flaky if options.flaky_result == FlakyResult::Pass => Verdict::Pass,
        Verdict::Flaky => Verdict::Fail,
        v => v,
    };
    let Some(entry) = entry else {
        return Judgement {
            outcome: ExpectOutcome::New,
            verdict: None,
            boundary: None,
            signature: None,
            reason: None,
            entry: None,
            fails_run: !matches!(got, Verdict::Pass | Verdict::NotApplicable),
            until: None,
            issue: None,
            days_left: None,
        };
    };
    let outcome = if entry.verdict == MAY_VARY {
        may_vary(cell, entry)
    } else if entry.verdict == got {
        if matches!(got, Verdict::Fail | Verdict::Error) && !entry.same_failure(cell) {
            ExpectOutcome::Changed
        } else {
            ExpectOutcome::Expected
        }
    } else if entry.verdict == Verdict::Pass {
        match got {
            Verdict::Fail | Verdict::Error => ExpectOutcome::Regressed,
            _ => ExpectOutcome::Changed,
        }
    } else if got == Verdict::Pass {
        ExpectOutcome::Fixed
    } else {
        ExpectOutcome::Changed
    };
    let days_left = entry.until.map(|until| days_between(today, until));
    // Past its `until`, an entry no longer excuses; what it did not
    // excuse anyway keeps its own outcome.
    let outcome = match outcome {
        ExpectOutcome::Expected if days_left.is_some_and(|d| d < 0) => ExpectOutcome::Expired,
        other => other,
    };
    Judgement {
        outcome,
        verdict: Some(entry.verdict),
        boundary: entry.boundary.clone(),
        signature: entry.signature.clone(),
        reason: entry.reason.clone(),
        entry: Some(format!("{}:{}", path.display(), entry.line)),
        fails_run: match outcome {
            ExpectOutcome::Expected => false,
            ExpectOutcome::Fixed => !options.allow_fixed,
            _ => true,
        },
        until: entry.until.map(|d| d.to_string()),
        issue: entry.issue.clone(),
        days_left,
    }
}

/// Whole days from `from` to `to` (negative when `to` is earlier).
fn days_between(from: Date, to: Date) -> i32 {
    from.until(to).map_or(0, |span| span.get_days())
}

/// An entry that excuses cells for a little longer: its `file:line`,
/// `until`, days left, issue and reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expiring {
    pub entry: String,
    pub until: String,
    pub days_left: i32,
    pub issue: Option<String>,
    pub reason: Option<String>,
}

/// The entries that decided cells of `report` and expire within
/// [`EXPIRES_SOON_DAYS`] of the day it was judged (expired ones are
/// `expired` cells already), once each, soonest first.
pub(crate) fn expiring_soon(report: &Report) -> Vec<Expiring> {
    let mut out: Vec<Expiring> = Vec::new();
    for j in report.cells.iter().filter_map(|c| c.expectation.as_ref()) {
        let (Some(entry), Some(until), Some(days_left)) = (&j.entry, &j.until, j.days_left) else {
            continue;
        };
        if !(0..=EXPIRES_SOON_DAYS).contains(&days_left) || out.iter().any(|e| &e.entry == entry) {
            continue;
        }
        out.push(Expiring {
            entry: entry.clone(),
            until: until.clone(),
            days_left,
            issue: j.issue.clone(),
            reason: j.reason.clone(),
        });
    }
    out.sort_by_key(|e| e.days_left);
    out
}

/// A `flaky` entry: a pass, or the failure it names (in every attempt
/// that failed, the one shown), is expected.
fn may_vary(cell: &Cell, entry: &Entry) -> ExpectOutcome {
    match cell.verdict {
        Verdict::Pass => ExpectOutcome::Expected,
        Verdict::Fail | Verdict::Flaky if entry.same_failure(cell) => ExpectOutcome::Expected,
        _ => ExpectOutcome::Changed,
    }
}

impl Entry {
    /// Same boundary, signature and long turn's fate, where the entry names them.
    fn same_failure(&self, cell: &Cell) -> bool {
        let turn = cell.turn.as_ref();
        let fate_ok = self
            .turn
            .is_none_or(|fate| turn.is_some_and(|t| t.fate == fate));
        let usable_ok = self
            .session_usable
            .is_none_or(|usable| turn.is_some_and(|t| t.session_usable == Some(usable)));
        fate_ok && usable_ok && self.same_signature(cell)
    }

    /// Same boundary and signature, where the entry names them.
    fn same_signature(&self, cell: &Cell) -> bool {
        let boundary_ok = self
            .boundary
            .as_deref()
            .is_none_or(|b| cell.failure_boundary.as_deref() == Some(b));
        let signature_ok = self.signature.as_deref().is_none_or(|expected| {
            let expected = super::model::mask_ids(expected.trim());
            cell.boundary_signature()
                .is_some_and(|sig| sig.short() == expected || sig.message.trim() == expected)
        });
        let invariant_ok = self.invariant.is_none_or(|invariant| {
            cell.boundary_signature()
                .and_then(|sig| sig.integrity.as_ref())
                .is_some_and(|v| v.invariant == invariant)
        });
        boundary_ok && signature_ok && invariant_ok
    }
}

/// Whether the judged report fails the gate: any cell whose judgement says so.
/// Cells without a judgement count by their own verdict.
pub fn gate_fails(report: &Report) -> bool {
    report.cells.iter().any(|c| match &c.expectation {
        Some(j) => j.fails_run,
        None => c.fails_run_alone(report.run.flaky_result),
    })
}

#[cfg(test)]
#[path = "expect_tests.rs"]
mod tests;
