/* nats_cluster.c - a real NATS JetStream cluster on loopback for the
 * tests (nats_cluster.h says how it is laid out and cleaned up). */
#include "config.h"

#include <nats/nats.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nats_cluster.h"
#include "rb_test.h"

static rb_nats_cluster_t *at_exit_cluster;
static pid_t at_exit_pid;   /* the process that started it: not its forks */

static void stop_at_exit(void)
{
    if (at_exit_cluster && getpid() == at_exit_pid)
        rb_nats_stop(at_exit_cluster);
}

const char *rb_nats_program(void)
{
    return rb_test_program("RB_NATS_SERVER", "nats-server");
}

/* Writes DIR/nI.conf: the server's name, client port, JetStream store and,
 * with more than one server, the cluster block routing to the others.
 * 0 or -1. */
static int write_config(rb_nats_cluster_t *c, int i)
{
    char path[192];
    FILE *f;

    snprintf(path, sizeof(path), "%s/n%d.conf", c->dir, i);
    if (!(f = fopen(path, "w")))
        return -1;
    fprintf(f, "server_name: n%d\nlisten: 127.0.0.1:%d\n"
            "jetstream { store_dir: \"%s/n%d\", max_memory_store: 64MB, max_file_store: 1GB }\n",
            i, c->client_port[i], c->dir, i);
    if (c->n > 1) {
        fprintf(f, "cluster { name: rb, listen: 127.0.0.1:%d, routes: [", c->route_port[i]);
        for (int j = 0, first = 1; j < c->n; j++)
            if (j != i) {
                fprintf(f, "%s nats-route://127.0.0.1:%d", first ? "" : ",", c->route_port[j]);
                first = 0;
            }
        fprintf(f, " ] }\n");
    }
    return fclose(f) == 0 ? 0 : -1;
}

static int spawn(rb_nats_cluster_t *c, int i)
{
    char conf[192], log[192];
    const char *prog = rb_nats_program();
    pid_t pid;

    snprintf(conf, sizeof(conf), "%s/n%d.conf", c->dir, i);
    snprintf(log, sizeof(log), "%s/n%d.log", c->dir, i);
    if (!prog || (pid = fork()) < 0)
        return -1;
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execl(prog, prog, "-c", conf, (char *)NULL);
        _exit(127);
    }
    c->pid[i] = pid;
    return 0;
}

/* Asks server i, on a connection of its own (0.5 s to connect), whether
 * its JetStream is ready: replicas 0, js_GetAccountInfo answers OK (once
 * there is a meta leader); replicas > 1, the memory stream RB_READY_PROBE
 * with that many replicas can be created (then it is deleted).  Every
 * server answering js_GetAccountInfo is not enough for an R3 stream: the
 * meta leader places a stream only on peers that have reported to it,
 * and until then an R3 js_AddStream is refused with jerr 10005
 * ("insufficient resources"; seen once in an ASan CI run).  1 if so. */
static int probe(rb_nats_cluster_t *c, int i, int replicas)
{
    static const char *subjects[] = { "RB_READY_PROBE.x" };
    natsOptions *o = NULL;
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    jsAccountInfo *ai = NULL;
    jsStreamInfo *si = NULL;
    jsStreamConfig sc;
    jsOptions jo;
    int ok = 0;

    if (natsOptions_Create(&o) != NATS_OK)
        return 0;
    if (natsOptions_SetServers(o, &c->servers[i], 1) == NATS_OK &&
        natsOptions_SetTimeout(o, 500) == NATS_OK &&
        natsOptions_SetAllowReconnect(o, false) == NATS_OK &&
        natsConnection_Connect(&nc, o) == NATS_OK && jsOptions_Init(&jo) == NATS_OK) {
        jo.Wait = replicas > 1 ? 2000 : 500;
        jsStreamConfig_Init(&sc);
        sc.Name = "RB_READY_PROBE";
        sc.Subjects = subjects;
        sc.SubjectsLen = 1;
        sc.Storage = js_MemoryStorage;
        sc.Replicas = replicas;
        if (natsConnection_JetStream(&js, nc, &jo) == NATS_OK) {
            if (replicas <= 1)
                ok = js_GetAccountInfo(&ai, js, NULL, NULL) == NATS_OK;
            else if (js_AddStream(&si, js, &sc, NULL, NULL) == NATS_OK)
                ok = js_DeleteStream(js, sc.Name, NULL, NULL) == NATS_OK;
        }
    }
    jsAccountInfo_Destroy(ai);
    jsStreamInfo_Destroy(si);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    natsOptions_Destroy(o);
    return ok;
}

static void print_logs(rb_nats_cluster_t *c)
{
    char cmd[400];

    snprintf(cmd, sizeof(cmd), "tail -n 15 %s/n*.log", c->dir);
    if (system(cmd) != 0)
        printf("(no nats-server logs)\n");
}

int rb_nats_wait_ready(rb_nats_cluster_t *c, int timeout_ms)
{
    uint64_t end = rb_test_now_ms() + (uint64_t)timeout_ms;

    for (;;) {
        int all = 1, running = 0, first = -1;
        for (int i = 0; i < c->n; i++) {
            int st;
            if (c->pid[i] && waitpid(c->pid[i], &st, WNOHANG) == c->pid[i]) {
                printf("nats-server n%d exited (status %d)\n", i, st);
                c->pid[i] = 0;
                print_logs(c);
                return -1;
            }
            if (c->pid[i] && !probe(c, i, 0))
                all = 0;
            if (c->pid[i] && first < 0)
                first = i;
            running += c->pid[i] != 0;
        }
        if (all && (running < 2 || probe(c, first, running)))
            return 0;
        if (rb_test_now_ms() > end) {
            printf("nats cluster: JetStream not ready (or an R%d stream not placeable) "
                   "within %d ms\n", c->n, timeout_ms);
            print_logs(c);
            return -1;
        }
        usleep(100 * 1000);
    }
}

int rb_nats_start(rb_nats_cluster_t *c, int n, int timeout_ms)
{
    int ports[2 * RB_NATS_MAX];

    memset(c, 0, sizeof(*c));
    if (n < 1 || n > RB_NATS_MAX || !rb_nats_program())
        return -1;
    snprintf(c->dir, sizeof(c->dir), "/tmp/rbtest.%d.nats.XXXXXX", (int)rb_test_main_pid);
    if (!mkdtemp(c->dir) || rb_test_free_ports(ports, 2 * n) != 0) {
        printf("nats cluster: no temp dir or no free ports: %s\n", strerror(errno));
        return -1;
    }
    c->n = n;
    at_exit_cluster = c;
    at_exit_pid = getpid();
    atexit(stop_at_exit);
    for (int i = 0; i < n; i++) {
        c->client_port[i] = ports[i];
        c->route_port[i] = ports[n + i];
        snprintf(c->url[i], sizeof(c->url[i]), "nats://127.0.0.1:%d", ports[i]);
        c->servers[i] = c->url[i];
    }
    for (int i = 0; i < n; i++)
        if (write_config(c, i) != 0 || spawn(c, i) != 0) {
            printf("nats cluster: could not configure or start n%d\n", i);
            rb_nats_stop(c);
            return -1;
        }
    if (rb_nats_wait_ready(c, timeout_ms) != 0) {
        rb_nats_stop(c);
        return -1;
    }
    return 0;
}

void rb_nats_kill(rb_nats_cluster_t *c, int i)
{
    rb_test_kill_procs(&c->pid[i], 1);
}

int rb_nats_restart(rb_nats_cluster_t *c, int i)
{
    rb_nats_kill(c, i);
    return spawn(c, i);
}

void rb_nats_stop(rb_nats_cluster_t *c)
{
    rb_test_kill_procs(c->pid, c->n);
    rb_test_remove_tmp_dir(c->dir);
    c->n = 0;
    if (at_exit_cluster == c)
        at_exit_cluster = NULL;
}
