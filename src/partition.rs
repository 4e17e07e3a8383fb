//! Shards of the matrix (`--partition`), with nextest's names and meaning:
//! `count:K/N` deals the cells, sorted by name, round-robin to N shards and
//! keeps the K-th hand; `hash:K/N` keeps the cells whose name hashes to K
//! (FNV-1a, 64 bit, so the choice never depends on the machine, the order
//! targets were found in or the harness build). Every cell lands in exactly
//! one shard, so merged shards are the whole matrix.

use crate::errors::Invalid;
use std::fmt;
use std::str::FromStr;

/// How cells are dealt to shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionKind {
    Count,
    Hash,
}

/// One shard: the `shard`-th (1-based) of `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    pub kind: PartitionKind,
    pub shard: u32,
    pub total: u32,
}

impl FromStr for Partition {
    type Err = Invalid;

    fn from_str(text: &str) -> Result<Partition, Invalid> {
        let usage = "expected count:K/N or hash:K/N with 1 <= K <= N, e.g. count:1/2";
        let (kind, rest) = text
            .split_once(':')
            .ok_or_else(|| Invalid(format!("{text:?}: {usage}")))?;
        let kind = match kind {
            "count" => PartitionKind::Count,
            "hash" => PartitionKind::Hash,
            other => {
                return Err(Invalid(format!(
                    "unknown partition kind {other:?}: {usage}"
                )))
            }
        };
        let (shard, total) = rest
            .split_once('/')
            .ok_or_else(|| Invalid(format!("{text:?}: {usage}")))?;
        let number = |s: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| Invalid(format!("{text:?}: {s:?} is not a number; {usage}")))
        };
        let (shard, total) = (number(shard)?, number(total)?);
        if total == 0 {
            return Err(Invalid(format!("{text:?}: N must be at least 1; {usage}")));
        }
        if shard == 0 || shard > total {
            return Err(Invalid(format!(
                "{text:?}: shard {shard} does not exist in {total} shards (shards count from 1); {usage}"
            )));
        }
        Ok(Partition { kind, shard, total })
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            PartitionKind::Count => "count",
            PartitionKind::Hash => "hash",
        };
        write!(f, "{kind}:{}/{}", self.shard, self.total)
    }
}

impl Partition {
    /// Which of `names` (cell names such as `agent/native-continuity`) this shard keeps.
    pub fn selects(&self, names: &[String]) -> Vec<bool> {
        match self.kind {
            PartitionKind::Hash => names
                .iter()
                .map(|n| fnv1a(n.as_bytes()) % u64::from(self.total) == u64::from(self.shard - 1))
                .collect(),
            PartitionKind::Count => {
                let mut sorted: Vec<&String> = names.iter().collect();
                sorted.sort();
                sorted.dedup();
                names
                    .iter()
                    .map(|n| {
                        let rank = sorted.binary_search(&n).unwrap_or(0);
                        rank as u64 % u64::from(self.total) == u64::from(self.shard - 1)
                    })
                    .collect()
            }
        }
    }

    /// Whether two partitions are shards of the same split.
    pub fn same_split(&self, other: &Partition) -> bool {
        self.kind == other.kind && self.total == other.total
    }
}

/// A cell's name for sharding: `target/scenario`, plus `@version` on a version axis.
pub fn cell_name(target: &str, scenario: &str, version: Option<&str>) -> String {
    match version {
        Some(v) => format!("{target}/{scenario}@{v}"),
        None => format!("{target}/{scenario}"),
    }
}

/// FNV-1a 64: tiny, stable and well distributed for short names.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        let targets = [
            "agent",
            "gateway",
            "gateway-reload",
            "rivet",
            "rivet-engine",
        ];
        let scenarios = ["native-continuity", "recreate-rehydrate"];
        targets
            .iter()
            .flat_map(|t| scenarios.iter().map(move |s| cell_name(t, s, None)))
            .collect()
    }

    #[test]
    fn parses_nextest_names_and_refuses_shards_that_do_not_exist() {
        let p: Partition = "count:1/2".parse().unwrap();
        assert_eq!((p.kind, p.shard, p.total), (PartitionKind::Count, 1, 2));
        assert_eq!(p.to_string(), "count:1/2");
        assert_eq!(
            "hash:3/3".parse::<Partition>().unwrap().to_string(),
            "hash:3/3"
        );
        for bad in [
            "count:0/2",
            "count:3/2",
            "hash:1/0",
            "count:1",
            "1/2",
            "slice:1/2",
            "count:a/2",
        ] {
            let e = bad.parse::<Partition>().unwrap_err().to_string();
            assert!(
                e.contains("count:K/N") || e.contains("partition"),
                "{bad}: {e}"
            );
        }
        assert!("count:3/2"
            .parse::<Partition>()
            .unwrap_err()
            .to_string()
            .contains("shard 3"));
    }

    #[test]
    fn every_cell_lands_in_exactly_one_shard() {
        let names = names();
        for kind in ["count", "hash"] {
            for total in 1..=4u32 {
                let mut owners = vec![0; names.len()];
                for shard in 1..=total {
                    let p: Partition = format!("{kind}:{shard}/{total}").parse().unwrap();
                    for (i, keep) in p.selects(&names).into_iter().enumerate() {
                        owners[i] += usize::from(keep);
                    }
                }
                assert!(
                    owners.iter().all(|n| *n == 1),
                    "{kind} /{total}: {owners:?}"
                );
            }
        }
    }

    #[test]
    fn count_deals_the_sorted_names_round_robin_whatever_their_order() {
        let mut names = names();
        let p: Partition = "count:1/2".parse().unwrap();
        let picked = |names: &[String]| -> Vec<String> {
            let mut v: Vec<String> = names
                .iter()
                .zip(p.selects(names))
                .filter(|(_, k)| *k)
                .map(|(n, _)| n.clone())
                .collect();
            v.sort();
            v
        };
        let first = picked(&names);
        assert_eq!(first.len(), 5);
        assert_eq!(first[0], "agent/native-continuity");
        names.reverse();
        assert_eq!(picked(&names), first);
    }

    #[test]
    fn hash_is_stable() {
        // Pinned: a shard must keep the same cells across harness builds.
        assert_eq!(fnv1a(b"agent/native-continuity"), 0xc687_8820_7b4f_2229);
    }
}
