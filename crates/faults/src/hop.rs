//! Which hop a fault proxy sits on: [`LocalHop`], one of the local stack's
//! four (each named and described here once), or [`Hop`], any hop a fault
//! names: a local one, or one a deployment's `[faults]` table names. A
//! hop's name is read once, where a config file or a table gives it
//! ([`Hop::named`]); past that a hop is compared as a `Hop`, never as text.

use std::fmt;

/// A hop of the local stack: the proxies it puts between its parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LocalHop {
    /// Clients → the nginx gateway.
    Gateway,
    /// The nginx gateway → sandbox-agent.
    Agent,
    /// The persist driver → the Rivet Engine.
    Persist,
    /// The RivetKit runner → the Rivet Engine.
    Runner,
}

impl LocalHop {
    /// Every local hop, in the order the stack lists them.
    pub const ALL: [LocalHop; 4] = [
        LocalHop::Gateway,
        LocalHop::Agent,
        LocalHop::Persist,
        LocalHop::Runner,
    ];

    /// Its name, as a config file's fault target, the trace and the
    /// report write it.
    pub fn name(self) -> &'static str {
        match self {
            LocalHop::Gateway => "gateway",
            LocalHop::Agent => "agent",
            LocalHop::Persist => "persist",
            LocalHop::Runner => "runner",
        }
    }

    /// What it carries (`continuity list`, a config file's help).
    pub fn carries(self) -> &'static str {
        match self {
            LocalHop::Gateway => "clients → the nginx gateway",
            LocalHop::Agent => "the nginx gateway → sandbox-agent",
            LocalHop::Persist => "the persist driver → the Rivet Engine",
            LocalHop::Runner => "the RivetKit runner → the Rivet Engine",
        }
    }

    /// The local hop of this name, if one is.
    pub fn from_name(name: &str) -> Option<LocalHop> {
        LocalHop::ALL.into_iter().find(|h| h.name() == name)
    }
}

impl fmt::Display for LocalHop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A hop a fault acts on: one of the local stack's, or another a
/// deployment's `[faults]` table names. A deployment's hop named as a
/// local one is that hop (its `gateway` carries the clients to its
/// gateway, as the local stack's does).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Hop(Repr);

/// Private, so an `Other` never holds a local hop's name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Repr {
    Local(LocalHop),
    Other(String),
}

impl Hop {
    /// The hop `name` names: the local one of that name, else another.
    pub fn named(name: &str) -> Hop {
        match LocalHop::from_name(name) {
            Some(local) => Hop(Repr::Local(local)),
            None => Hop(Repr::Other(name.to_string())),
        }
    }

    /// The local hop it is, if it is one.
    pub fn local(&self) -> Option<LocalHop> {
        match self.0 {
            Repr::Local(local) => Some(local),
            Repr::Other(_) => None,
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        match &self.0 {
            Repr::Local(local) => local.name(),
            Repr::Other(name) => name,
        }
    }
}

impl From<LocalHop> for Hop {
    fn from(local: LocalHop) -> Hop {
        Hop(Repr::Local(local))
    }
}

impl PartialEq<LocalHop> for Hop {
    fn eq(&self, other: &LocalHop) -> bool {
        self.local() == Some(*other)
    }
}

impl fmt::Display for Hop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_hop_is_named_once_and_read_back() {
        for hop in LocalHop::ALL {
            assert_eq!(LocalHop::from_name(hop.name()), Some(hop));
            assert_eq!(Hop::named(hop.name()), hop);
            assert_eq!(Hop::named(hop.name()), Hop::from(hop));
            assert_eq!(Hop::named(hop.name()).to_string(), hop.name());
        }
        assert_eq!(LocalHop::from_name("gatewey"), None);
    }

    #[test]
    fn another_hop_keeps_its_name_and_is_no_local_one() {
        let db = Hop::named("db");
        assert_eq!((db.local(), db.name()), (None, "db"));
        assert_eq!(db, Hop::named("db"));
        assert!(LocalHop::ALL
            .iter()
            .all(|&l| db != l && db.local() != Some(l)));
    }
}
