/*
 * The pool of each event of a loaded trace, told from its end-state segments and addresses
 * (pool_infer.h). One pass over the events keeps the segments alive at each moment (one record
 * per segment_alloc or segment_map, in address order per device) and puts every allocation,
 * and its frees, in the record of the segment it lies in; at the end, the records still alive
 * take the pool of the end-state segment over them, and the events take their record's.
 */
#include "parse/pool_infer.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/hash.h"
#include "parse/trace.h"

#define NONE UINT32_MAX

/* A segment (or an expandable segment's mapping) seen alive; split parts share a root. */
struct rec {
	uint64_t addr, size;
	uint32_t parent; /* itself, or the record it was split from */
	uint16_t device;
	uint16_t pool; /* a code, or MS_POOL_UNKNOWN */
};

/* An end-state segment's place. */
struct end_seg {
	uint64_t addr;
	uint32_t seg;
	uint16_t device;
};

struct infer {
	struct ms_trace *t;
	struct rec *recs;
	size_t n_recs, cap_recs;
	uint32_t *live; /* records alive now, by (device, address) */
	size_t n_live, cap_live;
	struct end_seg *end; /* end-state segments, by (device, address) */
	uint32_t *end_rec;   /* the record standing for each end-state segment, or NONE */
	/* each end-state segment's birth: the last event that mapped memory in its range (events
	 * before it lie in an older segment at the same place), or 0 if none did */
	uint64_t *born;
	struct ms_u64map blocks; /* live allocation -> record + 1 */
	uint32_t *rec_of;        /* event -> record, or NONE */
};

static uint32_t root(const struct infer *x, uint32_t r)
{
	while (x->recs[r].parent != r)
		r = x->recs[r].parent;
	return r;
}

static int before(uint16_t d1, uint64_t a1, uint16_t d2, uint64_t a2)
{
	return d1 != d2 ? d1 < d2 : a1 < a2;
}

/* Index in live of the first record at or after (device, addr). */
static size_t live_lower(const struct infer *x, uint16_t device, uint64_t addr)
{
	size_t lo = 0, hi = x->n_live;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct rec *r = &x->recs[x->live[mid]];
		if (before(r->device, r->addr, device, addr))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The live record holding (device, addr), or NONE. */
static uint32_t live_at(const struct infer *x, uint16_t device, uint64_t addr)
{
	size_t i = live_lower(x, device, addr + 1);
	const struct rec *r;

	if (!i)
		return NONE;
	r = &x->recs[x->live[i - 1]];
	return r->device == device && addr - r->addr < r->size ? x->live[i - 1] : NONE;
}

static ms_status rec_new(struct infer *x, uint64_t addr, uint64_t size, uint16_t device,
                         uint16_t pool, uint32_t parent, uint32_t *out)
{
	struct rec *r;

	if (x->n_recs >= NONE || ms_grow(&x->recs, &x->cap_recs, x->n_recs + 1, sizeof(*x->recs)))
		return MS_ERR_NOMEM;
	r = &x->recs[x->n_recs];
	r->addr = addr;
	r->size = size;
	r->device = device;
	r->pool = pool;
	r->parent = parent == NONE ? (uint32_t)x->n_recs : parent;
	*out = (uint32_t)x->n_recs++;
	return MS_OK;
}

static ms_status live_insert(struct infer *x, uint32_t r)
{
	size_t i = live_lower(x, x->recs[r].device, x->recs[r].addr);

	if (ms_grow(&x->live, &x->cap_live, x->n_live + 1, sizeof(*x->live)))
		return MS_ERR_NOMEM;
	memmove(x->live + i + 1, x->live + i, (x->n_live - i) * sizeof(*x->live));
	x->live[i] = r;
	x->n_live++;
	return MS_OK;
}

/*
 * A segment_free or segment_unmap of [addr, addr + size): the records it covers go, one it cuts
 * keeps what is left (a middle cut leaves two parts of one segment). Returns the first record
 * it touched, or NONE.
 */
static ms_status live_remove(struct infer *x, uint16_t device, uint64_t addr, uint64_t size,
                             uint32_t *first)
{
	size_t i = live_lower(x, device, addr);
	uint64_t end = addr + size;

	*first = NONE;
	if (i && x->recs[x->live[i - 1]].device == device &&
	    addr - x->recs[x->live[i - 1]].addr < x->recs[x->live[i - 1]].size)
		i--; /* a record that starts before the range and reaches into it */
	while (i < x->n_live) {
		uint32_t k = x->live[i];
		struct rec *r = &x->recs[k];
		uint64_t r_end = r->addr + r->size;
		if (r->device != device || r->addr >= end)
			break;
		if (*first == NONE)
			*first = k;
		if (r->addr < addr && r_end > end) {
			/* the middle goes: the tail becomes a part of its own */
			uint32_t tail;
			uint16_t dev = r->device, pool = r->pool;
			r->size = addr - r->addr;
			MS_TRY(rec_new(x, end, r_end - end, dev, pool, root(x, k), &tail));
			return live_insert(x, tail);
		}
		if (r->addr < addr) {
			r->size = addr - r->addr;
			i++;
		} else if (r_end > end) {
			r->size = r_end - end;
			r->addr = end;
			break;
		} else {
			memmove(x->live + i, x->live + i + 1,
			        (x->n_live - i - 1) * sizeof(*x->live));
			x->n_live--;
		}
	}
	return MS_OK;
}

static int end_cmp(const void *a, const void *b)
{
	const struct end_seg *p = a, *q = b;

	return before(p->device, p->addr, q->device, q->addr)   ? -1
	       : before(q->device, q->addr, p->device, p->addr) ? 1
	                                                        : 0;
}

/* The end-state segment holding (device, addr), or NONE. */
/* Index in x->end of the first end-state segment after (device, addr). */
static size_t end_after(const struct infer *x, uint16_t device, uint64_t addr)
{
	size_t lo = 0, hi = x->t->n_segs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (!before(device, addr, x->end[mid].device, x->end[mid].addr))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint32_t end_at(const struct infer *x, uint16_t device, uint64_t addr)
{
	size_t k = end_after(x, device, addr);
	const struct ms_segment *g;

	if (!k)
		return NONE;
	g = &x->t->segs[x->end[k - 1].seg];
	return g->device == device && addr - g->addr < g->total_size ? x->end[k - 1].seg : NONE;
}

static uint16_t end_code(const struct ms_segment *g)
{
	uint16_t code;

	return ms_pool_code(g->pool_id[0], g->pool_id[1], &code) ? MS_POOL_UNKNOWN : code;
}

/*
 * The record of an address no recorded segment event covers, at event i: its end-state segment's
 * if that segment was there already (older than the trace, not made again at its place since).
 */
static ms_status outside_rec(struct infer *x, uint16_t device, uint64_t addr, size_t i,
                             uint32_t *out)
{
	uint32_t g = end_at(x, device, addr);

	*out = NONE;
	if (g == NONE || i < x->born[g])
		return MS_OK;
	if (x->end_rec[g] == NONE) {
		const struct ms_segment *s = &x->t->segs[g];
		MS_TRY(rec_new(x, s->addr, s->total_size, s->device, end_code(s), NONE,
		               &x->end_rec[g]));
	}
	*out = x->end_rec[g];
	return MS_OK;
}

static uint64_t block_key(uint16_t device, uint64_t addr)
{
	return addr ^ ((uint64_t)device << 52);
}

/*
 * Each end-state segment's birth (x->born): the last segment_alloc or segment_map that reached
 * into its range (a mapping whose head was unmapped since still does).
 */
static void births(struct infer *x)
{
	const struct ms_trace *t = x->t;

	for (size_t i = 0; i < t->n_events; i++) {
		const struct ms_event *e = &t->events[i];
		size_t lo;
		uint32_t g;
		if (e->source != MS_SRC_TORCH ||
		    (e->action != MS_ACT_SEGMENT_ALLOC && e->action != MS_ACT_SEGMENT_MAP))
			continue;
		/* the end-state segment holding the event's address, and those after it in the
		 * range */
		if ((g = end_at(x, e->device, e->addr)) != NONE)
			x->born[g] = i;
		for (lo = end_after(x, e->device, e->addr);
		     lo < t->n_segs && x->end[lo].device == e->device &&
		     x->end[lo].addr - e->addr < e->size;
		     lo++)
			x->born[x->end[lo].seg] = i;
	}
}

static ms_status walk(struct infer *x)
{
	struct ms_trace *t = x->t;

	for (size_t i = 0; i < t->n_events; i++) {
		const struct ms_event *e = &t->events[i];
		uint64_t key = block_key(e->device, e->addr), *v;
		uint32_t r = NONE;
		if (e->source != MS_SRC_TORCH || key == UINT64_MAX)
			continue;
		switch (e->action) {
		case MS_ACT_SEGMENT_ALLOC:
		case MS_ACT_SEGMENT_MAP:
			MS_TRY(rec_new(x, e->addr, e->size, e->device, e->pool, NONE, &r));
			MS_TRY(live_insert(x, r));
			break;
		case MS_ACT_SEGMENT_FREE:
		case MS_ACT_SEGMENT_UNMAP:
			MS_TRY(live_remove(x, e->device, e->addr, e->size, &r));
			break;
		case MS_ACT_ALLOC:
			r = live_at(x, e->device, e->addr);
			if (r == NONE)
				MS_TRY(outside_rec(x, e->device, e->addr, i, &r));
			if (r != NONE && ms_u64map_put(&x->blocks, key, (uint64_t)r + 1))
				return MS_ERR_NOMEM;
			break;
		case MS_ACT_FREE_REQUESTED:
		case MS_ACT_FREE_COMPLETED:
			if ((v = ms_u64map_get(&x->blocks, key))) {
				r = (uint32_t)(*v - 1);
				if (e->action == MS_ACT_FREE_COMPLETED)
					ms_u64map_del(&x->blocks, key, NULL);
			} else {
				r = live_at(x, e->device, e->addr);
				if (r == NONE)
					MS_TRY(outside_rec(x, e->device, e->addr, i, &r));
			}
			break;
		default:
			break;
		}
		x->rec_of[i] = r;
	}
	return MS_OK;
}

/* The records alive at the end take the pool of the end-state segment over them. */
static void settle(struct infer *x)
{
	for (size_t i = 0; i < x->n_live; i++) {
		const struct rec *r = &x->recs[x->live[i]];
		uint32_t g = end_at(x, r->device, r->addr), k = root(x, x->live[i]);
		if (g != NONE && x->recs[k].pool == MS_POOL_UNKNOWN)
			x->recs[k].pool = end_code(&x->t->segs[g]);
	}
}

ms_status ms_trace_infer_pools(struct ms_trace *t, struct ms_pool_inference *out)
{
	struct infer x;
	ms_status s = MS_ERR_NOMEM;

	memset(out, 0, sizeof(*out));
	memset(&x, 0, sizeof(x));
	x.t = t;
	for (size_t i = 0; i < t->n_segs; i++)
		if (t->segs[i].pool_id[0] || t->segs[i].pool_id[1])
			out->private_segments++;
	x.rec_of = ms_malloc(sizeof(*x.rec_of) * (t->n_events ? t->n_events : 1));
	x.end = ms_malloc(sizeof(*x.end) * (t->n_segs ? t->n_segs : 1));
	x.end_rec = ms_malloc(sizeof(*x.end_rec) * (t->n_segs ? t->n_segs : 1));
	x.born = ms_calloc(t->n_segs ? t->n_segs : 1, sizeof(*x.born));
	if (!x.rec_of || !x.end || !x.end_rec || !x.born)
		goto out;
	for (size_t i = 0; i < t->n_events; i++)
		x.rec_of[i] = NONE;
	for (size_t i = 0; i < t->n_segs; i++) {
		x.end[i].addr = t->segs[i].addr;
		x.end[i].device = t->segs[i].device;
		x.end[i].seg = (uint32_t)i;
		x.end_rec[i] = NONE;
	}
	qsort(x.end, t->n_segs, sizeof(*x.end), end_cmp);
	births(&x);
	if ((s = walk(&x)))
		goto out;
	settle(&x);
	for (size_t i = 0; i < t->n_events; i++) {
		struct ms_event *e = &t->events[i];
		uint16_t pool;
		if (e->pool != MS_POOL_UNKNOWN || e->source != MS_SRC_TORCH)
			continue;
		pool = x.rec_of[i] == NONE ? MS_POOL_UNKNOWN : x.recs[root(&x, x.rec_of[i])].pool;
		if (pool != MS_POOL_UNKNOWN) {
			e->pool = pool;
			out->events_told++;
		}
		if (e->action == MS_ACT_ALLOC) {
			if (pool == MS_POOL_UNKNOWN)
				out->unknown_allocs++;
			else if (pool != MS_POOL_DEFAULT)
				out->private_allocs++;
		}
	}
out:
	ms_free(x.rec_of);
	ms_free(x.end);
	ms_free(x.end_rec);
	ms_free(x.born);
	ms_free(x.recs);
	ms_free(x.live);
	ms_u64map_release(&x.blocks);
	return s;
}
