/*
 * rbd_log.h - ringbloomd's log (stderr or syslog), its rate limiter, and
 * the two clocks (rbd_log.c).
 */
#ifndef RBD_LOG_H
#define RBD_LOG_H

#include <stdint.h>

/* A rate limiter for one kind of message: rbd_log_every logs at most one
 * line per interval_ms and counts the rest into the next line it logs. */
typedef struct rbd_ratelog {
    uint64_t last_ms;          /* monotonic ms of the last line logged */
    uint64_t suppressed;       /* messages dropped since */
    int logged;
} rbd_ratelog_t;

void rbd_log_init(int foreground, int level);
void rbd_log_level(int level);
void rbd_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rbd_log_every(rbd_ratelog_t *r, uint64_t interval_ms, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
uint64_t rbd_now_ms(void);   /* unix milliseconds (for display) */
uint64_t rbd_mono_ms(void);  /* monotonic milliseconds (for intervals) */

#endif /* RBD_LOG_H */
