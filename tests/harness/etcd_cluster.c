/* etcd_cluster.c - a real etcd cluster on loopback for the tests
 * (etcd_cluster.h says how it is laid out and cleaned up). */
#include "config.h"

#include <curl/curl.h>
#include <openssl/evp.h>
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
#include <time.h>
#include <unistd.h>

#include "etcd_cluster.h"
#include "rb_test.h"

static rb_etcd_cluster_t *at_exit_cluster;
static pid_t at_exit_pid;   /* the process that started it: not its forks */

static void stop_at_exit(void)
{
    if (at_exit_cluster && getpid() == at_exit_pid)
        rb_etcd_stop(at_exit_cluster);
}

const char *rb_etcd_program(void)
{
    return rb_test_program("RB_ETCD", "etcd");
}

static int spawn(rb_etcd_cluster_t *c, int i, const char *state)
{
    char name[16], data[192], curl[64], purl[64], log[192];
    const char *prog = rb_etcd_program();
    pid_t pid;

    snprintf(name, sizeof(name), "m%d", i);
    snprintf(data, sizeof(data), "%s/%s", c->dir, name);
    snprintf(log, sizeof(log), "%s/%s.log", c->dir, name);
    snprintf(curl, sizeof(curl), "%s://127.0.0.1:%d", c->tls ? "https" : "http",
             c->client_port[i]);
    snprintf(purl, sizeof(purl), "http://127.0.0.1:%d", c->peer_port[i]);
    if (!prog || (pid = fork()) < 0)
        return -1;
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        char srv[200], srvkey[200];
        /* Without TLS the list ends where the TLS flags would start. */
        snprintf(srv, sizeof(srv), "%s/server.pem", c->dir);
        snprintf(srvkey, sizeof(srvkey), "%s/server.key", c->dir);
        execl(prog, prog, "--name", name, "--data-dir", data, "--listen-client-urls", curl,
              "--advertise-client-urls", curl, "--listen-peer-urls", purl,
              "--initial-advertise-peer-urls", purl, "--initial-cluster", c->initial,
              "--initial-cluster-state", state, "--initial-cluster-token", c->dir,
              "--experimental-watch-progress-notify-interval", "1s", "--log-level", "warn",
              "--logger", "zap",
              c->tls ? "--cert-file" : NULL, srv, "--key-file", srvkey, "--trusted-ca-file",
              c->ca, "--client-cert-auth", (char *)NULL);
        _exit(127);
    }
    c->pid[i] = pid;
    return 0;
}

typedef struct reply {
    size_t len;
    char buf[256];
} reply_t;

static size_t sink(char *d, size_t s, size_t n, void *arg)
{
    reply_t *r = arg;
    size_t len = s * n, room = sizeof(r->buf) - 1 - r->len;

    if (len < room)
        room = len;
    memcpy(r->buf + r->len, d, room);
    r->len += room;
    r->buf[r->len] = '\0';
    return len;
}

/* A handle for path of member i (its certificates when TLS), the reply
 * into *reply, at most timeout_ms; NULL: no memory. */
static CURL *member_handle(rb_etcd_cluster_t *c, int i, const char *path, long timeout_ms,
                           reply_t *reply)
{
    char url[96];
    CURL *h = curl_easy_init();

    if (!h)
        return NULL;
    snprintf(url, sizeof(url), "%s%s", c->url[i], path);
    curl_easy_setopt(h, CURLOPT_URL, url);   /* libcurl copies it */
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, reply);
    if (c->tls) {
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca);
        curl_easy_setopt(h, CURLOPT_SSLCERT, c->cert);
        curl_easy_setopt(h, CURLOPT_SSLKEY, c->key);
    }
    return h;
}

/* Does member i answer GET /health with "health":"true"? */
static int healthy(rb_etcd_cluster_t *c, int i)
{
    reply_t reply = { 0 };
    CURL *h = member_handle(c, i, "/health", 1000L, &reply);
    int ok = 0;

    if (!h)
        return 0;
    if (curl_easy_perform(h) == CURLE_OK)
        ok = strstr(reply.buf, "\"health\":\"true\"") != NULL;
    curl_easy_cleanup(h);
    return ok;
}

/* Standard base64 of len bytes into out (4 * ((len + 2) / 3) + 1 bytes),
 * libcrypto's as the daemon's (daemon/sources/etcd.c). */
static void b64(const void *in, size_t len, char *out)
{
    EVP_EncodeBlock((unsigned char *)out, in, (int)len);
}

int rb_etcd_raw(rb_etcd_cluster_t *c, const void *key, size_t klen, const void *val, size_t vlen)
{
    char *kb = malloc(4 * (klen / 3 + 1) + 1), *vb = malloc(4 * (vlen / 3 + 1) + 1), *body;
    reply_t reply = { 0 };
    int ok = 0;

    body = kb && vb ? malloc(4 * (klen / 3 + vlen / 3 + 2) + 64) : NULL;
    if (body) {
        b64(key, klen, kb);
        b64(val ? val : "", val ? vlen : 0, vb);
        if (val)
            sprintf(body, "{\"key\":\"%s\",\"value\":\"%s\"}", kb, vb);
        else
            sprintf(body, "{\"key\":\"%s\"}", kb);
    }
    for (int i = 0; body && !ok && i < c->n; i++) {
        long status = 0;
        CURL *h;
        if (!c->pid[i] ||
            !(h = member_handle(c, i, val ? "/v3/kv/put" : "/v3/kv/deleterange", 5000L, &reply)))
            continue;
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        if (curl_easy_perform(h) == CURLE_OK &&
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK && status == 200)
            ok = 1;
        curl_easy_cleanup(h);
    }
    free(kb);
    free(vb);
    free(body);
    return ok ? 0 : -1;
}

int rb_etcd_wait_healthy(rb_etcd_cluster_t *c, int timeout_ms)
{
    uint64_t end = rb_test_now_ms() + (uint64_t)timeout_ms;

    for (;;) {
        int all = 1;
        for (int i = 0; i < c->n; i++) {
            int st;
            if (c->pid[i] && waitpid(c->pid[i], &st, WNOHANG) == c->pid[i]) {
                printf("etcd member m%d exited (status %d)\n", i, st);
                c->pid[i] = 0;
                return -1;
            }
            if (c->pid[i] && !healthy(c, i))
                all = 0;
        }
        if (all)
            return 0;
        if (rb_test_now_ms() > end)
            return -1;
        usleep(100 * 1000);
    }
}

static void print_logs(rb_etcd_cluster_t *c)
{
    char cmd[400];

    snprintf(cmd, sizeof(cmd), "tail -n 15 %s/m*.log", c->dir);
    if (system(cmd) != 0)
        printf("(no etcd logs)\n");
}

static int rb_etcd_start_with(rb_etcd_cluster_t *c, int n, int timeout_ms, int tls);

/* A CA, a server certificate for 127.0.0.1 and a client certificate, in
 * c->dir (openssl, quietly).  0 or -1. */
static int make_certs(rb_etcd_cluster_t *c)
{
    char cmd[2048];

    snprintf(c->ca, sizeof(c->ca), "%s/ca.pem", c->dir);
    snprintf(c->cert, sizeof(c->cert), "%s/client.pem", c->dir);
    snprintf(c->key, sizeof(c->key), "%s/client.key", c->dir);
    snprintf(cmd, sizeof(cmd), "cd %s && { "
             "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 "
             "-subj /CN=rbtest-ca && "
             "printf 'subjectAltName=IP:127.0.0.1\\nextendedKeyUsage=serverAuth,clientAuth\\n' > ext && "
             "for who in server client; do "
             "openssl req -newkey rsa:2048 -nodes -keyout $who.key -out $who.csr -subj /CN=$who && "
             "openssl x509 -req -in $who.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
             "-out $who.pem -days 2 -extfile ext || exit 1; done; } > certs.log 2>&1", c->dir);
    return system(cmd) == 0 ? 0 : -1;
}

int rb_etcd_start_tls(rb_etcd_cluster_t *c, int n, int timeout_ms)
{
    return rb_etcd_start_with(c, n, timeout_ms, 1);
}

int rb_etcd_start(rb_etcd_cluster_t *c, int n, int timeout_ms)
{
    return rb_etcd_start_with(c, n, timeout_ms, 0);
}

static int rb_etcd_start_with(rb_etcd_cluster_t *c, int n, int timeout_ms, int tls)
{
    int ports[2 * RB_ETCD_MAX];
    size_t l = 0;

    memset(c, 0, sizeof(*c));
    if (n < 1 || n > RB_ETCD_MAX || !rb_etcd_program())
        return -1;
    snprintf(c->dir, sizeof(c->dir), "/tmp/rbtest.%d.etcd.XXXXXX", (int)rb_test_main_pid);
    if (!mkdtemp(c->dir) || rb_test_free_ports(ports, 2 * n) != 0) {
        printf("etcd cluster: no temp dir or no free ports: %s\n", strerror(errno));
        return -1;
    }
    c->n = n;
    c->tls = tls;
    if (tls && make_certs(c) != 0) {
        printf("etcd cluster: openssl could not make the certificates (%s/certs.log)\n", c->dir);
        return -1;
    }
    at_exit_cluster = c;
    at_exit_pid = getpid();
    atexit(stop_at_exit);
    for (int i = 0; i < n; i++) {
        c->client_port[i] = ports[i];
        c->peer_port[i] = ports[n + i];
        snprintf(c->url[i], sizeof(c->url[i]), "%s://127.0.0.1:%d", tls ? "https" : "http",
                 ports[i]);
        c->endpoints[i] = c->url[i];
        l += (size_t)snprintf(c->initial + l, sizeof(c->initial) - l, "%sm%d=http://127.0.0.1:%d",
                              i ? "," : "", i, ports[n + i]);
    }
    for (int i = 0; i < n; i++)
        if (spawn(c, i, "new") != 0) {
            rb_etcd_stop(c);
            return -1;
        }
    if (rb_etcd_wait_healthy(c, timeout_ms) != 0) {
        printf("etcd cluster: not healthy within %d ms\n", timeout_ms);
        print_logs(c);
        rb_etcd_stop(c);
        return -1;
    }
    return 0;
}

void rb_etcd_kill(rb_etcd_cluster_t *c, int i)
{
    rb_test_kill_procs(&c->pid[i], 1);
}

int rb_etcd_restart(rb_etcd_cluster_t *c, int i)
{
    rb_etcd_kill(c, i);
    return spawn(c, i, "existing");
}

int rb_etcd_ctl(rb_etcd_cluster_t *c, const char *args)
{
    char cmd[1024], eps[RB_ETCD_MAX * 64] = "";
    const char *prog = rb_etcd_program();
    size_t l = 0;
    int st;

    if (!prog)
        return -1;
    for (int i = 0; i < c->n; i++)
        if (c->pid[i])
            l += (size_t)snprintf(eps + l, sizeof(eps) - l, "%s%s", l ? "," : "", c->url[i]);
    if (c->tls)
        l += (size_t)snprintf(eps + l, sizeof(eps) - l, " --cacert=%s --cert=%s --key=%s", c->ca,
                              c->cert, c->key);
    snprintf(cmd, sizeof(cmd), "ETCDCTL_API=3 \"$(dirname %s)/etcdctl\" --endpoints=%s %s",
             prog, eps, args);
    st = system(cmd);
    return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void rb_etcd_stop(rb_etcd_cluster_t *c)
{
    rb_test_kill_procs(c->pid, c->n);
    rb_test_remove_tmp_dir(c->dir);
    c->n = 0;
    if (at_exit_cluster == c)
        at_exit_cluster = NULL;
}
