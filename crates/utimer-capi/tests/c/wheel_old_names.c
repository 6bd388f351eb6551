/* The wheel family's names before `utimer_wheel_`, kept for one release:
   each still works as the new one does. The header marks them deprecated
   (tests/c.rs checks that a call warns), so the warning is silenced here. */
#define _GNU_SOURCE
#include "check.h"
#include <stdatomic.h>
#include <utimer.h>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static atomic_int fired;

static void on_fire(struct utimer_timer_list *t, void *arg) {
    (void)t;
    (void)arg;
    atomic_fetch_add(&fired, 1);
}

int main(void) {
    check_init("wheel_old_names", 30);
    utimer_t *u = utimer_open(1);
    CHECK(u != NULL);
    struct utimer_timer_list *t = utimer_timer_setup(u, on_fire, NULL, 0);
    CHECK(t != NULL);
    CHECK(utimer_timer_pending(t) == 0);
    CHECK(utimer_mod_timer_pending(t, utimer_jiffies(u) + 5) == 0); /* not pending: no-op */
    CHECK(utimer_mod_timer(t, utimer_jiffies(u) + 100000) == 0);
    CHECK(utimer_timer_reduce(t, utimer_jiffies(u) + 200000) == 1); /* later: unchanged */
    CHECK(utimer_timer_pending(t) == 1);
    CHECK(utimer_mod_timer_pending(t, utimer_jiffies(u) + 100000) == 1);
    CHECK(utimer_del_timer(t) == 1);
    CHECK(utimer_del_timer(t) == 0);
    CHECK(utimer_mod_timer(t, utimer_jiffies(u) + 2) == 0);
    for (int i = 0; i < 600 && atomic_load(&fired) < 1; i++) sleep_ns(5 * NS_PER_MS);
    CHECK(atomic_load(&fired) == 1);
    CHECK(utimer_mod_timer(t, utimer_jiffies(u) + 100000) == 0);
    CHECK(utimer_del_timer_sync(t) == 1);
    CHECK(utimer_timer_shutdown_sync(t) == 0);
    CHECK(utimer_mod_timer(t, utimer_jiffies(u) + 1) == 0); /* refused: shut down */
    CHECK(utimer_timer_pending(t) == 0);
    CHECK_ERR(utimer_del_timer(NULL), EINVAL);
    utimer_timer_free(t);
    utimer_close(u);
    check_ok();
    return 0;
}
