//! PearAI (trypear/pearai-submodule, the chat extension of the PearAI editor, a fork of
//! Continue): one JSON document per session in `~/.pearai/sessions/`, read by the Continue
//! store's parser (`stores/continue.rs`, with [`DIALECT`]); this module holds where the fork
//! keeps them and what it adds.
//!
//! Read from the fork's own source, trypear/pearai-submodule
//! `03800f80a0487a26679e6143f92e037c59c03103` (2025-05-18):
//!
//! - `core/util/paths.ts`: the global directory is `$CONTINUE_GLOBAL_DIR`, else
//!   `~/.pearai` (`os.homedir()`, on macOS and Windows too; `~/.continue` until commit
//!   `131d676e7`, 2024-08-12, so what older versions wrote is Continue's directory);
//!   `sessions/<id>.json` and the index `sessions/sessions.json` as in Continue;
//! - `core/util/history.ts` `HistoryManager.save`: the session is written whole with a plain
//!   `writeFileSync(JSON.stringify(session))`, and its index entry `{sessionId, title,
//!   dateCreated (epoch ms as a string), workspaceDirectory, integrationType}` updated;
//!   `load` takes the id from the file name;
//! - `core/index.d.ts`: `PersistedSessionInfo {history, perplexityHistory, title,
//!   workspaceDirectory, sessionId}` (`aiderHistory` too until commit `9a0dc7dfd`,
//!   2025-02-20), the lists being Continue's `ChatHistoryItem`s of its 2024 fork point
//!   (`message {role user|assistant|system, content, citations?}`, `contextItems`,
//!   `promptLogs {completionOptions.model, prompt, completion}`, `citations {url, title}`):
//!   no tool calls, reasoning or usage;
//! - `gui/src/hooks/useHistory.tsx` `saveSession` (the document's fields, a title from the
//!   first prompt's last line for a `New Session`), `gui/src/hooks/useChatHandler.ts` (a web
//!   search's cited URLs and their titles put on the reply's item as `citations`).
//!
//! Design decisions, and why:
//!
//! - **One parser.** The files are Continue's with two more conversation lists and
//!   citations, so the Continue store reads them (its `EXTRA_LISTS`); a session whose
//!   `perplexityHistory` (PearAI Search) or `aiderHistory` (PearAI Creator) holds items is
//!   tagged `integration:perplexity` or `integration:aider`.
//! - **A directory is read once, and a Continue directory is Continue's.** PearAI honours
//!   Continue's own variable, `CONTINUE_GLOBAL_DIR`: where it is set both write into the
//!   directory it names, which the Continue store reads, so those sessions show under
//!   `continue/` and not twice. `~/.pearai` is still read (what PearAI wrote without the
//!   variable), unless that variable names it: then it is the Continue store's too.
//! - **Never read**: `config.json` (API keys), `.env`, `index/`, `dev_data/`, `.diffs/`,
//!   `pearai.log` and the rest of `~/.pearai`; the listing opens `sessions/*.json` only.

use super::r#continue::{self, Dialect};
use super::{Env, Root};
use crate::model::Agent;

/// PearAI's sessions, read by the Continue store.
pub const DIALECT: Dialect = Dialect {
    agent: Agent::Pearai,
    format: "pearai-session-json",
};

/// PearAI's sessions directory, `~/.pearai/sessions`, unless the Continue store reads that
/// directory (`CONTINUE_GLOBAL_DIR` naming `~/.pearai`).
pub fn candidates(env: &Env) -> Vec<Root> {
    let root = Root::new(Agent::Pearai, env.home.join(".pearai/sessions"), "default");
    let shared = r#continue::candidates(env)
        .iter()
        .any(|c| super::same_path(&c.path, &root.path));
    if shared {
        Vec::new()
    } else {
        vec![root]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn env(vars: &[(&str, &str)]) -> Env {
        Env {
            home: PathBuf::from("/h"),
            vars: vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn roots(e: &Env) -> Vec<(String, String)> {
        candidates(e)
            .into_iter()
            .map(|r| (r.path.display().to_string(), r.how))
            .collect()
    }

    #[test]
    fn pearai_reads_its_home_unless_continue_reads_it() {
        let home = vec![("/h/.pearai/sessions".to_string(), "default".to_string())];
        assert_eq!(roots(&env(&[])), home);
        // The shared variable elsewhere: that directory is Continue's, ~/.pearai still read.
        assert_eq!(roots(&env(&[("CONTINUE_GLOBAL_DIR", "/c")])), home);
        // The shared variable naming ~/.pearai: the Continue store reads it, once.
        assert_eq!(
            roots(&env(&[("CONTINUE_GLOBAL_DIR", "~/.pearai")])),
            Vec::<(String, String)>::new()
        );
        assert_eq!(
            roots(&env(&[("CONTINUE_GLOBAL_DIR", "/h/.pearai")])),
            Vec::<(String, String)>::new()
        );
    }
}
