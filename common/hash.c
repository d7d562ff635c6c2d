/* Keyed hashing (SipHash), an id set for interning and a u64 -> u64 map (linear probing). */
#include "common/hash.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/bytes.h"

static _Atomic uint64_t g_seed;

static uint64_t draw_seed(void)
{
	uint64_t s = 0;
	struct timespec ts;

	if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != (ssize_t)sizeof(s)) {
		/* no entropy yet (early boot) or no syscall: time, pid and addresses (ASLR) */
		clock_gettime(CLOCK_REALTIME, &ts);
		s = ms_hash_u64((uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^
		                (uint64_t)getpid() << 48 ^ (uint64_t)(uintptr_t)&ts ^
		                (uint64_t)(uintptr_t)&g_seed);
	}
	return s ? s : 1;
}

uint64_t ms_hash_seed(void)
{
	uint64_t s = atomic_load_explicit(&g_seed, memory_order_relaxed), expected = 0;

	if (s)
		return s;
	/* the first one published wins: every table of the process hashes alike */
	s = draw_seed();
	if (!atomic_compare_exchange_strong(&g_seed, &expected, s))
		s = expected;
	return s;
}

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                          \
	do {                                                              \
		v0 += v1, v1 = ROTL(v1, 13), v1 ^= v0, v0 = ROTL(v0, 32); \
		v2 += v3, v3 = ROTL(v3, 16), v3 ^= v2;                    \
		v0 += v3, v3 = ROTL(v3, 21), v3 ^= v0;                    \
		v2 += v1, v1 = ROTL(v1, 17), v1 ^= v2, v2 = ROTL(v2, 32); \
	} while (0)

static inline uint64_t siphash(uint64_t k0, uint64_t k1, int c, int d, const unsigned char *p,
                               size_t n)
{
	uint64_t v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
	uint64_t v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
	uint64_t m = (uint64_t)n << 56;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w = ms_load_le64(p + i);
		v3 ^= w;
		for (int r = 0; r < c; r++)
			SIPROUND;
		v0 ^= w;
	}
	/* the last 0 to 7 bytes, the length's low byte on top */
	for (size_t j = 0; i + j < n; j++)
		m |= (uint64_t)p[i + j] << (8 * j);
	v3 ^= m;
	for (int r = 0; r < c; r++)
		SIPROUND;
	v0 ^= m;
	v2 ^= 0xff;
	for (int r = 0; r < d; r++)
		SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t ms__siphash(uint64_t k0, uint64_t k1, int c, int d, const void *p, size_t n)
{
	return siphash(k0, k1, c, d, p, n);
}

uint64_t ms_hash_bytes(const void *p, size_t n)
{
	uint64_t k0 = ms_hash_seed();

	return siphash(k0, ms_hash_u64(k0 ^ 0x9e3779b97f4a7c15ULL), 1, 3, p, n);
}

/* A key's home slot in a u64map: the mix of the key and the process's secret. */
static inline size_t u64_home(uint64_t key, size_t mask)
{
	return ms_hash_u64(key ^ ms_hash_seed()) & mask;
}

uint32_t ms_idset_find(const struct ms_idset *s, uint32_t h, ms_idset_eq_fn eq, const void *ctx,
                       const void *key)
{
	size_t mask, i;

	if (!s->cap)
		return 0;
	mask = s->cap - 1;
	for (i = h & mask;; i = (i + 1) & mask) {
		uint32_t id = s->slots[i];
		if (!id)
			return 0;
		if (s->hashes[i] == h && eq(ctx, id, key))
			return id;
	}
}

static void idset_put(uint32_t *slots, uint32_t *hashes, size_t cap, uint32_t h, uint32_t id)
{
	size_t mask = cap - 1, i;

	for (i = h & mask; slots[i]; i = (i + 1) & mask)
		;
	slots[i] = id;
	hashes[i] = h;
}

ms_status ms_idset_insert(struct ms_idset *s, uint32_t h, uint32_t id)
{
	if ((s->n + 1) * 4 > s->cap * 3) {
		size_t ncap = s->cap ? s->cap * 2 : 64, i;
		uint32_t *ns = ms_calloc(ncap, sizeof(uint32_t));
		uint32_t *nh = ms_calloc(ncap, sizeof(uint32_t));
		if (!ns || !nh) {
			ms_free(ns);
			ms_free(nh);
			return MS_ERR_NOMEM;
		}
		for (i = 0; i < s->cap; i++)
			if (s->slots[i])
				idset_put(ns, nh, ncap, s->hashes[i], s->slots[i]);
		ms_free(s->slots);
		ms_free(s->hashes);
		s->slots = ns;
		s->hashes = nh;
		s->cap = ncap;
	}
	idset_put(s->slots, s->hashes, s->cap, h, id);
	s->n++;
	return MS_OK;
}

void ms_idset_release(struct ms_idset *s)
{
	ms_free(s->slots);
	ms_free(s->hashes);
	memset(s, 0, sizeof(*s));
}

uint64_t *ms_u64map_get(const struct ms_u64map *m, uint64_t key)
{
	size_t mask, i;

	if (!m->cap)
		return NULL;
	mask = m->cap - 1;
	for (i = u64_home(key, mask);; i = (i + 1) & mask) {
		if (!m->keys[i])
			return NULL;
		if (m->keys[i] == key + 1)
			return &m->vals[i];
	}
}

static void u64_put(uint64_t *keys, uint64_t *vals, size_t cap, uint64_t k1, uint64_t v)
{
	size_t mask = cap - 1, i;

	for (i = u64_home(k1 - 1, mask); keys[i] && keys[i] != k1; i = (i + 1) & mask)
		;
	keys[i] = k1;
	vals[i] = v;
}

/* Double the table (half full at most: a miss probes 2.5 slots on average, not 8.5 at 3/4). */
static ms_status u64_grow(struct ms_u64map *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 64;
	uint64_t *nk = ms_calloc(ncap, sizeof(uint64_t));
	uint64_t *nv = ms_malloc(ncap * sizeof(uint64_t));

	if (!nk || !nv) {
		ms_free(nk);
		ms_free(nv);
		return MS_ERR_NOMEM;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i])
			u64_put(nk, nv, ncap, m->keys[i], m->vals[i]);
	ms_free(m->keys);
	ms_free(m->vals);
	m->keys = nk;
	m->vals = nv;
	m->cap = ncap;
	return MS_OK;
}

ms_status ms_u64map_put(struct ms_u64map *m, uint64_t key, uint64_t val)
{
	size_t mask, i;

	if (key == UINT64_MAX)
		return MS_ERR_INVALID_ARG;
	if ((m->n + 1) * 2 > m->cap && u64_grow(m))
		return MS_ERR_NOMEM;
	/* one walk: the key's slot, or the empty one that ends its chain */
	mask = m->cap - 1;
	for (i = u64_home(key, mask); m->keys[i]; i = (i + 1) & mask)
		if (m->keys[i] == key + 1) {
			m->vals[i] = val;
			return MS_OK;
		}
	m->keys[i] = key + 1;
	m->vals[i] = val;
	m->n++;
	return MS_OK;
}

/* put's walk again, saying what was there: put stays apart, on the replay's hot path (through
 * swap it cost the replay of a 625k-event trace 8%) */
ms_status ms_u64map_swap(struct ms_u64map *m, uint64_t key, uint64_t val, int *had, uint64_t *old)
{
	size_t mask, i;

	*had = 0;
	if (key == UINT64_MAX)
		return MS_ERR_INVALID_ARG;
	if ((m->n + 1) * 2 > m->cap && u64_grow(m))
		return MS_ERR_NOMEM;
	mask = m->cap - 1;
	for (i = u64_home(key, mask); m->keys[i]; i = (i + 1) & mask)
		if (m->keys[i] == key + 1) {
			*had = 1;
			*old = m->vals[i];
			m->vals[i] = val;
			return MS_OK;
		}
	m->keys[i] = key + 1;
	m->vals[i] = val;
	m->n++;
	return MS_OK;
}

int ms_u64map_del(struct ms_u64map *m, uint64_t key, uint64_t *val)
{
	size_t mask, i, j;

	if (!m->cap)
		return 0;
	mask = m->cap - 1;
	for (i = u64_home(key, mask);; i = (i + 1) & mask) {
		if (!m->keys[i])
			return 0;
		if (m->keys[i] == key + 1)
			break;
	}
	if (val)
		*val = m->vals[i];
	/* backward-shift deletion keeps probe chains intact without tombstones */
	for (j = i;;) {
		size_t home;
		j = (j + 1) & mask;
		if (!m->keys[j])
			break;
		home = u64_home(m->keys[j] - 1, mask);
		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->keys[i] = 0;
	m->n--;
	return 1;
}

void ms_u64map_clear(struct ms_u64map *m)
{
	if (m->cap)
		memset(m->keys, 0, m->cap * sizeof(*m->keys));
	m->n = 0;
}

void ms_u64map_release(struct ms_u64map *m)
{
	ms_free(m->keys);
	ms_free(m->vals);
	memset(m, 0, sizeof(*m));
}

static size_t longest_run(const void *slots, size_t elem, size_t cap)
{
	const unsigned char *b = slots;
	size_t best = 0, run = 0;

	/* twice round: a run may wrap from the end to the start */
	for (size_t i = 0; i < 2 * cap; i++) {
		const unsigned char *e = b + (i % cap) * elem;
		int used = 0;
		for (size_t k = 0; k < elem; k++)
			used |= e[k];
		run = used ? run + 1 : 0;
		if (run > best)
			best = run;
	}
	return best > cap ? cap : best;
}

size_t ms__idset_longest_run(const struct ms_idset *s)
{
	return s->cap ? longest_run(s->slots, sizeof(*s->slots), s->cap) : 0;
}

size_t ms__u64map_longest_run(const struct ms_u64map *m)
{
	return m->cap ? longest_run(m->keys, sizeof(*m->keys), m->cap) : 0;
}
