/*
 * A model of PyTorch's CUDA caching allocator (2.11, native backend) over a simulated device:
 * pools, blocks, malloc and free, the release paths and garbage collection. Rules and their
 * sources: docs/torch-allocator.md §1-7; expandable segments (§4) are model_expandable.c's.
 */
#include "replay/model_internal.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

/* ---- memory for blocks and segments -------------------------------------------------- */

void *ms__model_slab_alloc(struct ms_model *m, size_t sz)
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

struct ms_model_block *ms__model_blk_new(struct ms_model *m)
{
	struct ms_model_block *b = m->spare_blocks;

	if (b) {
		m->spare_blocks = b->free_next;
	} else {
		/* 256 at a time */
		struct ms_model_block *s = ms__model_slab_alloc(m, 256 * sizeof(*s));
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

struct mseg *ms__model_seg_new(struct ms_model *m)
{
	struct mseg *s = ms__model_slab_alloc(m, sizeof(*s));

	if (s)
		memset(s, 0, sizeof(*s));
	return s;
}

/* ---- pools: the treaps of free blocks (§2.1) ----------------------------------------- */

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
struct ms_model_block *ms__model_treap_insert(struct ms_model_block *root, struct ms_model_block *b,
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

/* Put nb where old is (its links and priority): the caller knows nb's key sorts there. */
struct ms_model_block *ms__model_treap_replace(struct ms_model_block *root,
                                               struct ms_model_block *old,
                                               struct ms_model_block *nb)
{
	struct ms_model_block **link = link_to(&root, old);

	nb->l = old->l;
	nb->r = old->r;
	nb->up = old->up;
	nb->prio = old->prio;
	if (nb->l)
		nb->l->up = nb;
	if (nb->r)
		nb->r->up = nb;
	*link = nb;
	old->l = old->r = old->up = NULL;
	return root;
}

/* Erase: rotate b down to a leaf, unlink it. */
struct ms_model_block *ms__model_treap_erase(struct ms_model_block *root, struct ms_model_block *b)
{
	struct ms_model_block **link = link_to(&root, b);

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

static uint64_t allocation_size(uint64_t size, uint64_t large_segment_size)
{
	if (size <= K_SMALL_SIZE)
		return K_SMALL_BUF;
	if (size < K_MIN_LARGE)
		return large_segment_size;
	return (size + K_ROUND_LARGE - 1) / K_ROUND_LARGE * K_ROUND_LARGE;
}

uint64_t ms_model_allocation_size(const struct ms_model *m, uint64_t size)
{
	return allocation_size(size, m->c.ac.large_segment_size);
}

uint64_t ms_model_default_allocation_size(uint64_t size)
{
	struct ms_alloc_conf ac;
	ms_alloc_conf_init(&ac);
	return allocation_size(size, ac.large_segment_size);
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
	m->pools = ms_calloc(4, sizeof(*m->pools));
	if (!m->pools) {
		ms_free(m);
		return MS_ERR_NOMEM;
	}
	m->cap_pools = 4;
	m->n_pools = 1; /* slot 0: the default pools, code MS_POOL_DEFAULT */
	m->rng = 2463534242u;
	m->low_addr = m->high_end = 1ull << 56;
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
	ms_free(m->priv);
	ms_free(m->on_oom);
	ms_free(m->pools);
	ms_free(m->hints);
	ms_free(m->ranges);
	ms_free(m->imported);
	ms_free(m);
}
/* ---- address ranges in use: segments and expandable reservations -------------------- */

size_t ms__model_range_find(const struct ms_model *m, uint64_t addr)
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

int ms__model_range_is_free(const struct ms_model *m, uint64_t addr, uint64_t size)
{
	size_t i = ms__model_range_find(m, addr);

	if (addr + size < addr)
		return 0;
	return i == m->n_ranges || m->ranges[i].addr >= addr + size;
}

int ms__model_range_add(struct ms_model *m, uint64_t addr, uint64_t size, struct xseg *xs)
{
	size_t i = ms__model_range_find(m, addr);

	if (ms_grow(&m->ranges, &m->cap_ranges, m->n_ranges + 1, sizeof(*m->ranges)))
		return -1;
	memmove(m->ranges + i + 1, m->ranges + i, (m->n_ranges - i) * sizeof(*m->ranges));
	m->ranges[i].addr = addr;
	m->ranges[i].size = size;
	m->ranges[i].xs = xs;
	m->n_ranges++;
	if (addr < m->low_addr)
		m->low_addr = addr;
	if (addr + size > m->high_end)
		m->high_end = addr + size;
	return 0;
}

uint64_t ms__model_fresh_space(struct ms_model *m, uint64_t size, uint64_t align)
{
	uint64_t above;

	/* a gap of one small segment keeps segments made one after the other apart */
	if (size < m->low_addr && m->low_addr - size >= K_SMALL_BUF + align)
		return (m->low_addr - size - K_SMALL_BUF) / align * align;
	above = (m->high_end + K_SMALL_BUF + align - 1) / align * align;
	if (above < m->high_end || size > UINT64_MAX - above)
		return 0;
	return above;
}

void ms__model_range_del(struct ms_model *m, uint64_t addr)
{
	size_t i = ms__model_range_find(m, addr);

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

void ms_model_set_limit(struct ms_model *m, uint64_t bytes)
{
	m->c.limit = bytes;
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
 * that diverged may be offered a range still in use), else space below every segment so far.
 * Where two free blocks of one size tie, best fit takes the lower address, so the order
 * matters: under another setting the sizes differ from the recorded ones, and the driver's
 * new segments come below the earlier ones (docs/torch-allocator.md §2.2). 0: none left.
 */
static uint64_t segment_addr(struct ms_model *m, uint64_t size)
{
	while (m->hint_head < m->n_hints) {
		struct hint h = m->hints[m->hint_head++];
		if (h.size == size && ms__model_range_is_free(m, h.addr, size))
			return h.addr;
		if (h.size == size)
			break;
	}
	return ms__model_fresh_space(m, size, K_SMALL_BUF);
}

/* ---- the malloc path (§2, §3) --------------------------------------------------------- */

static int gc_active(const struct ms_model *m)
{
	return m->c.limit && m->c.ac.garbage_collection_threshold > 0;
}

/* Reserved bytes above which the garbage collector frees cached segments (§3.3). */
static uint64_t gc_threshold(const struct ms_model *m)
{
	return (uint64_t)(m->c.ac.garbage_collection_threshold * (double)m->c.limit);
}

static uint64_t expandable_size(const struct ms_model_block *b)
{
	return b->size + (b->next && !b->next->mapped ? b->next->size : 0);
}

enum { PEEK = 0, TAKE = 1, TAKE_IN_PLACE = 2 };

/*
 * get_free_block (§2.2): best fit on the stream, oversize rules. TAKE removes it from the
 * pool; TAKE_IN_PLACE leaves it there for alloc_found, which may put the remainder of a split
 * in its place (PEEK: only look).
 */
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
	if (take == TAKE)
		pool_remove(p, b);
	return b;
}
/* A segment of alloc_size more that the limit lets be: its reach (stats.limit_fit_max). */
static void limit_fit(struct ms_model *m, uint64_t alloc_size)
{
	if (m->c.limit && m->reserved + alloc_size > m->st.limit_fit_max)
		m->st.limit_fit_max = m->reserved + alloc_size;
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
	limit_fit(m, alloc_size);
	if (m->c.ac.expandable_segments && !(p->slot && m->priv[p->slot - 1].custom_allocator))
		return ms__model_alloc_expandable(m, p, stream, size, nomem);
	if (m->c.device_memory != UINT64_MAX && m->reserved + alloc_size > m->c.device_memory)
		return NULL;
	b = ms__model_blk_new(m);
	s = b ? ms__model_seg_new(m) : NULL;
	if (!s) {
		*nomem = 1;
		return NULL;
	}
	s->addr = segment_addr(m, alloc_size);
	if (!s->addr) {
		blk_release(m, b); /* no address space: as out of memory */
		return NULL;
	}
	if (m->c.dev && m->c.dev->seg_alloc(m->c.dev->ctx, s->addr, alloc_size)) {
		blk_release(m, b); /* cudaMalloc: out of memory */
		return NULL;
	}
	if (ms__model_range_add(m, s->addr, alloc_size, NULL)) {
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
	b->pool = p->slot;
	m->reserved += alloc_size;
	stat3(m->st.segment, p->small, 1);
	stat3(m->st.reserved_bytes, p->small, (int64_t)alloc_size);
	pool_stat(m, p->slot, (int64_t)alloc_size, 0, 1);
	m->st.num_device_alloc++;
	if (alloc_size >= max_split(m))
		stat_add(&m->st.oversize_segments, 1);
	if (alloc_size > m->st.largest_segment)
		m->st.largest_segment = alloc_size;
	if (m->c.on_segment)
		m->c.on_segment(m->c.ctx, MS_ACT_SEGMENT_ALLOC, s->addr, alloc_size, stream);
	return b;
}

/* release_block: a whole free segment goes back to the device (cudaFree). */
static void release_block(struct ms_model *m, struct pool *p, struct ms_model_block *b)
{
	uint64_t addr = b->addr, size = b->size, stream = b->stream;

	if (m->refuse_free) {
		if (!m->free_refused && m->c.on_segment)
			m->c.on_segment(m->c.ctx, MS_ACT_SEGMENT_FREE, addr, size, stream);
		m->st.num_device_free += !m->free_refused;
		m->free_refused = 1;
		return;
	}
	pool_remove(p, b);
	ms__model_range_del(m, addr);
	m->reserved -= size;
	stat3(m->st.segment, p->small, -1);
	stat3(m->st.reserved_bytes, p->small, -(int64_t)size);
	pool_stat(m, p->slot, -(int64_t)size, 0, -1);
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
	for (size_t i = 0; i < n && !m->free_refused; i++) {
		b = xs[i];
		if (ms__model_unmap_block(m, p, b) && whole_segment(b)) {
			unmapped_remove(p, b); /* release_expandable_segment: no trace entry */
			ms__model_range_del(m, b->xs->base);
			blk_release(m, b);
		}
	}
	ms_free(xs);
}

/* What empty_cache() would give back now: the default pools' whole free segments. */
static uint64_t releasable_bytes(const struct ms_model *m)
{
	const struct pool *pools[2] = {&m->large, &m->small};
	uint64_t n = 0;

	for (int k = 0; k < 2; k++)
		for (const struct ms_model_block *b = lower_bound(pools[k]->root, 0, 0, 0); b;
		     b = lower_bound(pools[k]->root, b->stream, b->size, b->addr + 1))
			if (releasable(b))
				n += b->size;
	return n;
}

void ms_model_empty_cache(struct ms_model *m)
{
	/* the default pools only where no capture is underway (after synchronize_and_free_events,
	   whose pending frees complete as the trace records them); a refused cudaFree says one
	   was, where the trace does not */
	if (!m->captures_underway && !m->refuse_free) {
		m->st.num_sync_all_streams++;
		release_pool(m, &m->large);
		release_pool(m, &m->small);
	}
	/* then the private pools nothing uses any more, even during a capture (§14.5) */
	for (size_t i = 0; i + 1 < m->n_pools; i++)
		if (m->priv[i].released) {
			release_pool(m, &m->priv[i].small);
			release_pool(m, &m->priv[i].large);
		}
}

/* The slot of pool code (0: the default pools), or -1 where the model has not seen the pool. */
static int pool_find(const struct ms_model *m, uint16_t code)
{
	if (code == MS_POOL_DEFAULT || code == MS_POOL_UNKNOWN)
		return 0;
	for (size_t i = 1; i < m->n_pools; i++)
		if (m->pools[i].code == code)
			return (int)i;
	return -1;
}

int ms__model_pool_slot(struct ms_model *m, uint16_t code)
{
	size_t i;

	if (code == MS_POOL_DEFAULT || code == MS_POOL_UNKNOWN)
		return 0;
	for (i = 1; i < m->n_pools; i++)
		if (m->pools[i].code == code)
			return (int)i;
	if (m->n_pools > UINT16_MAX ||
	    ms_grow(&m->priv, &m->cap_priv, m->n_pools, sizeof(*m->priv)) ||
	    ms_grow(&m->pools, &m->cap_pools, m->n_pools + 1, sizeof(*m->pools)))
		return -1;
	memset(&m->priv[i - 1], 0, sizeof(m->priv[i - 1]));
	m->priv[i - 1].small.small = 1;
	m->priv[i - 1].small.slot = m->priv[i - 1].large.slot = (uint16_t)i;
	memset(&m->pools[i], 0, sizeof(m->pools[i]));
	m->pools[i].code = code;
	m->n_pools++;
	return (int)i;
}

ms_status ms_model_release_pool(struct ms_model *m, uint16_t pool)
{
	int slot = pool_find(m, pool);

	/* a pool the model has no block of has nothing to give back */
	if (slot > 0)
		m->priv[slot - 1].released = 1;
	return MS_OK;
}

/* The private pool of code pool, made if new (*out NULL for a default pool's code). */
static ms_status private_pool(struct ms_model *m, uint16_t pool, struct ppool **out)
{
	int slot = ms__model_pool_slot(m, pool);

	if (slot < 0)
		return MS_ERR_NOMEM;
	*out = slot > 0 ? &m->priv[slot - 1] : NULL;
	return MS_OK;
}

/* Set the flag at offset off of the private pool of code pool (none for a default pool's). */
static ms_status pool_flag(struct ms_model *m, uint16_t pool, size_t off)
{
	struct ppool *q;

	MS_TRY(private_pool(m, pool, &q));
	if (q)
		*((uint8_t *)q + off) = 1;
	return MS_OK;
}

ms_status ms_model_pool_custom_allocator(struct ms_model *m, uint16_t pool)
{
	return pool_flag(m, pool, offsetof(struct ppool, custom_allocator));
}

ms_status ms_model_pool_no_split(struct ms_model *m, uint16_t pool)
{
	return pool_flag(m, pool, offsetof(struct ppool, no_split));
}

void ms_model_empty_pool_cache(struct ms_model *m, uint16_t pool)
{
	int slot = pool_find(m, pool);

	m->st.num_sync_all_streams++;
	if (slot > 0) {
		release_pool(m, &m->priv[slot - 1].small);
		release_pool(m, &m->priv[slot - 1].large);
	}
}

void ms_model_set_captures_underway(struct ms_model *m, uint32_t n)
{
	m->captures_underway = n;
}

void ms_model_refuse_free(struct ms_model *m, int on)
{
	m->refuse_free = (uint8_t) !!on;
	m->free_refused = 0;
}

ms_status ms_model_pool_use_on_oom(struct ms_model *m, uint16_t pool)
{
	int slot = ms__model_pool_slot(m, pool);

	if (slot < 0)
		return MS_ERR_NOMEM;
	if (slot > 0 && !m->priv[slot - 1].use_on_oom) {
		m->priv[slot - 1].use_on_oom = 1;
		/* tried in the order marked: kept as a list of slots */
		if (ms_grow(&m->on_oom, &m->cap_on_oom, m->n_on_oom + 1, sizeof(*m->on_oom)))
			return MS_ERR_NOMEM;
		m->on_oom[m->n_on_oom++] = (uint16_t)slot;
	}
	return MS_OK;
}

/*
 * try_mempool_fallback (§14.6): a free block of the size class in a use_on_oom pool not
 * released, the first found in the order the pools were marked; *p becomes its pool.
 */
static struct ms_model_block *use_on_oom_block(struct ms_model *m, struct pool **p, uint64_t stream,
                                               uint64_t size, int take)
{
	for (size_t i = 0; i < m->n_on_oom; i++) {
		uint16_t slot = m->on_oom[i];
		struct pool *q;
		struct ms_model_block *b;
		if (m->priv[slot - 1].released)
			continue;
		q = pool_at(m, slot, (*p)->small);
		if ((b = get_free_block(m, q, stream, size, take))) {
			*p = q;
			return b;
		}
	}
	return NULL;
}

const struct ms_model_pool *ms_model_pools(const struct ms_model *m, size_t *n)
{
	*n = m->n_pools;
	return m->pools;
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
	uint64_t threshold = gc_threshold(m);
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
	/* every pass frees all candidates at or above the average age, a double in PyTorch */
	while (reclaimed < target && freed && count > 0) {
		double threshold_age = (double)total_age / (double)count;
		freed = 0;
		for (b = lower_bound(p->root, 0, 0, 0); b;) {
			struct ms_model_block *nx =
			        lower_bound(p->root, b->stream, b->size, b->addr + 1);
			uint64_t age = p->gc_clock - b->gc_base;
			if (releasable(b) && (double)age >= threshold_age) {
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

	if (b->pool && m->priv[b->pool - 1].no_split)
		return 0; /* MemPool(no_split=True) */
	if (b->small || m->c.ac.expandable_segments)
		return remaining >= K_MIN_BLOCK;
	return size < max_split(m) && remaining > K_SMALL_SIZE;
}

/*
 * alloc_found_block (§2.4) with the statistics of §7. b is out of the pool, or still in it
 * (TAKE_IN_PLACE) as the best fit for size: then a remainder of at least size takes its place
 * in the treap, for nothing can sort between the two (b was the first block of size or more).
 */
static struct ms_model_block *alloc_found(struct ms_model *m, struct pool *p,
                                          struct ms_model_block *b, uint64_t size, uint64_t orig,
                                          int *nomem)
{
	int already_split = !whole_segment(b);

	if (should_split(m, b, size)) {
		struct ms_model_block *rest = ms__model_blk_new(m);
		if (!rest) {
			if (!b->in_pool)
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
		rest->pool = b->pool;
		rest->xs = b->xs;
		rest->prev = b;
		rest->next = b->next;
		if (b->next)
			b->next->prev = rest;
		b->next = rest;
		rest->gc_base = p->gc_clock;
		if (b->in_pool && !b->xs && rest->size >= size) {
			p->root = ms__model_treap_replace(p->root, b, rest);
			rest->in_pool = 1;
			b->in_pool = 0;
		} else {
			if (b->in_pool)
				pool_remove(p, b);
			pool_insert(p, rest);
		}
		b->size = size;
		if (b->xs) {
			/* expandable segments are left out of inactive_split (§4) */
		} else if (already_split) {
			stat3(m->st.inactive_split_bytes, p->small, -(int64_t)size);
		} else {
			stat3(m->st.inactive_split_bytes, p->small, (int64_t)rest->size);
			stat3(m->st.inactive_split, p->small, 1);
		}
	} else {
		if (b->in_pool)
			pool_remove(p, b);
		if (already_split && !b->xs) {
			stat3(m->st.inactive_split_bytes, p->small, -(int64_t)b->size);
			stat3(m->st.inactive_split, p->small, -1);
		}
	}
	b->allocated = 1;
	b->pending = 0;
	b->requested = orig;
	stat3(m->st.allocation, p->small, 1);
	stat3(m->st.allocated_bytes, p->small, (int64_t)b->size);
	pool_stat(m, p->slot, 0, (int64_t)b->size, 0);
	stat3(m->st.active, p->small, 1);
	stat3(m->st.active_bytes, p->small, (int64_t)b->size);
	stat3(m->st.requested_bytes, p->small, (int64_t)orig);
	if (b->size >= max_split(m))
		stat_add(&m->st.oversize_allocations, 1);
	return b;
}
ms_status ms_model_malloc(struct ms_model *m, uint64_t n, uint64_t stream,
                          struct ms_model_block **out, struct ms_model_oom *oom)
{
	return ms_model_malloc_pool(m, n, stream, MS_POOL_DEFAULT, out, oom);
}

ms_status ms_model_malloc_pool(struct ms_model *m, uint64_t n, uint64_t stream, uint16_t pool,
                               struct ms_model_block **out, struct ms_model_oom *oom)
{
	uint64_t size = ms_model_round_size(m, n), alloc_size;
	int small = size <= K_SMALL_SIZE, nomem = 0, slot = ms__model_pool_slot(m, pool);
	struct pool *p;
	struct ms_model_block *b;

	*out = NULL;
	if (slot < 0)
		return MS_ERR_NOMEM;
	p = pool_at(m, (uint16_t)slot, small);
	if (n >= (1ull << 60)) { /* "Tried to allocate more than 1EB memory" */
		m->st.num_ooms++;
		ms__model_fill_oom(m, n, size, size, stream, oom);
		return MS_OK;
	}
	alloc_size = ms_model_allocation_size(m, size);
	b = get_free_block(m, p, stream, size, TAKE_IN_PLACE);
	if (!b) {
		if (gc_active(m))
			garbage_collect(m);
		b = alloc_block(m, p, stream, size, alloc_size, 0, &nomem);
		/* the default pool's request: a free block of a use_on_oom MemPool (§14.6) */
		if (!b && !nomem && !slot && m->n_on_oom &&
		    (b = use_on_oom_block(m, &p, stream, size, 1)))
			m->st.use_on_oom_fallbacks++;
		if (!b && !nomem && release_available(m, p, stream, size))
			b = alloc_block(m, p, stream, size, alloc_size, 0, &nomem);
		/* a request routed to a private pool skips the full flush (§14.2), and so does
		   any while a capture or a use_mem_pool is underway (§14.1) */
		if (!b && !nomem && !slot && !m->captures_underway) {
			ms_model_empty_cache(m);
			b = alloc_block(m, p, stream, size, alloc_size, 1, &nomem);
		}
	}
	if (nomem)
		return MS_ERR_NOMEM;
	if (!b) {
		m->st.num_ooms++;
		ms__model_fill_oom(m, n, size, alloc_size, stream, oom);
		if (oom && !slot && m->captures_underway) {
			oom->retry_skipped = 1;
			oom->releasable = releasable_bytes(m);
		}
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
	return ms_model_fits_without_release_pool(m, n, stream, MS_POOL_DEFAULT);
}

int ms_model_fits_without_release_pool(struct ms_model *m, uint64_t n, uint64_t stream,
                                       uint16_t pool)
{
	uint64_t size = ms_model_round_size(m, n), alloc_size = ms_model_allocation_size(m, size);
	int slot = pool_find(m, pool);

	if (slot >= 0 &&
	    get_free_block(m, pool_at(m, (uint16_t)slot, size <= K_SMALL_SIZE), stream, size, PEEK))
		return 1;
	/* the garbage collector runs first, and releases (§3.3) */
	if (gc_active(m) && m->reserved > gc_threshold(m))
		return 0;
	/* a private pool's request never empties the caches itself (§14.2), nor one made while a
	   capture or a use_mem_pool is underway (§14.1) */
	if ((pool != MS_POOL_DEFAULT && pool != MS_POOL_UNKNOWN) || m->captures_underway)
		return 1;
	if (!(m->c.limit && m->reserved + alloc_size > m->c.limit))
		limit_fit(m, alloc_size);
	if ((m->c.limit && m->reserved + alloc_size > m->c.limit) ||
	    (m->c.device_memory != UINT64_MAX && m->reserved + alloc_size > m->c.device_memory)) {
		struct pool *p = pool_at(m, 0, size <= K_SMALL_SIZE);
		/* a use_on_oom MemPool's free block serves it before any release (§14.6) */
		return m->n_on_oom && use_on_oom_block(m, &p, stream, size, 0) != NULL;
	}
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
	pool_stat(m, b->pool, 0, -(int64_t)b->size, 0);
	if (b->size >= max_split(m))
		stat_add(&m->st.oversize_allocations, -1);
}

uint64_t ms__model_try_merge(struct ms_model *m, struct pool *p, struct ms_model_block *b,
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
	struct pool *p = blk_pool(m, b);
	uint64_t orig_size = b->size, requested = b->requested, sub;
	struct ms_model_block *cand[2];

	if (b->allocated)
		ms_model_free_requested(m, b); /* a completed free implies the request */
	b->pending = 0;
	int64_t net_blocks = 0, net_bytes = 0;

	cand[0] = b->prev;
	cand[1] = b->next;
	for (int i = 0; i < 2; i++) {
		sub = ms__model_try_merge(m, p, b, cand[i]);
		if (sub) {
			net_blocks -= 1;
			net_bytes -= (int64_t)sub;
		}
	}
	b->gc_base = p->gc_clock;
	pool_insert(p, b);
	if (!whole_segment(b)) {
		net_blocks += 1;
		net_bytes += (int64_t)b->size;
	}
	/* as free_block counts them: the merges and the block's own split, as one net change each
	   (the cumulative allocated and freed counters see the net, not its parts) */
	if (!b->xs) {
		stat3(m->st.inactive_split, p->small, net_blocks);
		stat3(m->st.inactive_split_bytes, p->small, net_bytes);
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

uint64_t ms_model_block_requested(const struct ms_model_block *b)
{
	return b->requested;
}

const struct ms_model_stats *ms_model_stats(const struct ms_model *m)
{
	return &m->st;
}

/* ---- the caller's labels on a block ----------------------------------------------- */

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
