//! Which POSIX timers a system owns: its serial (the owner every lookup
//! checks) and its IDs, so that the system's end deletes them (the
//! kernel's `exit_itimers()` at process exit).

use super::table::IdTable;
use super::timer::PosixTimer;
use crate::TimerSystem;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{LazyLock, Mutex};

/// The process-wide ID table (see the module docs: one table, so that an
/// ID from another system is refused by the owner check).
pub(crate) static TABLE: LazyLock<IdTable<PosixTimer>> = LazyLock::new(IdTable::new);

/// Serials of systems; 0 is never issued.
static SERIAL: AtomicU64 = AtomicU64::new(1);

/// One system's POSIX timers.
pub(crate) struct Registry {
    pub(crate) owner: u64,
    pub(crate) ids: Mutex<BTreeSet<i32>>,
}

impl Registry {
    fn new() -> Registry {
        Registry {
            owner: SERIAL.fetch_add(1, Relaxed),
            ids: Mutex::new(BTreeSet::new()),
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
        let ids = std::mem::take(&mut *self.ids.lock().unwrap_or_else(|e| e.into_inner()));
        for id in ids {
            let owner = self.owner;
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
