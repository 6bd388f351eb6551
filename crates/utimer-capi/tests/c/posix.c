/* POSIX timers through the C API: the kernel's semantics, bad input. */
#define _GNU_SOURCE
#include "check.h"
#include <sched.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <utimer.h>

static atomic_int thread_calls;
static atomic_int thread_value;
static atomic_llong thread_at;
static sigset_t thread_mask;

static void on_expiry(union sigval v) {
    pthread_sigmask(SIG_BLOCK, NULL, &thread_mask);
    atomic_store(&thread_at, mono_ns());
    atomic_store(&thread_value, v.sival_int);
    atomic_fetch_add(&thread_calls, 1);
}

/* A pointer no memory of the program can be at (the zero page, the
   kernel's half, an end that wraps), built at run time so the compiler
   sees no constant address. */
static void *nowhere(int i) {
    static volatile uintptr_t addrs[] = {1, 4095, 0xffff800000000000u, UINTPTR_MAX - 7};
    return (void *)addrs[i];
}
#define NOWHERE 4

static struct itimerspec spec(long value_ns, long interval_ns) {
    struct itimerspec s;
    s.it_value.tv_sec = value_ns / 1000000000L;
    s.it_value.tv_nsec = value_ns % 1000000000L;
    s.it_interval.tv_sec = interval_ns / 1000000000L;
    s.it_interval.tv_nsec = interval_ns % 1000000000L;
    return s;
}

static long long ns_of(struct timespec t) { return (long long)t.tv_sec * 1000000000LL + t.tv_nsec; }

static void bad_input(utimer_t *u) {
    struct sigevent none = {0};
    none.sigev_notify = SIGEV_NONE;
    int id = -1;
    CHECK_ERR(utimer_timer_create(NULL, CLOCK_MONOTONIC, &none, &id), EINVAL);
    CHECK_ERR(utimer_timer_create(u, 12345, &none, &id), EINVAL);
    CHECK_ERR(utimer_timer_create(u, CLOCK_MONOTONIC, &none, NULL), EFAULT);
    struct sigevent bad = {0};
    bad.sigev_notify = 77;
    CHECK_ERR(utimer_timer_create(u, CLOCK_MONOTONIC, &bad, &id), EINVAL);
    struct sigevent badsig = {0};
    badsig.sigev_notify = SIGEV_SIGNAL;
    badsig.sigev_signo = 1000;
    CHECK_ERR(utimer_timer_create(u, CLOCK_MONOTONIC, &badsig, &id), EINVAL);
    struct sigevent nofn = {0};
    nofn.sigev_notify = SIGEV_THREAD;
    CHECK_ERR(utimer_timer_create(u, CLOCK_MONOTONIC, &nofn, &id), EINVAL);
    /* SIGEV_THREAD_ID names a thread of this process, or EINVAL, as the
       kernel's good_sigevent(): not another process's (the parent's). */
    struct sigevent tid = {0};
    tid.sigev_notify = SIGEV_THREAD_ID;
    tid.sigev_signo = SIGUSR2;
    tid._sigev_un._tid = (pid_t)getppid();
    CHECK_ERR(utimer_timer_create(u, CLOCK_MONOTONIC, &tid, &id), EINVAL);
    tid._sigev_un._tid = 0x7fffffff;
    CHECK_ERR(utimer_timer_create(u, CLOCK_MONOTONIC, &tid, &id), EINVAL);
    tid._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    CHECK(utimer_timer_create(u, CLOCK_MONOTONIC, &tid, &id) == 0);
    CHECK(utimer_timer_delete(u, id) == 0);

    CHECK(utimer_timer_create(u, CLOCK_MONOTONIC, &none, &id) == 0);
    struct itimerspec s = spec(1000000, 0), out;
    s.it_value.tv_nsec = 1000000000L;
    CHECK_ERR(utimer_timer_settime(u, id, 0, &s, NULL), EINVAL);
    s = spec(1000000, 0);
    s.it_value.tv_sec = -1;
    CHECK_ERR(utimer_timer_settime(u, id, 0, &s, NULL), EINVAL);
    s = spec(1000000, 0);
    CHECK_ERR(utimer_timer_settime(u, id, 2, &s, NULL), EINVAL);
    CHECK_ERR(utimer_timer_settime(u, id, 0, NULL, NULL), EINVAL);
    CHECK_ERR(utimer_timer_gettime(u, id, NULL), EFAULT);
    /* Pointers no memory can be at: EFAULT, as the kernel's access_ok(),
       not a crash; the old value is written last, as the kernel's, so the
       timer is armed all the same. */
    for (int i = 0; i < NOWHERE; i++) {
        void *bad = nowhere(i);
        int other = -1;
        CHECK_ERR(utimer_timer_create(u, CLOCK_MONOTONIC, bad, &other), EFAULT);
        CHECK_ERR(utimer_timer_create(u, CLOCK_MONOTONIC, &none, bad), EFAULT);
        CHECK(other == -1);
        CHECK_ERR(utimer_timer_settime(u, id, 0, bad, NULL), EFAULT);
        CHECK_ERR(utimer_timer_settime(u, id, 0, bad, &out), EFAULT);
        CHECK(utimer_timer_gettime(u, id, &out) == 0 && ns_of(out.it_value) == 0);
        CHECK_ERR(utimer_timer_gettime(u, id, bad), EFAULT);
        s = spec(5000000000L, 0);
        CHECK_ERR(utimer_timer_settime(u, id, 0, &s, bad), EFAULT);
        CHECK(utimer_timer_gettime(u, id, &out) == 0 && ns_of(out.it_value) > 4000000000LL);
        s = spec(0, 0);
        CHECK(utimer_timer_settime(u, id, 0, &s, NULL) == 0);
    }
    s = spec(1000000, 0);
    CHECK_ERR(utimer_timer_fd(u, id), EINVAL);
    CHECK_ERR(utimer_timer_gettime(u, id + 100000, &out), EINVAL);
    CHECK_ERR(utimer_timer_gettime(u, -1, &out), EINVAL);
    CHECK_ERR(utimer_timer_getoverrun(NULL, id), EINVAL);
    CHECK(utimer_timer_delete(u, id) == 0);
    CHECK_ERR(utimer_timer_delete(u, id), EINVAL);
    CHECK_ERR(utimer_timer_settime(u, id, 0, &s, NULL), EINVAL);
    CHECK_ERR(utimer_timer_gettime(u, id, &out), EINVAL);
}

static void sigev_none(utimer_t *u) {
    struct sigevent none = {0};
    none.sigev_notify = SIGEV_NONE;
    int id;
    CHECK(utimer_timer_create(u, CLOCK_MONOTONIC, &none, &id) == 0);
    struct itimerspec s = spec(100000000L, 100000000L), old, cur;
    CHECK(utimer_timer_settime(u, id, 0, &s, &old) == 0);
    CHECK(ns_of(old.it_value) == 0 && ns_of(old.it_interval) == 0);
    CHECK(utimer_timer_gettime(u, id, &cur) == 0);
    CHECK(ns_of(cur.it_value) > 0 && ns_of(cur.it_value) <= 100000000LL);
    CHECK(ns_of(cur.it_interval) == 100000000LL);
    CHECK(utimer_timer_getoverrun(u, id) == 0);
    /* A zero value disarms and returns the old setting. */
    struct itimerspec zero = spec(0, 5000000);
    CHECK(utimer_timer_settime(u, id, 0, &zero, &old) == 0);
    CHECK(ns_of(old.it_interval) == 100000000LL);
    CHECK(utimer_timer_gettime(u, id, &cur) == 0);
    CHECK(ns_of(cur.it_value) == 0);
    CHECK(utimer_timer_delete(u, id) == 0);
}

static void sigev_thread(utimer_t *u) {
    struct sigevent ev = {0};
    ev.sigev_notify = SIGEV_THREAD;
    ev.sigev_notify_function = on_expiry;
    ev.sigev_value.sival_int = 4242;
    int id;
    CHECK(utimer_timer_create(u, CLOCK_MONOTONIC, &ev, &id) == 0);
    struct itimerspec s = spec(10000000L, 0);
    long long armed = mono_ns();
    CHECK(utimer_timer_settime(u, id, 0, &s, NULL) == 0);
    for (int i = 0; i < 400 && atomic_load(&thread_calls) == 0; i++) sleep_ns(5 * NS_PER_MS);
    CHECK(atomic_load(&thread_calls) == 1);
    CHECK(atomic_load(&thread_value) == 4242);
    CHECK(atomic_load(&thread_at) - armed >= 10000000LL); /* never early */
    /* As glibc's: every signal blocked on the notification thread (this
       thread blocks only SIGALRM), so none sent to the process lands there. */
    int sigs[] = {SIGUSR1, SIGALRM, SIGTERM, SIGHUP, SIGRTMIN, SIGRTMAX};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        CHECK(sigismember(&thread_mask, sigs[i]) == 1);
    sleep_ns(30 * NS_PER_MS);
    CHECK(atomic_load(&thread_calls) == 1); /* one-shot fires once */
    CHECK(utimer_timer_delete(u, id) == 0);
}

/* SIGEV_THREAD as glibc: each notification on a thread of its own, made
   with the timer's attributes, so a slow function on one timer does not
   hold back another timer of the same (single) worker. */
static atomic_int slow_in, slow_done, fast_calls, fast_during_slow, fast_bad_attr;

static void on_slow(union sigval v) {
    (void)v;
    atomic_store(&slow_in, 1);
    int before = atomic_load(&fast_calls);
    sleep_ns(300 * NS_PER_MS);
    atomic_store(&fast_during_slow, atomic_load(&fast_calls) - before);
    atomic_store(&slow_done, 1);
}

static void on_fast(union sigval v) {
    (void)v;
    pthread_attr_t a;
    size_t stack = 0;
    int detached = 0;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        pthread_attr_getstacksize(&a, &stack);
        pthread_attr_getdetachstate(&a, &detached);
        pthread_attr_destroy(&a);
    }
    if (stack < (size_t)4 << 20 || detached != PTHREAD_CREATE_DETACHED) atomic_fetch_add(&fast_bad_attr, 1);
    atomic_fetch_add(&fast_calls, 1);
}

static void sigev_thread_off_the_workers(void) {
    utimer_t *u = utimer_open(1);
    CHECK(u != NULL);
    pthread_attr_t attr;
    CHECK(pthread_attr_init(&attr) == 0);
    CHECK(pthread_attr_setstacksize(&attr, (size_t)4 << 20) == 0);
    struct sigevent slow = {0}, fast = {0};
    slow.sigev_notify = SIGEV_THREAD;
    slow.sigev_notify_function = on_slow;
    fast.sigev_notify = SIGEV_THREAD;
    fast.sigev_notify_function = on_fast;
    fast.sigev_notify_attributes = &attr;
    int a, b;
    CHECK(utimer_timer_create(u, CLOCK_MONOTONIC, &slow, &a) == 0);
    CHECK(utimer_timer_create(u, CLOCK_MONOTONIC, &fast, &b) == 0);
    /* The attributes were copied: the caller may destroy them now. */
    CHECK(pthread_attr_destroy(&attr) == 0);
    struct itimerspec once = spec(1000000L, 0), every = spec(10000000L, 10000000L);
    CHECK(utimer_timer_settime(u, b, 0, &every, NULL) == 0);
    CHECK(utimer_timer_settime(u, a, 0, &once, NULL) == 0);
    for (int i = 0; i < 400 && !atomic_load(&slow_done); i++) sleep_ns(5 * NS_PER_MS);
    CHECK(atomic_load(&slow_done) == 1);
    /* 30 periods while the slow function sleeps; on one worker running it
       inline there were none. */
    CHECK(atomic_load(&fast_during_slow) >= 5);
    CHECK(atomic_load(&fast_bad_attr) == 0);
    CHECK(utimer_timer_delete(u, a) == 0);
    CHECK(utimer_timer_delete(u, b) == 0);
    utimer_close(u);
}

static void sigev_fd(utimer_t *u) {
    struct sigevent ev = {0};
    ev.sigev_notify = UTIMER_SIGEV_FD;
    int id;
    CHECK(utimer_timer_create(u, CLOCK_MONOTONIC, &ev, &id) == 0);
    int fd = utimer_timer_fd(u, id);
    CHECK(fd >= 0);
    struct itimerspec s = spec(5000000L, 5000000L);
    CHECK(utimer_timer_settime(u, id, 0, &s, NULL) == 0);
    struct pollfd p = {fd, POLLIN, 0};
    CHECK(poll(&p, 1, 2000) == 1);
    uint64_t n = 0;
    CHECK(read(fd, &n, sizeof n) == sizeof n);
    CHECK(n >= 1);
    CHECK(utimer_timer_delete(u, id) == 0);
}

static void default_sigevent(utimer_t *u) {
    /* SIGALRM is blocked in every thread (main blocked it before
     * utimer_open, so the workers inherited the mask). */
    int id;
    CHECK(utimer_timer_create(u, CLOCK_MONOTONIC, NULL, &id) == 0);
    struct itimerspec s = spec(10000000L, 0);
    CHECK(utimer_timer_settime(u, id, 0, &s, NULL) == 0);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    siginfo_t info;
    struct timespec wait = {5, 0};
    CHECK(sigtimedwait(&set, &info, &wait) == SIGALRM);
    CHECK(info.si_value.sival_int == id);
    CHECK(utimer_timer_delete(u, id) == 0);
}

static void abstime(utimer_t *u) {
    struct sigevent none = {0};
    none.sigev_notify = SIGEV_NONE;
    int id;
    CHECK(utimer_timer_create(u, CLOCK_REALTIME, &none, &id) == 0);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct itimerspec s = {{0, 0}, {now.tv_sec + 60, now.tv_nsec}}, cur;
    CHECK(utimer_timer_settime(u, id, UTIMER_TIMER_ABSTIME, &s, NULL) == 0);
    CHECK(utimer_timer_gettime(u, id, &cur) == 0);
    CHECK(cur.it_value.tv_sec >= 58 && cur.it_value.tv_sec <= 60);
    CHECK(utimer_timer_delete(u, id) == 0);
}

/* utimer_serve_realtime: NULL is EINVAL, and so is a priority that is no
   SCHED_FIFO one (sched_setscheduler refuses it too), changing nothing; a
   real one raises the workers (when the process may) and is never undone
   by a lower one. */
static void serve_realtime(utimer_t *u) {
    CHECK_ERR(utimer_serve_realtime(NULL, 10), EINVAL);
    CHECK_ERR(utimer_serve_realtime(u, 500), EINVAL);
    CHECK_ERR(utimer_serve_realtime(u, sched_get_priority_max(SCHED_FIFO) + 1), EINVAL);
    CHECK_ERR(utimer_serve_realtime(u, 0), EINVAL);
    CHECK_ERR(utimer_serve_realtime(u, -5), EINVAL);
    struct sched_param p = {.sched_priority = 1};
    int allowed = sched_setscheduler(0, SCHED_FIFO, &p) == 0;
    if (allowed) {
        p.sched_priority = 0;
        CHECK(sched_setscheduler(0, SCHED_OTHER, &p) == 0);
    }
    int got = utimer_serve_realtime(u, 10);
    CHECK(got == 0 || got == 10);
    if (allowed)
        CHECK(got == 10);
    CHECK(utimer_serve_realtime(u, 5) == got);
}

/* Worker counts: 0 is one per CPU the process may run on; above
   UTIMER_MAX_WORKERS is EINVAL at once, before any thread starts. */
static void worker_counts(void) {
    long long start = mono_ns();
    CHECK_ERRNO(utimer_open(UTIMER_MAX_WORKERS + 1), 0, EINVAL);
    CHECK_ERRNO(utimer_open(60000), 0, EINVAL);
    CHECK_ERRNO(utimer_open(100000), 0, EINVAL);
    CHECK_ERRNO(utimer_open_unthreaded(UTIMER_MAX_WORKERS + 1), 0, EINVAL);
    CHECK(mono_ns() - start < 2000000000LL);
    cpu_set_t set;
    CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
    utimer_t *u = utimer_open_unthreaded(0);
    CHECK(u != NULL);
    CHECK(utimer_workers(u) == (unsigned)CPU_COUNT(&set));
    utimer_close(u);
    u = utimer_open_unthreaded(UTIMER_MAX_WORKERS);
    CHECK(u != NULL);
    CHECK(utimer_workers(u) == UTIMER_MAX_WORKERS);
    utimer_close(u);
}

int main(void) {
    check_init("posix", 60);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    CHECK(pthread_sigmask(SIG_BLOCK, &set, NULL) == 0);
    worker_counts();
    utimer_t *u = utimer_open(2);
    CHECK(u != NULL);
    CHECK(utimer_workers(u) == 2);
    bad_input(u);
    sigev_none(u);
    sigev_thread(u);
    sigev_thread_off_the_workers();
    sigev_fd(u);
    default_sigevent(u);
    abstime(u);
    serve_realtime(u);
    /* Closing with timers still existing deletes them. */
    struct sigevent none = {0};
    none.sigev_notify = SIGEV_NONE;
    int id;
    CHECK(utimer_timer_create(u, CLOCK_MONOTONIC, &none, &id) == 0);
    utimer_close(u);
    utimer_close(NULL);
    check_ok();
    return 0;
}
