/* utimer's timerfds (utimer_timerfd_*) and signal acceptance
 * (utimer_timer_signal_accepted) through the C API, as a C user calls them. */
#define _GNU_SOURCE
#include "check.h"
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <utimer.h>

static struct itimerspec its_ms(long value_ms, long interval_ms) {
    struct itimerspec its = {{interval_ms / 1000, (interval_ms % 1000) * 1000000L},
                             {value_ms / 1000, (value_ms % 1000) * 1000000L}};
    return its;
}

/* A pointer no memory of the program can be at (the zero page, the
   kernel's half, an end that wraps), built at run time so the compiler
   sees no constant address. */
static void *nowhere(int i) {
    static volatile uintptr_t addrs[] = {1, 4095, 0xffff800000000000u, UINTPTR_MAX - 7};
    return (void *)addrs[i];
}
#define NOWHERE 4

static int readable(int fd, int ms) {
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* A timerfd reads, polls and blocks as the kernel's. */
static void timerfd_semantics(utimer_t *u) {
    CHECK_ERR(utimer_timerfd_create(u, CLOCK_MONOTONIC, 0x4000), EINVAL);
    CHECK_ERR(utimer_timerfd_create(u, CLOCK_PROCESS_CPUTIME_ID, 0), EINVAL);
    CHECK_ERR(utimer_timerfd_create(NULL, CLOCK_MONOTONIC, 0), EINVAL);
    int fd = utimer_timerfd_create(u, CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    CHECK(fd >= 0);
    CHECK(fcntl(fd, F_GETFL) & O_NONBLOCK);
    CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    uint64_t n = 0;
    CHECK_ERR(read(fd, &n, sizeof n), EAGAIN);
    struct itimerspec its = its_ms(20, 0), cur;
    long long t0 = mono_ns();
    CHECK(utimer_timerfd_settime(u, fd, 0, &its, NULL) == 0);
    CHECK(!readable(fd, 0));
    CHECK(readable(fd, 2000));
    CHECK(mono_ns() - t0 >= 20000000LL); /* never early */
    CHECK(read(fd, &n, sizeof n) == 8 && n == 1);
    CHECK(utimer_timerfd_gettime(u, fd, &cur) == 0);
    CHECK(cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0);
    /* settime resets an unread count. */
    its = its_ms(1, 0);
    CHECK(utimer_timerfd_settime(u, fd, 0, &its, NULL) == 0);
    sleep_ns(20 * NS_PER_MS);
    its = its_ms(10000, 0);
    CHECK(utimer_timerfd_settime(u, fd, 0, &its, &cur) == 0);
    CHECK(!readable(fd, 0));
    /* Bad input. */
    CHECK_ERR(utimer_timerfd_settime(u, fd, 4, &its, NULL), EINVAL);
    CHECK_ERR(utimer_timerfd_settime(u, fd, 0, NULL, NULL), EFAULT);
    CHECK_ERR(utimer_timerfd_gettime(u, fd, NULL), EFAULT);
    /* Pointers no memory can be at: EFAULT, as the kernel's access_ok(),
       not a crash. As the kernel's, the new value is read first (before
       the flags and the descriptor are looked at) and the old one written
       last (the timer armed all the same). */
    for (int i = 0; i < NOWHERE; i++) {
        void *bad = nowhere(i);
        CHECK_ERR(utimer_timerfd_settime(u, fd, 0, bad, NULL), EFAULT);
        CHECK_ERR(utimer_timerfd_settime(u, fd, 4, bad, NULL), EFAULT);
        CHECK_ERR(utimer_timerfd_settime(u, 1 << 20, 0, bad, NULL), EFAULT);
        CHECK_ERR(utimer_timerfd_gettime(u, fd, bad), EFAULT);
        struct itimerspec zero = its_ms(0, 0), far = its_ms(5000, 0);
        CHECK(utimer_timerfd_settime(u, fd, 0, &zero, NULL) == 0);
        CHECK_ERR(utimer_timerfd_settime(u, fd, 0, &far, bad), EFAULT);
        CHECK(utimer_timerfd_gettime(u, fd, &cur) == 0 && cur.it_value.tv_sec >= 4);
    }
    CHECK(utimer_timerfd_settime(u, fd, 0, &its, NULL) == 0);
    int p[2];
    CHECK(pipe(p) == 0);
    CHECK_ERR(utimer_timerfd_settime(u, p[0], 0, &its, NULL), EINVAL);
    CHECK_ERR(utimer_timerfd_gettime(u, 1 << 20, &cur), EBADF);
    /* A registered duplicate names the same timer; the timer lives until
     * the last name is released. */
    int d = dup(fd);
    CHECK(d >= 0 && utimer_timerfd_dup(u, fd, d) == 0);
    CHECK_ERR(utimer_timerfd_dup(u, fd, d), EINVAL);
    CHECK(utimer_timerfd_close(u, fd) == 0);
    its = its_ms(5, 0);
    CHECK(utimer_timerfd_settime(u, d, 0, &its, NULL) == 0);
    CHECK(readable(d, 2000));
    CHECK(utimer_timerfd_close(u, d) == 0);
    CHECK_ERR(utimer_timerfd_settime(u, d, 0, &its, NULL), EBADF);
    /* A blocking timerfd: a read waits for the expiry. */
    fd = utimer_timerfd_create(u, CLOCK_MONOTONIC, 0);
    CHECK(fd >= 0);
    its = its_ms(10, 0);
    t0 = mono_ns();
    CHECK(utimer_timerfd_settime(u, fd, 0, &its, NULL) == 0);
    CHECK(read(fd, &n, sizeof n) == 8 && n == 1 && mono_ns() - t0 >= 10000000LL);
    /* Expired and unread, then re-armed: the blocking read waits again. */
    its = its_ms(1, 0);
    CHECK(utimer_timerfd_settime(u, fd, 0, &its, NULL) == 0);
    sleep_ns(10 * NS_PER_MS);
    its = its_ms(15, 0);
    t0 = mono_ns();
    CHECK(utimer_timerfd_settime(u, fd, 0, &its, NULL) == 0);
    CHECK(read(fd, &n, sizeof n) == 8 && n == 1 && mono_ns() - t0 >= 15000000LL);
    CHECK(utimer_timerfd_close(u, fd) == 0);
    close(p[0]);
    close(p[1]);
}

/* A periodic signal timer whose signal stays blocked: one signal, whose
 * reported overrun counts the periods up to its acceptance. */
static void signal_acceptance(utimer_t *u) {
    int sig = SIGRTMIN + 1;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    CHECK(pthread_sigmask(SIG_BLOCK, &set, NULL) == 0);
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = sig;
    int id;
    CHECK(utimer_timer_create(u, CLOCK_MONOTONIC, &ev, &id) == 0);
    struct itimerspec its = its_ms(2, 2);
    long long t0 = mono_ns();
    CHECK(utimer_timer_settime(u, id, 0, &its, NULL) == 0);
    sleep_ns(60 * NS_PER_MS);
    siginfo_t si;
    CHECK(sigwaitinfo(&set, &si) == sig);
    CHECK(si.si_code == SI_TIMER);
    CHECK(utimer_timer_signal_accepted(u, &si) == 1);
    long long periods = (mono_ns() - t0) / 2000000LL;
    /* Every period up to now, less the one the signal stands for. */
    CHECK(si.si_overrun >= 10 && si.si_overrun <= periods);
    CHECK(utimer_timer_getoverrun(u, id) == si.si_overrun);
    /* Re-armed: the signal queued before is stale. */
    its = its_ms(1, 0);
    CHECK(utimer_timer_settime(u, id, 0, &its, NULL) == 0);
    sleep_ns(10 * NS_PER_MS);
    its = its_ms(10000, 0);
    CHECK(utimer_timer_settime(u, id, 0, &its, NULL) == 0);
    CHECK(sigwaitinfo(&set, &si) == sig);
    CHECK(utimer_timer_signal_accepted(u, &si) == 0);
    /* Not a utimer signal. */
    CHECK(sigqueue(getpid(), sig, (union sigval){0}) == 0);
    CHECK(sigwaitinfo(&set, &si) == sig);
    CHECK_ERR(utimer_timer_signal_accepted(u, &si), EINVAL);
    CHECK_ERR(utimer_timer_signal_accepted(u, NULL), EINVAL);
    CHECK(utimer_timer_delete(u, id) == 0);
    CHECK(pthread_sigmask(SIG_UNBLOCK, &set, NULL) == 0);
}

int main(void) {
    check_init("timerfd", 60);
    utimer_t *u = utimer_open(2);
    CHECK(u != NULL);
    timerfd_semantics(u);
    signal_acceptance(u);
    utimer_close(u);
    check_ok();
    return 0;
}
