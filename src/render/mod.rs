//! Rendering: [`Session`] in, the bytes of every file of its directory out.
//!
//! Rendering is separate from parsing so each side can be read and tested alone: stores
//! know nothing of Markdown, renderers know nothing of native formats.
//!
//! Two properties every renderer keeps (CONTRACT section 3):
//! - **deterministic**: the same session gives the same bytes, so `st_size` can be learned
//!   once per source version and trusted;
//! - **prefix-stable**: message *i* renders from message *i* and the messages before it only,
//!   never from later ones, so appending to an append-only source only appends bytes.
//!   This is why tool results render at the result message, not at the call, and why the
//!   cost summary is a running total rather than a header field.

pub mod diff;
mod json;
pub mod messages;
pub mod meta;
mod scan;
mod text;
pub mod tools;
pub mod transcript;

#[cfg(test)]
mod golden;

use crate::buf::exact;
use crate::model::Session;
use crate::spill::{Body, Sink, SpillTo};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io;
use std::sync::Arc;

/// One entry of a session directory, keyed by its path relative to the session directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    Dir,
    File(Body),
    /// A relative symlink target.
    Symlink(String),
}

/// Everything under one session directory. Parent directories are always present as
/// [`Node::Dir`] entries; paths use `/` and never start with one.
#[derive(Clone, Debug, Default)]
pub struct Bundle {
    pub entries: BTreeMap<String, Node>,
    /// Where files that grow big while they are written go (see [`crate::spill`]); without
    /// it every file is held in memory.
    pub spill: Option<SpillTo>,
}

impl Bundle {
    /// A bundle whose big files spill to disk as they are written.
    pub fn spilling(to: Option<SpillTo>) -> Bundle {
        Bundle {
            spill: to,
            ..Bundle::default()
        }
    }

    pub fn file(&mut self, path: impl Into<String>, bytes: impl Into<Vec<u8>>) {
        let path = path.into();
        self.parents(&path);
        let v = exact(bytes.into());
        self.entries
            .insert(path, Node::File(Body::Mem(Arc::new(v))));
    }

    /// A file written by `render` as it is produced, so a big one never exists in memory
    /// whole. Should the spill file fail (disk full), the file is rendered again in memory.
    pub fn write(
        &mut self,
        path: impl Into<String>,
        expected: usize,
        render: impl Fn(&mut dyn io::Write) -> io::Result<()>,
    ) {
        let path = path.into();
        self.parents(&path);
        let mut sink = Sink::with_capacity(self.spill.as_mut(), expected);
        let body = render(&mut sink).and_then(|()| sink.finish()).or_else(|e| {
            log::warn!("cannot spill {path} to disk ({e}); holding it in memory");
            let mut mem = Sink::new(None);
            render(&mut mem).and_then(|()| mem.finish())
        });
        // Writing to memory cannot fail; the `Err` arm exists for the type only.
        let body = body.unwrap_or_else(|_| Body::Mem(Arc::default()));
        self.entries.insert(path, Node::File(body));
    }

    pub fn dir(&mut self, path: impl Into<String>) {
        let path = path.into();
        self.parents(&path);
        self.entries.insert(path, Node::Dir);
    }

    pub fn symlink(&mut self, path: impl Into<String>, target: impl Into<String>) {
        let path = path.into();
        self.parents(&path);
        self.entries.insert(path, Node::Symlink(target.into()));
    }

    fn parents(&mut self, path: &str) {
        let mut end = 0;
        while let Some(i) = path[end..].find('/') {
            end += i;
            // Looked up before inserting: every file of `tools/` names the same parent.
            if !self.entries.contains_key(&path[..end]) {
                self.entries.insert(path[..end].to_string(), Node::Dir);
            }
            end += 1;
        }
    }

    /// Bytes held by files, for the cache budget.
    pub fn byte_size(&self) -> usize {
        self.entries
            .iter()
            .map(|(k, n)| {
                k.len()
                    + match n {
                        Node::File(b) => b.memory(),
                        Node::Symlink(t) => t.len(),
                        Node::Dir => 0,
                    }
            })
            .sum()
    }
}

/// Render every file of a session directory, in memory.
pub fn render_session(s: &Session) -> Bundle {
    render_session_to(s, None)
}

/// Render every file of a session directory; files that grow past `spill`'s threshold are
/// written to its spill file instead of memory.
pub fn render_session_to(s: &Session, spill: Option<SpillTo>) -> Bundle {
    let mut b = Bundle::spilling(spill);
    render_into(&mut b, "", s, 0);
    b
}

/// About the size of `s`'s transcript or `messages.jsonl`: its text plus some markup per
/// message. Only a starting size for the buffer they are written into: a guess too large
/// is given back when the file is finished, one too small costs a copy as the buffer grows.
fn expected_size(s: &Session) -> usize {
    s.messages
        .iter()
        .map(|m| {
            let calls: usize = m
                .tool_calls
                .iter()
                .map(|c| 128 + c.output.as_deref().map_or(0, str::len))
                .sum();
            // A tool-only message's text is its result's output, written once.
            let text = if m.is_tool_only() {
                m.text().len()
            } else {
                m.content.len() + m.tool_result.as_ref().map_or(0, |r| r.output.len())
            };
            256 + calls + text + m.thinking.as_deref().map_or(0, str::len)
        })
        .sum()
}

/// Nested subagents deeper than this are listed in `meta.json` but not rendered, so a
/// pathological store cannot make one session's bundle unbounded.
const MAX_NESTING: usize = 8;

/// Render `s` under `prefix` (empty or ending in `/`), `depth` levels of `subagents/<name>/`
/// below a top-level session directory.
fn render_into(b: &mut Bundle, prefix: &str, s: &Session, depth: usize) {
    // Cut once when branch diffs need the blocks too; otherwise written as rendered, so a
    // long transcript is never whole in memory.
    let expected = expected_size(s);
    let active = if s.branches.is_empty() {
        b.write(format!("{prefix}transcript.md"), expected, |w| {
            transcript::write(s, w)
        });
        None
    } else {
        let blocks = transcript::blocks(s);
        b.file(format!("{prefix}transcript.md"), join_blocks(&blocks));
        Some(blocks)
    };
    b.file(format!("{prefix}meta.json"), meta::render(s));
    b.write(format!("{prefix}messages.jsonl"), expected, |w| {
        messages::write(s, w)
    });
    b.dir(format!("{prefix}tools"));
    for (name, body) in tools::render(s) {
        b.file(format!("{prefix}tools/{name}"), body);
    }
    for (path, body) in &s.extra_files {
        b.file(format!("{prefix}{path}"), body.clone());
    }

    let mut used = std::collections::HashSet::new();
    for branch in &s.branches {
        let Some(active) = &active else { break };
        let name = unique_name(&mut used, &branch.name);
        let alt = branch_session(s, &branch.messages);
        let alt_blocks = transcript::blocks(&alt);
        b.file(
            format!("{prefix}branches/{name}.diff"),
            diff::diff_blocks(
                s,
                &alt,
                active,
                &alt_blocks,
                "a/transcript.md",
                &format!("b/branches/{name}/transcript.md"),
            ),
        );
        b.write(
            format!("{prefix}branches/{name}/messages.jsonl"),
            expected_size(&alt),
            |w| messages::write(&alt, w),
        );
        b.file(
            format!("{prefix}branches/{name}/transcript.md"),
            join_blocks(&alt_blocks),
        );
    }

    for (sub, name) in s.subagents.iter().zip(subagent_names(s)) {
        let path = format!("{prefix}subagents/{name}");
        if let Some(uid) = &sub.unified_id {
            // From `<session>/subagents/` (plus two levels per nesting) up to the mount root.
            let up = "../".repeat(3 + 2 * depth);
            b.symlink(path, format!("{up}{}", unified_id_path(uid)));
        } else if let Some(child) = &sub.session {
            if depth < MAX_NESTING {
                render_into(b, &format!("{path}/"), child, depth + 1);
            }
        }
    }
}

fn join_blocks((header, blocks): &(String, Vec<String>)) -> String {
    let mut out =
        String::with_capacity(header.len() + blocks.iter().map(String::len).sum::<usize>());
    out.push_str(header);
    blocks.iter().for_each(|b| out.push_str(b));
    out
}

/// The escaped `name`, with `~2`, `~3`, ... appended when an earlier sibling took it, so
/// two branches or subagents with one name both stay visible.
fn unique_name(used: &mut std::collections::HashSet<String>, name: &str) -> String {
    crate::names::unique_name(used, &crate::names::escape(name))
}

/// The entry name of each subagent under `subagents/`, in `s.subagents` order: the one
/// place these names are made, so the transcript's links and the directory agree.
pub(crate) fn subagent_names(s: &Session) -> Vec<String> {
    let mut used = std::collections::HashSet::new();
    s.subagents
        .iter()
        .map(|sub| unique_name(&mut used, &sub.name))
        .collect()
}

/// `s` with another message list and no branches or subagents, for rendering a branch.
fn branch_session(s: &Session, messages: &[crate::model::Message]) -> Session {
    Session {
        title: s.title.clone(),
        created_at: s.created_at,
        updated_at: s.updated_at,
        cwd: s.cwd.clone(),
        tags: s.tags.clone(),
        messages: messages.to_vec(),
        forked_from: s.forked_from.clone(),
        parent: s.parent.clone(),
        source: s.source.clone(),
        warnings: s.warnings.clone(),
        ..Session::new(s.agent, s.id.clone())
    }
}

/// `claude:abc/def` -> `claude/abc%2Fdef`: the directory of a unified id, relative to the
/// mount root.
fn unified_id_path(uid: &str) -> String {
    match uid.split_once(':') {
        Some((agent, native)) => format!("{agent}/{}", crate::names::escape(native)),
        None => crate::names::escape(uid),
    }
}

/// `parent.diff`: the parent's transcript against this fork's.
pub fn parent_diff(parent: &Session, child: &Session) -> String {
    session_diff(parent, child)
}

/// `diff/<agent>/<id>.diff`: unified diff of `a`'s transcript against `b`'s, headed by the
/// structural stats.
pub fn session_diff(a: &Session, b: &Session) -> String {
    diff::transcript_diff(
        a,
        b,
        &format!("a/{}/transcript.md", unified_id_path(&a.unified_id())),
        &format!("b/{}/transcript.md", unified_id_path(&b.unified_id())),
    )
}

/// Pretty JSON with two-space indent. Serializing sessfs's own types cannot fail (no maps
/// with non-string keys); should it ever, the file says so instead of panicking.
fn pretty_json<T: Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string_pretty(v)
        .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string())
}

/// A tool call's input as a fenced block: a string input (Codex `apply_patch` patch text, a
/// raw command) is shown as the text it is, anything else as pretty JSON.
fn input_block_into(out: &mut String, input: &serde_json::Value) {
    match input {
        serde_json::Value::String(s) => text::fence_into(out, s, ""),
        v => text::fence_into(out, &pretty_json(v), "json"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Agent, Branch, Subagent};

    #[test]
    fn cached_files_hold_no_spare_room() {
        for len in [0, 10, 70_000] {
            let mut v = Vec::with_capacity(2 * len + 100);
            v.resize(len, b'x');
            let v = exact(v);
            assert_eq!((v.len(), v.capacity()), (len, len));
            assert!(v.iter().all(|&b| b == b'x'));
        }
        let mut b = Bundle::default();
        let mut s = String::with_capacity(500);
        s.push_str("twelve bytes");
        b.file("tools/a.md", s);
        let Some(Node::File(Body::Mem(v))) = b.entries.get("tools/a.md") else {
            panic!("not a file in memory");
        };
        assert_eq!((v.len(), v.capacity()), (12, 12));
    }

    #[test]
    fn same_named_siblings_both_appear() {
        let mut s = Session::new(Agent::Pi, "p");
        s.branches = vec![
            Branch {
                name: "b".into(),
                ..Default::default()
            },
            Branch {
                name: "b".into(),
                ..Default::default()
            },
        ];
        s.subagents = vec![
            Subagent {
                name: "x/y".into(),
                unified_id: Some("pi:c1".into()),
                ..Default::default()
            },
            Subagent {
                name: "x/y".into(),
                unified_id: Some("pi:c2".into()),
                ..Default::default()
            },
        ];
        let b = render_session(&s);
        assert!(b.entries.contains_key("branches/b.diff"));
        assert!(b.entries.contains_key("branches/b~2/transcript.md"));
        assert_eq!(
            b.entries.get("subagents/x%2Fy~2"),
            Some(&Node::Symlink("../../../pi/c2".into()))
        );
    }

    #[test]
    fn nested_subagent_links_climb_to_the_mount_root() {
        let mut inner = Session::new(Agent::Claude, "child");
        inner.subagents = vec![Subagent {
            name: "g".into(),
            unified_id: Some("claude:grandchild".into()),
            ..Default::default()
        }];
        let mut s = Session::new(Agent::Claude, "p");
        s.subagents = vec![Subagent {
            name: "c".into(),
            session: Some(Box::new(inner)),
            ..Default::default()
        }];
        let b = render_session(&s);
        assert_eq!(
            b.entries.get("subagents/c/subagents/g"),
            Some(&Node::Symlink("../../../../../claude/grandchild".into()))
        );
        assert!(b.entries.contains_key("subagents/c/transcript.md"));
    }
}
