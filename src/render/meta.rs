//! `meta.json`: everything known about a session at a glance, for `jq` and scripts.
//!
//! The key order is fixed by the struct below (not by a map), so the file is byte-stable and
//! a `diff` of two `meta.json` files lines up. This is where the fields that change as a
//! session grows (title, `updatedAt`, counts, cost) live; `transcript.md` and
//! `messages.jsonl` keep them out of their headers to stay prefix-stable.

use super::text::iso_opt;
use crate::model::{Cost, Session, Subagent};
use serde::Serialize;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Meta<'a> {
    agent: &'static str,
    session_id: &'a str,
    unified_id: String,
    title: Option<&'a str>,
    created_at: Option<String>,
    updated_at: Option<String>,
    turn_count: usize,
    message_count: usize,
    model: Option<String>,
    models: Vec<String>,
    cost: CostMeta,
    /// The session with everything it spawned, nested; only for a session with subagents.
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_with_subagents: Option<CostMeta>,
    tags: &'a [String],
    cwd: Option<&'a str>,
    forked_from: Option<&'a str>,
    parent: Option<&'a str>,
    /// Present (and true) only for a set of subagents whose main transcript is gone.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    orphaned: bool,
    subagents: &'a [Subagent],
    branches: Vec<BranchMeta<'a>>,
    source: SourceMeta<'a>,
    warnings: &'a [String],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BranchMeta<'a> {
    name: &'a str,
    fork_point: Option<&'a str>,
    leaf: Option<&'a str>,
    message_count: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SourceMeta<'a> {
    /// Lossy UTF-8: a path that is not valid UTF-8 still shows, with U+FFFD in place.
    paths: Vec<String>,
    format: &'a str,
    format_version: Option<&'a str>,
}

/// `cost` in `meta.json` (CONTRACT section 5). `cachedTokens` is kept beside
/// `cacheReadTokens` (the same number) for readers written before the split.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CostMeta {
    /// `null` when some usage has no known price, or the agent recorded none: never a
    /// silent 0.
    total_usd: Option<f64>,
    input_tokens: u64,
    output_tokens: u64,
    thinking_tokens: u64,
    cached_tokens: u64,
    cache_read_tokens: u64,
    cache_write_tokens: u64,
    estimated: bool,
    /// `false` when the session has replies but the agent recorded no usage or cost for
    /// them: `totalUsd` is then `null` (unknown), not 0.
    usage_recorded: bool,
}

/// The total to a millionth of a dollar: sums of per-message floats otherwise print as
/// `0.006024999999999999`.
fn rounded(c: Cost) -> CostMeta {
    CostMeta {
        total_usd: (!c.unpriced && !c.unrecorded && c.total_usd.is_finite())
            .then(|| (c.total_usd * 1e6).round() / 1e6),
        input_tokens: c.input_tokens,
        output_tokens: c.output_tokens,
        thinking_tokens: c.thinking_tokens,
        cached_tokens: c.cached_tokens,
        cache_read_tokens: c.cached_tokens,
        cache_write_tokens: c.cache_write_tokens,
        estimated: c.estimated,
        usage_recorded: !c.unrecorded,
    }
}

pub fn render(s: &Session) -> String {
    let mut out = super::pretty_json(&meta(s));
    out.push('\n');
    out
}

/// `meta.json` as a JSON value, for the command line (`sessfs list`), which needs the fields
/// but not the other files of a session.
pub fn to_value(s: &Session) -> serde_json::Value {
    serde_json::to_value(meta(s)).unwrap_or(serde_json::Value::Null)
}

fn meta(s: &Session) -> Meta<'_> {
    Meta {
        agent: s.agent.name(),
        session_id: &s.id,
        unified_id: s.unified_id(),
        title: s.title.as_deref(),
        created_at: iso_opt(s.created_at.as_ref()),
        updated_at: iso_opt(s.updated_at.as_ref()),
        turn_count: s.turn_count(),
        message_count: s.messages.len(),
        model: s.primary_model(),
        models: s.models(),
        cost: rounded(s.cost()),
        cost_with_subagents: s.cost_with_subagents().map(rounded),
        tags: &s.tags,
        cwd: s.cwd.as_deref(),
        forked_from: s.forked_from.as_deref(),
        parent: s.parent.as_deref(),
        orphaned: s.orphaned,
        subagents: &s.subagents,
        branches: s
            .branches
            .iter()
            .map(|b| BranchMeta {
                name: &b.name,
                fork_point: b.fork_point.as_deref(),
                leaf: b.leaf.as_deref(),
                message_count: b.messages.len(),
            })
            .collect(),
        source: SourceMeta {
            paths: s
                .source
                .paths
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect(),
            format: &s.source.format,
            format_version: s.source.format_version.as_deref(),
        },
        warnings: &s.warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Agent, Message, Role};

    /// Per-message costs summed to `0.30000000000000004` in `meta.json`.
    #[test]
    fn total_cost_has_no_float_noise() {
        let mut s = Session::new(Agent::Pi, "p");
        for c in [0.1, 0.2] {
            s.messages.push(Message {
                role: Role::Assistant,
                cost: Some(c),
                ..Message::default()
            });
        }
        let v: serde_json::Value = serde_json::from_str(&render(&s)).expect("json");
        assert_eq!(v["cost"]["totalUsd"].to_string(), "0.3");
    }
}
