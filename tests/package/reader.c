/*
 * reader.c - a program of a user of the installed libringbloom-dev: built
 * by tests/package/install.sh with `pkg-config --cflags --libs ringbloom`
 * against the installed headers and shared library (no part of this
 * tree), it attaches an instance the way the library's documentation
 * shows and prints what the shared memory says.
 *
 *   usage: reader INSTANCE KEY FILTER ITEM
 *   prints: "<node> <0|1>" (KEY's node, whether FILTER may hold ITEM);
 *   exits 1 with the reason on stderr when it cannot.
 */
#include <stdio.h>
#include <string.h>

#include <ringbloom.h>

int main(int argc, char **argv)
{
    char why[1024];
    rb_segment_t *seg;
    rb_bloom_t *bf;
    rb_node_t node;
    uid_t owner;
    int rc, seen;

    if (argc != 5) {
        fprintf(stderr, "usage: reader INSTANCE KEY FILTER ITEM\n");
        return 2;
    }
    rc = rb_daemon_uid(argv[1], NULL, (uid_t)-1, &owner, why, sizeof(why));
    if (rc != RB_OK) {
        fprintf(stderr, "reader: %s: %s\n", rb_strerror(rc), why);
        return 1;
    }
    if ((rc = rb_segment_attach_owned(argv[1], 0, owner, &seg)) != RB_OK) {
        fprintf(stderr, "reader: attach %s: %s\n", argv[1], rb_strerror(rc));
        return 1;
    }
    if ((rc = rb_ring_lookup(seg, argv[2], strlen(argv[2]), &node)) != RB_OK ||
        (rc = rb_bloom_open(seg, argv[3], strlen(argv[3]), &bf)) != RB_OK) {
        fprintf(stderr, "reader: %s\n", rb_strerror(rc));
        rb_segment_close(seg);
        return 1;
    }
    seen = rb_bloom_contains(bf, argv[4], strlen(argv[4]));
    rb_bloom_close(bf);
    rb_segment_close(seg);
    if (seen < 0) {
        fprintf(stderr, "reader: %s\n", rb_strerror(seen));
        return 1;
    }
    printf("%s %d\n", node.name, seen);
    return 0;
}
