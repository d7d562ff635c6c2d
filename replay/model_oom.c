/*
 * What the allocator model tells about a failed allocation: the numbers of PyTorch's OOM
 * message, the free bytes inside reserved segments, the largest free blocks and their neighbours.
 */
#include "replay/model_internal.h"

#include <string.h>

void ms_model_free_space(const struct ms_model *m, uint64_t *free_bytes, uint64_t *largest)
{
	*free_bytes = *largest = 0;
	for (size_t k = 0; k < m->n_pools * 2; k++) {
		const struct pool *p =
		        pool_at((struct ms_model *)m, (uint16_t)(k / 2), (int)(k & 1));
		const struct ms_model_block *b = lower_bound(p->root, 0, 0, 0);
		for (; b; b = lower_bound(p->root, b->stream, b->size, b->addr + 1)) {
			*free_bytes += b->size;
			if (b->size > *largest)
				*largest = b->size;
		}
	}
}

void ms__model_fill_oom(const struct ms_model *m, uint64_t n, uint64_t size, uint64_t alloc_size,
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
	oom->retry_skipped = 0;
	oom->releasable = 0;
	ms_model_free_space(m, &oom->free_in_reserved, &oom->largest_free);
}

static void describe(const struct ms_model_block *b, struct ms_model_neighbour *n)
{
	memset(n, 0, sizeof(*n));
	if (!b)
		return;
	n->present = 1;
	n->addr = b->addr;
	n->size = b->size;
	n->state = block_state(b);
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

const char *ms_model_neighbour_state(const struct ms_model_neighbour *n)
{
	if (!n->mapped)
		return "unmapped";
	return n->state == MS_BLOCK_ACTIVE_ALLOCATED      ? "allocated"
	       : n->state == MS_BLOCK_ACTIVE_PENDING_FREE ? "pending_free"
	                                                  : "free";
}
