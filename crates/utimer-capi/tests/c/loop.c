/* An event loop that owns its thread: register as a worker, run expired
 * timers, sleep on poll() for what idle_enter says, get woken early. */
#define _GNU_SOURCE
#include "check.h"
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <utimer.h>

static atomic_int fired;
static int efd;
static struct utimer_worker_t *worker;

static void wake(void *arg) {
    uint64_t one = 1;
    CHECK(write(*(int *)arg, &one, sizeof one) == sizeof one);
}

static void on_fire(struct utimer_timer_list *t, void *arg) {
    (void)t;
    (void)arg;
    atomic_fetch_add(&fired, 1);
}

static void *other_thread(void *arg) {
    (void)arg;
    CHECK_ERR(utimer_worker_run(worker), EPERM);
    CHECK_ERRNO(utimer_worker_idle_enter(worker), -2, EPERM);
    CHECK_ERR(utimer_worker_unregister(worker), EPERM);
    return NULL;
}

static void *late_arm(void *arg) {
    sleep_ns(20 * NS_PER_MS);
    /* Arms on the idle worker's base: its wake function must run. */
    CHECK(utimer_wheel_mod(arg, 0) == 0);
    return NULL;
}

int main(void) {
    check_init("loop", 60);
    prctl(PR_SET_TIMERSLACK, 1);
    utimer_t *threaded = utimer_open(1);
    CHECK(threaded != NULL);
    CHECK_ERRNO(utimer_worker_register(threaded, 0, wake, &efd), 0, EINVAL); /* its workers are its threads */
    utimer_close(threaded);
    utimer_t *u = utimer_open_unthreaded(1);
    CHECK(u != NULL);
    efd = eventfd(0, EFD_NONBLOCK);
    CHECK(efd >= 0);
    CHECK_ERRNO(utimer_worker_register(u, 5, wake, &efd), 0, EINVAL);
    CHECK_ERRNO(utimer_worker_register(u, 0, NULL, &efd), 0, EINVAL);
    worker = utimer_worker_register(u, 0, wake, &efd);
    CHECK(worker != NULL);

    pthread_t th;
    CHECK(pthread_create(&th, NULL, other_thread, NULL) == 0);
    CHECK(pthread_join(th, NULL) == 0);

    /* Nothing armed: sleep until woken. */
    CHECK(utimer_worker_idle_enter(worker) == -1);
    CHECK(utimer_worker_idle_exit(worker) == 0);

    struct utimer_timer_list *t = utimer_wheel_setup(u, on_fire, NULL, 0);
    CHECK(t != NULL);
    long long armed = mono_ns();
    CHECK(utimer_wheel_mod(t, utimer_jiffies(u) + utimer_msecs_to_jiffies(u, 10)) == 0);
    int loops = 0;
    while (atomic_load(&fired) == 0 && loops++ < 1000) {
        utimer_worker_run(worker);
        if (atomic_load(&fired)) break;
        int64_t ns = utimer_worker_idle_enter(worker);
        CHECK(ns >= -1);
        if (ns != 0) {
            struct pollfd p = {efd, POLLIN, 0};
            poll(&p, 1, ns < 0 ? 2000 : (int)((ns + 999999) / 1000000));
        }
        utimer_worker_idle_exit(worker);
    }
    CHECK(atomic_load(&fired) == 1);
    CHECK(mono_ns() - armed >= 9000000LL);

    /* Idle with nothing due; another thread arms a due timer: woken. */
    uint64_t drain;
    (void)!read(efd, &drain, sizeof drain);
    CHECK(utimer_worker_idle_enter(worker) == -1);
    CHECK(pthread_create(&th, NULL, late_arm, t) == 0);
    struct pollfd p = {efd, POLLIN, 0};
    CHECK(poll(&p, 1, 5000) == 1); /* the wake function ran */
    CHECK(pthread_join(th, NULL) == 0);
    CHECK(utimer_worker_idle_exit(worker) == 0);
    for (int i = 0; i < 100 && atomic_load(&fired) < 2; i++) {
        utimer_worker_run(worker);
        sleep_ns(2 * NS_PER_MS);
    }
    CHECK(atomic_load(&fired) == 2);

    utimer_wheel_free(t);
    CHECK(utimer_worker_unregister(worker) == 0);
    CHECK_ERR(utimer_worker_unregister(NULL), EINVAL);
    utimer_close(u);
    close(efd);
    check_ok();
    return 0;
}
