//! Diffs of two sessions: the structural diff (agent-mux `SessionDiff`) and the unified
//! text diff of their transcripts that the `.diff` files hold.
//!
//! Messages are aligned by a longest common subsequence on `(role, content)`, so one message
//! inserted in the middle is one addition and everything around it stays `unchanged` — no
//! cascade of modifications. Within one gap between common messages, removals and additions
//! are paired into `modification`s in order when their roles match (a second LCS, on roles
//! only); what is left stays a removal or an addition. Only role and content count, so it
//! works across agents.
//!
//! Speed matters because a FUSE lookup of `diff/<agent>/<id>.diff` waits for it, and the
//! two sessions may share nothing. Two measures keep it fast and deterministic (no time
//! limits, which would make the output depend on machine load):
//! - `lcs` drops the items that occur on one side only before running Myers' diff: they
//!   can never be in a common subsequence, and for unrelated sessions they are nearly all
//!   items, so the edit distance Myers' cost depends on collapses.
//! - the text diff aligns the transcripts message by message along the structural diff and
//!   only diffs lines inside the message pairs it matched, instead of diffing two whole
//!   documents line by line.

use crate::model::{Message, Session};
use serde::Serialize;
use similar::{capture_diff_slices, Algorithm, DiffOp, DiffTag};
use std::collections::HashSet;
use std::hash::Hash;
use std::ops::Range;

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionDiff {
    pub session_a: String,
    pub session_b: String,
    pub operations: Vec<Operation>,
    pub stats: Stats,
}

/// One aligned position. Contents are included where they differ or exist on one side only;
/// an `unchanged` position carries only its indices and role to keep the diff small.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Operation {
    #[serde(rename = "type")]
    pub kind: OpKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_a: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_b: Option<usize>,
    pub role: &'static str,
    /// The content of an added or removed message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_a: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_b: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    Unchanged,
    Addition,
    Removal,
    Modification,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    pub unchanged: usize,
    pub additions: usize,
    pub removals: usize,
    pub modifications: usize,
}

impl Stats {
    /// `12 unchanged, 1 removal, 1 addition, 0 modifications`
    pub fn summary(&self) -> String {
        let n = |count: usize, one: &str, many: &str| {
            format!("{count} {}", if count == 1 { one } else { many })
        };
        format!(
            "{} unchanged, {}, {}, {}",
            self.unchanged,
            n(self.removals, "removal", "removals"),
            n(self.additions, "addition", "additions"),
            n(self.modifications, "modification", "modifications")
        )
    }
}

pub fn structural(a: &Session, b: &Session) -> SessionDiff {
    let ops = align(&a.messages, &b.messages);
    let mut stats = Stats::default();
    for op in &ops {
        match op.kind {
            OpKind::Unchanged => stats.unchanged += 1,
            OpKind::Addition => stats.additions += 1,
            OpKind::Removal => stats.removals += 1,
            OpKind::Modification => stats.modifications += 1,
        }
    }
    SessionDiff {
        session_a: a.unified_id(),
        session_b: b.unified_id(),
        operations: ops,
        stats,
    }
}

fn key(m: &Message) -> (&'static str, &str) {
    (m.role.as_str(), m.text())
}

/// Index pairs `(i, j)` of a longest common subsequence of `a` and `b`, ascending in both.
pub(crate) fn lcs<T: Hash + Ord>(a: &[T], b: &[T]) -> Vec<(usize, usize)> {
    let in_a: HashSet<&T> = a.iter().collect();
    let in_b: HashSet<&T> = b.iter().collect();
    let ia: Vec<usize> = (0..a.len()).filter(|&i| in_b.contains(&a[i])).collect();
    let ib: Vec<usize> = (0..b.len()).filter(|&j| in_a.contains(&b[j])).collect();
    let ra: Vec<&T> = ia.iter().map(|&i| &a[i]).collect();
    let rb: Vec<&T> = ib.iter().map(|&j| &b[j]).collect();
    let mut pairs = Vec::new();
    for op in capture_diff_slices(Algorithm::Myers, &ra, &rb) {
        if let DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = op
        {
            pairs.extend((0..len).map(|k| (ia[old_index + k], ib[new_index + k])));
        }
    }
    pairs
}

fn align(a: &[Message], b: &[Message]) -> Vec<Operation> {
    let ka: Vec<_> = a.iter().map(key).collect();
    let kb: Vec<_> = b.iter().map(key).collect();
    let mut ops = Vec::with_capacity(a.len().max(b.len()));
    let (mut i0, mut j0) = (0, 0);
    for (i, j) in lcs(&ka, &kb) {
        gap(a, b, i0..i, j0..j, &mut ops);
        ops.push(Operation {
            kind: OpKind::Unchanged,
            index_a: Some(i),
            index_b: Some(j),
            role: ka[i].0,
            content: None,
            content_a: None,
            content_b: None,
        });
        (i0, j0) = (i + 1, j + 1);
    }
    gap(a, b, i0..a.len(), j0..b.len(), &mut ops);
    ops
}

/// Above this many messages in one gap, roles are paired greedily instead of by LCS. Roles
/// take four values, so two long unrelated sessions share few common items to drop and
/// Myers' cost grows with the square of the gap; the greedy pass is linear.
const MAX_EXACT_GAP: usize = 4000;

/// Walk both sides: pair equal roles, else drop the removal when its role does not come
/// next on the other side, else the addition. Monotone, deterministic, linear.
fn greedy_pairs(a: &[&str], b: &[&str]) -> Vec<DiffOp> {
    let (mut i, mut j) = (0, 0);
    let mut ops = Vec::new();
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push(DiffOp::Equal {
                old_index: i,
                new_index: j,
                len: 1,
            });
            (i, j) = (i + 1, j + 1);
        } else if j == b.len() || (i < a.len() && b.get(j + 1) != Some(&a[i])) {
            ops.push(DiffOp::Delete {
                old_index: i,
                old_len: 1,
                new_index: j,
            });
            i += 1;
        } else {
            ops.push(DiffOp::Insert {
                old_index: i,
                new_index: j,
                new_len: 1,
            });
            j += 1;
        }
    }
    ops
}

/// One gap between common messages: pair same-role removals and additions in order.
fn gap(a: &[Message], b: &[Message], ra: Range<usize>, rb: Range<usize>, ops: &mut Vec<Operation>) {
    if ra.is_empty() && rb.is_empty() {
        return;
    }
    let roles_a: Vec<&str> = a[ra.clone()].iter().map(|m| m.role.as_str()).collect();
    let roles_b: Vec<&str> = b[rb.clone()].iter().map(|m| m.role.as_str()).collect();
    let removal = |i: usize| Operation {
        kind: OpKind::Removal,
        index_a: Some(i),
        index_b: None,
        role: a[i].role.as_str(),
        content: Some(a[i].text().to_string()),
        content_a: None,
        content_b: None,
    };
    let addition = |j: usize| Operation {
        kind: OpKind::Addition,
        index_a: None,
        index_b: Some(j),
        role: b[j].role.as_str(),
        content: Some(b[j].text().to_string()),
        content_a: None,
        content_b: None,
    };
    let role_ops = if roles_a.len() + roles_b.len() <= MAX_EXACT_GAP {
        capture_diff_slices(Algorithm::Myers, &roles_a, &roles_b)
    } else {
        greedy_pairs(&roles_a, &roles_b)
    };
    for op in role_ops {
        let (o, ol, n, nl) = match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => {
                for k in 0..len {
                    let (i, j) = (ra.start + old_index + k, rb.start + new_index + k);
                    ops.push(Operation {
                        kind: OpKind::Modification,
                        index_a: Some(i),
                        index_b: Some(j),
                        role: a[i].role.as_str(),
                        content: None,
                        content_a: Some(a[i].text().to_string()),
                        content_b: Some(b[j].text().to_string()),
                    });
                }
                continue;
            }
            DiffOp::Delete {
                old_index, old_len, ..
            } => (old_index, old_len, 0, 0),
            DiffOp::Insert {
                new_index, new_len, ..
            } => (0, 0, new_index, new_len),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => (old_index, old_len, new_index, new_len),
        };
        for i in ra.start + o..ra.start + o + ol {
            ops.push(removal(i));
        }
        for j in rb.start + n..rb.start + n + nl {
            ops.push(addition(j));
        }
    }
}

impl SessionDiff {
    pub fn to_json(&self) -> String {
        let mut s = super::pretty_json(self);
        s.push('\n');
        s
    }
}

/// The unified text diff (3 lines of context) of `a`'s transcript against `b`'s, headed by
/// the structural stats as a `#` comment line, which `patch` and diff viewers skip.
pub fn transcript_diff(a: &Session, b: &Session, name_a: &str, name_b: &str) -> String {
    let ta = super::transcript::blocks(a);
    let tb = super::transcript::blocks(b);
    diff_blocks(a, b, &ta, &tb, name_a, name_b)
}

/// [`transcript_diff`] for transcripts already cut by `transcript::blocks`.
pub(crate) fn diff_blocks(
    a: &Session,
    b: &Session,
    (head_a, blocks_a): &(String, Vec<String>),
    (head_b, blocks_b): &(String, Vec<String>),
    name_a: &str,
    name_b: &str,
) -> String {
    let d = structural(a, b);
    let (la, sa) = split(head_a, blocks_a);
    let (lb, sb) = split(head_b, blocks_b);
    let block = |starts: &[usize], k: usize| starts[k]..starts[k + 1];

    let mut pairs = Vec::new();
    let mut pair_blocks = |ra: Range<usize>, rb: Range<usize>| {
        for (i, j) in lcs(&la[ra.clone()], &lb[rb.clone()]) {
            pairs.push((ra.start + i, rb.start + j));
        }
    };
    pair_blocks(block(&sa, 0), block(&sb, 0));
    for op in &d.operations {
        if let (Some(i), Some(j)) = (op.index_a, op.index_b) {
            pair_blocks(block(&sa, i + 1), block(&sb, j + 1));
        }
    }

    let mut out = format!("# sessfs diff: {}\n", d.stats.summary());
    let groups = similar::group_diff_ops(ops_from_pairs(&pairs, la.len(), lb.len()), 3);
    if groups.is_empty() {
        return out;
    }
    out.push_str(&format!("--- {name_a}\n+++ {name_b}\n"));
    for group in groups {
        out.push_str(&format!(
            "{}\n",
            similar::udiff::UnifiedHunkHeader::new(&group)
        ));
        for op in &group {
            let (tag, ra, rb) = op.as_tag_tuple();
            let (sign, lines) = match tag {
                DiffTag::Equal => (' ', &la[ra]),
                DiffTag::Delete => ('-', &la[ra]),
                DiffTag::Insert => ('+', &lb[rb]),
                // ops_from_pairs never makes replacements.
                DiffTag::Replace => continue,
            };
            for line in lines {
                out.push(sign);
                out.push_str(line);
                if !line.ends_with('\n') {
                    out.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
    }
    out
}

/// The lines of a transcript, and the first line of each block (header, then messages)
/// plus the end: block `k` is lines `starts[k]..starts[k + 1]`.
fn split<'a>(head: &'a str, blocks: &'a [String]) -> (Vec<&'a str>, Vec<usize>) {
    let mut lines: Vec<&str> = head.split_inclusive('\n').collect();
    let mut starts = vec![0];
    for blk in blocks {
        starts.push(lines.len());
        lines.extend(blk.split_inclusive('\n'));
    }
    starts.push(lines.len());
    (lines, starts)
}

/// Equal runs for the matched line pairs, deletions then insertions between them.
fn ops_from_pairs(pairs: &[(usize, usize)], len_a: usize, len_b: usize) -> Vec<DiffOp> {
    let mut ops = Vec::new();
    let (mut i0, mut j0) = (0, 0);
    let flush_gap = |ops: &mut Vec<DiffOp>, i0: usize, j0: usize, i: usize, j: usize| {
        if i > i0 {
            ops.push(DiffOp::Delete {
                old_index: i0,
                old_len: i - i0,
                new_index: j0,
            });
        }
        if j > j0 {
            ops.push(DiffOp::Insert {
                old_index: i,
                new_index: j0,
                new_len: j - j0,
            });
        }
    };
    for &(i, j) in pairs {
        flush_gap(&mut ops, i0, j0, i, j);
        match ops.last_mut() {
            Some(DiffOp::Equal {
                old_index,
                new_index,
                len,
            }) if *old_index + *len == i && *new_index + *len == j => *len += 1,
            _ => ops.push(DiffOp::Equal {
                old_index: i,
                new_index: j,
                len: 1,
            }),
        }
        (i0, j0) = (i + 1, j + 1);
    }
    flush_gap(&mut ops, i0, j0, len_a, len_b);
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Agent, Role};

    fn msg(role: Role, text: &str) -> Message {
        Message {
            role,
            content: text.into(),
            ..Default::default()
        }
    }

    fn session(id: &str, texts: &[(Role, &str)]) -> Session {
        let mut s = Session::new(Agent::Pi, id);
        s.messages = texts.iter().map(|(r, t)| msg(*r, t)).collect();
        s
    }

    const BASE: [(Role, &str); 6] = [
        (Role::User, "one"),
        (Role::Assistant, "two"),
        (Role::User, "three"),
        (Role::Assistant, "four"),
        (Role::User, "five"),
        (Role::Assistant, "six"),
    ];

    #[test]
    fn identical_sessions_are_all_unchanged() {
        let a = session("a", &BASE);
        let d = structural(&a, &a.clone());
        assert_eq!(
            d.stats,
            Stats {
                unchanged: 6,
                ..Default::default()
            }
        );
        assert!(d.operations.iter().all(|o| o.kind == OpKind::Unchanged));
    }

    #[test]
    fn one_insert_in_the_middle_is_one_addition() {
        let a = session("a", &BASE);
        let mut b = a.clone();
        b.messages.insert(3, msg(Role::User, "inserted"));
        let d = structural(&a, &b);
        assert_eq!(
            d.stats,
            Stats {
                unchanged: 6,
                additions: 1,
                ..Default::default()
            }
        );
        let add = d.operations.iter().find(|o| o.kind == OpKind::Addition);
        assert_eq!(add.and_then(|o| o.index_b), Some(3));
    }

    #[test]
    fn one_changed_message_is_one_modification() {
        let a = session("a", &BASE);
        let mut b = a.clone();
        b.messages[2].content = "THREE".into();
        let d = structural(&a, &b);
        assert_eq!(
            d.stats,
            Stats {
                unchanged: 5,
                modifications: 1,
                ..Default::default()
            }
        );
        let m = &d.operations[2];
        assert_eq!(m.kind, OpKind::Modification);
        assert_eq!((m.index_a, m.index_b), (Some(2), Some(2)));
        assert_eq!(m.content_b.as_deref(), Some("THREE"));
    }

    #[test]
    fn different_roles_do_not_pair() {
        let a = session("a", &[(Role::User, "x")]);
        let b = session("b", &[(Role::Assistant, "y")]);
        let d = structural(&a, &b);
        assert_eq!(d.stats.removals, 1);
        assert_eq!(d.stats.additions, 1);
        assert_eq!(d.stats.modifications, 0);
        let json = d.to_json();
        assert!(json.starts_with("{\n  \"sessionA\": \"pi:a\""), "{json}");
    }

    #[test]
    fn stats_summary_reads_naturally() {
        let s = Stats {
            unchanged: 12,
            additions: 1,
            removals: 1,
            modifications: 0,
        };
        assert_eq!(
            s.summary(),
            "12 unchanged, 1 removal, 1 addition, 0 modifications"
        );
    }

    /// Apply a unified diff made by [`transcript_diff`] to `a` (enough of `patch` for tests).
    fn apply(a: &str, diff: &str) -> String {
        let old: Vec<&str> = a.split_inclusive('\n').collect();
        let mut out = String::new();
        let mut pos = 0;
        for line in diff.split_inclusive('\n') {
            if let Some(h) = line.strip_prefix("@@ -") {
                let start: usize = h.split([',', ' ']).next().unwrap().parse().unwrap();
                // `-0,0` hunks insert before line 1; otherwise start is 1-based.
                let start = start.saturating_sub(1).max(pos);
                old[pos..start].iter().for_each(|l| out.push_str(l));
                pos = start;
            } else if line.starts_with("---") || line.starts_with("+++") || line.starts_with('#') {
            } else if let Some(l) = line.strip_prefix('+') {
                out.push_str(l);
            } else if line.starts_with('-') || line.starts_with(' ') {
                pos += 1;
                if let Some(l) = line.strip_prefix(' ') {
                    out.push_str(l);
                }
            }
        }
        old[pos..].iter().for_each(|l| out.push_str(l));
        out
    }

    #[test]
    fn transcript_diff_applies() {
        let a = crate::render::golden::sample();
        let mut b = a.clone();
        b.messages.remove(1);
        b.messages[4].content = "changed\ntext".into();
        b.messages.push(msg(Role::User, "appended"));
        b.title = Some("Other title".into());
        let ta = crate::render::transcript::render(&a);
        let tb = crate::render::transcript::render(&b);
        let d = transcript_diff(&a, &b, "a/t.md", "b/t.md");
        assert!(d.starts_with("# sessfs diff: "), "{d}");
        assert_eq!(apply(&ta, &d), tb);
        // Unrelated sessions, and a session against itself.
        let c = session("c", &BASE);
        assert_eq!(
            apply(&ta, &transcript_diff(&a, &c, "a", "b")),
            crate::render::transcript::render(&c)
        );
        let same = transcript_diff(&a, &a, "a", "b");
        assert_eq!(
            same,
            "# sessfs diff: 9 unchanged, 0 removals, 0 additions, 0 modifications\n"
        );
    }

    #[test]
    fn lcs_ignores_items_missing_on_one_side() {
        let a = ["x", "a", "y", "b", "c"];
        let b = ["a", "z", "b", "c", "w"];
        assert_eq!(lcs(&a, &b), vec![(1, 0), (3, 2), (4, 3)]);
    }

    #[test]
    fn long_unrelated_gaps_stay_monotone_and_complete() {
        let roles = [Role::User, Role::Assistant, Role::Tool];
        let mut a = Session::new(Agent::Pi, "a");
        let mut b = Session::new(Agent::Pi, "b");
        for i in 0..3000 {
            a.messages.push(msg(roles[i % 3], &format!("a{i}")));
            b.messages.push(msg(roles[i % 2], &format!("b{i}")));
        }
        let d = structural(&a, &b);
        let s = d.stats;
        assert_eq!(s.unchanged, 0);
        assert_eq!(s.modifications + s.removals, 3000);
        assert_eq!(s.modifications + s.additions, 3000);
        let (mut last_a, mut last_b) = (None, None);
        for op in &d.operations {
            if let Some(i) = op.index_a {
                assert!(last_a < Some(i));
                last_a = Some(i);
            }
            if let Some(j) = op.index_b {
                assert!(last_b < Some(j));
                last_b = Some(j);
            }
            if op.kind == OpKind::Modification {
                let (i, j) = (op.index_a.unwrap(), op.index_b.unwrap());
                assert_eq!(a.messages[i].role, b.messages[j].role);
            }
        }
    }
}
