//! The process-wide runtime has one worker per CPU, and a future's timer
//! goes to the worker of the CPU its task runs on (the kernel's local
//! base), so the threads of a multi-thread executor never share a base.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Waker};
use std::time::Duration;
use utimer_async::Handle;

/// The CPUs this process may run on.
fn process_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity
    // fills it for this thread.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
            0
        );
        set
    };
    // SAFETY: CPU_ISSET reads the set.
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Pins the calling thread to `cpu`.
fn pin_to(cpu: usize) {
    // SAFETY: as above; sched_setaffinity reads the set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
            0
        );
    }
}

#[test]
fn each_cpu_has_a_worker_and_a_sleep_queues_on_its_cpus_worker() {
    let cpus = process_cpus();
    let workers = Handle::global().system().workers();
    assert_eq!(workers, cpus.len(), "one worker per CPU of the process");
    // Worker i is pinned to cpus[i]: a sleep first polled on cpus[i]
    // queues there, also when the same thread moved there from another
    // CPU (an executor's thread migrates; its timers follow the CPU).
    std::thread::spawn(move || {
        for _round in 0..2 {
            for (worker, &cpu) in cpus.iter().enumerate().take(8) {
                pin_to(cpu);
                let mut s = pin!(utimer_async::sleep(Duration::from_secs(60)));
                let mut cx = Context::from_waker(Waker::noop());
                assert!(s.as_mut().poll(&mut cx).is_pending());
                let h = Handle::global();
                let pending = h.system().metrics().hr_stats(worker).unwrap().pending;
                assert_eq!(
                    pending, 1,
                    "the sleep polled on CPU {cpu} is not on worker {worker}"
                );
            }
        }
    })
    .join()
    .unwrap();
}
