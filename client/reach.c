/*
 * reach.c - reaching the instance the options name: its socket, the
 * daemon's segment (for reads) and a connection to the daemon (for
 * changes), each refused with a sentence and an exit code when it cannot
 * be trusted or reached.
 *
 * Trust: what the CLI reads or sends keys to must be the daemon's.  The
 * socket's directory is judged by rb_trusted_dir before anything is sent
 * (another user may have made /tmp/ringbloom-<uid>), and the segment is
 * attached only if the daemon's user owns it: that user is --owner, or
 * else the owner of the socket's directory (rb_daemon_uid), which works
 * whether or not the daemon is running.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"

int cli_find_socket(cli_t *cli)
{
    if (cli->sock_path != NULL)
        return EX_YES;
    if (cli->socket != NULL) {
        cli->sock_path = cli->socket;
        return EX_YES;
    }
    if (rb_default_paths(cli->instance, &cli->paths) != RB_OK) {
        fprintf(stderr, "ringbloom: bad instance name '%s'\n", cli->instance);
        return EX_USAGE;
    }
    cli->sock_path = cli->paths.socket;
    return EX_YES;
}

int cli_attach(cli_t *cli, rb_segment_t **seg)
{
    char why[1024];
    uid_t owner = cli->owner;
    int rc, ex;

    if (owner == (uid_t)-1) {
        if ((ex = cli_find_socket(cli)) != EX_YES)
            return ex;
        rc = rb_daemon_uid(NULL, cli->sock_path, (uid_t)-1, &owner, why, sizeof(why));
        if (rc == RB_ENOENT) {
            fprintf(stderr, "ringbloom: cannot attach instance '%s': no socket directory "
                    "(%s), so no daemon's user to trust; is ringbloomd running? (--owner USER "
                    "names it)\n", cli->instance, why);
            return EX_UNREACH;
        }
        if (rc != RB_OK) {
            fprintf(stderr, "ringbloom: cannot attach instance '%s': %s (--owner USER names "
                    "the daemon's user)\n", cli->instance, why);
            return EX_UNREACH;
        }
    }
    rc = rb_segment_attach_owned(cli->instance, 0, owner, seg);
    if (rc == RB_EGONE) {
        rc = rb_segment_attach_owned(cli->instance, RB_ATTACH_STALE_OK, owner, seg);
        if (rc == RB_OK)
            fprintf(stderr, "ringbloom: warning: the daemon of instance '%s' is not running; "
                    "answering from its last published state\n", cli->instance);
    }
    if (rc == RB_EOWNER) {
        fprintf(stderr, "ringbloom: cannot attach instance '%s': /dev/shm/ringbloom.%s is %s "
                "(the daemon's user is uid %u)\n", cli->instance, cli->instance,
                rb_strerror(rc), (unsigned)owner);
        return EX_UNREACH;
    }
    if (rc != RB_OK) {
        fprintf(stderr, "ringbloom: cannot attach instance '%s': %s\n", cli->instance,
                rb_strerror(rc));
        return EX_UNREACH;
    }
    return EX_YES;
}

int cli_connect(cli_t *cli, rb_conn_t **c)
{
    char why[1024];
    int rc, ex;

    if ((ex = cli_find_socket(cli)) != EX_YES)
        return ex;
    /* A missing directory is only a daemon that is not running: connect
     * says so, naming the socket. */
    rc = rb_daemon_uid(NULL, cli->sock_path, cli->owner, NULL, why, sizeof(why));
    if (rc != RB_OK && rc != RB_ENOENT) {
        fprintf(stderr, "ringbloom: not using the socket of instance '%s' (%s): %s\n",
                cli->instance, cli->sock_path, why);
        return EX_UNREACH;
    }
    rc = rb_conn_open(NULL, cli->sock_path, cli->timeout_s * 1000u, c);
    if (rc != RB_OK) {
        fprintf(stderr, "ringbloom: cannot connect to the daemon of instance '%s' at %s: %s (%s)\n",
                cli->instance, cli->sock_path, rb_strerror(rc), strerror(errno));
        return EX_UNREACH;
    }
    return EX_YES;
}

int cli_conn_fail(const cli_t *cli, rb_conn_t *c, const char *what, int rc, int changes)
{
    if (rc == RB_EREPLY || rc == RB_EPERM) {
        fprintf(stderr, "ringbloom: %s: %s\n", what, rb_conn_error(c));
        return EX_REFUSED;
    }
    if (rc == RB_ETIMEDOUT) {
        fprintf(stderr, "ringbloom: %s: the daemon did not answer within %u s%s (socket %s)\n",
                what, cli->timeout_s, changes ? "; the change may have been applied" : "",
                cli->sock_path);
        return EX_UNREACH;
    }
    if (rc == RB_EDAEMON) {
        fprintf(stderr, "ringbloom: %s: %s (socket %s)\n", what, rb_strerror(rc),
                cli->sock_path);
        return EX_UNREACH;
    }
    return cli_fail(EX_FAIL, what, rc);
}
