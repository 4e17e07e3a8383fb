//! What every layer's errors share: [`error_chain`], which prints an error
//! with its causes on one line, [`Invalid`], the reason a value (a flag, a
//! config field, an environment variable) was rejected, and
//! [`HarnessFault`], a part of continuity's own that failed under a cell
//! (its Postgres, its Chromium, its Rivet app…): never a verdict on
//! sandbox-agent. A leaf module: it imports nothing of the crate.

/// The whole cause chain on one line, most specific last; a cause already
/// quoted by the error above it is not repeated (reqwest hides "connection
/// refused" two levels down, io errors often quote their own cause).
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(err) = cur {
        let text = err.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cur = err.source();
    }
    parts.join(": ")
}

/// Why a value was rejected, complete on its own ("expected a version such
/// as 0.4.2"); the caller adds which flag or field held it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

impl Invalid {
    pub fn new(reason: impl Into<String>) -> Self {
        Invalid(reason.into())
    }
}

/// A part of continuity's own that a cell runs on (the schema's: a
/// signature's `component` names it).
pub use continuity_schema::HarnessPart;

/// A part of continuity's own failed: what it was, and what was seen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {cause}", .part.describe())]
pub struct HarnessFault {
    pub part: HarnessPart,
    /// What was seen: `the DevTools connection closed`, `connection refused`.
    pub cause: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("{text}")]
    struct Layer {
        text: &'static str,
        #[source]
        source: Option<Box<Layer>>,
    }

    fn layer(text: &'static str, source: Option<Layer>) -> Layer {
        Layer {
            text,
            source: source.map(Box::new),
        }
    }

    #[test]
    fn the_chain_joins_causes_most_specific_last() {
        let e = layer(
            "request failed",
            Some(layer("connect", Some(layer("connection refused", None)))),
        );
        assert_eq!(
            error_chain(&e),
            "request failed: connect: connection refused"
        );
    }

    #[test]
    fn a_cause_the_error_already_quotes_is_not_repeated() {
        let e = layer("cannot write x: disk full", Some(layer("disk full", None)));
        assert_eq!(error_chain(&e), "cannot write x: disk full");
    }
}
