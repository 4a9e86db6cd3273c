//! `sessfs cost`: tokens and USD over many sessions, grouped by agent, model, day, month or
//! working directory.
//!
//! Everything is counted from *usage records*: one per API reply that carries token usage or
//! a cost ([`Record`]). Collecting them is where double counting is avoided, the mistakes
//! ccusage and agentsview users report (peers.md §3.5):
//!
//! - a fork's copied prefix (`inherited` messages) is counted once, in the session it was
//!   copied from;
//! - a subagent's replies are counted once, in its parent: a nested child through the
//!   parent's `subagents`, a top-level child (one with a `parent` that exists) under the
//!   parent's agent and working directory, never also on its own;
//! - replies on abandoned branches (rewinds, pi trees) were paid for, so they count too, but
//!   the prefix a branch shares with the active path counts once;
//! - session totals the agent keeps ([`Session::reported_usage`]) count only when no message
//!   carries usage, exactly as in `meta.json`.
//!
//! A record with a reported cost uses it; otherwise it is priced from [`crate::pricing`] and
//! marked estimated; a model without a price makes the record *unpriced*, which the report
//! lists as such and never adds as $0. A session whose agent recorded no usage at all gives
//! one *unrecorded* record per reply of its own ([`Record::recorded`] false): the report
//! counts those replies apart, as of unknown cost, so an agent that keeps no usage is never
//! shown as free nor left out unsaid.

use crate::model::{Agent, Message, Role, Session, TokenUsage};
use crate::tree::Fs;
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// One API reply's usage, attributed to the session that pays for it.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// Unified id of the session it is counted in (a subagent's top-level parent).
    pub owner: String,
    pub agent: Agent,
    pub cwd: Option<String>,
    /// The owning session's tags.
    pub tags: Vec<String>,
    pub model: String,
    pub when: Option<DateTime<Utc>>,
    pub usage: TokenUsage,
    /// USD: reported by the agent, else estimated from the price table; `None` when unpriced.
    pub usd: Option<f64>,
    pub estimated: bool,
    /// The provider's reply identity, where known ([`Message::reply_id`]).
    pub reply: Option<String>,
    /// False for a reply of a session whose agent recorded no usage or cost at all: no
    /// tokens, `usd` `None`, and a cost that is unknown rather than unpriced.
    pub recorded: bool,
}

/// What to group by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum GroupBy {
    Agent,
    Model,
    Day,
    Month,
    Cwd,
    /// Each of the owning session's tags (`untagged` when it has none): a record of a
    /// session with two tags is in two groups, so groups can add up to more than the total.
    Tag,
}

/// Which records to count.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    /// Models whose name contains this.
    pub model: Option<String>,
}

impl Filter {
    fn keeps(&self, r: &Record) -> bool {
        if let Some(s) = self.since {
            if r.when.is_none_or(|w| w < s) {
                return false;
            }
        }
        if let Some(u) = self.until {
            if r.when.is_none_or(|w| w > u) {
                return false;
            }
        }
        self.model.as_deref().is_none_or(|m| r.model.contains(m))
    }
}

/// Usage records of every session of `agents` (all when empty), each counted once.
pub fn collect(fs: &Fs, agents: &[Agent]) -> Vec<Record> {
    let mut c = Collector::default();
    for key in fs
        .sessions()
        .into_iter()
        .filter(|k| agents.is_empty() || agents.contains(&k.agent))
    {
        if let Ok(session) = fs.load_marked(&key) {
            c.add(&session);
        }
    }
    c.finish()
}

/// [`collect`] for a caller that loads the sessions itself (`sessfs export` reads each
/// session once for its rows and its usage): feed every session ([`Fs::load_marked`]) to
/// [`Collector::add`], in any order, then [`Collector::finish`] counts each reply once.
#[derive(Default)]
pub struct Collector {
    owners: HashMap<String, Owner>,
    per_session: Vec<(Option<DateTime<Utc>>, String, Vec<Record>)>,
}

struct Owner {
    parent: Option<String>,
    agent: Agent,
    cwd: Option<String>,
    tags: Vec<String>,
}

impl Collector {
    pub fn add(&mut self, session: &Session) {
        let uid = session.unified_id();
        self.owners.insert(
            uid.clone(),
            Owner {
                parent: session.parent.clone(),
                agent: session.agent,
                cwd: session.cwd.clone(),
                tags: session.tags.clone(),
            },
        );
        let mut records = Vec::new();
        session_records(session, &uid, &mut records);
        self.per_session
            .push((session.created_at.or(session.updated_at), uid, records));
    }

    /// Take in what another collector was fed (one per thread reading sessions).
    pub fn merge(&mut self, other: Collector) {
        self.owners.extend(other.owners);
        self.per_session.extend(other.per_session);
    }

    pub fn finish(self) -> Vec<Record> {
        let Collector {
            owners,
            mut per_session,
        } = self;
        // One API reply copied into several files (a resumed Claude session replays its
        // history) counts once, in the oldest session that holds it.
        per_session.sort_by(|a, b| (a.0.is_none(), a.0, &a.1).cmp(&(b.0.is_none(), b.0, &b.1)));
        let mut replies: HashSet<(Agent, String)> = HashSet::new();
        let mut records: Vec<Record> = Vec::new();
        for (_, _, rs) in per_session {
            for r in rs {
                if let Some(id) = &r.reply {
                    if !replies.insert((r.agent, id.clone())) {
                        continue;
                    }
                }
                records.push(r);
            }
        }
        // A top-level subagent is counted in its topmost parent that exists.
        let root = |uid: &str| -> String {
            let mut cur = uid.to_string();
            let mut seen = HashSet::new();
            while let Some(p) = owners.get(&cur).and_then(|o| o.parent.clone()) {
                if !owners.contains_key(&p) || !seen.insert(cur.clone()) {
                    break;
                }
                cur = p;
            }
            cur
        };
        let mut roots: HashMap<String, String> = HashMap::new();
        for r in &mut records {
            let owner = roots
                .entry(r.owner.clone())
                .or_insert_with(|| root(&r.owner))
                .clone();
            if let Some(o) = owners.get(&owner) {
                r.agent = o.agent;
                r.cwd = o.cwd.clone();
                r.tags = o.tags.clone();
            }
            r.owner = owner;
        }
        records
    }
}

/// The records of one session and its nested subagents, attributed to `owner`.
pub fn session_records(s: &Session, owner: &str, out: &mut Vec<Record>) {
    let fallback_time = s.updated_at.or(s.created_at);
    let primary = s.primary_model();
    let carries = |m: &Message| m.token_usage.is_some() || m.cost.is_some();
    let per_message =
        s.messages.iter().any(carries) || s.branches.iter().any(|b| b.messages.iter().any(carries));
    let record = |usage: TokenUsage,
                  cost: Option<f64>,
                  model: Option<&str>,
                  when,
                  reply: Option<&String>| {
        let model = model
            .or(primary.as_deref())
            .unwrap_or("unknown")
            .to_string();
        let (usd, estimated) = match cost {
            Some(c) => (Some(c), false),
            None if usage.is_zero() => (Some(0.0), false),
            None => (usage.estimate_usd(&model), true),
        };
        Record {
            owner: owner.to_string(),
            agent: s.agent,
            cwd: s.cwd.clone(),
            tags: s.tags.clone(),
            model,
            when,
            usage,
            usd,
            estimated: estimated && usd.is_some(),
            reply: reply.cloned(),
            recorded: true,
        }
    };
    if !per_message {
        if s.reported_usage.is_some() || s.reported_cost.is_some() {
            let u = s.reported_usage.unwrap_or_default();
            let mut r = record(u, s.reported_cost.map(|c| c.0), None, fallback_time, None);
            if let Some((_, est)) = s.reported_cost {
                r.estimated = est;
            }
            out.push(r);
        } else {
            for m in s
                .messages
                .iter()
                .filter(|m| !m.inherited && m.role == Role::Assistant)
            {
                let mut r = record(
                    TokenUsage::default(),
                    None,
                    m.model.as_deref(),
                    m.timestamp.or(fallback_time),
                    m.reply_id.as_ref(),
                );
                r.usd = None;
                r.recorded = false;
                out.push(r);
            }
        }
    } else {
        let mut seen: HashSet<&str> = HashSet::new();
        let push = |m: &Message, out: &mut Vec<Record>| {
            if m.inherited || !carries(m) {
                return;
            }
            out.push(record(
                m.token_usage.unwrap_or_default(),
                m.cost,
                m.model.as_deref(),
                m.timestamp.or(fallback_time),
                m.reply_id.as_ref(),
            ));
        };
        for m in &s.messages {
            if let Some(id) = &m.native_id {
                seen.insert(id);
            }
            push(m, out);
        }
        for b in &s.branches {
            // The prefix shared with the active path was counted there.
            let shared = crate::model::shared_prefix(&b.messages, &s.messages);
            for m in &b.messages[shared..] {
                if let Some(id) = &m.native_id {
                    if !seen.insert(id) {
                        continue;
                    }
                }
                push(m, out);
            }
        }
    }
    for sub in &s.subagents {
        if let Some(child) = &sub.session {
            session_records(child, owner, out);
        }
    }
}

/// Token and USD totals of a set of records.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    pub key: String,
    /// Sessions with at least one counted record in this group.
    pub sessions: usize,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub reasoning_tokens: u64,
    /// USD of the priced records; `null` when none is priced.
    pub usd: Option<f64>,
    /// Some of `usd` was estimated from the price table rather than reported by the agent.
    pub estimated: bool,
    /// Models with usage but no known price; their tokens are in the counts above, their
    /// cost in no figure.
    pub unpriced_models: Vec<String>,
    /// Replies of sessions whose agent recorded no usage ([`Record::recorded`]): their
    /// cost is unknown and in no figure.
    pub unrecorded_replies: u64,
    /// Sessions those replies are counted in.
    pub unrecorded_sessions: usize,
    #[serde(skip)]
    owners: BTreeSet<String>,
    #[serde(skip)]
    unrecorded_owners: BTreeSet<String>,
}

impl Totals {
    fn add(&mut self, r: &Record) {
        self.owners.insert(r.owner.clone());
        self.sessions = self.owners.len();
        if !r.recorded {
            self.unrecorded_replies += 1;
            self.unrecorded_owners.insert(r.owner.clone());
            self.unrecorded_sessions = self.unrecorded_owners.len();
            return;
        }
        self.input_tokens += r.usage.input_tokens;
        self.output_tokens += r.usage.output_tokens;
        self.cache_read_tokens += r.usage.cached_tokens;
        self.cache_write_tokens += r.usage.cache_write_tokens;
        self.reasoning_tokens += r.usage.thinking_tokens;
        match r.usd {
            Some(c) => {
                self.usd = Some(self.usd.unwrap_or(0.0) + c);
                self.estimated |= r.estimated;
            }
            None => {
                if !self.unpriced_models.contains(&r.model) {
                    self.unpriced_models.push(r.model.clone());
                    self.unpriced_models.sort();
                }
            }
        }
    }

    fn round(&mut self) {
        if let Some(u) = &mut self.usd {
            *u = (*u * 1e6).round() / 1e6;
        }
    }

    fn tokens(&self) -> u64 {
        self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
            + self.reasoning_tokens
    }
}

/// The report `sessfs cost` prints.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub group_by: &'static str,
    /// The `"date"` of the price table estimates came from.
    pub prices_date: String,
    pub groups: Vec<Totals>,
    pub total: Totals,
}

impl Report {
    pub fn build(records: &[Record], filter: &Filter, group_by: GroupBy) -> Report {
        let mut groups: BTreeMap<String, Totals> = BTreeMap::new();
        let mut total = Totals {
            key: "total".into(),
            ..Totals::default()
        };
        for r in records.iter().filter(|r| filter.keeps(r)) {
            let keys = match group_by {
                GroupBy::Agent => vec![r.agent.name().to_string()],
                GroupBy::Model => vec![r.model.clone()],
                GroupBy::Day => vec![r
                    .when
                    .map_or("unknown".into(), |w| w.format("%Y-%m-%d").to_string())],
                GroupBy::Month => vec![r
                    .when
                    .map_or("unknown".into(), |w| w.format("%Y-%m").to_string())],
                GroupBy::Cwd => vec![r.cwd.clone().unwrap_or_else(|| "unknown".into())],
                GroupBy::Tag if r.tags.is_empty() => vec!["untagged".to_string()],
                GroupBy::Tag => r.tags.clone(),
            };
            for key in keys {
                let g = groups.entry(key.clone()).or_insert_with(|| Totals {
                    key,
                    ..Totals::default()
                });
                g.add(r);
            }
            total.add(r);
        }
        let mut groups: Vec<Totals> = groups.into_values().collect();
        for g in &mut groups {
            g.round();
        }
        total.round();
        if !matches!(group_by, GroupBy::Day | GroupBy::Month) {
            // Costliest first; unpriced groups by their tokens after the priced ones.
            groups.sort_by(|a, b| {
                b.usd
                    .unwrap_or(-1.0)
                    .total_cmp(&a.usd.unwrap_or(-1.0))
                    .then(b.tokens().cmp(&a.tokens()))
                    .then(a.key.cmp(&b.key))
            });
        }
        Report {
            group_by: match group_by {
                GroupBy::Agent => "agent",
                GroupBy::Model => "model",
                GroupBy::Day => "day",
                GroupBy::Month => "month",
                GroupBy::Cwd => "cwd",
                GroupBy::Tag => "tag",
            },
            prices_date: crate::pricing::table().date.clone(),
            groups,
            total,
        }
    }

    /// The report as an aligned table, estimated figures marked `~`.
    pub fn to_text(&self) -> String {
        let mut rows: Vec<[String; 8]> = vec![[
            self.group_by.to_uppercase(),
            "SESSIONS".into(),
            "INPUT".into(),
            "OUTPUT".into(),
            "CACHE READ".into(),
            "CACHE WRITE".into(),
            "REASONING".into(),
            "USD".into(),
        ]];
        for t in self.groups.iter().chain(std::iter::once(&self.total)) {
            let mut usd: Vec<String> = Vec::new();
            if let Some(u) = t.usd {
                usd.push(format!("{}${u:.2}", if t.estimated { "~" } else { "" }));
            }
            if !t.unpriced_models.is_empty() {
                usd.push("unpriced".into());
            }
            if t.unrecorded_replies > 0 {
                usd.push("not recorded".into());
            }
            let usd = if usd.is_empty() {
                "$0.00".to_string()
            } else {
                usd.join(" + ")
            };
            rows.push([
                if std::ptr::eq(t, &self.total) {
                    "TOTAL".into()
                } else {
                    t.key.clone()
                },
                t.sessions.to_string(),
                thousands(t.input_tokens),
                thousands(t.output_tokens),
                thousands(t.cache_read_tokens),
                thousands(t.cache_write_tokens),
                thousands(t.reasoning_tokens),
                usd,
            ]);
        }
        let mut width = [0usize; 8];
        for r in &rows {
            for (w, c) in width.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let mut out = String::new();
        for r in &rows {
            let mut line = format!("{:<w$}", r[0], w = width[0]);
            for (c, w) in r.iter().zip(width).skip(1) {
                line.push_str(&format!("  {c:>w$}"));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        if self.total.estimated {
            out.push_str(&format!(
                "~ estimated from list prices dated {} (tokens the agent recorded without a cost)\n",
                self.prices_date
            ));
        }
        if !self.total.unpriced_models.is_empty() {
            out.push_str(&format!(
                "unpriced (no known price; tokens counted, USD not): {}\n",
                self.total.unpriced_models.join(", ")
            ));
        }
        if self.total.unrecorded_replies > 0 {
            out.push_str(&format!(
                "not recorded: {} {} in {} {} whose agent kept no usage; their cost is unknown, in no figure\n",
                self.total.unrecorded_replies,
                plural(self.total.unrecorded_replies as usize, "reply", "replies"),
                self.total.unrecorded_sessions,
                plural(self.total.unrecorded_sessions, "session", "sessions"),
            ));
        }
        out
    }
}

fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 {
        one
    } else {
        many
    }
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Branch, Role, Subagent};

    fn reply(model: &str, input: u64, id: &str) -> Message {
        Message {
            role: Role::Assistant,
            model: Some(model.into()),
            native_id: Some(id.into()),
            content: format!("reply {id}"),
            token_usage: Some(TokenUsage {
                input_tokens: input,
                ..TokenUsage::default()
            }),
            ..Message::default()
        }
    }

    #[test]
    fn inherited_shared_branch_prefix_and_nested_subagents_count_once() {
        let mut s = Session::new(Agent::Claude, "a");
        let mut copied = reply("claude-sonnet-4", 1000, "x");
        copied.inherited = true;
        s.messages = vec![copied, reply("claude-sonnet-4", 10, "m1")];
        s.branches.push(Branch {
            name: "b".into(),
            messages: vec![s.messages[0].clone(), reply("claude-sonnet-4", 5, "m2")],
            ..Branch::default()
        });
        let mut child = Session::new(Agent::Claude, "child");
        child.messages = vec![reply("gpt-zzz", 7, "c1")];
        s.subagents.push(Subagent {
            name: "agent-1".into(),
            session: Some(Box::new(child)),
            ..Subagent::default()
        });
        let mut out = Vec::new();
        session_records(&s, "claude:a", &mut out);
        let inputs: Vec<u64> = out.iter().map(|r| r.usage.input_tokens).collect();
        assert_eq!(inputs, vec![10, 5, 7]);
        let rep = Report::build(&out, &Filter::default(), GroupBy::Model);
        assert_eq!(rep.total.input_tokens, 22);
        assert_eq!(rep.total.unpriced_models, vec!["gpt-zzz".to_string()]);
        let unpriced = rep.groups.iter().find(|g| g.key == "gpt-zzz").unwrap();
        assert_eq!(unpriced.usd, None, "unpriced is never $0");
        assert!(rep.to_text().contains("unpriced"));
    }

    #[test]
    fn a_record_is_in_each_tag_group_and_once_in_the_total() {
        let mut s = Session::new(Agent::Pi, "t");
        s.tags = vec!["infra".into(), "urgent".into()];
        s.messages = vec![reply("claude-sonnet-4", 10, "m")];
        let mut u = Session::new(Agent::Pi, "u");
        u.messages = vec![reply("claude-sonnet-4", 1, "n")];
        let mut out = Vec::new();
        session_records(&s, "pi:t", &mut out);
        session_records(&u, "pi:u", &mut out);
        let rep = Report::build(&out, &Filter::default(), GroupBy::Tag);
        let by: Vec<(&str, u64)> = rep
            .groups
            .iter()
            .map(|g| (g.key.as_str(), g.input_tokens))
            .collect();
        assert_eq!(by, vec![("infra", 10), ("urgent", 10), ("untagged", 1)]);
        assert_eq!(rep.total.input_tokens, 11);
    }
}
