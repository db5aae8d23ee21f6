/*
 * reach.c - reaching the instance the options name: its socket, the
 * daemon's segment (for reads) and a connection to the daemon (for
 * changes), each refused with a sentence and an exit code when it cannot
 * be trusted or reached; every such sentence names the socket path(s)
 * looked at and the instance (or, with --socket alone, the path) meant.
 *
 * Where: --socket, or by name the user's own default socket and then the
 * system one, /run/ringbloom/<instance>.sock, where a service manager
 * runs the daemon as user ringbloom for a group of users.  With --socket
 * and no --instance the daemon there names its instance (INFO server),
 * which names the segment.
 *
 * Trust: what the CLI reads or sends keys to must be the daemon's.  The
 * socket's directory is judged by rb_daemon_uid before anything is sent
 * (another user may have made /tmp/ringbloom-<uid>), and the segment is
 * attached only if the daemon's user owns it: that user is --owner, or
 * else the owner of the socket's directory (rb_daemon_uid: root's, yours,
 * or one root placed, such as /run/ringbloom), which works whether or not
 * the daemon is running.
 *
 * A connect refused for permission (EACCES) says which group would let
 * the user in: the socket's, or its directory's if that is the one this
 * user cannot enter, by name.
 */
#include "config.h"

#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* Appends "path (what)" to cli->tried, when looking up by name (with
 * --socket the path named is the only one, and messages name it). */
static void tried_add(cli_t *cli, const char *path, const char *what)
{
    size_t len = strlen(cli->tried);

    if (cli->socket != NULL)
        return;
    snprintf(cli->tried + len, sizeof(cli->tried) - len, "%s%s (%s)", len > 0 ? ", " : "",
             path, what);
}

/* "; tried " before cli->tried when there is something in it. */
static const char *tried_note(const cli_t *cli)
{
    return cli->tried[0] != '\0' ? "; tried " : "";
}

/* Judges candidate path: 1 if its directory passes and holds the socket,
 * 0 if not there (noted in cli->tried; *owner set if the directory is
 * there), -1 if the directory fails the rule (said on stderr). */
static int try_socket(cli_t *cli, const char *path, uid_t *owner)
{
    char why[1024];
    struct stat st;
    int rc = rb_daemon_uid(NULL, path, cli->owner, owner, why, sizeof(why));

    if (rc == RB_ENOENT) {
        tried_add(cli, path, "no such directory");
        return 0;
    }
    if (rc != RB_OK) {
        fprintf(stderr, "ringbloom: not using the socket of %s (%s): %s\n", cli->who, path,
                why);
        return -1;
    }
    /* The directory is the daemon user's or root's alone: the name is
     * what they put there. */
    errno = 0;
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
        return 1;
    tried_add(cli, path, errno == EACCES ? strerror(errno) : "no socket");
    return 0;
}

int cli_find_socket(cli_t *cli)
{
    rb_paths_t cand[2];
    const char *path[2] = { cli->socket, NULL };
    uid_t owner;
    int n = 1, found, chosen = 0;

    if (cli->sock_path != NULL)
        return EX_YES;
    cli->sock_owner = (uid_t)-1;
    if (cli->socket != NULL && !cli->instance_set)
        snprintf(cli->who, sizeof(cli->who), "the daemon at %s", cli->socket);
    else
        snprintf(cli->who, sizeof(cli->who), "instance '%s'", cli->instance);
    if (cli->socket == NULL) {
        if (rb_default_paths(cli->instance, &cand[0]) != RB_OK ||
            rb_system_paths(cli->instance, &cand[1]) != RB_OK) {
            fprintf(stderr, "ringbloom: bad instance name '%s'\n", cli->instance);
            return EX_USAGE;
        }
        path[0] = cand[0].socket;
        path[1] = cand[1].socket;
        /* Root's default is the system path. */
        n = strcmp(path[0], path[1]) == 0 ? 1 : 2;
    }
    for (int i = 0; i < n; i++) {
        owner = (uid_t)-1;
        if ((found = try_socket(cli, path[i], &owner)) < 0)
            return EX_UNREACH;
        /* The first directory there, unless a later one holds the socket. */
        if (found || (owner != (uid_t)-1 && cli->sock_owner == (uid_t)-1)) {
            chosen = i;
            cli->sock_owner = owner;
        }
        if (found)
            break;
    }
    if (cli->socket == NULL)
        cli->paths = cand[chosen];
    cli->sock_path = cli->socket != NULL ? cli->socket : cli->paths.socket;
    return EX_YES;
}

/* The value of INFO's field "instance:" in text, cut in place; NULL if
 * there is none. */
static char *info_instance(char *text)
{
    for (char *line = text; line != NULL && *line != '\0';) {
        char *next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        line[strcspn(line, "\r")] = '\0';
        if (strncmp(line, "instance:", 9) == 0)
            return line + 9;
        line = next;
    }
    return NULL;
}

/* --socket without --instance: the socket names the daemon, and the daemon
 * names its instance (INFO server), which names the segment.  The answer
 * crosses from the socket, so it is held to the instance rule before it
 * names anything; the segment is still attached only if the daemon's
 * user owns it (cli_attach), so a daemon cannot point the CLI at another
 * user's data.  EX_YES (cli->instance set), or the exit code after saying
 * why on stderr. */
static int ask_instance(cli_t *cli)
{
    static const char *const args[2] = { "INFO", "server" };
    static const size_t lens[2] = { 4, 6 };
    char text[16384], *name;
    rb_paths_t check;
    rb_conn_t *c;
    int rc, ex;

    if (cli->instance_set || cli->socket == NULL || cli->asked[0] != '\0')
        return EX_YES;
    if ((ex = cli_connect(cli, &c)) != EX_YES) {
        fprintf(stderr, "ringbloom: with --socket alone the daemon names its instance; while "
                "it does not answer, name it with --instance NAME\n");
        return ex;
    }
    rc = rb_conn_command(c, 2, args, lens, text, sizeof(text));
    if (rc != RB_OK) {
        ex = cli_conn_fail(cli, c, "asking the daemon its instance (INFO server)", rc, 0);
        rb_conn_close(c);
        fprintf(stderr, "ringbloom: name the instance with --instance NAME\n");
        return ex;
    }
    rb_conn_close(c);
    name = info_instance(text);
    if (name == NULL || strlen(name) > RB_INSTANCE_MAX ||
        rb_system_paths(name, &check) != RB_OK) {
        fprintf(stderr, "ringbloom: the daemon at %s named no valid instance (INFO server: ",
                cli->socket);
        if (name == NULL)
            fputs("no instance field", stderr);
        else
            cli_escape(stderr, name, strlen(name) < 80 ? strlen(name) : 80, 1);
        fputs("); name it with --instance NAME\n", stderr);
        return EX_UNREACH;
    }
    memcpy(cli->asked, name, strlen(name) + 1);
    cli->instance = cli->asked;
    snprintf(cli->who, sizeof(cli->who), "the daemon at %s (instance '%s')", cli->socket,
             cli->instance);
    return EX_YES;
}

int cli_attach(cli_t *cli, rb_segment_t **seg)
{
    uid_t owner = cli->owner;
    int rc, ex;

    /* --owner names the daemon's user: no socket needed. */
    if (owner == (uid_t)-1 && (ex = cli_find_socket(cli)) != EX_YES)
        return ex;
    if ((ex = ask_instance(cli)) != EX_YES)
        return ex;
    if (owner == (uid_t)-1)
        owner = cli->sock_owner;
    else
        snprintf(cli->who, sizeof(cli->who), "instance '%s'", cli->instance);
    if (owner == (uid_t)-1) {
        fprintf(stderr, "ringbloom: cannot attach %s: no socket directory (%s%s), so no "
                "daemon's user to trust; is ringbloomd running? (--owner USER names it)\n",
                cli->who, cli->socket != NULL ? "socket " : "tried ",
                cli->socket != NULL ? cli->socket : cli->tried);
        return EX_UNREACH;
    }
    rc = rb_segment_attach_owned(cli->instance, 0, owner, seg);
    if (rc == RB_EGONE) {
        rc = rb_segment_attach_owned(cli->instance, RB_ATTACH_STALE_OK, owner, seg);
        if (rc == RB_OK)
            fprintf(stderr, "ringbloom: warning: the daemon of %s is not running; answering "
                    "from its last published state\n", cli->who);
    }
    if (rc == RB_EOWNER) {
        fprintf(stderr, "ringbloom: cannot attach %s: /dev/shm/ringbloom.%s is %s (the "
                "daemon's user is uid %u, %s%s)\n", cli->who, cli->instance, rb_strerror(rc),
                (unsigned)owner, cli->sock_path != NULL ? "the owner of the directory of " :
                "--owner", cli->sock_path != NULL ? cli->sock_path : "");
        return EX_UNREACH;
    }
    if (rc != RB_OK) {
        fprintf(stderr, "ringbloom: cannot attach %s: /dev/shm/ringbloom.%s: %s (socket %s)%s%s\n",
                cli->who, cli->instance, rb_strerror(rc),
                cli->sock_path != NULL ? cli->sock_path : "not looked up: --owner",
                tried_note(cli), cli->tried);
        return EX_UNREACH;
    }
    return EX_YES;
}

/* 1 if this process has group gid (its own or a supplementary one). */
static int in_group(gid_t gid)
{
    gid_t groups[NGROUPS_MAX + 1];
    int n = getgroups((int)(sizeof(groups) / sizeof(groups[0])), groups);

    if (getegid() == gid)
        return 1;
    for (int i = 0; i < n; i++)
        if (groups[i] == gid)
            return 1;
    return 0;
}

/* Why connecting to sock was refused for permission, into out: the
 * directory on the way that this user cannot enter, else the socket; its
 * mode and group (by name), and what would let the user in. */
static void refused_why(const char *sock, char *out, size_t cap)
{
    char dir[4096], gbuf[4096], pbuf[4096], uname[64], gname[64];
    const char *slash = strrchr(sock, '/'), *what = "the socket", *path = sock;
    struct group gr, *g = NULL;
    struct passwd pw, *p = NULL;
    struct stat st;
    mode_t need = 0020;   /* a socket: group write */

    snprintf(dir, sizeof(dir), "%.*s", slash != NULL && slash != sock ? (int)(slash - sock) : 1,
             slash != NULL ? sock : ".");
    if (access(dir, X_OK) != 0) {
        what = "its directory";
        path = dir;
        need = 0010;      /* a directory: group search */
    }
    if (stat(path, &st) != 0) {
        snprintf(out, cap, "Permission denied");
        return;
    }
    getgrgid_r(st.st_gid, &gr, gbuf, sizeof(gbuf), &g);
    getpwuid_r(getuid(), &pw, pbuf, sizeof(pbuf), &p);
    if (g != NULL)
        snprintf(gname, sizeof(gname), "%s", g->gr_name);
    else
        snprintf(gname, sizeof(gname), "%u", (unsigned)st.st_gid);
    if (p != NULL)
        snprintf(uname, sizeof(uname), "%s", p->pw_name);
    else
        snprintf(uname, sizeof(uname), "%u", (unsigned)getuid());
    if ((st.st_mode & need) == 0)
        snprintf(out, cap, "Permission denied: %s %s is mode 0%o, group %s, which lets no "
                 "group member in; its owner (uid %u) may", what, path,
                 (unsigned)st.st_mode & 07777, gname, (unsigned)st.st_uid);
    else if (in_group(st.st_gid))
        snprintf(out, cap, "Permission denied: %s %s is mode 0%o, group %s, which this "
                 "process has, yet it was refused", what, path, (unsigned)st.st_mode & 07777,
                 gname);
    else
        snprintf(out, cap, "Permission denied: %s %s is mode 0%o, group %s, and user %s "
                 "(uid %u) is not in that group: a member may connect (adduser %s %s, then "
                 "log in again)", what, path, (unsigned)st.st_mode & 07777, gname, uname,
                 (unsigned)getuid(), uname, gname);
}

int cli_connect(cli_t *cli, rb_conn_t **c)
{
    int rc, ex, named;

    if ((ex = cli_find_socket(cli)) != EX_YES)
        return ex;
    named = cli->instance_set || cli->socket == NULL;
    rc = rb_conn_open(NULL, cli->sock_path, cli->timeout_s * 1000u, c);
    if (rc == RB_EDAEMON && errno == EACCES) {
        char why[8192 + 512];
        refused_why(cli->sock_path, why, sizeof(why));
        fprintf(stderr, "ringbloom: cannot connect to the daemon%s%s%s at %s: %s%s%s\n",
                named ? " of instance '" : "", named ? cli->instance : "", named ? "'" : "",
                cli->sock_path, why, tried_note(cli), cli->tried);
        return EX_UNREACH;
    }
    if (rc != RB_OK) {
        int e = errno;
        fprintf(stderr, "ringbloom: cannot connect to the daemon%s%s%s at %s: %s (%s)%s%s\n",
                named ? " of instance '" : "", named ? cli->instance : "", named ? "'" : "", cli->sock_path, rb_strerror(rc), strerror(e),
                tried_note(cli), cli->tried);
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
