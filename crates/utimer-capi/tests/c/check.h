/* A minimal test harness for the C API's tests: CHECK aborts with the
 * failing expression and errno; ERRNO checks a -1 return and its errno. */
#ifndef UTIMER_TEST_CHECK_H
#define UTIMER_TEST_CHECK_H
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: CHECK(%s) failed (errno %d: %s)\n",      \
                    __FILE__, __LINE__, #cond, errno, strerror(errno));      \
            abort();                                                         \
        }                                                                    \
    } while (0)

/* `call` returns `ret` (-1 or NULL-ish 0) and sets errno to `err`. */
#define ERRNO(call, ret, err)                                                \
    do {                                                                     \
        errno = 0;                                                           \
        long long got_ = (long long)(call);                                  \
        if (got_ != (long long)(ret) || errno != (err)) {                    \
            fprintf(stderr, "%s:%d: %s returned %lld errno %d, want %lld errno %d\n", \
                    __FILE__, __LINE__, #call, got_, errno, (long long)(ret), (err)); \
            abort();                                                         \
        }                                                                    \
    } while (0)

static inline long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}
#endif
