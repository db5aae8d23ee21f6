/*
 * faults.c - what the files of check_faults share (see faults.h): the
 * test's daemon and mounts and their teardown, the daemon's log, raw
 * clients whose replies the daemon holds back, checks on the state
 * directory and on the recovered state.
 */
#include "faults.h"

rbd_proc_t d;
char mnt[128];
int shm_mounted;

void faults_teardown(void)
{
    rbd_remove_all(&d);
    if (mnt[0] != '\0') {
        umount2(mnt, MNT_DETACH);
        rmdir(mnt);
        mnt[0] = '\0';
    }
    if (shm_mounted) {
        umount2("/dev/shm", MNT_DETACH);
        shm_mounted = 0;
    }
}

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- the daemon's log ------------------------------------------------------ */

/* Waits (<= ms) until the log has at least count lines with needle. */
int wait_log(const char *needle, int count, int ms)
{
    for (int waited = 0; waited <= ms; waited += 10) {
        if (rbd_log_count(&d, needle) >= count)
            return 1;
        usleep(10000);
    }
    return 0;
}

/* Asserts that a line of the daemon's log contains every one of the
 * NULL-terminated words, and returns it (static buffer). */
const char *log_line_with(const char *first, ...)
{
    static char line[2048];
    FILE *f = fopen(d.log, "r");

    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        va_list ap;
        const char *w;
        int all = 1;
        va_start(ap, first);
        for (w = first; w != NULL && all; w = va_arg(ap, const char *))
            all = strstr(line, w) != NULL;
        va_end(ap);
        if (all) {
            fclose(f);
            return line;
        }
    }
    fclose(f);
    ck_abort_msg("no line of %s contains all of [%s, ...]", d.log, first);
    return NULL;
}

/* ---- raw clients (replies the daemon holds back) ---------------------------- */

/* Sends one command (NULL-terminated words) as a RESP multibulk. */
void raw_send(int fd, ...)
{
    char buf[65536];
    const char *w[64];
    size_t n = 0, len = 0;
    va_list ap;

    va_start(ap, fd);
    while (n < 64 && (w[n] = va_arg(ap, const char *)) != NULL)
        n++;
    va_end(ap);
    len += (size_t)snprintf(buf, sizeof(buf), "*%zu\r\n", n);
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "$%zu\r\n%s\r\n", strlen(w[i]),
                                w[i]);
    ck_assert_uint_lt(len, sizeof(buf));
    ck_assert_int_eq(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* Reads until `lines` CRLF-terminated lines arrived or ms passed; returns
 * the bytes read (0: nothing came). */
size_t raw_wait(int fd, char *buf, size_t cap, int lines, int ms)
{
    size_t len = 0;
    double end = now_s() + ms / 1000.0;

    buf[0] = '\0';
    while (len + 1 < cap) {
        struct pollfd p = { fd, POLLIN, 0 };
        int left = (int)((end - now_s()) * 1000), seen = 0;
        ssize_t n;
        for (size_t i = 0; i + 1 < len; i++)
            seen += buf[i] == '\r' && buf[i + 1] == '\n';
        if (seen >= lines || left <= 0 || poll(&p, 1, left) <= 0)
            break;
        n = read(fd, buf + len, cap - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
    }
    return len;
}

/* Watches the daemon for 1.5 s (draining fd meanwhile if fd >= 0, counting
 * into *drained) and asserts it used under a tenth of a CPU: no busy loop. */
void assert_no_spin(const char *what, int fd, size_t *drained)
{
    double cpu0 = (rbd_cpu_ms(d.pid) / 1000.0), t0 = now_s(), cpu, wall;

    while (now_s() - t0 < 1.5) {
        char buf[65536];
        ssize_t n = fd >= 0 ? recv(fd, buf, sizeof(buf), MSG_DONTWAIT) : -1;
        if (n > 0)
            *drained += (size_t)n;
        else
            usleep(10000);
    }
    cpu = (rbd_cpu_ms(d.pid) / 1000.0) - cpu0;
    wall = now_s() - t0;
    printf("%s: the daemon used %.2f s of CPU in %.2f s\n", what, cpu, wall);
    ck_assert_msg(cpu < 0.1 * wall, "%s: the daemon spins (%.2f s of CPU in %.2f s)", what, cpu,
                  wall);
}

/* Asserts that the state directory holds no temp file. */
void assert_no_temp_files(const char *state)
{
    DIR *dir = opendir(state);
    struct dirent *e;

    ck_assert_ptr_nonnull(dir);
    while ((e = readdir(dir)) != NULL)
        ck_assert_msg(strstr(e->d_name, ".tmp") == NULL, "temp file %s/%s left behind", state,
                      e->d_name);
    closedir(dir);
}

/* ---- checks on the recovered state -------------------------------------------- */

/* Kills the daemon, removes its segment, restarts it (so the state comes
 * from the snapshot and the log alone) and asserts that every key of
 * filter is present through the reader API and BF.EXISTS. */
void assert_recovered(const char *filter, const char *const *keys, size_t n)
{
    rb_segment_t *seg;
    rb_bloom_t *bf;
    rb_conn_t *c;

    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    rbd_launch(&d, NULL);
    ck_assert_int_eq(rb_segment_attach(d.inst, 0, &seg), RB_OK);
    ck_assert_int_eq(rb_bloom_open(seg, filter, strlen(filter), &bf), RB_OK);
    c = rbd_connect(&d);
    for (size_t i = 0; i < n; i++) {
        int rc;
        ck_assert_msg(rb_bloom_contains(bf, keys[i], strlen(keys[i])) == 1,
                      "acknowledged key %s is missing from the reader after restart", keys[i]);
        ck_assert_str_eq(rbd_cmd(c, &rc, "BF.EXISTS", filter, keys[i], (const char *)NULL), "1");
    }
    rb_conn_close(c);
    rb_bloom_close(bf);
    rb_segment_close(seg);
}

