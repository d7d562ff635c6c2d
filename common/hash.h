/*
 * Hashing and two small open-addressing tables:
 * - struct ms_idset: a set of dense ids (1..n) found by hash with a caller's
 *   equality test; the interning tables of symtab.c use it;
 * - struct ms_u64map: uint64 -> uint64 with deletion (backward shift), for
 *   live allocations keyed by address.
 * The keys come from input files, which may be made to collide: both hashes
 * are keyed by a random secret drawn once per process (ms_hash_seed), so that
 * no file can pile its strings or addresses into one probe run (quadratic time).
 */
#ifndef MEMSNAP_COMMON_HASH_H
#define MEMSNAP_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "memsnap/memsnap.h"

/* SipHash-1-3 of p[0..n) under the process's secret (as CPython and Rust hash strings). */
uint64_t ms_hash_bytes(const void *p, size_t n);
/* The process's random secret, never 0: drawn (getrandom) by the first call of any thread. */
uint64_t ms_hash_seed(void);
/* SipHash-c-d under key (k0, k1): for tests against the reference vectors. */
uint64_t ms__siphash(uint64_t k0, uint64_t k1, int c, int d, const void *p, size_t n);

/* A 64-bit mix (MurmurHash3's finaliser); not keyed: for values that are not input. */
static inline uint64_t ms_hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

struct ms_idset {
	uint32_t *slots; /* 0 = empty, else id */
	uint32_t *hashes;
	size_t cap, n;
};
#define MS_IDSET_INIT            \
	{                        \
		NULL, NULL, 0, 0 \
	}

/* Equality test: does id match the key being looked up? */
typedef int (*ms_idset_eq_fn)(const void *ctx, uint32_t id, const void *key);

/* The id matching key (hash h), or 0. */
uint32_t ms_idset_find(const struct ms_idset *s, uint32_t h, ms_idset_eq_fn eq, const void *ctx,
                       const void *key);
/* Insert id with hash h (caller checked it is absent). */
ms_status ms_idset_insert(struct ms_idset *s, uint32_t h, uint32_t id);
void ms_idset_release(struct ms_idset *s);

struct ms_u64map {
	uint64_t *keys; /* key + 1 (0 = empty), so key UINT64_MAX is not storable */
	uint64_t *vals;
	size_t cap, n;
};
#define MS_U64MAP_INIT           \
	{                        \
		NULL, NULL, 0, 0 \
	}

/* Pointer to the value of key, or NULL. Valid until the next insert. */
uint64_t *ms_u64map_get(const struct ms_u64map *m, uint64_t key);
/* Insert or overwrite. */
ms_status ms_u64map_put(struct ms_u64map *m, uint64_t key, uint64_t val);
/* Insert or overwrite in one walk; *had: whether key was there, *old its value then. */
ms_status ms_u64map_swap(struct ms_u64map *m, uint64_t key, uint64_t val, int *had, uint64_t *old);
/* Remove key; returns 1 if it was present (and its value in *val when val). */
int ms_u64map_del(struct ms_u64map *m, uint64_t key, uint64_t *val);
/* Remove every key, keeping the storage. */
void ms_u64map_clear(struct ms_u64map *m);
void ms_u64map_release(struct ms_u64map *m);

/* Tests: the longest run of occupied slots (the worst probe), to show keys spread out. */
size_t ms__idset_longest_run(const struct ms_idset *s);
size_t ms__u64map_longest_run(const struct ms_u64map *m);

#endif
