/*
 * seg_huge.c - huge pages for a segment: turning them on for a live one
 * (rb_segment_huge_pages) and saying whether they back it, and if not why
 * and what fixes it (rb_segment_huge_status).  The mechanism itself (the
 * header flag, 2 MiB growth, collapse, aligned mappings) is segment.c's
 * and segment.h's; this file sits above it.
 *
 * What the kernel offers (Linux 6.1 or later): a tmpfs object's pages are
 * allocated by posix_fallocate outside any mapping, so on a mount with
 * huge=never or huge=advise (Debian's /dev/shm: never) they are small;
 * madvise(MADV_COLLAPSE) then copies each 2 MiB into one page whatever the
 * mount says, unless THP is disabled for the process (prctl
 * PR_SET_THP_DISABLE) or the system (shmem_enabled "deny"), or no free
 * 2 MiB block is left.  On huge=within_size or huge=always the pages are
 * huge from the start.  Either way a mapping shows them with one PMD entry
 * only where it is 2 MiB-aligned, which every segment mapping is.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "segment.h"
#include "util.h"

int rb_segment_huge_pages(rb_segment_t *seg)
{
    rbi_map_t *m;
    uint64_t size;
    int rc;

    if (seg == NULL)
        return RB_EINVAL;
    if (!seg->writable)
        return RB_EROFS;
    m = rbi_seg_map(seg);
    size = rbi_ld(&rbi_hdr(m)->size);
    if (!rbi_seg_huge(m)) {
        rbi_huge_mark(m);
        /* Whole 2 MiB committed (growth collapses what it adds) ... */
        if ((rc = rbi_segment_grow(seg, size)) != RB_OK) {
            rbi_st(&rbi_hdr(m)->flags, rbi_ld(&rbi_hdr(m)->flags) & ~(uint64_t)RBI_HDR_HUGE);
            return rc;
        }
    }
    /* ... and every byte collapsed: those made before, and, for a writer
     * that took a huge-page segment over, its mapping (it maps the pages
     * with PMD entries; pages already huge cost no copy). */
    rbi_huge_collapse(m, 0, rbi_ld(&rbi_hdr(m)->size));
    return RB_OK;
}

/* Bytes of the mapping at base mapped by PMD entries, from smaps. */
static uint64_t pmd_bytes(const void *base)
{
    FILE *f = fopen("/proc/self/smaps", "re");
    unsigned long lo, hi, kb;
    uint64_t total = 0;
    int in = 0;
    char line[512];

    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, ' ') > strchr(line, '-'))
            in = lo == (unsigned long)(uintptr_t)base;
        else if (in && (sscanf(line, "ShmemPmdMapped: %lu kB", &kb) == 1 ||
                        sscanf(line, "FilePmdMapped: %lu kB", &kb) == 1))
            total += (uint64_t)kb * 1024u;
    }
    fclose(f);
    return total;
}

/* The mount holding the object behind fd, from /proc/self/mountinfo:
 * "<fstype> <mount point> huge=<option>" ("huge=never" where none is
 * given, as tmpfs defaults); *huge_ok: the mount allocates 2 MiB pages
 * itself (huge=within_size, always, or hugetlbfs).  "" if not found (a
 * private segment's memfd lives on the kernel's internal mount). */
static void mount_of(int fd, char *out, size_t cap, int *huge_ok)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[4096], mnt[1024], fstype[64], opts[1024];
    unsigned maj, min;
    struct stat st;
    const char *dash, *h;

    out[0] = '\0';
    *huge_ok = 0;
    if (f == NULL || fstat(fd, &st) != 0) {
        if (f != NULL)
            fclose(f);
        return;
    }
    /* The last match: a later mount over the same device hides earlier ones. */
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "%*u %*u %u:%u %*s %1023s", &maj, &min, mnt) != 3 ||
            maj != major(st.st_dev) || min != minor(st.st_dev) ||
            (dash = strstr(line, " - ")) == NULL ||
            sscanf(dash, " - %63s %*s %1023s", fstype, opts) != 2)
            continue;
        h = strstr(opts, "huge=");
        if (snprintf(out, cap, "%s %s huge=%.*s", fstype, mnt,
                     h ? (int)strcspn(h + 5, ",") : 5, h ? h + 5 : "never") >= (int)cap)
            out[cap - 1] = '\0';   /* a mount point too long to show whole */
        *huge_ok = strcmp(fstype, "hugetlbfs") == 0 ||
                   (h != NULL && (strncmp(h + 5, "within_size", 11) == 0 ||
                                  strncmp(h + 5, "always", 6) == 0));
    }
    fclose(f);
}

/* Why a writer's committed bytes are not all in 2 MiB pages, with the fix. */
static void why_small(const rbi_map_t *m, const rb_segment_huge_t *st, int huge_ok,
                      char *why, size_t cap)
{
    int e = m->collapse_err;
    const char *cause =
        e == EINVAL ? "the kernel refused to collapse them (MADV_COLLAPSE: EINVAL): "
                      "transparent huge pages are off for this process (prctl "
                      "PR_SET_THP_DISABLE) or the system (/sys/kernel/mm/transparent_hugepage/"
                      "shmem_enabled is \"deny\"), or the kernel is older than 6.1"
        : e == EAGAIN || e == ENOMEM ? "no free 2 MiB block of memory was left to "
                      "collapse them into (memory fragmented): "
                      "echo 1 > /proc/sys/vm/compact_memory, then restart the writer"
        : e != 0 ? strerror(e)
        : "the kernel maps them with small pages";
    char point[64] = "";
    int n = snprintf(why, cap, "%llu of %llu committed MiB are in 2 MiB pages: %s",
                     (unsigned long long)(st->huge_bytes >> 20),
                     (unsigned long long)(st->committed >> 20), cause);

    if (!huge_ok && sscanf(st->mount, "%*s %63s", point) == 1 && n > 0 && (size_t)n < cap &&
        snprintf(why + n, cap - (size_t)n, "; the mount (%s) allocates small pages itself: "
                 "mount -o remount,huge=within_size %s (and huge=within_size in its fstab "
                 "entry) makes it allocate 2 MiB pages", st->mount, point) >= (int)(cap - n))
        why[cap - 1] = '\0';   /* cut short: cap is far above the longest text */
}

int rb_segment_huge_status(const rb_segment_t *seg, rb_segment_huge_t *out)
{
    const rbi_map_t *m;
    int huge_ok;

    if (seg == NULL || out == NULL)
        return RB_EINVAL;
    memset(out, 0, sizeof(*out));
    m = rbi_seg_map(seg);
    out->requested = rbi_seg_huge(m);
    out->committed = rbi_seg_size(m);
    out->huge_bytes = pmd_bytes(m->base);
    mount_of(m->fd, out->mount, sizeof(out->mount), &huge_ok);
    /* Only the writer's mapping covers every committed 2 MiB (collapse maps
     * them); a reader's shows only what it has touched. */
    if (out->requested && seg->writable &&
        out->huge_bytes < out->committed - out->committed % RBI_HUGE_STEP)
        why_small(m, out, huge_ok, out->why, sizeof(out->why));
    if (out->mount[0] == '\0')
        snprintf(out->mount, sizeof(out->mount), "%s",
                 seg->instance[0] == '\0' ? "shmem (internal)" : "unknown");
    return RB_OK;
}
