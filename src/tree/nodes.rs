//! The inode table and the names in it.
//!
//! Owns the inode fields of [`State`]: the node of each inode, the inode of each
//! `(parent, name)`, the agent directories' inodes and the inodes that show each session.
//! Also the kinds of node ([`NodeKind`]), the inode ranges (the table's from 1, the `diff/`
//! files' from [`DIFF_INO_BASE`], the `search/` nodes' from [`SEARCH_INO_BASE`]) and the
//! names of session directories ([`disambiguate`]). It stats nothing, lists no store and
//! renders nothing, and imports no other module of the tree: they stand on it. The `diff/`
//! and `search/` ranges are filled by their own modules, and `agents` numbers an agent
//! directory's sessions in one batch of its own.

use super::State;
use crate::cache::SessionKey;
use crate::model::Agent;
use crate::names;
use crate::stores::Listed;
use std::collections::HashMap;
use std::hash::Hash;
use std::path::PathBuf;

/// Name of the per-session directory that renders cross-session diffs on lookup.
pub const DIFF_DIR: &str = "diff";

/// First inode of the `diff/<agent>/<other>.diff` files, below the search nodes.
pub(super) const DIFF_INO_BASE: u64 = 1 << 47;

/// First inode of the `search/<query>/` nodes, far above any inode [`Fs::ino_for`] hands out.
pub(super) const SEARCH_INO_BASE: u64 = 1 << 48;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum NodeKind {
    Root,
    Agent(Agent),
    Session(SessionKey),
    /// A path inside a session's bundle.
    Inner(SessionKey, String),
    /// `<session>/diff/`.
    DiffRoot(SessionKey),
    /// `<session>/diff/<agent>/`.
    DiffAgent(SessionKey, Agent),
    /// `<session>/diff/<agent>/<other>.diff`.
    DiffFile(SessionKey, SessionKey),
    /// `search/`.
    SearchRoot,
    /// `search/<query>/` (kept in [`SearchNodes`], not in the permanent node table).
    SearchQuery(String),
    /// `search/<query>/<agent>:<session>`, a symlink to `../../<agent>/<session>`.
    SearchLink(SessionKey),
}

impl NodeKind {
    /// The sessions whose content this node shows.
    pub(super) fn sessions(&self) -> Vec<&SessionKey> {
        match self {
            NodeKind::Root
            | NodeKind::Agent(_)
            | NodeKind::SearchRoot
            | NodeKind::SearchQuery(_)
            | NodeKind::SearchLink(_) => Vec::new(),
            NodeKind::Session(k)
            | NodeKind::Inner(k, _)
            | NodeKind::DiffRoot(k)
            | NodeKind::DiffAgent(k, _) => vec![k],
            NodeKind::DiffFile(a, b) => vec![a, b],
        }
    }
}

impl State {
    /// The inode of `parent/name`, made if new.
    pub(super) fn ino(&mut self, parent: u64, name: &str, kind: NodeKind) -> u64 {
        let names = self.by_name.entry(parent).or_default();
        if let Some(&ino) = names.get(name) {
            return ino;
        }
        let ino = self.nodes.len() as u64 + 1;
        names.insert(name.into(), ino);
        for key in kind.sessions() {
            self.session_inos.entry(key.clone()).or_default().push(ino);
        }
        if let NodeKind::Agent(agent) = kind {
            self.agent_inos.insert(agent, ino);
        }
        self.nodes.push(kind);
        ino
    }

    /// The inodes of `names` in `parent`, a session's directory `dir` ("" for the session
    /// directory itself, where `diff/` is one of them), made where new. As [`State::ino`]
    /// for each, but each name is hashed once and the session's inode list is looked up
    /// once for the whole directory: a walk makes a `tools/` of dozens of files per session.
    pub(super) fn session_dir_inos<'n>(
        &mut self,
        parent: u64,
        key: &SessionKey,
        dir: &str,
        names: impl Iterator<Item = &'n str>,
    ) -> Vec<u64> {
        let mut made = Vec::new();
        let known = self.by_name.entry(parent).or_default();
        let inos = names
            .map(|name| match known.get(name) {
                Some(&ino) => ino,
                None => {
                    let ino = self.nodes.len() as u64 + 1;
                    self.nodes.push(if dir.is_empty() && name == DIFF_DIR {
                        NodeKind::DiffRoot(key.clone())
                    } else {
                        NodeKind::Inner(key.clone(), join(dir, name))
                    });
                    known.insert(name.into(), ino);
                    made.push(ino);
                    ino
                }
            })
            .collect();
        if !made.is_empty() {
            self.session_inos
                .entry(key.clone())
                .or_default()
                .extend(made);
        }
        inos
    }
}

/// The path of `name` in a session's directory `dir` ("" for the session directory).
pub(super) fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        let mut path = String::with_capacity(dir.len() + 1 + name.len());
        path.push_str(dir);
        path.push('/');
        path.push_str(name);
        path
    }
}

/// The directory part of a path inside a session ("" for its top level).
pub(super) fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

/// Where a listed session lives, which stays the same while the session does.
pub(super) type Identity = (usize, PathBuf, Option<String>);

pub(super) fn identity(l: &Listed) -> Identity {
    (l.root, l.path.clone(), l.key.clone())
}

/// Directory names for listed sessions, as `(name, id, listed)`.
///
/// A session keeps the name it had at the previous listing (`previous`), so names never move
/// while mounted. The others take [`names::escape`] of their id in `(root, path)` order, the
/// first root in discovery order first; a name already taken (the same id in two roots)
/// gets `~2`, `~3`, … ([`names::with_suffix`]) on both the name and the id. Native ids never
/// produce a `~` in a name, so a suffixed name cannot hide another session, and every name is
/// checked against the names taken so far, so no two sessions ever share one.
pub(super) fn disambiguate(
    mut listed: Vec<Listed>,
    previous: &HashMap<Identity, String>,
) -> Vec<(String, String, Listed)> {
    listed.sort_by(|a, b| (a.root, &a.path, &a.key).cmp(&(b.root, &b.path, &b.key)));
    let mut taken: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut names: Vec<Option<(String, String)>> = vec![None; listed.len()];
    // Names from the previous listing first, as long as they still fit the id.
    for (i, l) in listed.iter().enumerate() {
        let Some(name) = previous.get(&identity(l)) else {
            continue;
        };
        let base = names::escape(&l.id);
        let id = match name.strip_prefix(base.as_str()) {
            Some("") => l.id.clone(),
            Some(rest) if rest.starts_with('~') => format!("{}{rest}", l.id),
            _ => continue,
        };
        if taken.insert(name.clone()) {
            names[i] = Some((name.clone(), id));
        }
    }
    for (i, l) in listed.iter().enumerate() {
        if names[i].is_some() {
            continue;
        }
        let base = names::escape(&l.id);
        let (name, id) = if taken.contains(&base) {
            (2..)
                .map(|n| (names::with_suffix(&base, n), format!("{}~{n}", l.id)))
                .find(|(name, _)| !taken.contains(name))
                .expect("an unbounded range has a free suffix")
        } else {
            (base, l.id.clone())
        };
        taken.insert(name.clone());
        names[i] = Some((name, id));
    }
    listed
        .into_iter()
        .zip(names)
        .map(|(l, n)| {
            let (name, id) = n.expect("every session was named above");
            (name, id, l)
        })
        .collect()
}
