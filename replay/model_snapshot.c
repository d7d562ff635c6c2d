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
