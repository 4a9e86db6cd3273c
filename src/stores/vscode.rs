//! VS Code's global-state databases: `User/globalStorage/state.vscdb`, where an editor built
//! on VS Code keeps every extension's `globalState` (and its own application storage) as
//! rows of `ItemTable`, one per profile. Where they are and what to watch, for the stores
//! that read one row of them (Sourcegraph Cody, Void); each store selects its own row
//! through [`super::sqlite`].

use super::kit;
use super::sqlite;
use super::{Env, Glance, Root};
use crate::model::Agent;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

const DB: &str = "state.vscdb";

/// The global-state databases of VS Code builds named by their user-data directory names
/// (`editors`), found as VS Code finds its user data: `$VSCODE_PORTABLE/user-data`,
/// `$VSCODE_APPDATA/<editor>`, `$XDG_CONFIG_HOME/<editor>` (default `~/.config`) and macOS
/// `~/Library/Application Support/<editor>`, each `User/globalStorage/state.vscdb` and every
/// profile's present now. Shared by the stores that read VS Code's `ItemTable`.
pub fn vscode_roots(env: &Env, agent: Agent, editors: &[&str]) -> Vec<Root> {
    let mut users: Vec<(PathBuf, &str)> = Vec::new();
    if let Some(p) = env.path_var("VSCODE_PORTABLE") {
        users.push((p.join("user-data/User"), "VSCODE_PORTABLE"));
    }
    if let Some(p) = env.path_var("VSCODE_APPDATA") {
        for e in editors {
            users.push((p.join(e).join("User"), "VSCODE_APPDATA"));
        }
    }
    let (config, how) = match env.path_var("XDG_CONFIG_HOME") {
        Some(p) => (p, "XDG_CONFIG_HOME"),
        None => (env.home.join(".config"), "default"),
    };
    for e in editors {
        users.push((config.join(e).join("User"), how));
    }
    let mac = env.home.join("Library/Application Support");
    for e in editors {
        users.push((mac.join(e).join("User"), "macOS"));
    }
    let mut out = Vec::new();
    for (user, how) in users {
        out.push(Root::new(agent, user.join("globalStorage").join(DB), how));
        for p in profile_dbs(&user) {
            out.push(Root::new(agent, p, format!("{how} (profile)")));
        }
    }
    out
}

/// `User/profiles/<id>/globalStorage/state.vscdb` that exist.
fn profile_dbs(user: &Path) -> Vec<PathBuf> {
    kit::subdirs(&user.join("profiles"))
        .into_iter()
        .map(|p| p.join("globalStorage").join(DB))
        .filter(|p| p.is_file())
        .collect()
}

/// `(root index, database)` of every `state.vscdb` the roots lead to, each once: a root is
/// a database, a `globalStorage` directory or a `User` directory (with its profiles).
pub fn state_dbs(roots: &[Root]) -> Vec<(usize, PathBuf)> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (i, root) in roots.iter().enumerate() {
        let p = &root.path;
        let mut found = Vec::new();
        if p.is_dir() {
            found.push(p.join(DB));
            found.push(p.join("globalStorage").join(DB));
            found.extend(profile_dbs(p));
        } else {
            found.push(p.clone());
        }
        for db in found.into_iter().filter(|d| d.is_file()) {
            if seen.insert(db.canonicalize().unwrap_or_else(|_| db.clone())) {
                out.push((i, db));
            }
        }
    }
    out
}

/// What to watch for the databases of `roots`: each database with its journals and, for a
/// root that is a directory, the directories a new database or profile appears in.
pub fn state_glance(roots: &[Root]) -> Glance {
    let mut g = Glance::default();
    for root in roots {
        if root.path.is_dir() {
            g.dirs.push(root.path.clone());
            for d in [root.path.join("globalStorage"), root.path.join("profiles")] {
                if d.is_dir() {
                    g.dirs.push(d);
                }
            }
        }
    }
    for (_, db) in state_dbs(roots) {
        g.files.extend(sqlite::with_journals(&db));
    }
    g
}
