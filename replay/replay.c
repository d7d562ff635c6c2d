/* Drives a trace through the allocator model (replay.h) and collects what a report needs. */
#include "replay/replay.h"

#include <stdio.h>
#include <string.h>

#include "analysis/outside.h"
#include "common/alloc.h"
#include "common/hash.h"
#include "common/status.h"
#include "parse/read_ahead.h"
#include "parse/source.h"
#include "parse/trace.h"
#include "replay/pool_marks.h"
#include "replay/site.h"

#define PEND_MIXED UINT32_MAX /* pending frees of several pools */

struct rp {
	struct ms_pool_marks marks; /* the recorder's pool marks so far */
	const struct ms_replay_opts *o;
	struct ms_replay_result *r;
	struct ms_diag *diag;
	struct ms_model *m;
	struct ms_model_conf mc;
	int device_known;
	/* the recorded run had expandable segments: a private pool's whole segment (segment_alloc)
	 * shows a MemPool with its own allocator */
	int recorded_expandable;
	/* reserved bytes as the recorded segment events have them (with a mid-run trace's
	 * rebuilt start): what PyTorch held at a recorded OOM, whatever settings are replayed */
	uint64_t rec_reserved;
	struct ms_u64map live;    /* recorded address -> model block, until its free is requested */
	struct ms_u64map pending; /* free requested, completion not yet seen */
	int slot_full;            /* the latest free requested (see r_event) */
	uint64_t slot_addr, slot_block;
	uint64_t index; /* trace event being replayed */
	int stopped;
	size_t cap_produced, cap_recorded, cap_reserved_log;
	struct ms_windows wins; /* where opts.windows asks for them */
	/* recorded segment frees not yet matched by the model's own */
	uint64_t pend_free_bytes;
	size_t pend_frees;
	uint32_t pend_pool; /* the pool of every pending free, or PEND_MIXED */
	/* their addresses, and whether the recorder's interposer saw the cudaFree that followed */
	struct pend_free {
		uint64_t addr;
		int done;
	} * pend;
	size_t cap_pend;
	uint64_t missed_pending; /* served recorded OOMs not yet followed by an allocation */
	uint64_t serving;        /* the bytes of a recorded OOM's request being served, or 0 */
	uint64_t pend_index;
	size_t model_frees_unmatched;
	int64_t peak_seen, peak_alloc_seen;
	int new_peak;     /* this event raised the allocated peak (opts.peak_gate) */
	size_t next_snap; /* into o->more_snaps */
	const struct ms_symtab *syms;
	ms_status err;
	struct ms_outside ext; /* memory outside PyTorch, from the raw CUDA events */
	/* held outside PyTorch beyond the raw events (opts.outside_unseen, or from the recorded
	 * OOM on), and the raw events' bytes the model's device last left out */
	uint64_t unseen, ext_applied;
};

/* A device size the user gave that is below what the job needed there (need bytes): the job
 * cannot have run on it. */
static int given_device_below(const struct rp *p, uint64_t need)
{
	return p->r->device_memory_source == MS_DEVMEM_GIVEN && !p->o->limit_only &&
	       need > p->mc.device_memory;
}

/*
 * The model's device, where its size is known (recorded or given): that size less what is held
 * outside PyTorch now, the raw CUDA events' bytes and the unseen ones.
 */
static void device_left(struct rp *p)
{
	uint64_t out = p->unseen + p->ext.cur, size = p->mc.device_memory;

	p->ext_applied = p->ext.cur;
	if (!p->device_known || size == UINT64_MAX ||
	    (p->r->device_memory_source != MS_DEVMEM_RECORDED &&
	     p->r->device_memory_source != MS_DEVMEM_GIVEN))
		return;
	ms_model_set_device_memory(p->m, out < size ? size - out : 1);
}

void ms_seg_events_push(struct ms_seg_event **arr, size_t *n, size_t *cap, uint64_t index,
                        unsigned action, uint64_t addr, uint64_t size, ms_status *err)
{
	if (ms_grow(arr, cap, *n + 1, sizeof(**arr))) {
		*err = MS_ERR_NOMEM;
		return;
	}
	(*arr)[*n].index = index;
	(*arr)[*n].action = (uint8_t)action;
	(*arr)[*n].addr = addr;
	(*arr)[(*n)++].size = size;
}

static void on_segment(void *ctx, unsigned action, uint64_t addr, uint64_t size, uint64_t stream)
{
	struct rp *p = ctx;

	(void)stream;
	if (!p->o->no_segment_log)
		ms_seg_events_push(&p->r->produced, &p->r->n_produced, &p->cap_produced,
		                   p->pend_frees ? p->pend_index : p->index, action, addr, size,
		                   &p->err);
	if (action == MS_ACT_SEGMENT_FREE || action == MS_ACT_SEGMENT_UNMAP) {
		/* matches a recorded free waiting for it, or waits for one */
		if (p->pend_frees) {
			size_t i = 0;
			while (i + 1 < p->pend_frees && p->pend[i].addr != addr)
				i++;
			p->pend[i] = p->pend[--p->pend_frees];
			p->pend_free_bytes =
			        p->pend_free_bytes > size ? p->pend_free_bytes - size : 0;
		} else {
			p->model_frees_unmatched++;
		}
	}
}

/* A mid-run trace whose state cannot be rebuilt: the blocks live before its first event,
 * allocated by the model in the default pool. */
static ms_status place_state(struct rp *p, const struct ms_initial_state *st)
{
	char a[32], b[32];

	for (size_t i = 0; i < st->n_placed; i++) {
		const struct ms_placed_block *k = &st->placed[i];
		struct ms_model_block *h;
		struct ms_model_oom o;
		ms_status s =
		        ms_model_malloc_pool(p->m, k->size, k->stream, MS_POOL_DEFAULT, &h, &o);
		if (s)
			return ms__diag_set(p->diag, s, -1, -1,
			                    "cannot place the blocks live before the trace: %s",
			                    ms_strerror(s));
		if (!h)
			return ms__diag_set(
			        p->diag, MS_ERR_LIMIT, -1, -1,
			        "%zu blocks (%s) were live before the trace's first event, more "
			        "than fits in %s",
			        st->n_placed, ms_format_size(a, sizeof(a), st->placed_bytes),
			        ms_format_size(b, sizeof(b),
			                       p->mc.limit ? p->mc.limit : p->mc.device_memory));
		ms_model_block_set_tag(h, MS_REPLAY_BEFORE_TRACE, k->stack);
		if (ms_u64map_put(&p->live, k->addr, (uint64_t)(uintptr_t)h))
			return MS_ERR_NOMEM;
	}
	p->r->rebuilt = 1;
	p->r->placed = 1;
	p->r->initial_reserved = (uint64_t)ms_model_stats(p->m)->reserved_bytes[0].current;
	p->rec_reserved = p->r->initial_reserved;
	p->r->initial_segments = ms_model_stats(p->m)->segment[0].current;
	p->r->initial_live_blocks = st->n_placed;
	return MS_OK;
}

/* A mid-run trace: the segments and live blocks that existed before its first event. */
static ms_status import_state(struct rp *p, const struct ms_initial_state *st)
{
	struct ms_model_block **h = NULL;
	size_t cap = 0;
	ms_status s = MS_OK;

	if (st->placed)
		return place_state(p, st);

	for (size_t i = 0; i < st->n_segs && !s; i++) {
		const struct ms_segment *g = &st->segs[i];
		if (ms_grow(&h, &cap, g->n_blocks ? g->n_blocks : 1, sizeof(*h))) {
			s = MS_ERR_NOMEM;
			break;
		}
		s = ms_model_import_segment(p->m, g, st->blocks[i], h);
		for (uint32_t k = 0; !s && k < g->n_blocks; k++) {
			const struct ms_block *b = &st->blocks[i][k];
			if (!h[k])
				continue;
			ms_model_block_set_tag(h[k], MS_REPLAY_BEFORE_TRACE, b->stack);
			if (ms_u64map_put(b->state == MS_BLOCK_ACTIVE_ALLOCATED ? &p->live
			                                                        : &p->pending,
			                  b->addr, (uint64_t)(uintptr_t)h[k]))
				s = MS_ERR_NOMEM;
		}
	}
	ms_free(h);
	if (s == MS_ERR_INVALID_ARG)
		return ms__diag_set(
		        p->diag, MS_ERR_FORMAT, -1, -1,
		        "the state before the trace, rebuilt from the end-state segments "
		        "and the recorded events, is not one PyTorch's allocator can be in "
		        "(%llu recorded events did not fit it): the file does not hold a "
		        "consistent record of PyTorch's allocator",
		        (unsigned long long)st->inconsistent);
	if (s)
		return ms__diag_set(p->diag, s, -1, -1,
		                    "cannot import the state before the trace: %s", ms_strerror(s));
	p->r->rebuilt = 1;
	p->r->initial_reserved = (uint64_t)ms_model_stats(p->m)->reserved_bytes[0].current;
	p->rec_reserved = p->r->initial_reserved;
	p->r->initial_segments = st->n_segs;
	p->r->initial_live_blocks = st->live_blocks;
	return MS_OK;
}

static ms_status r_segment(void *ctx, const struct ms_segment *g, const struct ms_block *b)
{
	struct rp *p = ctx;

	(void)b;
	if (g->device == p->o->device) {
		p->r->end_segments++;
		p->r->end_reserved += g->total_size;
		p->r->end_private_segments += g->pool_id[0] || g->pool_id[1];
	}
	return MS_OK;
}

/* Does a release range ("2.10 or 2.11", "2.9 or later", "2.3 to 2.7") take in 2.11? */
static int fits_2_11(const char *range)
{
	int lo = -1, hi = -1;
	char word[16] = "";

	if (sscanf(range, "2.%d or 2.%d", &lo, &hi) == 2 ||
	    sscanf(range, "2.%d to 2.%d", &lo, &hi) == 2)
		return lo <= 11 && 11 <= hi;
	if (sscanf(range, "2.%d or %15s", &lo, word) == 2 && !strcmp(word, "later"))
		return lo <= 11;
	if (sscanf(range, "2.%d", &lo) == 1)
		return lo == 11;
	return strncmp(range, "a nightly", 9) != 0; /* no range of releases: nothing to say */
}

static ms_status r_begin(void *ctx, const struct ms_meta *meta, const struct ms_symtab *syms)
{
	struct rp *p = ctx;
	struct ms_replay_result *r = p->r;
	ms_status s;

	p->syms = syms;
	if (meta->producer && !strcmp(meta->producer, "torch_npu"))
		snprintf(r->other_allocator, sizeof(r->other_allocator), "torch_npu (Ascend)");
	else if (meta->layout_release && !strncmp(meta->layout_release, "no PyTorch", 10))
		snprintf(r->other_allocator, sizeof(r->other_allocator), "non-PyTorch");
	else if (meta->layout_release && meta->layout_release[0] &&
	         !fits_2_11(meta->layout_release))
		snprintf(r->older_release, sizeof(r->older_release), "%s", meta->layout_release);
	ms_alloc_conf_from_settings(&p->mc.ac, &meta->settings);
	p->recorded_expandable = p->mc.ac.expandable_segments;
	snprintf(r->alloc_conf, sizeof(r->alloc_conf), "%s",
	         ms_settings_alloc_conf(&meta->settings));
	r->settings_recorded = meta->settings.present || p->o->alloc_conf;
	r->expandable_seen = !r->settings_recorded && meta->settings.expandable_seen;
	if (p->o->alloc_conf) {
		uint8_t recorded = p->mc.ac.graph_capture_record_stream_reuse;
		ms_alloc_conf_init(&p->mc.ac);
		if ((s = ms_alloc_conf_parse(&p->mc.ac, p->o->alloc_conf, p->diag)))
			return s;
		snprintf(r->alloc_conf, sizeof(r->alloc_conf), "%s", p->o->alloc_conf);
		/* unknown where the trace has no settings: asked for, it differs */
		r->record_stream_reuse_differs =
		        p->mc.ac.graph_capture_record_stream_reuse != recorded ||
		        (!meta->settings.present && p->mc.ac.graph_capture_record_stream_reuse);
	}
	if (!p->mc.ac.native_backend)
		return ms__diag_set(p->diag, MS_ERR_UNSUPPORTED, -1, -1,
		                    "backend:cudaMallocAsync is not modelled");
	r->ac = p->mc.ac;
	p->mc.device_memory = UINT64_MAX;
	if (p->o->limit_only) {
		/* no device size */
	} else if (p->o->device_memory) {
		p->mc.device_memory = p->o->device_memory;
		p->device_known = 1;
		r->device_memory_source =
		        p->o->device_memory_from_oom ? MS_DEVMEM_FROM_OOM : MS_DEVMEM_GIVEN;
	} else {
		for (uint32_t i = 0; i < meta->n_devices; i++)
			if (meta->devices[i].index == p->o->device &&
			    meta->devices[i].total_memory) {
				p->mc.device_memory = meta->devices[i].total_memory;
				p->device_known = 1;
				r->device_memory_source = MS_DEVMEM_RECORDED;
			}
	}
	/* the size the trace recorded, also under a size given: what outside memory is taken from
	 */
	for (uint32_t i = 0; i < meta->n_devices; i++)
		if (meta->devices[i].index == p->o->device)
			r->device_memory_recorded = meta->devices[i].total_memory;
	p->mc.limit = p->o->limit;
	if (p->o->limit && p->o->limit_given && p->device_known && !p->o->device_memory_from_oom &&
	    p->o->limit > p->mc.device_memory) {
		char a[32], b[32];
		return ms__diag_set(p->diag, MS_ERR_INVALID_ARG, -1, -1,
		                    "--limit %s is more than the device's memory (%s%s)",
		                    ms_format_size(a, sizeof(a), p->o->limit),
		                    ms_format_size(b, sizeof(b), p->mc.device_memory),
		                    p->o->device_memory ? ", --device-memory" : ", recorded");
	}
	if (!p->mc.limit && meta->limit_bytes > 0 && !p->o->no_recorded_limit)
		p->mc.limit = (uint64_t)meta->limit_bytes;
	if (p->o->fraction > 0) {
		if (!p->device_known)
			return ms__diag_set(p->diag, MS_ERR_INVALID_ARG, -1, -1,
			                    "--memory-fraction needs the device's memory: the "
			                    "trace does not record it, give --device-memory");
		p->mc.limit = p->o->fraction >= 1.0
		                      ? 0
		                      : (uint64_t)(p->o->fraction * (double)p->mc.device_memory);
	}
	if (!p->mc.limit && p->mc.ac.per_process_memory_fraction < 1.0 && p->device_known)
		p->mc.limit = (uint64_t)(p->mc.ac.per_process_memory_fraction *
		                         (double)p->mc.device_memory);
	p->mc.on_segment = on_segment;
	p->mc.ctx = p;
	p->mc.dev = p->o->dev;
	s = ms_model_new(&p->mc, &p->m);
	p->unseen = p->o->limit_only ? 0 : p->o->outside_unseen;
	r->outside_unseen = p->o->outside_unseen;
	if (!s && p->unseen)
		device_left(p);
	/* the pools the user says are MemPools made with no_split or use_on_oom */
	for (size_t i = 0; i < p->o->n_no_split_pools && !s; i++)
		s = ms_model_pool_no_split(p->m, p->o->no_split_pools[i]);
	for (size_t i = 0; i < p->o->n_use_on_oom_pools && !s; i++)
		s = ms_model_pool_use_on_oom(p->m, p->o->use_on_oom_pools[i]);
	r->no_split_pools = p->o->n_no_split_pools;
	r->use_on_oom_pools = p->o->n_use_on_oom_pools;
	if (s)
		return ms__diag_set(p->diag, s, -1, -1, "cannot start the allocator model: %s",
		                    ms_strerror(s));
	if (p->o->init) {
		uint64_t at_start;
		char a[32], b[32];
		MS_TRY(import_state(p, p->o->init));
		/* a replay cannot go back before the trace: what was there is there */
		at_start = p->r->initial_reserved;
		if (p->mc.limit && at_start > p->mc.limit)
			return ms__diag_set(
			        p->diag, MS_ERR_LIMIT, -1, -1,
			        "the trace starts mid-run with %s reserved, more than the "
			        "limit of %s: a replay cannot start below what was there",
			        ms_format_size(a, sizeof(a), at_start),
			        ms_format_size(b, sizeof(b), p->mc.limit));
		if (p->device_known && at_start > p->mc.device_memory)
			return ms__diag_set(
			        p->diag, MS_ERR_LIMIT, -1, -1,
			        "the trace starts mid-run with %s reserved, more than the "
			        "device's %s: a replay cannot start below what was there",
			        ms_format_size(a, sizeof(a), at_start),
			        ms_format_size(b, sizeof(b), p->mc.device_memory));
	}
	return MS_OK;
}

/* The program's empty_cache(), before event index; refused: its cudaFree was (the model is
 * told by ms_model_refuse_free). */
static void empty_cache_call(struct rp *p, uint64_t index, uint16_t pool, int refused)
{
	struct ms_replay_result *r = p->r;
	size_t cap = r->cap_empty_cache_at, cap2 = r->cap_empty_cache_at;

	r->empty_cache_calls++;
	if (ms_grow(&r->empty_cache_at, &r->cap_empty_cache_at, r->n_empty_cache_at + 1,
	            sizeof(uint64_t)) == 0 &&
	    ms_grow(&r->empty_cache_pool, &cap, r->n_empty_cache_at + 1, sizeof(uint16_t)) == 0 &&
	    ms_grow(&r->empty_cache_refused_at, &cap2, r->n_empty_cache_at + 1, 1) == 0) {
		r->empty_cache_at[r->n_empty_cache_at] = index;
		r->empty_cache_refused_at[r->n_empty_cache_at] = (uint8_t)refused;
		r->empty_cache_pool[r->n_empty_cache_at++] = pool;
	} else {
		p->err = MS_ERR_NOMEM;
	}
	if (pool == MS_POOL_DEFAULT)
		ms_model_empty_cache(p->m);
	else
		ms_model_empty_pool_cache(p->m, pool);
}

static void empty_cache(struct rp *p, uint64_t index, uint16_t pool)
{
	empty_cache_call(p, index, pool, 0);
}

/*
 * Did the driver refuse the cudaFree of the pending frees? PyTorch records a segment_free
 * before its cudaFree, which the driver refuses during a stream capture (in its global and
 * thread-local modes); the call raises and the segment stays. A recording whose interposer
 * saw CUDA's calls shows none after them, while a capture is underway; any trace frees the same
 * segment again before allocating it (refused: the second free seen while the first waits).
 */
static int free_refused(const struct rp *p, int again)
{
	if (again)
		return 1;
	if (!p->ext.events || !p->marks.captures)
		return 0;
	for (size_t i = 0; i < p->pend_frees; i++)
		if (p->pend[i].done)
			return 0;
	return 1;
}

/*
 * Recorded frees the model did not make, before an event that is no malloc: empty_cache(), or,
 * where every one was of one released private pool, that pool's own (a MemPool's destructor
 * empties its pool's cache alone). again: the next recorded free is of a segment pending here.
 */
static void flush_pending_refused(struct rp *p, int again)
{
	int refused;

	if (!p->pend_frees)
		return;
	refused = free_refused(p, again);
	if (refused) {
		ms_model_refuse_free(p->m, 1);
		p->r->empty_cache_refused++;
	}
	/* a refused call is torch.cuda.empty_cache(): a pool's own emptying (a MemPool's
	 * destructor) waits on its events first, which a capture refuses before any free */
	empty_cache_call(p, p->index,
	                 refused || p->pend_pool == PEND_MIXED ? MS_POOL_DEFAULT : p->pend_pool,
	                 refused);
	if (refused)
		ms_model_refuse_free(p->m, 0);
	p->pend_frees = 0;
	p->pend_free_bytes = 0;
}

static void flush_pending(struct rp *p)
{
	flush_pending_refused(p, 0);
}

/* o->on_release of the block bv (recorded at addr), index the event releasing it. */
static void released(const struct rp *p, uint64_t index, uint64_t bv, uint64_t addr)
{
	const struct ms_model_block *b = (const struct ms_model_block *)(uintptr_t)bv;
	uint64_t made;
	uint32_t stack;

	ms_model_block_tag(b, &made, &stack);
	if (made != MS_REPLAY_BEFORE_TRACE)
		p->o->on_release(p->o->ctx, index, made, stack, addr, ms_model_block_requested(b));
}

/* Does holder (size, index) go before h: larger first, then the older allocation. */
static int holder_before(uint64_t size, uint64_t index, const struct ms_replay_holder *h)
{
	return size > h->size || (size == h->size && index < h->index);
}

/*
 * Keep the holders largest first (equal sizes by event index: the live table's order is
 * its hash's, which differs from run to run), at most MS_OOM_HOLDERS.
 */
static void add_holder(struct ms_replay_oom *x, uint64_t blockv)
{
	const struct ms_model_block *b = (const struct ms_model_block *)(uintptr_t)blockv;
	uint64_t size = ms_model_block_size(b), index;
	uint32_t stack;
	size_t i;

	ms_model_block_tag(b, &index, &stack);
	if (x->n_holders == MS_OOM_HOLDERS &&
	    !holder_before(size, index, &x->holders[MS_OOM_HOLDERS - 1]))
		return;
	i = x->n_holders < MS_OOM_HOLDERS ? x->n_holders++ : MS_OOM_HOLDERS - 1;
	while (i > 0 && holder_before(size, index, &x->holders[i - 1])) {
		x->holders[i] = x->holders[i - 1];
		i--;
	}
	x->holders[i].size = size;
	x->holders[i].index = index;
	x->holders[i].stack = stack; /* checked against the table once it is read: holder_stacks */
}

/* A stack of y interned in t: its frames' strings, the frames, the stack. */
static ms_status copy_stack(struct ms_symtab *t, const struct ms_symtab *y, uint32_t stack,
                            uint32_t *out)
{
	size_t n;
	const uint32_t *fr = ms_symtab_get_stack(y, stack, &n);
	uint32_t *ids = ms_malloc(sizeof(*ids) * (n ? n : 1));
	ms_status s = MS_OK;

	if (!ids)
		return MS_ERR_NOMEM;
	for (size_t i = 0; i < n && !s; i++) {
		const struct ms_frame *f = &y->frames[fr[i]];
		const struct ms_str *name = ms_symtab_get_str(y, f->name);
		const struct ms_str *file = ms_symtab_get_str(y, f->file);
		struct ms_frame g = {0, 0, f->line};
		if (!(s = ms_symtab_str(t, name->s, name->len, &g.name)) &&
		    !(s = ms_symtab_str(t, file->s, file->len, &g.file)))
			s = ms_symtab_frame(t, &g, &ids[i]);
	}
	if (!s)
		s = ms_symtab_stack(t, ids, n, out);
	ms_free(ids);
	return s;
}

/*
 * The holders' sites, and their stacks copied into the result (the trace's table goes with the
 * replay), once the whole trace is read. Out of memory, a holder keeps its site and loses its
 * stack.
 */
static void holder_stacks(struct rp *p, struct ms_replay_oom *x)
{
	struct ms_replay_result *r = p->r;

	for (size_t i = 0; i < x->n_holders; i++) {
		struct ms_replay_holder *h = &x->holders[i];
		uint32_t stack = p->syms && h->stack < ms_symtab_nstacks(p->syms) ? h->stack : 0;
		ms_stack_label(p->syms, stack, h->site, sizeof(h->site));
		h->stack = 0;
		if (!stack)
			continue;
		if (!r->holder_syms) {
			if (!(r->holder_syms = ms_malloc(sizeof(*r->holder_syms))))
				continue;
			if (ms_symtab_init(r->holder_syms)) {
				ms_free(r->holder_syms);
				r->holder_syms = NULL;
				continue;
			}
		}
		if (copy_stack(r->holder_syms, p->syms, stack, &h->stack))
			h->stack = 0;
	}
}

static void record_oom(struct rp *p, const struct ms_model_oom *o, int recorded)
{
	struct ms_replay_oom *x = &p->r->first_oom;

	if (p->r->has_oom)
		return;
	p->r->has_oom = 1;
	x->index = p->index;
	x->recorded = recorded;
	x->o = *o;
	x->stats = *ms_model_stats(p->m);
	x->n_holes = ms_model_largest_free(p->m, o->stream, o->rounded <= (1u << 20), x->holes,
	                                   MS_OOM_HOLES);
	for (size_t i = 0; i < p->live.cap; i++)
		if (p->live.keys[i])
			add_holder(x, p->live.vals[i]);
	/* their sites once the trace is read: a reader ahead may still be filling the table */
}

static void snap_release(struct ms_replay_snap *sn)
{
	ms_free(sn->segs);
	ms_free(sn->blocks);
	memset(sn, 0, sizeof(*sn));
}

/* The state now into sn. */
static void snap_into(struct rp *p, struct ms_replay_snap *sn, int at_oom)
{
	struct ms_model_block **held;
	size_t n = 0, cap = p->live.n + p->pending.n + 1;
	ms_status s;

	if (sn->taken || p->err)
		return;
	if (!(held = ms_malloc(sizeof(*held) * cap))) {
		p->err = MS_ERR_NOMEM;
		return;
	}
	for (size_t i = 0; i < p->live.cap; i++)
		if (p->live.keys[i])
			held[n++] = (struct ms_model_block *)(uintptr_t)p->live.vals[i];
	for (size_t i = 0; i < p->pending.cap; i++)
		if (p->pending.keys[i])
			held[n++] = (struct ms_model_block *)(uintptr_t)p->pending.vals[i];
	if (p->slot_full)
		held[n++] = (struct ms_model_block *)(uintptr_t)p->slot_block;
	s = ms_model_snapshot(p->m, held, n, &sn->segs, &sn->n_segs, &sn->blocks, &sn->n_blocks);
	ms_free(held);
	if (s) {
		p->err = s;
		return;
	}
	sn->taken = 1;
	sn->index = p->index;
	sn->at_oom = at_oom;
	sn->stats = *ms_model_stats(p->m);
}

/* The state now into r->snap; the replay stops. */
static void take_snap(struct rp *p, int at_oom)
{
	p->stopped = 1;
	snap_into(p, &p->r->snap, at_oom);
}

/* The states opts.more_snaps asks for at this event (the replay goes on). */
static void more_snaps(struct rp *p)
{
	const struct ms_replay_opts *o = p->o;

	while (p->next_snap < o->n_more_snaps && o->more_snaps[p->next_snap] <= p->index) {
		if (!p->r->snaps) {
			p->r->snaps = ms_calloc(o->n_more_snaps, sizeof(*p->r->snaps));
			if (!p->r->snaps) {
				p->err = MS_ERR_NOMEM;
				return;
			}
		}
		snap_into(p, &p->r->snaps[p->r->n_snaps++], 0);
		p->next_snap++;
	}
}

static void note_peak(struct rp *p)
{
	/* the most that was allocated while reserved memory stood at its peak */
	const struct ms_model_stats *st = ms_model_stats(p->m);
	uint64_t alloc = (uint64_t)st->allocated_bytes[0].current;
	if (st->allocated_bytes[0].peak > p->peak_alloc_seen) {
		p->peak_alloc_seen = st->allocated_bytes[0].peak;
		p->r->peak_allocated_index = p->index;
		p->r->served_oom_at_peak_allocated = p->serving;
		p->new_peak = 1;
	}
	if (st->reserved_bytes[0].peak > p->peak_seen)
		p->r->peak_reserved_index = p->index;
	if (st->reserved_bytes[0].peak > p->peak_seen ||
	    (st->reserved_bytes[0].current == st->reserved_bytes[0].peak &&
	     alloc > p->r->allocated_at_peak_reserved)) {
		p->peak_seen = st->reserved_bytes[0].peak;
		p->r->allocated_at_peak_reserved = alloc;
		p->r->served_oom_at_peak_reserved = p->serving;
		p->r->fullest_at_peak_index = p->index;
		p->r->requested_at_peak_reserved = (uint64_t)st->requested_bytes[0].current;
	}
}

/* Whether the recording marked pool code as a MemPool(use_on_oom=True). */
static int marked_use_on_oom(const struct ms_pool_marks *pm, uint16_t code)
{
	for (size_t i = 0; i < pm->n; i++)
		if (pm->pools[i].code == code && pm->pools[i].use_on_oom)
			return 1;
	return 0;
}

/* Whether pool code is in list (a pool named by an option too is one pool, counted once). */
static int pool_listed(const uint16_t *list, size_t n, uint16_t code)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == code)
			return 1;
	return 0;
}

static ms_status do_malloc(struct rp *p, const struct ms_event *e, int recorded_oom)
{
	struct ms_model_block *b;
	struct ms_model_oom o;
	/* a use_on_oom pool's allocation outside use_mem_pool: the allocator's choice, made again
	 */
	uint16_t pool = ms_pool_marks_route(&p->marks, e->pool);
	ms_status s;

	if (pool != e->pool)
		p->r->use_on_oom_decided++;
	else if (pool_listed(p->o->use_on_oom_pools, p->o->n_use_on_oom_pools, pool) &&
	         !marked_use_on_oom(&p->marks, pool))
		p->r->use_on_oom_kept++; /* where the recording marks the pool, it is told */
	if (p->pend_frees) {
		/*
		 * Recorded segment frees just before a malloc: the malloc's own release path
		 * (the retry) if the model needs one too, else the program's empty_cache().
		 */
		if (ms_model_fits_without_release_pool(p->m, e->size, e->stream, pool)) {
			p->r->empty_cache_before_alloc++;
			flush_pending(p);
		}
	}
	if (recorded_oom) {
		/*
		 * What PyTorch could use then: what it had reserved after the flush plus what the
		 * device had free. The device's size is that or more (the rest was held outside
		 * PyTorch); without it, the device is taken to be that; with it recorded, the
		 * memory outside PyTorch is what is left over, and the model gets no more than
		 * PyTorch could. A size given by the user stands as given.
		 */
		uint64_t res = p->rec_reserved, usable = res + e->addr;
		/* the device the OOM was measured on: the recorded size, else the one given */
		uint64_t was = p->r->device_memory_recorded ? p->r->device_memory_recorded
		               : p->device_known            ? p->mc.device_memory
		                                            : 0;
		if (given_device_below(p, usable)) {
			char s1[32], s2[32], s3[32];
			return p->err = ms__diag_set(
			               p->diag, MS_ERR_INVALID_ARG, -1, (int64_t)p->index,
			               "--device-memory %s is less than PyTorch could use at the "
			               "recorded "
			               "OOM (%s reserved and %s free on the device): the job "
			               "cannot have "
			               "run on it",
			               ms_format_size(s1, sizeof(s1), p->mc.device_memory),
			               ms_format_size(s2, sizeof(s2), res),
			               ms_format_size(s3, sizeof(s3), e->addr));
		}
		if (!p->r->oom_seen) {
			p->r->oom_seen = 1;
			p->r->oom_reserved = res;
			p->r->oom_device_free = e->addr;
			p->r->external_at_oom = p->ext.cur;
			if (was > usable)
				p->r->outside_at_oom = was - usable;
		}
		if (p->o->limit_only) {
			/* the least-memory search: only its limit binds */
		} else if (!p->device_known) {
			p->mc.device_memory = usable;
			p->device_known = 1;
			p->r->device_memory_source = MS_DEVMEM_FROM_OOM;
			ms_model_set_device_memory(p->m, usable);
		} else if ((p->r->device_memory_source == MS_DEVMEM_RECORDED ||
		            p->r->device_memory_source == MS_DEVMEM_GIVEN) &&
		           was > usable && was - usable > p->unseen + p->ext.cur) {
			/* the rest was held outside PyTorch then, beyond what the raw events show:
			   taken as constant from here on (the same bytes on a device of another
			   size) */
			p->unseen = was - usable - p->ext.cur;
			device_left(p);
		}
	}
	/* a pool the trace does not name is taken to be the default one */
	if ((s = ms_model_malloc_pool(p->m, e->size, e->stream, pool, &b, &o)))
		return s;
	if (recorded_oom) {
		p->r->recorded_ooms++;
		if (!b) {
			p->r->reproduced_ooms++;
			record_oom(p, &o, 1);
			if (p->o->snap && p->o->snap_at_oom)
				take_snap(p, 1);
		} else {
			/* the program got nothing here: give the block straight back */
			p->r->missed_ooms++;
			p->missed_pending++;
			p->serving = ms_model_block_size(b);
			note_peak(p);
			p->serving = 0;
			ms_model_free_requested(p->m, b);
			MS_TRY(ms_model_free_completed(p->m, b));
		}
		return MS_OK;
	}
	p->r->missed_ooms_went_on += p->missed_pending;
	p->missed_pending = 0;
	if (!b) {
		record_oom(p, &o, 0);
		p->r->ended_by_oom = 1;
		p->r->end_oom_index = p->index;
		p->r->end_oom_requested = e->size;
		p->stopped = 1;
		if (p->o->snap)
			take_snap(p, 1);
		return MS_OK;
	}
	if (ms_model_block_addr(b) != e->addr && !p->r->misplaced_allocs++) {
		p->r->first_misplaced_index = p->index;
		p->r->first_misplaced_recorded = e->addr;
		p->r->first_misplaced_replayed = ms_model_block_addr(b);
	}
	if (ms_u64map_put(&p->live, e->addr, (uint64_t)(uintptr_t)b))
		return MS_ERR_NOMEM;
	ms_model_block_set_tag(b, p->index, e->stack);
	note_peak(p);
	return MS_OK;
}

/* The model's figures for the windows (analysis/window.h), NULL before it exists. */
static const struct ms_window_now *window_now(const struct rp *p, struct ms_window_now *n)
{
	const struct ms_model_stats *st;

	if (!p->m)
		return NULL;
	st = ms_model_stats(p->m);
	n->reserved = (uint64_t)st->reserved_bytes[0].current;
	n->allocated = (uint64_t)st->allocated_bytes[0].current;
	n->requested = (uint64_t)st->requested_bytes[0].current;
	n->reserved_peak = (uint64_t)st->reserved_bytes[0].peak;
	n->allocated_peak = (uint64_t)st->allocated_bytes[0].peak;
	n->requested_peak = (uint64_t)st->requested_bytes[0].peak;
	return n;
}

/* The reserved bytes after this event, where they changed (result.reserved_log). */
static void log_reserved(struct rp *p)
{
	struct ms_replay_result *r = p->r;
	uint64_t now = (uint64_t)ms_model_stats(p->m)->reserved_bytes[0].current;
	uint64_t before = r->n_reserved_log ? r->reserved_log[r->n_reserved_log - 1].reserved : 0;

	r->reserved_logged = 1;
	r->reserved_through = p->index + 1;
	if (now == before)
		return;
	if (ms_grow(&r->reserved_log, &p->cap_reserved_log, r->n_reserved_log + 1,
	            sizeof(*r->reserved_log))) {
		p->err = MS_ERR_NOMEM;
		return;
	}
	r->reserved_log[r->n_reserved_log++] = (struct ms_reserved_point){p->index, now};
}

static ms_status r_event(void *ctx, const struct ms_event *e)
{
	struct rp *p = ctx;
	struct ms_window_now now;
	uint64_t bv;
	ms_status s = MS_OK;

	p->index = p->r->events_total++;
	p->new_peak = 0;
	if (e->action == MS_ACT_OOM && e->device == p->o->device && e->source == MS_SRC_TORCH &&
	    !p->r->recorded_ooms_in_trace++)
		p->r->first_recorded_oom_index = p->index;
	if (p->stopped || p->err)
		return p->err;
	if (p->o->windows)
		ms_windows_time(&p->wins, e->t_ns);
	/* a time window is bounded by the replayed device's events */
	if (p->o->windows &&
	    (p->err = ms_windows_before_event(
	             &p->wins, p->index, e->device == p->o->device ? e->t_ns : 0,
	             e->device == p->o->device && e->source == MS_SRC_TORCH ? e : NULL,
	             window_now(p, &now))))
		return p->err;
	if (p->o->snap && p->index > p->o->snap_index) {
		/* the event asked for was another device's: the state after it is this one's */
		p->index--;
		flush_pending(p);
		take_snap(p, 0);
		return p->err;
	}
	if (e->device != p->o->device) {
		/* a snapshot mark is written for every device, used or not */
		if (ms_event_is_snapshot_mark(e))
			p->r->events_other_marks++;
		else
			p->r->events_other_devices++;
		return MS_OK;
	}
	if ((p->err = ms_outside_event(&p->ext, p->index, e)))
		return p->err;
	p->r->external_now = p->ext.cur;
	if (p->ext.cur != p->ext_applied)
		device_left(p);
	/* raw CUDA calls are not the caching allocator's (its own cudaMalloc is seen twice) */
	if (e->source != MS_SRC_TORCH) {
		p->r->events_external++;
		for (size_t i = 0; e->action == MS_ACT_SEGMENT_FREE && i < p->pend_frees; i++)
			p->pend[i].done |= p->pend[i].addr == e->addr;
		return MS_OK;
	}
	p->r->events_replayed++;
	switch (e->action) {
	case MS_ACT_ALLOC:
		if (e->pool == MS_POOL_UNKNOWN)
			p->r->allocs_pool_unknown++;
		else if (e->pool != MS_POOL_DEFAULT)
			p->r->allocs_private++;
		s = do_malloc(p, e, 0);
		break;
	case MS_ACT_OOM:
		s = do_malloc(p, e, 1);
		break;
	case MS_ACT_FREE_REQUESTED:
		flush_pending(p);
		if (!ms_u64map_del(&p->live, e->addr, &bv)) {
			p->r->unmatched_frees++;
			break;
		}
		ms_model_free_requested(p->m, (struct ms_model_block *)(uintptr_t)bv);
		if (p->o->on_release)
			released(p, p->index, bv, e->addr);
		/*
		 * The completion nearly always follows at once: keep the block in a slot of one;
		 * a block still waiting (record_stream) moves to the pending map.
		 */
		if (p->slot_full && ms_u64map_put(&p->pending, p->slot_addr, p->slot_block))
			return MS_ERR_NOMEM;
		p->slot_full = 1;
		p->slot_addr = e->addr;
		p->slot_block = bv;
		break;
	case MS_ACT_FREE_COMPLETED:
		flush_pending(p);
		if (p->slot_full && p->slot_addr == e->addr) {
			p->slot_full = 0;
			bv = p->slot_block;
		} else if (!ms_u64map_del(&p->pending, e->addr, &bv)) {
			if (!ms_u64map_del(&p->live, e->addr, &bv))
				break; /* a free of a block allocated before the trace began */
			if (p->o->on_release) /* no free_requested before it */
				released(p, p->index, bv, e->addr);
		}
		s = ms_model_free_completed(p->m, (struct ms_model_block *)(uintptr_t)bv);
		break;
	case MS_ACT_SEGMENT_ALLOC:
	case MS_ACT_SEGMENT_MAP:
		p->rec_reserved += e->size;
		/* recorded just before the allocation that made it: in time for that one */
		if (e->action == MS_ACT_SEGMENT_ALLOC && p->recorded_expandable &&
		    e->pool != MS_POOL_DEFAULT && e->pool != MS_POOL_UNKNOWN &&
		    (p->err = ms_model_pool_custom_allocator(p->m, e->pool)))
			return p->err;
		if (!p->o->no_segment_log)
			ms_seg_events_push(&p->r->recorded, &p->r->n_recorded, &p->cap_recorded,
			                   p->index, e->action, e->addr, e->size, &p->err);
		if (!p->o->no_hints)
			ms_model_hint_segment(p->m, e->size, e->addr,
			                      e->action == MS_ACT_SEGMENT_MAP);
		break;
	case MS_ACT_SEGMENT_FREE:
	case MS_ACT_SEGMENT_UNMAP:
		p->rec_reserved -= p->rec_reserved > e->size ? e->size : p->rec_reserved;
		if (!p->o->no_segment_log)
			ms_seg_events_push(&p->r->recorded, &p->r->n_recorded, &p->cap_recorded,
			                   p->index, e->action, e->addr, e->size, &p->err);
		/* PyTorch gives a private pool's segments back only once nothing uses the pool */
		if (e->pool != MS_POOL_DEFAULT && e->pool != MS_POOL_UNKNOWN &&
		    (p->err = ms_model_release_pool(p->m, e->pool)))
			return p->err;
		if (p->model_frees_unmatched) {
			p->model_frees_unmatched--;
		} else {
			uint16_t pool = e->pool == MS_POOL_UNKNOWN ? MS_POOL_DEFAULT : e->pool;
			for (size_t i = 0; e->action == MS_ACT_SEGMENT_FREE && i < p->pend_frees;
			     i++)
				if (p->pend[i].addr == e->addr) {
					flush_pending_refused(p, 1);
					break;
				}
			if (ms_grow(&p->pend, &p->cap_pend, p->pend_frees + 1, sizeof(*p->pend)))
				return p->err = MS_ERR_NOMEM;
			p->pend[p->pend_frees].addr = e->addr;
			/* an unmap is no cudaFree: never taken as refused */
			p->pend[p->pend_frees].done = e->action != MS_ACT_SEGMENT_FREE;
			if (!p->pend_frees) {
				p->pend_index = p->index;
				p->pend_pool = pool;
			} else if (p->pend_pool != pool) {
				p->pend_pool = PEND_MIXED;
			}
			p->pend_frees++;
			p->pend_free_bytes += e->size;
		}
		break;
	default:
		break;
	}
	if (!s && p->o->reserved_log)
		log_reserved(p);
	if (!s && p->o->windows && p->m)
		ms_windows_after_event(&p->wins, p->index, e->t_ns, e->action == MS_ACT_OOM,
		                       window_now(p, &now));
	if (!s && p->o->on_event)
		p->o->on_event(p->o->ctx, p->index, e, p->m);
	if (!s && p->o->n_more_snaps)
		more_snaps(p);
	if (!s && p->new_peak && p->o->peak_gate) {
		p->new_peak = 0;
		if (p->o->peak_gate(p->o->peak_gate_ctx, p->index)) {
			snap_release(&p->r->peak_snap);
			snap_into(p, &p->r->peak_snap, 0);
		}
	}
	if (!s && p->o->snap && !p->stopped && p->index == p->o->snap_index) {
		flush_pending(p);
		take_snap(p, 0);
	}
	return s ? s : p->err;
}

static ms_status r_annotation(void *ctx, const struct ms_annotation *a)
{
	struct rp *p = ctx;
	struct ms_window_now now;

	/*
	 * Windows first: one that starts or ends before event a->event_index, or at this mark,
	 * has the state before what the mark does to the model (an empty_cache() mark empties it
	 * here, where the recording frees the segments in the events after the mark).
	 */
	if (p->o->windows && p->syms && !p->err && !p->stopped &&
	    ((p->err = ms_windows_before_event(&p->wins, a->event_index, 0, NULL,
	                                       window_now(p, &now))) ||
	     (p->err = ms_windows_annotation(&p->wins, a->event_index,
	                                     ms_symtab_get_str(p->syms, a->name)->s, a->stage,
	                                     window_now(p, &now)))))
		return p->err;

	/*
	 * A call the recorder marked (every device's cache): the model empties its cache here,
	 * also where the recorded run had nothing to give back; the segment frees recorded after
	 * the mark then match the model's own.
	 */
	if (a->call == MS_CALL_EMPTY_CACHE && a->stage == MS_ANN_START && p->m && !p->stopped &&
	    !p->err) {
		uint64_t index = p->index;
		flush_pending(p);
		p->index =
		        p->r->events_total; /* the model's frees are logged before the next event */
		empty_cache(p, p->index, MS_POOL_DEFAULT);
		p->index = index;
		p->r->empty_cache_marked++;
	}
	/* the job set a per-process limit on this device: the model's, unless the user gave one */
	if (a->call == MS_CALL_MEMORY_FRACTION && a->device == p->o->device && p->m && p->syms &&
	    !p->err && !p->o->limit && p->o->fraction <= 0 && !p->o->no_recorded_limit) {
		uint64_t bytes;
		if (ms_ann_limit_mark(ms_symtab_get_str(p->syms, a->name)->s, &bytes) == 0) {
			p->mc.limit = bytes;
			ms_model_set_limit(p->m, bytes);
			p->r->limit_marks++;
		}
	}
	/* what the device had free: beside PyTorch's reserved bytes, what was held outside it */
	if (a->call == MS_CALL_DEVICE_MEMORY && a->device == p->o->device && p->m && p->syms &&
	    !p->err) {
		uint64_t free_b, total;
		if (ms_ann_device_memory_mark(ms_symtab_get_str(p->syms, a->name)->s, &free_b,
		                              &total) == 0 &&
		    total >= free_b + p->rec_reserved) {
			struct ms_replay_result *r = p->r;
			uint64_t out = total - free_b - p->rec_reserved;
			if (given_device_below(p, out + p->rec_reserved)) {
				char b1[32], b2[32], b3[32];
				return p->err = ms__diag_set(
				               p->diag, MS_ERR_INVALID_ARG, -1, (int64_t)p->index,
				               "--device-memory %s is less than what the trace "
				               "measured "
				               "held outside PyTorch (%s) with PyTorch's reserved "
				               "(%s) "
				               "there: the job cannot have run on it",
				               ms_format_size(b1, sizeof(b1), p->mc.device_memory),
				               ms_format_size(b2, sizeof(b2), out),
				               ms_format_size(b3, sizeof(b3), p->rec_reserved));
			}
			if (ms_grow(&r->outside_points, &r->cap_outside_points,
			            r->n_outside_points + 1, sizeof(*r->outside_points)))
				return p->err = MS_ERR_NOMEM;
			r->outside_points[r->n_outside_points++] =
			        (struct ms_outside_point){a->event_index, out, p->ext.cur};
			/* from here on the model's device leaves it out */
			p->unseen = out > p->ext.cur ? out - p->ext.cur : 0;
			device_left(p);
		}
	}
	/* MemPools made with no_split=True or use_on_oom=True, use_mem_pool's scopes, captures */
	if (ms_pool_marks_follows(a->call) && p->m && p->syms && !p->err) {
		uint16_t code;
		uint8_t call;
		if ((p->err = ms_pool_marks_take(
		             &p->marks, a, ms_symtab_get_str(p->syms, a->name)->s, &call, &code)))
			return p->err;
		ms_model_set_captures_underway(p->m, p->marks.open);
		if (call == MS_CALL_MEMPOOL_NO_SPLIT) {
			if ((p->err = ms_model_pool_no_split(p->m, code)))
				return p->err;
			p->r->no_split_pools +=
			        !pool_listed(p->o->no_split_pools, p->o->n_no_split_pools, code);
		} else if (call == MS_CALL_MEMPOOL_USE_ON_OOM) {
			if ((p->err = ms_model_pool_use_on_oom(p->m, code)))
				return p->err;
			p->r->use_on_oom_pools += !pool_listed(p->o->use_on_oom_pools,
			                                       p->o->n_use_on_oom_pools, code);
		}
	}
	return p->o->on_annotation ? p->o->on_annotation(p->o->ctx, a) : MS_OK;
}

static ms_status r_end(void *ctx, uint64_t n)
{
	struct rp *p = ctx;

	(void)n;
	if (!p->stopped) {
		/* an empty_cache() after the last event: placed past it */
		p->index = p->r->events_total;
		flush_pending(p);
	}
	if (p->m && p->o->snap && !p->r->snap.taken) {
		p->index = p->r->events_total ? p->r->events_total - 1 : 0;
		take_snap(p, 0);
	}
	for (size_t i = 0; p->o->on_release && i < p->live.cap; i++)
		if (p->live.keys[i])
			released(p, UINT64_MAX, p->live.vals[i], p->live.keys[i] - 1);
	return p->err;
}

/* One replay from a file (path, or src counted as pass) or from a trace in memory (t). */
static ms_status replay(const char *path, const struct ms_source *src, unsigned pass,
                        const struct ms_trace *t, const struct ms_replay_opts *o,
                        struct ms_replay_result *r, struct ms_diag *diag)
{
	struct rp p;
	struct ms_sink sink = {0};
	struct ms_symtab syms;
	ms_status s;

	memset(r, 0, sizeof(*r));
	snprintf(r->backend, sizeof(r->backend), "sim");
	memset(&p, 0, sizeof(p));
	r->device = o->device;
	p.o = o;
	p.r = r;
	p.diag = diag;
	sink.ctx = &p;
	sink.begin = r_begin;
	sink.event = r_event;
	sink.end = r_end;
	sink.annotation = r_annotation;
	sink.segment = r_segment;
	if (o->windows)
		ms_windows_init(&p.wins, o->windows);
	if (t) {
		s = ms_trace_emit(t, &sink);
		if (r->has_oom)
			holder_stacks(&p, &r->first_oom);
		r->cut_short = !s && t->cut_short;
	} else {
		struct ms_source_info si;
		/* nothing of the caller's reads the table while the replay runs: read ahead */
		int ahead = !o->on_event && !o->on_annotation && !o->peak_gate;
		struct ms_symtab *y = o->syms ? o->syms : &syms;
		if (!o->syms && ms_symtab_init(&syms))
			return MS_ERR_NOMEM;
		s = src ? (ahead ? ms_source_stream_ahead : ms_source_stream)(src, pass, NULL, y,
		                                                              &sink, &si, diag)
		        : (ahead ? ms_source_read_ahead : ms_source_read)(path, NULL, y, &sink, &si,
		                                                          diag);
		if (r->has_oom)
			holder_stacks(&p, &r->first_oom);
		if (!o->syms)
			ms_symtab_release(&syms);
		r->cut_short = !s && ms_source_cut_short(&si);
	}
	if (o->windows) {
		/* where the replay stopped (an OOM of its own), not the trace's last event */
		ms_windows_end(&p.wins, r->ended_by_oom ? r->end_oom_index + 1 : r->events_total,
		               r->ended_by_oom);
		r->windows_asked = 1;
		ms_windows_take(&p.wins, &r->windows, &r->n_windows, r->window_marks_seen,
		                sizeof(r->window_marks_seen));
	}
	if (p.m) {
		size_t n;
		const struct ms_model_pool *pools = ms_model_pools(p.m, &n);
		r->stats = *ms_model_stats(p.m);
		r->device_memory = p.mc.device_memory;
		r->limit = p.mc.limit;
		if ((r->pools = ms_malloc((n ? n : 1) * sizeof(*r->pools)))) {
			/* a private pool that never held a segment (one named by an option that the
			   trace does not use) is no pool of the replay */
			for (size_t i = 0; i < n; i++)
				if (i == 0 || pools[i].segment.allocated ||
				    pools[i].reserved_bytes.peak)
					r->pools[r->n_pools++] = pools[i];
		} else if (!s) {
			s = MS_ERR_NOMEM;
		}
	}
	if (s == MS_OK && (s = ms_outside_finish(&p.ext)) == MS_OK) {
		r->external_now = p.ext.cur;
		r->external_peak = p.ext.peak;
		r->external_peak_index = p.ext.peak_index;
	}
	ms_outside_release(&p.ext);
	if (s == MS_ERR_NOMEM && diag && !diag->msg[0])
		ms__diag_set(diag, s, -1, -1, "out of memory");
	ms_model_free(p.m);
	ms_u64map_release(&p.live);
	ms_u64map_release(&p.pending);
	ms_pool_marks_release(&p.marks);
	ms_free(p.pend);
	return s;
}

size_t ms_seg_events_first_diff(const struct ms_seg_event *a, size_t na,
                                const struct ms_seg_event *b, size_t nb)
{
	size_t i, k = na < nb ? na : nb;

	for (i = 0; i < k; i++)
		if (a[i].action != b[i].action || a[i].size != b[i].size)
			return i;
	return na == nb ? SIZE_MAX : k;
}

size_t ms_replay_first_divergence(const struct ms_replay_result *r)
{
	return r->n_recorded ? ms_seg_events_first_diff(r->produced, r->n_produced, r->recorded,
	                                                r->n_recorded)
	                     : SIZE_MAX;
}

ms_status ms_replay_run(const char *path, const struct ms_replay_opts *o,
                        struct ms_replay_result *r, struct ms_diag *diag)
{
	return replay(path, NULL, 0, NULL, o, r, diag);
}

ms_status ms_replay_source(const struct ms_source *src, unsigned pass,
                           const struct ms_replay_opts *o, struct ms_replay_result *r,
                           struct ms_diag *diag)
{
	return src->whole ? replay(NULL, NULL, 0, src->whole, o, r, diag)
	                  : replay(NULL, src, pass, NULL, o, r, diag);
}

ms_status ms_replay_trace(const struct ms_trace *t, const struct ms_replay_opts *o,
                          struct ms_replay_result *r, struct ms_diag *diag)
{
	return replay(NULL, NULL, 0, t, o, r, diag);
}

/* 1: with this limit the replay runs out where the recorded run did not; 2: it misses an OOM
 * the recorded run had; 0: it agrees; < 0: an error. */
static int limit_outcome(const struct ms_trace *t, const struct ms_replay_opts *o, uint64_t limit,
                         struct ms_diag *diag)
{
	struct ms_replay_opts q = *o;
	struct ms_replay_result r;
	ms_status s;
	int out;

	q.limit = limit;
	q.fraction = 0;
	s = replay(NULL, NULL, 0, t, &q, &r, diag);
	/* a limit below a mid-run trace's start runs out at once */
	out = s == MS_ERR_LIMIT ? 1 : s ? -1 : r.ended_by_oom ? 1 : r.missed_ooms ? 2 : 0;
	if (s == MS_ERR_LIMIT && diag)
		diag->msg[0] = 0;
	ms_replay_result_release(&r);
	return out;
}

ms_status ms_replay_infer_limit(const struct ms_trace *t, const struct ms_replay_opts *o,
                                uint64_t *lo, uint64_t *hi, struct ms_diag *diag)
{
	uint64_t a = 1, b = 1ull << 52, m;
	int x;

	/* the least limit that does not run out early (more memory never hurts: monotone) */
	if (limit_outcome(t, o, b, diag) == 1)
		return ms__diag_set(
		        diag, MS_ERR_UNSUPPORTED, -1, -1,
		        "no limit makes this trace replay: it runs out of memory anyway");
	while (a < b) {
		m = a + (b - a) / 2;
		x = limit_outcome(t, o, m, diag);
		if (x < 0)
			return MS_ERR_NOMEM;
		if (x == 1)
			a = m + 1;
		else
			b = m;
	}
	*lo = a;
	/* the greatest limit that still reproduces every recorded OOM */
	x = limit_outcome(t, o, a, diag);
	if (x != 0)
		return ms__diag_set(
		        diag, MS_ERR_UNSUPPORTED, -1, -1,
		        "below %llu bytes the replay runs out earlier than the recording, from "
		        "there up it serves what the recording refused: something the trace does "
		        "not record stood in the way (an open use_mem_pool or CUDA graph capture, "
		        "which memsnap record marks; memory outside PyTorch)",
		        (unsigned long long)a);
	b = 1ull << 52;
	while (a < b) {
		m = a + (b - a + 1) / 2;
		x = limit_outcome(t, o, m, diag);
		if (x < 0)
			return MS_ERR_NOMEM;
		if (x == 0)
			a = m;
		else
			b = m - 1;
	}
	*hi = a;
	return MS_OK;
}

int ms_replay_reuse_as_recorded(const struct ms_replay_result *r)
{
	return r->record_stream_reuse_differs && (r->allocs_private || r->end_private_segments);
}

int ms_replay_outside_at(const struct ms_replay_result *r, uint64_t index, uint64_t external,
                         uint64_t *bytes, uint64_t *mark_index)
{
	const struct ms_outside_point *pt = NULL;
	int64_t b;

	for (size_t i = 0; i < r->n_outside_points && r->outside_points[i].index <= index; i++)
		pt = &r->outside_points[i];
	if (!pt)
		return 0;
	b = (int64_t)pt->bytes + ((int64_t)external - (int64_t)pt->external);
	*bytes = b > 0 ? (uint64_t)b : 0;
	*mark_index = pt->index;
	return 1;
}

void ms_replay_result_release(struct ms_replay_result *r)
{
	ms_free(r->produced);
	ms_free(r->recorded);
	ms_free(r->reserved_log);
	r->reserved_log = NULL;
	ms_window_figures_free(r->windows, r->n_windows);
	r->windows = NULL;
	r->n_windows = 0;
	r->n_reserved_log = 0;
	snap_release(&r->snap);
	snap_release(&r->peak_snap);
	for (size_t i = 0; i < r->n_snaps; i++) {
		ms_free(r->snaps[i].segs);
		ms_free(r->snaps[i].blocks);
	}
	ms_free(r->snaps);
	r->snaps = NULL;
	r->n_snaps = 0;
	r->produced = r->recorded = NULL;
	r->n_produced = r->n_recorded = 0;
	ms_free(r->empty_cache_at);
	r->empty_cache_at = NULL;
	ms_free(r->empty_cache_pool);
	r->empty_cache_pool = NULL;
	ms_free(r->empty_cache_refused_at);
	r->empty_cache_refused_at = NULL;
	ms_free(r->outside_points);
	r->outside_points = NULL;
	r->n_outside_points = r->cap_outside_points = 0;
	ms_free(r->end_segs);
	r->end_segs = NULL;
	r->n_end_segs = 0;
	ms_free(r->pools);
	r->pools = NULL;
	r->n_pools = 0;
	r->n_empty_cache_at = r->cap_empty_cache_at = 0;
	if (r->holder_syms) {
		ms_symtab_release(r->holder_syms);
		ms_free(r->holder_syms);
		r->holder_syms = NULL;
	}
}

/* "[not recorded; at least 5.77 GiB]": a size inferred from an OOM entry, said as such. */
static const char *devmem_at_least(char *buf, size_t cap, uint64_t n)
{
	char b[32];

	snprintf(buf, cap, "[not recorded; at least %s]", ms_format_size(b, sizeof(b), n));
	return buf;
}

const char *ms_devmem_source_name(unsigned source)
{
	static const char *const names[] = {"unknown", "recorded", "given", "inferred_from_oom",
	                                    "this_gpu"};
	return source < sizeof(names) / sizeof(names[0]) ? names[source] : "unknown";
}

void ms_replay_oom_message(const struct ms_replay_result *r, char *buf, size_t cap)
{
	const struct ms_model_oom *o = &r->first_oom.o;
	char a[32], t[48], f[32], l[32], al[32], un[32], allowed[64] = "";
	uint64_t total = r->device_memory;
	/* less what was held outside PyTorch at the recorded OOM, where the trace tells it */
	uint64_t held = o->reserved + (r->oom_seen ? r->outside_at_oom : 0);
	uint64_t dev_free = total == UINT64_MAX || held > total ? 0 : total - held;

	if (r->limit)
		snprintf(allowed, sizeof(allowed),
		         r->limit_inferred ? "[inferred: %s] allowed; " : "%s allowed; ",
		         ms_format_size(l, sizeof(l), r->limit));
	snprintf(buf, cap,
	         "CUDA out of memory. Tried to allocate %s. GPU %u has a total capacity of %s of "
	         "which %s "
	         "is free. %sOf the allocated memory %s is allocated by PyTorch, and %s is "
	         "reserved by "
	         "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
	         "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
	         "documentation for Memory Management  "
	         "(https://docs.pytorch.org/docs/stable/notes/"
	         "cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)",
	         ms_format_size(a, sizeof(a), o->alloc_size), r->device,
	         total == UINT64_MAX ? "(unknown)"
	         : r->device_memory_source == MS_DEVMEM_FROM_OOM
	                 ? devmem_at_least(t, sizeof(t), total)
	                 : ms_format_size(t, sizeof(t), total),
	         total == UINT64_MAX ? "(unknown)" : ms_format_size(f, sizeof(f), dev_free),
	         allowed, ms_format_size(al, sizeof(al), o->allocated),
	         ms_format_size(un, sizeof(un), o->reserved - o->allocated));
}

const struct ms_outside_point *ms_replay_outside_highest(const struct ms_replay_result *r)
{
	const struct ms_outside_point *hi = NULL;
	for (size_t i = 0; i < r->n_outside_points; i++)
		if (!hi || r->outside_points[i].bytes > hi->bytes)
			hi = &r->outside_points[i];
	return hi;
}
