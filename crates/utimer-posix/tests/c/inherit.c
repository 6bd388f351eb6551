/* inherit.c - timerfds inherited by a fork() child and kept across exec():
 * the child and the new image read them, re-arm them and ask their setting,
 * and they keep counting; a TFD_CLOEXEC one is gone after exec.
 *
 * The program re-executes itself (/proc/self/exe) with "--stage N" and the
 * descriptor numbers of a fresh timerfd without TFD_CLOEXEC and one with;
 * stage 2 follows execv, stage 3 execl (more arguments than registers),
 * stage 4 execle, stage 5 execlp, which also checks a failed exec. */
#include "check.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/timerfd.h>

#define PERIOD (5 * NS_PER_MS)

static char **saved_env;

/* Waits up to 2 s for fd to be readable, then reads its count. */
static uint64_t read_count(int fd)
{
    struct pollfd p = {fd, POLLIN, 0};
    int r;
    do
        r = poll(&p, 1, 2000);
    while (r < 0 && errno == EINTR);
    CHECK(r == 1 && (p.revents & POLLIN), "fd %d not readable within 2 s (poll %d)", fd, r);
    uint64_t n = 0;
    CHECK(read(fd, &n, sizeof n) == (ssize_t)sizeof n, "read fd %d: errno %d", fd, errno);
    return n;
}

static void arm(int fd, int64_t value, int64_t interval)
{
    struct itimerspec its = its_ns(value, interval);
    CHECK_OK(timerfd_settime(fd, 0, &its, NULL));
}

/* fd is periodic (PERIOD) and counting. */
static void check_periodic(int fd, const char *where)
{
    struct itimerspec g;
    CHECK_OK(timerfd_gettime(fd, &g));
    CHECK(ts_ns(&g.it_interval) == PERIOD, "%s: interval %lld", where,
          (long long)ts_ns(&g.it_interval));
    /* 0 too: the kernel's answer between an expiry and its interrupt,
     * which a loaded machine can stretch; the read shows it counts. */
    CHECK(ts_ns(&g.it_value) >= 0 && ts_ns(&g.it_value) <= PERIOD, "%s: value %lld", where,
          (long long)ts_ns(&g.it_value));
    uint64_t n = read_count(fd);
    CHECK(n >= 1, "%s: count %llu", where, (unsigned long long)n);
}

/* Re-arming fd works: disarmed, it reads nothing (O_NONBLOCK); a one-shot
 * fires once. */
static void check_rearm(int fd, const char *where)
{
    struct itimerspec g;
    uint64_t n;
    arm(fd, 0, 0);
    CHECK_OK(timerfd_gettime(fd, &g));
    CHECK(ts_ns(&g.it_value) == 0 && ts_ns(&g.it_interval) == 0, "%s: disarmed shows %lld/%lld",
          where, (long long)ts_ns(&g.it_value), (long long)ts_ns(&g.it_interval));
    CHECK_ERR(read(fd, &n, sizeof n), EAGAIN);
    int64_t t0 = mono_ns();
    arm(fd, 2 * NS_PER_MS, 0);
    n = read_count(fd);
    CHECK(n == 1, "%s: one-shot count %llu", where, (unsigned long long)n);
    CHECK(mono_ns() - t0 >= 2 * NS_PER_MS, "%s: one-shot fired early", where);
}

static void fork_phase(void)
{
    phase("fork: timerfd in the child", 10);
    int tfd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    arm(tfd, PERIOD, PERIOD);
    int dfd = CHECK_OK(dup(tfd)); /* a duplicate: the same timer, no FD_CLOEXEC */
    CHECK(read_count(tfd) >= 1, "parent's timerfd does not count");
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        check_child_init(10);
        CHECK(fcntl(tfd, F_GETFD) == FD_CLOEXEC, "child: tfd lost FD_CLOEXEC");
        CHECK(fcntl(dfd, F_GETFD) == 0, "child: dup gained FD_CLOEXEC");
        CHECK(fcntl(tfd, F_GETFL) & O_NONBLOCK, "child: tfd lost O_NONBLOCK");
        check_periodic(tfd, "child");
        /* The duplicate names the same timer: a re-arm through one shows
         * through the other. */
        struct itimerspec g, its = its_ns(10 * NS_PER_S, 0);
        CHECK_OK(timerfd_settime(dfd, 0, &its, NULL));
        CHECK_OK(timerfd_gettime(tfd, &g));
        CHECK(ts_ns(&g.it_value) > 5 * NS_PER_S && ts_ns(&g.it_interval) == 0,
              "child: re-arm through the dup not seen through tfd: %lld/%lld",
              (long long)ts_ns(&g.it_value), (long long)ts_ns(&g.it_interval));
        check_rearm(tfd, "child");
        _exit(0);
    }
    CHECK_CHILD_OK(wait_child(pid));
    CHECK_OK(close(dfd));
    CHECK_OK(close(tfd));
}

static void exec_self(int stage, int efd, int cfd)
{
    char s[16], e[16], c[16];
    snprintf(s, sizeof s, "%d", stage);
    snprintf(e, sizeof e, "%d", efd);
    snprintf(c, sizeof c, "%d", cfd);
    fflush(stdout);
    switch (stage) {
    case 2: {
        char *args[] = {"inherit", "--stage", s, e, c, NULL};
        execv("/proc/self/exe", args);
        break;
    }
    case 3: /* eight arguments after the path: some on the stack */
        execl("/proc/self/exe", "inherit", "--stage", s, e, c, "x", "y", "z", (char *)NULL);
        break;
    case 4:
        execle("/proc/self/exe", "inherit", "--stage", s, e, c, (char *)NULL, saved_env);
        break;
    case 5:
        execlp("/proc/self/exe", "inherit", "--stage", s, e, c, (char *)NULL);
        break;
    }
    CHECK(0, "exec to stage %d: errno %d (%s)", stage, errno, strerror(errno));
}

int main(int argc, char **argv, char **envp)
{
    saved_env = envp;
    if (argc >= 5 && strcmp(argv[1], "--stage") == 0) {
        int stage = atoi(argv[2]), efd = atoi(argv[3]), cfd = atoi(argv[4]);
        char where[32];
        snprintf(where, sizeof where, "after exec (stage %d)", stage);
        check_init("inherit", 10);
        phase(where, 10);
        CHECK_ERR(fcntl(cfd, F_GETFD), EBADF);
        CHECK(fcntl(efd, F_GETFD) == 0, "%s: efd has FD_CLOEXEC", where);
        check_periodic(efd, where);
        check_rearm(efd, where);
        CHECK_OK(close(efd));
        /* Fresh ones for the next image: the library hands over the
         * timerfds made by this image. */
        efd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK));
        arm(efd, PERIOD, PERIOD);
        if (stage == 5) {
            /* A failed exec leaves the timerfd working. */
            char *args[] = {"inherit", NULL};
            CHECK_ERR(execv("/nonexistent/inherit", args), ENOENT);
            CHECK(fcntl(efd, F_GETFD) == 0, "after a failed exec: efd has FD_CLOEXEC");
            check_periodic(efd, "after a failed exec");
            check_rearm(efd, "after a failed exec");
            check_ok();
            return 0;
        }
        cfd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC));
        arm(cfd, PERIOD, PERIOD);
        exec_self(stage + 1, efd, cfd);
    }

    check_init("inherit", 30);
    fork_phase();

    phase("exec", 10);
    int efd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK));
    int cfd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC));
    arm(efd, PERIOD, PERIOD);
    arm(cfd, PERIOD, PERIOD);
    CHECK(read_count(efd) >= 1, "timerfd does not count before exec");
    exec_self(2, efd, cfd);
    return 1;
}
