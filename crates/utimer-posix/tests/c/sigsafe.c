/*
 * sigsafe.c - async-signal-safety stress.  POSIX lists timer_settime,
 * timer_gettime and timer_getoverrun as async-signal-safe; the kernel's
 * timerfd_settime/gettime are plain system calls and are safe too.  Signal
 * handlers, a SIGEV_THREAD callback and the main thread hammer the same
 * timers concurrently; a deadlock trips the watchdog, a failed call or a
 * torn value fails the test.
 */
#include "check.h"
#include <sys/time.h>
#include <sys/timerfd.h>

#define P1 (20 * NS_PER_US)  /* T1: SIGRTMIN, re-armed by its own handler */
#define P2 (500 * NS_PER_US) /* T2: SIGRTMIN+1, nests into T1's handler */
#define P3 (2 * NS_PER_MS)   /* T3: SIGEV_THREAD */
#define PF (100 * NS_PER_US) /* timerfd */

static timer_t t1, t2, t3;
static int tfd;

static _Atomic long h1_count, h2_count, cb_count, alrm_count, main_iter;
static _Atomic long failures, bad_values;
static _Atomic int first_fail_line, first_fail_errno;

static void fail_at(int line, int err)
{
    if (atomic_fetch_add(&failures, 1) == 0) {
        atomic_store(&first_fail_line, line);
        atomic_store(&first_fail_errno, err);
    }
}

#define SAFE(call)                                                                      \
    do {                                                                                \
        if ((call) == -1)                                                               \
            fail_at(__LINE__, errno);                                                   \
    } while (0)

static void rearm(timer_t t, int64_t p)
{
    struct itimerspec its = its_ns(p, p);
    SAFE(timer_settime(t, 0, &its, NULL));
}

/* Every writer uses the same period per timer, so any read must show it, or
 * a zero interval: the kernel clears the interval at the start of a
 * timer_settime and may drop the timer's lock while it waits for a running
 * expiry, and a concurrent timer_gettime can see that moment. */
static void check_interval(timer_t t, int64_t p)
{
    struct itimerspec g;
    if (timer_gettime(t, &g) == -1)
        fail_at(__LINE__, errno);
    else if ((ts_ns(&g.it_interval) != p && ts_ns(&g.it_interval) != 0) ||
             ts_ns(&g.it_value) < 0 || ts_ns(&g.it_value) > p)
        atomic_fetch_add(&bad_values, 1);
}

static void fd_ops(int rearm_it)
{
    struct itimerspec g, its = its_ns(PF, PF);
    if (timerfd_gettime(tfd, &g) == -1)
        fail_at(__LINE__, errno);
    else if (ts_ns(&g.it_interval) != PF || ts_ns(&g.it_value) > PF)
        atomic_fetch_add(&bad_values, 1);
    if (rearm_it)
        SAFE(timerfd_settime(tfd, 0, &its, NULL));
}

static void h1(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    int e = errno;
    if (si->si_code == SI_TIMER) {
        atomic_fetch_add(&h1_count, 1);
        check_interval(t1, P1);
        SAFE(timer_getoverrun(t1));
        rearm(t1, P1);
        check_interval(t2, P2);
        SAFE(timer_getoverrun(t2));
        /* Every 64th run: T1's handler runs every 20-100 us, so a re-arm
         * every 8th kept pushing T2 (500 us) past its expiry for ever. */
        if ((atomic_load(&h1_count) & 63) == 0)
            rearm(t2, P2);
        fd_ops(1);
    }
    errno = e;
}

static void h2(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    int e = errno;
    if (si->si_code == SI_TIMER) {
        atomic_fetch_add(&h2_count, 1);
        check_interval(t1, P1);
        rearm(t1, P1);
        SAFE(timer_getoverrun(t2));
        check_interval(t2, P2);
        fd_ops(0);
    }
    errno = e;
}

static void cb(union sigval v)
{
    (void)v;
    atomic_fetch_add(&cb_count, 1);
    check_interval(t1, P1);
    SAFE(timer_getoverrun(t1));
    rearm(t1, P1);
    check_interval(t2, P2);
    check_interval(t3, P3);
    SAFE(timer_getoverrun(t3));
    fd_ops(1);
}

static void alrm(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    int e = errno;
    atomic_fetch_add(&alrm_count, 1);
    check_interval(t1, P1);
    SAFE(timer_getoverrun(t1));
    check_interval(t2, P2);
    fd_ops(0);
    errno = e;
}

static timer_t mk(int notify, int signo)
{
    struct sigevent ev;
    timer_t t;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = notify;
    ev.sigev_signo = signo;
    ev.sigev_notify_function = cb;
    CHECK_OK(timer_create(CLOCK_MONOTONIC, &ev, &t));
    return t;
}

static void main_loop(int64_t duration)
{
    int64_t end = mono_ns() + duration;
    uint64_t n;
    for (long i = 0; mono_ns() < end; i++) {
        /* Re-arm only now and then, or the timers would never expire. */
        if ((i & 15) == 0)
            rearm(t1, P1);
        check_interval(t1, P1);
        SAFE(timer_getoverrun(t1));
        if ((i & 1023) == 0)
            rearm(t2, P2);
        check_interval(t2, P2);
        SAFE(timer_getoverrun(t2));
        check_interval(t3, P3);
        fd_ops(1);
        if (read(tfd, &n, sizeof n) == -1 && errno != EAGAIN && errno != EINTR)
            fail_at(__LINE__, errno);
        atomic_fetch_add(&main_iter, 1);
    }
}

static void report(const char *what)
{
    note("%s: h1=%ld h2=%ld cb=%ld alrm=%ld main=%ld", what, atomic_load(&h1_count),
         atomic_load(&h2_count), atomic_load(&cb_count), atomic_load(&alrm_count),
         atomic_load(&main_iter));
    CHECK(atomic_load(&failures) == 0, "%s: %ld calls failed; first at line %d errno %d (%s)",
          what, atomic_load(&failures), atomic_load(&first_fail_line),
          atomic_load(&first_fail_errno), strerror(atomic_load(&first_fail_errno)));
    CHECK(atomic_load(&bad_values) == 0, "%s: %ld gettime results with a wrong interval",
          what, atomic_load(&bad_values));
    CHECK(atomic_load(&main_iter) > 10, "%s: main made little progress (%ld loops)", what,
          atomic_load(&main_iter));
}

int main(void)
{
    check_init("sigsafe", 30);
    phase("setup", 5);
    set_handler(SIGRTMIN, h1, 0);
    set_handler(SIGRTMIN + 1, h2, 0);
    t1 = mk(SIGEV_SIGNAL, SIGRTMIN);
    t2 = mk(SIGEV_SIGNAL, SIGRTMIN + 1);
    t3 = mk(SIGEV_THREAD, 0);
    tfd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    struct itimerspec its = its_ns(PF, PF);
    CHECK_OK(timerfd_settime(tfd, 0, &its, NULL));
    rearm(t1, P1);
    rearm(t2, P2);
    rearm(t3, P3);

    phase("timer-signal stress (2 s, watchdog 20 s)", 20);
    main_loop(2 * NS_PER_S);
    /* Stop the handlers (T3's callback keeps running through phase 2). */
    block_sig(SIGRTMIN);
    block_sig(SIGRTMIN + 1);
    report("timer signals");
    CHECK(atomic_load(&h1_count) > 100, "SIGRTMIN handler ran only %ld times",
          atomic_load(&h1_count));
    CHECK(atomic_load(&h2_count) > 10, "SIGRTMIN+1 handler ran only %ld times",
          atomic_load(&h2_count));
    CHECK(atomic_load(&cb_count) > 10, "SIGEV_THREAD callback ran only %ld times",
          atomic_load(&cb_count));

    /* setitimer(ITIMER_REAL) at 50 us: SIGALRM interrupts the main loop's
     * timer calls and itself calls timer_gettime/getoverrun/timerfd_gettime. */
    phase("itimer stress (0.7 s, watchdog 20 s)", 20);
    atomic_store(&main_iter, 0);
    set_handler(SIGALRM, alrm, 0);
    unblock_sig(SIGALRM);
    struct itimerval iv = {{0, 50}, {0, 50}};
    CHECK_OK(setitimer(ITIMER_REAL, &iv, NULL));
    main_loop(700 * NS_PER_MS);
    struct itimerval off = {{0, 0}, {0, 0}};
    CHECK_OK(setitimer(ITIMER_REAL, &off, NULL));
    report("itimer");
    CHECK(atomic_load(&alrm_count) > 100, "SIGALRM handler ran only %ld times",
          atomic_load(&alrm_count));

    phase("teardown", 5);
    its = its_ns(0, 0);
    CHECK_OK(timer_settime(t3, 0, &its, NULL));
    CHECK_OK(timer_settime(t1, 0, &its, NULL));
    CHECK_OK(timer_settime(t2, 0, &its, NULL));
    CHECK_OK(timer_delete(t1));
    CHECK_OK(timer_delete(t2));
    CHECK_OK(timer_delete(t3));
    CHECK_OK(close(tfd));
    check_ok();
    return 0;
}
