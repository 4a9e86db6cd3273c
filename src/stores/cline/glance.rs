//! What `sessfs search` stamps instead of listing Cline, Roo Code or Kilo Code's task
//! directories (see [`crate::stores::Glance`]).
//!
//! The listing reads names only: each root (whether it is one task, holds `tasks/`, or is a
//! `tasks/` directory itself), the container of the task directories, and each task
//! directory (a directory is a task when it holds a conversation file). The task lists a
//! task is versioned by (`tasks/_index.json`, `state/taskHistory.json`, Kilo's
//! `task_history.json`) are its sources while they exist; the directory each lives in (or,
//! before that exists, the nearest one above it) is stamped too, as it moves when the list
//! appears.
//! Cline's SDK sessions add the directories [`cline_sdk::glance_dirs`] names.
//!
//! The editors' `state.vscdb` is not stamped: the listing never opens it; it is a source of
//! the tasks whose entry it gives (older builds kept their task list there), so the search
//! stamps it with them.

use super::{cline_sdk, is_task, task_lists, Dialect};
use crate::stores::kit::{self, EntryType};
use crate::stores::{Glance, Root};

/// The directories the listing of `roots` reads; `None` when a root is not a directory
/// (it lists nothing, and what it may become is not stamped).
pub(super) fn glance(dialect: Dialect, roots: &[Root]) -> Option<Glance> {
    let mut g = Glance::default();
    for root in roots {
        if !root.path.is_dir() {
            return None;
        }
        g.dirs.push(root.path.clone());
        let lists = if is_task(&root.path) {
            task_lists(&root.path)
        } else {
            let tasks = root.path.join("tasks");
            let container = if tasks.is_dir() {
                tasks
            } else {
                root.path.clone()
            };
            // Every directory the listing may take for a task, a task or not yet: one that
            // gains a conversation file becomes a task, and only its own mtime moves.
            g.dirs.extend(
                kit::typed_entries(&container)
                    .into_iter()
                    .filter(|(p, t)| {
                        let name = p.file_name().map(|n| n.as_encoded_bytes()).unwrap_or(b"");
                        *t == EntryType::Dir && !name.starts_with(b".") && !name.starts_with(b"_")
                    })
                    .map(|(p, _)| p),
            );
            // The lists beside any task of the container.
            let lists = task_lists(&container.join("task"));
            g.dirs.push(container);
            lists
        };
        g.dirs
            .extend(lists.iter().filter_map(|l| kit::nearest_dir(l.parent()?)));
        if dialect == Dialect::Cline {
            cline_sdk::glance_dirs(&root.path, &mut g.dirs);
        }
    }
    Some(g)
}
