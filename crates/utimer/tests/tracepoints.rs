//! The kernel-named tracepoints reach a `tracing` subscriber (feature
//! `tracing`; `.ci/run` runs this file with it on).
#![cfg(feature = "tracing")]

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};
use utimer::{Clock, ClockId, Expiry, HrRestart, TimerSystem};

/// Records the message of every event (the tracepoint's name).
#[derive(Clone, Default)]
struct Names(Arc<Mutex<Vec<String>>>);

struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl Subscriber for Names {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut m = Message(String::new());
        event.record(&mut m);
        self.0.lock().unwrap().push(m.0);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

impl Names {
    fn count(&self, name: &str) -> usize {
        self.0.lock().unwrap().iter().filter(|n| *n == name).count()
    }
}

#[test]
fn wheel_and_hrtimer_events_are_traced() {
    let names = Names::default();
    tracing::subscriber::with_default(names.clone(), || {
        let clock = Clock::manual();
        let sys = TimerSystem::builder()
            .workers(1)
            .clock(clock.clone())
            .build_without_threads();
        let t = sys.timer(|_| {});
        t.modify(Expiry::Tick(5)).unwrap();
        assert!(t.delete());
        t.modify(Expiry::Tick(5)).unwrap();
        clock.advance(6);
        sys.run_expired(0, sys.now()).unwrap();
        let h = sys.hrtimer(ClockId::Monotonic, |_| HrRestart::NoRestart);
        h.start_after(Duration::from_millis(3)).unwrap();
        assert!(h.try_cancel().unwrap());
        h.start_after(Duration::from_millis(3)).unwrap();
        clock.advance(4);
        sys.run_expired(0, sys.now()).unwrap();
    });
    assert_eq!(names.count("timer_start"), 2);
    assert_eq!(names.count("timer_cancel"), 1);
    assert_eq!(names.count("timer_expire_entry"), 1);
    assert_eq!(names.count("timer_expire_exit"), 1);
    assert_eq!(names.count("hrtimer_start"), 2);
    assert_eq!(names.count("hrtimer_cancel"), 1);
    assert_eq!(names.count("hrtimer_expire_entry"), 1);
    assert_eq!(names.count("hrtimer_expire_exit"), 1);
}
