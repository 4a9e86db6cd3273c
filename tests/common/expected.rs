//! What the test stores hold, written down by hand: the oracle for "grep finds every message
//! in exactly its session". Nothing here comes from sessfs' parser.
//!
//! Spine lines are the text the fixture files hold (`fixtures/shapes/` and `fixtures/home/`:
//! user, assistant and tool-result text, lines unique to the files listed); each entry names
//! every mounted session directory that holds a copy of that file (omp and pi share the two
//! v1 files, indusagi and OpenClaw the same transcript, and a cut copy of the branched pi
//! file mounts as `<id>~2`). Seed lines are literals from the fixture
//! writers in `seeds_json.rs` and `agsh.rs`, grouped by the session that writes them.
#![allow(dead_code)]

/// `(directories, line)`: `directories` is `|`-separated `<agent>/<name>`.
pub const SPINE_LINES: &[(&str, &str)] = &[
    ("pi/b4a7c3e2-5d1f-4e60-8a90-1c2d3e4f5a6b|pi/b4a7c3e2-5d1f-4e60-8a90-1c2d3e4f5a6b~2", "write a short poem about rivers to river.txt"),
    ("pi/b4a7c3e2-5d1f-4e60-8a90-1c2d3e4f5a6b|pi/b4a7c3e2-5d1f-4e60-8a90-1c2d3e4f5a6b~2", "Successfully wrote 50 bytes to riddle.txt"),
    ("pi/b4a7c3e2-5d1f-4e60-8a90-1c2d3e4f5a6b|pi/b4a7c3e2-5d1f-4e60-8a90-1c2d3e4f5a6b~2", "rm -f river.txt lake.txt riddle.txt"),
    ("pi/c7d0e1f2-3a4b-4c5d-8e6f-708192a3b4c5", "create NOTES.md with a list of three teas, read it back, add a fourth tea, then delete the file"),
    ("pi/c7d0e1f2-3a4b-4c5d-8e6f-708192a3b4c5", "Successfully wrote 38 bytes to NOTES.md"),
    ("pi/c7d0e1f2-3a4b-4c5d-8e6f-708192a3b4c5", "Done: created `NOTES.md` with three teas, read it, added oolong, and deleted it."),
    ("pi/e5f6a7b8-9c0d-4e1f-8a2b-3c4d5e6f7a8b", "The user wants me to describe an image file; I will read it first."),
    ("pi/e5f6a7b8-9c0d-4e1f-8a2b-3c4d5e6f7a8b", "It is a small paper boat drawn in blue ink."),
    ("omp/aa11bb22-cc33-4d44-8e55-ff6677889900|pi/aa11bb22-cc33-4d44-8e55-ff6677889900", "read lib/atlas.ts and lib/render.ts in full and plan how to split them"),
    ("omp/aa11bb22-cc33-4d44-8e55-ff6677889900|pi/aa11bb22-cc33-4d44-8e55-ff6677889900", "continue after the checkpoint"),
    ("omp/aa11bb22-cc33-4d44-8e55-ff6677889900|pi/aa11bb22-cc33-4d44-8e55-ff6677889900", "Switched to a new branch 'split'"),
    ("omp/aa11bb22-cc33-4d44-8e55-ff6677889900|pi/aa11bb22-cc33-4d44-8e55-ff6677889900", "The split is on branch `split`."),
    ("omp/bb22cc33-dd44-4e55-8f66-0011223344aa|pi/bb22cc33-dd44-4e55-8f66-0011223344aa", "read docs/colors.md and list every colour token it defines"),
    ("omp/bb22cc33-dd44-4e55-8f66-0011223344aa|pi/bb22cc33-dd44-4e55-8f66-0011223344aa", "It defines three tokens: accent, muted and border."),
    ("omp/bb22cc33-dd44-4e55-8f66-0011223344aa|pi/bb22cc33-dd44-4e55-8f66-0011223344aa", "Done: border is now one step darker."),
    ("indusagi/0c1a0c1a-7e57-4abc-9def-0123456789ab|openclaw/0c1a0c1a-7e57-4abc-9def-0123456789ab", "Morning! I read the two notes that exist; the memory files are not there yet."),
    ("indusagi/0c1a0c1a-7e57-4abc-9def-0123456789ab|openclaw/0c1a0c1a-7e57-4abc-9def-0123456789ab", "A made-up note for the claw box."),
    ("claude/images", "Why is the left margin of this drawing so wide?"),
    ("claude/images", "The canvas has a fixed 120px gutter on the left."),
    ("claude/manual_compact", "is the colour picker done?"),
    ("claude/manual_compact", "Yes: the colour picker is merged and released."),
    ("claude/representative", "Hello Claude! Can you help me understand how Python decorators wrap a function?"),
    ("claude/representative", "Thanks, that makes the wrapping clear"),
    ("claude/rewind_compact", "Harvest what is ripe"),
    ("claude/rewind_compact", "Beans planted"),
    ("claude/sidechain", "Ask a helper agent how the kiln is doing"),
    ("claude/sidechain", "The helper says the kiln is holding steady."),
    ("claude/streamed_parallel", "the shop server will not start on port 4000"),
    ("claude/streamed_parallel", "Let me look at the config and at what holds the port."),
    ("claude/5e551f5e-0000-4000-8000-00000000a7a5", "Make the atlas importer stream its input instead of loading it whole"),
    ("claude/5e551f5e-0000-4000-8000-00000000a7a5", "Part 35 now reads line by line."),
    ("claude/5e551f5e-0000-4000-8000-00000000a7a5", "The importer now shows a progress bar."),
    ("claude/5e551f5e-0000-4000-8000-00000000a7a5", "A start hook prints JSON with an additionalContext field."),
    ("claude/10a90000-0000-4000-8000-00000000b16f", "long session round 399: read part 399"),
    ("claude/10a90000-0000-4000-8000-00000000b16f", "Reading part 0 now."),
    ("codex/019e1a2b-3c4d-7e5f-8a6b-7c8d9e0f1a2b", "add a --dry-run flag to scripts/deploy.sh that prints the commands instead of running them"),
    ("gemini/8c9d0e1f-2a3b-4c5d-8e6f-7a8b9c0d1e2f", "why does the login test fail after the redirect change?"),
    ("copilot/4e5f6a7b-8c9d-4e0f-9a1b-2c3d4e5f6a7b", "list the TODO comments in src and say which one is oldest"),
    ("pi/3f1c2a9e-5b7d-4e60-9a18-c2d4e6f80a11", "The CSV export in src/export.py drops the last row. Can you fix it?"),
    ("pi/3f1c2a9e-5b7d-4e60-9a18-c2d4e6f80a11", "for i in range(len(rows) - 1):"),
    ("pi/3f1c2a9e-5b7d-4e60-9a18-c2d4e6f80a11", "Just fix it directly."),
    ("pi/3f1c2a9e-5b7d-4e60-9a18-c2d4e6f80a11", "Successfully replaced text in src/export.py."),
    ("pi/3f1c2a9e-5b7d-4e60-9a18-c2d4e6f80a11", "Done: the loop is replaced by `writer.writerows(rows)`, which writes every row."),
    ("pi/3f1c2a9e-5b7d-4e60-9a18-c2d4e6f80a11", "A test with three rows should expect a header plus three data lines."),
    ("omp/01966d2e-7a3b-7c41-9d52-4e8f0a1b2c3d", "`demo stats` only prints a table. Add a --json flag that prints the same numbers as JSON."),
    ("omp/01966d2e-7a3b-7c41-9d52-4e8f0a1b2c3d", "Find where the stats subcommand is defined and how it formats output."),
    ("omp/01966d2e-7a3b-7c41-9d52-4e8f0a1b2c3d", "Works. Please mention the flag in the README too."),
    ("indusagi/7b2e9c40-1d3f-4a85-b6c7-d8e9f0a1b2c3", "Every docker build reinstalls all npm packages, even when I only change a source file. Why?"),
    ("indusagi/7b2e9c40-1d3f-4a85-b6c7-d8e9f0a1b2c3", "Likely COPY . . before npm ci, which invalidates the layer cache on any change."),
    ("indusagi/7b2e9c40-1d3f-4a85-b6c7-d8e9f0a1b2c3", "Makes sense, go ahead and change it."),
    ("indusagi/7b2e9c40-1d3f-4a85-b6c7-d8e9f0a1b2c3", "Successfully replaced text in Dockerfile."),
    ("indusagi/7b2e9c40-1d3f-4a85-b6c7-d8e9f0a1b2c3", "Done. Rebuilds after a source-only change now reuse the cached `npm ci` layer."),
    ("claude/7f3c2a1e-5b4d-4c6e-9a8b-0d1e2f3a4b5c", "About one login in five bounces back to /login even with the right password. Can you find out why?"),
    ("claude/7f3c2a1e-5b4d-4c6e-9a8b-0d1e2f3a4b5c", "I'll look at the login handler and the session middleware side by side."),
    ("claude/7f3c2a1e-5b4d-4c6e-9a8b-0d1e2f3a4b5c", "The cookie flags are fine."),
];

/// `(agent, lines)`: every line of one group is in the same session of that agent, and
/// different groups are different sessions.
pub const SEED_GROUPS: &[(&str, &[&str])] = &[
    (
        "agentuse",
        &[
            "I should run the test suite before reading the router.",
            "Let me start by running the tests.",
            "The tests pass. I'll delegate a summary of the diff to the summarizer.",
            "Review complete: one issue found in router path validation.",
            "No lint warnings in the router module.",
        ],
    ),
    ("agentuse", &["Hello from the old global layout."]),
    (
        "agsh",
        &[
            "agsh fixture: looking for the loader first.",
            "agsh fixture: renamed load_config to load_settings.",
        ],
    ),
    ("agsh", &["meka fixture: delegating a survey."]),
    ("agsh", &["meka fixture child: 3 slow tests found"]),
    (
        "atsf",
        &[
            "The login page crashes when the password field is empty; screenshot attached.",
            "I'll read the login form and fix the validation.",
            "The spec expected a trimmed password; both login tests now pass.",
        ],
    ),
    (
        "atsf",
        &["Signup now shares the validate() helper from login.ts."],
    ),
    (
        "atsf",
        &[
            "How does the token bucket in ratelimit.go refill?",
            "Tokens refill lazily: each Take adds elapsed × rate, capped at the burst size.",
        ],
    ),
];
