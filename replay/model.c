/*
 * A model of PyTorch's CUDA caching allocator (2.11, native backend) over a simulated device.
 * Rules and their sources: docs/torch-allocator.md §1-7 (expandable segments: §4).
 */
#include "replay/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/hash.h"
#include "common/status.h"

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
	uint64_t reserved; /* total_allocated_memory: bytes obtained from the device */
	uint32_t rng;
	uint64_t next_addr; /* simulated address space: segments without a hint */
	struct hint *hints;
	size_t n_hints, hint_head, cap_hints;
	struct xseg **imported; /* expandable segments made by ms_model_import_segment */
	size_t n_imported, cap_imported;
	struct range *ranges; /* sorted by address, never overlapping */
	size_t n_ranges, cap_ranges;
	struct ms_model_block *spare_blocks;
	struct mseg *spare_segs; /* reused through a cast of the first word (see seg_free) */
	void **slabs;
	size_t n_slabs, cap_slabs;
};

/* ---- statistics (update timing: §7) ------------------------------------------------ */

static void stat_add(struct ms_stat *s, int64_t v)
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
static void stat3(struct ms_stat *s, int small, int64_t v)
{
	stat_add(&s[MS_POOL_ALL], v);
	stat_add(&s[small ? MS_POOL_SMALL : MS_POOL_LARGE], v);
}

/* ---- memory for blocks and segments -------------------------------------------------- */

static void *slab_alloc(struct ms_model *m, size_t sz)
{
	void *p = ms_malloc(sz);

	if (!p)
		return NULL;
	if (ms_grow(&m->slabs, &m->cap_slabs, m->n_slabs + 1, sizeof(void *))) {
		ms_free(p);
		return NULL;
	}
	m->slabs[m->n_slabs++] = p;
	return p;
}

static struct ms_model_block *blk_new(struct ms_model *m)
{
	struct ms_model_block *b = m->spare_blocks;

	if (b) {
		m->spare_blocks = b->free_next;
	} else {
		/* 256 at a time */
		struct ms_model_block *s = slab_alloc(m, 256 * sizeof(*s));
		if (!s)
			return NULL;
		for (int i = 1; i < 255; i++)
			s[i].free_next = &s[i + 1];
		s[255].free_next = NULL;
		m->spare_blocks = &s[1];
		b = &s[0];
	}
	memset(b, 0, sizeof(*b));
	b->mapped = 1;
	m->rng ^= m->rng << 13;
	m->rng ^= m->rng >> 17;
	m->rng ^= m->rng << 5;
	b->prio = m->rng;
	return b;
}

static void blk_release(struct ms_model *m, struct ms_model_block *b)
{
	b->free_next = m->spare_blocks;
	m->spare_blocks = b;
}

static struct mseg *seg_new(struct ms_model *m)
{
	struct mseg *s = slab_alloc(m, sizeof(*s));

	if (s)
		memset(s, 0, sizeof(*s));
	return s;
}

/* ---- pools: free blocks ordered by (stream, size, address) (§2.1) -------------------- */

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

/* Rotations keep the parent pointers; the caller stores the returned node in t's old link. */
static struct ms_model_block *rot_right(struct ms_model_block *t)
{
	struct ms_model_block *l = t->l;

	t->l = l->r;
	if (l->r)
		l->r->up = t;
	l->r = t;
	l->up = t->up;
	t->up = l;
	return l;
}

static struct ms_model_block *rot_left(struct ms_model_block *t)
{
	struct ms_model_block *r = t->r;

	t->r = r->l;
	if (r->l)
		r->l->up = t;
	r->l = t;
	r->up = t->up;
	t->up = r;
	return r;
}

/* The link that points at b: its parent's child pointer, or the root. */
static struct ms_model_block **link_to(struct ms_model_block **root, struct ms_model_block *b)
{
	if (!b->up)
		return root;
	return b->up->l == b ? &b->up->l : &b->up->r;
}

/*
 * Iterative treap with parent pointers: insert goes down to a leaf and rotates up while its
 * priority beats the parent's; erase needs no search (a recursive, parentless version spent
 * most of the replay's time in calls and in walks to find the node again).
 */
static struct ms_model_block *treap_insert(struct ms_model_block *root, struct ms_model_block *b,
                                           int by_addr)
{
	struct ms_model_block **link = &root, *parent = NULL;

	while (*link) {
		parent = *link;
		link = key_cmp_m(by_addr, b->stream, b->size, b->addr, parent) < 0 ? &parent->l
		                                                                   : &parent->r;
	}
	b->l = b->r = NULL;
	b->up = parent;
	*link = b;
	while (b->up && b->up->prio < b->prio) {
		struct ms_model_block *p = b->up, **pl = link_to(&root, p);
		*pl = p->l == b ? rot_right(p) : rot_left(p);
	}
	return root;
}

/* Erase: rotate b down to a leaf, unlink it. */
static struct ms_model_block *treap_erase(struct ms_model_block *root, struct ms_model_block *b,
                                          int by_addr)
{
	struct ms_model_block **link;

	(void)by_addr;
	link = link_to(&root, b);
	if (*link != b)
		MS_BUG("block 0x%llx not in its pool", (unsigned long long)b->addr);
	while (b->l && b->r) {
		if (b->l->prio > b->r->prio) {
			*link = rot_right(b);
			link = &(*link)->r;
		} else {
			*link = rot_left(b);
			link = &(*link)->l;
		}
	}
	*link = b->l ? b->l : b->r;
	if (*link)
		(*link)->up = b->up;
	b->up = NULL;
	return root;
}

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

static struct ms_model_block *lower_bound(struct ms_model_block *t, uint64_t stream, uint64_t size,
                                          uint64_t addr)
{
	return lower_bound_m(0, t, stream, size, addr);
}

static void pool_insert(struct pool *p, struct ms_model_block *b)
{
	b->l = b->r = NULL;
	b->in_pool = 1;
	p->root = treap_insert(p->root, b, 0);
}

static void pool_remove(struct pool *p, struct ms_model_block *b)
{
	p->root = treap_erase(p->root, b, 0);
	b->l = b->r = NULL;
	b->in_pool = 0;
}

/*
 * The unmapped sets use the same treap code with the size left out of the key.
 */
static void unmapped_insert(struct pool *p, struct ms_model_block *b)
{
	b->l = b->r = NULL;
	p->unmapped = treap_insert(p->unmapped, b, 1);
}

static void unmapped_remove(struct pool *p, struct ms_model_block *b)
{
	p->unmapped = treap_erase(p->unmapped, b, 1);
	b->l = b->r = NULL;
}

static struct ms_model_block *unmapped_lower_bound(struct pool *p, uint64_t stream, uint64_t addr)
{
	return lower_bound_m(1, p->unmapped, stream, 0, addr);
}

static struct pool *pool_of(struct ms_model *m, int small)
{
	return small ? &m->small : &m->large;
}

/* ---- sizes (§1) --------------------------------------------------------------------- */

static int floor_log2(uint64_t v)
{
#if defined(__GNUC__)
	return v ? 63 - __builtin_clzll(v) : 0;
#else
	int i = 0;
	while (v >>= 1)
		i++;
	return i;
#endif
}

uint64_t ms_model_round_size(const struct ms_model *m, uint64_t n)
{
	int idx;
	uint64_t d;

	if (n < K_MIN_BLOCK)
		return K_MIN_BLOCK;
	idx = floor_log2(n) - 20;
	if (idx < 0)
		idx = 0;
	if (idx > 15)
		idx = 15;
	d = m->c.ac.roundup_power2_divisions[idx];
	if (d > 1 && n > K_MIN_BLOCK * d) {
		uint64_t f, step;
		if ((n & (n - 1)) == 0)
			return n;
		f = 1ull << floor_log2(n);
		step = f >> floor_log2(d);
		if (step == 0)
			return 2 * f;
		return (n + step - 1) / step * step;
	}
	return (n + K_MIN_BLOCK - 1) / K_MIN_BLOCK * K_MIN_BLOCK;
}

uint64_t ms_model_allocation_size(const struct ms_model *m, uint64_t size)
{
	if (size <= K_SMALL_SIZE)
		return K_SMALL_BUF;
	if (size < K_MIN_LARGE)
		return m->c.ac.large_segment_size;
	return (size + K_ROUND_LARGE - 1) / K_ROUND_LARGE * K_ROUND_LARGE;
}

/* ---- life cycle ---------------------------------------------------------------------- */

ms_status ms_model_new(const struct ms_model_conf *c, struct ms_model **out)
{
	struct ms_model *m;

	m = ms_calloc(1, sizeof(*m));
	if (!m)
		return MS_ERR_NOMEM;
	m->c = *c;
	if (!m->c.device_memory)
		m->c.device_memory = UINT64_MAX;
	m->small.small = 1;
	m->rng = 2463534242u;
	m->next_addr = 1ull << 56;
	*out = m;
	return MS_OK;
}

void ms_model_free(struct ms_model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_slabs; i++)
		ms_free(m->slabs[i]);
	ms_free(m->slabs);
	ms_free(m->hints);
	ms_free(m->ranges);
	ms_free(m->imported);
	ms_free(m);
}

/* Index of the first range ending after addr. */
static size_t range_find(const struct ms_model *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n_ranges;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->ranges[mid].addr + m->ranges[mid].size <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int range_is_free(const struct ms_model *m, uint64_t addr, uint64_t size)
{
	size_t i = range_find(m, addr);

	if (addr + size < addr)
		return 0;
	return i == m->n_ranges || m->ranges[i].addr >= addr + size;
}

static int range_add(struct ms_model *m, uint64_t addr, uint64_t size, struct xseg *xs)
{
	size_t i = range_find(m, addr);

	if (ms_grow(&m->ranges, &m->cap_ranges, m->n_ranges + 1, sizeof(*m->ranges)))
		return -1;
	memmove(m->ranges + i + 1, m->ranges + i, (m->n_ranges - i) * sizeof(*m->ranges));
	m->ranges[i].addr = addr;
	m->ranges[i].size = size;
	m->ranges[i].xs = xs;
	m->n_ranges++;
	return 0;
}

static void range_del(struct ms_model *m, uint64_t addr)
{
	size_t i = range_find(m, addr);

	if (i < m->n_ranges && m->ranges[i].addr == addr) {
		memmove(m->ranges + i, m->ranges + i + 1,
		        (m->n_ranges - i - 1) * sizeof(*m->ranges));
		m->n_ranges--;
	}
}

void ms_model_set_device_memory(struct ms_model *m, uint64_t bytes)
{
	m->c.device_memory = bytes ? bytes : UINT64_MAX;
}

void ms_model_hint_segment(struct ms_model *m, uint64_t size, uint64_t addr, int map)
{
	if (m->hint_head == m->n_hints)
		m->hint_head = m->n_hints = 0;
	if (ms_grow(&m->hints, &m->cap_hints, m->n_hints + 1, sizeof(*m->hints)))
		return; /* a lost hint only changes addresses, never the policy */
	m->hints[m->n_hints].size = size;
	m->hints[m->n_hints].map = map;
	m->hints[m->n_hints++].addr = addr;
}

/*
 * The address of a new segment: the next hint of this size if that range is free (a replay
 * that diverged may be offered a range still in use), else fresh simulated space, kept far
 * from any address a GPU hands out.
 */
static uint64_t segment_addr(struct ms_model *m, uint64_t size)
{
	while (m->hint_head < m->n_hints) {
		struct hint h = m->hints[m->hint_head++];
		if (h.size == size && range_is_free(m, h.addr, size))
			return h.addr;
		if (h.size == size)
			break;
	}
	m->next_addr += size + K_SMALL_BUF;
	return m->next_addr - size - K_SMALL_BUF;
}

/* ---- the malloc path (§2, §3) --------------------------------------------------------- */

static uint64_t max_split(const struct ms_model *m)
{
	return m->c.ac.max_split_size;
}

static int gc_active(const struct ms_model *m)
{
	return m->c.limit && m->c.ac.garbage_collection_threshold > 0;
}

static uint64_t expandable_size(const struct ms_model_block *b)
{
	return b->size + (b->next && !b->next->mapped ? b->next->size : 0);
}

/* get_free_block (§2.2): best fit on the stream, oversize rules; removed from the pool. */
static struct ms_model_block *get_free_block(struct ms_model *m, struct pool *p, uint64_t stream,
                                             uint64_t size, int take)
{
	struct ms_model_block *b;
	uint64_t msz = max_split(m);

	if (take && gc_active(m))
		p->gc_clock++;
	b = lower_bound(p->root, stream, size, 0);
	if (!b || b->stream != stream)
		return NULL;
	if (b->xs) {
		if (m->c.ac.expandable_segments) {
			/* prefer a fitting block that cannot grow over a free tail that can
			 * (§2.2.3) */
			for (;;) {
				struct ms_model_block *nx =
				        lower_bound(p->root, b->stream, b->size, b->addr + 1);
				if (!nx || nx->stream != stream || !b->xs ||
				    expandable_size(nx) >= expandable_size(b))
					break;
				b = nx;
			}
		} else {
			/* expandable segments switched off since: skip their blocks */
			while (b && b->xs && b->stream == stream)
				b = lower_bound(p->root, b->stream, b->size, b->addr + 1);
			if (!b || b->stream != stream)
				return NULL;
		}
	}
	if (size < msz && b->size >= msz)
		return NULL;
	if (size >= msz && b->size >= size + m->c.ac.max_non_split_rounding)
		return NULL;
	if (take)
		pool_remove(p, b);
	return b;
}

/* ---- expandable segments (§4) ---------------------------------------------------------- */

static uint64_t try_merge(struct ms_model *m, struct pool *p, struct ms_model_block *b,
                          struct ms_model_block *n);

static uint64_t xs_page(const struct ms_model *m, int small)
{
	return small ? K_SMALL_BUF : m->c.ac.large_segment_size;
}

/* Take the next recorded segment address, if any (each map the model makes uses one). */
static void hint_pop(struct ms_model *m)
{
	if (m->hint_head < m->n_hints)
		m->hint_head++;
}

/*
 * With the device's memory unknown a reservation is sized for a 1 TiB device, so it can cover
 * addresses where PyTorch (reserving 1 1/8 of a device we cannot see) placed the next one. A
 * recorded mapping that starts inside another reservation's unmapped tail shows where that
 * reservation ended: cut it at the last page boundary before. Returns 1 if it did.
 */
static int xs_cut_at(struct ms_model *m, uint64_t h)
{
	size_t i = range_find(m, h);
	struct range *r;
	struct pool *p;
	struct ms_model_block *u;

	if (i == m->n_ranges || !m->ranges[i].xs || m->ranges[i].addr >= h)
		return 0;
	r = &m->ranges[i];
	/* the reservation is whole pages; the next one starts where the driver put it */
	h = r->addr + (h - r->addr) / r->xs->page * r->xs->page;
	p = pool_of(m, r->xs->small);
	for (u = unmapped_lower_bound(p, r->xs->stream, r->addr); u && u->stream == r->xs->stream;
	     u = unmapped_lower_bound(p, r->xs->stream, u->addr + 1))
		if (u->xs == r->xs && u->addr <= h && h < u->addr + u->size)
			break;
	/* only an unmapped tail after something mapped can go */
	if (!u || u->stream != r->xs->stream || u->xs != r->xs || u->next || !u->prev)
		return 0;
	if (u->addr == h) {
		unmapped_remove(p, u);
		u->prev->next = NULL;
		blk_release(m, u);
	} else {
		u->size = h - u->addr;
	}
	r->size = h - r->addr;
	r->xs->size = r->size;
	return 1;
}

/*
 * find_expandable_block: the lowest unmapped block of this stream that, with the free mapped
 * block just before it, offers size bytes; else a new segment whose whole reservation is one
 * unmapped block.
 */
static struct ms_model_block *find_expandable(struct ms_model *m, struct pool *p, uint64_t stream,
                                              uint64_t size, int *nomem)
{
	struct ms_model_block *u, *b;
	struct xseg *xs;
	uint64_t page = xs_page(m, p->small), total, space;

	for (u = unmapped_lower_bound(p, stream, 0); u && u->stream == stream;
	     u = unmapped_lower_bound(p, stream, u->addr + 1)) {
		struct ms_model_block *c = u, *q;
		uint64_t bytes = 0;
		if (u->prev && !u->prev->allocated && !u->prev->pending)
			c = u->prev;
		for (q = c; q && bytes < size && !q->allocated && !q->pending; q = q->next)
			bytes += q->size;
		if (bytes >= size)
			return c;
	}
	/* address space for 1 1/8 of the device's memory */
	total = m->c.device_memory != UINT64_MAX ? m->c.device_memory : (1ull << 40);
	space = (total + total / 8 + page - 1) / page * page;
	xs = slab_alloc(m, sizeof(*xs));
	b = xs ? blk_new(m) : NULL;
	if (!b) {
		*nomem = 1;
		return NULL;
	}
	/* a new segment starts where the trace's next mapping does, if it recorded one */
	if (m->hint_head < m->n_hints && m->hints[m->hint_head].map &&
	    m->c.device_memory == UINT64_MAX) {
		uint64_t h = m->hints[m->hint_head].addr;
		size_t i;
		xs_cut_at(m, h);
		/* nor can it reach into the next range */
		i = range_find(m, h);
		if (i < m->n_ranges && m->ranges[i].addr > h && m->ranges[i].addr - h < space)
			space = (m->ranges[i].addr - h) / page * page;
	}
	if (space && m->hint_head < m->n_hints &&
	    range_is_free(m, m->hints[m->hint_head].addr, space)) {
		xs->base = m->hints[m->hint_head].addr;
	} else {
		space = (total + total / 8 + page - 1) / page * page;
		xs->base = m->next_addr;
		m->next_addr += space + page;
	}
	if (range_add(m, xs->base, space, xs)) {
		blk_release(m, b);
		*nomem = 1;
		return NULL;
	}
	if (m->c.dev && m->c.dev->reserve(m->c.dev->ctx, xs->base, space, page)) {
		range_del(m, xs->base);
		blk_release(m, b);
		return NULL; /* no address space: as out of memory */
	}
	xs->size = space;
	xs->page = page;
	xs->stream = stream;
	xs->small = (uint8_t)p->small;
	b->addr = xs->base;
	b->size = space;
	b->stream = stream;
	b->small = (uint8_t)p->small;
	b->xs = xs;
	b->mapped = 0;
	unmapped_insert(p, b);
	return b;
}

/* map_block: map whole pages covering the first size bytes of an unmapped block. */
static int map_block(struct ms_model *m, struct pool *p, struct ms_model_block *b, uint64_t size,
                     int *nomem)
{
	uint64_t page = b->xs->page;
	uint64_t mapped = (size + page - 1) / page * page; /* b starts on a page boundary */

	if (mapped > b->size)
		mapped = b->size;
	if (m->c.device_memory != UINT64_MAX && m->reserved + mapped > m->c.device_memory)
		return 0; /* cuMemCreate: out of memory */
	if (m->c.dev && m->c.dev->map(m->c.dev->ctx, b->addr, mapped))
		return 0; /* the real device: out of memory */
	unmapped_remove(p, b);
	b->mapped = 1;
	if (mapped < b->size) {
		struct ms_model_block *rest = blk_new(m);
		if (!rest) {
			*nomem = 1;
			b->mapped = 0;
			unmapped_insert(p, b);
			return 0;
		}
		rest->addr = b->addr + mapped;
		rest->size = b->size - mapped;
		rest->stream = b->stream;
		rest->small = b->small;
		rest->xs = b->xs;
		rest->mapped = 0;
		rest->prev = b;
		rest->next = b->next;
		if (b->next)
			b->next->prev = rest;
		b->next = rest;
		b->size = mapped;
		unmapped_insert(p, rest);
	}
	try_merge(m, p, b, b->prev);
	try_merge(m, p, b, b->next);
	b->gc_base = p->gc_clock;
	pool_insert(p, b);
	m->reserved += mapped;
	stat3(m->st.reserved_bytes, p->small, (int64_t)mapped);
	m->st.num_device_alloc++;
	hint_pop(m);
	if (m->c.on_segment)
		m->c.on_segment(m->c.ctx, MS_ACT_SEGMENT_MAP, b->addr + b->size - mapped, mapped,
		                b->stream);
	return 1;
}

/* try_allocate_expandable_block: map until a free block of size bytes exists; take it. */
static struct ms_model_block *try_allocate_expandable(struct ms_model *m, struct pool *p,
                                                      uint64_t stream, uint64_t size, int *nomem)
{
	struct ms_model_block *c = find_expandable(m, p, stream, size, nomem);

	if (!c)
		return NULL;
	if (!c->mapped && !map_block(m, p, c, c->size < size ? c->size : size, nomem))
		return NULL;
	while (c->size < size) {
		/* invariant: free -> unmapped -> ...; mapping merges the new pages into c */
		struct ms_model_block *nx = c->next;
		uint64_t need = size - c->size;
		if (!nx || nx->mapped ||
		    !map_block(m, p, nx, need < nx->size ? need : nx->size, nomem))
			return NULL;
		c = nx;
	}
	pool_remove(p, c);
	return c;
}

/* unmap_block: give back the whole pages inside a free expandable block (§4). */
static int unmap_block(struct ms_model *m, struct pool *p, struct ms_model_block *b)
{
	uint64_t page = b->xs->page, begin, end, before, after, len;

	begin = (b->addr - b->xs->base + page - 1) / page * page + b->xs->base;
	end = (b->addr + b->size - b->xs->base) / page * page + b->xs->base;
	if (end <= begin)
		return 0;
	len = end - begin;
	before = begin - b->addr;
	after = b->addr + b->size - end;
	pool_remove(p, b);
	if (before) {
		struct ms_model_block *f = blk_new(m);
		if (!f) {
			pool_insert(p, b);
			return 0;
		}
		f->addr = b->addr;
		f->size = before;
		f->stream = b->stream;
		f->small = b->small;
		f->xs = b->xs;
		f->prev = b->prev;
		f->next = b;
		if (b->prev)
			b->prev->next = f;
		b->prev = f;
		pool_insert(p, f);
	}
	if (after) {
		struct ms_model_block *f = blk_new(m);
		if (!f) {
			pool_insert(p, b); /* the block before stays split off: harmless */
			return 0;
		}
		f->addr = end;
		f->size = after;
		f->stream = b->stream;
		f->small = b->small;
		f->xs = b->xs;
		f->prev = b;
		f->next = b->next;
		if (b->next)
			b->next->prev = f;
		b->next = f;
		pool_insert(p, f);
	}
	b->addr = begin;
	b->size = len;
	b->mapped = 0;
	try_merge(m, p, b, b->prev);
	try_merge(m, p, b, b->next);
	unmapped_insert(p, b);
	m->reserved -= len;
	stat3(m->st.reserved_bytes, p->small, -(int64_t)len);
	m->st.num_device_free++;
	if (m->c.dev)
		m->c.dev->unmap(m->c.dev->ctx, begin, len);
	if (m->c.on_segment)
		m->c.on_segment(m->c.ctx, MS_ACT_SEGMENT_UNMAP, begin, len, b->stream);
	return 1;
}

/* alloc_block (§3.1): a new segment, or NULL when the limit or the device says no. */
static struct ms_model_block *alloc_block(struct ms_model *m, struct pool *p, uint64_t stream,
                                          uint64_t size, uint64_t alloc_size, int retry, int *nomem)
{
	struct ms_model_block *b;
	struct mseg *s;

	if (retry)
		m->st.num_alloc_retries++;
	if (m->c.limit && m->reserved + alloc_size > m->c.limit)
		return NULL;
	if (m->c.ac.expandable_segments)
		return try_allocate_expandable(m, p, stream, size, nomem);
	if (m->c.device_memory != UINT64_MAX && m->reserved + alloc_size > m->c.device_memory)
		return NULL;
	b = blk_new(m);
	s = b ? seg_new(m) : NULL;
	if (!s) {
		*nomem = 1;
		return NULL;
	}
	s->addr = segment_addr(m, alloc_size);
	if (m->c.dev && m->c.dev->seg_alloc(m->c.dev->ctx, s->addr, alloc_size)) {
		blk_release(m, b); /* cudaMalloc: out of memory */
		return NULL;
	}
	if (range_add(m, s->addr, alloc_size, NULL)) {
		if (m->c.dev)
			m->c.dev->seg_free(m->c.dev->ctx, s->addr, alloc_size);
		blk_release(m, b);
		*nomem = 1;
		return NULL;
	}
	s->size = alloc_size;
	s->stream = stream;
	s->small = (uint8_t)p->small;
	b->addr = s->addr;
	b->size = alloc_size;
	b->stream = stream;
	b->seg = s;
	b->small = (uint8_t)p->small;
	m->reserved += alloc_size;
	stat3(m->st.segment, p->small, 1);
	stat3(m->st.reserved_bytes, p->small, (int64_t)alloc_size);
	m->st.num_device_alloc++;
	if (alloc_size >= max_split(m))
		stat_add(&m->st.oversize_segments, 1);
	if (m->c.on_segment)
		m->c.on_segment(m->c.ctx, MS_ACT_SEGMENT_ALLOC, s->addr, alloc_size, stream);
	return b;
}

/* release_block: a whole free segment goes back to the device (cudaFree). */
static void release_block(struct ms_model *m, struct pool *p, struct ms_model_block *b)
{
	uint64_t addr = b->addr, size = b->size, stream = b->stream;

	pool_remove(p, b);
	range_del(m, addr);
	m->reserved -= size;
	stat3(m->st.segment, p->small, -1);
	stat3(m->st.reserved_bytes, p->small, -(int64_t)size);
	m->st.num_device_free++;
	if (size >= max_split(m))
		stat_add(&m->st.oversize_segments, -1);
	blk_release(m, b);
	if (m->c.dev)
		m->c.dev->seg_free(m->c.dev->ctx, addr, size);
	if (m->c.on_segment)
		m->c.on_segment(m->c.ctx, MS_ACT_SEGMENT_FREE, addr, size, stream);
}

static int whole_segment(const struct ms_model_block *b)
{
	return !b->prev && !b->next;
}

/* A cached segment that cudaFree can give back: whole, and not in an expandable segment. */
static int releasable(const struct ms_model_block *b)
{
	return !b->xs && whole_segment(b);
}

static int unmap_block(struct ms_model *m, struct pool *p, struct ms_model_block *b);

/*
 * release_blocks(pool) (§3.4): every free block that is a whole segment goes back to the
 * device, in pool order; then every free block of an expandable segment is unmapped, and an
 * expandable segment left with nothing mapped is destroyed.
 */
static void release_pool(struct ms_model *m, struct pool *p)
{
	struct ms_model_block *b = lower_bound(p->root, 0, 0, 0), **xs = NULL;
	size_t n = 0, cap = 0;

	while (b) {
		struct ms_model_block *nx = lower_bound(p->root, b->stream, b->size, b->addr + 1);
		if (b->xs) {
			if (!ms_grow(&xs, &cap, n + 1, sizeof(*xs)))
				xs[n++] = b; /* out of memory: that block stays mapped */
		} else if (whole_segment(b)) {
			release_block(m, p, b);
		}
		b = nx;
	}
	for (size_t i = 0; i < n; i++) {
		b = xs[i];
		if (unmap_block(m, p, b) && whole_segment(b)) {
			unmapped_remove(p, b); /* release_expandable_segment: no trace entry */
			range_del(m, b->xs->base);
			blk_release(m, b);
		}
	}
	ms_free(xs);
}

void ms_model_empty_cache(struct ms_model *m)
{
	/* synchronize_and_free_events: pending frees complete as the trace records them */
	m->st.num_sync_all_streams++;
	release_pool(m, &m->large);
	release_pool(m, &m->small);
}

/* release_available_cached_blocks (§3.2): only with max_split_size set. */
static int release_available(struct ms_model *m, struct pool *p, uint64_t stream, uint64_t size)
{
	uint64_t msz = max_split(m), key, released = 0;
	struct ms_model_block *b;

	if (msz == UINT64_MAX)
		return 0;
	key = size > msz ? size : msz;
	b = lower_bound(p->root, stream, key, 0);
	if (b && b->stream == stream && releasable(b)) {
		release_block(m, p, b);
		return 1;
	}
	/* walk down from this stream's largest block, releasing oversize ones */
	b = lower_bound(p->root, stream + 1, 0, 0);
	for (;;) {
		struct ms_model_block *prev = NULL, *t = p->root;
		uint64_t bs, bz, ba;
		/* the greatest block below b (or below the end of this stream) */
		if (b)
			bs = b->stream, bz = b->size, ba = b->addr;
		else
			bs = stream + 1, bz = 0, ba = 0;
		while (t) {
			if (key_cmp(bs, bz, ba, t) > 0) {
				prev = t;
				t = t->r;
			} else {
				t = t->l;
			}
		}
		if (!prev || prev->stream != stream || prev->size < msz)
			break;
		b = prev;
		if (releasable(prev)) {
			released += prev->size;
			b = lower_bound(p->root, prev->stream, prev->size, prev->addr + 1);
			release_block(m, p, prev);
			if (released >= key)
				break;
		}
	}
	return released >= key;
}

/* garbage_collect_cached_blocks (§3.3): only with a limit and a threshold. */
static void garbage_collect(struct ms_model *m)
{
	struct pool *p = &m->large;
	uint64_t threshold = (uint64_t)(m->c.ac.garbage_collection_threshold * (double)m->c.limit);
	uint64_t target, reclaimed = 0, total_age = 0, count = 0;
	struct ms_model_block *b;
	int freed = 1;

	if (m->reserved <= threshold)
		return;
	target = m->reserved - threshold;
	for (b = lower_bound(p->root, 0, 0, 0); b;
	     b = lower_bound(p->root, b->stream, b->size, b->addr + 1))
		if (releasable(b)) {
			total_age += p->gc_clock - b->gc_base;
			count++;
		}
	/* every pass frees all candidates at or above the (integer) average age */
	while (reclaimed < target && freed && count > 0) {
		uint64_t threshold_age = total_age / count;
		freed = 0;
		for (b = lower_bound(p->root, 0, 0, 0); b;) {
			struct ms_model_block *nx =
			        lower_bound(p->root, b->stream, b->size, b->addr + 1);
			uint64_t age = p->gc_clock - b->gc_base;
			if (releasable(b) && age >= threshold_age) {
				freed = 1;
				reclaimed += b->size;
				total_age -= age;
				count--;
				release_block(m, p, b);
			}
			b = nx;
		}
	}
}

static int should_split(const struct ms_model *m, const struct ms_model_block *b, uint64_t size)
{
	uint64_t remaining = b->size - size;

	if (b->small || m->c.ac.expandable_segments)
		return remaining >= K_MIN_BLOCK;
	return size < max_split(m) && remaining > K_SMALL_SIZE;
}

/* alloc_found_block (§2.4) with the statistics of §7. */
static struct ms_model_block *alloc_found(struct ms_model *m, struct pool *p,
                                          struct ms_model_block *b, uint64_t size, uint64_t orig,
                                          int *nomem)
{
	int already_split = !whole_segment(b);

	if (should_split(m, b, size)) {
		struct ms_model_block *rest = blk_new(m);
		if (!rest) {
			pool_insert(p, b); /* put it back: nothing changed */
			*nomem = 1;
			return NULL;
		}
		/* the allocation takes the front; the remainder keeps the back */
		rest->addr = b->addr + size;
		rest->size = b->size - size;
		rest->stream = b->stream;
		rest->seg = b->seg;
		rest->small = b->small;
		rest->xs = b->xs;
		rest->prev = b;
		rest->next = b->next;
		if (b->next)
			b->next->prev = rest;
		b->next = rest;
		b->size = size;
		rest->gc_base = p->gc_clock;
		pool_insert(p, rest);
		if (b->xs) {
			/* expandable segments are left out of inactive_split (§4) */
		} else if (already_split) {
			stat3(m->st.inactive_split_bytes, p->small, -(int64_t)size);
		} else {
			stat3(m->st.inactive_split_bytes, p->small, (int64_t)rest->size);
			stat3(m->st.inactive_split, p->small, 1);
		}
	} else if (already_split && !b->xs) {
		stat3(m->st.inactive_split_bytes, p->small, -(int64_t)b->size);
		stat3(m->st.inactive_split, p->small, -1);
	}
	b->allocated = 1;
	b->pending = 0;
	b->requested = orig;
	stat3(m->st.allocation, p->small, 1);
	stat3(m->st.allocated_bytes, p->small, (int64_t)b->size);
	stat3(m->st.active, p->small, 1);
	stat3(m->st.active_bytes, p->small, (int64_t)b->size);
	stat3(m->st.requested_bytes, p->small, (int64_t)orig);
	if (b->size >= max_split(m))
		stat_add(&m->st.oversize_allocations, 1);
	return b;
}

void ms_model_free_space(const struct ms_model *m, uint64_t *free_bytes, uint64_t *largest)
{
	const struct pool *ps[2] = {&m->large, &m->small};

	*free_bytes = *largest = 0;
	for (int i = 0; i < 2; i++) {
		const struct ms_model_block *b = lower_bound(ps[i]->root, 0, 0, 0);
		for (; b; b = lower_bound(ps[i]->root, b->stream, b->size, b->addr + 1)) {
			*free_bytes += b->size;
			if (b->size > *largest)
				*largest = b->size;
		}
	}
}

static void fill_oom(struct ms_model *m, uint64_t n, uint64_t size, uint64_t alloc_size,
                     uint64_t stream, struct ms_model_oom *oom)
{
	if (!oom)
		return;
	oom->requested = n;
	oom->rounded = size;
	oom->alloc_size = alloc_size;
	oom->stream = stream;
	oom->allocated = (uint64_t)m->st.allocated_bytes[MS_POOL_ALL].current;
	oom->reserved = m->reserved;
	oom->inactive_split = (uint64_t)m->st.inactive_split_bytes[MS_POOL_ALL].current;
	ms_model_free_space(m, &oom->free_in_reserved, &oom->largest_free);
}

ms_status ms_model_malloc(struct ms_model *m, uint64_t n, uint64_t stream,
                          struct ms_model_block **out, struct ms_model_oom *oom)
{
	uint64_t size = ms_model_round_size(m, n), alloc_size;
	int small = size <= K_SMALL_SIZE, nomem = 0;
	struct pool *p = pool_of(m, small);
	struct ms_model_block *b;

	*out = NULL;
	if (n >= (1ull << 60)) { /* "Tried to allocate more than 1EB memory" */
		m->st.num_ooms++;
		fill_oom(m, n, size, size, stream, oom);
		return MS_OK;
	}
	alloc_size = ms_model_allocation_size(m, size);
	b = get_free_block(m, p, stream, size, 1);
	if (!b) {
		if (gc_active(m))
			garbage_collect(m);
		b = alloc_block(m, p, stream, size, alloc_size, 0, &nomem);
		if (!b && !nomem && release_available(m, p, stream, size))
			b = alloc_block(m, p, stream, size, alloc_size, 0, &nomem);
		if (!b && !nomem) {
			ms_model_empty_cache(m);
			b = alloc_block(m, p, stream, size, alloc_size, 1, &nomem);
		}
	}
	if (nomem)
		return MS_ERR_NOMEM;
	if (!b) {
		m->st.num_ooms++;
		fill_oom(m, n, size, alloc_size, stream, oom);
		return MS_OK;
	}
	b = alloc_found(m, p, b, size, n, &nomem);
	if (!b)
		return MS_ERR_NOMEM;
	*out = b;
	return MS_OK;
}

int ms_model_fits_without_release(struct ms_model *m, uint64_t n, uint64_t stream)
{
	uint64_t size = ms_model_round_size(m, n), alloc_size = ms_model_allocation_size(m, size);
	struct pool *p = pool_of(m, size <= K_SMALL_SIZE);

	if (get_free_block(m, p, stream, size, 0))
		return 1;
	if (m->c.limit && m->reserved + alloc_size > m->c.limit)
		return 0;
	if (m->c.device_memory != UINT64_MAX && m->reserved + alloc_size > m->c.device_memory)
		return 0;
	return 1;
}

void ms_model_free_requested(struct ms_model *m, struct ms_model_block *b)
{
	if (!b->allocated)
		return;
	b->allocated = 0;
	b->pending = 1;
	stat3(m->st.allocation, b->small, -1);
	stat3(m->st.allocated_bytes, b->small, -(int64_t)b->size);
	if (b->size >= max_split(m))
		stat_add(&m->st.oversize_allocations, -1);
}

/* try_merge_blocks: absorb a free neighbour; returns the bytes absorbed. */
static uint64_t try_merge(struct ms_model *m, struct pool *p, struct ms_model_block *b,
                          struct ms_model_block *n)
{
	uint64_t sz;

	if (!n || n->allocated || n->pending || n->mapped != b->mapped)
		return 0;
	if (n->mapped) {
		if (!n->in_pool)
			return 0;
		pool_remove(p, n);
	} else {
		unmapped_remove(p, n);
	}
	sz = n->size;
	if (n == b->prev) {
		b->addr = n->addr;
		b->prev = n->prev;
		if (b->prev)
			b->prev->next = b;
	} else {
		b->next = n->next;
		if (b->next)
			b->next->prev = b;
	}
	b->size += sz;
	blk_release(m, n);
	return sz;
}

ms_status ms_model_free_completed(struct ms_model *m, struct ms_model_block *b)
{
	struct pool *p = pool_of(m, b->small);
	uint64_t orig_size = b->size, requested = b->requested, sub;
	struct ms_model_block *cand[2];

	if (b->allocated)
		ms_model_free_requested(m, b); /* a completed free implies the request */
	b->pending = 0;
	cand[0] = b->prev;
	cand[1] = b->next;
	for (int i = 0; i < 2; i++) {
		sub = try_merge(m, p, b, cand[i]);
		if (sub && !b->xs) {
			stat3(m->st.inactive_split, p->small, -1);
			stat3(m->st.inactive_split_bytes, p->small, -(int64_t)sub);
		}
	}
	b->gc_base = p->gc_clock;
	pool_insert(p, b);
	if (!whole_segment(b) && !b->xs) {
		stat3(m->st.inactive_split, p->small, 1);
		stat3(m->st.inactive_split_bytes, p->small, (int64_t)b->size);
	}
	stat3(m->st.active, p->small, -1);
	stat3(m->st.active_bytes, p->small, -(int64_t)orig_size);
	stat3(m->st.requested_bytes, p->small, -(int64_t)requested);
	return MS_OK;
}

uint64_t ms_model_block_addr(const struct ms_model_block *b)
{
	return b->addr;
}

uint64_t ms_model_block_size(const struct ms_model_block *b)
{
	return b->size;
}

const struct ms_model_stats *ms_model_stats(const struct ms_model *m)
{
	return &m->st;
}

/* ---- invariants (tests and fuzzing) ---------------------------------------------------- */

struct chk {
	const struct ms_model *m;
	struct ms_u64map seen; /* segment heads visited */
	uint64_t reserved, allocated, active, requested, segments;
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

/*
 * Which segment (or expandable reservation) b lies in, for "once per segment" walks: its own
 * record where the block has one, so that visiting every block of a segment does not walk to
 * the segment's head each time (quadratic in its blocks). Records are tagged with bit 0 (they
 * are aligned, as are device addresses), so they cannot meet a head's address.
 */
static uint64_t segment_key(const struct ms_model_block *b)
{
	if (b->xs)
		return (uint64_t)(uintptr_t)b->xs | 1;
	if (b->seg)
		return (uint64_t)(uintptr_t)b->seg | 1;
	while (b->prev)
		b = b->prev;
	return b->addr & ~(uint64_t)1;
}

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
	for (q = h; q; q = q->next) {
		CHK(c, !q->next || q->next->prev == q, "broken links at 0x%llx",
		    (unsigned long long)q->addr);
		CHK(c, !q->next || q->next->addr == q->addr + q->size,
		    "gap or overlap after 0x%llx", (unsigned long long)q->addr);
		CHK(c, q->stream == h->stream && q->small == h->small && q->xs == h->xs,
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
		if (q->allocated)
			c->allocated += q->size;
		if (q->allocated || q->pending) {
			c->active += q->size;
			c->requested += q->requested;
		}
		if (q->mapped)
			c->reserved += q->size;
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

static void check_tree(struct chk *c, const struct ms_model_block *t, int unmapped)
{
	if (!t || c->bad)
		return;
	CHK(c, unmapped ? !t->mapped : (t->mapped && t->in_pool), "wrong set for 0x%llx",
	    (unsigned long long)t->addr);
	check_segment(c, t);
	check_tree(c, t->l, unmapped);
	check_tree(c, t->r, unmapped);
}

int ms_model_check(const struct ms_model *m, struct ms_model_block *const *held, size_t n_held,
                   char *why, size_t cap)
{
	struct chk c;
	const struct pool *ps[2] = {&m->small, &m->large};
	const struct ms_model_stats *st = &m->st;

	memset(&c, 0, sizeof(c));
	c.m = m;
	c.why = why;
	c.cap = cap;
	for (int i = 0; i < 2; i++) {
		check_tree(&c, ps[i]->root, 0);
		check_tree(&c, ps[i]->unmapped, 1);
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
	ms_u64map_release(&c.seen);
	return c.bad ? -1 : 0;
}

/* ---- importing the state before a mid-run trace --------------------------------------- */

/*
 * One mapped range of an expandable segment. Ranges come in address order; the first of a
 * (stream, pool) opens a reservation at its address, later ones are cut out of its unmapped
 * tail, and what lies between them stays unmapped.
 */
/*
 * One block of an imported segment (of expandable range xs or segment sg), linked after prev:
 * a free one goes to its pool, an active one counts in the statistics. NULL: out of memory.
 */
static struct ms_model_block *import_block(struct ms_model *m, struct pool *p,
                                           const struct ms_block *k, uint64_t stream, int small,
                                           struct xseg *xs, struct mseg *sg,
                                           struct ms_model_block *prev)
{
	struct ms_model_block *b = blk_new(m);

	if (!b)
		return NULL;
	b->addr = k->addr;
	b->size = k->size;
	b->requested = k->requested_size;
	b->stream = stream;
	b->small = (uint8_t)small;
	b->xs = xs;
	b->seg = sg;
	b->prev = prev;
	if (prev)
		prev->next = b;
	if (k->state == MS_BLOCK_INACTIVE) {
		b->gc_base = p->gc_clock;
		pool_insert(p, b);
		return b;
	}
	if (k->state == MS_BLOCK_ACTIVE_ALLOCATED) {
		b->allocated = 1;
		stat3(m->st.allocation, small, 1);
		stat3(m->st.allocated_bytes, small, (int64_t)b->size);
	} else {
		b->pending = 1;
	}
	stat3(m->st.active, small, 1);
	stat3(m->st.active_bytes, small, (int64_t)b->size);
	stat3(m->st.requested_bytes, small, (int64_t)b->requested);
	return b;
}

static ms_status import_range(struct ms_model *m, const struct ms_segment *s,
                              const struct ms_block *blocks, struct ms_model_block **out)
{
	struct pool *p = pool_of(m, s->is_small);
	struct xseg *xs = NULL;
	struct ms_model_block *tail, *prev;
	uint64_t end = s->addr + s->total_size, total = 0;

	for (uint32_t i = 0; i < s->n_blocks; i++)
		total += blocks[i].size;
	if (total != s->total_size || !s->n_blocks)
		return MS_ERR_INVALID_ARG;
	for (size_t i = 0; i < m->n_imported; i++)
		if (m->imported[i]->stream == s->stream && m->imported[i]->small == s->is_small)
			xs = m->imported[i];
	if (!xs) {
		uint64_t page = xs_page(m, s->is_small), dev;
		dev = m->c.device_memory != UINT64_MAX ? m->c.device_memory : (1ull << 40);
		xs = slab_alloc(m, sizeof(*xs));
		tail = xs ? blk_new(m) : NULL;
		if (!tail || ms_grow(&m->imported, &m->cap_imported, m->n_imported + 1, sizeof(xs)))
			return MS_ERR_NOMEM;
		memset(xs, 0, sizeof(*xs));
		xs->base = s->addr;
		xs->page = page;
		xs->size = (dev + dev / 8 + page - 1) / page * page;
		xs->stream = s->stream;
		xs->small = s->is_small;
		/*
		 * The device's size may be unknown: a reservation opened earlier may reach over
		 * this one's start. Reservations are apart in reality, so end that one here.
		 */
		for (size_t i = 0; i < m->n_imported; i++) {
			struct xseg *o = m->imported[i];
			if (o->base < xs->base && xs->base < o->base + o->size && o->tail &&
			    o->tail->addr <= xs->base) {
				struct pool *op = pool_of(m, o->small);
				range_del(m, o->base);
				o->size = xs->base - o->base;
				if (range_add(m, o->base, o->size, o))
					return MS_ERR_NOMEM;
				unmapped_remove(op, o->tail);
				o->tail->size = o->base + o->size - o->tail->addr;
				if (o->tail->size) {
					unmapped_insert(op, o->tail);
				} else {
					if (o->tail->prev)
						o->tail->prev->next = NULL;
					blk_release(m, o->tail);
					o->tail = NULL;
				}
			}
		}
		if (!range_is_free(m, xs->base, xs->size)) {
			/* up to the next range in use */
			size_t k = range_find(m, xs->base);
			if (k < m->n_ranges && m->ranges[k].addr > xs->base)
				xs->size = (m->ranges[k].addr - xs->base) / page * page;
		}
		if (!xs->size || !range_is_free(m, xs->base, xs->size) ||
		    range_add(m, xs->base, xs->size, xs))
			return MS_ERR_INVALID_ARG;
		tail->addr = xs->base;
		tail->size = xs->size;
		tail->stream = s->stream;
		tail->small = s->is_small;
		tail->xs = xs;
		tail->mapped = 0;
		unmapped_insert(p, tail);
		xs->tail = tail;
		m->imported[m->n_imported++] = xs;
	}
	tail = xs->tail;
	if (!tail || s->addr < tail->addr || end > tail->addr + tail->size)
		return MS_ERR_INVALID_ARG; /* not in address order, or beyond the reservation */
	unmapped_remove(p, tail);
	prev = tail->prev;
	if (s->addr > tail->addr) {
		/* the gap before this range stays unmapped */
		struct ms_model_block *gap = blk_new(m);
		if (!gap)
			return MS_ERR_NOMEM;
		*gap = *tail;
		gap->size = s->addr - tail->addr;
		gap->l = gap->r = gap->up = NULL;
		gap->prev = prev;
		if (prev)
			prev->next = gap;
		gap->next = NULL;
		unmapped_insert(p, gap);
		prev = gap;
	}
	for (uint32_t i = 0; i < s->n_blocks; i++) {
		if (!(prev = import_block(m, p, &blocks[i], s->stream, s->is_small, xs, NULL,
		                          prev)))
			return MS_ERR_NOMEM;
		if (out)
			out[i] = prev->in_pool ? NULL : prev;
	}
	m->reserved += s->total_size;
	stat3(m->st.reserved_bytes, s->is_small, (int64_t)s->total_size);
	/* what follows stays unmapped */
	tail->size = tail->addr + tail->size - end;
	tail->addr = end;
	tail->prev = prev;
	prev->next = tail;
	tail->next = NULL;
	if (tail->size) {
		unmapped_insert(p, tail);
	} else {
		prev->next = NULL;
		blk_release(m, tail);
		tail = NULL;
	}
	xs->tail = tail;
	return MS_OK;
}

ms_status ms_model_import_segment(struct ms_model *m, const struct ms_segment *s,
                                  const struct ms_block *blocks, struct ms_model_block **out)
{
	struct mseg *sg;
	struct ms_model_block *prev = NULL;
	int small = s->is_small;
	struct pool *p = pool_of(m, small);
	uint64_t total = 0;

	if (s->is_expandable)
		return import_range(m, s, blocks, out);
	for (uint32_t i = 0; i < s->n_blocks; i++)
		total += blocks[i].size;
	if (total != s->total_size || !s->n_blocks || !range_is_free(m, s->addr, s->total_size))
		return MS_ERR_INVALID_ARG;
	sg = seg_new(m);
	if (!sg || range_add(m, s->addr, s->total_size, NULL))
		return MS_ERR_NOMEM;
	sg->addr = s->addr;
	sg->size = s->total_size;
	sg->stream = s->stream;
	sg->small = (uint8_t)small;
	m->reserved += s->total_size;
	stat3(m->st.segment, small, 1);
	stat3(m->st.reserved_bytes, small, (int64_t)s->total_size);
	if (s->total_size >= max_split(m))
		stat_add(&m->st.oversize_segments, 1);
	for (uint32_t i = 0; i < s->n_blocks; i++) {
		if (!(prev = import_block(m, p, &blocks[i], s->stream, small, NULL, sg, prev)))
			return MS_ERR_NOMEM;
		if (out)
			out[i] = prev->in_pool ? NULL : prev;
	}
	/* split segments count their free blocks as inactive split (§7) */
	if (s->n_blocks > 1)
		for (struct ms_model_block *b = prev; b; b = b->prev)
			if (b->in_pool) {
				stat3(m->st.inactive_split, small, 1);
				stat3(m->st.inactive_split_bytes, small, (int64_t)b->size);
			}
	return MS_OK;
}

/* ---- what a report says at an OOM ----------------------------------------------------- */

void ms_model_block_set_tag(struct ms_model_block *b, uint64_t index, uint32_t stack)
{
	b->tag_index = index;
	b->tag_stack = stack;
}

void ms_model_block_tag(const struct ms_model_block *b, uint64_t *index, uint32_t *stack)
{
	*index = b->tag_index;
	*stack = b->tag_stack;
}

static void describe(const struct ms_model_block *b, struct ms_model_neighbour *n)
{
	memset(n, 0, sizeof(*n));
	if (!b)
		return;
	n->present = 1;
	n->addr = b->addr;
	n->size = b->size;
	n->state = b->allocated ? MS_BLOCK_ACTIVE_ALLOCATED
	           : b->pending ? MS_BLOCK_ACTIVE_PENDING_FREE
	                        : MS_BLOCK_INACTIVE;
	n->mapped = b->mapped;
	n->index = b->tag_index;
	n->stack = b->tag_stack;
}

size_t ms_model_largest_free(const struct ms_model *m, uint64_t stream, int small,
                             struct ms_model_hole *out, size_t max)
{
	const struct pool *p = small ? &m->small : &m->large;
	const struct ms_model_block *b;
	size_t n = 0;

	/* the pool is ordered by size within the stream: walk it, keep the last max */
	for (b = lower_bound(p->root, stream, 0, 0); b && b->stream == stream;
	     b = lower_bound(p->root, b->stream, b->size, b->addr + 1)) {
		struct ms_model_hole h;
		h.addr = b->addr;
		h.size = b->size;
		h.segment_addr = b->xs ? b->xs->base : b->seg->addr;
		describe(b->prev, &h.before);
		describe(b->next, &h.after);
		if (n < max) {
			out[n++] = h;
		} else if (max) {
			memmove(out, out + 1, (max - 1) * sizeof(*out));
			out[max - 1] = h;
		}
	}
	/* largest first */
	for (size_t i = 0; i < n / 2; i++) {
		struct ms_model_hole t = out[i];
		out[i] = out[n - 1 - i];
		out[n - 1 - i] = t;
	}
	return n;
}

/* ---- the state at a moment, as PyTorch's snapshot shows it ---------------------------- */

struct snap {
	struct ms_segment *segs;
	size_t n_segs, cap_segs;
	struct ms_block *blocks;
	size_t n_blocks, cap_blocks;
	struct ms_u64map seen;
};

static ms_status snap_open(struct snap *sn, const struct ms_model_block *h, int expandable)
{
	struct ms_segment *g;

	if (ms_grow(&sn->segs, &sn->cap_segs, sn->n_segs + 1, sizeof(*sn->segs)))
		return MS_ERR_NOMEM;
	g = &sn->segs[sn->n_segs++];
	memset(g, 0, sizeof(*g));
	g->addr = h->addr;
	g->stream = h->stream;
	g->is_small = h->small;
	g->is_expandable = (uint8_t)expandable;
	return MS_OK;
}

static ms_status snap_block(struct snap *sn, const struct ms_model_block *q)
{
	struct ms_segment *g = &sn->segs[sn->n_segs - 1];
	struct ms_block *k;

	if (ms_grow(&sn->blocks, &sn->cap_blocks, sn->n_blocks + 1, sizeof(*sn->blocks)))
		return MS_ERR_NOMEM;
	k = &sn->blocks[sn->n_blocks++];
	k->addr = q->addr;
	k->size = q->size;
	k->requested_size = q->requested;
	k->stack = q->tag_stack;
	k->state = q->allocated ? MS_BLOCK_ACTIVE_ALLOCATED
	           : q->pending ? MS_BLOCK_ACTIVE_PENDING_FREE
	                        : MS_BLOCK_INACTIVE;
	g->total_size += q->size;
	g->n_blocks++;
	if (q->allocated)
		g->allocated_size += q->size;
	if (q->allocated || q->pending) {
		g->active_size += q->size;
		g->requested_size += q->requested;
	}
	return MS_OK;
}

/* One segment, or for an expandable one each mapped range, once. */
static ms_status snap_segment(struct snap *sn, const struct ms_model_block *b)
{
	const struct ms_model_block *h = b, *q;
	uint64_t key = segment_key(b);
	int open = 0;
	ms_status s;

	if (ms_u64map_get(&sn->seen, key))
		return MS_OK;
	while (h->prev)
		h = h->prev;
	if (ms_u64map_put(&sn->seen, key, 1))
		return MS_ERR_NOMEM;
	for (q = h; q; q = q->next) {
		if (!q->mapped) {
			open = 0;
			continue;
		}
		if (!open) {
			if ((s = snap_open(sn, q, q->xs != NULL)))
				return s;
			open = 1;
		}
		if ((s = snap_block(sn, q)))
			return s;
	}
	return MS_OK;
}

static ms_status snap_tree(struct snap *sn, const struct ms_model_block *t)
{
	ms_status s;

	if (!t)
		return MS_OK;
	if ((s = snap_segment(sn, t)) || (s = snap_tree(sn, t->l)))
		return s;
	return snap_tree(sn, t->r);
}

static int seg_addr_cmp(const void *x, const void *y)
{
	const struct ms_segment *a = x, *b = y;
	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

ms_status ms_model_snapshot(const struct ms_model *m, struct ms_model_block *const *held,
                            size_t n_held, struct ms_segment **segs, size_t *n_segs,
                            struct ms_block **blocks, size_t *n_blocks)
{
	struct snap sn;
	ms_status s = MS_OK;

	memset(&sn, 0, sizeof(sn));
	s = snap_tree(&sn, m->large.root);
	if (!s)
		s = snap_tree(&sn, m->small.root);
	if (!s)
		s = snap_tree(&sn, m->large.unmapped);
	if (!s)
		s = snap_tree(&sn, m->small.unmapped);
	for (size_t i = 0; !s && i < n_held; i++)
		s = snap_segment(&sn, held[i]);
	ms_u64map_release(&sn.seen);
	if (s) {
		ms_free(sn.segs);
		ms_free(sn.blocks);
		return s;
	}
	/* in address order, blocks following their segment */
	if (sn.n_segs > 1) {
		struct ms_block *ordered =
		        ms_malloc(sizeof(*ordered) * (sn.n_blocks ? sn.n_blocks : 1));
		size_t *first = ms_malloc(sizeof(*first) * sn.n_segs), k = 0, at = 0;
		struct ms_segment *copy = ms_malloc(sizeof(*copy) * sn.n_segs);
		if (!ordered || !first || !copy) {
			ms_free(ordered);
			ms_free(first);
			ms_free(copy);
			ms_free(sn.segs);
			ms_free(sn.blocks);
			return MS_ERR_NOMEM;
		}
		for (size_t i = 0; i < sn.n_segs; i++) {
			first[i] = at;
			at += sn.segs[i].n_blocks;
		}
		memcpy(copy, sn.segs, sizeof(*copy) * sn.n_segs);
		/* remember where each segment's blocks are through its (unique) address */
		for (size_t i = 0; i < sn.n_segs; i++)
			copy[i].pool_id[0] = first[i];
		qsort(copy, sn.n_segs, sizeof(*copy), seg_addr_cmp);
		for (size_t i = 0; i < sn.n_segs; i++) {
			memcpy(ordered + k, sn.blocks + copy[i].pool_id[0],
			       sizeof(*ordered) * copy[i].n_blocks);
			k += copy[i].n_blocks;
			copy[i].pool_id[0] = 0;
		}
		ms_free(sn.segs);
		ms_free(sn.blocks);
		ms_free(first);
		sn.segs = copy;
		sn.blocks = ordered;
	}
	*segs = sn.segs;
	*n_segs = sn.n_segs;
	*blocks = sn.blocks;
	*n_blocks = sn.n_blocks;
	return MS_OK;
}
