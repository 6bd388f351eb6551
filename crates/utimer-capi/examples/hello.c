/* utimer from C: a POSIX timer without system calls, and a wheel timeout.
 *   cc hello.c $(pkg-config --cflags --libs utimer) -o hello && ./hello */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <utimer.h>

static atomic_int ticks, timeouts;

static void on_tick(union sigval v) { /* SIGEV_THREAD: a thread of its own, as glibc */
    atomic_fetch_add(&ticks, 1);
    (void)v;
}

static void on_timeout(struct utimer_timer_list *t, void *arg) {
    atomic_fetch_add(&timeouts, 1);
    (void)t;
    (void)arg;
}

int main(void) {
    utimer_t *u = utimer_open(0); /* one worker per CPU */
    if (!u) return perror("utimer_open"), 1;

    /* timer_create + timer_settime, drop-in: every 10 ms. */
    struct sigevent ev = {.sigev_notify = SIGEV_THREAD};
    ev.sigev_notify_function = on_tick;
    int id;
    struct itimerspec every10ms = {{0, 10000000}, {0, 10000000}};
    if (utimer_timer_create(u, CLOCK_MONOTONIC, &ev, &id) ||
        utimer_timer_settime(u, id, 0, &every10ms, NULL))
        return perror("utimer_timer_*"), 1;

    /* A kernel-style timeout: armed, pushed back, then let fire. */
    struct utimer_timer_list *t = utimer_wheel_setup(u, on_timeout, NULL, 0);
    utimer_wheel_mod(t, utimer_jiffies(u) + utimer_msecs_to_jiffies(u, 20));
    utimer_wheel_mod(t, utimer_jiffies(u) + utimer_msecs_to_jiffies(u, 50)); /* returns 1: was pending */

    usleep(105000);
    utimer_timer_delete(u, id);     /* waits for a running callback */
    utimer_wheel_free(t);
    printf("ticks: %d (about 10), timeouts: %d\n", atomic_load(&ticks), atomic_load(&timeouts));
    utimer_close(u);
    return atomic_load(&ticks) >= 1 && atomic_load(&timeouts) == 1 ? 0 : 1;
}
