//! GitHub Copilot CLI sessions: `$COPILOT_HOME` (default `~/.copilot`).
//!
//! Three layouts, by CLI version (see `docs/formats.md`, section 4):
//!
//! ```text
//! session-state/<id>/events.jsonl + workspace.yaml      ≥ 0.0.378 (title, cwd, repo in the yaml)
//! session-state/<id>.jsonl                              0.0.342 – 0.0.377
//! history-session-state/session_<id>_<ms>.json          ≤ 0.0.341 ({chatMessages, timeline})
//! ```
//!
//! Design decisions and why:
//! - **Events form a linked list** (`parentId` = the previous event). The transcript is the
//!   chain that ends at the last event, read in file order; when every event is on it (the
//!   normal case) that is simply the file. Root-agent events off that chain are kept as
//!   [`Branch`](crate::model::Branch)es, one per off-chain leaf, holding the whole path
//!   from the first event. A chain that breaks (a parent that is not in the file, a second
//!   root, a cycle) is not trusted: the file order is used and a warning says so. Subagent
//!   events (envelope `agentId`) never take part: they always belong to their subagent.
//! - **Tool results are their own messages**: `tool.execution_complete` is joined to the
//!   request by `toolCallId` through [`kit::SessionBuilder::tool_result`], so appending
//!   events only appends to the rendering.
//! - **Subagents** (events with an `agentId`) become nested child sessions named after the
//!   agent (`subagent.started.agentName`), attached to the tool call that spawned them
//!   (`data.parentToolCallId`), and are left out of the parent's transcript.
//! - **Usage is per CLI process**: per-call usage events are ephemeral (never written); each
//!   process (a `session.start` or `session.resume` to its `session.shutdown`) writes its
//!   totals in `session.shutdown.modelMetrics` when it exits. A process that crashed, was
//!   killed or still runs wrote none, and the only usage left of it is each reply's
//!   `assistant.message.outputTokens`. So the session's [`Session::reported_usage`] is, per
//!   process, its shutdown's totals where there is one (its replies then are not counted
//!   again), else its replies' output tokens; input excludes cache reads, as pricing
//!   expects. `requests.cost` counts *premium requests* (it equals `totalPremiumRequests` in
//!   real files), not USD, so it is a tag, never a cost.
//! - **Nothing is dropped unseen**: an event whose `data` is not what its type promises, a
//!   line that is JSON but no event, and an event of a type sessfs does not read are
//!   counted, one warning per kind of problem ([`kit::Unparsed`]), and their raw text is shown where
//!   they stood, as context labelled `unparsed record`; so is a line holding no JSON at all
//!   (counted by the line reader), except a partial last line, still being written.
//!   Only types with nothing of their own to show are passed over ([`events::QUIET_TYPES`]).
//!   `skill.invoked` (the skill body given to the model) and `system.notification` are
//!   context. In history documents an entry that cannot be read is shown the same way.
//! - `workspace.yaml` holds flat `key: value` scalars; they are read with a YAML parser (a
//!   long summary comes as a quoted scalar over several lines).
//!
//! **Layout.** This module finds the roots and lists sessions (names and stat only).
//! [`events`] reads `events.jsonl` lines into owned, digested events and sums their usage;
//! [`session`] orders those events (the `parentId` chain, branches), nests subagents and
//! adds `workspace.yaml`; [`history`] reads the older single-document era, which shares
//! nothing with the events but the session builder.

mod events;
mod history;
mod session;
#[cfg(test)]
mod tests;

use super::{kit, Base, Env, Glance, Listed, Root, Store};
use crate::model::{Agent, Session};
use history::load_history;
use session::load_events;
use std::path::Path;

pub fn candidates(env: &Env) -> Vec<Root> {
    let mut roots = kit::roots(
        env,
        Agent::Copilot,
        &kit::Places {
            env: &[("COPILOT_HOME", "")],
            defaults: &[".copilot"],
            spec: &[".config/github-copilot/sessions"],
        },
    );
    // Honoured up to 0.0.421 only, so it adds a place instead of replacing the default.
    if let Some(x) = env.path_var("XDG_CONFIG_HOME") {
        let p = x.join(".copilot");
        if !roots.iter().any(|r| r.path == p) {
            roots.push(Root::new(Agent::Copilot, p, "XDG_CONFIG_HOME"));
        }
    }
    roots
}

pub struct CopilotStore {
    base: Base,
}

impl CopilotStore {
    pub fn new(roots: Vec<Root>) -> CopilotStore {
        CopilotStore {
            base: Base::new(Agent::Copilot, roots),
        }
    }
}

impl Store for CopilotStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            let state = root.path.join("session-state");
            let history = root.path.join("history-session-state");
            if state.is_dir() || history.is_dir() {
                list_state(&state, i, &mut out);
                list_history(&history, i, &mut out);
            } else {
                // A root given by hand may be one of those directories itself.
                list_state(&root.path, i, &mut out);
                list_history(&root.path, i, &mut out);
            }
        }
        out
    }

    /// Ids are directory and file names: a write to a listed session's own file never
    /// changes the listing.
    fn keeps_listing(&self, _listed: &Listed) -> bool {
        true
    }

    /// The listing reads each root, its `session-state/` and `history-session-state/`
    /// directories and every session directory in `session-state/` (a session shows once
    /// its `events.jsonl` is there); each session is versioned by its own files.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            let state = root.path.join("session-state");
            let history = root.path.join("history-session-state");
            let dirs = if state.is_dir() || history.is_dir() {
                vec![root.path.clone(), state, history]
            } else {
                vec![root.path.clone()]
            };
            for d in dirs.into_iter().filter(|d| d.is_dir()) {
                g.dirs.extend(kit::subdirs(&d));
                g.dirs.push(d);
            }
        }
        Some(g)
    }

    fn load(&self, listed: &Listed) -> Session {
        if kit::file_name(&listed.path).ends_with(".json") {
            load_history(&listed.path, &listed.id)
        } else {
            load_events(&listed.path, &listed.id)
        }
    }
}

// ---------------------------------------------------------------------------------------
// Listing: names and stat only

fn list_state(dir: &Path, root: usize, out: &mut Vec<Listed>) {
    for p in kit::entries(dir) {
        let name = kit::file_name(&p).to_string();
        if p.is_dir() {
            let events = p.join("events.jsonl");
            if events.is_file() {
                let mut l = Listed::file(name, events, root);
                l.sources.push(p.join("workspace.yaml"));
                out.push(l);
            }
        } else if let Some(id) = name.strip_suffix(".jsonl") {
            if p.is_file() && !id.is_empty() {
                out.push(Listed::file(id, p.clone(), root));
            }
        }
    }
}

/// `session_<uuid>_<epoch ms>.json` → `<uuid>`.
fn history_id(name: &str) -> Option<&str> {
    let body = name.strip_prefix("session_")?.strip_suffix(".json")?;
    let (id, ms) = body.rsplit_once('_')?;
    (!id.is_empty() && ms.bytes().all(|b| b.is_ascii_digit())).then_some(id)
}

fn list_history(dir: &Path, root: usize, out: &mut Vec<Listed>) {
    for p in kit::entries(dir) {
        if let Some(id) = history_id(kit::file_name(&p)) {
            if p.is_file() {
                out.push(Listed::file(id, p.clone(), root));
            }
        }
    }
}
