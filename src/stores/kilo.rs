//! Kilo Code: the VS Code extension's task tree and the Kilo CLI's database, one agent
//! directory (`kilo/`).
//!
//! Kilo Code keeps sessions in two formats. The extension's older builds, a fork of Roo Code,
//! write one JSON tree per task under `globalStorage/kilocode.kilo-code/tasks/`, read by
//! [`super::cline`] (its `Dialect::Kilo`). The Kilo CLI, a fork of OpenCode that the newer
//! extension runs as its backend, keeps OpenCode's storage under its own name: the same
//! `session`, `message` and `part` tables with the same JSON in `message.data` and
//! `part.data`, in `$XDG_DATA_HOME/kilo/kilo.db`. So this store is the two readers side by
//! side, the CLI's being [`super::opencode`] with Kilo's [`Flavor`]: formats that share a
//! lineage share code.
//!
//! Read from Kilo's own source, Kilo-Org/kilocode:
//!
//! - `packages/opencode/src/storage/db.ts` @ `f10b24fca408dd2c45eb39eeb9f820a8a1f7865a`: the
//!   database is `kilo.db` in `Global.Path.data`, opened in WAL mode;
//! - `packages/core/src/database/database.ts` @ `2770028959952965af9645f632474e4e2d8c1b0e`:
//!   `KILO_DB` names the file (absolute, or relative to the data dir; `:memory:` is no
//!   file); the `latest`, `beta` and `prod` channels use `kilo.db`, other channels
//!   `opencode-<channel>.db`, which later builds rename `kilo-<channel>.db` and still open
//!   when only the old name exists: all three names are read;
//! - `packages/opencode/src/global/paths.ts` @ `a50a990e207b68b91e7b341b567e0d4c5a8b46a7`:
//!   the data dir is `$XDG_DATA_HOME/kilo`, else `~/.local/share/kilo`, on every OS (macOS
//!   and Windows included: Kilo falls back to `~/.local/share`, not the platform folders);
//! - `packages/core/src/database/schema.gen.ts` @ `65fc0996e83c48d173ee57e4bdcbe3a561c5b22c`
//!   (the DDL of `fixtures/schema/kilo-2026-08.sql`) and
//!   `packages/opencode/src/session/session.sql.ts` @ `7a8a7897b7bacf399487aa098ed32c6c11cf834b`:
//!   OpenCode's tables, plus Kilo's `kilo_board`/`kilo_board_message`;
//! - `packages/opencode/src/session/message-v2.ts` @ `08104fbccb17b4b60a996e0cf063aa8d761ddd62`:
//!   OpenCode's message and part shapes; Kilo adds only `editorContext` (open tabs, the
//!   active file) to a user message.
//!
//! Design decisions and why:
//! - **One store, two readers.** Both readers are given every root (the extension's reader
//!   all but database files), so a `--store` path may be either kind; a reader finds nothing
//!   in the other's roots (no task directories in the data dir, no `kilo*.db` or
//!   `storage/session/` in globalStorage). A session is the CLI's when it is a database row
//!   (it has a key) or a legacy `storage/session/…/<id>.json` file; extension tasks are
//!   directories.
//! - **Ids.** CLI sessions keep Kilo's own ids (`ses_…`, the id `kilo --session` takes);
//!   extension tasks are UUIDs, so the two never meet. Were one id in both anyway, the tree
//!   names the second `<id>~2` as for any id found twice.
//! - **Only sessions are read.** `auth.json` beside the database (provider keys) and the
//!   database's `account`, `control_account`, `credential` and `session_share` tables are
//!   never opened or selected from. `kilo_board`/`kilo_board_message` (the messages sessions
//!   post to a shared board) repeat the board tool calls each row names
//!   (`source_message_id`, `source_call_id`), which the sessions already show, and are not
//!   read; nor is `session_message` (OpenCode's event log of the same conversation).

use super::cline::{self, ClineStore, Dialect};
use super::opencode::{self, Flavor, OpencodeStore};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{Agent, Session};

/// The Kilo CLI's storage, as the OpenCode reader sees it.
pub const KILO_CLI: Flavor = Flavor {
    agent: Agent::Kilo,
    name: "kilo",
    db_var: "KILO_DB",
    is_db_name,
    label: " (Kilo CLI)",
};

/// A database the Kilo CLI writes: `kilo.db`, `kilo-<channel>.db`, `opencode-<channel>.db`.
fn is_db_name(name: &str) -> bool {
    name == "kilo.db"
        || ((name.starts_with("kilo-") || name.starts_with("opencode-")) && name.ends_with(".db"))
}

/// The extension's globalStorage directories, then the CLI's `KILO_DB` and data dir.
pub fn candidates(env: &Env) -> Vec<Root> {
    let mut out = cline::candidates(env, Dialect::Kilo);
    out.extend(opencode::flavor_candidates(env, &KILO_CLI));
    out
}

pub struct KiloStore {
    base: Base,
    extension: ClineStore,
    /// The extension reader's roots: their indices in [`Base::roots`].
    extension_roots: Vec<usize>,
    cli: OpencodeStore,
}

impl KiloStore {
    pub fn new(roots: Vec<Root>) -> KiloStore {
        // A database file (`KILO_DB`, a `--store` file) holds no task directories.
        let extension_roots: Vec<usize> = (0..roots.len())
            .filter(|&i| !roots[i].path.is_file())
            .collect();
        let extension = extension_roots.iter().map(|&i| roots[i].clone()).collect();
        KiloStore {
            extension: ClineStore::new(Dialect::Kilo, extension),
            extension_roots,
            cli: OpencodeStore::with_flavor(KILO_CLI, roots.clone()),
            base: Base::new(Agent::Kilo, roots),
        }
    }

    fn reader(&self, listed: &Listed) -> &dyn Store {
        if is_cli(listed) {
            &self.cli
        } else {
            &self.extension
        }
    }
}

/// A CLI session: a database row, or a legacy `storage/session/<project>/<id>.json` file
/// (extension tasks are directories).
fn is_cli(listed: &Listed) -> bool {
    listed.key.is_some()
        || (super::kit::file_name(&listed.path).ends_with(".json") && !listed.path.is_dir())
}

impl Store for KiloStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = self.extension.list();
        for l in &mut out {
            l.root = self.extension_roots.get(l.root).copied().unwrap_or(l.root);
        }
        out.extend(self.cli.list());
        out
    }

    fn load(&self, listed: &Listed) -> Session {
        self.reader(listed).load(listed)
    }

    fn problems(&self) -> Vec<String> {
        self.cli.problems()
    }

    /// The CLI's row versions; extension tasks (no key) version as the extension's reader
    /// says (by their files, or their entry where `state.vscdb` is among their sources).
    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        let mut out = self.cli.versions(listed);
        let tasks: Vec<(usize, &Listed)> = listed
            .iter()
            .enumerate()
            .filter(|(_, l)| !is_cli(l))
            .map(|(i, l)| (i, *l))
            .collect();
        let of_tasks: Vec<&Listed> = tasks.iter().map(|&(_, l)| l).collect();
        for ((i, _), v) in tasks.iter().zip(self.extension.versions(&of_tasks)) {
            if let Some(slot) = out.get_mut(*i) {
                *slot = v;
            }
        }
        out
    }

    fn keeps_listing(&self, listed: &Listed) -> bool {
        self.reader(listed).keeps_listing(listed)
    }

    /// The extension's: the editors' databases its older tasks read.
    fn watched_files(&self) -> &[std::path::PathBuf] {
        self.extension.watched_files()
    }

    /// Both readers' glances: the extension's task directories and where its task lists
    /// may appear, the CLI's data directories, databases with their journals and legacy
    /// JSON tree. Neither reads what it was given of the listing.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = self.extension.glance(&[])?;
        let cli = self.cli.glance(&[])?;
        g.dirs.extend(cli.dirs);
        g.files.extend(cli.files);
        Some(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn discovery_adds_the_cli_data_dir_and_kilo_db() {
        let env = Env {
            home: PathBuf::from("/h"),
            vars: [("KILO_DB".to_string(), "dev.db".to_string())].into(),
        };
        let got: Vec<(PathBuf, String)> = candidates(&env)
            .into_iter()
            .map(|r| (r.path, r.how))
            .collect();
        assert!(got.contains(&(
            PathBuf::from("/h/.config/Code/User/globalStorage/kilocode.kilo-code"),
            "default".into()
        )));
        let n = got.len();
        assert_eq!(
            got[n - 2..],
            [
                (
                    PathBuf::from("/h/.local/share/kilo/dev.db"),
                    "KILO_DB".into()
                ),
                (
                    PathBuf::from("/h/.local/share/kilo"),
                    "default (Kilo CLI)".into()
                ),
            ]
        );
        let env = Env {
            home: PathBuf::from("/h"),
            vars: [
                ("KILO_DB".to_string(), ":memory:".to_string()),
                ("XDG_DATA_HOME".to_string(), "/x".to_string()),
            ]
            .into(),
        };
        let last = candidates(&env).pop().map(|r| r.path);
        assert_eq!(last, Some(PathBuf::from("/x/kilo")));
    }

    #[test]
    fn extension_tasks_keep_their_root_index_beside_a_database_file() {
        let tmp = tempfile::tempdir().expect("tmp");
        let db = tmp.path().join("k.db");
        std::fs::write(&db, b"").expect("db");
        let task = tmp
            .path()
            .join("ext/tasks/5d2c8e10-0000-4000-8000-000000000001");
        std::fs::create_dir_all(&task).expect("task");
        std::fs::write(task.join("ui_messages.json"), b"[]").expect("ui");
        let store = KiloStore::new(vec![
            Root::new(Agent::Kilo, &db, "KILO_DB"),
            Root::new(Agent::Kilo, tmp.path().join("ext"), "test"),
        ]);
        let listed = store.list();
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert_eq!((listed[0].root, is_cli(&listed[0])), (1, false));
    }

    #[test]
    fn database_names_are_kilos_and_its_channels() {
        for ok in ["kilo.db", "kilo-dev.db", "opencode-local.db"] {
            assert!(is_db_name(ok), "{ok}");
        }
        for no in [
            "kilo.db-wal",
            "opencode.db",
            "auth.json",
            "kilo.db-shm",
            "x.db",
        ] {
            assert!(!is_db_name(no), "{no}");
        }
    }
}
