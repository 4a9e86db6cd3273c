//! Cline-family tasks: a Cline task's API history, UI messages, metadata and task list, and
//! a Roo Code task's history item, and a Cline SDK session's messages file and manifest,
//! split at `0xFF 0xFE`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 7);
    let cline = ".config/Code/User/globalStorage/saoudrizwan.claude-dev";
    let task = format!("{cline}/tasks/1767000000001");
    put(&format!("{task}/api_conversation_history.json"), p[0]);
    if !p[1].is_empty() {
        put(&format!("{task}/ui_messages.json"), p[1]);
    }
    if !p[2].is_empty() {
        put(&format!("{task}/task_metadata.json"), p[2]);
    }
    if !p[3].is_empty() {
        put(&format!("{cline}/state/taskHistory.json"), p[3]);
    }
    let roo = ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks/0b5e6c1a";
    put(&format!("{roo}/ui_messages.json"), p[1]);
    if !p[4].is_empty() {
        put(&format!("{roo}/history_item.json"), p[4]);
    }
    let sdk = ".cline/data/sessions/1784000000001_abcde/1784000000001_abcde";
    put(&format!("{sdk}.messages.json"), p[5]);
    if !p[6].is_empty() {
        put(&format!("{sdk}.json"), p[6]);
    }
    load_and_render(&[Agent::Cline, Agent::Roo]);
});
