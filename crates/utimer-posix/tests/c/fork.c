/* fork.c - POSIX timers are not inherited by fork(); children get their own. */
#include "check.h"

#define TO_2S (2 * NS_PER_S)

static _Atomic int sig_count;  /* parent's periodic SIGEV_SIGNAL timer */
static _Atomic int thr_count;  /* parent's periodic SIGEV_THREAD timer */
static _Atomic int child_cb;   /* child's SIGEV_THREAD timer */
static _Atomic pid_t child_cb_tid;

static void handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (si->si_code == SI_TIMER && si->si_value.sival_int == 1)
        atomic_fetch_add(&sig_count, 1);
}

static void parent_cb(union sigval v)
{
    if (v.sival_int == 2)
        atomic_fetch_add(&thr_count, 1);
}

static void child_cbf(union sigval v)
{
    if (v.sival_int == 43) {
        atomic_store(&child_cb_tid, gettid());
        atomic_fetch_add(&child_cb, 1);
    }
}

static timer_t mk(int notify, int signo, int sival, void (*fn)(union sigval))
{
    struct sigevent ev;
    timer_t t;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = notify;
    ev.sigev_signo = signo;
    ev.sigev_value.sival_int = sival;
    ev.sigev_notify_function = fn;
    CHECK_OK(timer_create(CLOCK_MONOTONIC, &ev, &t));
    return t;
}

static void set_ns(timer_t t, int64_t v, int64_t i)
{
    struct itimerspec its = its_ns(v, i);
    CHECK_OK(timer_settime(t, 0, &its, NULL));
}

static void wait_count(_Atomic int *c, int target, const char *what)
{
    int64_t end = mono_ns() + TO_2S;
    while (atomic_load(c) < target && mono_ns() < end)
        sleep_ns(NS_PER_MS);
    CHECK(atomic_load(c) >= target, "%s: count %d < %d after 2 s", what, atomic_load(c),
          target);
}

/* In a child: its own timers work (SIGEV_THREAD ones only when with_thread:
 * see main() for the glibc 2.36 fork hazard). */
static void child_own_timers(int with_thread)
{
    phase("child: own SIGEV_SIGNAL timers", 5);
    int sig = SIGRTMIN + 1;
    sigset_t set = sigset_of(sig);
    siginfo_t si;
    block_sig(sig);
    timer_t t = mk(SIGEV_SIGNAL, sig, 42, NULL);
    for (int k = 0; k < 3; k++) {
        int64_t t0 = mono_ns();
        set_ns(t, 3 * NS_PER_MS, 0);
        CHECK(wait_sig(&set, &si, TO_2S) == sig, "child's own timer did not fire");
        CHECK(mono_ns() - t0 >= 3 * NS_PER_MS, "child's timer fired early");
        CHECK(si.si_code == SI_TIMER && si.si_value.sival_int == 42, "child siginfo %d/%d",
              si.si_code, si.si_value.sival_int);
    }
    set_ns(t, NS_PER_MS, NS_PER_MS);
    sleep_ns(10 * NS_PER_MS);
    CHECK(wait_sig(&set, &si, TO_2S) == sig && si.si_overrun >= 1,
          "child's periodic timer: no signal or no overrun (%d)", si.si_overrun);
    CHECK_OK(timer_delete(t));
    if (!with_thread)
        return;

    phase("child: own SIGEV_THREAD timer", 5);
    timer_t th = mk(SIGEV_THREAD, 0, 43, child_cbf);
    set_ns(th, 2 * NS_PER_MS, 0);
    wait_count(&child_cb, 1, "child's SIGEV_THREAD timer");
    CHECK(child_cb_tid != gettid(), "child's SIGEV_THREAD callback ran on the main thread");
    CHECK_OK(timer_delete(th));
}

struct tid_arg {
    _Atomic pid_t tid;
    _Atomic int got;
};

static void *sigwait_thread(void *p)
{
    struct tid_arg *a = p;
    sigset_t set = sigset_of(SIGRTMIN + 2);
    siginfo_t si;
    atomic_store(&a->tid, gettid());
    if (wait_sig(&set, &si, TO_2S) == SIGRTMIN + 2 && si.si_value.sival_int == 44)
        atomic_store(&a->got, 1);
    return NULL;
}

/* In a child: SIGEV_THREAD_ID to a thread the child created. */
static void child_thread_id(void)
{
    static struct tid_arg a;
    pthread_t th;
    phase("child: SIGEV_THREAD_ID", 5);
    block_sig(SIGRTMIN + 2);
    CHECK_PT(pthread_create(&th, NULL, sigwait_thread, &a));
    while (!atomic_load(&a.tid))
        sleep_ns(NS_PER_MS);
    struct sigevent ev;
    timer_t t;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGRTMIN + 2;
    ev.sigev_value.sival_int = 44;
    ev.sigev_notify_thread_id = atomic_load(&a.tid);
    CHECK_OK(timer_create(CLOCK_MONOTONIC, &ev, &t));
    set_ns(t, 2 * NS_PER_MS, 0);
    CHECK_PT(pthread_join(th, NULL));
    CHECK(atomic_load(&a.got), "child: SIGEV_THREAD_ID signal not received by the thread");
    CHECK_OK(timer_delete(t));
}

static timer_t tp, tt, tn; /* the parent's timers */

static void child_main(void)
{
    check_child_init(5);
    struct itimerspec g, its = its_ns(NS_PER_S, 0);
    timer_t ids[3] = {tp, tt, tn};
    /* Before the child creates any timer: none of the parent's ids exist. */
    for (int i = 0; i < 3; i++) {
        CHECK_ERR(timer_gettime(ids[i], &g), EINVAL);
        CHECK_ERR(timer_settime(ids[i], 0, &its, NULL), EINVAL);
        CHECK_ERR(timer_getoverrun(ids[i]), EINVAL);
        CHECK_ERR(timer_delete(ids[i]), EINVAL);
    }
    /* The parent's timers do not signal the child or run callbacks here. */
    sigset_t set = sigset_of(SIGRTMIN);
    siginfo_t si;
    block_sig(SIGRTMIN);
    int tc = atomic_load(&thr_count);
    CHECK(wait_sig(&set, &si, 30 * NS_PER_MS) == -1 && errno == EAGAIN,
          "child received a signal from the parent's timer (sival %d)", si.si_value.sival_int);
    CHECK(atomic_load(&thr_count) == tc, "parent's SIGEV_THREAD callback ran in the child");
    child_own_timers(0);
    child_thread_id();
    _exit(0);
}

static _Atomic int go;
static void *idle_thread(void *arg)
{
    (void)arg;
    while (!atomic_load(&go))
        sleep_ns(NS_PER_MS);
    return NULL;
}

static void *forking_thread(void *arg)
{
    (void)arg;
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork from a thread");
    if (pid == 0) {
        check_child_init(5);
        child_own_timers(1);
        child_thread_id();
        _exit(0);
    }
    CHECK_CHILD_OK(wait_child(pid));
    return NULL;
}

int main(void)
{
    check_init("fork", 20);
    phase("parent timers", 5);
    set_handler(SIGRTMIN, handler, SA_RESTART);
    tp = mk(SIGEV_SIGNAL, SIGRTMIN, 1, NULL);
    tt = mk(SIGEV_THREAD, 0, 2, parent_cb);
    tn = mk(SIGEV_NONE, 0, 3, NULL);
    set_ns(tp, 2 * NS_PER_MS, 2 * NS_PER_MS);
    set_ns(tt, 2 * NS_PER_MS, 5 * NS_PER_MS);
    set_ns(tn, 10 * NS_PER_S, 0);
    wait_count(&sig_count, 3, "parent's signal timer");
    wait_count(&thr_count, 2, "parent's SIGEV_THREAD timer");

    phase("child 1", 8);
    fflush(stdout);
    int c0 = atomic_load(&sig_count), t0 = atomic_load(&thr_count);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0)
        child_main();
    sleep_ns(20 * NS_PER_MS); /* the parent keeps going while the child runs */
    int c_during = atomic_load(&sig_count);
    CHECK_CHILD_OK(wait_child(pid));
    CHECK(c_during > c0, "parent's timer stopped while the child ran (%d -> %d)", c0,
          c_during);
    int c1 = atomic_load(&sig_count), t1 = atomic_load(&thr_count);
    CHECK(t1 > t0, "parent's SIGEV_THREAD timer stopped while the child ran");
    wait_count(&sig_count, c1 + 3, "parent's signal timer after the child exited");
    wait_count(&thr_count, t1 + 2, "parent's SIGEV_THREAD timer after the child exited");
    struct itimerspec g;
    CHECK_OK(timer_gettime(tp, &g));
    CHECK(ts_ns(&g.it_interval) == 2 * NS_PER_MS, "parent's timer changed: interval %lld",
          (long long)ts_ns(&g.it_interval));
    CHECK_OK(timer_gettime(tn, &g));
    CHECK(ts_ns(&g.it_value) > 5 * NS_PER_S, "parent's SIGEV_NONE timer changed: %lld",
          (long long)ts_ns(&g.it_value));

    /* glibc 2.36 hazard (not a kernel property): its SIGEV_THREAD helper
     * thread holds __timer_active_sigev_thread_lock while dispatching an
     * expiration and __timer_fork_subprocess() does not reset that lock, so
     * a child forked at that instant deadlocks in timer_create(SIGEV_THREAD).
     * Children that create SIGEV_THREAD timers are therefore forked only
     * after the parent's SIGEV_THREAD timer is deleted (timer_delete takes
     * the same lock, and since Linux 6.13 no stale signal follows). */
    CHECK_OK(timer_delete(tt));
    sleep_ns(10 * NS_PER_MS);

    /* Many threads in the parent, then fork (from main and from a thread). */
    phase("child after many threads", 10);
    enum { NT = 16 };
    pthread_t th[NT], ft;
    for (int i = 0; i < NT; i++)
        CHECK_PT(pthread_create(&th[i], NULL, idle_thread, NULL));
    fflush(stdout);
    pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        check_child_init(5);
        child_own_timers(1);
        child_thread_id();
        _exit(0);
    }
    CHECK_CHILD_OK(wait_child(pid));
    CHECK_PT(pthread_create(&ft, NULL, forking_thread, NULL));
    CHECK_PT(pthread_join(ft, NULL));
    atomic_store(&go, 1);
    for (int i = 0; i < NT; i++)
        CHECK_PT(pthread_join(th[i], NULL));
    c1 = atomic_load(&sig_count);
    wait_count(&sig_count, c1 + 2, "parent's signal timer at the end");

    CHECK_OK(timer_delete(tp));
    CHECK_OK(timer_delete(tn));
    check_ok();
    return 0;
}
