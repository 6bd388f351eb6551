/*
 * sleep.c - the sleep calls (nanosleep, clock_nanosleep, sleep, usleep)
 * while timers run: a sleep lasts its time and never less, a handler
 * interrupts it with EINTR and the time left, bad times get the kernel's
 * errors, a cancellation acts, and timers keep firing on time whether a
 * thread sleeps or not (and after the program closes every descriptor
 * it does not know of).  Under the drop-in, a sleeping thread fires the
 * timers itself and hands them back to the workers when it wakes; on the
 * kernel the same program checks the kernel's behaviour.
 */
#include "check.h"

#include <setjmp.h>

static _Atomic long handled;

static void on_sig(int sig, siginfo_t *si, void *ctx)
{
    (void)sig, (void)si, (void)ctx;
    atomic_fetch_add(&handled, 1);
}

static timer_t signal_timer(int sig)
{
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = sig;
    timer_t t;
    CHECK_OK(timer_create(CLOCK_MONOTONIC, &sev, &t));
    return t;
}

static void arm(timer_t t, int64_t value, int64_t interval)
{
    struct itimerspec its = its_ns(value, interval);
    CHECK_OK(timer_settime(t, 0, &its, NULL));
}

/* A sleep with no signal lasts at least its time, on every call. */
static void full_time(void)
{
    phase("full_time", 10);
    for (int i = 0; i < 20; i++) {
        int64_t t0 = mono_ns();
        struct timespec req = ns_ts(3 * NS_PER_MS + i * 100 * NS_PER_US);
        CHECK(nanosleep(&req, NULL) == 0, "nanosleep: errno %d", errno);
        CHECK(mono_ns() - t0 >= ts_ns(&req), "nanosleep woke early");
    }
    int64_t until = mono_ns() + 5 * NS_PER_MS;
    struct timespec abs = ns_ts(until);
    CHECK(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &abs, NULL) == 0, "absolute sleep");
    CHECK(mono_ns() >= until, "absolute sleep woke early");
    int64_t t0 = mono_ns();
    struct timespec rel = ns_ts(4 * NS_PER_MS);
    CHECK(clock_nanosleep(CLOCK_REALTIME, 0, &rel, NULL) == 0, "relative realtime sleep");
    CHECK(mono_ns() - t0 >= 4 * NS_PER_MS, "relative realtime sleep woke early");
    t0 = mono_ns();
    CHECK_OK(usleep(3000));
    CHECK(mono_ns() - t0 >= 3 * NS_PER_MS, "usleep woke early");
    CHECK(sleep(0) == 0, "sleep(0)");
    /* An absolute time already past returns at once. */
    struct timespec past = ns_ts(mono_ns() - NS_PER_MS);
    CHECK(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &past, NULL) == 0, "past time");
}

/* The kernel's answers to bad times and clocks. */
static void bad_input(void)
{
    phase("bad_input", 5);
    struct timespec big = {0, NS_PER_S};
    struct timespec neg_ns = {0, -1};
    struct timespec neg_s = {-1, 0};
    CHECK_ERR(nanosleep(&big, NULL), EINVAL);
    CHECK_ERR(nanosleep(&neg_ns, NULL), EINVAL);
    CHECK_ERR(nanosleep(&neg_s, NULL), EINVAL);
    CHECK(clock_nanosleep(CLOCK_MONOTONIC, 0, &big, NULL) == EINVAL, "clock_nanosleep EINVAL");
    CHECK(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &neg_ns, NULL) == EINVAL,
          "absolute EINVAL");
    struct timespec ok = {0, 1000};
    CHECK(clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &ok, NULL) == EINVAL,
          "a thread's CPU clock is no sleep clock");
    CHECK(clock_nanosleep((clockid_t)1234, 0, &ok, NULL) == EINVAL, "no such clock");
    CHECK_ERR(nanosleep(NULL, NULL), EFAULT);
}

/* A timer signal's handler ends the sleep: EINTR, the time left in rem. */
static void interrupted(void)
{
    phase("interrupted", 10);
    timer_t t = signal_timer(SIGRTMIN);
    long before = atomic_load(&handled);
    int64_t t0 = mono_ns();
    arm(t, 5 * NS_PER_MS, 0);
    struct timespec req = {2, 0}, rem = {0, 0};
    int r = nanosleep(&req, &rem);
    int64_t took = mono_ns() - t0;
    CHECK(r == -1 && errno == EINTR, "nanosleep: %d errno %d", r, errno);
    CHECK(atomic_load(&handled) == before + 1, "one handler ran");
    CHECK(took >= 5 * NS_PER_MS, "interrupted before the timer's expiry: %lld ns",
          (long long)took);
    CHECK(ts_ns(&rem) > 0 && ts_ns(&rem) < 2 * NS_PER_S, "rem %lld ns", (long long)ts_ns(&rem));
    CHECK(ts_ns(&rem) >= 2 * NS_PER_S - took - 50 * NS_PER_MS, "rem %lld ns after %lld",
          (long long)ts_ns(&rem), (long long)took);

    /* clock_nanosleep answers EINTR as its value; sleep the whole seconds
     * left; usleep -1 with errno EINTR. */
    arm(t, 5 * NS_PER_MS, 0);
    struct timespec rel = {2, 0};
    CHECK(clock_nanosleep(CLOCK_MONOTONIC, 0, &rel, &rem) == EINTR, "clock_nanosleep EINTR");
    arm(t, 100 * NS_PER_MS, 0);
    unsigned left = sleep(3);
    CHECK(left == 2, "sleep(3) interrupted after 100 ms left %u", left);
    arm(t, 5 * NS_PER_MS, 0);
    CHECK_ERR(usleep(2000000), EINTR);
    CHECK_OK(timer_delete(t));
}

/* A periodic timer: every sleep ends with EINTR, one handler each at least,
 * and the signals keep coming. */
static void periodic(void)
{
    phase("periodic", 20);
    timer_t t = signal_timer(SIGRTMIN);
    long before = atomic_load(&handled);
    arm(t, 200 * NS_PER_US, 200 * NS_PER_US);
    int eintr = 0;
    while (eintr < 500) {
        struct timespec req = {1, 0};
        int r = nanosleep(&req, NULL);
        CHECK(r == -1 && errno == EINTR, "a 1 s sleep under a 200 us timer: %d errno %d", r,
              errno);
        eintr++;
    }
    CHECK_OK(timer_delete(t));
    CHECK(atomic_load(&handled) - before >= eintr, "%ld handlers for %d interrupted sleeps",
          atomic_load(&handled) - before, eintr);
}

/* Timers that expire together while a thread sleeps: each one's signal
 * is delivered once, the sleep ends with EINTR, and a handler that leaves
 * by siglongjmp loses none of the others. */
#define TOGETHER 4
static _Atomic long together_seen[TOGETHER];
static sigjmp_buf together_jump;
static _Atomic int together_jumping;

static void on_together(int sig, siginfo_t *si, void *ctx)
{
    (void)si, (void)ctx;
    atomic_fetch_add(&together_seen[sig - SIGRTMIN - 1], 1);
    if (sig == SIGRTMIN + 1 && atomic_exchange(&together_jumping, 0))
        siglongjmp(together_jump, 1);
}

/* Sleeps until the signals' handlers have run; true if one left by
 * siglongjmp. */
static __attribute__((noinline)) int together_sleep(void)
{
    if (sigsetjmp(together_jump, 1) != 0)
        return 1;
    struct timespec req = {2, 0};
    int r = nanosleep(&req, NULL);
    CHECK(r == -1 && errno == EINTR, "nanosleep: %d errno %d", r, errno);
    return 0;
}

static void together(void)
{
    phase("together", 10);
    timer_t t[TOGETHER];
    for (int i = 0; i < TOGETHER; i++) {
        set_handler(SIGRTMIN + 1 + i, on_together, 0);
        t[i] = signal_timer(SIGRTMIN + 1 + i);
    }
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < TOGETHER; i++)
            atomic_store(&together_seen[i], 0);
        /* Round 1 leaves the first handler by siglongjmp. */
        atomic_store(&together_jumping, round);
        struct itimerspec at = {{0, 0}, ns_ts(mono_ns() + 5 * NS_PER_MS)};
        for (int i = 0; i < TOGETHER; i++)
            CHECK_OK(timer_settime(t[i], TIMER_ABSTIME, &at, NULL));
        int jumped = together_sleep();
        CHECK(jumped == round, "round %d: jumped %d", round, jumped);
        /* Whatever is still pending arrives while this sleeps on. */
        sleep_ns(20 * NS_PER_MS);
        for (int i = 0; i < TOGETHER; i++)
            CHECK(atomic_load(&together_seen[i]) == 1,
                  "round %d: the signal of timer %d was handled %ld times", round, i,
                  atomic_load(&together_seen[i]));
    }
    /* After the jump, a timer still ends a sleep. */
    long before = atomic_load(&together_seen[1]);
    arm(t[1], 3 * NS_PER_MS, 0);
    struct timespec req = {2, 0};
    CHECK_ERR(nanosleep(&req, NULL), EINTR);
    CHECK(atomic_load(&together_seen[1]) == before + 1, "no signal after the jump");
    for (int i = 0; i < TOGETHER; i++)
        CHECK_OK(timer_delete(t[i]));
}

/* Timer signals to a waiting thread keep their rhythm while other threads
 * sleep, wake, and spin without sleeping: whoever fires the timers hands
 * them on, and none waits past a period by far. */
static _Atomic int spin_done;
static pid_t waiter_tid;
static _Atomic int waiter_ready;
static int64_t worst_gap;
static long arrivals;

static void *waiter(void *arg)
{
    (void)arg;
    waiter_tid = gettid();
    sigset_t s = sigset_of(SIGRTMIN + 1);
    atomic_store(&waiter_ready, 1);
    int64_t last = mono_ns();
    while (!atomic_load(&spin_done)) {
        siginfo_t si;
        int r = wait_sig(&s, &si, 2 * NS_PER_S);
        int64_t now = mono_ns();
        CHECK(r == SIGRTMIN + 1, "no timer signal for 2 s: the timers stopped");
        if (now - last > worst_gap)
            worst_gap = now - last;
        last = now;
        arrivals++;
    }
    return NULL;
}

static void *sleeper(void *arg)
{
    (void)arg;
    for (int round = 0; round < 6; round++) {
        /* Sleep a while (a sleeping thread may fire the timers)... */
        struct timespec req = ns_ts(30 * NS_PER_MS);
        while (nanosleep(&req, &req) == -1 && errno == EINTR) {
        }
        /* ...then stay awake: the timers must not wait for it. */
        int64_t until = mono_ns() + 60 * NS_PER_MS;
        while (mono_ns() < until) {
        }
    }
    return NULL;
}

static void hand_back_child(void)
{
    block_sig(SIGRTMIN + 1);
    pthread_t w, sl;
    CHECK_PT(pthread_create(&w, NULL, waiter, NULL));
    while (!atomic_load(&waiter_ready)) {
    }
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGRTMIN + 1;
    sev.sigev_notify_thread_id = waiter_tid;
    timer_t t;
    CHECK_OK(timer_create(CLOCK_MONOTONIC, &sev, &t));
    arm(t, 2 * NS_PER_MS, 2 * NS_PER_MS);
    CHECK_PT(pthread_create(&sl, NULL, sleeper, NULL));
    CHECK_PT(pthread_join(sl, NULL));
    atomic_store(&spin_done, 1);
    CHECK_PT(pthread_join(w, NULL));
    CHECK_OK(timer_delete(t));
    /* A 2 ms period; a generous bound for a loaded machine, far below the
     * 60 ms a timer left to a thread that spins would wait. */
    CHECK(worst_gap < 40 * NS_PER_MS, "a timer signal came %lld ms after the one before",
          (long long)(worst_gap / NS_PER_MS));
    CHECK(arrivals > 20, "%ld signals", arrivals);
}

/* In a child with no watchdog thread, whose sleeps would serve the timers
 * too: only the sleeper sleeps there. */
static void hand_back(void)
{
    phase("hand_back", 30);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork: errno %d", errno);
    if (pid == 0) {
        hand_back_child();
        _exit(0);
    }
    CHECK_CHILD_OK(wait_child(pid));
}

/* A cancellation acts on a thread in any of the sleeps. */
static void *sleep_forever(void *arg)
{
    int kind = (int)(long)arg;
    struct timespec req = {30, 0};
    if (kind == 0)
        nanosleep(&req, NULL);
    else if (kind == 1)
        clock_nanosleep(CLOCK_MONOTONIC, 0, &req, NULL);
    else
        sleep(30);
    return (void *)1;
}

static void cancel(void)
{
    phase("cancel", 10);
    for (long kind = 0; kind < 3; kind++) {
        pthread_t th;
        CHECK_PT(pthread_create(&th, NULL, sleep_forever, (void *)kind));
        struct timespec req = ns_ts(20 * NS_PER_MS);
        nanosleep(&req, NULL);
        CHECK_PT(pthread_cancel(th));
        void *ret;
        CHECK_PT(pthread_join(th, &ret));
        CHECK(ret == PTHREAD_CANCELED, "sleep %ld was not cancelled", kind);
    }
}

/* A program that closes every descriptor it does not know of (a daemon
 * does) still has its timers. */
static void close_all(void)
{
    phase("close_all", 10);
    closefrom(3);
    /* Idle, the process costs next to no CPU: nothing of the timers' was
     * closed under them (they would spin on a descriptor that is gone). */
    int64_t cpu0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
    struct timespec idle = ns_ts(300 * NS_PER_MS);
    CHECK(nanosleep(&idle, NULL) == 0, "idle sleep");
    int64_t cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    CHECK(cpu < 100 * NS_PER_MS, "%lld ms of CPU in a 300 ms idle sleep",
          (long long)(cpu / NS_PER_MS));
    timer_t t = signal_timer(SIGRTMIN);
    long before = atomic_load(&handled);
    arm(t, 3 * NS_PER_MS, 0);
    struct timespec req = {2, 0};
    CHECK_ERR(nanosleep(&req, NULL), EINTR);
    CHECK(atomic_load(&handled) == before + 1, "the timer fired after close_range");
    /* And with no thread asleep: the workers fire it. */
    block_sig(SIGRTMIN);
    arm(t, 3 * NS_PER_MS, 0);
    sigset_t s = sigset_of(SIGRTMIN);
    siginfo_t si;
    CHECK(wait_sig(&s, &si, 2 * NS_PER_S) == SIGRTMIN, "no signal after close_range");
    unblock_sig(SIGRTMIN);
    CHECK_OK(timer_delete(t));
}

int main(void)
{
    check_init("sleep", 10);
    set_handler(SIGRTMIN, on_sig, 0);
    /* The first timer starts the library's timer system. */
    timer_t first = signal_timer(SIGRTMIN);
    full_time();
    bad_input();
    interrupted();
    periodic();
    together();
    hand_back();
    cancel();
    close_all();
    CHECK_OK(timer_delete(first));
    check_ok();
    return 0;
}
