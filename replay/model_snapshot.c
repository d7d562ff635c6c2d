/*
 * The allocator model's state at a moment, as PyTorch's snapshot reports it: segments and their
 * blocks in address order (model.h: ms_model_snapshot).
 */
#include "replay/model_internal.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/hash.h"

struct snap {
	struct ms_segment *segs;
	size_t n_segs, cap_segs;
	struct ms_block *blocks;
	size_t n_blocks, cap_blocks;
	struct ms_u64map seen;
	const struct ms_model_pool *pools; /* by slot */
};

/* A segment's place: its address, and where its blocks are in the unordered list. */
struct seg_at {
	uint64_t addr;
	size_t seg, first;
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
	ms_pool_id(sn->pools[h->pool].code, g->pool_id);
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
	k->state = block_state(q);
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

static int seg_at_cmp(const void *x, const void *y)
{
	const struct seg_at *a = x, *b = y;
	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

ms_status ms_model_snapshot(const struct ms_model *m, struct ms_model_block *const *held,
                            size_t n_held, struct ms_segment **segs, size_t *n_segs,
                            struct ms_block **blocks, size_t *n_blocks)
{
	struct snap sn;
	ms_status s = MS_OK;

	memset(&sn, 0, sizeof(sn));
	sn.pools = m->pools;
	for (size_t k = 0; !s && k < m->n_pools * 2; k++) {
		const struct pool *p = pool_at((struct ms_model *)m, (uint16_t)(k / 2), !(k & 1));
		s = snap_tree(&sn, p->root);
		if (!s)
			s = snap_tree(&sn, p->unmapped);
	}
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
		struct seg_at *at = ms_malloc(sizeof(*at) * sn.n_segs);
		struct ms_segment *copy = ms_malloc(sizeof(*copy) * sn.n_segs);
		size_t k = 0, first = 0;
		if (!ordered || !at || !copy) {
			ms_free(ordered);
			ms_free(at);
			ms_free(copy);
			ms_free(sn.segs);
			ms_free(sn.blocks);
			return MS_ERR_NOMEM;
		}
		for (size_t i = 0; i < sn.n_segs; i++) {
			at[i].addr = sn.segs[i].addr;
			at[i].seg = i;
			at[i].first = first;
			first += sn.segs[i].n_blocks;
		}
		qsort(at, sn.n_segs, sizeof(*at), seg_at_cmp);
		for (size_t i = 0; i < sn.n_segs; i++) {
			copy[i] = sn.segs[at[i].seg];
			memcpy(ordered + k, sn.blocks + at[i].first,
			       sizeof(*ordered) * copy[i].n_blocks);
			k += copy[i].n_blocks;
		}
		ms_free(sn.segs);
		ms_free(sn.blocks);
		ms_free(at);
		sn.segs = copy;
		sn.blocks = ordered;
	}
	*segs = sn.segs;
	*n_segs = sn.n_segs;
	*blocks = sn.blocks;
	*n_blocks = sn.n_blocks;
	return MS_OK;
}
