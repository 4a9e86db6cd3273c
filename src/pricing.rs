//! A small table of list prices, for agents that record tokens but no cost (Claude Code,
//! agsh). Costs computed here are marked `estimated` in `meta.json`; a cost the agent
//! reported itself is always preferred.
//!
//! Prices are USD per million tokens: input, output, cache read, cache write. A model is
//! matched by the longest table prefix of its name with any `provider/` prefix removed, and
//! a Claude model also through a cloud prefix (`us.anthropic.claude-…` on Bedrock).

/// (model prefix, input, output, cache read, cache write)
const TABLE: &[(&str, f64, f64, f64, f64)] = &[
    ("claude-opus-4-5", 5.0, 25.0, 0.5, 6.25),
    ("claude-opus-4-6", 5.0, 25.0, 0.5, 6.25),
    ("claude-opus-4", 15.0, 75.0, 1.5, 18.75),
    ("claude-3-opus", 15.0, 75.0, 1.5, 18.75),
    ("claude-sonnet-4", 3.0, 15.0, 0.3, 3.75),
    ("claude-3-7-sonnet", 3.0, 15.0, 0.3, 3.75),
    ("claude-3-sonnet", 3.0, 15.0, 0.3, 3.75),
    ("claude-3-5-sonnet", 3.0, 15.0, 0.3, 3.75),
    ("claude-haiku-4", 1.0, 5.0, 0.1, 1.25),
    ("claude-3-5-haiku", 0.8, 4.0, 0.08, 1.0),
    ("claude-3-haiku", 0.25, 1.25, 0.03, 0.3),
    // OpenAI list prices per 1M tokens. `gpt-5-codex`, `gpt-5.1`, `gpt-5.1-codex(-max)` are
    // priced as `gpt-5`; `gpt-5.2*` and the codex mini models are not.
    ("gpt-5.2", 1.75, 14.0, 0.175, 0.0),
    ("gpt-5.1-codex-mini", 0.25, 2.0, 0.025, 0.0),
    ("codex-mini", 1.5, 6.0, 0.375, 0.0),
    ("gpt-5-mini", 0.25, 2.0, 0.025, 0.0),
    ("gpt-5-nano", 0.05, 0.4, 0.005, 0.0),
    ("gpt-5", 1.25, 10.0, 0.125, 0.0),
    ("gpt-4.1-mini", 0.4, 1.6, 0.1, 0.0),
    ("gpt-4.1", 2.0, 8.0, 0.5, 0.0),
    ("gpt-4o-mini", 0.15, 0.6, 0.075, 0.0),
    ("gpt-4o", 2.5, 10.0, 1.25, 0.0),
    ("o4-mini", 1.1, 4.4, 0.275, 0.0),
    ("o3", 2.0, 8.0, 0.5, 0.0),
    ("gemini-2.5-pro", 1.25, 10.0, 0.31, 0.0),
    ("gemini-2.5-flash", 0.3, 2.5, 0.075, 0.0),
];

/// USD per million tokens of one model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
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

/// The list price of `model`, if the table has it.
pub fn price(model: &str) -> Option<Price> {
    let mut name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    if let Some(i) = name.find("claude-") {
        name.drain(..i);
    }
    let &(_, input, output, cache_read, cache_write) = TABLE
        .iter()
        .filter(|(prefix, ..)| name.starts_with(prefix))
        .max_by_key(|(prefix, ..)| prefix.len())?;
    Some(Price {
        input,
        output,
        cache_read,
        cache_write,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimate(model: &str, input: u64, output: u64) -> Option<f64> {
        price(model).map(|p| p.usd(input, output, 0, 0))
    }

    #[test]
    fn longest_prefix_wins_and_provider_is_ignored() {
        let m = 1_000_000;
        assert_eq!(estimate("claude-opus-4-5-20251101", m, 0), Some(5.0));
        assert_eq!(estimate("anthropic/claude-opus-4-1", m, 0), Some(15.0));
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
}
