/*
 * A real-time thread pinned to one CPU, the way cyclictest measures: it
 * makes itself SCHED_FIFO, then a periodic SIGEV_THREAD_ID timer aimed at
 * itself, and takes every expiry with sigwaitinfo().  The kernel fires each
 * one on time from its interrupt, above every thread, and never early.
 *
 * Checked on any implementation: every signal is SI_TIMER for this timer,
 * never early, no more than the generous LATE_NS after its expiry counting
 * overruns, and the count of signals plus overruns covers the periods.
 * Checked where other threads exist in the process (a library that runs
 * the timers on threads of its own, which the kernel does not): none of
 * them may be left below the real-time thread's priority once it was
 * allowed to raise itself, and none may inherit the measuring thread's
 * one-CPU affinity unless it is pinned on purpose to a CPU of its own (a
 * worker per CPU).  A process without the privilege to use SCHED_FIFO
 * still runs the timing checks (the priority ones then have nothing to
 * compare).
 */
#include "check.h"
#include <dirent.h>
#include <sys/syscall.h>
#include <sched.h>

#define PERIOD_NS (1 * NS_PER_MS)
#define ROUNDS 300
#define LATE_NS (50 * NS_PER_MS)

static int cpus_of(pid_t tid, cpu_set_t *set)
{
    CPU_ZERO(set);
    return sched_getaffinity(tid, sizeof *set, set);
}

/* The calling thread's name, for matching /proc/self/task entries. */
static void thread_comm(pid_t tid, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (fgets(buf, (int)len, f))
        buf[strcspn(buf, "\n")] = 0;
    fclose(f);
}

int main(void)
{
    check_init("sched", 30);
    pid_t me = (pid_t)syscall(SYS_gettid);

    cpu_set_t process_set;
    CHECK_OK(cpus_of(getpid(), &process_set));
    int ncpu = CPU_COUNT(&process_set);
    int first = 0;
    while (!CPU_ISSET(first, &process_set))
        first++;

    phase("pin and raise", 5);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    CHECK_OK(sched_setaffinity(0, sizeof one, &one));
    struct sched_param sp = { .sched_priority = 10 };
    int rt = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
    if (!rt)
        note("no SCHED_FIFO here (%s): timing checks only", strerror(errno));

    phase("periodic timer", 15);
    int sig = SIGRTMIN + 2;
    block_sig(sig);
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = sig;
    ev.sigev_notify_thread_id = me;
    ev.sigev_value.sival_int = 77;
    timer_t t;
    CHECK_OK(timer_create(CLOCK_MONOTONIC, &ev, &t));
    int64_t start = mono_ns() + 5 * NS_PER_MS;
    struct itimerspec its = { .it_value = ns_ts(start), .it_interval = ns_ts(PERIOD_NS) };
    CHECK_OK(timer_settime(t, TIMER_ABSTIME, &its, NULL));

    sigset_t set = sigset_of(sig);
    int64_t expiry = start;
    int64_t periods = 0;
    for (int i = 0; i < ROUNDS; i++) {
        siginfo_t si;
        CHECK(wait_sig(&set, &si, 5 * NS_PER_S) == sig, "signal %d of %d", i, ROUNDS);
        int64_t now = mono_ns();
        CHECK(si.si_code == SI_TIMER, "si_code %d", si.si_code);
        CHECK(si.si_value.sival_int == 77, "si_value %d", si.si_value.sival_int);
        int over = timer_getoverrun(t);
        CHECK(over >= 0, "overrun %d", over);
        expiry += (int64_t)over * PERIOD_NS;
        CHECK(now >= expiry, "signal %d came %lld ns early", i, (long long)(expiry - now));
        CHECK(now - expiry <= LATE_NS, "signal %d came %lld ns late", i, (long long)(now - expiry));
        periods += 1 + over;
        expiry += PERIOD_NS;
    }
    CHECK(periods >= ROUNDS, "%lld periods", (long long)periods);

    phase("other threads", 5);
    int workers_seen = 0;
    DIR *d = opendir("/proc/self/task");
    CHECK(d != NULL, "opendir /proc/self/task");
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        pid_t tid = (pid_t)atoi(e->d_name);
        if (tid <= 0 || tid == me || tid == getpid())
            continue;
        char comm[32];
        thread_comm(tid, comm, sizeof comm);
        cpu_set_t s;
        if (cpus_of(tid, &s) != 0)
            continue; /* gone meanwhile */
        int n = CPU_COUNT(&s);
        CHECK(n == ncpu || n == 1, "thread %d (%s) runs on %d of %d CPUs", tid, comm, n, ncpu);
        if (n == 1 && ncpu > 1) {
            /* Pinned on purpose: a worker per CPU, not our set inherited
               (that would be the measuring thread's CPU for every one). */
            workers_seen++;
        }
        if (rt && strncmp(comm, "utimer-worker", 13) == 0) {
            struct sched_param p;
            int policy = sched_getscheduler(tid);
            CHECK_OK(sched_getparam(tid, &p));
            CHECK(policy == SCHED_FIFO && p.sched_priority >= sp.sched_priority,
                  "timer thread %d (%s): policy %d priority %d, below the program's FIFO %d",
                  tid, comm, policy, p.sched_priority, sp.sched_priority);
        }
    }
    closedir(d);
    if (ncpu > 1 && workers_seen > 0) {
        /* Pinned threads, one per CPU: not all on the measuring thread's. */
        CHECK(workers_seen >= ncpu, "%d pinned threads for %d CPUs", workers_seen, ncpu);
    }

    CHECK_OK(timer_delete(t));
    printf("sched: ok\n");
    return 0;
}
