/*
 * replay --backend torch: the trace's allocations and frees driven through PyTorch's own CUDA
 * caching allocator on a real GPU, by the plugin libmemsnap_torch_replay (torch_backend.h),
 * loaded with dlopen so that memsnap itself links nothing of PyTorch or CUDA.
 *
 * What the trace does not record, the program's empty_cache() calls, is taken from the model's
 * replay of the same trace (result.empty_cache_at): on all the real traces the model places
 * them where PyTorch's recorded segment frees say they were.
 */
#define _GNU_SOURCE /* dlopen */
#include "replay/replay_torch.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/hash.h"
#include "common/status.h"
#include "parse/trace.h"
#include "replay/alloc_conf.h"
#include "replay/pool_marks.h"
#include "replay/torch/torch_backend.h"

struct tp {
	const struct mst_api *api;
	struct ms_replay_result *r;
	struct ms_u64map live;      /* recorded address -> real pointer */
	struct ms_u64map deferred;  /* free requested, PyTorch kept the block: address -> pointer */
	struct ms_pool_marks marks; /* the recorder's pool marks so far */
	/* the recorded run had expandable segments: a private pool's whole segment shows a
	 * MemPool with its own allocator (the model's rule, replay.c) */
	int recorded_expandable;
	struct ms_u64map custom; /* the pools given an allocator so far */
	size_t cap_produced, cap_recorded;
	uint64_t index;
	ms_status err;
};

/* The segment events the real allocator made since the last call. */
static void drain(struct tp *p)
{
	struct mst_seg segs[256];
	size_t n;

	while ((n = p->api->take_segments(segs, 256)) > 0)
		for (size_t i = 0; i < n; i++)
			ms_seg_events_push(&p->r->produced, &p->r->n_produced, &p->cap_produced,
			                   p->index, segs[i].action, segs[i].addr, segs[i].size,
			                   &p->err);
}

static void fill_stats(struct tp *p)
{
	struct mst_stats s;
	struct ms_model_stats *st = &p->r->stats;

	p->api->stats(&s);
	st->allocated_bytes[0].current = s.allocated_current;
	st->allocated_bytes[0].peak = s.allocated_peak;
	st->reserved_bytes[0].current = s.reserved_current;
	st->reserved_bytes[0].peak = s.reserved_peak;
	st->requested_bytes[0].current = s.requested_current;
	st->requested_bytes[0].peak = s.requested_peak;
	st->active_bytes[0].current = s.active_current;
	st->active_bytes[0].peak = s.active_peak;
	st->segment[0].current = s.segment_current;
	st->segment[0].peak = s.segment_peak;
	st->inactive_split_bytes[0].current = s.inactive_split_bytes_current;
	st->num_alloc_retries = s.num_alloc_retries;
	st->num_ooms = s.num_ooms;
	st->num_device_alloc = s.num_device_alloc;
	st->num_device_free = s.num_device_free;
}

/* An OOM of the real allocator at event index. */
static void oom(struct tp *p, const struct ms_event *e, int recorded, const char *msg)
{
	struct ms_replay_result *r = p->r;

	if (r->has_oom)
		return;
	r->has_oom = 1;
	fill_stats(p);
	r->first_oom.index = p->index;
	r->first_oom.recorded = recorded;
	r->first_oom.o.requested = e->size;
	r->first_oom.o.stream = e->stream;
	r->first_oom.o.allocated = (uint64_t)r->stats.allocated_bytes[0].current;
	r->first_oom.o.reserved = (uint64_t)r->stats.reserved_bytes[0].current;
	r->first_oom.o.inactive_split = (uint64_t)r->stats.inactive_split_bytes[0].current;
	r->first_oom.o.free_in_reserved = r->first_oom.o.reserved - r->first_oom.o.allocated;
	r->first_oom.stats = r->stats;
	snprintf(r->backend_message, sizeof(r->backend_message), "%s", msg);
}

/* Is the next event of the device (PyTorch's) the completion of event i's free? */
static int completes_next(const struct ms_trace *t, size_t i, uint32_t device)
{
	for (size_t j = i + 1; j < t->n_events; j++) {
		const struct ms_event *n = &t->events[j];
		if (n->device != device || n->source != MS_SRC_TORCH)
			continue;
		return n->action == MS_ACT_FREE_COMPLETED && n->addr == t->events[i].addr;
	}
	return 0;
}

/*
 * The private pools whose segments the empty_cache() before event i gives back (the segment
 * frees that follow it at once): no longer used by then (a graph reset, a MemPool deleted),
 * which the trace says only through those frees. Released first, as they were in the run.
 */
static void release_freed_pools(struct tp *p, const struct ms_trace *t, size_t i, uint32_t dev)
{
	for (; i < t->n_events; i++) {
		const struct ms_event *e = &t->events[i];
		uint64_t id[2];
		if (e->device != dev || e->source != MS_SRC_TORCH)
			continue; /* another device's, a raw CUDA call's (the cudaFree itself) */
		if (e->action != MS_ACT_SEGMENT_FREE && e->action != MS_ACT_SEGMENT_UNMAP)
			return;
		if (e->pool == MS_POOL_DEFAULT || e->pool == MS_POOL_UNKNOWN)
			continue;
		ms_pool_id(e->pool, id);
		p->api->release_pool(id[0], id[1]); /* once: the plugin ignores a second */
	}
}

/* The program's empty_cache() number k, as the model placed it: every cache, or one pool's. */
static void empty_cache(struct tp *p, const uint16_t *ec_pool, size_t k)
{
	uint64_t id[2];

	if (!ec_pool || ec_pool[k] == MS_POOL_DEFAULT) {
		p->api->empty_cache();
		return;
	}
	ms_pool_id(ec_pool[k], id);
	p->api->empty_pool_cache(id[0], id[1]);
}

/*
 * Pool code is a MemPool made with no_split=True or use_on_oom=True (call: the mark that says
 * so): set in PyTorch's allocator, said once where it has no such setting.
 */
static void set_pool(struct tp *p, uint8_t call, uint16_t code, struct ms_diag *d)
{
	uint64_t id[2];

	ms_pool_id(code, id);
	if (call == MS_CALL_MEMPOOL_NO_SPLIT) {
		if (p->api->no_split(id[0], id[1]) && !p->r->no_split_pools)
			ms__diag_warn(d,
			              "PyTorch %s's allocator has no MemPool(no_split=True): the "
			              "replay splits that pool's blocks",
			              p->api->torch_version());
		p->r->no_split_pools++;
	} else if (call == MS_CALL_MEMPOOL_USE_ON_OOM) {
		if (p->api->use_on_oom(id[0], id[1]) && !p->r->use_on_oom_pools)
			ms__diag_warn(d,
			              "PyTorch %s's allocator has no MemPool(use_on_oom=True): the "
			              "replay never falls back to that pool",
			              p->api->torch_version());
		p->r->use_on_oom_pools++;
	}
}

static ms_status run(struct tp *p, const struct ms_trace *t, const struct ms_replay_opts *o,
                     const uint64_t *ec_at, const uint16_t *ec_pool, const uint8_t *ec_refused,
                     size_t n_ec, struct ms_diag *d)
{
	struct ms_replay_result *r = p->r;
	char err[1024];
	size_t next_ec = 0, next_ann = 0;
	ms_status s;

	/* the pools the user says are MemPools made with no_split or use_on_oom */
	for (size_t k = 0; k < o->n_no_split_pools; k++)
		set_pool(p, MS_CALL_MEMPOOL_NO_SPLIT, o->no_split_pools[k], d);
	for (size_t k = 0; k < o->n_use_on_oom_pools; k++)
		set_pool(p, MS_CALL_MEMPOOL_USE_ON_OOM, o->use_on_oom_pools[k], d);
	for (size_t i = 0; i < t->n_events && !p->err; i++) {
		const struct ms_event *e = &t->events[i];
		uint64_t ptr, *v;
		int rc;

		p->index = i;
		r->events_total++;
		/* the recorder's pool marks before this event: MemPools made with no_split=True or
		 * use_on_oom=True, use_mem_pool's scopes */
		for (; next_ann < t->n_anns && t->anns[next_ann].event_index <= i; next_ann++) {
			const struct ms_annotation *a = &t->anns[next_ann];
			uint16_t code;
			uint8_t call;
			if (!ms_pool_marks_follows(a->call))
				continue;
			uint32_t was = p->marks.open;
			if ((s = ms_pool_marks_take(&p->marks, a,
			                            ms_symtab_get_str(&t->syms, a->name)->s, &call,
			                            &code)))
				return s;
			if (!was != !p->marks.open)
				p->api->captures_underway(p->marks.open != 0);
			set_pool(p, call, code, d);
		}
		/* the program's empty_cache() before this event, where the model put it (whatever
		 * the event: another device's or a raw CUDA call's comes after it too) */
		while (next_ec < n_ec && ec_at[next_ec] <= i) {
			if (ec_at[next_ec++] == i) {
				/* a call whose frees the next call, refused, records instead: the
				 * pool is released at those frees, after this call */
				if (!(ec_refused && next_ec < n_ec && ec_refused[next_ec]))
					release_freed_pools(p, t, i, o->device);
				/* its cudaFree refused, as during a capture, which the trace may
				 * not mark: one is underway for the allocator then (the model's
				 * too) */
				int refused = ec_refused && ec_refused[next_ec - 1];
				if (refused) {
					p->api->refuse_free(1);
					if (!p->marks.open)
						p->api->captures_underway(1);
				}
				empty_cache(p, ec_pool, next_ec - 1);
				if (refused) {
					p->api->refuse_free(0);
					if (!p->marks.open)
						p->api->captures_underway(0);
				}
				drain(p);
				r->empty_cache_calls++;
			}
		}
		if (e->device != o->device) {
			/* a snapshot mark is written for every device, used or not */
			if (ms_event_is_snapshot_mark(e))
				r->events_other_marks++;
			else
				r->events_other_devices++;
			continue;
		}
		if (e->source != MS_SRC_TORCH) {
			r->events_external++;
			continue;
		}
		r->events_replayed++;
		switch (e->action) {
		case MS_ACT_ALLOC:
		case MS_ACT_OOM: {
			/* the pool the trace names (one it does not, the default pools), but a
			   use_on_oom pool's outside use_mem_pool is PyTorch's to choose again */
			uint64_t id[2] = {0, 0};
			uint16_t pool = ms_pool_marks_route(&p->marks, e->pool);
			if (pool != e->pool)
				r->use_on_oom_decided++;
			if (pool != MS_POOL_UNKNOWN)
				ms_pool_id(pool, id);
			rc = p->api->malloc(e->size, e->stream, id[0], id[1], &ptr, err,
			                    sizeof(err));
			drain(p);
			if (rc < 0)
				return ms__diag_set(d, MS_ERR_BACKEND, -1, (int64_t)i,
				                    "torch backend: event %zu: %s", i, err);
			if (e->action == MS_ACT_OOM) {
				r->recorded_ooms++;
				if (rc == 1) {
					r->reproduced_ooms++;
					oom(p, e, 1, err);
				} else {
					r->missed_ooms++; /* the program got nothing: give it back
					                   */
					p->api->free(ptr);
					drain(p);
				}
				break;
			}
			if (rc == 1) {
				oom(p, e, 0, err);
				r->ended_by_oom = 1;
				return MS_OK;
			}
			if (ms_u64map_put(&p->live, e->addr, ptr))
				return MS_ERR_NOMEM;
			break;
		}
		case MS_ACT_FREE_REQUESTED:
			/* a completion that does not follow at once: PyTorch kept the block */
			if ((v = ms_u64map_get(&p->live, e->addr)) &&
			    !completes_next(t, i, o->device)) {
				ptr = *v;
				ms_u64map_del(&p->live, e->addr, &ptr);
				if (ms_u64map_put(&p->deferred, e->addr, ptr))
					return MS_ERR_NOMEM;
				p->api->free_request(ptr);
				drain(p);
			}
			break;
		case MS_ACT_FREE_COMPLETED:
			if ((v = ms_u64map_get(&p->deferred, e->addr))) {
				ptr = *v;
				ms_u64map_del(&p->deferred, e->addr, &ptr);
				p->api->free_complete(ptr);
				drain(p);
			} else if ((v = ms_u64map_get(&p->live, e->addr))) {
				p->api->free(*v);
				ms_u64map_del(&p->live, e->addr, &ptr);
				drain(p);
			} else {
				r->unmatched_frees++;
			}
			break;
		case MS_ACT_SEGMENT_FREE:
		case MS_ACT_SEGMENT_UNMAP:
			/* PyTorch gives a private pool's segments back once nothing uses it */
			if (e->pool != MS_POOL_DEFAULT && e->pool != MS_POOL_UNKNOWN) {
				uint64_t id[2];
				ms_pool_id(e->pool, id);
				p->api->release_pool(id[0], id[1]);
			}
			/* fall through */
		case MS_ACT_SEGMENT_ALLOC:
		case MS_ACT_SEGMENT_MAP:
			/* recorded just before the allocation that made it: in time for that one */
			if (e->action == MS_ACT_SEGMENT_ALLOC && p->recorded_expandable &&
			    e->pool != MS_POOL_DEFAULT && e->pool != MS_POOL_UNKNOWN &&
			    !ms_u64map_get(&p->custom, e->pool)) {
				uint64_t id[2];
				ms_pool_id(e->pool, id);
				if (ms_u64map_put(&p->custom, e->pool, 1))
					return MS_ERR_NOMEM;
				if (p->api->custom_allocator(id[0], id[1]))
					ms__diag_warn(
					        d,
					        "pool (%llu, %llu) had its own allocator, which "
					        "PyTorch %s's cannot be given here: replayed "
					        "without it",
					        (unsigned long long)id[0],
					        (unsigned long long)id[1], p->api->torch_version());
			}
			ms_seg_events_push(&r->recorded, &r->n_recorded, &p->cap_recorded, i,
			                   e->action, e->addr, e->size, &p->err);
			break;
		default:
			break;
		}
	}
	/* and those after the last event (the model places them at t->n_events) */
	while (!p->err && next_ec < n_ec && ec_at[next_ec++] >= t->n_events) {
		p->index = t->n_events;
		empty_cache(p, ec_pool, next_ec - 1);
		drain(p);
		r->empty_cache_calls++;
	}
	return p->err;
}

/* PyTorch's snapshot of the segments now, into r->end_segs. */
static ms_status end_state(struct tp *p)
{
	struct mst_segment *segs = NULL;
	size_t n = p->api->segments(NULL, 0);

	if (n) {
		segs = ms_calloc(n, sizeof(*segs));
		p->r->end_segs = ms_calloc(n, sizeof(*p->r->end_segs));
		if (!segs || !p->r->end_segs) {
			ms_free(segs);
			return MS_ERR_NOMEM;
		}
		size_t m = p->api->segments(segs, n);
		if (m < n)
			n = m;
	}
	for (size_t i = 0; i < n; i++) {
		struct ms_end_segment *e = &p->r->end_segs[i];
		e->total_size = segs[i].total_size;
		e->allocated_size = segs[i].allocated_size;
		e->active_size = segs[i].active_size;
		e->n_blocks = segs[i].n_blocks;
		e->n_allocated = segs[i].n_allocated_blocks;
		e->small = !segs[i].is_large;
		e->expandable = segs[i].is_expandable;
	}
	p->r->n_end_segs = n;
	ms_free(segs);
	return MS_OK;
}

ms_status ms_replay_torch(const char *path, const struct ms_trace *trace, const char *plugin,
                          const struct ms_replay_opts *o, const struct ms_replay_result *model,
                          struct ms_replay_result *r, struct ms_diag *d)
{
	struct tp p;
	const struct ms_trace *t = trace;
	struct ms_trace *owned = NULL;
	void *h;
	mst_api_fn get;
	char err[1024] = "";
	uint64_t total = 0, free_bytes = 0;
	ms_status s;

	memset(r, 0, sizeof(*r));
	memset(&p, 0, sizeof(p));
	snprintf(r->backend, sizeof(r->backend), "torch");
	r->device = o->device;
	h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return ms__diag_set(d, MS_ERR_BACKEND, -1, -1, "--backend torch: %s", dlerror());
	get = (mst_api_fn)(uintptr_t)dlsym(h, MST_API_SYMBOL);
	p.api = get ? get() : NULL;
	if (!p.api || p.api->abi != MST_ABI)
		return ms__diag_set(d, MS_ERR_BACKEND, -1, -1,
		                    "%s: not a memsnap torch plugin (ABI %u)", plugin, MST_ABI);
	if (!t && (s = ms_trace_load(path, NULL, &owned, NULL, d)))
		return s;
	if (!t)
		t = owned;
	snprintf(r->alloc_conf, sizeof(r->alloc_conf), "%s", model->alloc_conf);
	r->limit = model->limit;
	{
		struct ms_alloc_conf rec;
		ms_alloc_conf_from_settings(&rec, &t->meta.settings);
		p.recorded_expandable = rec.expandable_segments;
	}
	if (p.api->open((int)o->device, model->alloc_conf, model->limit, err, sizeof(err))) {
		ms_trace_free(owned);
		return ms__diag_set(d, MS_ERR_BACKEND, -1, -1, "--backend torch: %s", err);
	}
	p.api->mem_info(&total, &free_bytes);
	r->device_memory = total;
	r->device_memory_source = MS_DEVMEM_REAL;
	if (model->limit > free_bytes) {
		p.api->close();
		ms_trace_free(owned);
		return ms__diag_set(
		        d, MS_ERR_INVALID_ARG, -1, -1,
		        "--backend torch: the limit (%llu bytes) is more than the device "
		        "has free (%llu bytes)",
		        (unsigned long long)model->limit, (unsigned long long)free_bytes);
	}
	p.r = r;
	/* PyTorch's segments where the recording had them, relative to each other */
	{
		uint64_t *pairs = ms_calloc(2 * (t->n_events + 1), sizeof(uint64_t));
		size_t n = 0;
		if (!pairs) {
			p.api->close();
			ms_trace_free(owned);
			return MS_ERR_NOMEM;
		}
		for (size_t i = 0; i < t->n_events; i++) {
			const struct ms_event *e = &t->events[i];
			if (e->action == MS_ACT_SEGMENT_ALLOC && e->device == o->device &&
			    e->source == MS_SRC_TORCH) {
				pairs[2 * n] = e->addr;
				pairs[2 * n++ + 1] = e->size;
			}
		}
		if (n)
			p.api->place(pairs, n);
		ms_free(pairs);
	}
	s = run(&p, t, o, model->empty_cache_at, model->empty_cache_pool,
	        model->empty_cache_refused_at, model->n_empty_cache_at, d);
	if (!r->has_oom)
		fill_stats(&p);
	else {
		/* the peaks of the whole replay, the state at the OOM kept in first_oom */
		struct ms_model_stats at = r->stats;
		fill_stats(&p);
		r->first_oom.stats = at;
	}
	if (!s)
		s = end_state(&p);
	p.api->deviations(&r->torch_misplaced_segments, &r->torch_forced_frees);
	p.api->close();
	ms_u64map_release(&p.live);
	ms_u64map_release(&p.deferred);
	ms_u64map_release(&p.custom);
	ms_pool_marks_release(&p.marks);
	ms_trace_free(owned);
	return s;
}
