/* The end state a snapshot recorded, as a replay's snapshot: drawing without a trace. */
#include "replay/end_state.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/status.h"
#include "parse/trace.h"
#include "replay/alloc_conf.h"

static void count(struct ms_stat *s, int64_t v)
{
	s[MS_POOL_ALL].current += v;
	s[MS_POOL_ALL].peak = s[MS_POOL_ALL].current;
}

static void count_pool(struct ms_stat *s, int small, int64_t v)
{
	count(s, v);
	s[small ? MS_POOL_SMALL : MS_POOL_LARGE].current += v;
	s[small ? MS_POOL_SMALL : MS_POOL_LARGE].peak =
	        s[small ? MS_POOL_SMALL : MS_POOL_LARGE].current;
}

struct seg_ref {
	uint64_t addr;
	size_t i;
};

static int by_addr(const void *x, const void *y)
{
	const struct seg_ref *a = x, *b = y;
	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

ms_status ms_end_state_snap(const struct ms_trace *t, uint32_t dev, struct ms_replay_result *r,
                            struct ms_diag *d)
{
	struct ms_replay_snap *sn = &r->snap;
	struct ms_model_stats *st = &sn->stats;
	struct seg_ref *order;
	size_t n = 0, nb = 0, k = 0, kb = 0;

	memset(r, 0, sizeof(*r));
	r->device = dev;
	r->device_memory = UINT64_MAX;
	r->events_total = t->n_events;
	snprintf(r->backend, sizeof(r->backend), "sim");
	snprintf(r->alloc_conf, sizeof(r->alloc_conf), "%s",
	         ms_settings_alloc_conf(&t->meta.settings));
	r->settings_recorded = t->meta.settings.present;
	r->expandable_seen = !r->settings_recorded && t->meta.settings.expandable_seen;
	for (size_t i = 0; i < t->n_segs; i++)
		if (t->segs[i].device == dev) {
			n++;
			nb += t->segs[i].n_blocks;
		}
	if (!n)
		return ms__diag_set(d, MS_ERR_INVALID_ARG, -1, -1, "no segments on device %u",
		                    (unsigned)dev);
	order = ms_malloc(n * sizeof(*order));
	sn->segs = ms_malloc(n * sizeof(*sn->segs));
	sn->blocks = ms_malloc((nb ? nb : 1) * sizeof(*sn->blocks));
	if (!order || !sn->segs || !sn->blocks) {
		ms_free(order);
		ms_replay_result_release(r);
		return MS_ERR_NOMEM;
	}
	for (size_t i = 0; i < t->n_segs; i++)
		if (t->segs[i].device == dev)
			order[k++] = (struct seg_ref){t->segs[i].addr, i};
	qsort(order, n, sizeof(*order), by_addr);
	for (k = 0; k < n; k++) {
		const struct ms_segment *g = &t->segs[order[k].i];
		const struct ms_block *b = &t->blocks[t->seg_block0[order[k].i]];
		int small = g->is_small;
		sn->segs[k] = *g;
		memcpy(sn->blocks + kb, b, g->n_blocks * sizeof(*b));
		kb += g->n_blocks;
		count_pool(st->segment, small, 1);
		count_pool(st->reserved_bytes, small, (int64_t)g->total_size);
		for (uint32_t j = 0; j < g->n_blocks; j++) {
			if (b[j].state == MS_BLOCK_ACTIVE_ALLOCATED) {
				count_pool(st->allocation, small, 1);
				count_pool(st->allocated_bytes, small, (int64_t)b[j].size);
				count_pool(st->requested_bytes, small,
				           (int64_t)b[j].requested_size);
			}
			if (b[j].state != MS_BLOCK_INACTIVE) {
				count_pool(st->active, small, 1);
				count_pool(st->active_bytes, small, (int64_t)b[j].size);
			} else if (g->n_blocks > 1) {
				count_pool(st->inactive_split, small, 1);
				count_pool(st->inactive_split_bytes, small, (int64_t)b[j].size);
			}
		}
	}
	ms_free(order);
	sn->n_segs = n;
	sn->n_blocks = nb;
	sn->taken = 1;
	sn->index = t->n_events ? t->n_events - 1 : 0;
	return MS_OK;
}
