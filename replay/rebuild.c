/*
 * The allocator state before the first event of a trace that starts mid-run (a ring buffer that
 * wrapped, a recording started late): the end-state segments with every recorded event undone,
 * last to first (what PyTorch's segment view does to draw past states).
 */
#include "replay/rebuild.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/status.h"
#include "replay/alloc_conf.h"
#include "replay/replay.h"

struct rseg {
	struct ms_segment s;
	struct ms_block *b;
	size_t n, cap;
};

struct state {
	struct rseg *segs; /* by address */
	size_t n, cap;
	const struct ms_model *m;
	uint64_t inconsistent;
};

static struct rseg *seg_at(struct state *st, uint64_t addr)
{
	size_t lo = 0, hi = st->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (st->segs[mid].s.addr + st->segs[mid].s.total_size <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < st->n && st->segs[lo].s.addr <= addr)
		return &st->segs[lo];
	return NULL;
}

/* The block covering addr. */
static size_t block_at(const struct rseg *g, uint64_t addr)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->b[i].addr <= addr && addr < g->b[i].addr + g->b[i].size)
			return i;
	return SIZE_MAX;
}

static ms_status insert_blocks(struct rseg *g, size_t at, const struct ms_block *nb, size_t k)
{
	if (ms_grow(&g->b, &g->cap, g->n + k, sizeof(*g->b)))
		return MS_ERR_NOMEM;
	memmove(g->b + at + k, g->b + at, (g->n - at) * sizeof(*g->b));
	memcpy(g->b + at, nb, k * sizeof(*nb));
	g->n += k;
	return MS_OK;
}

/* Merge the free block i with free neighbours. */
static void merge_free(struct rseg *g, size_t i)
{
	if (i + 1 < g->n && g->b[i + 1].state == MS_BLOCK_INACTIVE) {
		g->b[i].size += g->b[i + 1].size;
		memmove(g->b + i + 1, g->b + i + 2, (g->n - i - 2) * sizeof(*g->b));
		g->n--;
	}
	if (i > 0 && g->b[i - 1].state == MS_BLOCK_INACTIVE) {
		g->b[i - 1].size += g->b[i].size;
		memmove(g->b + i, g->b + i + 1, (g->n - i - 1) * sizeof(*g->b));
		g->n--;
	}
}

/* A segment event's pool id in id (the default pools' where the trace does not tell). */
static void pool_of_event(const struct ms_event *e, uint64_t id[2])
{
	id[0] = id[1] = 0;
	if (e->pool != MS_POOL_UNKNOWN)
		ms_pool_id(e->pool, id);
}

static ms_status add_segment(struct state *st, const struct ms_event *e, int small, int expandable)
{
	uint64_t addr = e->addr, size = e->size;
	size_t i = 0;
	struct rseg g;

	while (i < st->n && st->segs[i].s.addr < addr)
		i++;
	if (i < st->n && st->segs[i].s.addr < addr + size) {
		st->inconsistent++;
		return MS_OK;
	}
	memset(&g, 0, sizeof(g));
	g.s.addr = addr;
	g.s.total_size = size;
	g.s.stream = e->stream;
	g.s.device = e->device;
	pool_of_event(e, g.s.pool_id);
	g.s.is_small = (uint8_t)small;
	g.s.is_expandable = (uint8_t)expandable;
	g.s.n_blocks = 1;
	g.b = ms_malloc(sizeof(*g.b));
	if (!g.b)
		return MS_ERR_NOMEM;
	g.cap = g.n = 1;
	memset(g.b, 0, sizeof(*g.b));
	g.b[0].addr = addr;
	g.b[0].size = size;
	if (ms_grow(&st->segs, &st->cap, st->n + 1, sizeof(*st->segs))) {
		ms_free(g.b);
		return MS_ERR_NOMEM;
	}
	memmove(st->segs + i + 1, st->segs + i, (st->n - i) * sizeof(*st->segs));
	st->segs[i] = g;
	st->n++;
	return MS_OK;
}

/* Undo free_completed: carve the pending block out of the free block around addr. */
static ms_status undo_free_completed(struct state *st, const struct ms_event *e,
                                     uint64_t block_size)
{
	struct rseg *g = seg_at(st, e->addr);
	size_t i;
	struct ms_block f, nb[3];
	size_t k = 0;
	uint64_t rest;

	if (!g || (i = block_at(g, e->addr)) == SIZE_MAX || g->b[i].state != MS_BLOCK_INACTIVE) {
		st->inconsistent++;
		return MS_OK;
	}
	f = g->b[i];
	if (block_size > f.addr + f.size - e->addr)
		block_size = f.addr + f.size - e->addr;
	rest = f.addr + f.size - e->addr - block_size;
	/* a remainder the allocator would not have split off belonged to the block (§2.3) */
	if (rest < 512 || (!g->s.is_small && rest <= (1u << 20)))
		block_size += rest, rest = 0;
	if (e->addr > f.addr)
		nb[k++] = (struct ms_block){f.addr, e->addr - f.addr, f.requested_size, 0,
		                            MS_BLOCK_INACTIVE};
	nb[k++] = (struct ms_block){e->addr, block_size, e->size, e->stack,
	                            MS_BLOCK_ACTIVE_PENDING_FREE};
	if (rest)
		nb[k++] = (struct ms_block){e->addr + block_size, rest, 0, 0, MS_BLOCK_INACTIVE};
	memmove(g->b + i, g->b + i + 1, (g->n - i - 1) * sizeof(*g->b));
	g->n--;
	return insert_blocks(g, i, nb, k);
}

/*
 * Expandable segments are reported as one segment per contiguous mapped range. Undoing a map
 * cuts the mapped bytes out of their range (they were free, or merged into a free block); undoing
 * an unmap puts them back as a free block, joined to the ranges around it.
 */
static ms_status undo_map(struct state *st, const struct ms_event *e)
{
	struct rseg *g = seg_at(st, e->addr), left, right;
	uint64_t end = e->addr + e->size;
	size_t i, gi;

	if (!g || !g->s.is_expandable || end > g->s.addr + g->s.total_size) {
		st->inconsistent++;
		return MS_OK;
	}
	for (i = 0; i < g->n; i++) /* the mapped bytes must be free */
		if (g->b[i].addr < end && g->b[i].addr + g->b[i].size > e->addr &&
		    g->b[i].state != MS_BLOCK_INACTIVE) {
			st->inconsistent++;
			return MS_OK;
		}
	/* split into what lies before and after [addr, end) */
	memset(&left, 0, sizeof(left));
	memset(&right, 0, sizeof(right));
	left.s = right.s = g->s;
	left.s.total_size = e->addr - g->s.addr;
	right.s.addr = end;
	right.s.total_size = g->s.addr + g->s.total_size - end;
	for (i = 0; i < g->n; i++) {
		struct ms_block b = g->b[i];
		uint64_t bend = b.addr + b.size;
		if (b.addr < e->addr) {
			struct ms_block c = b;
			if (bend > e->addr)
				c.size = e->addr - b.addr;
			if (insert_blocks(&left, left.n, &c, 1))
				return MS_ERR_NOMEM;
		}
		if (bend > end) {
			struct ms_block c = b;
			if (b.addr < end) {
				c.addr = end;
				c.size = bend - end;
			}
			if (insert_blocks(&right, right.n, &c, 1))
				return MS_ERR_NOMEM;
		}
	}
	gi = (size_t)(g - st->segs);
	ms_free(g->b);
	memmove(st->segs + gi, st->segs + gi + 1, (st->n - gi - 1) * sizeof(*st->segs));
	st->n--;
	for (int k = 0; k < 2; k++) {
		struct rseg *r = k ? &right : &left;
		if (!r->s.total_size) {
			ms_free(r->b);
			continue;
		}
		if (ms_grow(&st->segs, &st->cap, st->n + 1, sizeof(*st->segs)))
			return MS_ERR_NOMEM;
		memmove(st->segs + gi + 1, st->segs + gi, (st->n - gi) * sizeof(*st->segs));
		st->segs[gi++] = *r;
		st->n++;
	}
	return MS_OK;
}

static ms_status undo_unmap(struct state *st, const struct ms_event *e)
{
	struct ms_block fb = {e->addr, e->size, 0, 0, MS_BLOCK_INACTIVE};
	struct rseg *before = e->addr ? seg_at(st, e->addr - 1) : NULL;
	struct rseg *after = seg_at(st, e->addr + e->size);
	uint64_t pool[2];
	int small;
	ms_status s;

	if (seg_at(st, e->addr)) {
		st->inconsistent++;
		return MS_OK;
	}
	/* a mapped neighbour of the same reservation: its stream's and its pool's */
	pool_of_event(e, pool);
	if (before && (!before->s.is_expandable || before->s.stream != e->stream ||
	               before->s.pool_id[0] != pool[0] || before->s.pool_id[1] != pool[1]))
		before = NULL;
	if (after && (!after->s.is_expandable || after->s.stream != e->stream ||
	              after->s.addr != e->addr + e->size || after->s.pool_id[0] != pool[0] ||
	              after->s.pool_id[1] != pool[1]))
		after = NULL;
	if (before) {
		before->s.total_size += e->size;
		if ((s = insert_blocks(before, before->n, &fb, 1)))
			return s;
		merge_free(before, before->n - 1);
		if (after) { /* the three ranges become one */
			size_t ai = (size_t)(after - st->segs);
			before->s.total_size += after->s.total_size;
			if ((s = insert_blocks(before, before->n, after->b, after->n)))
				return s;
			merge_free(before, before->n - after->n);
			ms_free(after->b);
			memmove(st->segs + ai, st->segs + ai + 1,
			        (st->n - ai - 1) * sizeof(*st->segs));
			st->n--;
		}
		return MS_OK;
	}
	if (after) {
		after->s.addr = e->addr;
		after->s.total_size += e->size;
		if ((s = insert_blocks(after, 0, &fb, 1)))
			return s;
		merge_free(after, 0);
		return MS_OK;
	}
	/* 20 MiB pages belong to the large pool, 2 MiB ones to the small pool */
	small = e->size % (20u << 20) != 0;
	return add_segment(st, e, small, 1);
}

static ms_status undo(struct state *st, const struct ms_event *e, uint64_t alloc_size)
{
	struct rseg *g;
	size_t i;

	if (e->source != MS_SRC_TORCH) /* raw CUDA calls: not the allocator's state */
		return MS_OK;
	switch (e->action) {
	case MS_ACT_ALLOC:
		g = seg_at(st, e->addr);
		if (!g || (i = block_at(g, e->addr)) == SIZE_MAX || g->b[i].addr != e->addr ||
		    g->b[i].state != MS_BLOCK_ACTIVE_ALLOCATED) {
			st->inconsistent++;
			return MS_OK;
		}
		g->b[i].state = MS_BLOCK_INACTIVE;
		merge_free(g, i);
		return MS_OK;
	case MS_ACT_FREE_REQUESTED:
		g = seg_at(st, e->addr);
		if (!g || (i = block_at(g, e->addr)) == SIZE_MAX || g->b[i].addr != e->addr) {
			st->inconsistent++;
			return MS_OK;
		}
		g->b[i].state = MS_BLOCK_ACTIVE_ALLOCATED;
		return MS_OK;
	case MS_ACT_FREE_COMPLETED:
		return undo_free_completed(st, e, alloc_size);
	case MS_ACT_SEGMENT_ALLOC:
		g = seg_at(st, e->addr);
		if (!g || g->s.addr != e->addr) {
			st->inconsistent++;
			return MS_OK;
		}
		ms_free(g->b);
		i = (size_t)(g - st->segs);
		memmove(st->segs + i, st->segs + i + 1, (st->n - i - 1) * sizeof(*st->segs));
		st->n--;
		return MS_OK;
	case MS_ACT_SEGMENT_FREE:
		/* small-pool segments are 2 MiB, large ones more */
		return add_segment(st, e, e->size <= (2u << 20), 0);
	case MS_ACT_SEGMENT_MAP:
		return undo_map(st, e);
	case MS_ACT_SEGMENT_UNMAP:
		return undo_unmap(st, e);
	default:
		return MS_OK;
	}
}

ms_status ms_rebuild_initial_state(const struct ms_trace *t, uint32_t device,
                                   const struct ms_model *m, struct ms_initial_state *out,
                                   struct ms_diag *diag)
{
	struct state st;
	uint64_t *alloc_size = NULL;
	ms_status s = MS_OK;
	size_t i;

	memset(&st, 0, sizeof(st));
	memset(out, 0, sizeof(*out));
	st.m = m;
	/* the end state */
	for (i = 0; i < t->n_segs; i++) {
		const struct ms_segment *g = &t->segs[i];
		if (g->device != device)
			continue;
		struct ms_event as_event = {0};
		as_event.addr = g->addr;
		as_event.size = g->total_size;
		as_event.stream = g->stream;
		as_event.device = g->device;
		as_event.pool = MS_POOL_UNKNOWN; /* r->s = *g below brings its pool */
		if ((s = add_segment(&st, &as_event, g->is_small, g->is_expandable)))
			goto out;
		{
			struct rseg *r = seg_at(&st, g->addr);
			if (!r || !g->n_blocks)
				continue;
			r->s = *g;
			r->n = 0;
			if ((s = insert_blocks(r, 0, t->blocks + t->seg_block0[i], g->n_blocks)))
				goto out;
		}
	}
	/* block sizes of the allocs seen later, for the frees that are undone */
	alloc_size = ms_calloc(t->n_events ? t->n_events : 1, sizeof(uint64_t));
	if (!alloc_size) {
		s = MS_ERR_NOMEM;
		goto out;
	}
	{
		struct ms_u64map last = MS_U64MAP_INIT;
		for (i = 0; i < t->n_events; i++) {
			const struct ms_event *e = &t->events[i];
			uint64_t *v;
			if (e->device != device)
				continue;
			if (e->action == MS_ACT_ALLOC && ms_u64map_put(&last, e->addr, e->size)) {
				s = MS_ERR_NOMEM;
				break;
			}
			if (e->action == MS_ACT_FREE_COMPLETED) {
				v = ms_u64map_get(&last, e->addr);
				alloc_size[i] = ms_model_round_size(m, v ? *v : e->size);
			}
		}
		ms_u64map_release(&last);
		if (s)
			goto out;
	}
	for (i = t->n_events; i-- > 0;) {
		if (t->events[i].device != device)
			continue;
		if ((s = undo(&st, &t->events[i], alloc_size[i])))
			goto out;
	}
	/* hand it over as segments with their blocks */
	for (i = 0; i < st.n; i++) {
		struct rseg *g = &st.segs[i];
		uint64_t alloc = 0, active = 0, req = 0;
		for (size_t k = 0; k < g->n; k++) {
			if (g->b[k].state == MS_BLOCK_ACTIVE_ALLOCATED)
				alloc += g->b[k].size, out->live_blocks++;
			if (g->b[k].state != MS_BLOCK_INACTIVE)
				active += g->b[k].size, req += g->b[k].requested_size;
		}
		g->s.n_blocks = (uint32_t)g->n;
		g->s.allocated_size = alloc;
		g->s.active_size = active;
		g->s.requested_size = req;
	}
	out->segs = ms_malloc(sizeof(*out->segs) * (st.n ? st.n : 1));
	out->blocks = ms_malloc(sizeof(**out->blocks) * (st.n ? st.n : 1));
	if (!out->segs || !out->blocks) {
		s = MS_ERR_NOMEM;
		goto out;
	}
	for (i = 0; i < st.n; i++) {
		out->segs[i] = st.segs[i].s;
		out->blocks[i] = st.segs[i].b;
		st.segs[i].b = NULL;
	}
	out->n_segs = st.n;
	out->inconsistent = st.inconsistent;
out:
	for (i = 0; i < st.n; i++)
		ms_free(st.segs[i].b);
	ms_free(st.segs);
	ms_free(alloc_size);
	if (s) {
		ms_initial_state_release(out);
		ms__diag_set(diag, s, -1, -1, "cannot rebuild the state before the trace: %s",
		             ms_strerror(s));
	}
	return s;
}

void ms_initial_state_release(struct ms_initial_state *st)
{
	if (!st)
		return;
	for (size_t i = 0; st->blocks && i < st->n_segs; i++)
		ms_free(st->blocks[i]);
	ms_free(st->blocks);
	ms_free(st->segs);
	ms_free(st->placed);
	memset(st, 0, sizeof(*st));
}

static int placed_by_addr(const void *a, const void *b)
{
	uint64_t x = ((const struct ms_placed_block *)a)->addr;
	uint64_t y = ((const struct ms_placed_block *)b)->addr;

	return x < y ? -1 : x > y;
}

static ms_status place(struct ms_initial_state *out, size_t *cap, uint64_t addr, uint64_t size,
                       uint64_t stream, uint32_t stack)
{
	if (ms_grow(&out->placed, cap, out->n_placed + 1, sizeof(*out->placed)))
		return MS_ERR_NOMEM;
	out->placed[out->n_placed++] = (struct ms_placed_block){addr, size, stream, stack};
	out->placed_bytes += size;
	return MS_OK;
}

/*
 * The blocks of device live before t's first event, as far as t tells: those it frees without
 * having allocated them (their size from the free) and the end state's allocated blocks it
 * did not allocate (their requested size), in address order; init->segs are left as they
 * are. In which order the job allocated them is unknown: the model places them in that of
 * their addresses.
 */
static ms_status find_placed(const struct ms_trace *t, uint32_t device,
                             struct ms_initial_state *out)
{
	struct ms_u64map live = MS_U64MAP_INIT, asked = MS_U64MAP_INIT;
	size_t cap = 0;
	ms_status s = MS_OK;

	for (size_t i = 0; i < t->n_events && !s; i++) {
		const struct ms_event *e = &t->events[i];
		uint64_t v;
		if (e->device != device || e->source != MS_SRC_TORCH)
			continue;
		switch (e->action) {
		case MS_ACT_ALLOC:
			s = ms_u64map_put(&live, e->addr, 1);
			break;
		case MS_ACT_FREE_REQUESTED:
			/* its completion follows: not a second block */
			if (!ms_u64map_del(&live, e->addr, &v))
				s = place(out, &cap, e->addr, e->size, e->stream, e->stack);
			if (!s)
				s = ms_u64map_put(&asked, e->addr, 1);
			break;
		case MS_ACT_FREE_COMPLETED:
			if (!ms_u64map_del(&asked, e->addr, &v) &&
			    !ms_u64map_del(&live, e->addr, &v))
				s = place(out, &cap, e->addr, e->size, e->stream, e->stack);
			break;
		default:
			break;
		}
	}
	for (size_t i = 0; i < t->n_segs && !s; i++) {
		const struct ms_segment *g = &t->segs[i];
		const struct ms_block *bl = t->blocks + t->seg_block0[i];
		if (g->device != device)
			continue;
		for (uint32_t k = 0; k < g->n_blocks && !s; k++)
			if (bl[k].state == MS_BLOCK_ACTIVE_ALLOCATED &&
			    !ms_u64map_get(&live, bl[k].addr))
				s = place(out, &cap, bl[k].addr, bl[k].requested_size, g->stream,
				          bl[k].stack);
	}
	ms_u64map_release(&live);
	ms_u64map_release(&asked);
	if (!s && out->n_placed > 1)
		qsort(out->placed, out->n_placed, sizeof(*out->placed), placed_by_addr);
	return s;
}

/* Replace init's segments by the blocks to place; replay t again from them where there are
 * any. */
static ms_status replay_placed(const struct ms_trace *t, struct ms_replay_opts *o,
                               struct ms_initial_state *init, struct ms_replay_result *r,
                               enum ms_mid_run *what, struct ms_diag *diag)
{
	uint64_t inconsistent = init->inconsistent, unmatched = r->unmatched_frees;
	ms_status s;

	ms_initial_state_release(init);
	init->inconsistent = inconsistent;
	if ((s = find_placed(t, o->device, init)))
		return s;
	if (!init->n_placed)
		return MS_OK;
	o->init = init;
	ms_replay_result_release(r);
	s = ms_replay_trace(t, o, r, diag);
	if (s == MS_ERR_LIMIT && !o->limit_given &&
	    (!o->device_memory || o->device_memory_from_oom)) {
		/* not a size the user gave: the trace's own, which its blocks contradict; diag
		   keeps why (the first replay's warnings are the same) */
		struct ms_diag again = MS_DIAG_INIT;
		o->init = NULL;
		ms_replay_result_release(r);
		if ((s = ms_replay_trace(t, o, r, &again))) {
			*diag = again;
			return s;
		}
		*what = MS_MID_RUN_NOT_PLACED;
		return MS_OK;
	}
	if (s)
		return s;
	r->mid_run_unmatched = unmatched;
	*what = MS_MID_RUN_PLACED;
	return MS_OK;
}

ms_status ms_replay_from_rebuilt(const struct ms_trace *t, struct ms_replay_opts *o,
                                 struct ms_initial_state *init, struct ms_replay_result *r,
                                 enum ms_mid_run *what, struct ms_diag *diag)
{
	struct ms_model_conf mc;
	struct ms_model *m = NULL;
	uint64_t unmatched = r->unmatched_frees;
	size_t n_dev_segs = 0;
	ms_status s;

	*what = MS_MID_RUN_NO;
	memset(init, 0, sizeof(*init));
	for (size_t i = 0; i < t->n_segs; i++)
		n_dev_segs += t->segs[i].device == o->device;
	if (!n_dev_segs) {
		if (!unmatched)
			return MS_OK;
		*what = MS_MID_RUN_NO_SEGMENTS;
		return replay_placed(t, o, init, r, what, diag);
	}
	/* the end state and the events were made under the recorded settings, whatever a replay
	   tries: their sizes are undone with those */
	memset(&mc, 0, sizeof(mc));
	ms_alloc_conf_from_settings(&mc.ac, &t->meta.settings);
	if ((s = ms_model_new(&mc, &m)))
		return s;
	s = ms_rebuild_initial_state(t, o->device, m, init, diag);
	ms_model_free(m);
	if (s == MS_ERR_UNSUPPORTED) {
		*what = MS_MID_RUN_UNSUPPORTED;
		return MS_OK;
	}
	if (s)
		return s;
	if (!init->n_segs && !unmatched) {
		ms_initial_state_release(init);
		return MS_OK;
	}
	if (init->inconsistent) {
		*what = MS_MID_RUN_MISMATCH;
		/* init keeps the count; the caller releases it */
		return replay_placed(t, o, init, r, what, diag);
	}
	o->init = init;
	ms_replay_result_release(r);
	if ((s = ms_replay_trace(t, o, r, diag)))
		return s;
	r->mid_run_unmatched = unmatched;
	*what = MS_MID_RUN_REBUILT;
	return MS_OK;
}
