//! ShellGPT chats: the fuzzer's bytes as one chat file in the chat cache of the temporary
//! directory (`$TMPDIR/chat_cache/`, `$TMPDIR` pointed into the home), and (split at
//! `0xFF 0xFE`) a second one in the older `shell_gpt/chat_cache/`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs::stores::Env;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 2);
    put("tmp/chat_cache/temp", p[0]);
    if !p[1].is_empty() {
        put("tmp/shell_gpt/chat_cache/conversation_1", p[1]);
    }
    let mut env = Env::at_home(home());
    let tmp = home().join("tmp");
    env.vars.insert("TMPDIR".into(), tmp.display().to_string());
    load_and_render_in(&env, &[Agent::Sgpt]);
});
