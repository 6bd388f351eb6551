//! The hierarchy's operations, one per event in a worker's life (the
//! kernel's `tmigr_cpu_activate()`, `tmigr_cpu_deactivate()`,
//! `tmigr_cpu_new_timer()`, `tmigr_handle_remote()` and the CPU hotplug
//! callbacks), and the stall monitor's.

use super::group::{Event, LeafCounters, LeafInner, NEVER};
use super::walk::{lock, TopIdle, Why};
use super::Hierarchy;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};

/// What [`Hierarchy::deactivate`] found.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Deactivated {
    /// The worker is no member: it keeps waking for its own movable timers.
    NotMember,
    /// The worker is idle in the hierarchy.
    Idle(TopIdle),
}

/// What [`Hierarchy::new_timer`] found.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum NewTimer {
    /// The worker is no member: wake it, as without the pull model.
    NotMember,
    /// Recorded (or not needed: the worker is active, or the timer is not
    /// its first); maybe someone must be woken.
    Recorded(TopIdle),
}

impl Hierarchy {
    /// Worker `w` joins the pull model, active (the kernel's
    /// `tmigr_cpu_online()`). Returns whether it made the top active.
    pub(crate) fn join(&self, w: usize, now: u64) -> bool {
        let leaf = &self.leaves[w];
        let mut inner = lock(&leaf.inner);
        if inner.offline {
            inner.rejoin = true;
            return false;
        }
        if inner.member {
            return false;
        }
        inner.member = true;
        inner.event = NEVER;
        leaf.heartbeat.store(now, Relaxed);
        leaf.stalled.store(false, SeqCst);
        leaf.active.store(true, SeqCst);
        self.trace_cpu(w, "active");
        self.activate_up(w)
    }

    /// Worker `w` leaves the pull model (its `Worker` handle is dropped):
    /// inactive with no event, so nobody pulls its timers. If that leaves
    /// nobody active, the worker with the first event is woken to take the
    /// wake-up duty.
    pub(crate) fn leave(&self, w: usize) -> TopIdle {
        let mut inner = lock(&self.leaves[w].inner);
        inner.rejoin = false;
        self.drop_membership(w, &mut inner)
    }

    /// Worker `w` goes offline (the kernel's `tmigr_cpu_offline()`): out of
    /// the pull model until [`online`](Self::online), which brings it back
    /// if it was a member.
    pub(crate) fn offline(&self, w: usize) -> TopIdle {
        let mut inner = lock(&self.leaves[w].inner);
        inner.offline = true;
        inner.rejoin = inner.member;
        self.drop_membership(w, &mut inner)
    }

    /// Ends `w`'s membership, if any (its leaf lock held): inactive, no
    /// event, the change walked up.
    fn drop_membership(&self, w: usize, inner: &mut LeafInner) -> TopIdle {
        if !inner.member {
            return TopIdle::default();
        }
        let leaf = &self.leaves[w];
        inner.member = false;
        inner.event = NEVER;
        leaf.active.store(false, SeqCst);
        leaf.stalled.store(false, SeqCst);
        self.trace_cpu(w, "offline");
        self.walk_up(w, Event::NONE, Why::Leave)
    }

    /// Worker `w` is back online; it rejoins if it was a member, *idle*
    /// with no event (its bases are empty): its thread may be asleep, and
    /// becomes active through its next idle exit like any idle worker.
    pub(crate) fn online(&self, w: usize) {
        let leaf = &self.leaves[w];
        let mut inner = lock(&leaf.inner);
        inner.offline = false;
        if std::mem::take(&mut inner.rejoin) {
            inner.member = true;
            inner.event = NEVER;
            leaf.active.store(false, SeqCst);
            leaf.stalled.store(false, SeqCst);
            self.trace_cpu(w, "online");
        }
    }

    /// Worker `w` is busy again (the kernel's `tmigr_cpu_activate()`):
    /// it expires its own movable timers from now on. Returns whether it
    /// made the top active (someone may have to start watching for stalls).
    /// `now` counts as its heartbeat: it is at a tick point. The caller
    /// holds `w`'s global base lock, and clears the base's idle threshold
    /// under it (`Base::idle_exit_with`), so that no stall lands between.
    pub(crate) fn activate(&self, w: usize, now: u64) -> bool {
        let leaf = &self.leaves[w];
        let inner = lock(&leaf.inner);
        if !inner.member || leaf.active.load(Relaxed) {
            return false;
        }
        leaf.heartbeat.store(now, Relaxed);
        leaf.stalled.store(false, SeqCst);
        leaf.active.store(true, SeqCst);
        LeafCounters::bump(&leaf.counters.wakeups);
        drop(inner);
        self.trace_cpu(w, "active");
        self.activate_up(w)
    }

    /// Worker `w` goes idle with `next` its first movable expiry (the
    /// kernel's `tmigr_cpu_deactivate()`). The caller holds `w`'s global
    /// base lock, read `next` under it, and has published the base as idle
    /// there, so that an earlier timer armed after this reaches
    /// [`new_timer`](Self::new_timer). If `w` is the last active worker,
    /// the result says which tick to arm its wake-up for.
    pub(crate) fn deactivate(&self, w: usize, next: Option<u64>) -> Deactivated {
        let leaf = &self.leaves[w];
        let mut inner = lock(&leaf.inner);
        if !inner.member {
            return Deactivated::NotMember;
        }
        inner.event = next.unwrap_or(NEVER);
        leaf.active.store(false, SeqCst);
        leaf.stalled.store(false, SeqCst);
        LeafCounters::bump(&leaf.counters.idle_entries);
        self.trace_cpu(w, "idle");
        let event = Event {
            expires: inner.event,
            worker: w as u32,
        };
        Deactivated::Idle(self.walk_up(w, event, Why::Idle(w as u32)))
    }

    /// A timer armed on idle worker `w`'s global base fires at `expires`,
    /// before the first event it reported (the kernel's
    /// `tmigr_cpu_new_timer()`): the hierarchy learns it instead of the
    /// worker waking. Called with no lock held.
    pub(crate) fn new_timer(&self, w: usize, expires: u64) -> NewTimer {
        let leaf = &self.leaves[w];
        let mut inner = lock(&leaf.inner);
        if !inner.member {
            return NewTimer::NotMember;
        }
        if leaf.active.load(Relaxed) || expires >= inner.event {
            return NewTimer::Recorded(TopIdle::default());
        }
        inner.event = expires;
        self.trace_new_timer(w, expires);
        let event = Event {
            expires,
            worker: w as u32,
        };
        NewTimer::Recorded(self.walk_up(w, event, Why::Update))
    }

    /// After a remote expiry of idle worker `w`'s global base: `next` is its
    /// first movable expiry now, read under that base's lock, which the
    /// caller still holds. Returns `None` if `w` is no longer idle (then it
    /// expires its timers itself), else what the walk asks.
    pub(crate) fn remote_update(&self, w: usize, next: Option<u64>) -> Option<TopIdle> {
        let leaf = &self.leaves[w];
        let mut inner = lock(&leaf.inner);
        if !inner.member || leaf.active.load(Relaxed) {
            return None;
        }
        inner.event = next.unwrap_or(NEVER);
        let event = Event {
            expires: inner.event,
            worker: w as u32,
        };
        Some(self.walk_up(w, event, Why::Update))
    }

    /// Worker `w` reached a tick point at tick `now`. Returns whether it had
    /// been marked stalled (then the caller re-activates it).
    #[inline]
    pub(crate) fn heartbeat(&self, w: usize, now: u64) -> bool {
        let leaf = &self.leaves[w];
        leaf.heartbeat.store(now, Relaxed);
        leaf.stalled.load(Relaxed)
    }

    /// The monitor deactivates `w` on its behalf if it is an active member
    /// that has not reached a tick point since `now - bound`. `next` is its
    /// first movable expiry, read under its global base lock, which the
    /// caller holds. Returns `None` if `w` was not stalled.
    pub(crate) fn stall(
        &self,
        w: usize,
        next: Option<u64>,
        now: u64,
        bound: u64,
    ) -> Option<TopIdle> {
        let leaf = &self.leaves[w];
        let mut inner = lock(&leaf.inner);
        let beat = leaf.heartbeat.load(SeqCst);
        if !inner.member || !leaf.active.load(Relaxed) || now.saturating_sub(beat) <= bound {
            return None;
        }
        inner.event = next.unwrap_or(NEVER);
        leaf.stalled.store(true, SeqCst);
        leaf.active.store(false, SeqCst);
        LeafCounters::bump(&leaf.counters.stalls);
        self.trace_cpu(w, "stalled");
        let event = Event {
            expires: inner.event,
            worker: w as u32,
        };
        Some(self.walk_up(w, event, Why::Stall))
    }

    /// Active members whose last tick point is older than `now - bound`:
    /// candidates for [`stall`](Self::stall).
    pub(crate) fn stalled_candidates(&self, now: u64, bound: u64, out: &mut Vec<usize>) {
        for (w, leaf) in self.leaves.iter().enumerate() {
            if leaf.active.load(Relaxed) && now.saturating_sub(leaf.heartbeat.load(Relaxed)) > bound
            {
                out.push(w);
            }
        }
    }

    /// The idle workers whose movable timers are due at `now`, in every
    /// group where worker `me` is the migrator (walking up while it is):
    /// the kernel's `tmigr_requires_handle_remote()` (the lock-free look at
    /// each group's `next`) and the collecting half of
    /// `tmigr_handle_remote()`. Stale slots of active children are dropped
    /// on the way.
    pub(crate) fn due(&self, me: usize, now: u64, out: &mut Vec<usize>) {
        let leaf = &self.leaves[me];
        if !leaf.active.load(Relaxed) {
            return;
        }
        let (mut g, mut slot) = (leaf.group, leaf.slot);
        loop {
            let group = &self.groups[g as usize];
            if group.state().migrator() != Some(slot) {
                return;
            }
            if group.next.load(SeqCst) <= now {
                self.collect_due(g, now, out);
            }
            match group.parent {
                Some(p) => (g, slot) = (p, group.slot),
                None => return,
            }
        }
    }

    /// With nobody active, the monitor's share of [`due`](Self::due): the
    /// idle workers whose events in the top group are due.
    pub(crate) fn due_at_top(&self, now: u64, out: &mut Vec<usize>) {
        let top = &self.groups[self.top as usize];
        if !top.state().is_active() && top.next.load(SeqCst) <= now {
            self.collect_due(self.top, now, out);
        }
    }

    fn collect_due(&self, g: u32, now: u64, out: &mut Vec<usize>) {
        let group = &self.groups[g as usize];
        let mut events = lock(&group.events);
        for (s, &child) in group.children.iter().enumerate() {
            let e = events.slots[s];
            if e.expires > now {
                continue;
            }
            if self.child_active(child) {
                // Stale: that child expires its own (or its migrator does).
                events.slots[s] = Event::NONE;
            } else if !out.contains(&(e.worker as usize)) {
                out.push(e.worker as usize);
            }
        }
        group.next.store(events.first().expires, SeqCst);
    }

    /// Counts a remote expiry that `me` ran for `of`.
    pub(crate) fn count_remote(&self, me: Option<usize>, of: usize) {
        if let Some(me) = me {
            LeafCounters::bump(&self.leaves[me].counters.remote_expiries);
        }
        LeafCounters::bump(&self.leaves[of].counters.pulled_from);
        self.trace_handle_remote(me, of);
    }

    /// Whether worker `w` is active (lock-free).
    #[cfg_attr(not(feature = "bench-internals"), allow(dead_code))]
    pub(crate) fn is_active(&self, w: usize) -> bool {
        self.leaves[w].active.load(Relaxed)
    }

    /// Whether the top group has an active child.
    pub(crate) fn top_active(&self) -> bool {
        self.groups[self.top as usize].state().is_active()
    }
}

impl Hierarchy {
    /// The tick the monitor must wake at, if it armed the system's wake-up
    /// (a stall left nobody active) and there is a movable event.
    pub(crate) fn monitor_wakeup(&self) -> Option<u64> {
        let top = &self.groups[self.top as usize];
        let events = lock(&top.events);
        (events.waker == super::group::MONITOR && events.wakeup != NEVER).then_some(events.wakeup)
    }
}
