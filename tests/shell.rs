//! Living with sessfs from a shell: completion scripts that bash loads and that complete
//! agents and session ids, the manual page, the login service's unit, date words.

mod common;

use common::{bin, stderr, stdout, Home};
use std::path::Path;
use std::process::Command;

/// Two pi sessions with ids chosen here, so the expected completions are this list.
const PI_IDS: [&str; 2] = [
    "7a000000-0000-4000-8000-00000000000a",
    "7b000000-0000-4000-8000-00000000000b",
];

fn home_with_pi() -> Home {
    let home = Home::empty();
    let dir = home.path().join(".pi/agent/sessions/--home-u-proj--");
    std::fs::create_dir_all(&dir).unwrap();
    for (i, id) in PI_IDS.iter().enumerate() {
        let text = format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2026-05-0{d}T10:00:00.000Z\",\"cwd\":\"/home/u/proj\"}}\n\
             {{\"type\":\"message\",\"id\":\"m1\",\"parentId\":null,\"timestamp\":\"2026-05-0{d}T10:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"hello {i}\"}}]}}}}\n",
            d = i + 1
        );
        std::fs::write(
            dir.join(format!("2026-05-0{}T10-00-00-000Z_{id}.jsonl", i + 1)),
            text,
        )
        .unwrap();
    }
    home
}

/// What bash's completion function offers for the words of `line` (the last one being
/// completed), after loading `sessfs completions bash`.
fn bash_complete(home: &Home, words: &[&str]) -> Vec<String> {
    let script = home.sessfs(&["completions", "bash"]);
    assert!(script.status.success(), "{}", stderr(&script));
    let file = home.path().join("sessfs.bash");
    std::fs::write(&file, &script.stdout).unwrap();
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        "source '{}' || exit 9\n\
         complete -p sessfs >/dev/null || exit 8\n\
         COMP_WORDS=({})\n\
         COMP_CWORD={}\n\
         COMP_LINE=\"${{COMP_WORDS[*]}}\"\n\
         COMP_POINT=${{#COMP_LINE}}\n\
         _clap_complete_sessfs sessfs \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        file.display(),
        quoted.join(" "),
        words.len() - 1
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(program)
        .env("HOME", home.path())
        .env("PATH", path_with_bin())
        .output()
        .expect("run bash");
    assert!(out.status.success(), "bash: {}", stderr(&out));
    stdout(&out)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.trim_end().to_string())
        .collect()
}

fn path_with_bin() -> String {
    let dir = bin().parent().unwrap().to_path_buf();
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn bash_loads_the_completions_and_they_complete_agents_and_session_ids() {
    let home = home_with_pi();
    let agents = bash_complete(&home, &["sessfs", "list", "cl"]);
    assert_eq!(agents, ["claude", "cline"], "agents starting with cl");
    let commands = bash_complete(&home, &["sessfs", "serv"]);
    assert_eq!(commands, ["service"]);
    let ids = bash_complete(&home, &["sessfs", "show", "pi:7"]);
    let want: Vec<String> = PI_IDS.iter().map(|id| format!("pi:{id}")).collect();
    assert_eq!(ids, want, "the pi sessions of this home");
    let one = bash_complete(&home, &["sessfs", "diff", "pi:7a"]);
    assert_eq!(one, [format!("pi:{}", PI_IDS[0])]);
}

#[test]
fn zsh_and_fish_scripts_are_written_and_an_unknown_shell_is_refused() {
    let home = Home::empty();
    for shell in ["zsh", "fish"] {
        let out = home.sessfs(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        assert!(
            stdout(&out).contains("COMPLETE="),
            "{shell} script calls back"
        );
    }
    let out = home.sessfs(&["completions", "tcsh"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("tcsh"), "{}", stderr(&out));
}

#[test]
fn man_renders_the_page_with_every_command() {
    let home = Home::empty();
    let page = home.sessfs(&["man"]);
    assert!(page.status.success(), "{}", stderr(&page));
    let file = home.path().join("sessfs.1");
    std::fs::write(&file, &page.stdout).unwrap();
    let out = Command::new("man")
        .args(["-l", "-P", "cat"])
        .arg(&file)
        .env("MANWIDTH", "100")
        .output()
        .expect("man is installed (scripts/setup installs man-db)");
    assert!(out.status.success(), "man: {}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("NAME") && text.contains("sessfs"), "{text}");
    for cmd in [
        "mount",
        "umount",
        "list",
        "show",
        "search",
        "cost",
        "render",
        "doctor",
        "service",
        "completions",
        "export",
    ] {
        assert!(
            text.lines()
                .any(|l| l.trim_start().starts_with(&format!("sessfs-{cmd}("))
                    || l.trim_start().starts_with(cmd)),
            "{cmd} missing from the page:\n{text}"
        );
    }
}

#[test]
fn service_install_writes_a_unit_systemd_accepts_and_uninstall_removes_it() {
    let home = Home::empty();
    let dir = home.path().join("my sessions");
    let out = home
        .command(&["service", "install", "--no-enable", dir.to_str().unwrap()])
        .env("CODEX_HOME", "/srv/codex home")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let unit = home.path().join(".config/systemd/user/sessfs.service");
    let text = std::fs::read_to_string(&unit).expect("unit written");
    assert!(dir.is_dir(), "the mountpoint is created");
    let exe = std::fs::canonicalize(bin()).unwrap();
    assert!(
        text.contains(&format!(
            "ExecStart=\"{}\" \"mount\" \"--foreground\" \"{}\"",
            exe.display(),
            dir.display()
        )),
        "{text}"
    );
    assert!(
        text.contains("Environment=\"CODEX_HOME=/srv/codex home\""),
        "{text}"
    );
    let runtime = home.path().join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    let verify = Command::new("systemd-analyze")
        .args(["verify", "--user"])
        .arg(&unit)
        .env("HOME", home.path())
        .env("XDG_RUNTIME_DIR", &runtime)
        .output()
        .expect("systemd-analyze is installed (scripts/setup installs systemd)");
    assert!(
        verify.status.success(),
        "systemd-analyze verify: {}{}",
        stdout(&verify),
        stderr(&verify)
    );
    let status = home.sessfs(&["service", "status"]);
    assert!(status.status.success(), "{}", stderr(&status));
    let s = stdout(&status);
    assert!(
        s.contains("installed") && s.contains("is not mounted"),
        "{s}"
    );
    assert!(
        s.contains(&dir.display().to_string()),
        "status names the unit's dir: {s}"
    );
    // Uninstalling with another directory is a mistake, said in one line.
    let wrong = home.sessfs(&["service", "uninstall", "/"]);
    assert!(!wrong.status.success());
    assert_eq!(
        stderr(&wrong).trim_end().lines().count(),
        1,
        "{}",
        stderr(&wrong)
    );
    let gone = home.sessfs(&["service", "uninstall"]);
    assert!(gone.status.success(), "{}", stderr(&gone));
    assert!(!unit.exists());
    let again = home.sessfs(&["service", "uninstall"]);
    assert!(!again.status.success());
    assert!(stderr(&again).contains("no sessfs service is installed"));
}

#[test]
fn since_takes_date_words_and_ages() {
    let home = home_with_pi();
    // Both fixture sessions are from May 2026; ages are counted back from now.
    let count = |args: &[&str]| -> usize {
        let mut all = vec!["list", "--json"];
        all.extend_from_slice(args);
        let out = home.sessfs(&all);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        serde_json::from_slice::<Vec<serde_json::Value>>(&out.stdout)
            .unwrap()
            .len()
    };
    assert_eq!(count(&[]), 2);
    assert_eq!(count(&["--since", "today"]), 0);
    assert_eq!(count(&["--until", "today"]), 2);
    assert_eq!(count(&["--until", "yesterday"]), 2);
    assert_eq!(count(&["--since", "2026-05-02"]), 1);
    assert_eq!(count(&["--since", "100000d"]), 2);
    assert_eq!(count(&["--since", "1h"]), 0);
    let bad = home.sessfs(&["list", "--since", "7y"]);
    assert!(!bad.status.success());
    let e = stderr(&bad);
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    assert!(e.contains("7d"), "the line says what works: {e}");
}

#[test]
fn the_readme_shows_cargo_install() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    assert!(readme.contains("cargo install --path ."));
}
