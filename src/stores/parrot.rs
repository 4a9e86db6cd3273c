//! parrot.nvim (frankroeder/parrot.nvim, a Neovim plugin forked from gp.nvim): one Markdown
//! file per chat in its `chat_dir`, `~/.local/share/nvim/parrot/chats/<time>.md`.
//!
//! Learnt from parrot.nvim's own source, github.com/frankroeder/parrot.nvim at commit
//! `34bff8b294d85f445843cb70faa205e07e22d4f0` (2026-01-21): `lua/parrot/config.lua`
//! (`chat_dir` `stdpath("data") .. "/parrot/chats"`, `state_dir` `stdpath("data") ..
//! "/parrot/persisted"`, `chat_user_prefix` `🗨:`, `llm_prefix` `🦜:`, `chat_template`),
//! `lua/parrot/chat_handler.lua` (`_new_chat` writes the file, `_chat_respond` reads it back
//! into the request and writes the reply line, the topic generation), `lua/parrot/utils.lua`
//! (`trim`, `is_chat`, `last_content_line`) and `lua/parrot/state.lua` (`state.json`); older
//! layouts from the same repository's history (`0270dee` the `🤖:` → `🦜:` change and the
//! `[<model> - <provider>]` reply line, `7b26bb2` the end of the `- file:` header, `92ba2d6`
//! `- system:` in place of `- role:`, `81dedce` the end of the `last.md` symlink).
//!
//! **Shared with gp.nvim.** parrot.nvim keeps gp.nvim's chat file and reads it back the same
//! way, so this store is [`super::gp`]'s parser with parrot's [`PARROT`] dialect: read the
//! gp.nvim module for the rules common to both.
//!
//! **Where.** `stdpath("data")` is `$XDG_DATA_HOME/<app>`, else `~/.local/share/<app>` (macOS
//! too), `<app>` being `$NVIM_APPNAME`, else `nvim` ([`super::codecompanion::nvim_data_dir`]).
//! A `chat_dir` set in the Neovim configuration is given with `--store parrot=DIR` (or one
//! chat file); the configuration, which holds the providers' `api_key`s, is never read.
//!
//! **Files.** `_new_chat` names a chat `<YYYY-MM-DD.HH-MM-SS.mmm>.md`, the local time it
//! started (the last part is `hrtime()` in milliseconds modulo 1000, a uniqueness stamp). The
//! file is the chat buffer, written whole on every change, replies streamed into it. It
//! starts `# topic: ?` (replaced by a generated topic after the first reply when the
//! provider has a topic model), an optional `- system: <prompt>` line (a chat started with a
//! custom system prompt, newlines as spaces), and a `---` line; `_` is written `\_`. Chats
//! from before June 2024 have gp.nvim's longer header instead: `- file: <name>`, optional
//! `- model:` and `- role:` lines and the template's instructions. `_chat_respond` reads every
//! `[-#] <word>: <value>` line before the `---` as a header field, then each line after it: one
//! starting with `🗨:` starts a user message with the rest of the line, one starting with `🦜:`
//! an assistant message (the rest of that line, `[<model> - <provider>]`, or
//! `[<model> & custom system prompt - <provider>]`, is not sent), any other line continues the
//! current message, and lines before the first prefix are dropped.
//!
//! **What each record becomes.** Prompts are user messages, replies assistant messages whose
//! model is the model in their `🦜:[…]` line; each provider named there is a `provider:` tag.
//! A reply starting with a `<think>…</think>` block (models that stream their reasoning
//! inline) has it as its reasoning. The `- system:` header (`- role:` in older chats) is the
//! system prompt (context); the rest of the header but the topic is one `chat header`
//! context message, and text before the first prompt, which parrot never sends, is context
//! too. Replies that parrot.nvim wrote before April 2024 start with gp.nvim's `🤖:[<agent>]`
//! and are read as replies too. The topic is the title (`?`: the first prompt names the
//! chat), an older header's `- model:` the model the chat was set to. The creation time is
//! the file name's, the update time the file's mtime. parrot.nvim keeps no tool calls, no
//! usage, no per-message times and no working directory in a chat, so sessions have none.
//! The empty `🗨:` line parrot leaves for the next prompt is no message.
//!
//! **Not read.** `last.md` (a symlink to the last chat, before July 2024), `state_dir`'s
//! `state.json` (the selected providers and models, cached model lists and the last chat's
//! path: no chat content), the `.parrot.md` context file parrot keeps at a repository's root,
//! and the Neovim configuration.

use super::codecompanion::nvim_data_dir;
use super::gp::{ChatStore, Dialect};
use super::{Env, Root};
use crate::model::Agent;

const AGENT: Agent = Agent::Parrot;
/// `chat_user_prefix`'s default.
pub const USER_PREFIX: &str = "🗨:";
/// `llm_prefix`'s default.
pub const ASSISTANT_PREFIX: &str = "🦜:";
/// The reply prefix parrot.nvim kept from gp.nvim until 0270dee (April 2024).
pub const OLD_ASSISTANT_PREFIX: &str = "🤖:";

/// parrot.nvim's chats.
pub const PARROT: Dialect = Dialect {
    agent: AGENT,
    name: "parrot.nvim",
    format: "parrot-nvim-chat-md",
    user_prefixes: &[USER_PREFIX],
    assistant_prefixes: &[ASSISTANT_PREFIX, OLD_ASSISTANT_PREFIX],
    header_fields: &["topic", "system", "file", "model", "role"],
    system_fields: &["system", "role"],
    custom_markers: &[" & custom system prompt", " & custom role"],
    reply_provider: true,
};

/// The chat directory parrot.nvim uses by default, existing or not.
pub fn candidates(env: &Env) -> Vec<Root> {
    let (data, how) = nvim_data_dir(env);
    vec![Root::new(AGENT, data.join("parrot").join("chats"), how)]
}

/// parrot.nvim's store.
pub fn open(roots: Vec<Root>) -> ChatStore {
    ChatStore::new(&PARROT, roots)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Role, Session};
    use crate::stores::gp;
    use crate::stores::kit::SessionBuilder;

    fn parse(text: &str) -> Session {
        let mut b = SessionBuilder::new(AGENT, "2026-03-01.10-00-00.123");
        gp::parse(&PARROT, &mut b, text, "x.md");
        b.finish()
    }

    #[test]
    fn current_template_system_header_and_reply_lines() {
        let s = parse(concat!(
            "# topic: Sorting in Lua\n- system: Be brief. Use Lua 5.1.\n\n---\n",
            "🗨: first prompt\n\n🦜:[gpt-4o & custom system prompt - openai]\n\nfirst reply\n\n\n",
            "🗨: second\nprompt\n\n🦜:[claude-sonnet-4-5 - anthropic]\n\n<think>hmm</think>\nsecond reply\n\n\n🗨:\n",
        ));
        assert_eq!(s.title.as_deref(), Some("Sorting in Lua"));
        assert_eq!(s.tags, ["provider:openai", "provider:anthropic"]);
        let m = &s.messages;
        assert_eq!(m[0].label.as_deref(), Some("system prompt"));
        assert_eq!(m[0].content, "Be brief. Use Lua 5.1.");
        assert_eq!(
            (m[1].role, m[1].content.as_str()),
            (Role::User, "first prompt")
        );
        assert_eq!(m[2].content, "first reply");
        assert_eq!(m[2].model.as_deref(), Some("gpt-4o"));
        assert_eq!(m[3].content, "second\nprompt");
        assert_eq!(m[4].model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(m[4].thinking.as_deref(), Some("hmm"));
        assert_eq!(m[4].content, "second reply");
        assert_eq!(m.len(), 5);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    }

    #[test]
    fn gp_era_replies_and_an_unknown_header_field() {
        let s = parse("# topic: ?\n- file: x.md\n- mood: calm\n---\n🗨: hi\n🤖:[ChatGPT4]\nhello\n💬: not a prompt here\n");
        assert_eq!(s.title.as_deref(), Some("hi"));
        let m: Vec<_> = s.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(
            m,
            [
                "- file: x.md\n- mood: calm",
                "hi",
                "hello\n💬: not a prompt here"
            ]
        );
        assert_eq!(s.messages[2].model.as_deref(), Some("ChatGPT4"));
        assert!(s.tags.is_empty());
        let w = s.warnings.join("\n");
        assert!(
            w.contains("fields sessfs does not know") && w.contains("mood"),
            "{w}"
        );
        assert!(w.contains("ends inside a reply"), "{w}");
    }

    #[test]
    fn no_prefix_names_parrots_prefixes() {
        let s = parse("# topic: ?\n---\njust notes\n");
        assert!(
            s.warnings[0].contains("no `🗨:`, `🦜:` or `🤖:` line"),
            "{:?}",
            s.warnings
        );
        assert_eq!(s.messages[0].content, "just notes");
    }
}
