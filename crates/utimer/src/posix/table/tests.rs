//! The ID table's tests: natively (and under Miri, `ci/miri.sh`), and its
//! lookup-against-writer protocol under loom (`ci/loom.sh`, which builds
//! crossbeam-epoch on loom's atomics too).

#[cfg(not(loom))]
mod native {
    use super::super::IdTable;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// A value that knows its ID and counts its drops.
    struct Probe {
        id: i32,
        drops: Arc<AtomicUsize>,
    }

    impl Drop for Probe {
        fn drop(&mut self) {
            self.drops.fetch_add(1, SeqCst);
        }
    }

    fn probe(drops: &Arc<AtomicUsize>) -> impl FnOnce(i32) -> Probe + '_ {
        move |id| Probe {
            id,
            drops: drops.clone(),
        }
    }

    fn id_of(t: &IdTable<Probe>, id: i32) -> Option<i32> {
        t.with(id, |p| p.id)
    }

    #[test]
    fn ids_start_at_zero_and_increase() {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = IdTable::new();
        for want in 0..10 {
            assert_eq!(t.insert(probe(&drops)).ok(), Some(want));
        }
        for id in 0..10 {
            assert_eq!(id_of(&t, id), Some(id));
        }
        assert_eq!(t.len(), 10);
        for bad in [-1, i32::MIN, 10, 64, 64 + 3, i32::MAX] {
            assert_eq!(id_of(&t, bad), None, "never issued: {bad}");
        }
    }

    #[test]
    fn a_removed_id_is_refused_and_not_issued_again() {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = IdTable::new();
        for _ in 0..3 {
            t.insert(probe(&drops)).ok().unwrap();
        }
        assert!(!t.remove_if(1, |_| false), "the predicate refuses");
        assert_eq!(id_of(&t, 1), Some(1));
        assert!(t.remove_if(1, |p| p.id == 1));
        assert!(!t.remove_if(1, |_| true), "a second removal finds nothing");
        assert!(!t.remove_if(-5, |_| true));
        assert_eq!(id_of(&t, 1), None);
        assert_eq!(t.insert(probe(&drops)).ok(), Some(3));
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn a_stale_id_never_reaches_the_entry_reusing_its_slot() {
        let drops = Arc::new(AtomicUsize::new(0));
        // Two slots: IDs 0 and 2 share slot 0.
        let t = IdTable::with_capacity(2, 0);
        assert_eq!(t.insert(probe(&drops)).ok(), Some(0));
        assert!(t.remove_if(0, |_| true));
        assert_eq!(t.insert(probe(&drops)).ok(), Some(1));
        assert!(t.remove_if(1, |_| true));
        assert_eq!(t.insert(probe(&drops)).ok(), Some(2));
        assert_eq!(t.capacity(), 2);
        assert_eq!(id_of(&t, 0), None, "slot 0 holds ID 2 now");
        assert_eq!(id_of(&t, 2), Some(2));
    }

    #[test]
    fn grows_and_keeps_every_entry() {
        let drops = Arc::new(AtomicUsize::new(0));
        let n = if cfg!(miri) { 40 } else { 1000 };
        let t = IdTable::with_capacity(2, 0);
        for want in 0..n {
            assert_eq!(t.insert(probe(&drops)).ok(), Some(want));
        }
        let cap = t.capacity();
        assert!(cap >= 2 * n as usize && cap <= 4 * n as usize, "cap {cap}");
        for id in (0..n).step_by(2) {
            assert!(t.remove_if(id, |_| true));
        }
        for id in 0..n {
            assert_eq!(id_of(&t, id), (id % 2 == 1).then_some(id));
        }
        assert_eq!(t.len(), n as usize / 2);
    }

    #[test]
    fn the_cursor_wraps_at_int_max_and_skips_ids_in_use() {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = IdTable::with_capacity(8, 0);
        assert_eq!(t.insert(probe(&drops)).ok(), Some(0));
        t.lock_writer().next = i32::MAX - 1;
        assert_eq!(t.insert(probe(&drops)).ok(), Some(i32::MAX - 1));
        assert_eq!(t.insert(probe(&drops)).ok(), Some(i32::MAX));
        assert_eq!(t.insert(probe(&drops)).ok(), Some(1), "0 is in use");
        assert_eq!(id_of(&t, i32::MAX), Some(i32::MAX));
        assert_eq!(id_of(&t, 0), Some(0));
    }

    /// Flushes this thread's garbage until `drops` reaches `want`. Other
    /// test threads pin only briefly, so the epoch advances.
    fn await_drops(drops: &AtomicUsize, want: usize) {
        let end = Instant::now() + Duration::from_secs(20);
        while drops.load(SeqCst) < want && Instant::now() < end {
            crossbeam_epoch::pin().flush();
            std::thread::yield_now();
        }
        assert_eq!(drops.load(SeqCst), want);
    }

    #[test]
    fn every_value_is_dropped_exactly_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = IdTable::new();
        for _ in 0..100 {
            t.insert(probe(&drops)).ok().unwrap();
        }
        for id in 0..50 {
            assert!(t.remove_if(id, |_| true));
        }
        await_drops(&drops, 50);
        drop(t);
        assert_eq!(drops.load(SeqCst), 100, "the rest go with the table");
    }

    /// Readers look IDs up while the writer inserts (growing the array)
    /// and removes, one pinned and one as a signal handler does (unpinned):
    /// a lookup finds the entry with that very ID or nothing, and never a
    /// freed one (Miri checks the latter directly).
    #[test]
    fn lookups_race_inserts_growth_and_removals() {
        let drops = Arc::new(AtomicUsize::new(0));
        let t: Arc<IdTable<Probe>> = Arc::new(IdTable::with_capacity(2, 0));
        let n: i32 = if cfg!(miri) { 40 } else { 20_000 };
        let stop = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|r| {
                let (t, stop) = (t.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut found = 0u64;
                    let mut id = r;
                    while !stop.load(SeqCst) {
                        let got = if r == 1 {
                            t.with_unpinned(id, |p| p.id)
                        } else {
                            t.with(id, |p| p.id)
                        };
                        if let Some(got) = got {
                            assert_eq!(got, id);
                            found += 1;
                        }
                        id = (id + 7) % (n + 3);
                    }
                    found
                })
            })
            .collect();
        for id in 0..n {
            assert_eq!(t.insert(probe(&drops)).ok(), Some(id));
            if id % 3 == 0 {
                assert!(t.remove_if(id / 2, |p| p.id == id / 2));
            }
        }
        stop.store(true, SeqCst);
        for r in readers {
            r.join().unwrap();
        }
        let live = t.len();
        drop(t);
        await_drops(&drops, n as usize);
        assert!(live > 0);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert,
        Remove(u16),
        Lookup(i32),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => Just(Op::Insert),
            2 => any::<u16>().prop_map(Op::Remove),
            2 => (-2i32..200).prop_map(Op::Lookup),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 256 }))]
        /// Against a map: lookups agree, IDs are fresh and increase (no
        /// wrap here), removals answer as the map does.
        #[test]
        fn matches_a_map(ops in proptest::collection::vec(op(), 1..if cfg!(miri) { 24 } else { 200 })) {
            let drops = Arc::new(AtomicUsize::new(0));
            let t = IdTable::with_capacity(2, 0);
            let mut model: BTreeMap<i32, ()> = BTreeMap::new();
            let mut last = -1;
            for op in ops {
                match op {
                    Op::Insert => {
                        let id = t.insert(probe(&drops)).ok().unwrap();
                        prop_assert!(id > last && !model.contains_key(&id));
                        last = id;
                        model.insert(id, ());
                    }
                    Op::Remove(k) => {
                        // A live ID most of the time, else a dead one.
                        let id = model.keys().nth(k as usize % (model.len() + 1)).copied().unwrap_or(last + 1);
                        prop_assert_eq!(t.remove_if(id, |p| p.id == id), model.remove(&id).is_some());
                    }
                    Op::Lookup(id) => {
                        prop_assert_eq!(id_of(&t, id), model.contains_key(&id).then_some(id));
                    }
                }
                prop_assert_eq!(t.len(), model.len());
            }
        }
    }
}

#[cfg(loom)]
mod models {
    use super::super::IdTable;
    use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use loom::sync::Arc;
    use loom::thread;

    /// A value whose drop is recorded outside it, so that a lookup can
    /// check, while it holds the value, that it was not dropped.
    struct Tracked {
        id: i32,
        dropped: Arc<AtomicBool>,
    }

    impl Drop for Tracked {
        fn drop(&mut self) {
            self.dropped.store(true, SeqCst);
        }
    }

    fn tracked(dropped: &Arc<AtomicBool>) -> impl FnOnce(i32) -> Tracked + '_ {
        move |id| Tracked {
            id,
            dropped: dropped.clone(),
        }
    }

    /// A thread that looks `id` up and checks, while it holds the value,
    /// that it is that ID's and was not dropped.
    fn spawn_lookup(t: &Arc<IdTable<Tracked>>, id: i32) -> thread::JoinHandle<Option<()>> {
        let t = t.clone();
        thread::spawn(move || {
            t.with(id, |v| {
                assert_eq!(v.id, id);
                assert!(!v.dropped.load(SeqCst), "freed under a lookup");
            })
        })
    }

    /// Gives the collector the chance to free what this thread retired.
    fn reclaim() {
        for _ in 0..3 {
            crossbeam_epoch::pin().flush();
        }
    }

    /// Two preemptions: the table's models are long.
    fn model(f: impl Fn() + Sync + Send + 'static) {
        crate::sync::model_bounded(2, f)
    }

    /// A signal handler's lookup (unpinned, counted in `signal_readers`)
    /// racing the removal of its entry and the collector: the entry is not
    /// freed while the lookup holds it.
    #[test]
    fn unpinned_lookup_vs_delete() {
        model(|| {
            let gone = Arc::new(AtomicBool::new(false));
            let t = Arc::new(IdTable::with_capacity(2, 0));
            let id = t.insert(tracked(&gone)).ok().unwrap();
            let t2 = t.clone();
            let reader = thread::spawn(move || {
                t2.with_unpinned(id, |v| {
                    assert_eq!(v.id, id);
                    assert!(!v.dropped.load(SeqCst), "freed under an unpinned lookup");
                })
            });
            assert!(t.remove_if(id, |_| true));
            reclaim();
            reader.join().unwrap();
        });
    }

    /// The same against a growth of the array: the retired array is not
    /// freed under the unpinned lookup either.
    #[test]
    fn unpinned_lookup_vs_grow() {
        model(|| {
            let gone = Arc::new(AtomicBool::new(false));
            let other = Arc::new(AtomicBool::new(false));
            let t = Arc::new(IdTable::with_capacity(2, 0));
            let id = t.insert(tracked(&gone)).ok().unwrap();
            let t2 = t.clone();
            let reader = thread::spawn(move || t2.with_unpinned(id, |v| v.id));
            t.insert(tracked(&other)).ok().unwrap(); // doubles the array
            reclaim();
            assert_eq!(reader.join().unwrap(), Some(id));
        });
    }

    /// A lookup racing the removal of its entry sees it alive or not at
    /// all; the entry is not freed while the lookup holds it.
    #[test]
    fn lookup_vs_delete() {
        model(|| {
            let gone = Arc::new(AtomicBool::new(false));
            let t = Arc::new(IdTable::with_capacity(2, 0));
            let id = t.insert(tracked(&gone)).ok().unwrap();
            let reader = spawn_lookup(&t, id);
            assert!(t.remove_if(id, |_| true));
            reclaim();
            reader.join().unwrap();
        });
    }

    /// A lookup racing a growth of the array and the removal of its entry
    /// (which then leaves only the old array holding it): same promise.
    #[test]
    fn lookup_vs_grow_then_delete() {
        model(|| {
            let gone = Arc::new(AtomicBool::new(false));
            let other = Arc::new(AtomicBool::new(false));
            let t = Arc::new(IdTable::with_capacity(2, 0));
            let id = t.insert(tracked(&gone)).ok().unwrap();
            let reader = spawn_lookup(&t, id);
            t.insert(tracked(&other)).ok().unwrap(); // doubles the array
            assert!(t.remove_if(id, |_| true));
            reclaim();
            reader.join().unwrap();
        });
    }

    /// A stale ID never reaches the entry that reuses its slot: ID 0 is
    /// deleted and ID 2 takes slot 0 while a lookup of ID 0 runs.
    #[test]
    fn a_stale_id_never_reaches_a_newer_entry() {
        model(|| {
            let flags: Vec<_> = (0..3).map(|_| Arc::new(AtomicBool::new(false))).collect();
            let t = Arc::new(IdTable::with_capacity(2, 0));
            assert_eq!(t.insert(tracked(&flags[0])).ok(), Some(0));
            let t2 = t.clone();
            let reader = thread::spawn(move || t2.with(0, |v| v.id));
            assert!(t.remove_if(0, |_| true));
            assert_eq!(t.insert(tracked(&flags[1])).ok(), Some(1));
            assert!(t.remove_if(1, |_| true));
            assert_eq!(t.insert(tracked(&flags[2])).ok(), Some(2));
            reclaim();
            let seen = reader.join().unwrap();
            assert!(seen.is_none() || seen == Some(0), "{seen:?}");
        });
    }
}
