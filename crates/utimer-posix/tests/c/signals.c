/* signals.c - every timer signal delivered, each timer's on its own (standard
 * signals included), with the overrun latched at acceptance. */
#include "check.h"
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>

static timer_t mk_timer(int notify, int signo, int sival)
{
    struct sigevent ev;
    timer_t t;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = notify;
    ev.sigev_signo = signo;
    ev.sigev_value.sival_int = sival;
    if (notify == SIGEV_THREAD_ID)
        ev.sigev_notify_thread_id = gettid();
    CHECK_OK(timer_create(CLOCK_MONOTONIC, &ev, &t));
    return t;
}

static void arm_abs(timer_t t, int64_t at, int64_t interval)
{
    struct itimerspec its = {.it_value = ns_ts(at), .it_interval = ns_ts(interval)};
    CHECK_OK(timer_settime(t, TIMER_ABSTIME, &its, NULL));
}

static void arm_rel(timer_t t, int64_t value, int64_t interval)
{
    struct itimerspec its = its_ns(value, interval);
    CHECK_OK(timer_settime(t, 0, &its, NULL));
}

/* A one-shot timer of `sig` (blocked) that expired 10 ms ago: its signal
 * is queued by now. */
static timer_t expired_one_shot(int sig, int sival)
{
    timer_t t = mk_timer(SIGEV_SIGNAL, sig, sival);
    arm_rel(t, NS_PER_MS, 0);
    sleep_ns(10 * NS_PER_MS);
    return t;
}

/* Takes every pending instance of `sig` (blocked) off, waiting for none. */
static void drain(int sig)
{
    sigset_t set = sigset_of(sig);
    siginfo_t si;
    while (wait_sig(&set, &si, 0) == sig) {
    }
}

static int is_pending(int sig)
{
    sigset_t p;
    CHECK_OK(sigpending(&p));
    return sigismember(&p, sig);
}

/* Thirty one-shot timers on one standard signal, all expired while it is
 * blocked: the kernel queues each timer's signal on its own. */
static void test_standard_each_queued(void)
{
    enum { N = 30 };
    int sig = SIGUSR1, seen[N] = {0};
    sigset_t set = sigset_of(sig);
    timer_t t[N];
    siginfo_t si;
    block_sig(sig);
    for (int i = 0; i < N; i++) {
        t[i] = mk_timer(SIGEV_SIGNAL, sig, i);
        arm_rel(t[i], NS_PER_MS, 0);
    }
    sleep_ns(40 * NS_PER_MS);
    for (int i = 0; i < N; i++) {
        int r = wait_sig(&set, &si, 2 * NS_PER_S);
        CHECK(r == sig, "signal %d of %d: expected SIGUSR1, got %d (errno %d)", i + 1, N, r,
              errno);
        CHECK(si.si_code == SI_TIMER, "si_code: expected SI_TIMER, got %d", si.si_code);
        int v = si.si_value.sival_int;
        CHECK(v >= 0 && v < N && !seen[v], "sival %d out of range or twice", v);
        CHECK(si.si_overrun == 0, "one-shot: si_overrun expected 0, got %d", si.si_overrun);
        seen[v] = 1;
    }
    CHECK(wait_sig(&set, &si, 50 * NS_PER_MS) == -1, "a 31st signal arrived (sival %d)",
          si.si_value.sival_int);
    for (int i = 0; i < N; i++)
        CHECK_OK(timer_delete(t[i]));
    unblock_sig(sig);
}

/* A sigqueue()d signal pending before the timer's: both are delivered, the
 * queued one first. */
static void test_beside_sigqueue(void)
{
    int sig = SIGUSR2;
    sigset_t set = sigset_of(sig);
    siginfo_t si;
    block_sig(sig);
    CHECK_OK(sigqueue(getpid(), sig, (union sigval){.sival_int = 99}));
    timer_t t = mk_timer(SIGEV_SIGNAL, sig, 5);
    arm_rel(t, NS_PER_MS, 0);
    sleep_ns(20 * NS_PER_MS);
    CHECK(wait_sig(&set, &si, NS_PER_S) == sig, "first signal missing");
    CHECK(si.si_code == SI_QUEUE && si.si_value.sival_int == 99,
          "first: expected the sigqueue()d one, got code %d sival %d", si.si_code,
          si.si_value.sival_int);
    CHECK(wait_sig(&set, &si, NS_PER_S) == sig, "the timer's signal was lost");
    CHECK(si.si_code == SI_TIMER && si.si_value.sival_int == 5,
          "second: expected the timer's, got code %d sival %d", si.si_code,
          si.si_value.sival_int);
    CHECK_OK(timer_delete(t));
    unblock_sig(sig);
}

/* A deleted timer's pending signal is discarded: it never reaches the
 * program, and the next timer's signal on that number is delivered with its
 * overrun (selftests' check_overrun). */
static void test_deleted_discarded(void)
{
    int sig = SIGUSR1;
    sigset_t set = sigset_of(sig);
    siginfo_t si;
    block_sig(sig);
    timer_t a = expired_one_shot(sig, 1);
    CHECK(is_pending(sig), "the first timer's signal is not pending");
    CHECK_OK(timer_delete(a));
    /* The kernel leaves it pending, and drops it when it is dequeued. */
    CHECK(wait_sig(&set, &si, 30 * NS_PER_MS) == -1, "the deleted timer's signal (sival %d)",
          si.si_value.sival_int);
    CHECK(!is_pending(sig), "the deleted timer's signal is still pending after a wait");
    /* The same for a re-armed timer's old signal. */
    a = expired_one_shot(sig, 1);
    arm_rel(a, 3600 * NS_PER_S, 0);
    CHECK(wait_sig(&set, &si, 30 * NS_PER_MS) == -1, "the re-armed timer's old signal");
    CHECK_OK(timer_delete(a));
    /* A deleted timer's pending signal does not keep the next timer's out. */
    a = expired_one_shot(sig, 1);
    CHECK_OK(timer_delete(a));
    timer_t b = mk_timer(SIGEV_SIGNAL, sig, 2);
    int64_t P = NS_PER_MS, t0 = mono_ns() + P;
    arm_abs(b, t0, P);
    sleep_ns(20 * NS_PER_MS);
    int64_t pre = mono_ns();
    CHECK(wait_sig(&set, &si, NS_PER_S) == sig, "the live timer's signal was lost");
    int64_t post = mono_ns();
    CHECK(si.si_value.sival_int == 2, "the deleted timer's signal was delivered");
    long long total = 1LL + si.si_overrun;
    long long lo = (pre - t0) / P + 1, hi = (post - t0) / P + 1;
    CHECK(total >= lo && total <= hi, "1 + si_overrun: expected [%lld, %lld], got %lld", lo,
          hi, total);
    CHECK_OK(timer_delete(b));
    CHECK(wait_sig(&set, &si, 30 * NS_PER_MS) == -1, "a signal after delete (sival %d)",
          si.si_value.sival_int);
    unblock_sig(sig);
}

/* Periodic timer read with sigtimedwait: each signal's 1 + si_overrun adds up
 * to the periods elapsed at its acceptance, exactly, and timer_getoverrun
 * agrees with si_overrun. */
static void test_exact_overrun(int notify, int sig, int64_t P, int64_t run)
{
    sigset_t set = sigset_of(sig);
    siginfo_t si;
    block_sig(sig);
    timer_t t = mk_timer(notify, sig, 3);
    int64_t t0 = mono_ns() + NS_PER_MS;
    arm_abs(t, t0, P);
    long long total = 0, n = 0;
    int64_t end = t0 + run;
    while (mono_ns() < end) {
        int64_t pre = mono_ns();
        CHECK(wait_sig(&set, &si, NS_PER_S) == sig, "signal %lld missing", n + 1);
        int64_t post = mono_ns();
        int ov = timer_getoverrun(t);
        total += 1LL + si.si_overrun;
        n++;
        long long lo = pre < t0 ? 1 : (pre - t0) / P + 1, hi = (post - t0) / P + 1;
        CHECK(total >= lo && total <= hi,
              "signal %lld (notify %d, period %lld us): signals + overruns %lld, periods "
              "elapsed at acceptance in [%lld, %lld]",
              n, notify, (long long)(P / 1000), total, lo, hi);
        CHECK(ov == si.si_overrun, "timer_getoverrun %d, si_overrun %d", ov, si.si_overrun);
        if (n % 64 == 0)
            sleep_ns(P * 7 / 2); /* let periods pass while pending */
    }
    note("notify %d period %lld: %lld signals, total %lld", notify, (long long)P, n, total);
    CHECK_OK(timer_delete(t));
    drain(sig);
    unblock_sig(sig);
}

/* The same through a signalfd: ssi_overrun is the overrun at the read. */
static void test_signalfd_overrun(void)
{
    int sig = SIGRTMIN + 2;
    sigset_t set = sigset_of(sig);
    int64_t P = 100 * NS_PER_US;
    block_sig(sig);
    int fd = CHECK_OK(signalfd(-1, &set, SFD_CLOEXEC));
    timer_t t = mk_timer(SIGEV_SIGNAL, sig, 4);
    int64_t t0 = mono_ns() + NS_PER_MS;
    arm_abs(t, t0, P);
    long long total = 0, n = 0;
    int64_t end = t0 + 200 * NS_PER_MS;
    while (mono_ns() < end) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        CHECK(poll(&pfd, 1, 1000) == 1, "signalfd not readable");
        struct signalfd_siginfo rec;
        int64_t pre = mono_ns();
        CHECK(read(fd, &rec, sizeof rec) == (ssize_t)sizeof rec, "read: errno %d", errno);
        int64_t post = mono_ns();
        int ov = timer_getoverrun(t);
        CHECK((int)rec.ssi_code == SI_TIMER && rec.ssi_int == 4, "bad record");
        total += 1LL + rec.ssi_overrun;
        n++;
        long long lo = (pre - t0) / P + 1, hi = (post - t0) / P + 1;
        CHECK(total >= lo && total <= hi,
              "record %lld: signals + overruns %lld, periods elapsed at the read in "
              "[%lld, %lld]",
              n, total, lo, hi);
        CHECK(ov == (int)rec.ssi_overrun, "timer_getoverrun %d, ssi_overrun %u", ov,
              rec.ssi_overrun);
        if (n % 32 == 0)
            sleep_ns(P * 5);
    }
    CHECK_OK(timer_delete(t));
    CHECK_OK(close(fd));
    drain(sig);
    unblock_sig(sig);
}

/* While the timer's signal is pending, timer_getoverrun reports the last
 * delivered signal's overrun. */
static void test_getoverrun_while_pending(void)
{
    int sig = SIGRTMIN + 3;
    sigset_t set = sigset_of(sig);
    siginfo_t si;
    block_sig(sig);
    timer_t t = mk_timer(SIGEV_SIGNAL, sig, 6);
    arm_rel(t, NS_PER_MS, NS_PER_MS);
    CHECK(wait_sig(&set, &si, NS_PER_S) == sig, "first signal missing");
    int first = si.si_overrun;
    sleep_ns(20 * NS_PER_MS);
    CHECK(is_pending(sig), "the second signal is not pending");
    int ov = timer_getoverrun(t);
    CHECK(ov == first, "while pending: expected the last delivered overrun %d, got %d", first,
          ov);
    CHECK_OK(timer_delete(t));
    drain(sig);
    unblock_sig(sig);
}

static _Atomic int immediate;
static void count_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (si->si_code == SI_TIMER && si->si_value.sival_int == 8)
        atomic_fetch_add(&immediate, 1);
}

/* An expiry already due when armed is signalled before timer_settime
 * returns (the signal is unblocked on this thread). */
static void test_due_at_settime(void)
{
    int sig = SIGUSR2;
    set_handler(sig, count_handler, 0);
    unblock_sig(sig);
    timer_t t = mk_timer(SIGEV_SIGNAL, sig, 8);
    atomic_store(&immediate, 0);
    for (int i = 0; i < 200; i++) {
        if (i % 2 == 0) {
            struct itimerspec past = {.it_value = ns_ts(mono_ns() - NS_PER_S)};
            CHECK_OK(timer_settime(t, TIMER_ABSTIME, &past, NULL));
        } else {
            arm_rel(t, 1, 0);
        }
        CHECK(atomic_load(&immediate) == i + 1,
              "iteration %d (%s): handler ran %d times when timer_settime returned", i,
              i % 2 ? "1 ns" : "absolute, past", atomic_load(&immediate));
    }
    CHECK_OK(timer_delete(t));
    signal(sig, SIG_DFL);
}

/* A signal left at SIG_DFL that the kernel ignores by default, blocked for
 * a while, then unblocked: its overrun is latched when it is taken. */
static void test_default_ignored(void)
{
    int sig = SIGWINCH;
    block_sig(sig);
    timer_t t = mk_timer(SIGEV_SIGNAL, sig, 9);
    int64_t P = NS_PER_MS, t0 = mono_ns() + P;
    arm_abs(t, t0, P);
    sleep_ns(50 * NS_PER_MS);
    int64_t pre = mono_ns();
    unblock_sig(sig);
    int ov = timer_getoverrun(t);
    int64_t post = mono_ns();
    long long lo = (pre - t0) / P, hi = (post - t0) / P;
    CHECK(ov >= lo && ov <= hi, "overrun after unblock: expected [%lld, %lld], got %d", lo, hi,
          ov);
    CHECK_OK(timer_delete(t));
}

/* A periodic absolute timerfd: the counts read add up to the periods
 * elapsed at each read (the kernel's read forwards the timer to the
 * moment of the read), however late a worker might be. */
static void test_timerfd_counts(void)
{
    int64_t P = 2 * NS_PER_MS, slack = 200 * NS_PER_US;
    int fd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    int64_t t0 = mono_ns() + NS_PER_MS;
    struct itimerspec its = {.it_value = ns_ts(t0), .it_interval = ns_ts(P)};
    CHECK_OK(timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL));
    long long total = 0;
    for (int i = 0; i < 60; i++) {
        sleep_ns((i % 7) * 700 * NS_PER_US);
        uint64_t n = 0;
        int64_t pre = mono_ns();
        ssize_t r = read(fd, &n, sizeof n);
        int64_t post = mono_ns();
        CHECK(r == 8 || (r == -1 && errno == EAGAIN), "read: %zd errno %d", r, errno);
        if (r == 8)
            total += (long long)n;
        long long lo = pre - slack < t0 ? 0 : (pre - slack - t0) / P + 1;
        long long hi = post < t0 ? 0 : (post - t0) / P + 1;
        CHECK(total >= lo && total <= hi,
              "read %d: counts add up to %lld, periods elapsed at the read in [%lld, %lld]", i,
              total, lo, hi);
    }
    CHECK_OK(close(fd));
}

static _Atomic int ign_signals, ign_overrun;
static void ign_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (si->si_code == SI_TIMER && si->si_value.sival_int == 10) {
        atomic_fetch_add(&ign_signals, 1);
        atomic_store(&ign_overrun, si->si_overrun);
    }
}

/* Blocked and pending, then ignored, then handled again, then unblocked:
 * the timer's one signal is delivered once, and its overrun counts every
 * period since the first expiry (selftests' check_sig_ign). */
static void test_ignored_while_pending(void)
{
    int sig = SIGUSR2;
    int64_t P = 10 * NS_PER_MS;
    set_handler(sig, ign_handler, 0);
    block_sig(sig);
    atomic_store(&ign_signals, 0);
    timer_t t = mk_timer(SIGEV_SIGNAL, sig, 10);
    int64_t t0 = mono_ns() + P;
    arm_abs(t, t0, P);
    sleep_ns(100 * NS_PER_MS);
    CHECK(signal(sig, SIG_IGN) != SIG_ERR, "signal(SIG_IGN)");
    sleep_ns(100 * NS_PER_MS);
    set_handler(sig, ign_handler, 0);
    sleep_ns(100 * NS_PER_MS);
    int64_t pre = mono_ns();
    unblock_sig(sig);
    int64_t post = mono_ns();
    CHECK_OK(timer_delete(t));
    CHECK(atomic_load(&ign_signals) == 1, "signals: expected 1, got %d",
          atomic_load(&ign_signals));
    long long total = 1LL + atomic_load(&ign_overrun);
    long long lo = (pre - t0) / P + 1, hi = (post - t0) / P + 1;
    CHECK(total >= lo && total <= hi, "1 + si_overrun: expected [%lld, %lld], got %lld", lo, hi,
          total);
    signal(sig, SIG_DFL);
}

/* A reader that waits with the raw system call (no libc wrapper) still
 * gets every signal of a periodic timer, each in time. */
static void test_raw_reader(void)
{
    int sig = SIGRTMIN + 4;
    sigset_t set = sigset_of(sig);
    siginfo_t si;
    block_sig(sig);
    timer_t t = mk_timer(SIGEV_SIGNAL, sig, 11);
    arm_rel(t, NS_PER_MS, NS_PER_MS);
    for (int i = 0; i < 5; i++) {
        struct timespec ts = {2, 0};
        long r = syscall(SYS_rt_sigtimedwait, &set, &si, &ts, (size_t)8);
        CHECK(r == sig, "raw rt_sigtimedwait %d: got %ld errno %d", i, r, errno);
        CHECK(si.si_code == SI_TIMER && si.si_value.sival_int == 11, "bad siginfo");
    }
    CHECK_OK(timer_delete(t));
    drain(sig);
    unblock_sig(sig);
}

/* A fork child inherits neither the parent's pending signals nor its
 * timers: its own timer's signal is the one it gets, and the parent still
 * gets its own. */
static void test_fork_child_own_signals(void)
{
    int sig = SIGUSR1;
    sigset_t set = sigset_of(sig);
    siginfo_t si;
    block_sig(sig);
    timer_t a = expired_one_shot(sig, 1);
    CHECK(is_pending(sig), "the parent's signal is not pending");
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork: errno %d", errno);
    if (pid == 0) {
        check_child_init(10);
        CHECK(!is_pending(sig), "child: the parent's signal is pending");
        timer_t b = mk_timer(SIGEV_SIGNAL, sig, 77);
        arm_rel(b, NS_PER_MS, 0);
        CHECK(wait_sig(&set, &si, 2 * NS_PER_S) == sig, "child: its timer's signal is missing");
        CHECK(si.si_code == SI_TIMER && si.si_value.sival_int == 77,
              "child: expected its own timer's signal, got code %d sival %d", si.si_code,
              si.si_value.sival_int);
        CHECK(wait_sig(&set, &si, 50 * NS_PER_MS) == -1, "child: a second signal (sival %d)",
              si.si_value.sival_int);
        _exit(0);
    }
    CHECK_CHILD_OK(wait_child(pid));
    CHECK(wait_sig(&set, &si, NS_PER_S) == sig, "parent: its signal is missing");
    CHECK(si.si_value.sival_int == 1, "parent: sival %d", si.si_value.sival_int);
    CHECK_OK(timer_delete(a));
    unblock_sig(sig);
}

/* A signalfd's number taken over by a pipe (dup2) reads the pipe's bytes
 * as they are, even bytes laid out like a timer signal's record. */
static void test_signalfd_number_reused(void)
{
    int sig = SIGRTMIN + 5, p[2];
    sigset_t set = sigset_of(sig);
    block_sig(sig);
    int fd = CHECK_OK(signalfd(-1, &set, SFD_CLOEXEC));
    CHECK_OK(pipe(p));
    CHECK_OK(dup2(p[0], fd));
    unsigned char out[200], in[200];
    for (size_t i = 0; i < sizeof out; i++)
        out[i] = (unsigned char)i;
    int code = SI_TIMER, tag = 0x75746d70; /* as a record: ssi_errno, ssi_code */
    memcpy(out + 4, &tag, 4);
    memcpy(out + 8, &code, 4);
    CHECK(write(p[1], out, 128) == 128, "write");
    CHECK(read(fd, in, 128) == 128, "read of 128 bytes: errno %d", errno);
    CHECK(memcmp(in, out, 128) == 0, "the pipe's bytes were changed");
    CHECK(write(p[1], out, sizeof out) == (ssize_t)sizeof out, "write");
    CHECK(read(fd, in, sizeof in) == (ssize_t)sizeof in, "read of 200 bytes");
    CHECK(memcmp(in, out, sizeof out) == 0, "the pipe's bytes were changed");
    CHECK_OK(close(fd));
    CHECK_OK(close(p[0]));
    CHECK_OK(close(p[1]));
    unblock_sig(sig);
}

int main(void)
{
    check_init("signals", 30);
    phase("standard_each_queued", 10);
    test_standard_each_queued();
    phase("beside_sigqueue", 5);
    test_beside_sigqueue();
    phase("deleted_discarded", 5);
    test_deleted_discarded();
    phase("exact_overrun signal 100us", 10);
    test_exact_overrun(SIGEV_SIGNAL, SIGRTMIN + 1, 100 * NS_PER_US, 300 * NS_PER_MS);
    phase("exact_overrun thread_id 20us", 10);
    test_exact_overrun(SIGEV_THREAD_ID, SIGRTMIN + 1, 20 * NS_PER_US, 300 * NS_PER_MS);
    phase("exact_overrun standard signal", 10);
    test_exact_overrun(SIGEV_SIGNAL, SIGUSR1, 100 * NS_PER_US, 200 * NS_PER_MS);
    phase("signalfd_overrun", 10);
    test_signalfd_overrun();
    phase("signalfd_number_reused", 5);
    test_signalfd_number_reused();
    phase("getoverrun_while_pending", 5);
    test_getoverrun_while_pending();
    phase("due_at_settime", 10);
    test_due_at_settime();
    phase("default_ignored", 5);
    test_default_ignored();
    phase("ignored_while_pending", 5);
    test_ignored_while_pending();
    phase("fork_child_own_signals", 10);
    test_fork_child_own_signals();
    phase("raw_reader", 10);
    test_raw_reader();
    phase("timerfd_counts", 5);
    test_timerfd_counts();
    check_ok();
    return 0;
}
