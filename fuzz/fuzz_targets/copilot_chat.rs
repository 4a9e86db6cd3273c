//! Copilot Chat in VS Code: a session log (`.jsonl`), a flat session file (`.json`) and the
//! workspace's `workspace.json`, split at `0xFF 0xFE`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 3);
    let ws = ".config/Code/User/workspaceStorage/0123456789abcdef0123456789abcdef";
    put(
        &format!("{ws}/chatSessions/7d3e9a10-4c2b-4e8f-9a1d-5b6c7d8e9f01.jsonl"),
        p[0],
    );
    if !p[1].is_empty() {
        put(
            &format!("{ws}/chatSessions/2b8f4c61-0e7a-4d3b-b5c9-8a1e2f3d4c5b.json"),
            p[1],
        );
        put(
            ".config/Code/User/globalStorage/emptyWindowChatSessions/5a5a5a5a-0000-4000-8000-000000000001.json",
            p[1],
        );
    }
    if !p[2].is_empty() {
        put(&format!("{ws}/workspace.json"), p[2]);
    }
    load_and_render(&[Agent::CopilotChat]);
});
