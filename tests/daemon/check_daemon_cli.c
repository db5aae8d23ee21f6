/*
 * check_daemon_cli.c - check_daemon's TCase of the CLI's changes as a
 * user meets them (issue 42): `load` into a filter that does not exist
 * (BF.RESERVE refused by max-command-bytes just before, as in the issue)
 * is refused, saying so, and makes nothing; with --error it makes the
 * filter sized from the file's keys (or --capacity), whose "already
 * present" count is then the few false positives of that size, not the
 * thousands of a 100-key default.
 */
#include "check_daemon.h"

static rbd_proc_t d;

/* A file of n distinct URL-like keys under d's directory; its path. */
static const char *keys_file(unsigned n)
{
    static char path[300];
    FILE *f;

    snprintf(path, sizeof(path), "%s/keys.txt", d.dir);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (unsigned i = 0; i < n; i++)
        fprintf(f, "https://example.org/page/%u\n", i);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

/* `load` into a missing filter is refused (exit 1), names the filter and
 * the two ways on, and neither makes a filter nor adds a key; --error
 * makes one of the file's size, --error with --capacity one of that
 * capacity; standard input needs --capacity. */
START_TEST(test_daemon_cli_load_refuses_missing_filter)
{
    char args[700], out[8192];
    const char *path;
    unsigned long long present = 0, keys = 0, added = 0;
    rb_conn_t *c;
    int status;

    rbd_start(&d, "max-command-bytes 1mb");
    path = keys_file(100000);
    c = rbd_connect(&d);
    /* The way in: the reserve refused, the load then run. */
    snprintf(args, sizeof(args), "-s %s reserve urls 0.0001 100000000", d.sock);
    status = rbd_run_cli(out, sizeof(out), args);
    ck_assert_msg(status == 4 && strstr(out, "max-command-bytes") != NULL, "status %d: %s",
                  status, out);
    snprintf(args, sizeof(args), "-s %s load urls %s", d.sock, path);
    status = rbd_run_cli(out, sizeof(out), args);
    ck_assert_msg(status == 1 && strstr(out, "no filter 'urls': nothing was loaded") != NULL &&
                  strstr(out, "--error RATE") != NULL && strstr(out, "reserve urls") != NULL,
                  "status %d: %s", status, out);
    rbd_expect(c, "0", "EXISTS", "urls");
    rbd_expect(c, "0", "DBSIZE");

    /* --error: made from the file's keys, 100,000 at 0.1%. */
    snprintf(args, sizeof(args), "-s %s load urls %s --error 0.001", d.sock, path);
    status = rbd_run_cli(out, sizeof(out), args);
    ck_assert_msg(status == 0 && sscanf(out, "loaded %llu keys: %llu new, %llu already present",
                                        &keys, &added, &present) == 3,
                  "status %d: %s", status, out);
    printf("load --error 0.001 of 100000 distinct keys: %llu new, %llu already present "
           "(false positives; at most ~100 expected)\n", added, present);
    ck_assert_uint_eq(keys, 100000);
    ck_assert_uint_lt(present, 300);
    rbd_expect(c, "100000", "BF.INFO", "urls", "CAPACITY");
    /* Loaded again: every key present, the filter as it was. */
    status = rbd_run_cli(out, sizeof(out), args);
    ck_assert_msg(status == 0 && strstr(out, "loaded 100000 keys: 0 new, 100000 already "
                                        "present") != NULL, "status %d: %s", status, out);

    /* Standard input cannot be counted first: --capacity or a refusal. */
    snprintf(args, sizeof(args), "-s %s load small - --error 0.01 < %s", d.sock, path);
    status = rbd_run_cli(out, sizeof(out), args);
    ck_assert_msg(status == 2 && strstr(out, "give --capacity N") != NULL, "status %d: %s",
                  status, out);
    rbd_expect(c, "0", "EXISTS", "small");
    snprintf(args, sizeof(args), "-s %s load small - --error 0.01 --capacity 200000 < %s",
             d.sock, path);
    status = rbd_run_cli(out, sizeof(out), args);
    ck_assert_msg(status == 0 && strstr(out, "loaded 100000 keys") != NULL, "status %d: %s",
                  status, out);
    rbd_expect(c, "200000", "BF.INFO", "small", "CAPACITY");
    snprintf(args, sizeof(args), "-s %s load other %s --capacity 10", d.sock, path);
    status = rbd_run_cli(out, sizeof(out), args);
    ck_assert_msg(status == 2 && strstr(out, "only with --error RATE") != NULL,
                  "status %d: %s", status, out);
    rbd_expect(c, "0", "EXISTS", "other");
    rb_conn_close(c);
}
END_TEST

TCase *daemon_cli_writes_tcase(void)
{
    return RB_TCASE("cli writes", 120, NULL, rbd_teardown,
                    test_daemon_cli_load_refuses_missing_filter);
}
