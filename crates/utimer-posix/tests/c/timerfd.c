/* timerfd.c - timerfd_create/settime/gettime as the kernel implements them. */
#include "check.h"
#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/timerfd.h>

#define TO_2S (2 * NS_PER_S)

static void tset(int fd, int flags, int64_t v, int64_t i)
{
    struct itimerspec its = its_ns(v, i);
    CHECK_OK(timerfd_settime(fd, flags, &its, NULL));
}

static int readable(int fd, int timeout_ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    int r = CHECK_OK(poll(&p, 1, timeout_ms));
    CHECK(r == 0 || (p.revents & POLLIN), "poll: revents %#x", p.revents);
    return r;
}

static uint64_t read_count(int fd)
{
    uint64_t n = 0;
    ssize_t r = read(fd, &n, sizeof n);
    CHECK(r == 8, "read: expected 8 bytes, got %zd (errno %d %s)", r, errno, strerror(errno));
    CHECK(n >= 1, "read: expiration count 0");
    return n;
}

static void expect_no_data(int fd, const char *what)
{
    uint64_t n;
    CHECK_ERR(read(fd, &n, sizeof n), EAGAIN);
    CHECK(readable(fd, 0) == 0, "%s: fd readable", what);
}

static void check_bounds(const char *what, uint64_t n, int64_t lo_el, int64_t hi_el, int64_t P)
{
    long long lo = lo_el / P, hi = hi_el / P + 2, min = lo - lo / 4 - 2;
    if (min < 1)
        min = 1;
    note("%s: count %llu bounds [%lld, %lld]", what, (unsigned long long)n, min, hi);
    CHECK((long long)n >= min && (long long)n <= hi,
          "%s: expected count in [%lld, %lld], got %llu", what, min, hi, (unsigned long long)n);
}

static void test_create(void)
{
    int fd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, 0));
    CHECK(!(CHECK_OK(fcntl(fd, F_GETFL)) & O_NONBLOCK), "O_NONBLOCK set without TFD_NONBLOCK");
    CHECK(!(CHECK_OK(fcntl(fd, F_GETFD)) & FD_CLOEXEC), "FD_CLOEXEC set without TFD_CLOEXEC");
    close(fd);
    fd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    CHECK(CHECK_OK(fcntl(fd, F_GETFL)) & O_NONBLOCK, "TFD_NONBLOCK: O_NONBLOCK not set");
    CHECK(CHECK_OK(fcntl(fd, F_GETFD)) & FD_CLOEXEC, "TFD_CLOEXEC: FD_CLOEXEC not set");
    close(fd);
    clockid_t ok[] = {CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME};
    for (int i = 0; i < 3; i++)
        close((int)CHECK_OK(timerfd_create(ok[i], 0)));
    CHECK_ERR(timerfd_create(CLOCK_MONOTONIC, 0x1234), EINVAL);
    CHECK_ERR(timerfd_create(CLOCK_MONOTONIC, O_RDWR), EINVAL);
    CHECK_ERR(timerfd_create(12345, 0), EINVAL);
    CHECK_ERR(timerfd_create(-1, 0), EINVAL);
    /* Kernel: CPU-time clocks and CLOCK_TAI are not supported by timerfd. */
    CHECK_ERR(timerfd_create(CLOCK_PROCESS_CPUTIME_ID, 0), EINVAL);
    CHECK_ERR(timerfd_create(CLOCK_THREAD_CPUTIME_ID, 0), EINVAL);
    CHECK_ERR(timerfd_create(CLOCK_TAI, 0), EINVAL);
    /* Alarm clocks: success with CAP_WAKE_ALARM, else EPERM. */
    clockid_t al[] = {CLOCK_REALTIME_ALARM, CLOCK_BOOTTIME_ALARM};
    for (int i = 0; i < 2; i++) {
        errno = 0;
        int r = timerfd_create(al[i], TFD_CLOEXEC);
        CHECK(r >= 0 || errno == EPERM, "alarm clock %d: expected fd or EPERM, got errno %d",
              al[i], errno);
        if (r >= 0)
            close(r);
    }
}

static void test_read_and_time(void)
{
    int fd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    struct itimerspec g, old;
    char big[16];
    uint32_t small;
    memset(&g, 0x5a, sizeof g);
    CHECK_OK(timerfd_gettime(fd, &g));
    CHECK(ts_ns(&g.it_value) == 0 && ts_ns(&g.it_interval) == 0, "new timerfd not disarmed");
    expect_no_data(fd, "disarmed");
    CHECK_ERR(read(fd, &small, sizeof small), EINVAL);
    tset(fd, 0, 10 * NS_PER_S, 0);
    expect_no_data(fd, "armed 10s");
    CHECK_ERR(read(fd, &small, sizeof small), EINVAL);
    CHECK_ERR(write(fd, "12345678", 8), EINVAL); /* kernel: no write op */

    /* One-shot blocking read: 8 bytes, exactly 1 expiration, never early. */
    int bfd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, 0));
    for (int abs = 0; abs <= 1; abs++) {
        int64_t d = (abs ? 7 : 10) * NS_PER_MS, t0 = mono_ns();
        tset(bfd, abs ? TFD_TIMER_ABSTIME : 0, abs ? t0 + d : d, 0);
        uint64_t n = read_count(bfd);
        int64_t el = mono_ns() - t0;
        CHECK(n == 1, "one-shot count expected 1, got %llu", (unsigned long long)n);
        CHECK(el >= d, "timerfd read returned early: %lld < %lld", (long long)el, (long long)d);
        CHECK(el < TO_2S, "timerfd read took %lld ms", (long long)(el / NS_PER_MS));
        CHECK_OK(timerfd_gettime(bfd, &g));
        CHECK(ts_ns(&g.it_value) == 0 && ts_ns(&g.it_interval) == 0,
              "expired one-shot timerfd: gettime not zero");
    }
    close(bfd);

    /* 4-byte read of an expired timer: EINVAL, and the count is kept. */
    tset(fd, 0, NS_PER_MS, 0);
    CHECK(readable(fd, 2000) == 1, "1 ms timerfd not readable in 2 s");
    CHECK_ERR(read(fd, &small, sizeof small), EINVAL);
    CHECK(read(fd, big, sizeof big) == 8, "16-byte read: expected 8 bytes");
    expect_no_data(fd, "after read");

    /* Periodic 1 ms timer read after 50 ms. */
    int64_t P = NS_PER_MS, a0 = mono_ns();
    tset(fd, 0, P, P);
    int64_t a1 = mono_ns();
    sleep_ns(50 * NS_PER_MS);
    int64_t pre = mono_ns();
    uint64_t n = read_count(fd);
    int64_t post = mono_ns();
    check_bounds("periodic 1ms after 50ms", n, pre - a1, post - a0, P);
    CHECK_OK(timerfd_gettime(fd, &g));
    CHECK(ts_ns(&g.it_interval) == P && ts_ns(&g.it_value) > 0 && ts_ns(&g.it_value) <= P,
          "periodic gettime: value %lld interval %lld", (long long)ts_ns(&g.it_value),
          (long long)ts_ns(&g.it_interval));

    /* settime returns the old value; gettime reports relative time. */
    struct itimerspec its = its_ns(3 * NS_PER_S, 2 * NS_PER_S);
    CHECK_OK(timerfd_settime(fd, 0, &its, &old));
    CHECK(ts_ns(&old.it_interval) == P && ts_ns(&old.it_value) > 0 &&
              ts_ns(&old.it_value) <= P,
          "old value: %lld/%lld", (long long)ts_ns(&old.it_value),
          (long long)ts_ns(&old.it_interval));
    its = its_ns(mono_ns() + 5 * NS_PER_S, 0);
    CHECK_OK(timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, &old));
    CHECK(ts_ns(&old.it_interval) == 2 * NS_PER_S && ts_ns(&old.it_value) > 2 * NS_PER_S &&
              ts_ns(&old.it_value) <= 3 * NS_PER_S,
          "old value: %lld/%lld", (long long)ts_ns(&old.it_value),
          (long long)ts_ns(&old.it_interval));
    CHECK_OK(timerfd_gettime(fd, &g));
    CHECK(ts_ns(&g.it_interval) == 0 && ts_ns(&g.it_value) > 4 * NS_PER_S &&
              ts_ns(&g.it_value) <= 5 * NS_PER_S,
          "abs 5s: gettime %lld/%lld", (long long)ts_ns(&g.it_value),
          (long long)ts_ns(&g.it_interval));
    /* Zero value disarms; the interval then never fires.  Kernel quirk
     * (timerfd_setup stores it_interval unconditionally): unlike timer_*,
     * timerfd_gettime/old_value still report that interval. */
    its = its_ns(0, NS_PER_MS);
    CHECK_OK(timerfd_settime(fd, 0, &its, &old));
    CHECK(ts_ns(&old.it_value) > 4 * NS_PER_S, "old value of armed timerfd lost");
    CHECK_OK(timerfd_gettime(fd, &g));
    CHECK(ts_ns(&g.it_value) == 0 && ts_ns(&g.it_interval) == NS_PER_MS,
          "disarmed timerfd with interval: expected 0/1000000 (kernel), got %lld/%lld",
          (long long)ts_ns(&g.it_value), (long long)ts_ns(&g.it_interval));
    sleep_ns(10 * NS_PER_MS);
    expect_no_data(fd, "disarmed with interval");
    its = its_ns(0, 0);
    CHECK_OK(timerfd_settime(fd, 0, &its, &old));
    CHECK(ts_ns(&old.it_value) == 0 && ts_ns(&old.it_interval) == NS_PER_MS,
          "old of disarmed timerfd with interval: expected 0/1000000, got %lld/%lld",
          (long long)ts_ns(&old.it_value), (long long)ts_ns(&old.it_interval));

    /* Re-arming an expired, unread timerfd resets the count. */
    for (int mode = 0; mode < 2; mode++) {
        tset(fd, 0, NS_PER_MS, mode ? NS_PER_MS : 0);
        CHECK(readable(fd, 2000) == 1, "not readable after expiry");
        tset(fd, 0, mode ? 0 : 10 * NS_PER_S, 0);
        expect_no_data(fd, mode ? "disarmed after expiry" : "re-armed after expiry");
    }

    /* Absolute time in the past: readable at once. */
    tset(fd, TFD_TIMER_ABSTIME, mono_ns() - NS_PER_S, 0);
    CHECK(readable(fd, 1000) == 1, "abs time in the past: not readable");
    CHECK(read_count(fd) == 1, "abs past one-shot: count != 1");
    /* ...periodic: the missed periods are counted (kernel hrtimer_forward). */
    int64_t T = mono_ns() - 20 * NS_PER_MS;
    tset(fd, TFD_TIMER_ABSTIME, T, 2 * NS_PER_MS);
    CHECK(readable(fd, 1000) == 1, "abs past periodic: not readable");
    pre = mono_ns();
    n = read_count(fd);
    post = mono_ns();
    check_bounds("abs 20ms in the past, period 2ms", n, pre - T + 2 * NS_PER_MS,
                 post - T + 2 * NS_PER_MS, 2 * NS_PER_MS);
    tset(fd, 0, 0, 0);
    close(fd);
}

static void test_poll_select_epoll(void)
{
    int fd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK));
    int ep = CHECK_OK(epoll_create1(EPOLL_CLOEXEC));
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 77}, out[2];
    CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
    for (int round = 0; round < 2; round++) {
        int64_t d = 30 * NS_PER_MS, t0 = mono_ns();
        tset(fd, 0, d, 0);
        fd_set rs;
        struct timeval tv = {0, 0};
        FD_ZERO(&rs);
        FD_SET(fd, &rs);
        CHECK(CHECK_OK(select(fd + 1, &rs, NULL, NULL, &tv)) == 0, "select: readable early");
        CHECK(readable(fd, 0) == 0, "poll: readable early");
        CHECK(CHECK_OK(epoll_wait(ep, out, 2, 0)) == 0, "epoll: readable early");
        int r;
        if (round == 0) {
            r = readable(fd, 2000);
        } else {
            do
                r = epoll_wait(ep, out, 2, 2000);
            while (r < 0 && errno == EINTR);
        }
        int64_t el = mono_ns() - t0;
        CHECK(r == 1, "round %d: not readable within 2 s", round);
        CHECK(el >= d, "round %d: readable early (%lld < %lld)", round, (long long)el,
              (long long)d);
        FD_ZERO(&rs);
        FD_SET(fd, &rs);
        tv.tv_sec = 0;
        CHECK(CHECK_OK(select(fd + 1, &rs, NULL, NULL, &tv)) == 1 && FD_ISSET(fd, &rs),
              "select: not readable after expiry");
        CHECK(CHECK_OK(epoll_wait(ep, out, 2, 0)) == 1 && (out[0].events & EPOLLIN) &&
                  out[0].data.u32 == 77,
              "epoll: no EPOLLIN after expiry");
        CHECK(readable(fd, 0) == 1, "poll: not readable after expiry");
        CHECK(read_count(fd) == 1, "count != 1");
        FD_ZERO(&rs);
        FD_SET(fd, &rs);
        CHECK(CHECK_OK(select(fd + 1, &rs, NULL, NULL, &tv)) == 0, "select: readable after read");
        CHECK(CHECK_OK(epoll_wait(ep, out, 2, 0)) == 0, "epoll: readable after read");
        CHECK(readable(fd, 0) == 0, "poll: readable after read");
    }
    close(ep);
    close(fd);
}

static void test_errors(void)
{
    int fd = CHECK_OK(timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK));
    struct itimerspec its = its_ns(NS_PER_S, 0), g;
    static const struct itimerspec bad[] = {
        {{0, 0}, {-1, 0}}, {{0, 0}, {0, 1000000000}}, {{0, 0}, {0, -1}},
        {{-1, 0}, {1, 0}}, {{0, 1000000000}, {1, 0}}, {{0, -1}, {1, 0}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_ERR(timerfd_settime(fd, 0, &bad[i], NULL), EINVAL);
    CHECK_ERR(timerfd_settime(fd, 0x100, &its, NULL), EINVAL);
    CHECK_ERR(timerfd_settime(fd, 4, &its, NULL), EINVAL);
    /* Kernel answers for NULL pointers: EFAULT. */
    CHECK_ERR(timerfd_settime(fd, 0, NULL, NULL), EFAULT);
    CHECK_ERR(timerfd_gettime(fd, NULL), EFAULT);
    /* CANCEL_ON_SET is accepted (the clock is not changed here); without
     * ABSTIME, or on a non-REALTIME clock, the kernel ignores it. */
    its = its_ns(now_ns(CLOCK_REALTIME) + 10 * NS_PER_S, 0);
    CHECK_OK(timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &its, NULL));
    CHECK_OK(timerfd_gettime(fd, &g));
    CHECK(ts_ns(&g.it_value) > 9 * NS_PER_S && ts_ns(&g.it_value) <= 10 * NS_PER_S,
          "CANCEL_ON_SET abs timer: gettime %lld", (long long)ts_ns(&g.it_value));
    expect_no_data(fd, "CANCEL_ON_SET armed");
    its = its_ns(NS_PER_S, 0);
    CHECK_OK(timerfd_settime(fd, TFD_TIMER_CANCEL_ON_SET, &its, NULL));
    int mfd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK));
    CHECK_OK(timerfd_settime(mfd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &its, NULL));
    CHECK(readable(mfd, 1000) == 1, "abs MONOTONIC 1s (past) with CANCEL_ON_SET not readable");
    close(mfd);

    int p[2];
    CHECK_OK(pipe(p));
    CHECK_ERR(timerfd_settime(p[0], 0, &its, NULL), EINVAL);
    CHECK_ERR(timerfd_gettime(p[0], &g), EINVAL);
    close(p[0]);
    close(p[1]);
    CHECK_ERR(timerfd_settime(p[0], 0, &its, NULL), EBADF);
    CHECK_ERR(timerfd_gettime(p[0], &g), EBADF);
    CHECK_ERR(timerfd_settime(-1, 0, &its, NULL), EBADF);
    close(fd);
    CHECK_ERR(timerfd_gettime(fd, &g), EBADF);
    CHECK_ERR(timerfd_settime(fd, 0, &its, NULL), EBADF);
}

/* A pointer no memory of the program can be at (the zero page, the
 * kernel's half, an end that wraps): the kernel answers EFAULT (its
 * access_ok()), through the libc functions too, not a crash.  Built at
 * run time so the compiler sees no constant address. */
static void *nowhere(int i)
{
    static volatile uintptr_t addrs[] = {1, 4095, 0xffff800000000000u, UINTPTR_MAX - 7};
    return (void *)addrs[i];
}
#define NOWHERE 4

static void test_bad_pointers(void)
{
    int fd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK));
    struct itimerspec good = its_ns(5 * NS_PER_S, 0), g;
    for (int i = 0; i < NOWHERE; i++) {
        void *bad = nowhere(i);
        CHECK_ERR(timerfd_settime(fd, 0, bad, NULL), EFAULT);
        CHECK_ERR(timerfd_settime(fd, TFD_TIMER_ABSTIME, bad, &g), EFAULT);
        /* new_value is read before the flags are looked at. */
        CHECK_ERR(timerfd_settime(fd, 0x100, bad, NULL), EFAULT);
        CHECK_OK(timerfd_gettime(fd, &g));
        CHECK(ts_ns(&g.it_value) == 0, "%p as new_value armed the timer", bad);
        CHECK_ERR(timerfd_gettime(fd, bad), EFAULT);
        /* The old value is written last: the timer is armed all the same. */
        CHECK_ERR(timerfd_settime(fd, 0, &good, bad), EFAULT);
        CHECK_OK(timerfd_gettime(fd, &g));
        CHECK(ts_ns(&g.it_value) > 4 * NS_PER_S && ts_ns(&g.it_value) <= 5 * NS_PER_S,
              "%p as old_value: timer not armed (value %lld)", bad,
              (long long)ts_ns(&g.it_value));
        tset(fd, 0, 0, 0);
    }
    close(fd);
    /* The same through TFD_TIMER_CANCEL_ON_SET (the drop-in's kernel path). */
    int flags = TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET;
    for (int i = 0; i < NOWHERE; i++) {
        void *bad = nowhere(i);
        fd = CHECK_OK(timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK));
        CHECK_ERR(timerfd_settime(fd, flags, bad, NULL), EFAULT);
        good = its_ns(now_ns(CLOCK_REALTIME) + 5 * NS_PER_S, 0);
        CHECK_ERR(timerfd_settime(fd, flags, &good, bad), EFAULT);
        CHECK_OK(timerfd_gettime(fd, &g));
        CHECK(ts_ns(&g.it_value) > 4 * NS_PER_S && ts_ns(&g.it_value) <= 5 * NS_PER_S,
              "CANCEL_ON_SET, %p as old_value: timer not armed (value %lld)", bad,
              (long long)ts_ns(&g.it_value));
        close(fd);
    }
}

/* Put a fresh non-blocking eventfd or pipe read end at descriptor number n. */
static void occupy(int n, int use_pipe)
{
    int e, keep = -1;
    if (use_pipe) {
        int p[2];
        CHECK_OK(pipe2(p, O_NONBLOCK | O_CLOEXEC));
        e = p[0];
        keep = p[1];
        if (keep == n) { /* write end landed on n: move it away */
            keep = CHECK_OK(fcntl(p[1], F_DUPFD_CLOEXEC, n + 1));
            close(p[1]);
        }
    } else {
        e = CHECK_OK(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    }
    if (e != n) {
        CHECK_OK(dup2(e, n));
        close(e);
    }
    (void)keep; /* the write end stays open (leaked) so reads give EAGAIN */
}

static void test_fd_reuse(void)
{
    for (int kind = 0; kind < 2; kind++) {
        int fd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK));
        tset(fd, 0, NS_PER_MS, NS_PER_MS);
        sleep_ns(3 * NS_PER_MS);
        CHECK_OK(close(fd));
        occupy(fd, kind);
        sleep_ns(50 * NS_PER_MS);
        expect_no_data(fd, kind ? "pipe reusing a closed timerfd's number"
                                 : "eventfd reusing a closed timerfd's number");
        close(fd);
    }
    /* dup2 over a live periodic timerfd. */
    int fd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK));
    int e = CHECK_OK(eventfd(0, EFD_NONBLOCK));
    tset(fd, 0, NS_PER_MS, NS_PER_MS);
    CHECK(dup2(e, fd) == fd, "dup2");
    sleep_ns(50 * NS_PER_MS);
    expect_no_data(fd, "eventfd dup2()ed over a timerfd");
    expect_no_data(e, "eventfd source of dup2");
    struct itimerspec g;
    CHECK_ERR(timerfd_gettime(fd, &g), EINVAL);
    close(fd);
    close(e);
    /* A dup()ed descriptor keeps the timer alive after the original closes. */
    fd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, 0));
    int d = CHECK_OK(dup(fd));
    tset(fd, 0, 10 * NS_PER_MS, 0);
    close(fd);
    CHECK_OK(timerfd_gettime(d, &g));
    CHECK(read_count(d) == 1, "dup: count != 1");
    tset(d, 0, NS_PER_MS, 0);
    CHECK(read_count(d) == 1, "dup re-armed: count != 1");
    close(d);
}

/* exec: CLOEXEC timerfd's number reused in the new image gets no data; a
 * non-CLOEXEC timerfd survives exec and keeps generating expirations. */
/* Open descriptors of this process (the entries of /proc/self/fd, less the
   directory's own). */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL, "opendir /proc/self/fd: %s", strerror(errno));
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1;
}

/* close_range() and closefrom() end the timerfds they close, as close() does:
   nothing of the timer stays open, and a number reused by another file is not
   a timerfd (the kernel: EINVAL). close_range() with CLOSE_RANGE_CLOEXEC
   closes nothing, so the timer keeps running. */
static void test_close_range(void)
{
    for (int how = 0; how < 2; how++) {
        int before = open_fds();
        /* Two timerfds at the top of the table. */
        int a0 = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK));
        int a = CHECK_OK(fcntl(a0, F_DUPFD, 900));
        int b0 = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK));
        int b = CHECK_OK(fcntl(b0, F_DUPFD, 950));
        close(a0);
        close(b0);
        tset(a, 0, NS_PER_MS, NS_PER_MS);
        tset(b, 0, NS_PER_MS, NS_PER_MS);
        sleep_ns(3 * NS_PER_MS);
        CHECK(read_count(a) >= 1 && read_count(b) >= 1, "timerfds at 900 and 950 fire");
        if (how == 0) {
            /* CLOEXEC only: both stay timerfds and keep firing. */
            CHECK_OK(close_range(900, ~0u, CLOSE_RANGE_CLOEXEC));
            struct itimerspec g;
            CHECK_OK(timerfd_gettime(a, &g));
            sleep_ns(3 * NS_PER_MS);
            CHECK(read_count(b) >= 1, "close_range(CLOEXEC) stopped a timerfd");
            CHECK_OK(close_range(900, ~0u, 0));
        } else {
            closefrom(900);
        }
        CHECK(open_fds() == before,
              "%s left %d descriptors open (expected %d)", how ? "closefrom" : "close_range",
              open_fds(), before);
        /* Other files take the numbers: not timerfds, and never written. */
        occupy(a, 0);
        occupy(b, 1);
        struct itimerspec g;
        CHECK_ERR(timerfd_gettime(a, &g), EINVAL);
        CHECK_ERR(timerfd_gettime(b, &g), EINVAL);
        sleep_ns(20 * NS_PER_MS);
        expect_no_data(a, "eventfd reusing a number close_range()d");
        expect_no_data(b, "pipe reusing a number closefrom()ed");
        close(a);
        close(b);
    }
    /* Bad arguments close nothing: the timer keeps its number. */
    int fd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK));
    CHECK_ERR(close_range((unsigned)fd + 1, (unsigned)fd, 0), EINVAL);
    CHECK_ERR(close_range((unsigned)fd, (unsigned)fd, 1u << 30), EINVAL);
    tset(fd, 0, NS_PER_MS, 0);
    CHECK(readable(fd, 2000) == 1, "timerfd after a refused close_range never fired");
    CHECK(read_count(fd) == 1, "timerfd after a refused close_range");
    close(fd);
}

static int exec_child(int cloexec_fd, int kept_fd)
{
    check_init("timerfd(exec child)", 5);
    CHECK_ERR(fcntl(cloexec_fd, F_GETFD), EBADF);
    occupy(cloexec_fd, 1);
    sleep_ns(50 * NS_PER_MS);
    expect_no_data(cloexec_fd, "pipe at a CLOEXEC timerfd's number after exec");
    /* timerfd_gettime/settime on the inherited number in the new image:
     * inherit.c. */
    CHECK(readable(kept_fd, 2000) == 1, "inherited timerfd not readable after exec");
    read_count(kept_fd);
    return 0;
}

static void test_exec(void)
{
    int c = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    int k = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK));
    tset(c, 0, NS_PER_MS, NS_PER_MS);
    tset(k, 0, NS_PER_MS, NS_PER_MS);
    char a1[16], a2[16];
    snprintf(a1, sizeof a1, "%d", c);
    snprintf(a2, sizeof a2, "%d", k);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        execl("/proc/self/exe", "timerfd", "--exec-child", a1, a2, (char *)NULL);
        _exit(99);
    }
    CHECK_CHILD_OK(wait_child(pid));
    /* The parent's CLOEXEC timer is unaffected. */
    CHECK(readable(c, 2000) == 1, "parent's timerfd stopped after child exec");
    read_count(c);
    close(c);
    close(k);
}

/* fork: the child inherits the armed timer and reads its expiration. */
static void test_fork(void)
{
    int fd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, 0));
    int64_t T = mono_ns() + 30 * NS_PER_MS;
    tset(fd, TFD_TIMER_ABSTIME, T, 0);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        check_child_init(5);
        uint64_t n = read_count(fd); /* blocking */
        CHECK(n == 1, "child: count %llu", (unsigned long long)n);
        CHECK(mono_ns() >= T, "child: read returned before the expiry time");
        _exit(0);
    }
    CHECK_CHILD_OK(wait_child(pid));

    /* Not checked: that parent and child share one timer (a kernel timerfd
     * is one object across fork: an expiration read by one is gone for the
     * other, a re-arm by one is seen by the other). utimer's drop-in gives
     * the child a kernel timerfd of its own with the setting the timer had
     * at the fork (inherit.c checks what it must do), a difference its docs
     * state. */
    close(fd);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--exec-child") == 0)
        return exec_child(atoi(argv[2]), atoi(argv[3]));
    check_init("timerfd", 20);
    phase("create", 5);
    test_create();
    phase("read_and_time", 5);
    test_read_and_time();
    phase("poll_select_epoll", 5);
    test_poll_select_epoll();
    phase("errors", 5);
    test_errors();
    phase("bad_pointers", 5);
    test_bad_pointers();
    phase("fd_reuse", 5);
    test_fd_reuse();
    phase("close_range", 5);
    test_close_range();
    phase("exec", 8);
    test_exec();
    phase("fork", 8);
    test_fork();
    check_ok();
    return 0;
}
