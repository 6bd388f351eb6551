/* Kernel-style wheel timers through the C API. */
#define _GNU_SOURCE
#include "check.h"
#include <stdatomic.h>
#include <stdint.h>
#include <utimer.h>

struct box {
    atomic_int fired;
    atomic_llong at;
    int sync_ret, sync_errno; /* del_timer_sync from its own callback */
    int free_self;
};

static void on_fire(struct utimer_timer_list *t, void *arg) {
    struct box *b = arg;
    atomic_store(&b->at, mono_ns());
    if (b->free_self) {
        utimer_wheel_free(t); /* legal from its own callback */
        atomic_fetch_add(&b->fired, 1);
        return;
    }
    errno = 0;
    b->sync_ret = utimer_wheel_delete_sync(t);
    b->sync_errno = errno;
    atomic_fetch_add(&b->fired, 1);
}

static void wait_fired(struct box *b, int n) {
    for (int i = 0; i < 600 && atomic_load(&b->fired) < n; i++) sleep_ns(5 * NS_PER_MS);
    CHECK(atomic_load(&b->fired) == n);
}

int main(void) {
    check_init("wheel", 60);
    utimer_t *u = utimer_open(2);
    CHECK(u != NULL);
    struct box b = {0};

    CHECK_ERRNO(utimer_wheel_setup(NULL, on_fire, &b, 0), 0, EINVAL);
    CHECK_ERRNO(utimer_wheel_setup(u, NULL, &b, 0), 0, EINVAL);
    CHECK_ERRNO(utimer_wheel_setup(u, on_fire, &b, 8), 0, EINVAL);
    CHECK_ERR(utimer_wheel_mod(NULL, 1), EINVAL);
    CHECK_ERR(utimer_wheel_pending(NULL), EINVAL);
    CHECK_ERR(utimer_wheel_delete_sync(NULL), EINVAL);
    utimer_wheel_free(NULL);

    struct utimer_timer_list *t = utimer_wheel_setup(u, on_fire, &b, UTIMER_PINNED);
    CHECK(t != NULL);
    CHECK(utimer_wheel_pending(t) == 0);
    CHECK(utimer_wheel_mod_pending(t, utimer_jiffies(u) + 5) == 0); /* not pending: no-op */
    CHECK(utimer_wheel_pending(t) == 0);

    uint64_t ticks = utimer_msecs_to_jiffies(u, 20);
    CHECK(ticks >= 20);
    uint64_t start = utimer_jiffies(u);
    long long armed = mono_ns();
    CHECK(utimer_wheel_mod(t, start + 100000) == 0);
    CHECK(utimer_wheel_mod(t, start + ticks) == 1); /* was pending */
    CHECK(utimer_wheel_reduce(t, start + 100000) == 1); /* later: unchanged */
    CHECK(utimer_wheel_pending(t) == 1);
    wait_fired(&b, 1);
    CHECK(atomic_load(&b.at) - armed >= 19000000LL); /* never early (1 tick of clock skew) */
    CHECK(b.sync_ret == -1 && b.sync_errno == EDEADLK); /* own callback */
    CHECK(utimer_wheel_pending(t) == 0);
    CHECK(utimer_wheel_delete(t) == 0);

    /* Cancelled before it fires: nothing runs. */
    CHECK(utimer_wheel_mod(t, utimer_jiffies(u) + 10) == 0);
    CHECK(utimer_wheel_delete_sync(t) == 1);
    sleep_ns(40 * NS_PER_MS);
    CHECK(atomic_load(&b.fired) == 1);

    /* Shut down: later arms are ignored. */
    CHECK(utimer_wheel_shutdown_sync(t) == 0);
    utimer_wheel_mod(t, utimer_jiffies(u) + 1);
    CHECK(utimer_wheel_pending(t) == 0);
    utimer_wheel_free(t);

    /* A callback that frees its own timer. */
    struct box self = {0};
    self.free_self = 1;
    struct utimer_timer_list *s = utimer_wheel_setup(u, on_fire, &self, 0);
    CHECK(s != NULL);
    CHECK(utimer_wheel_mod(s, utimer_jiffies(u) + 2) == 0);
    wait_fired(&self, 1);

    /* Closing with a timer still allocated: it fails cleanly (ESHUTDOWN:
       nothing would ever fire it), then frees. */
    struct box late = {0};
    struct utimer_timer_list *l = utimer_wheel_setup(u, on_fire, &late, UTIMER_DEFERRABLE);
    CHECK(l != NULL);
    CHECK(utimer_wheel_mod(l, utimer_jiffies(u) + 100000) == 0);
    utimer_close(u);
    CHECK_ERR(utimer_wheel_mod(l, 5), ESHUTDOWN);
    CHECK_ERR(utimer_wheel_mod_pending(l, 5), ESHUTDOWN);
    CHECK_ERR(utimer_wheel_reduce(l, 5), ESHUTDOWN);
    CHECK_ERR(utimer_wheel_delete_sync(l), ESHUTDOWN);
    CHECK_ERR(utimer_wheel_shutdown_sync(l), ESHUTDOWN);
    CHECK(utimer_wheel_pending(l) == 0);
    CHECK(utimer_wheel_delete(l) == 0);
    utimer_wheel_free(l);
    CHECK(atomic_load(&late.fired) == 0);
    check_ok();
    return 0;
}
