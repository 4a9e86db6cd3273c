//! What the test stores hold, written down by hand: the oracle for "grep finds every message
//! in exactly its session". Nothing here comes from sessfs' parser.
//!
//! Spine lines were read straight off the raw fixture files (JSON text of user, assistant and
//! tool-result blocks, lines unique to the files listed); each entry names every mounted
//! session directory that holds a copy of that file (omp and pi share two real sessions,
//! indusagi and OpenClaw the same transcript). Seed lines are literals from the fixture
//! writers in `seeds_json.rs` and `agsh.rs`, grouped by the session that writes them.
#![allow(dead_code)]

/// `(directories, line)`: `directories` is `|`-separated `<agent>/<name>`.
pub const SPINE_LINES: &[(&str, &str)] = &[
    ("omp/ffae836b-9420-4060-ac13-7745215f90ff|pi/1fa031b8-444e-429d-bbaa-1db4cda65b5f|pi/ffae836b-9420-4060-ac13-7745215f90ff", "The user wants me to:"),
    ("pi/1fa031b8-444e-429d-bbaa-1db4cda65b5f", "Successfully wrote 134 bytes to JOKE.md"),
    ("pi/1fa031b8-444e-429d-bbaa-1db4cda65b5f", "Good, the file was created. Now let me read it."),
    ("pi/1fa031b8-444e-429d-bbaa-1db4cda65b5f", "## Why do programmers prefer dark mode?"),
    ("pi/e78b3ee4-41b3-4058-b539-974db8a89f48", "The user is asking me to look at an image file. Let me read it to see what it contains."),
    ("omp/ffae836b-9420-4060-ac13-7745215f90ff|pi/ffae836b-9420-4060-ac13-7745215f90ff", "* Map of file extensions to MIME types for common image formats"),
    ("omp/d703a1a9-1b7b-4fb1-b512-c9738b1fe617|omp/ffae836b-9420-4060-ac13-7745215f90ff|pi/d703a1a9-1b7b-4fb1-b512-c9738b1fe617|pi/ffae836b-9420-4060-ac13-7745215f90ff", "* TUI renderer for the coding agent"),
    ("omp/ffae836b-9420-4060-ac13-7745215f90ff|pi/ffae836b-9420-4060-ac13-7745215f90ff", "Let me get the rest of the tui-renderer file:"),
    ("omp/ffae836b-9420-4060-ac13-7745215f90ff|pi/ffae836b-9420-4060-ac13-7745215f90ff", "Now I have a complete picture. Let me do a deep analysis."),
    ("omp/ffae836b-9420-4060-ac13-7745215f90ff|pi/ffae836b-9420-4060-ac13-7745215f90ff", "ok, create a branch refactor"),
    ("omp/ffae836b-9420-4060-ac13-7745215f90ff|pi/ffae836b-9420-4060-ac13-7745215f90ff", "will this also allow us to test the agent core?"),
    ("omp/d703a1a9-1b7b-4fb1-b512-c9738b1fe617|pi/d703a1a9-1b7b-4fb1-b512-c9738b1fe617", "# Pi Coding Agent Themes"),
    ("omp/d703a1a9-1b7b-4fb1-b512-c9738b1fe617|pi/d703a1a9-1b7b-4fb1-b512-c9738b1fe617", "// Core UI (10 colors)"),
    ("omp/d703a1a9-1b7b-4fb1-b512-c9738b1fe617|pi/d703a1a9-1b7b-4fb1-b512-c9738b1fe617", "Now let me read a few of the selector files to understand the pattern:"),
    ("omp/d703a1a9-1b7b-4fb1-b512-c9738b1fe617|pi/d703a1a9-1b7b-4fb1-b512-c9738b1fe617", "- Uses `listContainer` as a child Container for the list items"),
    ("omp/d703a1a9-1b7b-4fb1-b512-c9738b1fe617|pi/d703a1a9-1b7b-4fb1-b512-c9738b1fe617", "alright, i think there's only one file left to fix up, tui-renderer.ts, read it in full"),
    ("omp/d703a1a9-1b7b-4fb1-b512-c9738b1fe617|pi/d703a1a9-1b7b-4fb1-b512-c9738b1fe617", "ok, i think our themes need explicit tokens for the thinking level border of editor"),
    ("omp/d703a1a9-1b7b-4fb1-b512-c9738b1fe617|pi/d703a1a9-1b7b-4fb1-b512-c9738b1fe617", "Themes allow you to customize the colors used throughout the coding agent TUI."),
    ("omp/d703a1a9-1b7b-4fb1-b512-c9738b1fe617|pi/d703a1a9-1b7b-4fb1-b512-c9738b1fe617", "// Markdown (9 colors)"),
    ("omp/d703a1a9-1b7b-4fb1-b512-c9738b1fe617|pi/d703a1a9-1b7b-4fb1-b512-c9738b1fe617", "- Uses `updateList()` method to rebuild the list on changes"),
    ("omp/d703a1a9-1b7b-4fb1-b512-c9738b1fe617|pi/d703a1a9-1b7b-4fb1-b512-c9738b1fe617", "Done. I've properly ported `user-message-selector.ts` to use the theme system:"),
    ("omp/d703a1a9-1b7b-4fb1-b512-c9738b1fe617|pi/d703a1a9-1b7b-4fb1-b512-c9738b1fe617", "truncated text must stop when it encounters a new line ..."),
    ("omp/d703a1a9-1b7b-4fb1-b512-c9738b1fe617|pi/d703a1a9-1b7b-4fb1-b512-c9738b1fe617", "i don't understand, does it capture the theme variable imported at creation time?"),
    ("omp/ffae836b-9420-4060-ac13-7745215f90ff|pi/ffae836b-9420-4060-ac13-7745215f90ff", "* Check if a file is an image based on its extension"),
    ("omp/d703a1a9-1b7b-4fb1-b512-c9738b1fe617|omp/ffae836b-9420-4060-ac13-7745215f90ff|pi/d703a1a9-1b7b-4fb1-b512-c9738b1fe617|pi/ffae836b-9420-4060-ac13-7745215f90ff", "private editorContainer: Container; // Container to swap between editor and selector"),
    ("omp/ffae836b-9420-4060-ac13-7745215f90ff|pi/ffae836b-9420-4060-ac13-7745215f90ff", "## Deep Analysis: `main.ts` and `tui-renderer.ts`"),
    ("omp/ffae836b-9420-4060-ac13-7745215f90ff|pi/ffae836b-9420-4060-ac13-7745215f90ff", "1. Agent lifecycle (prompt, abort, reset)"),
    ("omp/ffae836b-9420-4060-ac13-7745215f90ff|pi/ffae836b-9420-4060-ac13-7745215f90ff", "i would only want e2e tests for AgentSession, anything else is shitty."),
    ("omp/ffae836b-9420-4060-ac13-7745215f90ff|pi/ffae836b-9420-4060-ac13-7745215f90ff", "how do we set things on the agentsession? all i see is getters"),
    ("indusagi/8555a0a4-0b79-459d-939c-e17cdbbf4fe2|openclaw/8555a0a4-0b79-459d-939c-e17cdbbf4fe2", "Logs: openclaw logs --follow"),
    ("indusagi/8555a0a4-0b79-459d-939c-e17cdbbf4fe2|openclaw/8555a0a4-0b79-459d-939c-e17cdbbf4fe2", "# SOUL.md - Who You Are"),
    ("indusagi/8555a0a4-0b79-459d-939c-e17cdbbf4fe2|openclaw/8555a0a4-0b79-459d-939c-e17cdbbf4fe2", "# USER.md - About Your Human"),
    ("claude/agentlogs_compact", "Let me analyze the conversation chronologically:"),
    ("claude/agentlogs_crud", "I'll help you create, read, modify, and delete a JOKE.md file. Let me break this down into steps:"),
    ("claude/agentlogs_crud", "Now let me create the JOKE.md file:"),
    ("claude/agentlogs_images", "go to google.com, make a screenshoot, look at it, and tell me what you think"),
    ("claude/agentlogs_images", "I'll navigate to Google, take a screenshot, and share my thoughts."),
    ("claude/agentlogs_images", "Good, I've navigated to Google. Now let me take a screenshot."),
    ("claude/agentlogs_subagent", "ask a subagent how he's doing"),
    ("claude/agentlogs_subagent", "This doesn't really fit any of the specialized agent types described:"),
    ("claude/agentlogs_subagent", "I'll launch a general-purpose agent and check in on them!"),
    ("claude/agentlogs_todos", "create a todo list with 3 items, then check off each step by step then clear it"),
    ("claude/agentlogs_todos", "I'll create a todo list with 3 items, check them off step by step, and then clear it."),
    ("claude/agentlogs_todos", "Now I'll mark the first task as in progress and complete it:"),
    ("claude/claude-code-log_edge_cases", "Great example! Markdown formatting is indeed supported. Here are some more examples:"),
    ("claude/claude-code-log_representative_messages", "Hello Claude! Can you help me understand how Python decorators work?"),
    ("claude/claude-code-log_representative_messages", "Here's a simple example:"),
    ("claude/claude-code-log_representative_messages", "Great! Can you also show me how to create a decorator that takes parameters?"),
    ("claude/claude-code-log_representative_messages", "Perfect! I've created an example of a parameterized decorator. Here's how it works:"),
    ("claude/tool_heavy", "start phoenix in background"),
    ("claude/tool_heavy", "Phoenix server is starting in the background."),
    ("claude/subagent", "I'll research the setup options and then draft beads for you."),
    ("claude/subagent", "Now let me check the current project's mix.exs to see what's already set up."),
    ("claude/258c7280-ae70-4798-800f-63464d01a85d", "Now I have a clear picture. The epic `spotter-gqc` has 3 tasks:"),
    ("claude/258c7280-ae70-4798-800f-63464d01a85d", "Let me read the key source files first."),
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
