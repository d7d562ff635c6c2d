/* verify's comparison (verify.h). */
#include "replay/verify.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

/* Reserved bytes over the recorded segment events: their peak. */
static uint64_t recorded_peak(const struct ms_replay_result *r)
{
	/* a mid-run trace starts with what was reserved before its first event */
	int64_t cur = (int64_t)r->initial_reserved, peak = cur;

	for (size_t i = 0; i < r->n_recorded; i++) {
		const struct ms_seg_event *e = &r->recorded[i];
		if (e->action == MS_ACT_SEGMENT_ALLOC || e->action == MS_ACT_SEGMENT_MAP)
			cur += (int64_t)e->size;
		else
			cur -= (int64_t)e->size;
		if (cur > peak)
			peak = cur;
	}
	return (uint64_t)peak;
}

/* Order segments by (total, allocated, blocks, allocated blocks) to compare them as multisets. */
static int cmp_end(const void *a, const void *b)
{
	const struct ms_end_segment *x = a, *y = b;

	if (x->total_size != y->total_size)
		return x->total_size < y->total_size ? -1 : 1;
	if (x->allocated_size != y->allocated_size)
		return x->allocated_size < y->allocated_size ? -1 : 1;
	if (x->n_blocks != y->n_blocks)
		return x->n_blocks < y->n_blocks ? -1 : 1;
	return x->n_allocated < y->n_allocated ? -1 : x->n_allocated > y->n_allocated;
}

/* The model's segments at the end (its snapshot) against PyTorch's, addresses aside. */
static int same_end_state(const struct ms_replay_snap *snap, const struct ms_replay_result *r)
{
	struct ms_end_segment *m;
	const struct ms_block *b = snap->blocks;
	int same;

	if (!snap->taken || snap->n_segs != r->n_end_segs)
		return 0;
	if (!snap->n_segs)
		return 1;
	m = ms_calloc(snap->n_segs, sizeof(*m));
	struct ms_end_segment *t = ms_calloc(snap->n_segs, sizeof(*t));
	if (!m || !t) {
		ms_free(m);
		ms_free(t);
		return 0;
	}
	for (size_t i = 0; i < snap->n_segs; i++) {
		const struct ms_segment *s = &snap->segs[i];
		m[i].total_size = s->total_size;
		m[i].allocated_size = s->allocated_size;
		m[i].n_blocks = s->n_blocks;
		for (uint32_t k = 0; k < s->n_blocks; k++)
			m[i].n_allocated += b[k].state == MS_BLOCK_ACTIVE_ALLOCATED;
		b += s->n_blocks;
	}
	memcpy(t, r->end_segs, snap->n_segs * sizeof(*t));
	qsort(m, snap->n_segs, sizeof(*m), cmp_end);
	qsort(t, snap->n_segs, sizeof(*t), cmp_end);
	same = 1;
	for (size_t i = 0; i < snap->n_segs && same; i++)
		same = m[i].total_size == t[i].total_size &&
		       m[i].allocated_size == t[i].allocated_size &&
		       m[i].n_blocks == t[i].n_blocks && m[i].n_allocated == t[i].n_allocated;
	ms_free(m);
	ms_free(t);
	return same;
}

void ms_verify_compare(const struct ms_replay_result *r, const struct ms_replay_result *model,
                       struct ms_verify *v)
{
	memset(v, 0, sizeof(*v));
	v->against_model = model != NULL;
	/* sim: the model against the recording; torch: PyTorch's allocator against the model */
	v->ref = model ? model->produced : r->recorded;
	v->n_ref = model ? model->n_produced : r->n_recorded;
	v->first_divergence =
	        ms_seg_events_first_diff(r->produced, r->n_produced, v->ref, v->n_ref);
	v->ref_peak = model ? (uint64_t)model->stats.reserved_bytes[0].peak : recorded_peak(r);
	v->identical = v->first_divergence == SIZE_MAX &&
	               (uint64_t)r->stats.reserved_bytes[0].peak == v->ref_peak &&
	               r->reproduced_ooms == r->recorded_ooms && !r->ended_by_oom;
	v->end_same = 1;
	if (model) {
		v->end_same = same_end_state(&model->snap, r);
		v->identical = v->identical && v->end_same &&
		               r->ended_by_oom == model->ended_by_oom &&
		               (uint64_t)r->stats.allocated_bytes[0].peak ==
		                       (uint64_t)model->stats.allocated_bytes[0].peak;
	}
}
