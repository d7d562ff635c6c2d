/* FNV-style byte hash, an id set for interning and a u64 -> u64 map (linear probing). */
#include "common/hash.h"

#include <string.h>

#include "common/alloc.h"

uint64_t ms_hash_bytes(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ULL ^ seed;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, s + i, 8);
		h = (h ^ w) * 0x100000001b3ULL;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ULL;
	return ms_hash_u64(h ^ n);
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
	for (i = ms_hash_u64(key) & mask;; i = (i + 1) & mask) {
		if (!m->keys[i])
			return NULL;
		if (m->keys[i] == key + 1)
			return &m->vals[i];
	}
}

static void u64_put(uint64_t *keys, uint64_t *vals, size_t cap, uint64_t k1, uint64_t v)
{
	size_t mask = cap - 1, i;

	for (i = ms_hash_u64(k1 - 1) & mask; keys[i] && keys[i] != k1; i = (i + 1) & mask)
		;
	keys[i] = k1;
	vals[i] = v;
}

ms_status ms_u64map_put(struct ms_u64map *m, uint64_t key, uint64_t val)
{
	uint64_t *v = ms_u64map_get(m, key);

	if (v) {
		*v = val;
		return MS_OK;
	}
	if (key == UINT64_MAX)
		return MS_ERR_INVALID_ARG;
	if ((m->n + 1) * 4 > m->cap * 3) {
		size_t ncap = m->cap ? m->cap * 2 : 64, i;
		uint64_t *nk = ms_calloc(ncap, sizeof(uint64_t));
		uint64_t *nv = ms_malloc(ncap * sizeof(uint64_t));
		if (!nk || !nv) {
			ms_free(nk);
			ms_free(nv);
			return MS_ERR_NOMEM;
		}
		for (i = 0; i < m->cap; i++)
			if (m->keys[i])
				u64_put(nk, nv, ncap, m->keys[i], m->vals[i]);
		ms_free(m->keys);
		ms_free(m->vals);
		m->keys = nk;
		m->vals = nv;
		m->cap = ncap;
	}
	u64_put(m->keys, m->vals, m->cap, key + 1, val);
	m->n++;
	return MS_OK;
}

int ms_u64map_del(struct ms_u64map *m, uint64_t key, uint64_t *val)
{
	size_t mask, i, j;

	if (!m->cap)
		return 0;
	mask = m->cap - 1;
	for (i = ms_hash_u64(key) & mask;; i = (i + 1) & mask) {
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
		home = ms_hash_u64(m->keys[j] - 1) & mask;
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
