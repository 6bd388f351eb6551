//! The process-wide POSIX timer ID table, as it stands: the seed's
//! "before" — one lock around every lookup, as the kernel's `idr_lock`
//! was until 2011.
//!
//! Correct (IDs increase and are never reused; entries are `Arc`s, so a
//! lookup racing a delete sees either the live entry or none, and the
//! caller rechecks `deleted` under the timer's own lock), but every lookup
//! takes the same mutex: it does not scale, which is exactly what seed 003
//! fixed. The lock-free table (epoch-reclaimed slots, writers serialized,
//! no shared write on lookup) replaces it under issue 8 with the same API.
#![allow(dead_code)]
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::Mutex;
pub(crate) struct TableFull;
pub(crate) struct IdTable<T> {
    m: Mutex<(i32, BTreeMap<i32, Arc<T>>)>,
}
impl<T: Send + Sync> IdTable<T> {
    pub(crate) fn new() -> Self {
        IdTable {
            m: Mutex::new((0, BTreeMap::new())),
        }
    }
    pub(crate) fn insert(&self, make: impl FnOnce(i32) -> T) -> Result<i32, TableFull> {
        let mut g = self.m.lock().unwrap();
        if g.0 == i32::MAX {
            return Err(TableFull);
        }
        let id = g.0;
        g.0 += 1;
        let v = Arc::new(make(id));
        g.1.insert(id, v);
        Ok(id)
    }
    pub(crate) fn with<R>(&self, id: i32, f: impl FnOnce(&T) -> R) -> Option<R> {
        let v = self.m.lock().unwrap().1.get(&id).cloned()?;
        Some(f(&v))
    }
    pub(crate) fn remove_if(&self, id: i32, pred: impl FnOnce(&T) -> bool) -> bool {
        let mut g = self.m.lock().unwrap();
        if g.1.get(&id).is_some_and(|v| pred(v)) {
            g.1.remove(&id);
            true
        } else {
            false
        }
    }
    pub(crate) fn len(&self) -> usize {
        self.m.lock().unwrap().1.len()
    }
}
