/* overrun.c - timer signal queueing and overrun semantics. */
#include "check.h"

#define TO_2S (2 * NS_PER_S)

static timer_t mk_timer(int signo, int sival)
{
    struct sigevent ev;
    timer_t t;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = signo;
    ev.sigev_value.sival_int = sival;
    CHECK_OK(timer_create(CLOCK_MONOTONIC, &ev, &t));
    return t;
}

static void set_ns(timer_t t, int64_t v, int64_t i)
{
    struct itimerspec its = its_ns(v, i);
    CHECK_OK(timer_settime(t, 0, &its, NULL));
}

/* Expirations counted by the kernel between arming and acceptance must lie
 * in [lo_elapsed/P - slack, hi_elapsed/P + 2]; slack is generous (25% + 2). */
static void check_total(const char *what, long long total, int64_t lo_elapsed,
                        int64_t hi_elapsed, int64_t period)
{
    long long lo = lo_elapsed / period, hi = hi_elapsed / period + 2;
    long long min = lo - lo / 4 - 2;
    if (min < 1)
        min = 1;
    note("%s: total %lld, bounds [%lld, %lld], raw [%lld, %lld]", what, total, min, hi,
         lo, hi - 2);
    CHECK(total >= min && total <= hi,
          "%s: expirations expected in [%lld, %lld] (elapsed %lld..%lld us, period %lld "
          "us), got %lld",
          what, min, hi, (long long)(lo_elapsed / 1000), (long long)(hi_elapsed / 1000),
          (long long)(period / 1000), total);
}

/* A periodic timer blocked for ~50 ms queues exactly one signal. */
static void test_blocked_periodic(void)
{
    int sig = SIGRTMIN;
    sigset_t set = sigset_of(sig);
    siginfo_t si;
    int64_t P = NS_PER_MS;
    block_sig(sig);
    timer_t t = mk_timer(sig, 11);
    int64_t a0 = mono_ns();
    set_ns(t, P, P);
    int64_t a1 = mono_ns();
    sleep_ns(50 * NS_PER_MS);
    int64_t pre = mono_ns();
    CHECK(sigwaitinfo(&set, &si) == sig, "sigwaitinfo: errno %d", errno);
    int64_t post = mono_ns();
    int ov_get = timer_getoverrun(t); /* right after acceptance */
    struct itimerspec g;
    int64_t g0 = mono_ns();
    CHECK_OK(timer_gettime(t, &g));
    siginfo_t si2;
    int r2 = sigtimedwait(&set, &si2, &(struct timespec){0, 0});
    int e2 = errno;
    int64_t c = mono_ns();
    CHECK(si.si_code == SI_TIMER && si.si_value.sival_int == 11, "bad siginfo %d/%d",
          si.si_code, si.si_value.sival_int);
    CHECK(si.si_overrun >= 1, "si_overrun after 50 ms of a 1 ms timer: expected >= 1, got %d",
          si.si_overrun);
    check_total("blocked 1ms timer (1 + si_overrun)", 1LL + si.si_overrun, pre - a1, post - a0,
                P);
    CHECK(ov_get == si.si_overrun, "timer_getoverrun %d != si_overrun %d", ov_get,
          si.si_overrun);
    /* Only one signal was queued: a second one may only be a *new* expiration,
     * i.e. one due (per timer_gettime) before the second wait returned. */
    CHECK(r2 == -1 ? e2 == EAGAIN : g0 + ts_ns(&g.it_value) <= c,
          "second signal queued for one timer: sigtimedwait=%d (next expiry in %lld ns, "
          "checked %lld ns later)",
          r2, (long long)ts_ns(&g.it_value), (long long)(c - g0));
    CHECK_OK(timer_delete(t));
    while (wait_sig(&set, &si, 0) > 0) {
    }
}

/* Two one-shot timers sharing a real-time signal both deliver. */
static void test_shared_signal(void)
{
    int sig = SIGRTMIN + 1;
    sigset_t set = sigset_of(sig);
    siginfo_t si;
    block_sig(sig);
    timer_t a = mk_timer(sig, 1), b = mk_timer(sig, 2);
    set_ns(a, 2 * NS_PER_MS, 0);
    set_ns(b, 3 * NS_PER_MS, 0);
    int seen = 0;
    for (int k = 0; k < 2; k++) {
        CHECK(wait_sig(&set, &si, TO_2S) == sig, "shared signal: only %d of 2 arrived", k);
        CHECK(si.si_code == SI_TIMER, "si_code %d", si.si_code);
        CHECK(si.si_value.sival_int == 1 || si.si_value.sival_int == 2, "sival %d",
              si.si_value.sival_int);
        seen |= 1 << si.si_value.sival_int;
    }
    CHECK(seen == 6, "shared signal: expected sival 1 and 2, got mask %#x", seen);
    CHECK(wait_sig(&set, &si, 20 * NS_PER_MS) == -1, "a third signal arrived");

    /* A sigqueue()d signal of the same number left pending does not stop the
     * timer's own signal (both orders). */
    for (int order = 0; order < 2; order++) {
        if (order == 0)
            CHECK_OK(sigqueue(getpid(), sig, (union sigval){.sival_int = 99}));
        set_ns(a, NS_PER_MS, 0);
        sleep_ns(10 * NS_PER_MS);
        if (order == 1)
            CHECK_OK(sigqueue(getpid(), sig, (union sigval){.sival_int = 99}));
        seen = 0;
        for (int k = 0; k < 2; k++) {
            CHECK(wait_sig(&set, &si, TO_2S) == sig, "order %d: only %d of 2 arrived", order,
                  k);
            if (si.si_code == SI_QUEUE && si.si_value.sival_int == 99)
                seen |= 1;
            else if (si.si_code == SI_TIMER && si.si_value.sival_int == 1)
                seen |= 2;
        }
        CHECK(seen == 3, "order %d: expected SI_QUEUE/99 and SI_TIMER/1, got mask %d", order,
              seen);
    }
    CHECK_OK(timer_delete(a));
    CHECK_OK(timer_delete(b));
}

/* Sum of (1 + si_overrun) over a 100 us periodic timer ~= elapsed / period. */
static void test_total_expirations(void)
{
    int sig = SIGRTMIN + 2;
    sigset_t set = sigset_of(sig);
    siginfo_t si;
    int64_t P = 100 * NS_PER_US;
    block_sig(sig);
    timer_t t = mk_timer(sig, 3);
    int64_t a0 = mono_ns();
    set_ns(t, P, P);
    int64_t a1 = mono_ns(), pre = a1, post = a1;
    long long total = 0, nsig = 0;
    while (post - a1 < 300 * NS_PER_MS) {
        pre = mono_ns();
        CHECK(sigwaitinfo(&set, &si) == sig, "sigwaitinfo: errno %d", errno);
        post = mono_ns();
        CHECK(si.si_code == SI_TIMER && si.si_value.sival_int == 3 && si.si_overrun >= 0,
              "bad siginfo code %d value %d overrun %d", si.si_code, si.si_value.sival_int,
              si.si_overrun);
        total += 1 + si.si_overrun;
        nsig++;
    }
    CHECK_OK(timer_delete(t));
    check_total("100us timer, sum(1 + si_overrun)", total, pre - a1, post - a0, P);
    CHECK(nsig >= 2, "only %lld signals in 300 ms", nsig);
}

static int pending(int sig)
{
    sigset_t p;
    CHECK_OK(sigpending(&p));
    return sigismember(&p, sig);
}

static void wait_pending(int sig)
{
    int64_t end = mono_ns() + TO_2S;
    while (!pending(sig)) {
        CHECK(mono_ns() < end, "timer signal not pending after 2 s");
        sleep_ns(200 * NS_PER_US);
    }
}

static _Atomic int hcount;
static _Atomic long long htotal;
static void count_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (si->si_code == SI_TIMER) {
        atomic_fetch_add(&hcount, 1);
        atomic_fetch_add(&htotal, 1 + si->si_overrun);
    }
}

/*
 * A stale queued timer signal is dropped when the timer is re-armed,
 * disarmed or deleted.  Observed on kernel 6.18: since the posix-timers
 * signal-handling rework merged in Linux 6.13 ("posix-timers: Cure the
 * signal handling", timer signal sequence numbers), the signal is discarded
 * at dequeue time: sigtimedwait(0) gives EAGAIN and no handler runs.
 * (sigpending() may still report it until that dequeue attempt; not asserted.)
 */
static void test_stale_dropped(void)
{
    int sig = SIGRTMIN + 3;
    sigset_t set = sigset_of(sig);
    siginfo_t si;
    block_sig(sig);
    timer_t t = mk_timer(sig, 4);
    for (int mode = 0; mode < 4; mode++) {
        /* 0: one-shot, re-arm far; 1: periodic, re-arm one-shot far; 2: disarm;
         * 3: one-shot, re-arm 5 ms: only the new expiration arrives. */
        set_ns(t, NS_PER_MS, mode == 1 ? NS_PER_MS : 0);
        wait_pending(sig);
        if (mode == 1)
            sleep_ns(5 * NS_PER_MS);
        int64_t r0 = mono_ns();
        set_ns(t, mode == 2 ? 0 : mode == 3 ? 5 * NS_PER_MS : 10 * NS_PER_S, 0);
        if (mode == 3) {
            CHECK(wait_sig(&set, &si, TO_2S) == sig, "re-armed timer did not fire");
            int64_t el = mono_ns() - r0;
            CHECK(el >= 5 * NS_PER_MS,
                  "stale or early signal after re-arm to 5 ms: got one after %lld ns",
                  (long long)el);
            CHECK(wait_sig(&set, &si, 20 * NS_PER_MS) == -1, "two signals after re-arm");
        } else {
            CHECK(wait_sig(&set, &si, 0) == -1 && errno == EAGAIN,
                  "mode %d: stale timer signal still delivered after %s", mode,
                  mode == 2 ? "disarm" : "re-arm");
        }
    }
    /* Same with a handler: pending, re-arm, unblock -> handler never runs. */
    set_handler(sig, count_handler, 0);
    set_ns(t, NS_PER_MS, 0);
    wait_pending(sig);
    set_ns(t, 10 * NS_PER_S, 0);
    atomic_store(&hcount, 0);
    unblock_sig(sig);
    sleep_ns(20 * NS_PER_MS);
    block_sig(sig);
    CHECK(atomic_load(&hcount) == 0, "handler ran %d times for a stale signal",
          atomic_load(&hcount));

    /* timer_delete with the signal pending drops it too. */
    set_ns(t, NS_PER_MS, 0);
    wait_pending(sig);
    CHECK_OK(timer_delete(t));
    CHECK(wait_sig(&set, &si, 0) == -1 && errno == EAGAIN,
          "signal of a deleted timer still delivered (sival %d)", si.si_value.sival_int);
    /* A new timer on the same signal then delivers exactly its own one. */
    t = mk_timer(sig, 5);
    int64_t r0 = mono_ns();
    set_ns(t, 3 * NS_PER_MS, 0);
    CHECK(wait_sig(&set, &si, TO_2S) == sig, "new timer did not fire");
    CHECK(si.si_value.sival_int == 5 && mono_ns() - r0 >= 3 * NS_PER_MS,
          "expected the new timer's signal (sival 5, >= 3 ms), got sival %d",
          si.si_value.sival_int);
    CHECK_OK(timer_delete(t));
    CHECK(wait_sig(&set, &si, 10 * NS_PER_MS) == -1, "extra signal after delete");
}

/*
 * SIG_IGN (selftest check_sig_ign idea).  Observed on 6.18 (rework in 6.13):
 * a periodic timer whose signal is ignored keeps running; when a handler is
 * installed again the signal is delivered again, and the expirations during
 * the ignored period are reported as overruns.
 */
static void test_sig_ign(void)
{
    int sig = SIGRTMIN + 4;
    sigset_t set = sigset_of(sig);
    siginfo_t si;
    int64_t P = 5 * NS_PER_MS;
    set_handler(sig, count_handler, 0);
    unblock_sig(sig);
    atomic_store(&hcount, 0);
    atomic_store(&htotal, 0);
    timer_t t = mk_timer(sig, 6);
    int64_t a0 = mono_ns();
    set_ns(t, P, P);
    int64_t a1 = mono_ns(), end = a1 + TO_2S;
    while (atomic_load(&hcount) < 3 && mono_ns() < end)
        sleep_ns(NS_PER_MS);
    CHECK(atomic_load(&hcount) >= 3, "periodic timer delivered %d signals in 2 s",
          atomic_load(&hcount));
    CHECK(signal(sig, SIG_IGN) != SIG_ERR, "signal(SIG_IGN)");
    int c1 = atomic_load(&hcount);
    sleep_ns(50 * NS_PER_MS);
    int c2 = atomic_load(&hcount);
    CHECK(c1 == c2, "handler ran %d times while the signal was ignored", c2 - c1);
    set_handler(sig, count_handler, 0);
    end = mono_ns() + TO_2S;
    while (atomic_load(&hcount) < c2 + 3 && mono_ns() < end)
        sleep_ns(NS_PER_MS);
    CHECK(atomic_load(&hcount) >= c2 + 3,
          "no delivery after restoring the handler (%d signals in 2 s)",
          atomic_load(&hcount) - c2);
    /* Collect the last expirations synchronously so that the accounting
     * covers everything up to a known instant. */
    block_sig(sig);
    sleep_ns(3 * P);
    int64_t pre = mono_ns();
    CHECK(wait_sig(&set, &si, TO_2S) == sig, "periodic timer stopped after restore");
    int64_t post = mono_ns();
    CHECK_OK(timer_delete(t));
    /* Ignored expirations were not lost: the total still tracks time. */
    long long tot = atomic_load(&htotal) + 1 + si.si_overrun;
    check_total("SIG_IGN then handler, sum(1 + si_overrun)", tot, pre - a1, post - a0, P);
    while (wait_sig(&set, &si, 0) > 0) {
    }

    /* Blocked variant: pending signal discarded by SIG_IGN, handler restored,
     * then one signal carries every expiration since arming. */
    t = mk_timer(sig, 7);
    a0 = mono_ns();
    set_ns(t, 10 * NS_PER_MS, 10 * NS_PER_MS);
    a1 = mono_ns();
    sleep_ns(30 * NS_PER_MS);
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    CHECK_OK(sigaction(sig, &ign, NULL));
    sleep_ns(30 * NS_PER_MS);
    set_handler(sig, count_handler, 0);
    sleep_ns(30 * NS_PER_MS);
    pre = mono_ns();
    CHECK(wait_sig(&set, &si, TO_2S) == sig, "no signal after SIG_IGN and restore");
    post = mono_ns();
    CHECK(si.si_value.sival_int == 7 && si.si_code == SI_TIMER, "bad siginfo");
    check_total("blocked, SIG_IGN, restore: 1 + si_overrun", 1LL + si.si_overrun, pre - a1,
                post - a0, 10 * NS_PER_MS);
    CHECK_OK(timer_delete(t));
}

int main(void)
{
    check_init("overrun", 20);
    phase("blocked_periodic", 5);
    test_blocked_periodic();
    phase("shared_signal", 5);
    test_shared_signal();
    phase("total_expirations", 5);
    test_total_expirations();
    phase("stale_dropped", 5);
    test_stale_dropped();
    phase("sig_ign", 5);
    test_sig_ign();
    check_ok();
    return 0;
}
