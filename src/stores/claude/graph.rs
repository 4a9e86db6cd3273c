//! From the uuid/parentUuid graph of a Claude Code file to ordered lists of records.
//!
//! The file is a tree: a rewind or an edited prompt leaves the old path in place and starts
//! a sibling. But not every fork in the tree is a branch. Claude Code writes one API reply
//! as one line per content block, each line a child of the previous one, and the result of
//! a parallel tool call hangs off the line that made the call, while the conversation goes
//! on from the last line. Walking parents from the leaf alone would drop those results, and
//! counting every extra child as a branch would turn each parallel call into a "branch".
//! So a path is walked first and then *absorbs* what belongs to it: the other lines of the
//! replies on it (same `message.id`) and the results answering their tool calls. Only
//! user or assistant records left over after that are real branches.
//!
//! Two more joints the walk crosses: a `compact_boundary` starts a new chain
//! (`parentUuid: null`) but names the old leaf in `logicalParentUuid`, so the pre-compaction
//! history stays in the transcript; and a chain root in the middle of the file without any
//! link (hand-edited or very old files) continues from the chain record written just before
//! it, so such files read in file order instead of collapsing to their last record.

use super::records::{Kind, Rec};
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

/// At most this many branches are materialised; real files can hold thousands of rewinds.
pub(super) const MAX_BRANCHES: usize = 100;

pub(super) struct BranchPlan {
    pub leaf: usize,
    pub fork: Option<usize>,
    pub order: Vec<usize>,
}

pub(super) struct Plan {
    pub active: Vec<usize>,
    pub branches: Vec<BranchPlan>,
    /// Branches found beyond [`MAX_BRANCHES`].
    pub dropped_branches: usize,
}

pub(super) struct Graph<'a> {
    recs: &'a [Rec],
    /// Record indices in this graph, ascending; duplicates of a uuid keep the last copy.
    members: Vec<usize>,
    is_member: Vec<bool>,
    parent: Vec<Option<usize>>,
    logical: Vec<Option<usize>>,
    children: Vec<Vec<usize>>,
    /// Chain-record members, ascending, for the implicit continuation of orphan roots.
    chain: Vec<usize>,
    by_msg: HashMap<&'a str, Vec<usize>>,
    results_by_call: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Graph<'a> {
    /// A graph over `candidates` (ascending record indices).
    pub fn new(recs: &'a [Rec], candidates: &[usize]) -> Graph<'a> {
        let n = recs.len();
        let mut by_uuid: HashMap<&str, usize> = HashMap::new();
        let mut is_member = vec![false; n];
        for &i in candidates {
            let Some(r) = recs.get(i) else { continue };
            if let Some(u) = r.uuid.as_deref() {
                // Claude Code keys records by uuid; a re-written uuid replaces the first copy.
                if let Some(old) = by_uuid.insert(u, i) {
                    is_member[old] = false;
                }
            }
            is_member[i] = true;
        }
        let members: Vec<usize> = (0..n).filter(|&i| is_member[i]).collect();
        let mut parent = vec![None; n];
        let mut logical = vec![None; n];
        let mut children = vec![Vec::new(); n];
        let mut chain = Vec::new();
        let mut by_msg: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut results_by_call: HashMap<&str, Vec<usize>> = HashMap::new();
        for &i in &members {
            let r = &recs[i];
            let look = |u: &Option<String>| {
                u.as_deref()
                    .and_then(|u| by_uuid.get(u).copied())
                    .filter(|&p| p != i)
            };
            parent[i] = look(&r.parent);
            logical[i] = look(&r.logical_parent);
            if let Some(p) = parent[i] {
                children[p].push(i);
            }
            if r.kind.is_chain() {
                chain.push(i);
            }
            if r.kind == Kind::Assistant {
                if let Some(m) = r.msg_id.as_deref() {
                    by_msg.entry(m).or_default().push(i);
                }
            }
            if r.kind == Kind::User {
                for res in &r.results {
                    results_by_call.entry(res.id.as_str()).or_default().push(i);
                }
            }
        }
        Graph {
            recs,
            members,
            is_member,
            parent,
            logical,
            children,
            chain,
            by_msg,
            results_by_call,
        }
    }

    /// The path from the root to `leaf`, root first.
    fn walk(&self, leaf: usize) -> Vec<usize> {
        let mut path = Vec::new();
        let mut seen = HashSet::new();
        let mut cur = Some(leaf);
        while let Some(i) = cur {
            if !seen.insert(i) {
                break;
            }
            path.push(i);
            cur = self.parent[i].or(self.logical[i]).or_else(|| {
                // An orphan root: continue from the chain record written just before it.
                let pos = self.chain.partition_point(|&c| c < i);
                pos.checked_sub(1)
                    .and_then(|p| self.chain.get(p).copied())
                    .filter(|p| !seen.contains(p))
            });
        }
        path.reverse();
        path
    }

    /// What belongs to `path` without being on it: sibling lines of its replies and the
    /// results of their tool calls.
    fn absorb(&self, path: &[usize]) -> Vec<usize> {
        let on: HashSet<usize> = path.iter().copied().collect();
        let mut out: Vec<usize> = Vec::new();
        let mut groups: Vec<&str> = Vec::new();
        for &i in path {
            if let Some(m) = self.recs[i].msg_id.as_deref() {
                if self.recs[i].kind == Kind::Assistant && !groups.contains(&m) {
                    groups.push(m);
                }
            }
        }
        for m in &groups {
            for &j in self.by_msg.get(m).into_iter().flatten() {
                if !on.contains(&j) {
                    out.push(j);
                }
            }
        }
        let mut answered: HashSet<&str> = HashSet::new();
        for &i in path {
            for res in &self.recs[i].results {
                answered.insert(res.id.as_str());
            }
        }
        let calls: Vec<&str> = path
            .iter()
            .chain(out.iter())
            .filter(|&&i| self.recs[i].kind == Kind::Assistant)
            .flat_map(|&i| {
                self.recs[i]
                    .tool_uses
                    .iter()
                    .map(|t| t.tool_call_id.as_str())
            })
            .collect();
        let call_set: HashSet<&str> = calls.iter().copied().collect();
        let mut extra: Vec<usize> = Vec::new();
        let mut taken: HashSet<usize> = HashSet::new();
        for c in &calls {
            if answered.contains(c) {
                continue;
            }
            for &j in self.results_by_call.get(c).into_iter().flatten() {
                let r = &self.recs[j];
                let all_ours = r.results.iter().all(|x| call_set.contains(x.id.as_str()));
                if on.contains(&j) || taken.contains(&j) || !all_ours {
                    continue;
                }
                extra.push(j);
                taken.insert(j);
                for x in &r.results {
                    answered.insert(x.id.as_str());
                }
                break;
            }
        }
        out.extend(extra);
        out
    }

    /// `path` with `absorbed` slotted in: each absorbed record goes after the path record
    /// written just before it (file order, when the path itself is in file order).
    fn order(&self, path: &[usize], absorbed: &[usize]) -> Vec<usize> {
        let mut keyed: Vec<(usize, usize, usize)> = path
            .iter()
            .enumerate()
            .map(|(pos, &i)| (pos, 0, i))
            .collect();
        // Paths are nearly always in file order; then a binary search finds the slot.
        let sorted = path.windows(2).all(|w| w[0] < w[1]);
        for &a in absorbed {
            let pos = if sorted {
                path.partition_point(|&p| p < a).saturating_sub(1)
            } else {
                path.iter().rposition(|&p| p < a).unwrap_or(0)
            };
            keyed.push((pos, a + 1, a));
        }
        keyed.sort_unstable();
        keyed.into_iter().map(|(_, _, i)| i).collect()
    }

    fn last_where(&self, f: impl Fn(&Rec) -> bool) -> Option<usize> {
        self.members
            .iter()
            .rev()
            .copied()
            .find(|&i| f(&self.recs[i]))
    }

    /// The active path and the branches.
    pub fn plan(&self) -> Plan {
        let last_chain = self.last_where(|r| r.kind.is_chain());
        let last_participant = self.last_where(|r| r.kind.is_participant());
        let path = match (last_chain, last_participant) {
            (Some(c), Some(p)) => {
                let from_chain = self.walk(c);
                if from_chain.contains(&p) {
                    from_chain
                } else {
                    self.walk(p)
                }
            }
            (Some(c), None) => self.walk(c),
            _ => Vec::new(),
        };
        let absorbed = self.absorb(&path);
        let active = self.order(&path, &absorbed);
        let active_set: HashSet<usize> = active.iter().copied().collect();
        let mut covered = vec![false; self.recs.len()];
        for &i in &active {
            covered[i] = true;
        }
        let is_leaf_kind = |r: &Rec| r.kind.is_participant() && !r.meta;
        let mut leaves: Vec<usize> = self
            .members
            .iter()
            .copied()
            .filter(|&i| is_leaf_kind(&self.recs[i]) && !covered[i])
            .filter(|&i| {
                !self.children[i]
                    .iter()
                    .any(|&c| self.is_member[c] && !covered[c] && is_leaf_kind(&self.recs[c]))
            })
            .collect();
        leaves.reverse();
        let mut branches = Vec::new();
        let mut dropped = 0;
        for leaf in leaves {
            if covered[leaf] {
                continue;
            }
            let path = self.walk(leaf);
            let absorbed = self.absorb(&path);
            let order = self.order(&path, &absorbed);
            for &i in &order {
                covered[i] = true;
            }
            if branches.len() >= MAX_BRANCHES {
                dropped += 1;
                continue;
            }
            let fork = path
                .iter()
                .rev()
                .copied()
                .find(|i| active_set.contains(i) && self.recs[*i].uuid.is_some());
            branches.push(BranchPlan { leaf, fork, order });
        }
        Plan {
            active,
            branches,
            dropped_branches: dropped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolCall;
    use crate::stores::claude::records::ResultBlock;

    fn rec(kind: Kind, uuid: &str, parent: Option<&str>) -> Rec {
        let mut m = super::super::records::FileMeta::default();
        let ty = match kind {
            Kind::User => "user",
            Kind::Assistant => "assistant",
            Kind::System => "system",
            _ => "progress",
        };
        let v = serde_json::json!({"type": ty, "uuid": uuid, "parentUuid": parent});
        super::super::records::parse_line(v.to_string().as_bytes(), &mut m)
            .expect("JSON")
            .expect("a record")
    }

    fn asst(uuid: &str, parent: &str, msg: &str, call: Option<&str>) -> Rec {
        let mut r = rec(Kind::Assistant, uuid, Some(parent));
        r.msg_id = Some(msg.into());
        if let Some(c) = call {
            r.tool_uses.push(ToolCall {
                tool_call_id: c.into(),
                tool_name: "Bash".into(),
                ..ToolCall::default()
            });
        }
        r
    }

    fn result(uuid: &str, parent: &str, call: &str) -> Rec {
        let mut r = rec(Kind::User, uuid, Some(parent));
        r.results.push(ResultBlock {
            id: call.into(),
            ..ResultBlock::default()
        });
        r
    }

    fn ids(recs: &[Rec], order: &[usize]) -> Vec<String> {
        order
            .iter()
            .map(|&i| recs[i].uuid.clone().unwrap_or_default())
            .collect()
    }

    #[test]
    fn parallel_tool_results_are_not_branches() {
        let recs = vec![
            rec(Kind::User, "u", None),
            asst("a1", "u", "m", Some("x")),
            asst("a2", "a1", "m", Some("y")),
            result("rx", "a1", "x"),
            result("ry", "a2", "y"),
            asst("a3", "ry", "m2", None),
        ];
        let all: Vec<usize> = (0..recs.len()).collect();
        let plan = Graph::new(&recs, &all).plan();
        assert_eq!(
            ids(&recs, &plan.active),
            ["u", "a1", "a2", "rx", "ry", "a3"]
        );
        assert!(plan.branches.is_empty());
    }

    #[test]
    fn rewind_is_a_branch_with_its_fork_point() {
        let recs = vec![
            rec(Kind::User, "u1", None),
            asst("a1", "u1", "m1", None),
            rec(Kind::User, "old", Some("a1")),
            asst("olda", "old", "m2", None),
            rec(Kind::User, "new", Some("a1")),
            asst("newa", "new", "m3", None),
        ];
        let all: Vec<usize> = (0..recs.len()).collect();
        let plan = Graph::new(&recs, &all).plan();
        assert_eq!(ids(&recs, &plan.active), ["u1", "a1", "new", "newa"]);
        assert_eq!(plan.branches.len(), 1);
        let b = &plan.branches[0];
        assert_eq!(ids(&recs, &b.order), ["u1", "a1", "old", "olda"]);
        assert_eq!(b.fork, Some(1));
    }

    #[test]
    fn orphan_roots_continue_in_file_order_and_cycles_end() {
        let recs = vec![
            rec(Kind::User, "a", None),
            rec(Kind::User, "b", None),
            rec(Kind::User, "c", Some("d")),
            rec(Kind::User, "d", Some("c")),
        ];
        let all: Vec<usize> = (0..recs.len()).collect();
        let plan = Graph::new(&recs, &all).plan();
        assert!(plan.active.contains(&3));
        let plan = Graph::new(&recs[..2], &[0, 1]).plan();
        assert_eq!(ids(&recs, &plan.active), ["a", "b"]);
    }
}
