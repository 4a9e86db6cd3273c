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

pub mod messages;
pub mod meta;
pub mod tools;
pub mod transcript;

use crate::model::Session;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One entry of a session directory, keyed by its path relative to the session directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    Dir,
    File(Arc<[u8]>),
    /// A relative symlink target.
    Symlink(String),
}

/// Everything under one session directory. Parent directories are always present as
/// [`Node::Dir`] entries; paths use `/` and never start with one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bundle {
    pub entries: BTreeMap<String, Node>,
}

impl Bundle {
    pub fn file(&mut self, path: impl Into<String>, bytes: impl Into<Vec<u8>>) {
        let path = path.into();
        self.parents(&path);
        let v: Vec<u8> = bytes.into();
        self.entries.insert(path, Node::File(Arc::from(v)));
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
            self.entries
                .entry(path[..end].to_string())
                .or_insert(Node::Dir);
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
                        Node::File(b) => b.len(),
                        Node::Symlink(t) => t.len(),
                        Node::Dir => 0,
                    }
            })
            .sum()
    }
}

/// Render every file of a session directory.
pub fn render_session(s: &Session) -> Bundle {
    let mut b = Bundle::default();
    b.file("meta.json", meta::render(s));
    b.file("transcript.md", transcript::render(s));
    b.file("messages.jsonl", messages::render(s));
    b.dir("tools");
    for (name, body) in tools::render(s) {
        b.file(format!("tools/{name}"), body);
    }
    for (path, body) in &s.extra_files {
        b.file(path.clone(), body.clone());
    }
    b
}

/// Unified diff of session `a`'s transcript to session `b`'s, headed by structural stats.
pub fn session_diff(a: &Session, b: &Session) -> String {
    let _ = (a, b);
    String::new()
}
