//! Shards of the matrix (`--partition`), with nextest's names and meaning:
//! `count:K/N` deals the cells, sorted by name, round-robin to N shards and
//! keeps the K-th hand; `hash:K/N` keeps the cells whose name hashes to K
//! (FNV-1a, 64 bit, so the choice never depends on the machine, the order
//! targets were found in or the harness build); `cost:K/N` deals the cells
//! by their expected duration, longest first, each to the least-loaded
//! shard (ties to the lower shard; equal costs in name order), so the
//! shards take about the same time (the costs: `runner::cost`). Every cell
//! lands in exactly one shard, so merged shards are the whole matrix.

use crate::errors::Invalid;
use std::fmt;
use std::str::FromStr;

/// How cells are dealt to shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionKind {
    Count,
    Hash,
    /// By expected duration (longest-processing-time first).
    Cost,
}

/// The most shards a split may have: far past any CI's matrix of jobs, and
/// a bound on what a count read from a report (`run.partition`) sizes.
pub const MAX_SHARDS: u32 = 4096;

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
        let usage = "expected count:K/N, hash:K/N or cost:K/N with 1 <= K <= N, e.g. count:1/2";
        let (kind, rest) = text
            .split_once(':')
            .ok_or_else(|| Invalid(format!("{text:?}: {usage}")))?;
        let kind = match kind {
            "count" => PartitionKind::Count,
            "hash" => PartitionKind::Hash,
            "cost" => PartitionKind::Cost,
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
        if total > MAX_SHARDS {
            return Err(Invalid(format!(
                "{text:?}: {total} shards, more than the {MAX_SHARDS} a split may have; {usage}"
            )));
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
            PartitionKind::Cost => "cost",
        };
        write!(f, "{kind}:{}/{}", self.shard, self.total)
    }
}

impl Partition {
    /// Which of `names` (cell names such as `agent/native-continuity`) this
    /// shard keeps. A cost split without costs deals every cell as equal.
    pub fn selects(&self, names: &[String]) -> Vec<bool> {
        self.selects_by_cost(names, &vec![1; names.len()])
    }

    /// Which of `names` this shard keeps, `costs[i]` being what the i-th
    /// cell is expected to take (any unit); only `cost:` splits read them.
    pub fn selects_by_cost(&self, names: &[String], costs: &[u64]) -> Vec<bool> {
        match self.kind {
            PartitionKind::Cost => {
                let owner = deal_by_cost(names, costs, self.total);
                owner.into_iter().map(|s| s == self.shard - 1).collect()
            }
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
    pub(crate) fn same_split(&self, other: &Partition) -> bool {
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

/// The 0-based shard of each cell: longest first (equal costs in name
/// order), each onto the shard with the least cost so far (the lower shard
/// on a tie), as CI test splitters deal tests by their timings. Every
/// machine given the same names and costs computes the same split; a name
/// given twice is one cell, dealt once.
fn deal_by_cost(names: &[String], costs: &[u64], total: u32) -> Vec<u32> {
    let mut order: Vec<usize> = (0..names.len()).collect();
    let cost = |i: usize| costs.get(i).copied().unwrap_or(0);
    order.sort_by(|&a, &b| cost(b).cmp(&cost(a)).then_with(|| names[a].cmp(&names[b])));
    let mut loads = vec![0u64; total as usize];
    let mut dealt: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    let mut owner = vec![0u32; names.len()];
    for i in order {
        let shard = *dealt.entry(names[i].as_str()).or_insert_with(|| {
            let (least, _) = loads
                .iter()
                .enumerate()
                .min_by_key(|(s, load)| (**load, *s))
                .expect("at least one shard");
            loads[least] += cost(i);
            least as u32
        });
        owner[i] = shard;
    }
    owner
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
            // Issue 43, item 7: merge sized a table by a shard's count.
            "count:1/4294967295",
            "count:1/4097",
        ] {
            let e = bad.parse::<Partition>().unwrap_err().to_string();
            assert!(
                e.contains("count:K/N")
                    || e.contains("partition")
                    || e.contains("shards, more than"),
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
        for kind in ["count", "hash", "cost"] {
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
    fn cost_deals_the_longest_first_to_the_least_loaded_shard() {
        let names: Vec<String> = ["a", "b", "c", "d", "e"].map(String::from).into();
        let costs = [1, 9, 5, 4, 3];
        let shard = |k: u32| -> Vec<&str> {
            let p: Partition = format!("cost:{k}/2").parse().unwrap();
            names
                .iter()
                .zip(p.selects_by_cost(&names, &costs))
                .filter(|(_, keep)| *keep)
                .map(|(n, _)| n.as_str())
                .collect()
        };
        // b 9 -> 1; c 5 -> 2; d 4 -> 2 (5 < 9); e 3 -> 1 (9 = 9, the lower); a 1 -> 2.
        assert_eq!(shard(1), ["b", "e"]);
        assert_eq!(shard(2), ["a", "c", "d"]);
        // Equal costs: name order, whatever order the names come in.
        let mut reversed = names.clone();
        reversed.reverse();
        let p: Partition = "cost:1/2".parse().unwrap();
        let picked: Vec<&String> = reversed
            .iter()
            .zip(p.selects(&reversed))
            .filter(|(_, k)| *k)
            .map(|(n, _)| n)
            .collect();
        assert_eq!(picked, [&"e".to_string(), &"c".into(), &"a".into()]);
        assert_eq!(
            "cost:2/4".parse::<Partition>().unwrap().to_string(),
            "cost:2/4"
        );
    }

    #[test]
    fn hash_is_stable() {
        // Pinned: a shard must keep the same cells across harness builds.
        assert_eq!(fnv1a(b"agent/native-continuity"), 0xc687_8820_7b4f_2229);
    }
}
