//! Which POSIX timers a system owns: its serial, the owner every lookup
//! checks and the system's end looks for in the table to delete its
//! timers (the kernel's `exit_itimers()` at process exit). No list of its
//! own: creating and deleting a timer touch only the table.

use super::table::IdTable;
use super::timer::PosixTimer;
use crate::TimerSystem;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::LazyLock;

/// The process-wide ID table (see the module docs: one table, so that an
/// ID from another system is refused by the owner check).
pub(crate) static TABLE: LazyLock<IdTable<PosixTimer>> = LazyLock::new(IdTable::new);

/// Serials of systems; 0 is never issued.
static SERIAL: AtomicU64 = AtomicU64::new(1);

/// One system's POSIX timers.
pub(crate) struct Registry {
    pub(crate) owner: u64,
}

impl Registry {
    fn new() -> Registry {
        Registry {
            owner: SERIAL.fetch_add(1, Relaxed),
        }
    }

    /// The registry of `sys`, made on its first POSIX call and kept in the
    /// slot that `system/` keeps for this layer (it drops with the system,
    /// after the bases have shut down).
    pub(crate) fn of(sys: &TimerSystem) -> &Registry {
        sys.above()
            .get_or_init(|| Box::new(Registry::new()))
            .downcast_ref()
            .expect("utimer: the system's slot holds the POSIX registry")
    }
}

impl Drop for Registry {
    /// Deletes every timer the system still owns.
    fn drop(&mut self) {
        let owner = self.owner;
        for id in TABLE.ids_where(|t| t.owner == owner) {
            let inner = TABLE
                .with(id, |t| (t.owner == owner).then(|| t.inner.clone()))
                .flatten();
            if let Some(inner) = inner {
                let _ = inner.delete();
                TABLE.remove_if(id, |t| t.owner == owner);
            }
        }
    }
}
