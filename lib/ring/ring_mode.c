/*
 * ring_mode.c - the table of ring modes, by their rb_ring_mode_t value
 * (ring_mode.h says what an entry holds), and the modes' names.
 */
#include "config.h"

#include <strings.h>

#include "ring_mode.h"

static const rbi_ring_mode_ops_t *const modes[] = {
    [RB_RING_XXH3] = &rbi_ring_mode_xxh3,
    [RB_RING_KETAMA] = &rbi_ring_mode_ketama,
    [RB_RING_NGINX] = &rbi_ring_mode_nginx,
    [RB_RING_SEED] = &rbi_ring_mode_seed,
    [RB_RING_MAGLEV] = &rbi_ring_mode_maglev,
    [RB_RING_SLOTS] = &rbi_ring_mode_slots,
};

#define NMODES (sizeof(modes) / sizeof(modes[0]))

const rbi_ring_mode_ops_t *rbi_ring_mode_ops(uint64_t mode)
{
    return mode < NMODES ? modes[mode] : NULL;
}

const char *rb_ring_mode_name(rb_ring_mode_t mode)
{
    const rbi_ring_mode_ops_t *ops = rbi_ring_mode_ops((uint64_t)mode);

    return ops != NULL ? ops->name : "unknown";
}

int rb_ring_mode_parse(const char *s, size_t len, rb_ring_mode_t *out)
{
    for (size_t i = 0; s != NULL && i < NMODES; i++) {
        if (modes[i] != NULL && strlen(modes[i]->name) == len &&
            strncasecmp(modes[i]->name, s, len) == 0) {
            *out = (rb_ring_mode_t)i;
            return RB_OK;
        }
    }
    return RB_EINVAL;
}
