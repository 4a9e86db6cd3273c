//! agentuse JSON trees: session.json, one message.json and two parts.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 4);
    let s = ".local/share/agentuse/project/5d41402abc4b2a76/session/01KEJG64007K3M9Q2W4X6Z8A1B-fuzz";
    let m = "01KEJG64Z87K3M9Q2W4X6Z8A1C";
    put(&format!("{s}/session.json"), p[0]);
    put(&format!("{s}/{m}/message.json"), p[1]);
    put(&format!("{s}/{m}/part/01KEJG65EW0000000000000001.json"), p[2]);
    put(&format!("{s}/{m}/part/01KEJG65YG0000000000000002.json"), p[3]);
    load_and_render(&[Agent::Agentuse]);
});
