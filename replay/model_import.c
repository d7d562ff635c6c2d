/*
 * The state before a trace that starts mid-run, put into the allocator model: the segments
 * and blocks that replay/rebuild.c rebuilds from the end state (model.h: ms_model_import_segment).
 */
#include "replay/model_internal.h"

#include <string.h>

#include "common/alloc.h"

/*
 * One block of an imported segment (of expandable range xs or segment sg), linked after prev:
 * a free one goes to its pool, an active one counts in the statistics. NULL: out of memory.
 */
static struct ms_model_block *import_block(struct ms_model *m, struct pool *p,
                                           const struct ms_block *k, uint64_t stream, int small,
                                           struct xseg *xs, struct mseg *sg,
                                           struct ms_model_block *prev)
{
	struct ms_model_block *b = ms__model_blk_new(m);

	if (!b)
		return NULL;
	b->addr = k->addr;
	b->size = k->size;
	b->requested = k->requested_size;
	b->stream = stream;
	b->small = (uint8_t)small;
	b->pool = p->slot;
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
		pool_stat(m, p->slot, 0, (int64_t)b->size, 0);
	} else {
		b->pending = 1;
	}
	stat3(m->st.active, small, 1);
	stat3(m->st.active_bytes, small, (int64_t)b->size);
	stat3(m->st.requested_bytes, small, (int64_t)b->requested);
	return b;
}

/*
 * One mapped range of an expandable segment. Ranges come in address order; the first of a
 * (stream, pool) opens a reservation at its address, later ones are cut out of its unmapped
 * tail, and what lies between them stays unmapped.
 */
/* The pool slot of an imported segment; -1: out of memory. */
static int import_slot(struct ms_model *m, const struct ms_segment *s)
{
	uint16_t code;

	if (ms_pool_code(s->pool_id[0], s->pool_id[1], &code))
		code = MS_POOL_UNKNOWN; /* no id PyTorch makes: the default pools */
	return ms__model_pool_slot(m, code);
}

static ms_status import_range(struct ms_model *m, const struct ms_segment *s,
                              const struct ms_block *blocks, struct ms_model_block **out)
{
	int slot = import_slot(m, s);
	struct pool *p;
	struct xseg *xs = NULL;
	struct ms_model_block *tail, *prev;
	uint64_t end = s->addr + s->total_size, total = 0;

	for (uint32_t i = 0; i < s->n_blocks; i++)
		total += blocks[i].size;
	if (slot < 0)
		return MS_ERR_NOMEM;
	p = pool_at(m, (uint16_t)slot, s->is_small);
	if (total != s->total_size || !s->n_blocks)
		return MS_ERR_INVALID_ARG;
	for (size_t i = 0; i < m->n_imported; i++)
		if (m->imported[i]->stream == s->stream && m->imported[i]->small == s->is_small &&
		    m->imported[i]->pool == slot)
			xs = m->imported[i];
	if (!xs) {
		uint64_t page = xs_page(m, s->is_small), dev;
		dev = m->c.device_memory != UINT64_MAX ? m->c.device_memory : (1ull << 40);
		xs = ms__model_slab_alloc(m, sizeof(*xs));
		tail = xs ? ms__model_blk_new(m) : NULL;
		if (!tail || ms_grow(&m->imported, &m->cap_imported, m->n_imported + 1, sizeof(xs)))
			return MS_ERR_NOMEM;
		memset(xs, 0, sizeof(*xs));
		xs->base = s->addr;
		xs->page = page;
		xs->size = (dev + dev / 8 + page - 1) / page * page;
		xs->stream = s->stream;
		xs->small = s->is_small;
		xs->pool = (uint16_t)slot;
		/*
		 * The device's size may be unknown: a reservation opened earlier may reach over
		 * this one's start. Reservations are apart in reality, so end that one here.
		 */
		for (size_t i = 0; i < m->n_imported; i++) {
			struct xseg *o = m->imported[i];
			if (o->base < xs->base && xs->base < o->base + o->size && o->tail &&
			    o->tail->addr <= xs->base) {
				struct pool *op = pool_at(m, o->pool, o->small);
				ms__model_range_del(m, o->base);
				o->size = xs->base - o->base;
				if (ms__model_range_add(m, o->base, o->size, o))
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
		if (!ms__model_range_is_free(m, xs->base, xs->size)) {
			/* up to the next range in use */
			size_t k = ms__model_range_find(m, xs->base);
			if (k < m->n_ranges && m->ranges[k].addr > xs->base)
				xs->size = (m->ranges[k].addr - xs->base) / page * page;
		}
		if (!xs->size || !ms__model_range_is_free(m, xs->base, xs->size) ||
		    ms__model_range_add(m, xs->base, xs->size, xs))
			return MS_ERR_INVALID_ARG;
		tail->addr = xs->base;
		tail->size = xs->size;
		tail->stream = s->stream;
		tail->small = s->is_small;
		tail->pool = (uint16_t)slot;
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
		struct ms_model_block *gap = ms__model_blk_new(m);
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
	pool_stat(m, p->slot, (int64_t)s->total_size, 0, 0);
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
	int small = s->is_small, slot;
	struct pool *p;
	uint64_t total = 0;

	if (s->is_expandable)
		return import_range(m, s, blocks, out);
	if ((slot = import_slot(m, s)) < 0)
		return MS_ERR_NOMEM;
	p = pool_at(m, (uint16_t)slot, small);
	for (uint32_t i = 0; i < s->n_blocks; i++)
		total += blocks[i].size;
	if (total != s->total_size || !s->n_blocks ||
	    !ms__model_range_is_free(m, s->addr, s->total_size))
		return MS_ERR_INVALID_ARG;
	sg = ms__model_seg_new(m);
	if (!sg || ms__model_range_add(m, s->addr, s->total_size, NULL))
		return MS_ERR_NOMEM;
	sg->addr = s->addr;
	sg->size = s->total_size;
	sg->stream = s->stream;
	sg->small = (uint8_t)small;
	m->reserved += s->total_size;
	stat3(m->st.segment, small, 1);
	stat3(m->st.reserved_bytes, small, (int64_t)s->total_size);
	pool_stat(m, p->slot, (int64_t)s->total_size, 0, 1);
	if (s->total_size >= max_split(m))
		stat_add(&m->st.oversize_segments, 1);
	if (s->total_size > m->st.largest_segment)
		m->st.largest_segment = s->total_size;
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
