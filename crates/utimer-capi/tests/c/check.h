/*
 * The C test harness of both C suites:
 * - the C API's tests, crates/utimer-capi/tests/c/NAME.c: they include
 *   <utimer.h> and are built under AddressSanitizer and
 *   UndefinedBehaviorSanitizer by crates/utimer-capi/tests/c.rs;
 * - the drop-in's, crates/utimer-posix/tests/c/NAME.c: plain-C conformance
 *   tests for POSIX timers (timer_*), timerfd and their signals.  They
 *   include only system headers (and this one) and check the Linux kernel's
 *   (plus glibc's) documented behaviour, so they must pass when run
 *   directly on Linux, and again unchanged under
 *   LD_PRELOAD=libutimer_posix.so (crates/utimer-posix/tests/programs.rs).
 * It lives beside the C API's tests: utimer-capi is the crate that is
 * packaged (ci/package.sh), so its tests stay whole in its own folder,
 * while utimer-posix is not packaged and its runner finds this folder with
 * -I.  Both runners compile with the flags of cc.rs here:
 *     cc -std=gnu11 -Wall -Wextra -Werror -O1 -g -pthread -I<this folder>
 * Convention: main() first calls check_init(name, seconds); a passing
 * program calls check_ok(), which prints "<name>: ok" as its last stdout
 * line, and exits 0; a failed check prints "<name>: file:line: CHECK(...)
 * failed..." on stderr and exits 1 (from any thread, and from a signal
 * handler); the watchdog thread prints "<name>: deadlock/timeout in
 * <phase>" and exits 2 (a hang must fail, never stall CI).  Timing checks
 * are "never early" (strict) with generous upper bounds, so they hold on a
 * loaded 2-core box.
 */
#ifndef UTIMER_C_CHECK_H
#define UTIMER_C_CHECK_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef sigev_notify_thread_id /* glibc 2.36 lacks the macro */
#define sigev_notify_thread_id _sigev_un._tid
#endif

#define NS_PER_US 1000LL
#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL

static const char *check_name = "test";

static void check_fail(const char *file, int line, const char *expr,
                       const char *fmt, ...) __attribute__((format(printf, 4, 5), noreturn, unused));
/* `fmt` is ": " and the check's message; a check without one (fmt is just
 * ": ") shows errno instead, as it was when the check failed. */
static void check_fail(const char *file, int line, const char *expr,
                       const char *fmt, ...)
{
    int err = errno;
    char buf[1024];
    va_list ap;
    int n = snprintf(buf, sizeof buf, "%s: %s:%d: CHECK(%s) failed", check_name, file,
                     line, expr);
    if (n < 0 || n >= (int)sizeof buf)
        n = 0;
    int m;
    if (fmt[2] != '\0') {
        va_start(ap, fmt);
        m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
        va_end(ap);
    } else {
        m = snprintf(buf + n, sizeof buf - (size_t)n - 1, " (errno %d: %s)", err,
                     strerror(err));
    }
    n = (m < 0 || n + m >= (int)sizeof buf - 1) ? (int)strlen(buf) : n + m;
    buf[n++] = '\n';
    if (write(2, buf, (size_t)n) < 0) {
        /* nothing more we can do */
    }
    _exit(1);
}

/* Diagnostics on stderr when CHECK_VERBOSE is set in the environment. */
static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static void note(const char *fmt, ...)
{
    static int v = -1;
    if (v < 0)
        v = getenv("CHECK_VERBOSE") != NULL;
    if (!v)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: note: ", check_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* CHECK(cond) or CHECK(cond, fmt, ...): on failure print file:line, the
 * condition and either the formatted "expected ... got ..." message (fmt is
 * a string literal) or, with none, errno and its text; then exit 1. */
#define CHECK(cond, ...)                                                                \
    ((cond) ? (void)0 : check_fail(__FILE__, __LINE__, #cond, ": " __VA_ARGS__))

/* The call must not return -1. Evaluates to the result. */
#define CHECK_OK(expr)                                                                  \
    __extension__({                                                                     \
        errno = 0;                                                                      \
        long check_r_ = (long)(expr);                                                   \
        int check_e_ = errno;                                                           \
        CHECK(check_r_ != -1, "%s: expected success, got -1 errno=%d (%s)", #expr,      \
              check_e_, strerror(check_e_));                                            \
        check_r_;                                                                       \
    })

/* The call must return `ret` with errno == err: CHECK_ERR for -1, and
 * CHECK_ERRNO for another value, 0 for a call that returns a pointer
 * (NULL).  The message names the call and the errno as written. */
#define CHECK_ERR(expr, err) CHECK_ERRNO_(expr, #expr, -1, err, #err)
#define CHECK_ERRNO(expr, ret, err) CHECK_ERRNO_(expr, #expr, ret, err, #err)
#define CHECK_ERRNO_(expr, expr_s, ret, err, err_s)                                     \
    do {                                                                                \
        errno = 0;                                                                      \
        long long check_r_ = (long long)(expr);                                         \
        int check_e_ = errno;                                                           \
        CHECK(check_r_ == (long long)(ret) && check_e_ == (err),                        \
              "%s: expected %lld errno=%s (%d), got %lld errno=%d (%s)", expr_s,        \
              (long long)(ret), err_s, (err), check_r_, check_e_, strerror(check_e_));  \
    } while (0)

/* For pthread_* style calls that return an error number. */
#define CHECK_PT(expr)                                                                  \
    do {                                                                                \
        int check_r_ = (expr);                                                          \
        CHECK(check_r_ == 0, "%s: expected 0, got %d (%s)", #expr, check_r_,            \
              strerror(check_r_));                                                      \
    } while (0)

/* ---- timespec helpers ---- */

static inline int64_t ts_ns(const struct timespec *ts)
{
    return (int64_t)ts->tv_sec * NS_PER_S + ts->tv_nsec;
}

static inline struct timespec ns_ts(int64_t ns)
{
    struct timespec ts = {(time_t)(ns / NS_PER_S), (long)(ns % NS_PER_S)};
    return ts;
}

static inline struct itimerspec its_ns(int64_t value_ns, int64_t interval_ns)
{
    struct itimerspec its = {ns_ts(interval_ns), ns_ts(value_ns)};
    return its;
}

static inline int64_t now_ns(clockid_t clk)
{
    struct timespec ts;
    if (clock_gettime(clk, &ts) != 0)
        check_fail(__FILE__, __LINE__, "clock_gettime", "clock %d: errno %d", (int)clk, errno);
    return ts_ns(&ts);
}

static inline int64_t mono_ns(void) { return now_ns(CLOCK_MONOTONIC); }

/* Sleep ns on CLOCK_MONOTONIC, resuming after signal handlers (EINTR). */
static inline void sleep_ns(int64_t ns)
{
    struct timespec until = ns_ts(mono_ns() + ns);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR) {
    }
}

/* sigtimedwait for one signal of `set`, up to timeout_ns; returns the signal
 * number, or -1 (errno EAGAIN) on timeout.  EINTR is retried. */
static inline int wait_sig(const sigset_t *set, siginfo_t *si, int64_t timeout_ns)
{
    int64_t end = mono_ns() + timeout_ns;
    for (;;) {
        int64_t left = end - mono_ns();
        struct timespec ts = ns_ts(left > 0 ? left : 0);
        int r = sigtimedwait(set, si, &ts);
        if (r >= 0 || errno != EINTR)
            return r;
    }
}

static inline sigset_t sigset_of(int sig)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    return s;
}

static inline void block_sig(int sig)
{
    sigset_t s = sigset_of(sig);
    CHECK_PT(pthread_sigmask(SIG_BLOCK, &s, NULL));
}

static inline void unblock_sig(int sig)
{
    sigset_t s = sigset_of(sig);
    CHECK_PT(pthread_sigmask(SIG_UNBLOCK, &s, NULL));
}

static inline void set_handler(int sig, void (*fn)(int, siginfo_t *, void *), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fn;
    sa.sa_flags = SA_SIGINFO | flags;
    sigemptyset(&sa.sa_mask);
    CHECK_OK(sigaction(sig, &sa, NULL));
}

/* ---- watchdog: a thread with every signal blocked (no SIGALRM involved) ---- */

static const char *volatile wd_phase = "start";
static _Atomic int64_t wd_deadline;
static _Atomic pid_t wd_kill_pid; /* child to SIGKILL when we time out */
static int wd_running;

static void *wd_thread(void *arg)
{
    (void)arg;
    for (;;) {
        struct timespec ts = {0, 20 * NS_PER_MS};
        nanosleep(&ts, NULL);
        if (mono_ns() > atomic_load(&wd_deadline)) {
            char buf[256];
            int n = snprintf(buf, sizeof buf, "%s: deadlock/timeout in %s\n", check_name,
                             wd_phase);
            if (n > 0 && write(2, buf, (size_t)n) < 0) {
            }
            pid_t c = atomic_load(&wd_kill_pid);
            if (c > 0)
                kill(c, SIGKILL);
            _exit(2);
        }
    }
    return NULL;
}

static void wd_spawn(void)
{
    sigset_t all, old;
    pthread_t t;
    sigfillset(&all);
    CHECK_PT(pthread_sigmask(SIG_SETMASK, &all, &old));
    CHECK_PT(pthread_create(&t, NULL, wd_thread, NULL));
    CHECK_PT(pthread_detach(t));
    CHECK_PT(pthread_sigmask(SIG_SETMASK, &old, NULL));
    wd_running = 1;
}

/* Enter a named phase that must complete within `seconds`. */
static inline void phase(const char *name, int seconds)
{
    wd_phase = name;
    atomic_store(&wd_deadline, mono_ns() + (int64_t)seconds * NS_PER_S);
}

/* Call first in main(): names the test and starts the watchdog. */
static inline void check_init(const char *name, int seconds)
{
    check_name = name;
    phase("start", seconds);
    if (!wd_running)
        wd_spawn();
}

/* Call in a fork()ed child: threads are not inherited, start a new watchdog. */
static inline void check_child_init(int seconds)
{
    atomic_store(&wd_kill_pid, 0);
    phase("child", seconds);
    wd_spawn();
}

/* Wait for a child (the watchdog kills it if we time out); returns status. */
static inline int wait_child(pid_t pid)
{
    int st;
    atomic_store(&wd_kill_pid, pid);
    while (waitpid(pid, &st, 0) < 0)
        CHECK(errno == EINTR, "waitpid: errno %d (%s)", errno, strerror(errno));
    atomic_store(&wd_kill_pid, 0);
    return st;
}

#define CHECK_CHILD_OK(status_expr)                                                     \
    do {                                                                                \
        int check_st_ = (status_expr);                                                  \
        CHECK(WIFEXITED(check_st_) && WEXITSTATUS(check_st_) == 0,                      \
              "child: expected exit 0, got %s %d",                                      \
              WIFEXITED(check_st_) ? "exit" : "signal",                                 \
              WIFEXITED(check_st_) ? WEXITSTATUS(check_st_) : WTERMSIG(check_st_));     \
    } while (0)

static inline void check_ok(void)
{
    printf("%s: ok\n", check_name);
    fflush(stdout);
}

#endif
