/* One streaming pass of trace statistics (see trace_stats.h). */
#include "analysis/trace_stats.h"
#include "analysis/stats_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/outside.h"
#include "common/alloc.h"
#include "common/hash.h"

struct slot {
	struct ms_stats_alloc a;
	uint8_t state; /* 0 free slot, 1 live, 2 free requested */
	uint16_t pool; /* its private pool's code, or MS_POOL_DEFAULT (default or not told) */
	uint32_t ctx;  /* its compile context's index in the builder's ctx tables */
	uint32_t next_free;
};

struct ms_stats_builder {
	struct ms_trace_stats r;
	size_t top_n;
	int done;
	struct ms_u64map live; /* addr -> slot index */
	/*
	 * A free_requested whose block is not yet marked pending (state 2): its completion nearly
	 * always comes next and frees the block, so the mark waits for the next event
	 */
	int pend_req;
	uint64_t pend_key;
	struct slot *slots;
	size_t n_slots, cap_slots;
	uint32_t free_head; /* 1-based, 0 none */
	uint64_t cur_total;
	uint64_t *cur_dev;
	size_t cap_dev;
	/* bytes live per stack now, and at the last peak; stacks changed since */
	uint64_t *by_stack, *cnt_stack, *snap_bytes, *snap_cnt;
	uint8_t *dirty;
	size_t cap_stack, cap_snap, cap_dirty, cap_cnt, cap_snapcnt;
	uint32_t *dirty_list;
	size_t n_dirty, cap_dirty_list;
	size_t max_stack;
	/* bytes and allocations live per compile context now, and at the last peak: ctx_name[i]
	 * the i-th context's string id (0: "N/A"); last_ctx caches the last one looked up */
	uint32_t *ctx_name;
	uint64_t *ctx_bytes, *ctx_cnt, *ctx_snap_bytes, *ctx_snap_cnt;
	size_t n_ctx, cap_ctx[5];
	struct ms_u64map ctx_of;
	uint32_t last_ctx_name, last_ctx;
	int ctx_seen; /* an allocation made in a compiled region */
	/* open annotations, innermost last */
	uint32_t *ann;
	size_t n_ann, cap_ann;
	/* name id -> index + 1 in r.anns */
	uint32_t *ann_slot;
	size_t cap_ann_slot, cap_anns;
	/* per r.anns entry: the highest cur_total less pre_freed_so_far inside it (INT64_MIN
	   none yet); with the blocks from before the trace, its peak_requested (at the end) */
	int64_t *ann_adj;
	size_t cap_ann_adj;
	uint64_t index;
	struct ms_outside ext;
	int64_t only; /* the device counted, -1 all */
	/* frees of blocks from before the trace, so far; the highest of cur_total less them */
	int64_t pre_freed_so_far, adj_peak;
	int adj_seen;
	/* the end state's allocated blocks by stack: bytes and blocks */
	struct ms_stats_site *blk;
	size_t cap_blk;
	/* of them, those allocated before the trace: live at any moment of it, its peak too */
	struct ms_stats_site *pre;
	size_t cap_pre;
	/* free_requested of blocks not live in the trace, waiting for their free_completed */
	struct ms_u64map req_unmatched;
	const struct ms_symtab *syms; /* the reader's, during the read: the marks' names */
	struct ms_windows wins;       /* where ms_stats_builder_windows asked for them */
	const struct ms_windows_asked *asked;
};

/*
 * What the windows see now. Requested bytes are the trace's own blocks less the frees of blocks
 * from before it so far, shifted up by WIN_BASE to stay positive: at the end the shift becomes
 * what the blocks from before the trace held (ms_stats_builder_result), as for
 * mid_peak_requested. Reserved bytes are the segment events' sum, likewise placed at the end.
 */
#define WIN_BASE (UINT64_C(1) << 62)

/* The segment events' reserved bytes so far, of the device counted or of them all. */
static uint64_t reserved_now(const struct ms_stats_builder *b)
{
	uint64_t sum = 0;

	for (uint32_t d = 0; d < b->r.n_devices; d++)
		if (b->only < 0 || d == (uint32_t)b->only)
			sum += b->r.devices[d].reserved_now;
	return sum;
}

/* A segment freed that the events never made, on a device counted: reserved is not known. */
static int reserved_unknown(const struct ms_stats_builder *b)
{
	for (uint32_t d = 0; d < b->r.n_devices; d++)
		if ((b->only < 0 || d == (uint32_t)b->only) && b->r.devices[d].reserved_unknown)
			return 1;
	return 0;
}
static const struct ms_window_now *win_now(const struct ms_stats_builder *b,
                                           struct ms_window_now *n)
{
	uint64_t cur = b->only >= 0 ? (b->only < (int64_t)b->cap_dev ? b->cur_dev[b->only] : 0)
	                            : b->cur_total;

	n->requested = n->allocated = WIN_BASE + cur - (uint64_t)b->pre_freed_so_far;
	n->reserved = WIN_BASE + reserved_now(b);
	n->requested_peak = n->allocated_peak = n->requested;
	n->reserved_peak = n->reserved;
	return n;
}

static ms_status grow_devices(struct ms_stats_builder *b, uint32_t device)
{
	struct ms_stats_device *d;

	if (device + 1u <= b->r.n_devices)
		return MS_OK;
	if (!(d = ms_realloc(b->r.devices, sizeof(*d) * (device + 1u))))
		return MS_ERR_NOMEM;
	memset(d + b->r.n_devices, 0, sizeof(*d) * (device + 1u - b->r.n_devices));
	b->r.devices = d;
	b->r.n_devices = device + 1u;
	return MS_OK;
}

ms_status ms_stats_builder_new(size_t top_n, struct ms_stats_builder **out)
{
	struct ms_stats_builder *b = ms_calloc(1, sizeof(*b));

	if (!b)
		return MS_ERR_NOMEM;
	b->top_n = top_n ? top_n : 10;
	b->only = -1;
	b->r.device = -1;
	b->r.live_top = ms_calloc(b->top_n, sizeof(struct ms_stats_alloc));
	b->r.largest = ms_calloc(b->top_n, sizeof(struct ms_stats_alloc));
	if (!b->r.live_top || !b->r.largest) {
		ms_stats_builder_free(b);
		return MS_ERR_NOMEM;
	}
	*out = b;
	return MS_OK;
}

void ms_stats_builder_free(struct ms_stats_builder *b)
{
	if (!b)
		return;
	ms_u64map_release(&b->live);
	ms_u64map_release(&b->req_unmatched);
	ms_outside_release(&b->ext);
	ms_free(b->slots);
	ms_free(b->cur_dev);
	ms_free(b->by_stack);
	ms_free(b->cnt_stack);
	ms_free(b->snap_bytes);
	ms_free(b->snap_cnt);
	ms_free(b->dirty);
	ms_free(b->dirty_list);
	ms_free(b->ann);
	ms_free(b->ann_slot);
	ms_free(b->r.anns);
	ms_free(b->r.live_top);
	ms_free(b->r.largest);
	ms_free(b->r.sites);
	ms_free(b->r.contexts);
	ms_free(b->ctx_name);
	ms_free(b->ctx_bytes);
	ms_free(b->ctx_cnt);
	ms_free(b->ctx_snap_bytes);
	ms_free(b->ctx_snap_cnt);
	ms_u64map_release(&b->ctx_of);
	ms_free(b->r.block_sites);
	ms_free(b->r.pools);
	ms_free(b->r.pools_requested);
	ms_free(b->blk);
	ms_free(b->pre);
	ms_free(b->ann_adj);
	ms_free(b->r.devices);
	ms_window_figures_free(b->r.windows, b->r.n_windows);
	{
		struct ms_window_figures *w;
		size_t n;
		char seen[8];
		ms_windows_take(&b->wins, &w, &n, seen, sizeof(seen)); /* a read not finished */
		ms_window_figures_free(w, n);
	}
	ms_free(b);
}

/* Keep the top_n largest in arr (unsorted until the end): replace the smallest. */
static void top_insert(struct ms_stats_alloc *arr, size_t *n, size_t cap,
                       const struct ms_stats_alloc *a)
{
	size_t i, min = 0;

	if (*n < cap) {
		arr[(*n)++] = *a;
		return;
	}
	for (i = 1; i < cap; i++)
		if (arr[i].size < arr[min].size)
			min = i;
	if (a->size > arr[min].size)
		arr[min] = *a;
}

static int grow_zero(void *arr, size_t *cap, size_t need, size_t elem)
{
	size_t old = *cap;
	char **p = arr;

	if (need <= old)
		return 0;
	if (ms_grow(arr, cap, need, elem))
		return -1;
	memset(*p + old * elem, 0, (*cap - old) * elem);
	return 0;
}

/* The index of compile context name in the ctx tables, added where new (UINT32_MAX: out of
 * memory). */
static uint32_t ctx_index(struct ms_stats_builder *b, uint32_t name)
{
	uint64_t *k;
	size_t n = b->n_ctx + 1;

	if (b->n_ctx && name == b->last_ctx_name)
		return b->last_ctx;
	if (!(k = ms_u64map_get(&b->ctx_of, name))) {
		if (ms_grow(&b->ctx_name, &b->cap_ctx[0], n, sizeof(*b->ctx_name)) ||
		    grow_zero(&b->ctx_bytes, &b->cap_ctx[1], n, sizeof(uint64_t)) ||
		    grow_zero(&b->ctx_cnt, &b->cap_ctx[2], n, sizeof(uint64_t)) ||
		    grow_zero(&b->ctx_snap_bytes, &b->cap_ctx[3], n, sizeof(uint64_t)) ||
		    grow_zero(&b->ctx_snap_cnt, &b->cap_ctx[4], n, sizeof(uint64_t)) ||
		    ms_u64map_put(&b->ctx_of, name, b->n_ctx))
			return UINT32_MAX;
		b->ctx_name[b->n_ctx++] = name;
		k = ms_u64map_get(&b->ctx_of, name);
	}
	b->last_ctx_name = name;
	b->last_ctx = (uint32_t)*k;
	return b->last_ctx;
}

static void ctx_add(struct ms_stats_builder *b, uint32_t ctx, int64_t bytes, int cnt)
{
	b->ctx_bytes[ctx] += (uint64_t)bytes;
	b->ctx_cnt[ctx] += (uint64_t)(int64_t)cnt;
}

static ms_status stack_add(struct ms_stats_builder *b, uint32_t stack, int64_t bytes, int cnt)
{
	if (grow_zero(&b->by_stack, &b->cap_stack, (size_t)stack + 1, sizeof(uint64_t)) ||
	    grow_zero(&b->cnt_stack, &b->cap_cnt, (size_t)stack + 1, sizeof(uint64_t)) ||
	    grow_zero(&b->dirty, &b->cap_dirty, (size_t)stack + 1, 1))
		return MS_ERR_NOMEM;
	b->by_stack[stack] += (uint64_t)bytes;
	b->cnt_stack[stack] += (uint64_t)(int64_t)cnt;
	if (stack + 1u > b->max_stack)
		b->max_stack = stack + 1u;
	if (!b->dirty[stack]) {
		if (ms_grow(&b->dirty_list, &b->cap_dirty_list, b->n_dirty + 1, sizeof(uint32_t)))
			return MS_ERR_NOMEM;
		b->dirty[stack] = 1;
		b->dirty_list[b->n_dirty++] = stack;
	}
	return MS_OK;
}

/* A new peak: bring the per-stack snapshot up to date with what changed since the last one. */
static ms_status snapshot_peak(struct ms_stats_builder *b)
{
	if (grow_zero(&b->snap_bytes, &b->cap_snap, b->max_stack, sizeof(uint64_t)) ||
	    grow_zero(&b->snap_cnt, &b->cap_snapcnt, b->max_stack, sizeof(uint64_t)))
		return MS_ERR_NOMEM;
	for (size_t i = 0; i < b->n_dirty; i++) {
		uint32_t s = b->dirty_list[i];
		b->snap_bytes[s] = b->by_stack[s];
		b->snap_cnt[s] = b->cnt_stack[s];
		b->dirty[s] = 0;
	}
	b->n_dirty = 0;
	if (b->n_ctx) {
		memcpy(b->ctx_snap_bytes, b->ctx_bytes, b->n_ctx * sizeof(uint64_t));
		memcpy(b->ctx_snap_cnt, b->ctx_cnt, b->n_ctx * sizeof(uint64_t));
	}
	return MS_OK;
}

/* Requested bytes live now count toward annotation i's peak: kept less the frees of blocks from
   before the trace so far, as adj_peak is, since what those blocks hold is known at the end. */
static void ann_live(struct ms_stats_builder *b, size_t i)
{
	int64_t now = (int64_t)b->cur_total - b->pre_freed_so_far;

	if (now > b->ann_adj[i])
		b->ann_adj[i] = now;
}

/* A private pool's requested bytes change by delta at event idx. */
static ms_status pool_requested(struct ms_trace_stats *r, uint16_t code, int64_t delta,
                                uint64_t idx)
{
	struct ms_stats_pool_requested *p = NULL;

	for (size_t i = 0; i < r->n_pools_requested && !p; i++)
		if (r->pools_requested[i].code == code)
			p = &r->pools_requested[i];
	if (!p) {
		if (ms_grow(&r->pools_requested, &r->cap_pools_requested, r->n_pools_requested + 1,
		            sizeof(*r->pools_requested)))
			return MS_ERR_NOMEM;
		p = &r->pools_requested[r->n_pools_requested++];
		memset(p, 0, sizeof(*p));
		p->code = code;
	}
	p->current = (uint64_t)((int64_t)p->current + delta);
	if (p->current > p->peak) {
		p->peak = p->current;
		p->peak_index = idx;
	}
	return MS_OK;
}

/* The block of the last free_requested, if still live, waits for its completion (state 2). */
static void mark_pending(struct ms_stats_builder *b)
{
	uint64_t *sp = ms_u64map_get(&b->live, b->pend_key);

	if (sp)
		b->slots[*sp].state = 2;
	b->pend_req = 0;
}

static ms_status s_event_counted(struct ms_stats_builder *b, const struct ms_event *e,
                                 uint64_t idx);

static ms_status s_event(void *ctx, const struct ms_event *e)
{
	struct ms_stats_builder *b = ctx;
	struct ms_window_now now;
	uint64_t idx = b->index++;
	ms_status s;

	if (b->asked)
		ms_windows_time(&b->wins, e->t_ns);
	/* a time window is bounded by the counted device's events */
	if (b->asked &&
	    (s = ms_windows_before_event(
	             &b->wins, idx, b->only < 0 || e->device == b->only ? e->t_ns : 0,
	             (b->only < 0 || e->device == b->only) && e->source == MS_SRC_TORCH ? e : NULL,
	             win_now(b, &now))))
		return s;
	if ((s = s_event_counted(b, e, idx)))
		return s;
	if (b->asked && (b->only < 0 || e->device == b->only) && e->source == MS_SRC_TORCH)
		ms_windows_after_event(&b->wins, idx, e->t_ns, e->action == MS_ACT_OOM,
		                       win_now(b, &now));
	return MS_OK;
}

/* One event into the figures. */
static ms_status s_event_counted(struct ms_stats_builder *b, const struct ms_event *e, uint64_t idx)
{
	ms_status s;

	if ((s = grow_devices(b, e->device)))
		return s;
	/* a snapshot mark is written for every device, used or not */
	b->r.devices[e->device].events +=
	        e->source == MS_SRC_TORCH && !ms_event_is_snapshot_mark(e);
	b->r.devices[e->device].snapshot_marks += ms_event_is_snapshot_mark(e);
	if (b->only >= 0 && e->device != b->only)
		return MS_OK;
	b->r.n_events++;
	if ((s = ms_outside_event(&b->ext, idx, e)))
		return s;
	if (e->device >= b->cap_dev &&
	    grow_zero(&b->cur_dev, &b->cap_dev, (size_t)e->device + 1, sizeof(uint64_t)))
		return MS_ERR_NOMEM;
	if (b->pend_req && (e->action != MS_ACT_FREE_COMPLETED ||
	                    (e->addr ^ ((uint64_t)e->device << 56)) != b->pend_key))
		mark_pending(b);
	b->pend_req = 0;
	switch (e->action) {
	case MS_ACT_ALLOC: {
		struct slot *sl;
		uint32_t k;
		uint64_t oldk = 0;
		int had;
		b->r.n_allocs++;
		if (b->free_head) {
			k = b->free_head - 1;
			b->free_head = b->slots[k].next_free;
		} else {
			if (ms_grow(&b->slots, &b->cap_slots, b->n_slots + 1, sizeof(*b->slots)))
				return MS_ERR_NOMEM;
			k = (uint32_t)b->n_slots++;
		}
		sl = &b->slots[k];
		sl->state = 1;
		sl->a.addr = e->addr;
		sl->a.size = e->size;
		sl->a.stream = e->stream;
		sl->a.index = idx;
		sl->a.t_ns = e->t_ns;
		sl->a.stack = e->stack;
		sl->a.device = e->device;
		sl->pool = e->pool == MS_POOL_UNKNOWN ? MS_POOL_DEFAULT : e->pool;
		if (b->req_unmatched.n) {
			uint64_t v;
			ms_u64map_del(&b->req_unmatched, e->addr ^ ((uint64_t)e->device << 56), &v);
		}
		/* a reused address whose free was never recorded: forget the old block */
		if (ms_u64map_swap(&b->live, e->addr ^ ((uint64_t)e->device << 56), k, &had, &oldk))
			return MS_ERR_NOMEM;
		if (had) {
			struct slot *old = &b->slots[oldk];
			if (old->pool &&
			    (s = pool_requested(&b->r, old->pool, -(int64_t)old->a.size, idx)))
				return s;
			b->cur_total -= old->a.size;
			b->cur_dev[old->a.device] -= old->a.size;
			if ((s = stack_add(b, old->a.stack, -(int64_t)old->a.size, -1)))
				return s;
			ctx_add(b, old->ctx, -(int64_t)old->a.size, -1);
			old->state = 0;
			old->next_free = b->free_head;
			b->free_head = (uint32_t)oldk + 1;
		}
		top_insert(b->r.largest, &b->r.n_largest, b->top_n, &sl->a);
		if (sl->pool && (s = pool_requested(&b->r, sl->pool, (int64_t)e->size, idx)))
			return s;
		b->cur_total += e->size;
		if (b->n_ann) {
			size_t i = b->ann_slot[b->ann[b->n_ann - 1]] - 1;
			b->r.anns[i].allocs++;
			b->r.anns[i].alloc_bytes += e->size;
			ann_live(b, i);
		}
		b->cur_dev[e->device] += e->size;
		if ((s = stack_add(b, e->stack, (int64_t)e->size, 1)))
			return s;
		if ((sl->ctx = ctx_index(b, e->compile_context)) == UINT32_MAX)
			return MS_ERR_NOMEM;
		b->ctx_seen |= e->compile_context != 0;
		ctx_add(b, sl->ctx, (int64_t)e->size, 1);
		if (b->cur_dev[e->device] > b->r.devices[e->device].peak_requested) {
			b->r.devices[e->device].peak_requested = b->cur_dev[e->device];
			b->r.devices[e->device].peak_index = idx;
		}
		/* with blocks from before the trace freed in it, the peak may be elsewhere: what is
		   live then is cur_total plus what of them is not freed yet (known at the end) */
		if ((int64_t)b->cur_total - b->pre_freed_so_far > b->adj_peak || !b->adj_seen) {
			b->adj_seen = 1;
			b->adj_peak = (int64_t)b->cur_total - b->pre_freed_so_far;
			b->r.mid_peak_index = idx;
			b->r.mid_peak_t_ns = e->t_ns;
			b->r.mid_peak_annotation = b->n_ann ? b->ann[b->n_ann - 1] : 0;
		}
		if (b->cur_total > b->r.peak_requested) {
			b->r.peak_requested = b->cur_total;
			b->r.peak_index = idx;
			b->r.peak_t_ns = e->t_ns;
			b->r.peak_annotation = b->n_ann ? b->ann[b->n_ann - 1] : 0;
			if ((s = snapshot_peak(b)))
				return s;
		}
		break;
	}
	case MS_ACT_FREE_REQUESTED:
		b->pend_req = 1;
		b->pend_key = e->addr ^ ((uint64_t)e->device << 56);
		/* a block from before the trace, freed in it: its completion will be unmatched */
		if (!ms_u64map_get(&b->live, b->pend_key) &&
		    ms_u64map_put(&b->req_unmatched, b->pend_key, idx))
			return MS_ERR_NOMEM;
		break;
	case MS_ACT_FREE_COMPLETED: {
		uint64_t k;
		if (!ms_u64map_del(&b->live, e->addr ^ ((uint64_t)e->device << 56), &k)) {
			uint64_t v;
			/* a block allocated before the trace: its requested size goes now */
			b->r.unmatched_frees++;
			/* and its free requested before the trace too: pending free at its start */
			if (!ms_u64map_del(&b->req_unmatched, e->addr ^ ((uint64_t)e->device << 56),
			                   &v))
				b->r.pre_pending_frees++;
			b->r.pre_freed_requested += e->size;
			b->pre_freed_so_far += (int64_t)e->size;
			break;
		}
		if (b->slots[k].pool && (s = pool_requested(&b->r, b->slots[k].pool,
		                                            -(int64_t)b->slots[k].a.size, idx)))
			return s;
		b->cur_total -= b->slots[k].a.size;
		b->cur_dev[e->device] -= b->slots[k].a.size;
		if ((s = stack_add(b, b->slots[k].a.stack, -(int64_t)b->slots[k].a.size, -1)))
			return s;
		ctx_add(b, b->slots[k].ctx, -(int64_t)b->slots[k].a.size, -1);
		b->slots[k].state = 0;
		b->slots[k].next_free = b->free_head;
		b->free_head = (uint32_t)k + 1;
		break;
	}
	case MS_ACT_OOM:
		if (!b->r.recorded_ooms++)
			b->r.first_oom_index = idx;
		break;
	case MS_ACT_SEGMENT_ALLOC:
	case MS_ACT_SEGMENT_MAP:
		/* PyTorch's reserved bytes (the raw CUDA calls are ms_outside's) */
		if (e->source == MS_SRC_TORCH)
			b->r.devices[e->device].reserved_now += e->size;
		break;
	case MS_ACT_SEGMENT_FREE:
	case MS_ACT_SEGMENT_UNMAP:
		if (e->source == MS_SRC_TORCH) {
			struct ms_stats_device *d = &b->r.devices[e->device];
			if (e->size > d->reserved_now) {
				d->reserved_unknown++;
				d->reserved_now = 0;
			} else {
				d->reserved_now -= e->size;
			}
		}
		break;
	default:
		break;
	}
	return MS_OK;
}

/* A cudaMemGetInfo mark (common/event.h): beside PyTorch's reserved bytes now, what was held
   outside PyTorch on its device. */
static ms_status device_memory_mark(struct ms_stats_builder *b, const struct ms_annotation *a)
{
	struct ms_stats_outside *o;
	uint64_t free_b, total, reserved, out;
	ms_status s;

	if (!b->syms || (b->only >= 0 && a->device != b->only) ||
	    ms_ann_device_memory_mark(ms_symtab_get_str(b->syms, a->name)->s, &free_b, &total))
		return MS_OK;
	if ((s = grow_devices(b, a->device)))
		return s;
	reserved = b->r.devices[a->device].reserved_now;
	if (total < free_b + reserved)
		return MS_OK; /* not a figure: left out, as replay leaves it */
	out = total - free_b - reserved;
	o = &b->r.devices[a->device].outside;
	if (!o->marks++) {
		o->first_bytes = out;
		o->first_index = a->event_index;
	}
	if (o->marks == 1 || out > o->highest_bytes) {
		o->highest_bytes = out;
		o->highest_index = a->event_index;
	}
	o->last_bytes = out;
	o->last_index = a->event_index;
	return MS_OK;
}

static ms_status s_begin(void *ctx, const struct ms_meta *m, const struct ms_symtab *syms)
{
	(void)m;
	((struct ms_stats_builder *)ctx)->syms = syms;
	return MS_OK;
}

static ms_status s_ann(void *ctx, const struct ms_annotation *a)
{
	struct ms_stats_builder *b = ctx;
	struct ms_window_now now;
	ms_status s;

	/* marks bound windows on whichever device they were made; a window that starts or ends
	   before this mark's event does so first (as the replay has it) */
	if (b->asked && b->syms &&
	    ((s = ms_windows_before_event(&b->wins, a->event_index, 0, NULL, win_now(b, &now))) ||
	     (s = ms_windows_annotation(&b->wins, a->event_index,
	                                ms_symtab_get_str(b->syms, a->name)->s, a->stage,
	                                win_now(b, &now)))))
		return s;
	if (a->call == MS_CALL_DEVICE_MEMORY)
		return device_memory_mark(b, a);
	/* another device's scope: a snapshot lists each device's events apart, so its times say
	   nothing of this device's (its peak there would read 0, not unknown) */
	if (b->only >= 0 && a->device != b->only)
		return MS_OK;
	if (a->stage == MS_ANN_START) {
		if (ms_grow(&b->ann, &b->cap_ann, b->n_ann + 1, sizeof(uint32_t)))
			return MS_ERR_NOMEM;
		b->ann[b->n_ann++] = a->name;
		if (grow_zero(&b->ann_slot, &b->cap_ann_slot, (size_t)a->name + 1,
		              sizeof(uint32_t)))
			return MS_ERR_NOMEM;
		if (!b->ann_slot[a->name]) {
			if (ms_grow(&b->r.anns, &b->cap_anns, b->r.n_anns + 1, sizeof(*b->r.anns)))
				return MS_ERR_NOMEM;
			memset(&b->r.anns[b->r.n_anns], 0, sizeof(*b->r.anns));
			if (ms_grow(&b->ann_adj, &b->cap_ann_adj, b->r.n_anns + 1, sizeof(int64_t)))
				return MS_ERR_NOMEM;
			b->ann_adj[b->r.n_anns] = INT64_MIN;
			b->r.anns[b->r.n_anns].name = a->name;
			b->ann_slot[a->name] = (uint32_t)++b->r.n_anns;
		}
		/* what is live when it opens counts for its peak too */
		ann_live(b, b->ann_slot[a->name] - 1);
	} else if (a->stage == MS_ANN_END) {
		for (size_t i = b->n_ann; i-- > 0;)
			if (b->ann[i] == a->name) {
				memmove(b->ann + i, b->ann + i + 1,
				        (b->n_ann - i - 1) * sizeof(uint32_t));
				b->n_ann--;
				break;
			}
	}
	return MS_OK;
}

/* The segment's pool in r->pools. */
static ms_status pool_add(struct ms_trace_stats *r, const struct ms_segment *g)
{
	struct ms_stats_pool *p = NULL;

	for (size_t i = 0; i < r->n_pools && !p; i++)
		if (r->pools[i].id[0] == g->pool_id[0] && r->pools[i].id[1] == g->pool_id[1])
			p = &r->pools[i];
	if (!p) {
		if (ms_grow(&r->pools, &r->cap_pools, r->n_pools + 1, sizeof(*r->pools)))
			return MS_ERR_NOMEM;
		/* the default pools first, the others as they come */
		if (!g->pool_id[0] && !g->pool_id[1]) {
			memmove(r->pools + 1, r->pools, r->n_pools * sizeof(*r->pools));
			p = &r->pools[0];
		} else {
			p = &r->pools[r->n_pools];
		}
		r->n_pools++;
		memset(p, 0, sizeof(*p));
		p->id[0] = g->pool_id[0];
		p->id[1] = g->pool_id[1];
	}
	p->segments++;
	p->reserved += g->total_size;
	p->allocated += g->allocated_size;
	return MS_OK;
}

static ms_status s_seg(void *ctx, const struct ms_segment *g, const struct ms_block *bl)
{
	struct ms_stats_builder *b = ctx;
	struct ms_trace_stats *r = &b->r;
	ms_status s;

	if ((s = grow_devices(b, g->device)))
		return s;
	r->devices[g->device].segments++;
	if (b->only >= 0 && g->device != b->only)
		return MS_OK;
	r->has_segments = 1;
	r->n_segments++;
	r->reserved += g->total_size;
	if (g->is_expandable)
		r->n_expandable++;
	if ((s = pool_add(r, g)))
		return s;
	for (uint32_t i = 0; i < g->n_blocks; i++) {
		const struct ms_block *k = &bl[i];
		switch (k->state) {
		case MS_BLOCK_ACTIVE_ALLOCATED:
			/* allocated at the end and not by the trace: before its first event */
			if (!ms_u64map_get(&b->live, k->addr ^ ((uint64_t)g->device << 56))) {
				r->pre_trace_blocks++;
				r->pre_trace_requested += k->requested_size;
				if (grow_zero(&b->pre, &b->cap_pre, (size_t)k->stack + 1,
				              sizeof(*b->pre)))
					return MS_ERR_NOMEM;
				b->pre[k->stack].bytes += k->requested_size;
				b->pre[k->stack].count++;
			}
			if (grow_zero(&b->blk, &b->cap_blk, (size_t)k->stack + 1, sizeof(*b->blk)))
				return MS_ERR_NOMEM;
			b->blk[k->stack].bytes += k->size;
			b->blk[k->stack].count++;
			r->allocated += k->size;
			r->active += k->size;
			r->requested += k->requested_size;
			if (k->size > k->requested_size)
				r->internal += k->size - k->requested_size;
			break;
		case MS_BLOCK_ACTIVE_PENDING_FREE:
			r->active += k->size;
			r->pending_free_bytes += k->size;
			break;
		default:
			r->external_free += k->size;
			if (k->size > r->largest_free)
				r->largest_free = k->size;
		}
	}
	return MS_OK;
}

void ms_stats_builder_only(struct ms_stats_builder *b, uint32_t dev)
{
	b->only = dev;
	b->r.device = dev;
}

void ms_stats_builder_windows(struct ms_stats_builder *b, const struct ms_windows_asked *a)
{
	b->asked = a;
	ms_windows_init(&b->wins, a);
}

/* The windows' figures unshifted (win_now): what the blocks and segments from before the trace
 * held, now that the end state says it. */
static void windows_finish(struct ms_stats_builder *b)
{
	struct ms_trace_stats *r = &b->r;
	uint64_t pre = r->pre_trace_requested + r->pre_freed_requested, res_end = 0;
	uint64_t by_events = reserved_now(b);

	ms_windows_end(&b->wins, b->index, 0);
	ms_windows_take(&b->wins, &r->windows, &r->n_windows, r->window_marks_seen,
	                sizeof(r->window_marks_seen));
	r->windows_asked = 1;
	r->window_events = b->index;
	/* reserved at the end by the events: WIN_BASE + reserved_now; by the end state: reserved */
	if (!reserved_unknown(b)) {
		if (r->has_segments) { /* the end state's reserved bytes, of the devices counted */
			r->windows_reserved_known = r->reserved >= by_events;
			res_end = r->windows_reserved_known ? r->reserved - by_events : 0;
		} else {
			r->windows_reserved_known = !ms_stats_mid_run(r);
		}
	}
	for (size_t i = 0; i < r->n_windows; i++) {
		struct ms_window_figures *w = &r->windows[i];
		w->requested_at_start = w->requested_at_start - WIN_BASE + pre;
		w->peak_requested = w->peak_requested - WIN_BASE + pre;
		w->requested_at_end = w->requested_at_end - WIN_BASE + pre;
		w->reserved_at_start = w->reserved_at_start - WIN_BASE + res_end;
		w->peak_reserved = w->peak_reserved - WIN_BASE + res_end;
		w->reserved_at_end = w->reserved_at_end - WIN_BASE + res_end;
		/* less reserved than requested: the file's segments do not hold its blocks (an
		   end state that is not the events' own), so reserved is not known */
		if (w->requested_at_start > w->reserved_at_start ||
		    w->peak_requested > w->peak_reserved)
			r->windows_reserved_known = 0;
	}
	for (size_t i = 0; i < r->n_windows; i++) {
		struct ms_window_figures *w = &r->windows[i];
		w->allocated_at_start = w->requested_at_start;
		w->peak_allocated = w->peak_requested;
		w->allocated_at_end = w->requested_at_end;
		w->allocated_at_peak_reserved = 0;
		if (!r->windows_reserved_known)
			w->reserved_at_start = w->peak_reserved = w->peak_reserved_event =
			        w->reserved_at_end = 0;
	}
}

void ms_stats_builder_sink(struct ms_stats_builder *b, struct ms_sink *sink)
{
	memset(sink, 0, sizeof(*sink));
	sink->ctx = b;
	sink->begin = s_begin;
	sink->event = s_event;
	sink->annotation = s_ann;
	sink->segment = s_seg;
}

static int by_size_desc(const void *x, const void *y)
{
	const struct ms_stats_alloc *a = x, *b = y;

	if (a->size != b->size)
		return a->size < b->size ? 1 : -1;
	return a->index < b->index ? -1 : a->index > b->index;
}

static int site_desc(const void *x, const void *y)
{
	const struct ms_stats_site *a = x, *b = y;

	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? 1 : -1;
	return a->stack < b->stack ? -1 : a->stack > b->stack;
}

static int context_desc(const void *x, const void *y)
{
	const struct ms_stats_context *a = x, *b = y;

	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? 1 : -1;
	return a->name < b->name ? -1 : a->name > b->name;
}

/* Bytes of stack st at the peak: the trace's, and those from before it still live at its end. */
static uint64_t site_bytes(const struct ms_stats_builder *b, size_t st)
{
	return (st < b->cap_snap && st < b->max_stack ? b->snap_bytes[st] : 0) +
	       (st < b->cap_pre && b->r.n_allocs ? b->pre[st].bytes : 0); /* no trace: no peak */
}

const struct ms_trace_stats *ms_stats_builder_result(struct ms_stats_builder *b)
{
	struct ms_trace_stats *r = &b->r;

	if (b->done)
		return r;
	b->done = 1;
	if (b->pend_req)
		mark_pending(b);
	r->end_requested = b->cur_total;
	if (b->asked)
		windows_finish(b);
	/* a trace that starts mid-run: the most requested at once, with the blocks from before it
	   (live at the end, or freed in it) counted while they lived */
	r->mid_peak_requested = r->pre_trace_requested + r->pre_freed_requested +
	                        (uint64_t)(b->adj_peak > 0 ? b->adj_peak : 0);
	for (size_t i = 0; i < r->n_anns; i++)
		r->anns[i].peak_requested = b->ann_adj[i] == INT64_MIN
		                                    ? 0
		                                    : (uint64_t)((int64_t)(r->pre_trace_requested +
		                                                           r->pre_freed_requested) +
		                                                 b->ann_adj[i]);
	if (ms_outside_finish(&b->ext) == MS_OK) {
		r->raw_events = b->ext.events;
		r->raw_claimed = b->ext.claimed;
		r->raw_frees = b->ext.frees;
		r->external_peak = b->ext.peak;
		r->external_peak_index = b->ext.peak_index;
		r->external_end = b->ext.cur;
	}
	for (size_t i = 0; i < b->n_slots; i++) {
		if (b->slots[i].state == 1) {
			r->live_count++;
			r->live_bytes += b->slots[i].a.size;
			top_insert(r->live_top, &r->n_live_top, b->top_n, &b->slots[i].a);
		} else if (b->slots[i].state == 2) {
			r->pending_count++;
		}
	}
	qsort(r->live_top, r->n_live_top, sizeof(*r->live_top), by_size_desc);
	qsort(r->largest, r->n_largest, sizeof(*r->largest), by_size_desc);
	/* the peak by compile context, where the trace has allocations in compiled regions; the
	   blocks from before a mid-run trace (live then too) in a row of their own */
	if (b->ctx_seen && b->r.n_allocs) {
		uint64_t pre_bytes = 0, pre_cnt = 0;
		for (size_t st = 0; st < b->cap_pre; st++) {
			pre_bytes += b->pre[st].bytes;
			pre_cnt += b->pre[st].count;
		}
		r->contexts = ms_calloc(b->n_ctx + 1, sizeof(*r->contexts));
		for (size_t i = 0; r->contexts && i < b->n_ctx; i++)
			if (b->ctx_snap_bytes[i] || b->ctx_snap_cnt[i])
				r->contexts[r->n_contexts++] = (struct ms_stats_context){
				        b->ctx_name[i], 0, b->ctx_snap_bytes[i],
				        b->ctx_snap_cnt[i]};
		if (r->contexts && pre_cnt)
			r->contexts[r->n_contexts++] =
			        (struct ms_stats_context){0, 1, pre_bytes, pre_cnt};
		if (r->n_contexts > 1)
			qsort(r->contexts, r->n_contexts, sizeof(*r->contexts), context_desc);
	}
	/* sites at the peak: every stack with bytes live then, with the blocks allocated before a
	   mid-run trace that are still live at its end (live then too) */
	for (size_t st = 0; st < b->cap_snap || st < b->cap_pre; st++)
		r->n_sites += site_bytes(b, st) != 0;
	if (r->n_sites) {
		r->sites = ms_calloc(r->n_sites, sizeof(*r->sites));
		if (!r->sites) {
			r->n_sites =
			        0; /* reported as no sites rather than failing the whole pass */
			return r;
		}
		r->n_sites = 0;
		for (size_t st = 0; st < b->cap_snap || st < b->cap_pre; st++)
			if (site_bytes(b, st))
				r->sites[r->n_sites++] = (struct ms_stats_site){
				        (uint32_t)st, site_bytes(b, st),
				        (st < b->cap_snap && st < b->max_stack ? b->snap_cnt[st]
				                                               : 0) +
				                (st < b->cap_pre && r->n_allocs ? b->pre[st].count
				                                                : 0)};
	}
	if (r->n_sites)
		qsort(r->sites, r->n_sites, sizeof(*r->sites), site_desc);
	/* the end state's allocated blocks by stack */
	for (size_t st = 0; st < b->cap_blk; st++)
		r->n_block_sites += b->blk[st].count != 0;
	if (r->n_block_sites &&
	    !(r->block_sites = ms_calloc(r->n_block_sites, sizeof(*r->block_sites))))
		r->n_block_sites = 0; /* as above */
	else if (r->n_block_sites) {
		r->n_block_sites = 0;
		for (size_t st = 0; st < b->cap_blk; st++)
			if (b->blk[st].count)
				r->block_sites[r->n_block_sites++] = (struct ms_stats_site){
				        (uint32_t)st, b->blk[st].bytes, b->blk[st].count};
		qsort(r->block_sites, r->n_block_sites, sizeof(*r->block_sites), site_desc);
	}
	return r;
}
