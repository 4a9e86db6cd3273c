//! List prices, for agents that record tokens but no cost (Claude Code, agsh, Codex).
//! Costs computed here are marked `estimated` in `meta.json` and `sessfs cost`; a cost the
//! agent reported itself is always preferred.
//!
//! The table is data, not code: `data/prices.json` (USD per million tokens: input, output,
//! cache read, cache write; dated by its `"date"` field), compiled in with `include_str!` so
//! the binary needs no file at run time. `sessfs cost --prices FILE` lays a file of the same
//! shape over it ([`install`]): its models replace or add to the built-in ones.
//!
//! A model is matched by the longest table key that prefixes its name with any `provider/`
//! or `provider:` prefix removed, and a Claude model also through a cloud prefix
//! (`us.anthropic.claude-…` on Bedrock).

use serde::Deserialize;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The built-in table, as shipped in the repository.
pub const BUILTIN: &str = include_str!("../data/prices.json");

/// USD per million tokens of one model.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Price {
    pub input: f64,
    pub output: f64,
    #[serde(default)]
    pub cache_read: f64,
    #[serde(default)]
    pub cache_write: f64,
}

impl Price {
    /// USD for token counts; reasoning tokens are billed as output.
    pub fn usd(&self, input: u64, output: u64, cache_read: u64, cache_write: u64) -> f64 {
        let m = 1e-6;
        input as f64 * self.input * m
            + output as f64 * self.output * m
            + cache_read as f64 * self.cache_read * m
            + cache_write as f64 * self.cache_write * m
    }
}

/// A price table: its date and its models by name prefix.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Table {
    pub date: String,
    pub models: BTreeMap<String, Price>,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not a price table ({{\"date\": …, \"models\": {{\"<prefix>\": {{\"input\": …, \"output\": …}}}}}}): {source}")]
    Parse {
        path: String,
        source: serde_json::Error,
    },
    #[error("a price table is already in use")]
    AlreadySet,
}

impl Table {
    pub fn parse(text: &str, path: &str) -> Result<Table, Error> {
        serde_json::from_str(text).map_err(|source| Error::Parse {
            path: path.to_string(),
            source,
        })
    }

    /// The price of `model`: the longest key that prefixes its normalised name.
    pub fn price(&self, model: &str) -> Option<Price> {
        let mut name = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        if let Some(i) = name.find("claude-") {
            name.drain(..i);
        } else if let Some((_, rest)) = name.split_once(':') {
            name = rest.to_string();
        }
        self.models
            .iter()
            .filter(|(prefix, _)| name.starts_with(prefix.as_str()))
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|(_, p)| *p)
    }
}

static TABLE: OnceLock<Table> = OnceLock::new();

/// The table in use: the built-in one, or the one [`install`]ed before first use.
pub fn table() -> &'static Table {
    TABLE.get_or_init(|| {
        Table::parse(BUILTIN, "data/prices.json")
            .expect("the built-in price table is valid JSON (checked by a unit test)")
    })
}

/// Lay the prices of the file at `path` over the built-in table, for this process. Must run
/// before any price is looked up (the command line calls it first thing).
pub fn install(path: &std::path::Path) -> Result<&'static Table, Error> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: shown.clone(),
        source,
    })?;
    let over = Table::parse(&text, &shown)?;
    let mut table = Table::parse(BUILTIN, "data/prices.json").expect("built-in table is valid");
    table.date = over.date;
    table.models.extend(over.models);
    TABLE.set(table).map_err(|_| Error::AlreadySet)?;
    Ok(table_ref())
}

fn table_ref() -> &'static Table {
    TABLE.get().expect("set just before")
}

/// The list price of `model`, if the table has it.
pub fn price(model: &str) -> Option<Price> {
    // Asked per message, and a session's messages nearly always name one model: the last
    // answer is kept per thread rather than normalising the name and scanning the table.
    thread_local! {
        static LAST: RefCell<(String, Option<Price>)> = const { RefCell::new((String::new(), None)) };
    }
    LAST.with_borrow_mut(|(name, price)| {
        if name != model || name.is_empty() {
            *price = table().price(model);
            model.clone_into(name);
        }
        *price
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimate(model: &str, input: u64, output: u64) -> Option<f64> {
        price(model).map(|p| p.usd(input, output, 0, 0))
    }

    #[test]
    fn builtin_table_parses_and_is_dated() {
        let t = Table::parse(BUILTIN, "data/prices.json").unwrap();
        assert!(chrono::NaiveDate::parse_from_str(&t.date, "%Y-%m-%d").is_ok());
        assert!(t.models.len() > 20);
    }

    #[test]
    fn longest_prefix_wins_and_provider_is_ignored() {
        let m = 1_000_000;
        assert_eq!(estimate("claude-opus-4-5-20251101", m, 0), Some(5.0));
        assert_eq!(estimate("anthropic/claude-opus-4-1", m, 0), Some(15.0));
        assert_eq!(estimate("openai:gpt-5", m, 0), Some(1.25));
        assert_eq!(estimate("unknown-model", m, 0), None);
    }

    /// Claude 3 Sonnet sessions and Bedrock model ids used to get no estimate at all.
    #[test]
    fn claude_3_sonnet_and_bedrock_ids_are_priced() {
        let m = 1_000_000;
        assert_eq!(estimate("claude-3-sonnet-20240229", 0, m), Some(15.0));
        assert_eq!(
            estimate("us.anthropic.claude-sonnet-4-20250514-v1:0", 0, m),
            Some(15.0)
        );
    }

    #[test]
    fn the_fixture_models_are_priced() {
        for m in [
            "claude-sonnet-4.6",
            "claude-haiku-4-5-20251001",
            "gpt-5.2-codex",
            "gpt-5.1-codex",
            "gemini-3-flash-preview",
            "gemini-3.1-pro-preview-customtools",
        ] {
            assert!(price(m).is_some(), "{m}");
        }
    }
}
