//! Aider chat histories, written here the way Aider's `InputOutput` writes them
//! (`aider/io.py` at Aider-AI/aider 5dc9490b: the start heading, `user_input`, `ai_output`,
//! `tool_output`, multi-line output), in two projects under the home, rendered with
//! `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below ([`Writer`]), never from sessfs' parser.

mod common;

use common::stores::{self, meta};
use common::{stdout, Home, Mount};
use std::path::Path;

/// A credential planted where Aider users keep keys: it must never be shown.
const SECRET: &str = "sk-PLANTEDaiderSECRETdoNotRead0000";

/// One history file being written, and what each session of it must show.
#[derive(Default)]
struct Writer {
    text: String,
    input: String,
    sessions: Vec<Written>,
}

#[derive(Default)]
struct Written {
    /// `aider/<id>`.
    dir: String,
    lines: Vec<String>,
    outputs: Vec<String>,
    /// input (sent + cache hits), output, cache reads, cache writes, USD.
    usage: (u64, u64, u64, u64, f64),
}

impl Writer {
    /// `InputOutput.__init__`: `\n# aider chat started at <time>\n\n`.
    fn start(&mut self, project: &str, when: &str) {
        self.text
            .push_str(&format!("\n# aider chat started at {when}\n\n"));
        self.sessions.push(Written {
            dir: format!(
                "aider/{project}-{}",
                when.replacen(' ', "T", 1).replace(':', "-")
            ),
            ..Written::default()
        });
    }

    fn cur(&mut self) -> &mut Written {
        self.sessions.last_mut().expect("a session")
    }

    /// `user_input`: each line `#### <line>`, two spaces closing each; and the input
    /// history entry prompt_toolkit writes.
    fn prompt(&mut self, when: &str, text: &str) {
        let body = text.lines().collect::<Vec<_>>().join("  \n#### ");
        self.text.push_str(&format!("\n#### {body}  \n"));
        self.input.push_str(&format!("\n# {when}\n"));
        for l in text.lines() {
            self.input.push_str(&format!("+{l}\n"));
        }
        for l in text.lines().filter(|l| !l.trim().is_empty()) {
            self.cur().lines.push(l.to_string());
        }
    }

    /// `ai_output`: `\n<text>\n\n`.
    fn reply(&mut self, text: &str, check: &[&str]) {
        self.text.push_str(&format!("\n{}\n\n", text.trim()));
        for l in check {
            self.cur().lines.push(l.to_string());
        }
    }

    /// `tool_output`: `> <text>  ` (a multi-line text keeps its other lines unprefixed).
    fn out(&mut self, text: &str) {
        self.text.push_str(&format!("> {}  \n", text.trim()));
        for l in text.lines().filter(|l| !l.trim().is_empty()) {
            self.cur().outputs.push(l.trim().to_string());
        }
    }

    /// Output before the first prompt: the start-up banner, shown as an event.
    fn banner(&mut self, text: &str) {
        self.text.push_str(&format!("> {text}  \n"));
        self.cur().lines.push(text.to_string());
    }

    /// `show_usage_report`, with what it adds to the session.
    fn tokens(&mut self, sent: u64, received: u64, hit: u64, cost: f64, shown: &str) {
        self.text.push_str(&format!("> {shown}  \n"));
        let u = &mut self.cur().usage;
        u.0 += sent + hit;
        u.1 += received;
        u.2 += hit;
        u.4 += cost;
    }
}

fn write() -> Home {
    let home = Home::empty();
    let h = home.path();

    let mut w = Writer::default();
    w.start("webapp", "2026-03-01 10:00:00");
    w.banner("Aider v0.86.1");
    w.banner("Main model: anthropic/claude-sonnet-4-5 with diff edit format");
    w.prompt("2026-03-01 10:00:05.123456", "/add src/app.py");
    w.out("Added src/app.py to the chat");
    w.prompt(
        "2026-03-01 10:01:00.000001",
        "Webapp: make greet say hello\nto the caller by name",
    );
    w.reply(
        "<think>\nWebapp thinking: greet needs a name parameter.\n</think>\n\nWebapp reply: greet now takes a name.\n\n#### Webapp reply heading\n\nsrc/app.py\n```python\n<<<<<<< SEARCH\ndef greet():\n    return \"hi\"\n=======\ndef greet(name):\n    return f\"hello {name}\"\n>>>>>>> REPLACE\n```\n\nWebapp reply: done.",
        &[
            "Webapp thinking: greet needs a name parameter.",
            "Webapp reply: greet now takes a name.",
            "Webapp reply heading",
            "def greet(name):",
            "Webapp reply: done.",
        ],
    );
    w.tokens(
        2400,
        310,
        1000,
        0.0123,
        "Tokens: 2.4k sent, 1.0k cache hit, 310 received. Cost: $0.0123 message, $0.0123 session.",
    );
    w.out("Applied edit to src/app.py");
    w.out("Commit 1a2b3c4 feat: greet by name");
    w.prompt("2026-03-01 10:02:00.5", "/run pytest -q");
    w.out("Add 0.1k tokens of command output to the chat? (Y)es/(N)o [Yes]: y");
    w.out("Added 3 lines of output to the chat.");

    w.start("webapp", "2026-03-02 09:00:00");
    w.prompt(
        "2026-03-02 09:00:10.0",
        "Webapp second: why does the test fail?",
    );
    w.reply(
        "Webapp second reply: the fixture is missing.\n\n> a quoted hint in the reply",
        &[
            "Webapp second reply: the fixture is missing.",
            "a quoted hint in the reply",
        ],
    );
    w.tokens(
        13000,
        1500,
        0,
        0.05,
        "Tokens: 13k sent, 1.5k received. Cost: $0.05 message, $0.06 session.",
    );
    w.out("# 1 SEARCH/REPLACE block failed to match!\n\nWebapp failure detail line\nDon't re-send them.");
    let webapp = w;

    let mut a = Writer::default();
    a.start("api", "2026-03-01 10:00:00");
    a.banner("Model: openai/gpt-4.1 with whole edit format");
    a.prompt("2026-03-01 10:00:30.0", "Api: list the endpoints");
    a.reply(
        "Api reply: there are two endpoints.",
        &["Api reply: there are two endpoints."],
    );
    a.tokens(
        999,
        42,
        0,
        0.001,
        "Tokens: 999 sent, 42 received. Cost: $0.0010 message, $0.0010 session.",
    );
    let api = a;

    for (dir, w) in [("work/webapp", &webapp), ("work/nested/api", &api)] {
        stores::put(h, &format!("{dir}/.aider.chat.history.md"), &w.text);
        stores::put(h, &format!("{dir}/.aider.input.history"), &w.input);
        stores::put(
            h,
            &format!("{dir}/.env"),
            format!("OPENAI_API_KEY={SECRET}\n"),
        );
        stores::put(
            h,
            &format!("{dir}/.aider.conf.yml"),
            format!("openai-api-key: {SECRET}\n"),
        );
    }
    let mut all = webapp.sessions;
    all.extend(api.sessions);
    WRITTEN.with(|c| *c.borrow_mut() = all);
    home
}

thread_local! {
    static WRITTEN: std::cell::RefCell<Vec<Written>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn check_tree(tree: &Path) {
    let written = WRITTEN.with(|c| std::mem::take(&mut *c.borrow_mut()));
    assert_eq!(stores::entries(tree, "aider"), written.len());
    for s in &written {
        stores::assert_session_holds(tree, &s.dir, &s.lines, &s.outputs);
        let (i, o, cr, cw, usd) = s.usage;
        stores::assert_cost(tree, &s.dir, (i - cr, o, cr, cw, usd));
    }
    // The edit block is a diff of the file, with the `Applied edit` line as its output.
    let edit = std::fs::read_dir(tree.join("aider/webapp-2026-03-01T10-00-00/tools"))
        .expect("tools")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with("-edit.md"))
        .expect("an edit call");
    let text = std::fs::read_to_string(edit).expect("edit file");
    assert!(text.contains("-    return \"hi\""), "{text}");
    assert!(text.contains("+    return f\"hello {name}\""), "{text}");
    assert!(text.contains("Applied edit to src/app.py"), "{text}");
    // Prompt times come from the input history; the cwd is the project.
    let m = meta(tree, "aider/webapp-2026-03-01T10-00-00");
    assert!(
        m["cwd"].as_str().unwrap_or("").ends_with("work/webapp"),
        "{m}"
    );
    assert_eq!(m["model"], "anthropic/claude-sonnet-4-5");
    assert_eq!(m["title"], "Webapp: make greet say hello");
    let api = meta(tree, "aider/api-2026-03-01T10-00-00");
    assert_eq!(api["model"], "openai/gpt-4.1");
    let t = std::fs::read_to_string(tree.join("aider/webapp-2026-03-01T10-00-00/messages.jsonl"))
        .expect("messages");
    let first_prompt_time =
        chrono::NaiveDateTime::parse_from_str("2026-03-01 10:00:05.123456", "%Y-%m-%d %H:%M:%S%.f")
            .expect("time")
            .and_local_timezone(chrono::Local)
            .earliest()
            .expect("local")
            .with_timezone(&chrono::Utc)
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string();
    assert!(
        t.contains(&first_prompt_time),
        "{first_prompt_time} not in {t}"
    );
    stores::assert_nowhere(tree, SECRET);
}

#[test]
fn rendered_aider_sessions_hold_their_lines_usage_once_and_no_secret() {
    let home = write();
    let before = home.snapshot();
    let r = stores::render(&home, "sessfs-aider", &["AIDER_CHAT_HISTORY_FILE"]);
    check_tree(&r.tree);
    assert!(before == home.snapshot(), "sessfs changed a native file");
    stores::assert_list_hides(&home, SECRET, &["AIDER_CHAT_HISTORY_FILE"]);
}

#[test]
fn mounted_aider_greps_sizes_erofs_live_and_store_untouched() {
    common::require_fuse();
    let home = write();
    {
        let m = Mount::new(&home, &[]);
        check_tree(m.path());
        common::assert_sizes_agree(m.path(), &["aider"], 6);
        let before = home.snapshot();
        let file = home.path().join("work/webapp/.aider.chat.history.md");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .expect("open");
        use std::io::Write;
        write!(f, "\n#### Webapp live: one more thing  \n").expect("append");
        let transcript = m
            .path()
            .join("aider/webapp-2026-03-02T09-00-00/transcript.md");
        stores::assert_within_a_second("the appended prompt", || {
            stores::file_contains(&transcript, "Webapp live")
        });
        stores::assert_erofs(&m, "aider/webapp-2026-03-02T09-00-00/meta.json");
        common::assert_sizes_agree(m.path(), &["aider"], 6);
        let mut want = before;
        want.insert(file.clone(), std::fs::read(&file).expect("read"));
        assert!(want == home.snapshot(), "sessfs changed a native file");
    }
    let list = home.sessfs(&["list", "--json"]);
    assert!(!stdout(&list).contains(SECRET));
}

/// The Aider store's glance (each project's history file; projects are its roots): with
/// nothing changed a search lists no store; a prompt appended, a session started in the
/// file, a new project and a history file deleted are each found by the next search.
#[test]
fn aider_changes_are_found_by_the_next_search() {
    use common::logged_search;
    use std::collections::BTreeSet;
    use std::io::Write;
    let set =
        |ids: &[&str]| -> BTreeSet<String> { ids.iter().map(|id| format!("aider/{id}")).collect() };
    let home = Home::empty();
    let h = home.path();
    let file = h.join("work/glance/.aider.chat.history.md");
    let mut w = Writer::default();
    w.start("glance", "2026-03-01 10:00:00");
    w.prompt("2026-03-01 10:00:05.000001", "the aiderone question");
    w.reply("Glance reply one.", &[]);
    w.start("glance", "2026-03-02 10:00:00");
    w.prompt("2026-03-02 10:00:05.000001", "the aidertwo question");
    stores::put(h, "work/glance/.aider.chat.history.md", &w.text);
    let (one, two) = ("glance-2026-03-01T10-00-00", "glance-2026-03-02T10-00-00");
    assert_eq!(logged_search(&home, "aiderone"), (set(&[one]), false));
    assert_eq!(logged_search(&home, "aidertwo"), (set(&[two]), true));
    // A prompt appended to the last session.
    let append = |file: &Path, text: &str| {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(file)
            .expect("open");
        f.write_all(text.as_bytes()).expect("append");
    };
    append(&file, "\n#### an appendedaider prompt  \n");
    assert_eq!(logged_search(&home, "appendedaider").0, set(&[two]));
    assert_eq!(logged_search(&home, "appendedaider"), (set(&[two]), true));
    // A session started in the same file.
    append(
        &file,
        "\n# aider chat started at 2026-03-03 10:00:00\n\n\n#### the aiderthree question  \n",
    );
    let three = "glance-2026-03-03T10-00-00";
    assert_eq!(logged_search(&home, "aiderthree").0, set(&[three]));
    assert_eq!(logged_search(&home, "aiderthree"), (set(&[three]), true));
    // A new project.
    let other = stores::put(
        h,
        "work/other/.aider.chat.history.md",
        "\n# aider chat started at 2026-03-04 10:00:00\n\n\n#### the aiderfour question  \n",
    );
    let four = "other-2026-03-04T10-00-00";
    assert_eq!(logged_search(&home, "aiderfour").0, set(&[four]));
    assert_eq!(logged_search(&home, "aiderfour"), (set(&[four]), true));
    // A history file deleted.
    std::fs::remove_file(&other).expect("remove");
    assert_eq!(logged_search(&home, "aiderfour").0, BTreeSet::new());
    assert_eq!(
        logged_search(&home, "question"),
        (set(&[one, two, three]), true)
    );
}
