//! Tracepoints named after the kernel's `timer_migration` events, through
//! the `tracing` crate when the `tracing` feature is on (target
//! `utimer::migration`); empty inline functions otherwise, so they cost
//! nothing.
//!
//! | kernel tracepoint | here |
//! |---|---|
//! | `tmigr_group_set_cpu_active` / `_inactive` | `tmigr_group_set` |
//! | `tmigr_cpu_active`, `tmigr_cpu_idle`, `tmigr_cpu_offline` | `tmigr_cpu` (with the event) |
//! | `tmigr_cpu_new_timer` | `tmigr_cpu_new_timer` |
//! | `tmigr_handle_remote_cpu` | `tmigr_handle_remote` |
//! | `tmigr_update_events` | `tmigr_update_events` |

use super::group::{Event, Group};
use super::state::GroupState;
use super::Hierarchy;

impl Hierarchy {
    #[inline(always)]
    pub(crate) fn trace_group_set(
        &self,
        group: &Group,
        before: GroupState,
        after: GroupState,
        child_active: bool,
    ) {
        #[cfg(feature = "tracing")]
        tracing::trace!(
            target: "utimer::migration",
            level = group.level,
            child_active,
            before_active = before.active(),
            after_active = after.active(),
            migrator = ?after.migrator(),
            seq = after.seq(),
            "tmigr_group_set"
        );
        #[cfg(not(feature = "tracing"))]
        let _ = (group, before, after, child_active);
    }

    #[inline(always)]
    pub(crate) fn trace_cpu(&self, worker: usize, what: &'static str) {
        #[cfg(feature = "tracing")]
        tracing::trace!(target: "utimer::migration", worker, what, "tmigr_cpu");
        #[cfg(not(feature = "tracing"))]
        let _ = (worker, what);
    }

    #[inline(always)]
    pub(crate) fn trace_new_timer(&self, worker: usize, expires: u64) {
        #[cfg(feature = "tracing")]
        tracing::trace!(target: "utimer::migration", worker, expires, "tmigr_cpu_new_timer");
        #[cfg(not(feature = "tracing"))]
        let _ = (worker, expires);
    }

    #[inline(always)]
    pub(crate) fn trace_handle_remote(&self, by: Option<usize>, worker: usize) {
        #[cfg(feature = "tracing")]
        tracing::trace!(target: "utimer::migration", by = ?by, worker, "tmigr_handle_remote");
        #[cfg(not(feature = "tracing"))]
        let _ = (by, worker);
    }

    #[inline(always)]
    pub(crate) fn trace_update_events(&self, group: &Group, first: Event, state: GroupState) {
        #[cfg(feature = "tracing")]
        tracing::trace!(
            target: "utimer::migration",
            level = group.level,
            first_expires = first.expires,
            first_worker = first.worker,
            group_active = state.is_active(),
            "tmigr_update_events"
        );
        #[cfg(not(feature = "tracing"))]
        let _ = (group, first, state);
    }
}
