//! The structural diff of two sessions (agent-mux `SessionDiff`).
//!
//! Messages are aligned by a longest common subsequence on `(role, content)`, so one message
//! inserted in the middle is one addition and everything around it stays `unchanged` — no
//! cascade of modifications. The alignment comes from `similar`'s Myers diff, which finds a
//! shortest edit script (equivalently a longest common subsequence) in linear memory, so
//! even two sessions of 100,000 messages diff without an n×m table.
//!
//! Within one gap between common messages, removals and additions are paired into
//! `modification`s in order when their roles match (a second LCS, on roles only); what is
//! left stays a removal or an addition. It works across agents: only role and content count.

use crate::model::{Message, Session};
use serde::Serialize;
use similar::{capture_diff_slices, Algorithm, DiffOp};

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
    (m.role.as_str(), m.content.as_str())
}

fn align(a: &[Message], b: &[Message]) -> Vec<Operation> {
    let ka: Vec<_> = a.iter().map(key).collect();
    let kb: Vec<_> = b.iter().map(key).collect();
    let mut ops = Vec::with_capacity(a.len().max(b.len()));
    for op in capture_diff_slices(Algorithm::Myers, &ka, &kb) {
        match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => {
                for k in 0..len {
                    ops.push(Operation {
                        kind: OpKind::Unchanged,
                        index_a: Some(old_index + k),
                        index_b: Some(new_index + k),
                        role: ka[old_index + k].0,
                        content: None,
                        content_a: None,
                        content_b: None,
                    });
                }
            }
            DiffOp::Delete {
                old_index, old_len, ..
            } => gap(a, b, old_index..old_index + old_len, 0..0, &mut ops),
            DiffOp::Insert {
                new_index, new_len, ..
            } => gap(a, b, 0..0, new_index..new_index + new_len, &mut ops),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => gap(
                a,
                b,
                old_index..old_index + old_len,
                new_index..new_index + new_len,
                &mut ops,
            ),
        }
    }
    ops
}

/// One gap between common messages: pair same-role removals and additions in order.
fn gap(
    a: &[Message],
    b: &[Message],
    ra: std::ops::Range<usize>,
    rb: std::ops::Range<usize>,
    ops: &mut Vec<Operation>,
) {
    let roles_a: Vec<&str> = a[ra.clone()].iter().map(|m| m.role.as_str()).collect();
    let roles_b: Vec<&str> = b[rb.clone()].iter().map(|m| m.role.as_str()).collect();
    let removal = |i: usize| Operation {
        kind: OpKind::Removal,
        index_a: Some(i),
        index_b: None,
        role: a[i].role.as_str(),
        content: Some(a[i].content.clone()),
        content_a: None,
        content_b: None,
    };
    let addition = |j: usize| Operation {
        kind: OpKind::Addition,
        index_a: None,
        index_b: Some(j),
        role: b[j].role.as_str(),
        content: Some(b[j].content.clone()),
        content_a: None,
        content_b: None,
    };
    for op in capture_diff_slices(Algorithm::Myers, &roles_a, &roles_b) {
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
                        content_a: Some(a[i].content.clone()),
                        content_b: Some(b[j].content.clone()),
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
}
