/*
 * An epoll echo server with a per-connection idle timeout, on utimer.
 *
 * The loop's thread is utimer's only worker (utimer_open_unthreaded): each
 * connection owns a wheel timer re-armed on every read (mostly cancelled
 * before it fires: the wheel's case), the loop sleeps in epoll_wait for as
 * long as utimer_worker_idle_enter says, and timer callbacks run inside
 * utimer_worker_run on this very thread, so they may close connections
 * without locks.
 *
 *   cc echo_server.c $(pkg-config --cflags --libs utimer) -o echo_server
 *   ./echo_server [PORT (0: any)] [IDLE_MS] [--once]
 *
 * It prints "listening on PORT"; --once exits after the first connection
 * has been closed (for tests).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <utimer.h>

struct conn {
    int fd;
    struct utimer_timer_list *idle;
    int closed;
};

static utimer_t *u;
static int ep, wake_fd;
static unsigned idle_ms = 5000;
static int closed_count;

static void die(const char *what) {
    perror(what);
    exit(1);
}

static void wake_loop(void *arg) {
    uint64_t one = 1;
    (void)arg;
    if (write(wake_fd, &one, sizeof one) < 0 && errno != EAGAIN) die("write eventfd");
}

/* Runs on the loop's thread, inside utimer_worker_run. */
static void on_idle(struct utimer_timer_list *t, void *arg) {
    struct conn *c = arg;
    (void)t;
    printf("closing idle connection %d\n", c->fd);
    fflush(stdout);
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->closed = 1;
    closed_count++;
}

static void rearm(struct conn *c) {
    if (utimer_wheel_mod(c->idle, utimer_jiffies(u) + utimer_msecs_to_jiffies(u, idle_ms)) < 0)
        die("utimer_wheel_mod");
}

static void drop_conn(struct conn *c) {
    /* From the loop's thread, never from the callback: free waits for
     * nothing here (callbacks only run inside utimer_worker_run). */
    utimer_wheel_free(c->idle);
    if (!c->closed) {
        epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        closed_count++;
    }
    free(c);
}

int main(int argc, char **argv) {
    int port = argc > 1 ? atoi(argv[1]) : 7007;
    if (argc > 2) idle_ms = (unsigned)atoi(argv[2]);
    int once = argc > 3 && strcmp(argv[3], "--once") == 0;

    prctl(PR_SET_TIMERSLACK, 1); /* epoll_wait timeouts as precise as asked */
    u = utimer_open_unthreaded(1);
    if (!u) die("utimer_open_unthreaded");
    ep = epoll_create1(0);
    wake_fd = eventfd(0, EFD_NONBLOCK);
    if (ep < 0 || wake_fd < 0) die("epoll/eventfd");
    utimer_worker_t *w = utimer_worker_register(u, 0, wake_loop, NULL);
    if (!w) die("utimer_worker_register");

    int ls = socket(AF_INET, SOCK_STREAM, 0);
    int yes = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(ls, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(ls, 64) < 0) die("bind/listen");
    socklen_t len = sizeof addr;
    getsockname(ls, (struct sockaddr *)&addr, &len);
    printf("listening on %d\n", ntohs(addr.sin_port));
    fflush(stdout);

    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
    struct epoll_event wev = {.events = EPOLLIN, .data.ptr = &wake_fd};
    epoll_ctl(ep, EPOLL_CTL_ADD, wake_fd, &wev);

    struct conn *conns[1024] = {0};
    for (;;) {
        utimer_worker_run(w);
        for (int i = 0; i < 1024; i++)
            if (conns[i] && conns[i]->closed) {
                drop_conn(conns[i]);
                conns[i] = NULL;
            }
        if (once && closed_count > 0) break;

        int64_t ns = utimer_worker_idle_enter(w);
        int timeout = ns < 0 ? -1 : (int)((ns + 999999) / 1000000);
        struct epoll_event evs[64];
        int n = ns == 0 ? 0 : epoll_wait(ep, evs, 64, timeout);
        utimer_worker_idle_exit(w);
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == NULL) { /* listener */
                int fd = accept(ls, NULL, NULL);
                if (fd < 0) continue;
                struct conn *c = calloc(1, sizeof *c);
                c->fd = fd;
                c->idle = utimer_wheel_setup(u, on_idle, c, UTIMER_PINNED);
                if (!c->idle) die("utimer_wheel_setup");
                int slot = 0;
                while (slot < 1024 && conns[slot]) slot++;
                if (slot == 1024) { drop_conn(c); continue; }
                conns[slot] = c;
                struct epoll_event cev = {.events = EPOLLIN, .data.ptr = c};
                epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
                rearm(c);
            } else if (evs[i].data.ptr == &wake_fd) {
                uint64_t v;
                (void)!read(wake_fd, &v, sizeof v);
            } else {
                struct conn *c = evs[i].data.ptr;
                char buf[4096];
                ssize_t r = read(c->fd, buf, sizeof buf);
                if (r <= 0) {
                    c->closed = 1;
                    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                    close(c->fd);
                    closed_count++;
                    utimer_wheel_delete(c->idle);
                    continue;
                }
                (void)!write(c->fd, buf, (size_t)r);
                rearm(c); /* activity: push the idle timeout back */
            }
        }
    }
    for (int i = 0; i < 1024; i++)
        if (conns[i]) drop_conn(conns[i]);
    utimer_worker_unregister(w);
    utimer_close(u);
    close(ls);
    close(ep);
    close(wake_fd);
    return 0;
}
