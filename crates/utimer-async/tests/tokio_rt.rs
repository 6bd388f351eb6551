//! Under tokio's current-thread and multi-thread runtimes.

mod common;

use common::*;
use std::time::Duration;
use utimer_async::Instant;

fn current() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

fn multi() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap()
}

#[test]
fn current_thread_sleep_timeout_reset() {
    current().block_on(async {
        sleep_never_early().await;
        timeout_fires_and_passes_through().await;
        reset_moves_the_deadline().await;
    });
}

#[test]
fn multi_thread_sleep_timeout_reset() {
    multi().block_on(async {
        let tasks = [
            tokio::spawn(sleep_never_early()),
            tokio::spawn(timeout_fires_and_passes_through()),
            tokio::spawn(reset_moves_the_deadline()),
            tokio::spawn(drop_is_prompt()),
        ];
        for t in tasks {
            t.await.unwrap();
        }
    });
}

#[test]
fn current_thread_interval() {
    current().block_on(async {
        interval_ticks_at_multiples().await;
        missed_tick_behaviours().await;
    });
}

#[test]
fn multi_thread_interval() {
    multi().block_on(async {
        tokio::spawn(interval_ticks_at_multiples()).await.unwrap();
    });
}

#[test]
fn ten_thousand_sleeps_multi_thread() {
    let start = Instant::now();
    multi().block_on(async {
        let tasks: Vec<_> = (0..10_000).map(|i| tokio::spawn(one_of_many(i))).collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn ten_thousand_sleeps_current_thread() {
    current().block_on(async {
        let set = tokio::task::LocalSet::new();
        set.run_until(async {
            let tasks: Vec<_> = (0..10_000)
                .map(|i| tokio::task::spawn_local(one_of_many(i)))
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
        })
        .await;
    });
}

#[test]
fn select_against_tokio_futures() {
    // The other runtimes here have no time driver: utimer's futures need
    // none. This one has one, for tokio's own sleep.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let start = Instant::now();
        tokio::select! {
            _ = utimer_async::sleep(Duration::from_millis(2)) => {}
            _ = tokio::time::sleep(Duration::from_secs(60)) => panic!("wrong branch"),
        }
        assert!(start.elapsed() >= Duration::from_millis(2));
    });
}
