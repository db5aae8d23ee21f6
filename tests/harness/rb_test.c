/*
 * rb_test.c - the Check suites' shared harness (see rb_test.h): TCases and
 * the suite run with its checks for leftovers, instance names and keys,
 * another user.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <glob.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <time.h>

#include "launch.h"
#include "rb_test.h"

pid_t rb_test_main_pid;
static unsigned rb_test_counter;

const char *rb_test_instance(char *buf, size_t cap)
{
    snprintf(buf, cap, "chk%d-%d-%u", (int)rb_test_main_pid, (int)getpid(), rb_test_counter++);
    return buf;
}

size_t rb_test_key(char *buf, size_t cap, const char *tag, unsigned long i)
{
    static const char *const hosts[] = { "example.org", "cdn.example.com",
                                         "static.shop.example.net", "a.example" };
    int n = snprintf(buf, cap, "https://%s/%s/%lu/item-%lx?page=%lu", hosts[i % 4], tag, i,
                     i * 2654435761UL, i % 97);
    /* What is in buf: a key cut short by cap is that much of it. */
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

int rb_test_dump_fn(const void *data, size_t len, void *arg)
{
    rb_test_dump_t *d = arg;

    d->data = aligned_alloc(64, rbi_round_up(len, 64));
    memcpy(d->data, data, len);
    d->len = len;
    return 0;
}

uint64_t rb_test_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void rb_test_asan_allow_preload(void)
{
    const char *cur = getenv("ASAN_OPTIONS");
    char buf[1024];

    if (cur != NULL && strstr(cur, "verify_asan_link_order=0") != NULL)
        return;
    snprintf(buf, sizeof(buf), "%s%sverify_asan_link_order=0", cur != NULL ? cur : "",
             cur != NULL && *cur != '\0' ? ":" : "");
    setenv("ASAN_OPTIONS", buf, 1);
}

int rb_test_become_other(void)
{
    return setgroups(0, NULL) == 0 && setgid(RB_TEST_OTHER_UID) == 0 &&
                   setuid(RB_TEST_OTHER_UID) == 0
               ? 0
               : -1;
}

void rb_test_as_other(int (*fn)(void *), void *arg)
{
    int status;
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(rb_test_become_other() != 0 ? 100 : fn(arg));
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "as uid %d: status %d (exit 100: could not become it)", RB_TEST_OTHER_UID,
                  status);
}

static int squat(void *inst)
{
    rb_segment_opts_t o = { .mode = 0644 };
    rb_segment_t *e;

    return rb_segment_create(inst, &o, &e) == RB_OK ? 0 : 11;
}

void rb_test_squat_segment(const char *inst)
{
    rb_test_as_other(squat, (void *)inst);
}

double rb_test_load_factor(void)
{
    static double f;
    double load = 0;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    FILE *in;

    if (f > 0)
        return f;
    if ((in = fopen("/proc/loadavg", "r")) != NULL) {
        if (fscanf(in, "%lf", &load) != 1)
            load = 0;
        fclose(in);
    }
    f = 1.5 * load / (double)(cpus > 0 ? cpus : 1);
    f = f < 2 ? 2 : f > 10 ? 10 : f;
    return f;
}

TCase *rb_tcase(const char *name, int timeout, SFun setup, SFun teardown, ...)
{
    TCase *tc = tcase_create(name);
    const TTest *t;
    va_list ap;

    /* Check's own default is 4 s; Check multiplies by CK_TIMEOUT_MULTIPLIER. */
    tcase_set_timeout(tc, (timeout > 0 ? timeout : 4) * rb_test_load_factor());
    if (setup != NULL || teardown != NULL)
        tcase_add_checked_fixture(tc, setup, teardown);
    va_start(ap, teardown);
    while ((t = va_arg(ap, const TTest *)) != NULL)
        tcase_add_test(tc, t);
    va_end(ap);
    return tc;
}

/* Removes and counts the suite's leftover shm objects. */
static int sweep_shm(void)
{
    char prefix[64];
    struct dirent *e;
    int left = 0;
    DIR *d = opendir("/dev/shm");

    if (d == NULL)
        return 0;
    snprintf(prefix, sizeof(prefix), "ringbloom.chk%d-", (int)rb_test_main_pid);
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            char path[512];
            snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
            fprintf(stderr, "leaked shm object: %s\n", path);
            unlink(path);
            left++;
        }
    }
    closedir(d);
    return left;
}

/* Removes the temp dirs of daemons whose test died before its teardown. */
static void sweep_tmp(void)
{
    char pattern[64];
    glob_t g;

    snprintf(pattern, sizeof(pattern), "/tmp/rbtest.%d.*", (int)rb_test_main_pid);
    if (glob(pattern, 0, NULL, &g) != 0)
        return;
    for (size_t i = 0; i < g.gl_pathc; i++)
        if (rbl_rmtree(g.gl_pathv[i]) != 0)
            fprintf(stderr, "could not remove %s\n", g.gl_pathv[i]);
    globfree(&g);
}

int rb_test_main(const char *name, ...)
{
    Suite *s = suite_create(name);
    SRunner *sr;
    TCase *tc;
    va_list ap;
    int failed, leaked;

    rb_test_main_pid = getpid();
    va_start(ap, name);
    while ((tc = va_arg(ap, TCase *)) != NULL)
        suite_add_tcase(s, tc);
    va_end(ap);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    leaked = sweep_shm();
    sweep_tmp();
    if (leaked)
        fprintf(stderr, "FAIL: %d shm object(s) left behind\n", leaked);
    return (failed == 0 && leaked == 0) ? 0 : 1;
}

const char *rb_test_program(const char *env, const char *name)
{
    static char found[512];
    const char *e = getenv(env), *path = getenv("PATH");

    if (e && *e)
        return access(e, X_OK) == 0 ? e : NULL;
    for (const char *p = path ? path : "/usr/bin:/usr/sbin"; *p;) {
        size_t l = strcspn(p, ":");
        snprintf(found, sizeof(found), "%.*s/%s", (int)l, p, name);
        if (l > 0 && access(found, X_OK) == 0)
            return found;
        p += l + (p[l] == ':');
    }
    return NULL;
}

int rb_test_free_ports(int *ports, int n)
{
    int fds[16], rc = 0;

    if (n < 0 || n > 16)
        return -1;
    for (int i = 0; i < n; i++) {
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t al = sizeof(a);
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&a, sizeof(a)) != 0 ||
            getsockname(fds[i], (struct sockaddr *)&a, &al) != 0)
            rc = -1;
        else
            ports[i] = ntohs(a.sin_port);
    }
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return rc;
}

void rb_test_kill_procs(pid_t *pids, int n)
{
    for (int i = 0; i < n; i++)
        if (pids[i] > 0)
            kill(pids[i], SIGKILL);
    for (int i = 0; i < n; i++) {
        if (pids[i] > 0)
            waitpid(pids[i], NULL, 0);
        pids[i] = 0;
    }
}

void rb_test_remove_tmp_dir(char *dir)
{
    char cmd[300];

    if (dir[0] && strncmp(dir, "/tmp/rbtest.", 12) == 0) {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            printf("could not remove %s\n", dir);
    }
    dir[0] = '\0';
}
