//! `Handle::init_global` sets up the process-wide runtime before its first
//! use, and only then.

use std::time::Duration;
use utimer::TimerSystem;
use utimer_async::{AlreadyStarted, Handle};

#[test]
fn init_global_applies_before_the_first_use_and_is_refused_after() {
    assert_eq!(
        Handle::init_global(TimerSystem::builder().workers(1)),
        Ok(())
    );
    // A later call before the start replaces it.
    assert_eq!(
        Handle::init_global(TimerSystem::builder().workers(3)),
        Ok(())
    );
    let start = std::time::Instant::now();
    futures::executor::block_on(utimer_async::sleep(Duration::from_millis(2)));
    assert!(start.elapsed() >= Duration::from_millis(2));
    assert_eq!(Handle::global().system().workers(), 3);
    let late = Handle::init_global(TimerSystem::builder().workers(5));
    let err: AlreadyStarted = late.unwrap_err();
    assert!(err.to_string().contains("already started"), "{err}");
    assert_eq!(Handle::global().system().workers(), 3);
}
