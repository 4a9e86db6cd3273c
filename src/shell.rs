//! Shell completion: `sessfs completions bash|zsh|fish` prints a script that asks sessfs
//! itself what to complete (`COMPLETE=<shell> sessfs -- <words>`), so agent names and
//! session ids come from the stores on the machine at the moment of the Tab, not from a list
//! frozen when the script was written. The engine is clap_complete's; this module supplies
//! the candidates.

use crate::model::{unified_id, Agent};
use crate::stores::{self, Env};
use clap_complete::engine::CompletionCandidate;
use std::ffi::OsStr;

/// The variable through which a shell asks for completions.
pub const VAR: &str = "COMPLETE";

/// The shells `sessfs completions` writes for.
pub const SHELLS: [&str; 3] = ["bash", "zsh", "fish"];

/// The registration script for `shell`, calling back into the binary at `exe`.
pub fn registration(shell: &str, exe: &str) -> std::io::Result<Vec<u8>> {
    let shells = clap_complete::env::Shells::builtins();
    let completer = shells.completer(shell).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("unknown shell '{shell}'; use one of {}", SHELLS.join(", ")),
        )
    })?;
    let mut buf = Vec::new();
    completer.write_registration(VAR, "sessfs", "sessfs", exe, &mut buf)?;
    Ok(buf)
}

/// Every agent directory name.
pub fn agents() -> Vec<CompletionCandidate> {
    Agent::ALL
        .iter()
        .map(|a| CompletionCandidate::new(a.name()))
        .collect()
}

/// Unified ids (`<agent>:<native id>`) of the sessions on this machine that start with what
/// was typed. Only the store holding the typed agent is listed once an agent is named.
pub fn session_ids(current: &OsStr) -> Vec<CompletionCandidate> {
    let typed = current.to_string_lossy();
    let only = typed
        .split_once(':')
        .and_then(|(agent, _)| Agent::from_name(agent));
    let env = Env::from_process();
    let mut out = Vec::new();
    for store in stores::open_all(&env, &[]) {
        if only.is_some_and(|a| a != store.agent()) {
            continue;
        }
        if only.is_none() && !store.agent().name().starts_with(typed.as_ref()) {
            continue;
        }
        for listed in store.list() {
            let id = unified_id(store.agent(), &listed.id);
            if id.starts_with(typed.as_ref()) {
                out.push(CompletionCandidate::new(id));
            }
        }
    }
    out.sort_by(|a, b| a.get_value().cmp(b.get_value()));
    out.dedup_by(|a, b| a.get_value() == b.get_value());
    out
}
