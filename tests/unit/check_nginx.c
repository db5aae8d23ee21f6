/*
 * check_nginx.c - nginx mode against the real nginx: an nginx on loopback
 * ports proxies to an upstream of five backends (some weighted) with
 * "hash $arg_k consistent"; each backend answers its own name.  For 2,000
 * keys the backend nginx picks must be the node ringbloom's nginx mode
 * names.  Skipped (exit 77) only when nginx is not installed.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "rb_test.h"

#define NGINX "/usr/sbin/nginx"
#define NBACKENDS 5
#define NKEYS 2000

static const uint32_t weights[NBACKENDS] = { 1, 2, 1, 3, 1 };

static unsigned free_port(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    unsigned port;

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

/* GET /?k=key on port; the body into body.  Returns 0 on success. */
static int http_get(unsigned port, const char *key, char *body, size_t cap)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    char req[512], resp[4096];
    size_t got = 0;
    ssize_t n;
    char *b;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    n = snprintf(req, sizeof(req), "GET /?k=%s HTTP/1.0\r\nHost: test\r\n\r\n", key);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return -1;
    }
    while (got < sizeof(resp) - 1 && (n = read(fd, resp + got, sizeof(resp) - 1 - got)) > 0)
        got += (size_t)n;
    close(fd);
    resp[got] = '\0';
    b = strstr(resp, "\r\n\r\n");
    if (strncmp(resp, "HTTP/1.1 200", 12) != 0 || b == NULL)
        return -1;
    snprintf(body, cap, "%s", b + 4);
    return 0;
}

START_TEST(test_nginx_hash_consistent_agrees)
{
    char dir[] = "/tmp/rbtest.nginx.XXXXXX", conf[128], name[64], key[64], body[128];
    unsigned front = free_port(), ports[NBACKENDS];
    rb_segment_t *seg;
    rb_ring_t *ring;
    FILE *f;
    pid_t pid;
    long agree = 0;
    int up = 0;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(conf, sizeof(conf), "%s/nginx.conf", dir);
    f = fopen(conf, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "daemon off;\nmaster_process off;\nerror_log %s/error.log warn;\npid %s/nginx.pid;\n"
            "events { worker_connections 256; }\nhttp {\n  access_log off;\n"
            "  client_body_temp_path %s; proxy_temp_path %s; fastcgi_temp_path %s;\n"
            "  uwsgi_temp_path %s; scgi_temp_path %s;\n"
            "  upstream pool {\n    hash $arg_k consistent;\n", dir, dir, dir, dir, dir, dir, dir);
    ck_assert_int_eq(rb_ring_new(RB_RING_NGINX, 0, &ring), RB_OK);
    for (int i = 0; i < NBACKENDS; i++) {
        ports[i] = free_port();
        snprintf(name, sizeof(name), "127.0.0.1:%u", ports[i]);
        fprintf(f, "    server %s weight=%u;\n", name, weights[i]);
        /* In the upstream's order: equal points go to the earlier server. */
        ck_assert_int_eq(rb_ring_add(ring, name, strlen(name), weights[i]), RB_OK);
    }
    fprintf(f, "  }\n  server { listen 127.0.0.1:%u; location / { proxy_pass http://pool; } }\n",
            front);
    for (int i = 0; i < NBACKENDS; i++)
        fprintf(f, "  server { listen 127.0.0.1:%u; location / { return 200 \"127.0.0.1:%u\"; } }\n",
                ports[i], ports[i]);
    fprintf(f, "}\n");
    fclose(f);

    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execl(NGINX, NGINX, "-p", dir, "-c", conf, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200 && !up; i++) {
        up = http_get(front, "probe", body, sizeof(body)) == 0;
        if (!up)
            usleep(25000);
    }
    ck_assert_msg(up, "nginx did not come up; see %s/error.log", dir);

    ck_assert_int_eq(rb_segment_create(NULL, NULL, &seg), RB_OK);
    ck_assert_int_eq(rb_ring_publish(ring, seg), RB_OK);
    for (int k = 0; k < NKEYS; k++) {
        rb_node_t n;
        /* URL-safe keys: $arg_k is the raw query value. */
        snprintf(key, sizeof(key), "user-%d-%x.example", k, (unsigned)(k * 2654435761u));
        ck_assert_int_eq(http_get(front, key, body, sizeof(body)), 0);
        ck_assert_int_eq(rb_ring_lookup(seg, key, strlen(key), &n), RB_OK);
        if (strcmp(n.name, body) == 0)
            agree++;
        else
            printf("key %s: nginx chose %s, ringbloom %s\n", key, body, n.name);
    }
    printf("nginx hash consistent: %ld of %d keys agree (%d backends, weights 1,2,1,3,1)\n",
           agree, NKEYS, NBACKENDS);
    ck_assert_int_eq(agree, NKEYS);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    rb_segment_close(seg);
    rb_ring_free(ring);
    snprintf(conf, sizeof(conf), "rm -rf %s", dir);
    ck_assert_int_eq(system(conf), 0);
}
END_TEST

int main(void)
{
    if (access(NGINX, X_OK) != 0) {
        printf("SKIP: nginx is not installed (%s); install the Debian package nginx\n", NGINX);
        return 77;
    }
    return RB_TEST_MAIN("nginx",
                        RB_TCASE("consistent", 120, NULL, NULL,
                                 test_nginx_hash_consistent_agrees));
}
