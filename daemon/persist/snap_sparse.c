/*
 * snap_sparse.c - a snapshot's dump as a sparse file (snapshot.c writes,
 * rbd_snapshot_load reads): the bytes are the dump's, but the holes of
 * the dump (free heap pages, rb_segment_snap_dump_sparse) are not written:
 * the file skips them (lseek) and reads them back as zeros.  Pages of
 * zeros inside the live data are written all the same: the restore reads
 * the live data through a mapping of the file, and a read fault on a hole
 * of a file on tmpfs allocates a page there (SIGBUS when it is full:
 * check_faults' full disk restart), so the restore must find no hole
 * where it reads; it never reads a free page.  The checksum is XXH3-64 over the
 * logical dump, holes hashed as zeros, so a sparse snapshot is the same
 * file, format and checksum as one written whole, and either loads.
 *
 * Reading hashes the data ranges SEEK_DATA / SEEK_HOLE find from the
 * mapping and the holes as zeros without touching the mapping there (a
 * read fault on a hole would fill the page cache with zeros); a file
 * system without SEEK_DATA has no holes to find: it is hashed whole.
 */
#include "config.h"

#include <errno.h>
#include <unistd.h>
#include <xxhash.h>

#include "bytes.h"
#include "snapshot.h"

static const unsigned char zeros[1u << 16];

static void hash_zeros(XXH3_state_t *xx, uint64_t n)
{
    while (n > 0) {
        size_t k = n < sizeof(zeros) ? (size_t)n : sizeof(zeros);
        XXH3_64bits_update(xx, zeros, k);
        n -= k;
    }
}

/* Leaves n bytes of the file to read as zeros. */
static int skip(rbd_sparse_t *d, uint64_t n)
{
    if (lseek(d->fd, (off_t)n, SEEK_CUR) < 0)
        return -1;
    d->skipped += n;
    return 0;
}

int rbd_sparse_data(const void *data, size_t len, void *arg)
{
    rbd_sparse_t *d = arg;

    d->len += len;
    XXH3_64bits_update(d->xx, data, len);
    return rbd_write_all(d->fd, data, len);
}

int rbd_sparse_hole(uint64_t len, void *arg)
{
    rbd_sparse_t *d = arg;

    d->len += len;
    d->holes += len;
    hash_zeros(d->xx, len);
    return skip(d, len);
}

int rbd_sparse_finish(rbd_sparse_t *d)
{
    off_t end = lseek(d->fd, 0, SEEK_CUR);

    /* A dump that ends in a hole: the file's length is still the dump's. */
    return end < 0 ? -1 : ftruncate(d->fd, end);
}

uint64_t rbd_sparse_hash(int fd, const unsigned char *file, uint64_t off, uint64_t len,
                         uint64_t *read)
{
    XXH3_state_t *xx = XXH3_createState();
    uint64_t pos = off, end = off + len, h;

    *read = len;
    if (xx == NULL || XXH3_64bits_reset(xx) != XXH_OK) {
        XXH3_freeState(xx);
        return XXH3_64bits(file + off, len);
    }
    *read = 0;
    while (pos < end) {
        off_t data = fd >= 0 ? lseek(fd, (off_t)pos, SEEK_DATA) : (off_t)pos;
        off_t hole;
        if (data < 0 && errno == ENXIO)
            data = (off_t)end;   /* only a hole from here */
        else if (data < 0)
            data = (off_t)pos;   /* no SEEK_DATA: data */
        if ((uint64_t)data > end)
            data = (off_t)end;
        hash_zeros(xx, (uint64_t)data - pos);
        pos = (uint64_t)data;
        if (pos >= end)
            break;
        hole = fd >= 0 ? lseek(fd, (off_t)pos, SEEK_HOLE) : (off_t)end;
        if (hole < 0 || (uint64_t)hole > end || (uint64_t)hole <= pos)
            hole = (off_t)end;
        XXH3_64bits_update(xx, file + pos, (size_t)((uint64_t)hole - pos));
        *read += (uint64_t)hole - pos;
        pos = (uint64_t)hole;
    }
    h = XXH3_64bits_digest(xx);
    XXH3_freeState(xx);
    return h;
}
