/* A replay's result as replay --json writes it (replay.h): one serializer, whichever command
 * or page shows it. */
#include "json/replay.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "json/window.h"
#include "json/site.h"
#include "json/verdict.h"
#include "replay/device_cuda.h"
#include "replay/model.h"

/* pools: every pool's id and share; the pools' counts of allocations. */
static void json_pools(cJSON *o, const struct ms_replay_result *r)
{
	cJSON *a = cJSON_AddArrayToObject(o, "pools");

	for (size_t i = 0; i < r->n_pools; i++) {
		const struct ms_model_pool *p = &r->pools[i];
		cJSON *e = cJSON_CreateObject();
		uint64_t v[2];
		ms_pool_id(p->code, v);
		ms_json_pool_id(e, v);
		ms_json_u64(e, "peak_reserved_bytes", (uint64_t)p->reserved_bytes.peak);
		ms_json_u64(e, "peak_allocated_bytes", (uint64_t)p->allocated_bytes.peak);
		ms_json_u64(e, "reserved_bytes_at_end", (uint64_t)p->reserved_bytes.current);
		ms_json_u64(e, "allocated_bytes_at_end", (uint64_t)p->allocated_bytes.current);
		ms_json_u64(e, "segments_at_end", (uint64_t)p->segment.current);
		cJSON_AddItemToArray(a, e);
	}
	ms_json_u64(o, "allocations_in_private_pools", r->allocs_private);
	ms_json_u64(o, "allocations_pool_unknown", r->allocs_pool_unknown);
	/* the replay's segment events against the trace's: where they first differ (verify) */
	size_t diverges = ms_replay_first_divergence(r);
	if (diverges == SIZE_MAX)
		cJSON_AddNullToObject(o, "first_divergence");
	else
		ms_json_u64(o, "first_divergence", diverges);
}

static void json_neighbour(cJSON *o, const char *key, const struct ms_model_neighbour *n)
{
	cJSON *x;

	if (!n->present) {
		cJSON_AddNullToObject(o, key);
		return;
	}
	x = cJSON_AddObjectToObject(o, key);
	cJSON_AddStringToObject(x, "state", ms_model_neighbour_state(n));
	ms_json_u64(x, "size", n->size);
	if (n->state != MS_BLOCK_INACTIVE && n->index == MS_REPLAY_BEFORE_TRACE)
		cJSON_AddNullToObject(x, "index"); /* allocated before the trace */
	else if (n->state != MS_BLOCK_INACTIVE)
		ms_json_u64(x, "index", n->index);
}

/* memory_stats() as PyTorch flattens it: "<stat>.<pool>.<metric>" and the plain counters. */
static void json_memory_stats(cJSON *o, const struct ms_model_stats *st)
{
	static const char *const pools[3] = {"all", "small_pool", "large_pool"};
	const struct {
		const char *name;
		const struct ms_stat *s;
	} arrays[] = {
	        {"allocation", st->allocation},
	        {"segment", st->segment},
	        {"active", st->active},
	        {"inactive_split", st->inactive_split},
	        {"allocated_bytes", st->allocated_bytes},
	        {"reserved_bytes", st->reserved_bytes},
	        {"active_bytes", st->active_bytes},
	        {"inactive_split_bytes", st->inactive_split_bytes},
	        {"requested_bytes", st->requested_bytes},
	};
	const struct {
		const char *name;
		const struct ms_stat *s;
	} singles[] = {
	        {"oversize_allocations", &st->oversize_allocations},
	        {"oversize_segments", &st->oversize_segments},
	};
	cJSON *m = cJSON_AddObjectToObject(o, "memory_stats");
	char key[96];

	for (size_t a = 0; a < sizeof(arrays) / sizeof(arrays[0]); a++)
		for (int p = 0; p < 3; p++) {
			const struct ms_stat *x = &arrays[a].s[p];
			static const char *const metrics[4] = {"current", "peak", "allocated",
			                                       "freed"};
			int64_t v[4] = {x->current, x->peak, x->allocated, x->freed};
			for (int k = 0; k < 4; k++) {
				snprintf(key, sizeof(key), "%s.%s.%s", arrays[a].name, pools[p],
				         metrics[k]);
				ms_json_i64(m, key, v[k]);
			}
		}
	for (size_t a = 0; a < 2; a++) {
		static const char *const metrics[4] = {"current", "peak", "allocated", "freed"};
		int64_t v[4] = {singles[a].s->current, singles[a].s->peak, singles[a].s->allocated,
		                singles[a].s->freed};
		for (int k = 0; k < 4; k++) {
			snprintf(key, sizeof(key), "%s.%s", singles[a].name, metrics[k]);
			ms_json_i64(m, key, v[k]);
		}
	}
	ms_json_u64(m, "num_alloc_retries", st->num_alloc_retries);
	ms_json_u64(m, "num_ooms", st->num_ooms);
	ms_json_u64(m, "num_sync_all_streams", st->num_sync_all_streams);
	ms_json_u64(m, "num_device_alloc", st->num_device_alloc);
	ms_json_u64(m, "num_device_free", st->num_device_free);
}

/* --backend cuda: the device, its context and the driver calls' latencies. */
static void json_cuda(cJSON *o, struct ms_cuda_dev *dev)
{
	struct ms_cuda_timing t[MS_CUDA_N_CALLS];
	size_t n = ms_cuda_timings(dev, t, MS_CUDA_N_CALLS);
	uint64_t fr, total;
	cJSON *x = cJSON_AddObjectToObject(o, "cuda"), *a;

	ms_cuda_mem_info(dev, &fr, &total);
	cJSON_AddStringToObject(x, "device_name", ms_cuda_name(dev));
	ms_json_u64(x, "total_bytes", total);
	ms_json_u64(x, "free_bytes_at_end", fr);
	ms_json_u64(x, "context_bytes", ms_cuda_context_bytes(dev));
	if (ms_cuda_oom_info(dev, &fr, &total)) {
		cJSON *y = cJSON_AddObjectToObject(x, "device_oom");
		ms_json_u64(y, "free_bytes", fr);
		ms_json_u64(y, "total_bytes", total);
	} else {
		cJSON_AddNullToObject(x, "device_oom");
	}
	a = cJSON_AddArrayToObject(x, "driver_calls");
	for (size_t i = 0; i < n; i++) {
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "call", t[i].call);
		ms_json_u64(e, "count", t[i].n);
		cJSON_AddNumberToObject(e, "p50_us", t[i].p50_us);
		cJSON_AddNumberToObject(e, "p99_us", t[i].p99_us);
		cJSON_AddNumberToObject(e, "max_us", t[i].max_us);
		cJSON_AddNumberToObject(e, "total_ms", t[i].total_ms);
		cJSON_AddItemToArray(a, e);
	}
}

/* "outside_pytorch_measured": null where the recorder measured nothing (cudaMemGetInfo marks) */
static void json_outside_measured(cJSON *o, const struct ms_replay_result *r)
{
	const struct ms_outside_point *hi = ms_replay_outside_highest(r), *a, *z;
	cJSON *x;

	if (!hi) {
		cJSON_AddNullToObject(o, "outside_pytorch_measured");
		return;
	}
	a = &r->outside_points[0];
	z = &r->outside_points[r->n_outside_points - 1];
	x = cJSON_AddObjectToObject(o, "outside_pytorch_measured");
	ms_json_u64(x, "marks", r->n_outside_points);
	ms_json_u64(x, "first_bytes", a->bytes);
	ms_json_u64(x, "first_index", a->index);
	ms_json_u64(x, "highest_bytes", hi->bytes);
	ms_json_u64(x, "highest_index", hi->index);
	ms_json_u64(x, "last_bytes", z->bytes);
	ms_json_u64(x, "last_index", z->index);
}

void ms_json_limit_inferred(cJSON *o, const struct ms_limit_range *lim)
{
	cJSON *x;

	if (!lim->inferred) {
		cJSON_AddNullToObject(o, "limit_inferred");
		return;
	}
	x = cJSON_AddObjectToObject(o, "limit_inferred");
	ms_json_u64(x, "low_bytes", lim->lo);
	ms_json_u64(x, "high_bytes", lim->hi);
}

void ms_windows_json(cJSON *o, const struct ms_replay_result *r)
{
	cJSON *a;

	if (!r->windows_asked || !(a = cJSON_AddArrayToObject(o, "windows")))
		return;
	for (size_t i = 0; i < r->n_windows; i++) {
		const struct ms_window_figures *w = &r->windows[i];
		cJSON *x = cJSON_CreateObject();
		if (!x)
			return;
		ms_window_json_head(x, w);
		cJSON_AddBoolToObject(x, "replay_ended_by_oom_inside", w->replay_stopped_inside);
		ms_window_json_span(x, w);
		ms_json_u64(x, "reserved_bytes_at_start", w->reserved_at_start);
		ms_json_u64(x, "allocated_bytes_at_start", w->allocated_at_start);
		ms_json_u64(x, "peak_reserved_bytes", w->peak_reserved);
		ms_json_u64(x, "peak_reserved_event", w->peak_reserved_event);
		ms_json_u64(x, "allocated_bytes_at_peak_reserved", w->allocated_at_peak_reserved);
		ms_json_u64(x, "fullest_at_peak_event", w->fullest_event);
		ms_json_u64(x, "peak_allocated_bytes", w->peak_allocated);
		ms_json_u64(x, "peak_allocated_event", w->peak_allocated_event);
		ms_json_u64(x, "requested_bytes_at_start", w->requested_at_start);
		ms_json_u64(x, "peak_requested_bytes", w->peak_requested);
		ms_json_u64(x, "reserved_bytes_at_end", w->reserved_at_end);
		ms_json_u64(x, "allocated_bytes_at_end", w->allocated_at_end);
		ms_json_u64(x, "requested_bytes_at_end", w->requested_at_end);
		ms_json_u64(x, "reserved_rise_bytes", w->peak_reserved - w->reserved_at_start);
		ms_json_u64(x, "allocated_rise_bytes", w->peak_allocated - w->allocated_at_start);
		ms_json_u64(x, "recorded_ooms", w->recorded_ooms);
		cJSON_AddItemToArray(a, x);
	}
}

cJSON *ms_replay_result_json(const char *path, uint32_t device, const struct ms_replay_result *r,
                             const struct ms_limit_range *lim, struct ms_cuda_dev *dev,
                             uint32_t frames, const struct ms_oom_verdict *ov)
{
	cJSON *o = cJSON_CreateObject(), *a;

	if (!o)
		return NULL;
	ms_json_schema(o);
	cJSON_AddStringToObject(o, "trace", path);
	cJSON_AddNumberToObject(o, "device", device);
	cJSON_AddStringToObject(o, "backend", r->backend);
	if (dev)
		json_cuda(o, dev);
	cJSON_AddStringToObject(o, "alloc_conf", r->alloc_conf);
	cJSON_AddBoolToObject(o, "settings_recorded", r->settings_recorded);
	cJSON_AddBoolToObject(o, "expandable_segments_seen", r->expandable_seen);
	ms_json_u64(o, "limit_bytes", r->limit);
	ms_json_limit_inferred(o, lim);
	if (lim->inferred) {
		cJSON *x = cJSON_GetObjectItem(o, "limit_inferred");
		/* what the trace proves was held at once under it: the range starts there */
		ms_json_u64(x, "held_bytes", lim->held);
		cJSON_AddBoolToObject(x, "raised_to_held", lim->raised);
	}
	if (r->device_memory == UINT64_MAX)
		cJSON_AddNullToObject(o, "device_memory_bytes");
	else
		ms_json_u64(o, "device_memory_bytes", r->device_memory);
	cJSON_AddStringToObject(o, "device_memory_source",
	                        ms_devmem_source_name(r->device_memory_source));
	ms_json_u64_known(o, "device_memory_recorded_bytes", r->device_memory_recorded != 0,
	                  r->device_memory_recorded);
	cJSON_AddBoolToObject(o, "device_memory_is_lower_bound",
	                      r->device_memory_source == MS_DEVMEM_FROM_OOM);
	if (r->oom_seen) {
		cJSON *x = cJSON_AddObjectToObject(o, "recorded_oom_device");
		ms_json_u64(x, "device_free_bytes", r->oom_device_free);
		ms_json_u64(x, "reserved_bytes", r->oom_reserved);
		ms_json_u64_known(x, "outside_pytorch_bytes", r->outside_at_oom != 0,
		                  r->outside_at_oom);
		/* the part of it no raw CUDA event shows, which the replay held constant */
		ms_json_u64(x, "outside_assumed_constant_bytes", r->outside_unseen);
	} else {
		cJSON_AddNullToObject(o, "recorded_oom_device");
	}
	ms_json_u64(o, "events_total", r->events_total);
	/* the device's own events, as info counts them (other devices' snapshot marks not) */
	ms_json_u64(o, "events_device",
	            r->events_total - r->events_other_devices - r->events_other_marks);
	ms_json_u64(o, "events_other_devices",
	            r->events_other_devices ? r->events_other_devices + r->events_other_marks : 0);
	ms_json_u64(o, "events_replayed", r->events_replayed);
	ms_json_u64(o, "events_external", r->events_external);
	/* the raw CUDA calls' own: a figure where the trace has them, null where it has none */
	ms_json_u64_known(o, "external_peak_bytes", r->events_external != 0, r->external_peak);
	json_outside_measured(o, r);
	ms_json_u64(o, "peak_allocated_bytes", (uint64_t)r->stats.allocated_bytes[0].peak);
	ms_json_u64(o, "peak_reserved_bytes", (uint64_t)r->stats.reserved_bytes[0].peak);
	ms_json_u64(o, "peak_requested_bytes", (uint64_t)r->stats.requested_bytes[0].peak);
	ms_json_u64(o, "peak_active_bytes", (uint64_t)r->stats.active_bytes[0].peak);
	ms_json_u64(o, "peak_segments", (uint64_t)r->stats.segment[0].peak);
	ms_json_u64(o, "num_alloc_retries", r->stats.num_alloc_retries);
	ms_json_u64(o, "num_ooms", r->stats.num_ooms);
	ms_json_u64(o, "num_device_alloc", r->stats.num_device_alloc);
	ms_json_u64(o, "num_device_free", r->stats.num_device_free);
	ms_json_u64(o, "empty_cache_calls", r->empty_cache_calls);
	ms_json_u64(o, "empty_cache_calls_marked", r->empty_cache_marked);
	ms_json_u64(o, "empty_cache_calls_before_alloc", r->empty_cache_before_alloc);
	ms_json_u64(o, "empty_cache_calls_refused", r->empty_cache_refused);
	ms_json_u64(o, "no_split_pools", r->no_split_pools);
	ms_json_u64(o, "use_on_oom_pools", r->use_on_oom_pools);
	ms_json_u64(o, "use_on_oom_decided", r->use_on_oom_decided);
	ms_json_u64(o, "limit_marks", r->limit_marks);
	ms_json_u64(o, "use_on_oom_fallbacks", r->stats.use_on_oom_fallbacks);
	ms_json_u64(o, "use_on_oom_kept", r->use_on_oom_kept);
	/* the setting asked for differs from the recorded one: a capture's deferred frees are
	   replayed as recorded */
	cJSON_AddBoolToObject(o, "graph_capture_record_stream_reuse_as_recorded",
	                      ms_replay_reuse_as_recorded(r));
	ms_json_u64(o, "recorded_ooms", r->recorded_ooms);
	ms_json_u64(o, "reproduced_ooms", r->reproduced_ooms);
	ms_json_u64(o, "served_recorded_ooms_then_went_on", r->missed_ooms_went_on);
	cJSON_AddBoolToObject(o, "ended_by_oom", r->ended_by_oom);
	if (r->ended_by_oom)
		ms_json_u64(o, "ended_at_event", r->end_oom_index);
	else
		cJSON_AddNullToObject(o, "ended_at_event");
	if (r->rebuilt) {
		cJSON *x = cJSON_AddObjectToObject(o, "mid_run");
		ms_json_u64(x, "initial_reserved_bytes", r->initial_reserved);
		ms_json_u64(x, "initial_segments", r->initial_segments);
		ms_json_u64(x, "initial_live_blocks", r->initial_live_blocks);
		/* true: the blocks live then placed by the model, the end state not rebuilt */
		cJSON_AddBoolToObject(x, "placed", r->placed);
	} else {
		cJSON_AddNullToObject(o, "mid_run");
	}
	/* a trace that starts mid-run, or is cut short: the job's peaks may have been higher */
	cJSON_AddBoolToObject(o, "trace_cut_short", r->cut_short);
	cJSON_AddBoolToObject(o, "peaks_are_lower_bounds", r->rebuilt || r->cut_short);
	ms_json_u64(o, "private_pool_segments_at_end", r->end_private_segments);
	json_pools(o, r);
	json_memory_stats(o, &r->stats);
	a = cJSON_AddArrayToObject(o, "segment_events");
	for (size_t i = 0; i < r->n_produced; i++) {
		cJSON *e = cJSON_CreateObject();
		ms_json_u64(e, "index", r->produced[i].index);
		cJSON_AddStringToObject(e, "action", ms_action_name(r->produced[i].action));
		ms_json_u64(e, "size", r->produced[i].size);
		cJSON_AddItemToArray(a, e);
	}
	if (r->has_oom) {
		char msg[1024];
		cJSON *x = cJSON_AddObjectToObject(o, "oom");
		if (r->backend_message[0])
			snprintf(msg, sizeof(msg), "%s", r->backend_message);
		else
			ms_replay_oom_message(r, msg, sizeof(msg));
		ms_json_u64(x, "index", r->first_oom.index);
		cJSON_AddBoolToObject(x, "recorded", r->first_oom.recorded);
		ms_json_u64(x, "requested_bytes", r->first_oom.o.requested);
		ms_json_u64(x, "alloc_size_bytes", r->first_oom.o.alloc_size);
		ms_json_u64(x, "allocated_bytes", r->first_oom.o.allocated);
		ms_json_u64(x, "reserved_bytes", r->first_oom.o.reserved);
		ms_json_u64(x, "free_in_reserved_bytes", r->first_oom.o.free_in_reserved);
		cJSON_AddBoolToObject(x, "cache_kept_by_open_pool_or_capture",
		                      r->first_oom.o.retry_skipped);
		ms_json_u64(x, "largest_free_block_bytes", r->first_oom.o.largest_free);
		ms_json_u64(x, "inactive_split_bytes", r->first_oom.o.inactive_split);
		cJSON_AddStringToObject(x, "message", msg);
		if (!r->backend_message[0] && ov)
			ms_verdict_json_oom_cause(x, ov);
		{
			cJSON *h = cJSON_AddArrayToObject(x, "largest_free_blocks");
			for (size_t i = 0; i < r->first_oom.n_holes; i++) {
				const struct ms_model_hole *f = &r->first_oom.holes[i];
				cJSON *e = cJSON_CreateObject();
				char hex[24];
				snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)f->addr);
				cJSON_AddStringToObject(e, "addr", hex);
				ms_json_u64(e, "size", f->size);
				json_neighbour(e, "before", &f->before);
				json_neighbour(e, "after", &f->after);
				cJSON_AddItemToArray(h, e);
			}
			h = cJSON_AddArrayToObject(x, "largest_live_allocations");
			for (size_t i = 0; i < r->first_oom.n_holders; i++) {
				const struct ms_replay_holder *w = &r->first_oom.holders[i];
				cJSON *e = cJSON_CreateObject();
				ms_json_u64(e, "size", w->size);
				if (w->index == MS_REPLAY_BEFORE_TRACE)
					cJSON_AddNullToObject(
					        e, "index"); /* allocated before the trace */
				else
					ms_json_u64(e, "index", w->index);
				cJSON_AddStringToObject(e, "site", w->site);
				if (r->holder_syms)
					ms_site_json_frames(e, r->holder_syms, w->stack, frames);
				cJSON_AddItemToArray(h, e);
			}
		}
	} else {
		cJSON_AddNullToObject(o, "oom");
	}
	ms_windows_json(o, r);
	return o;
}
