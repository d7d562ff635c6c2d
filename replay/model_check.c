/* The allocator model's invariant checker, for tests and fuzzing (model.h: ms_model_check). */
#include "replay/model_internal.h"

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/hash.h"

struct chk {
	const struct ms_model *m;
	struct ms_u64map seen; /* segment heads visited */
	uint64_t reserved, allocated, active, requested, segments;
	uint64_t *pool_reserved, *pool_allocated; /* by slot */
	char *why;
	size_t cap;
	int bad;
};

#define CHK(c, cond, ...)                                          \
	do {                                                       \
		if (!(c)->bad && !(cond)) {                        \
			snprintf((c)->why, (c)->cap, __VA_ARGS__); \
			(c)->bad = 1;                              \
		}                                                  \
	} while (0)

/* Walk the segment b lies in, once. */
static void check_segment(struct chk *c, const struct ms_model_block *b)
{
	const struct ms_model_block *h = b, *q;
	uint64_t total = 0, key = segment_key(b);

	if (ms_u64map_get(&c->seen, key))
		return;
	while (h->prev)
		h = h->prev;
	if (ms_u64map_put(&c->seen, key, 1)) {
		CHK(c, 0, "out of memory");
		return;
	}
	if (!h->xs)
		c->segments++;
	CHK(c, h->pool < c->m->n_pools, "block 0x%llx in pool slot %u of %zu",
	    (unsigned long long)h->addr, h->pool, c->m->n_pools);
	if (c->bad)
		return;
	for (q = h; q; q = q->next) {
		CHK(c, !q->next || q->next->prev == q, "broken links at 0x%llx",
		    (unsigned long long)q->addr);
		CHK(c, !q->next || q->next->addr == q->addr + q->size,
		    "gap or overlap after 0x%llx", (unsigned long long)q->addr);
		CHK(c,
		    q->stream == h->stream && q->small == h->small && q->xs == h->xs &&
		            q->pool == h->pool,
		    "mixed segment at 0x%llx", (unsigned long long)q->addr);
		CHK(c, segment_key(q) == key, "block 0x%llx outside its segment's record",
		    (unsigned long long)q->addr);
		CHK(c, q->size > 0 && q->size % K_MIN_BLOCK == 0, "block size %llu",
		    (unsigned long long)q->size);
		CHK(c, q->mapped || q->xs, "unmapped block outside an expandable segment");
		CHK(c, !(q->allocated && q->pending), "allocated and pending at once");
		if (q->mapped && !q->allocated && !q->pending) {
			CHK(c, q->in_pool, "free block 0x%llx not in its pool",
			    (unsigned long long)q->addr);
			CHK(c,
			    !q->next || q->next->allocated || q->next->pending || !q->next->mapped,
			    "free neighbours left unmerged at 0x%llx", (unsigned long long)q->addr);
		} else {
			CHK(c, !q->in_pool, "busy block 0x%llx in a pool",
			    (unsigned long long)q->addr);
		}
		if (q->allocated) {
			c->allocated += q->size;
			c->pool_allocated[h->pool] += q->size;
		}
		if (q->allocated || q->pending) {
			c->active += q->size;
			c->requested += q->requested;
		}
		if (q->mapped) {
			c->reserved += q->size;
			c->pool_reserved[h->pool] += q->size;
		}
		total += q->size;
	}
	if (h->xs)
		CHK(c, total == h->xs->size, "expandable segment tiles %llu of %llu bytes",
		    (unsigned long long)total, (unsigned long long)h->xs->size);
	else
		CHK(c, total == h->seg->size && h->addr == h->seg->addr,
		    "segment 0x%llx tiles %llu of %llu bytes", (unsigned long long)h->addr,
		    (unsigned long long)total, (unsigned long long)h->seg->size);
}

static void check_tree(struct chk *c, const struct pool *p, const struct ms_model_block *t,
                       int unmapped)
{
	if (!t || c->bad)
		return;
	CHK(c, unmapped ? !t->mapped : (t->mapped && t->in_pool), "wrong set for 0x%llx",
	    (unsigned long long)t->addr);
	CHK(c, t->pool == p->slot && t->small == p->small, "block 0x%llx in another pool's set",
	    (unsigned long long)t->addr);
	check_segment(c, t);
	check_tree(c, p, t->l, unmapped);
	check_tree(c, p, t->r, unmapped);
}

int ms_model_check(const struct ms_model *m, struct ms_model_block *const *held, size_t n_held,
                   char *why, size_t cap)
{
	struct chk c;
	const struct ms_model_stats *st = &m->st;

	memset(&c, 0, sizeof(c));
	c.m = m;
	c.why = why;
	c.cap = cap;
	c.pool_reserved = ms_calloc(m->n_pools, sizeof(uint64_t));
	c.pool_allocated = ms_calloc(m->n_pools, sizeof(uint64_t));
	CHK(&c, c.pool_reserved && c.pool_allocated, "out of memory");
	for (size_t k = 0; k < m->n_pools * 2; k++) {
		const struct pool *p =
		        pool_at((struct ms_model *)m, (uint16_t)(k / 2), (int)(k & 1));
		check_tree(&c, p, p->root, 0);
		check_tree(&c, p, p->unmapped, 1);
	}
	for (size_t i = 0; i < n_held; i++) {
		CHK(&c, held[i]->allocated || held[i]->pending, "a held block is free");
		check_segment(&c, held[i]);
	}
	CHK(&c, c.reserved == m->reserved, "reserved %llu, blocks say %llu",
	    (unsigned long long)m->reserved, (unsigned long long)c.reserved);
	CHK(&c, (uint64_t)st->reserved_bytes[0].current == c.reserved, "reserved_bytes stat");
	CHK(&c, (uint64_t)st->allocated_bytes[0].current == c.allocated,
	    "allocated_bytes %lld, blocks say %llu", (long long)st->allocated_bytes[0].current,
	    (unsigned long long)c.allocated);
	CHK(&c, (uint64_t)st->active_bytes[0].current == c.active, "active_bytes stat");
	CHK(&c, (uint64_t)st->requested_bytes[0].current == c.requested, "requested_bytes stat");
	CHK(&c, (uint64_t)st->segment[0].current == c.segments, "segment stat");
	for (int k = 1; k < 3; k++)
		CHK(&c,
		    st->reserved_bytes[0].current ==
		            st->reserved_bytes[MS_POOL_SMALL].current +
		                    st->reserved_bytes[MS_POOL_LARGE].current,
		    "pool stats do not add up");
	/* PyTorch checks the limit against alloc_size, and expandable segments then map whole
	 * pages, which can end above it (§3.1): the limit only binds without them */
	CHK(&c,
	    m->c.ac.expandable_segments || m->reserved <= (m->c.limit ? m->c.limit : UINT64_MAX),
	    "over the limit");
	for (size_t k = 0; !c.bad && k < m->n_pools; k++) {
		CHK(&c, (uint64_t)m->pools[k].reserved_bytes.current == c.pool_reserved[k],
		    "pool slot %zu: reserved %lld, blocks say %llu", k,
		    (long long)m->pools[k].reserved_bytes.current,
		    (unsigned long long)c.pool_reserved[k]);
		CHK(&c, (uint64_t)m->pools[k].allocated_bytes.current == c.pool_allocated[k],
		    "pool slot %zu: allocated %lld, blocks say %llu", k,
		    (long long)m->pools[k].allocated_bytes.current,
		    (unsigned long long)c.pool_allocated[k]);
	}
	ms_free(c.pool_reserved);
	ms_free(c.pool_allocated);
	ms_u64map_release(&c.seen);
	return c.bad ? -1 : 0;
}
