/*
 * The allocator model's private parts, shared by replay/model*.c: its structs, the pool and
 * statistics helpers that the per-event path inlines, and the functions one file of the model
 * calls in another (ms__model_*). Nothing outside replay/model*.c includes it.
 */
#ifndef MEMSNAP_REPLAY_MODEL_INTERNAL_H
#define MEMSNAP_REPLAY_MODEL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "replay/model.h"

#define K_MIN_BLOCK   512ull
#define K_SMALL_SIZE  (1ull << 20)
#define K_SMALL_BUF   (2ull << 20)
#define K_MIN_LARGE   (10ull << 20)
#define K_ROUND_LARGE (2ull << 20)

struct mseg;
struct xseg;

struct ms_model_block {
	uint64_t addr, size, requested, stream;
	struct ms_model_block *prev, *next; /* neighbours in the segment, by address */
	struct mseg *seg;
	struct ms_model_block *l, *r, *up; /* pool treap: children and parent */
	uint32_t prio;
	uint64_t gc_base;
	uint8_t allocated; /* handed out, not yet free_requested */
	uint8_t pending;   /* free requested, not completed */
	uint8_t in_pool;
	uint8_t small;
	uint16_t pool;                    /* its pool's slot: 0 default, k > 0 m->priv[k - 1] */
	uint8_t mapped;                   /* always 1 outside expandable segments */
	struct xseg *xs;                  /* the expandable segment it lies in, or NULL */
	struct ms_model_block *free_next; /* recycling list */
	uint64_t tag_index;               /* the caller's: the trace event that allocated it */
	uint32_t tag_stack;               /* the caller's: its stack id */
};

/* An expandable segment: a reservation of address space mapped page by page (§4). */
struct xseg {
	uint64_t base, size, page, stream;
	uint8_t small;
	uint16_t pool;               /* slot, as a block's */
	struct ms_model_block *tail; /* import only: the unmapped block after the last range */
};

struct mseg {
	uint64_t addr, size, stream;
	uint8_t small;
};

struct pool {
	struct ms_model_block *root;     /* free mapped blocks by (stream, size, address) */
	struct ms_model_block *unmapped; /* unmapped expandable blocks by (stream, address) */
	uint64_t gc_clock;               /* get_free_blocks_call_count */
	int small;
	uint16_t slot; /* 0: the default pools; k > 0: m->priv[k - 1] */
};

/* A private pool (§14): its blocks serve only requests routed to it. */
struct ppool {
	struct pool small, large;
	uint8_t released;   /* its use count reached 0: empty_cache gives back its free segments */
	uint8_t no_split;   /* MemPool(no_split=True): its blocks are never split (§14.6) */
	uint8_t use_on_oom; /* MemPool(use_on_oom=True): the default pool's fallback (§14.6) */
	/* MemPool(allocator=...): its segments come whole from that allocator, never from
	 * expandable segments (§3 step 4) */
	uint8_t custom_allocator;
};

struct hint {
	uint64_t size, addr;
	int map; /* from a recorded segment_map: an expandable segment's mapping */
};

/* An address range in use: a segment, or an expandable segment's reservation. */
struct range {
	uint64_t addr, size;
	struct xseg *xs; /* the expandable segment reserving it, or NULL */
};

struct ms_model {
	struct ms_model_conf c;
	struct ms_model_stats st;
	struct pool small, large;
	struct ppool *priv;         /* private pools by slot - 1 */
	uint16_t *on_oom;           /* slots of the use_on_oom pools, in the order marked */
	uint32_t captures_underway; /* open use_mem_pool scopes and captures: no full flush */
	uint8_t refuse_free;        /* the driver refuses cudaFree now (ms_model_refuse_free) */
	uint8_t free_refused;       /* and did: the call that asked for it ends */
	size_t n_on_oom, cap_on_oom;
	/* per slot (0 = default): the pool's code and statistics; n_pools = 1 + private ones */
	struct ms_model_pool *pools;
	size_t n_pools, cap_priv, cap_pools;
	uint64_t reserved; /* total_allocated_memory: bytes obtained from the device */
	uint32_t rng;
	/* the lowest address and the highest end the model's segments have had: where no hint
	 * says, a segment gets space below them, as CUDA's driver hands out its virtual address
	 * space from the top down, or above them where no room is left below */
	uint64_t low_addr, high_end;
	struct hint *hints;
	size_t n_hints, hint_head, cap_hints;
	struct xseg **imported; /* expandable segments made by ms_model_import_segment */
	size_t n_imported, cap_imported;
	struct range *ranges; /* sorted by address, never overlapping */
	size_t n_ranges, cap_ranges;
	struct ms_model_block *spare_blocks; /* blocks to reuse, through free_next */
	void **slabs;
	size_t n_slabs, cap_slabs;
};

/* ---- statistics (update timing: §7) ------------------------------------------------ */

static inline void stat_add(struct ms_stat *s, int64_t v)
{
	if (v >= 0) {
		s->current += v;
		s->allocated += v;
		if (s->current > s->peak)
			s->peak = s->current;
	} else {
		s->current += v;
		s->freed -= v;
	}
}

/* all and the block's pool */
static inline void stat3(struct ms_stat *s, int small, int64_t v)
{
	stat_add(&s[MS_POOL_ALL], v);
	stat_add(&s[small ? MS_POOL_SMALL : MS_POOL_LARGE], v);
}

/* ---- memory for blocks and segments (model.c) ---------------------------------------- */

/* sz bytes that live as long as the model; NULL: out of memory */
void *ms__model_slab_alloc(struct ms_model *m, size_t sz);
/* a zeroed block, mapped, with its treap priority; NULL: out of memory */
struct ms_model_block *ms__model_blk_new(struct ms_model *m);
struct mseg *ms__model_seg_new(struct ms_model *m);

static inline void blk_release(struct ms_model *m, struct ms_model_block *b)
{
	b->free_next = m->spare_blocks;
	m->spare_blocks = b;
}

/* ---- pools: free blocks ordered by (stream, size, address) (§2.1; model.c) ----------- */

/* by_addr: the unmapped sets, ordered by (stream, address) only */
static inline int key_cmp_m(int by_addr, uint64_t s1, uint64_t z1, uint64_t a1,
                            const struct ms_model_block *b)
{
	if (s1 != b->stream)
		return s1 < b->stream ? -1 : 1;
	if (!by_addr && z1 != b->size)
		return z1 < b->size ? -1 : 1;
	if (a1 != b->addr)
		return a1 < b->addr ? -1 : 1;
	return 0;
}

static inline int key_cmp(uint64_t s1, uint64_t z1, uint64_t a1, const struct ms_model_block *b)
{
	return key_cmp_m(0, s1, z1, a1, b);
}

/* Insert b into the treap at root, or erase it; both return the new root. */
struct ms_model_block *ms__model_treap_insert(struct ms_model_block *root, struct ms_model_block *b,
                                              int by_addr);
struct ms_model_block *ms__model_treap_erase(struct ms_model_block *root, struct ms_model_block *b);
/* Put nb in old's place, old out of the treap; nb's key must sort where old's did. */
struct ms_model_block *ms__model_treap_replace(struct ms_model_block *root,
                                               struct ms_model_block *old,
                                               struct ms_model_block *nb);

/* The first block >= (stream, size, addr). */
static inline struct ms_model_block *lower_bound_m(int by_addr, struct ms_model_block *t,
                                                   uint64_t stream, uint64_t size, uint64_t addr)
{
	struct ms_model_block *best = NULL;

	while (t) {
		if (key_cmp_m(by_addr, stream, size, addr, t) <= 0) {
			best = t;
			t = t->l;
		} else {
			t = t->r;
		}
	}
	return best;
}

static inline struct ms_model_block *lower_bound(struct ms_model_block *t, uint64_t stream,
                                                 uint64_t size, uint64_t addr)
{
	return lower_bound_m(0, t, stream, size, addr);
}

static inline void pool_insert(struct pool *p, struct ms_model_block *b)
{
	b->l = b->r = NULL;
	b->in_pool = 1;
	p->root = ms__model_treap_insert(p->root, b, 0);
}

static inline void pool_remove(struct pool *p, struct ms_model_block *b)
{
	p->root = ms__model_treap_erase(p->root, b);
	b->l = b->r = NULL;
	b->in_pool = 0;
}

/* The unmapped sets use the same treap code with the size left out of the key. */
static inline void unmapped_insert(struct pool *p, struct ms_model_block *b)
{
	b->l = b->r = NULL;
	p->unmapped = ms__model_treap_insert(p->unmapped, b, 1);
}

static inline void unmapped_remove(struct pool *p, struct ms_model_block *b)
{
	p->unmapped = ms__model_treap_erase(p->unmapped, b);
	b->l = b->r = NULL;
}

static inline struct ms_model_block *unmapped_lower_bound(struct pool *p, uint64_t stream,
                                                          uint64_t addr)
{
	return lower_bound_m(1, p->unmapped, stream, 0, addr);
}

/* The slot of pool code (MS_POOL_UNKNOWN: the default's), created if new; -1: out of memory. */
int ms__model_pool_slot(struct ms_model *m, uint16_t code);

/* The small or large pool of a slot. */
static inline struct pool *pool_at(struct ms_model *m, uint16_t slot, int small)
{
	if (slot)
		return small ? &m->priv[slot - 1].small : &m->priv[slot - 1].large;
	return small ? &m->small : &m->large;
}

static inline struct pool *pool_of(struct ms_model *m, int small)
{
	return pool_at(m, 0, small);
}

/* The pool a block belongs to, and returns to when freed. */
static inline struct pool *blk_pool(struct ms_model *m, const struct ms_model_block *b)
{
	return pool_at(m, b->pool, b->small);
}

/* A slot's reserved and allocated bytes and segments, as the all-pool statistics move. */
static inline void pool_stat(struct ms_model *m, uint16_t slot, int64_t reserved, int64_t allocated,
                             int64_t segments)
{
	struct ms_model_pool *s = &m->pools[slot];

	if (reserved)
		stat_add(&s->reserved_bytes, reserved);
	if (allocated)
		stat_add(&s->allocated_bytes, allocated);
	if (segments)
		stat_add(&s->segment, segments);
}

/* try_merge_blocks: absorb b's free neighbour n; returns the bytes absorbed. */
uint64_t ms__model_try_merge(struct ms_model *m, struct pool *p, struct ms_model_block *b,
                             struct ms_model_block *n);

/* ---- blocks and segments ------------------------------------------------------------- */

static inline uint64_t max_split(const struct ms_model *m)
{
	return m->c.ac.max_split_size;
}

/* enum ms_block_state of a block */
static inline uint8_t block_state(const struct ms_model_block *b)
{
	return b->allocated ? MS_BLOCK_ACTIVE_ALLOCATED
	       : b->pending ? MS_BLOCK_ACTIVE_PENDING_FREE
	                    : MS_BLOCK_INACTIVE;
}

/*
 * Which segment (or expandable reservation) b lies in, for "once per segment" walks: its own
 * record where the block has one, so that visiting every block of a segment does not walk to
 * the segment's head each time (quadratic in its blocks). Records are tagged with bit 0 (they
 * are aligned, as are device addresses), so they cannot meet a head's address.
 */
static inline uint64_t segment_key(const struct ms_model_block *b)
{
	if (b->xs)
		return (uint64_t)(uintptr_t)b->xs | 1;
	if (b->seg)
		return (uint64_t)(uintptr_t)b->seg | 1;
	while (b->prev)
		b = b->prev;
	return b->addr & ~(uint64_t)1;
}

/* ---- address ranges in use (model.c) ------------------------------------------------- */

/* Index of the first range ending after addr. */
size_t ms__model_range_find(const struct ms_model *m, uint64_t addr);
int ms__model_range_is_free(const struct ms_model *m, uint64_t addr, uint64_t size);
/* 0, or -1: out of memory */
int ms__model_range_add(struct ms_model *m, uint64_t addr, uint64_t size, struct xseg *xs);
void ms__model_range_del(struct ms_model *m, uint64_t addr);
/* Unused address space for size bytes at a multiple of align, below every range the model
 * has held, else above them; 0 when there is none (the request is then out of memory). */
uint64_t ms__model_fresh_space(struct ms_model *m, uint64_t size, uint64_t align);

/* ---- expandable segments (§4; model_expandable.c) ------------------------------------ */

/* An expandable segment's page: what one mapping of the small or large pool adds. */
static inline uint64_t xs_page(const struct ms_model *m, int small)
{
	return small ? K_SMALL_BUF : m->c.ac.large_segment_size;
}

/*
 * try_allocate_expandable_block: map until a free block of size bytes exists on stream, and
 * take it out of the pool. NULL: the device is full, or out of memory (*nomem set).
 */
struct ms_model_block *ms__model_alloc_expandable(struct ms_model *m, struct pool *p,
                                                  uint64_t stream, uint64_t size, int *nomem);
/* unmap_block: give back the whole pages inside a free expandable block; 1 if it did. */
int ms__model_unmap_block(struct ms_model *m, struct pool *p, struct ms_model_block *b);

/* ---- what the model knew at an OOM (model_oom.c) ------------------------------------- */

void ms__model_fill_oom(const struct ms_model *m, uint64_t n, uint64_t size, uint64_t alloc_size,
                        uint64_t stream, struct ms_model_oom *oom);

#endif
