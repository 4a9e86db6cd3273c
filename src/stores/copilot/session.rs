//! Copilot CLI events to a session: the `parentId` chain that makes the transcript, the
//! off-chain branches, subagents nested under the calls that spawned them, and the
//! `workspace.yaml` beside `events.jsonl` (title, cwd, repository, branch, times).
//!
//! Works on the digested events of [`super::events`] only, never on lines, so the shape of
//! one event and the shape of the whole session are read and changed apart.

use super::events::{non_empty, read_events, usage, Ev, Item};
use crate::model::{unified_id, Agent, Branch, Role, Session, Subagent, SEALED_THINKING};
use crate::stores::{jsonl, kit};
use chrono::{DateTime, Utc};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

/// Subagents nested deeper than this are not loaded.
const MAX_NESTING: usize = 8;

// ---------------------------------------------------------------------------------------
// Order: the parentId chain
// ---------------------------------------------------------------------------------------
// Order: the parentId chain

/// Which events make the transcript, and the off-chain leaves that become branches.
struct Order {
    active: Vec<bool>,
    /// Index paths (root first) of root-agent events off the active chain.
    branches: Vec<Vec<usize>>,
}

fn order(evs: &[Ev], warnings: &mut Vec<String>) -> Order {
    let all = Order {
        active: vec![true; evs.len()],
        branches: Vec::new(),
    };
    let roots: Vec<usize> = (0..evs.len()).filter(|&i| evs[i].agent.is_none()).collect();
    let Some(&last) = roots.last() else {
        return all;
    };
    // Subagent events may sit in the same list, so every event is a link.
    let index: HashMap<&str, usize> = (0..evs.len())
        .filter(|&i| !evs[i].id.is_empty())
        .map(|i| (evs[i].id.as_str(), i))
        .collect();
    let starts = roots.iter().filter(|&&i| evs[i].parent.is_none()).count();
    if starts != 1 || roots.iter().any(|&i| evs[i].id.is_empty()) {
        // Not a linked list (an older writer, or ids missing): file order.
        return all;
    }
    let path_to = |leaf: usize| -> Option<Vec<usize>> {
        let mut path = vec![leaf];
        let mut seen = HashSet::from([leaf]);
        let mut cur = leaf;
        while let Some(p) = &evs[cur].parent {
            let &i = index.get(p.as_str())?;
            if !seen.insert(i) {
                return None;
            }
            path.push(i);
            cur = i;
        }
        path.reverse();
        Some(path)
    };
    let Some(chain) = path_to(last) else {
        warnings.push(
            "the parentId chain is broken (a missing parent or a cycle); events are read in file order"
                .into(),
        );
        return all;
    };
    let mut active = vec![false; evs.len()];
    for i in 0..evs.len() {
        active[i] = evs[i].agent.is_some();
    }
    for &i in &chain {
        active[i] = true;
    }
    let has_child: HashSet<&str> = evs.iter().filter_map(|e| e.parent.as_deref()).collect();
    let branches = roots
        .iter()
        .filter(|&&i| !active[i] && !has_child.contains(evs[i].id.as_str()))
        .filter_map(|&i| path_to(i))
        .collect();
    Order { active, branches }
}

// ---------------------------------------------------------------------------------------
// Events → session

/// What one pass over events yields besides messages.
#[derive(Default)]
struct Facts {
    version: Option<String>,
    /// The model selected last (at the start or by a model change).
    model: Option<String>,
    cwd: Option<String>,
    repository: Option<String>,
    branch: Option<String>,
    start: Option<DateTime<Utc>>,
}

/// Turn events into messages on `b`, in the order given.
fn convert<'e>(evs: impl Iterator<Item = &'e Ev>, b: &mut kit::SessionBuilder, f: &mut Facts) {
    let mut model: Option<String> = None;
    let mut reasoning: Option<String> = None;
    let mut tool_names: HashMap<String, String> = HashMap::new();
    for e in evs {
        match &e.item {
            Item::Start {
                model: m,
                version,
                cwd,
                repository,
                branch,
                start,
            } => {
                model = m.clone().or(model);
                f.cwd = cwd.clone().or(f.cwd.take());
                f.repository = repository.clone().or(f.repository.take());
                f.branch = branch.clone().or(f.branch.take());
                f.start = f.start.or(*start).or(e.ts);
                f.version = version.clone().or(f.version.take());
            }
            Item::Model(m, text) => {
                b.event(text.clone(), e.ts);
                model = Some(m.clone());
            }
            Item::Msg(m) => {
                let mut m = m.clone();
                m.timestamp = e.ts;
                if m.role == Role::Assistant {
                    if m.model.is_none() {
                        m.model = model.clone();
                    }
                    if let Some(r) = reasoning.take() {
                        if m.thinking.is_none() || m.thinking.as_deref() == Some(SEALED_THINKING) {
                            m.thinking = Some(r);
                        }
                    }
                }
                b.push(m);
            }
            Item::Context(label, text) => b.context(label, text.clone(), e.ts),
            Item::Reasoning(t) => reasoning = Some(t.clone()),
            Item::ToolStart { call, name } => {
                tool_names.insert(call.clone(), name.clone());
            }
            Item::ToolDone {
                call,
                output,
                is_error,
            } => {
                let name = tool_names.get(call).map(String::as_str);
                b.tool_result(call, name, output.clone(), *is_error, e.ts);
            }
            Item::Shutdown { .. } | Item::SubagentStarted { .. } | Item::Other => {}
        }
    }
    f.model = model.or(f.model.take());
}

pub(super) fn load_events(path: &Path, id: &str) -> Session {
    let mut warnings = Vec::new();
    let mut extra = Vec::new();
    let (evs, unread_lines) = read_events(path, &mut warnings);
    if let Some(file) = jsonl::unparsed_file(&unread_lines) {
        warnings.push(jsonl::unparsed_warning(unread_lines.len()));
        extra.push(file);
    }
    let ord = order(&evs, &mut warnings);

    // Group events by agent; `None` is the session's own agent.
    let mut groups: BTreeMap<Option<&str>, Vec<usize>> = BTreeMap::new();
    for (i, e) in evs.iter().enumerate() {
        if ord.active[i] {
            groups.entry(e.agent.as_deref()).or_default().push(i);
        }
    }
    // Tool call id → (agent name, description), from `subagent.started` wherever it is.
    let spawned: HashMap<&str, (&str, Option<&str>)> = evs
        .iter()
        .filter_map(|e| match &e.item {
            Item::SubagentStarted {
                call,
                name,
                description,
            } => Some((call.as_str(), (name.as_str(), description.as_deref()))),
            _ => None,
        })
        .collect();
    let mut facts = Facts::default();
    let tree = Tree {
        evs: &evs,
        groups: &groups,
        spawned: &spawned,
    };
    let mut s = tree.build(None, id, None, &mut facts, 0);

    let mut taken = HashSet::new();
    for path in &ord.branches {
        let mut bb = kit::SessionBuilder::new(Agent::Copilot, id);
        let mut scratch = Facts::default();
        let own = path.iter().map(|&i| &evs[i]).filter(|e| e.agent.is_none());
        convert(own, &mut bb, &mut scratch);
        let leaf = path.last().map(|&i| evs[i].id.clone());
        let fork = path
            .iter()
            .rev()
            .find(|&&i| ord.active[i])
            .map(|&i| evs[i].id.clone());
        let base = format!("branch-{}", leaf.as_deref().unwrap_or("leaf"));
        s.branches.push(Branch {
            name: kit::unique_name(&mut taken, &base),
            fork_point: fork,
            leaf,
            messages: bb.s.messages,
        });
    }

    let dir = path
        .parent()
        .filter(|_| kit::file_name(path) == "events.jsonl");
    let ws = dir
        .and_then(|d| std::fs::read_to_string(d.join("workspace.yaml")).ok())
        .map(|t| parse_flat_yaml(&t))
        .unwrap_or_default();
    let get = |k: &str| ws.get(k).and_then(|v| non_empty(v));
    s.title = get("summary").or(s.title);
    s.cwd = get("cwd").or(facts.cwd);
    if let Some(r) = get("repository").or(facts.repository) {
        s.tags.push(format!("repository:{r}"));
    }
    if let Some(b) = get("branch").or(facts.branch) {
        s.tags.push(format!("branch:{b}"));
    }
    let (usage, premium) = usage(&evs);
    if premium > 0.0 {
        s.tags.push(format!("premium-requests:{premium}"));
    }
    s.created_at = get("created_at")
        .and_then(|t| kit::parse_rfc3339(&t))
        .or(facts.start)
        .or(s.created_at);
    if let Some(t) = get("updated_at").and_then(|t| kit::parse_rfc3339(&t)) {
        s.updated_at = s.updated_at.max(Some(t));
    }
    s.reported_usage = usage;
    s.set_model = facts.model;
    s.source.paths = vec![path.to_path_buf()];
    if dir.is_some() && !ws.is_empty() {
        s.source.paths.push(path.with_file_name("workspace.yaml"));
    }
    s.source.format = "copilot-events-jsonl".into();
    s.source.format_version = facts.version;
    s.warnings.splice(0..0, warnings);
    s.extra_files.extend(extra);
    s
}

/// A session's events grouped by agent, for building the subagent tree.
struct Tree<'e> {
    evs: &'e [Ev],
    /// Active event indices per agent; `None` is the session's own agent.
    groups: &'e BTreeMap<Option<&'e str>, Vec<usize>>,
    spawned: &'e HashMap<&'e str, (&'e str, Option<&'e str>)>,
}

impl Tree<'_> {
    fn requested(&self, idx: &[usize]) -> HashSet<&str> {
        idx.iter()
            .filter_map(|&i| match &self.evs[i].item {
                Item::Msg(m) => Some(m.tool_calls.iter().map(|c| c.tool_call_id.as_str())),
                _ => None,
            })
            .flatten()
            .collect()
    }

    /// The session of one agent's events, with the subagents it spawned nested inside.
    fn build(
        &self,
        agent: Option<&str>,
        id: &str,
        parent: Option<String>,
        facts: &mut Facts,
        depth: usize,
    ) -> Session {
        let mut b = kit::SessionBuilder::new(Agent::Copilot, id);
        b.s.parent = parent;
        let own = self.groups.get(&agent).map(Vec::as_slice).unwrap_or(&[]);
        convert(own.iter().map(|&i| &self.evs[i]), &mut b, facts);
        if agent.is_some() {
            b.s.tags.push("subagent".into());
        }

        // Children: agents whose spawning call this agent requested; agents whose call
        // nobody requested belong to the session's own agent.
        let requested = self.requested(own);
        let all: Vec<usize> = (0..self.evs.len()).collect();
        let all_requested = self.requested(&all);
        let uid = unified_id(Agent::Copilot, id);
        for (child, idx) in self.groups {
            let Some(child) = *child else { continue };
            if Some(child) == agent {
                continue;
            }
            let call = idx.iter().find_map(|&i| self.evs[i].parent_call.as_deref());
            let mine = match call {
                Some(c) if requested.contains(c) => true,
                Some(c) => agent.is_none() && !all_requested.contains(c),
                None => agent.is_none(),
            };
            if !mine {
                continue;
            }
            if depth >= MAX_NESTING {
                b.warn(format!(
                    "subagents nested deeper than {MAX_NESTING} levels not loaded"
                ));
                continue;
            }
            let session = self.build(
                Some(child),
                child,
                Some(uid.clone()),
                &mut Facts::default(),
                depth + 1,
            );
            let (name, description) = match call.and_then(|c| self.spawned.get(c)) {
                Some((n, d)) => (n.to_string(), d.map(str::to_string)),
                None => (format!("agent-{child}"), None),
            };
            b.s.subagents.push(Subagent {
                name,
                unified_id: None,
                description,
                tool_call_id: call.map(str::to_string),
                session: Some(Box::new(session)),
            });
        }
        b.finish()
    }
}

// ---------------------------------------------------------------------------------------
// workspace.yaml

/// The top-level `key: value` pairs of a YAML mapping whose values are scalars, as the
/// YAML library of Copilot CLI writes `workspace.yaml`: every scalar style (a summary with
/// a control character is a double-quoted scalar over several lines, with `\r` escapes),
/// read by a YAML parser; nested values are skipped, trailing whitespace dropped. A file
/// that stops parsing keeps the pairs read before the fault.
pub(super) fn parse_flat_yaml(text: &str) -> BTreeMap<String, String> {
    use saphyr_parser::{Event, Parser};
    let mut out = BTreeMap::new();
    let mut depth = 0usize;
    let mut key: Option<String> = None;
    for ev in Parser::new_from_str(text) {
        let Ok((ev, _)) = ev else { break };
        match ev {
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                if depth == 1 {
                    key = None; // a nested value: skipped
                }
                depth += 1;
            }
            Event::MappingEnd | Event::SequenceEnd => depth = depth.saturating_sub(1),
            Event::Alias(_) if depth == 1 => key = None,
            Event::Scalar(v, ..) if depth == 1 => match key.take() {
                None => key = Some(v.into_owned()),
                Some(k) => {
                    out.insert(k, v.trim_end().to_string());
                }
            },
            Event::DocumentEnd => break,
            _ => {}
        }
    }
    out
}
