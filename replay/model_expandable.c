/*
 * Expandable segments in the allocator model (docs/torch-allocator.md §4): per-stream
 * reservations of address space mapped page by page, and unmapped page by page on release.
 */
#include "replay/model_internal.h"

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
	size_t i = ms__model_range_find(m, h);
	struct range *r;
	struct pool *p;
	struct ms_model_block *u;

	if (i == m->n_ranges || !m->ranges[i].xs || m->ranges[i].addr >= h)
		return 0;
	r = &m->ranges[i];
	/* the reservation is whole pages; the next one starts where the driver put it */
	h = r->addr + (h - r->addr) / r->xs->page * r->xs->page;
	p = pool_at(m, r->xs->pool, r->xs->small);
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
	/* address space for 1 1/8 of the device's memory (1 TiB where it has no bound) */
	total = m->c.device_memory < (1ull << 48) ? m->c.device_memory : (1ull << 40);
	space = (total + total / 8 + page - 1) / page * page;
	xs = ms__model_slab_alloc(m, sizeof(*xs));
	b = xs ? ms__model_blk_new(m) : NULL;
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
		i = ms__model_range_find(m, h);
		if (i < m->n_ranges && m->ranges[i].addr > h && m->ranges[i].addr - h < space)
			space = (m->ranges[i].addr - h) / page * page;
	}
	if (space && m->hint_head < m->n_hints &&
	    ms__model_range_is_free(m, m->hints[m->hint_head].addr, space)) {
		xs->base = m->hints[m->hint_head].addr;
	} else {
		space = (total + total / 8 + page - 1) / page * page;
		xs->base = ms__model_fresh_space(m, space, page);
	}
	if (!xs->base) {
		blk_release(m, b);
		return NULL; /* no address space: as out of memory */
	}
	if (ms__model_range_add(m, xs->base, space, xs)) {
		blk_release(m, b);
		*nomem = 1;
		return NULL;
	}
	if (m->c.dev && m->c.dev->reserve(m->c.dev->ctx, xs->base, space, page)) {
		ms__model_range_del(m, xs->base);
		blk_release(m, b);
		return NULL; /* no address space: as out of memory */
	}
	xs->size = space;
	xs->page = page;
	xs->stream = stream;
	xs->small = (uint8_t)p->small;
	xs->pool = p->slot;
	b->addr = xs->base;
	b->size = space;
	b->stream = stream;
	b->small = (uint8_t)p->small;
	b->pool = p->slot;
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
		struct ms_model_block *rest = ms__model_blk_new(m);
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
		rest->pool = b->pool;
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
	ms__model_try_merge(m, p, b, b->prev);
	ms__model_try_merge(m, p, b, b->next);
	b->gc_base = p->gc_clock;
	pool_insert(p, b);
	m->reserved += mapped;
	stat3(m->st.reserved_bytes, p->small, (int64_t)mapped);
	pool_stat(m, p->slot, (int64_t)mapped, 0, 0);
	m->st.num_device_alloc++;
	hint_pop(m);
	if (m->c.on_segment)
		m->c.on_segment(m->c.ctx, MS_ACT_SEGMENT_MAP, b->addr + b->size - mapped, mapped,
		                b->stream);
	return 1;
}

struct ms_model_block *ms__model_alloc_expandable(struct ms_model *m, struct pool *p,
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

int ms__model_unmap_block(struct ms_model *m, struct pool *p, struct ms_model_block *b)
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
		struct ms_model_block *f = ms__model_blk_new(m);
		if (!f) {
			pool_insert(p, b);
			return 0;
		}
		f->addr = b->addr;
		f->size = before;
		f->stream = b->stream;
		f->small = b->small;
		f->pool = b->pool;
		f->xs = b->xs;
		f->prev = b->prev;
		f->next = b;
		if (b->prev)
			b->prev->next = f;
		b->prev = f;
		pool_insert(p, f);
	}
	if (after) {
		struct ms_model_block *f = ms__model_blk_new(m);
		if (!f) {
			pool_insert(p, b); /* the block before stays split off: harmless */
			return 0;
		}
		f->addr = end;
		f->size = after;
		f->stream = b->stream;
		f->small = b->small;
		f->pool = b->pool;
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
	ms__model_try_merge(m, p, b, b->prev);
	ms__model_try_merge(m, p, b, b->next);
	unmapped_insert(p, b);
	m->reserved -= len;
	stat3(m->st.reserved_bytes, p->small, -(int64_t)len);
	pool_stat(m, p->slot, -(int64_t)len, 0, 0);
	m->st.num_device_free++;
	if (m->c.dev)
		m->c.dev->unmap(m->c.dev->ctx, begin, len);
	if (m->c.on_segment)
		m->c.on_segment(m->c.ctx, MS_ACT_SEGMENT_UNMAP, begin, len, b->stream);
	return 1;
}
