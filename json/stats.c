/* A stats result as stats --json writes it for one file and device (stats.h). */
#include "json/stats.h"

#include <cjson/cJSON.h>
#include <stdio.h>

#include "common/alloc.h"
#include "common/event.h"
#include "common/json.h"
#include "json/site.h"
#include "json/window.h"
#include "replay/site.h"
#include "replay/site_rows.h"

static cJSON *alloc_json(const struct ms_stats_view *v, const struct ms_stats_alloc *a)
{
	cJSON *o = cJSON_CreateObject();
	char buf[512], hex[24];

	snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)a->addr);
	ms_json_u64(o, "index", (uint64_t)(a->index));
	ms_json_u64(o, "size", (uint64_t)(a->size));
	cJSON_AddStringToObject(o, "addr", hex);
	ms_json_u64(o, "stream", (uint64_t)(a->stream));
	cJSON_AddNumberToObject(o, "device", a->device);
	ms_json_i64(o, "time_ns", a->t_ns);
	if (a->stack) {
		ms_stack_label_depth(v->syms, a->stack, v->site_depth, buf, sizeof(buf));
		cJSON_AddStringToObject(o, "site", buf);
		ms_site_json_frames(o, v->syms, a->stack, v->frames);
	} else {
		cJSON_AddNullToObject(o, "site");
	}
	return o;
}

/* "outside_pytorch_is" and "outside_pytorch": never a 0 for what was not measured. */
static void outside_json(cJSON *o, const struct ms_stats_view *v)
{
	static const char *const is[] = {"not_measured", "raw_calls_only", "measured"};
	const struct ms_trace_stats *r = v->r;
	const struct ms_stats_outside *m = ms_stats_view_measured(v);
	cJSON *ext, *x;

	cJSON_AddStringToObject(o, "outside_pytorch_is", is[ms_stats_view_outside_is(v)]);
	ext = cJSON_AddObjectToObject(o, "outside_pytorch");
	ms_json_u64(ext, "raw_cuda_events", r->raw_events);
	ms_json_u64(ext, "pytorch_own_calls", r->raw_claimed);
	ms_json_u64(ext, "frees", r->raw_frees);
	/* the recorder's cudaMemGetInfo marks: total - free - PyTorch's reserved, at each */
	if (m) {
		x = cJSON_AddObjectToObject(ext, "measured");
		ms_json_u64(x, "marks", m->marks);
		ms_json_u64(x, "first_bytes", m->first_bytes);
		ms_json_u64(x, "first_index", m->first_index);
		ms_json_u64(x, "highest_bytes", m->highest_bytes);
		ms_json_u64(x, "highest_index", m->highest_index);
		ms_json_u64(x, "last_bytes", m->last_bytes);
		ms_json_u64(x, "last_index", m->last_index);
		cJSON_AddBoolToObject(x, "is_upper_bound", ms_stats_view_measured_at_most(v));
	} else {
		cJSON_AddNullToObject(ext, "measured");
	}
	/* the raw CUDA calls outside PyTorch's segments: what the interposer saw, no more; null
	   where they never held any */
	if (ms_stats_raw_outside(r)) {
		x = cJSON_AddObjectToObject(ext, "raw_calls");
		ms_json_u64(x, "peak_bytes", r->external_peak);
		ms_json_u64(x, "peak_index", r->external_peak_index);
		ms_json_u64(x, "end_bytes", r->external_end);
		cJSON_AddBoolToObject(x, "is_lower_bound", 1);
	} else {
		cJSON_AddNullToObject(ext, "raw_calls");
	}
}

/* The windows asked (--from/--to/--windows): the trace's requested bytes, reserved where told */
static void windows_json(cJSON *o, const struct ms_trace_stats *r)
{
	int res = r->windows_reserved_known;
	cJSON *a;

	if (!r->windows_asked || !(a = cJSON_AddArrayToObject(o, "windows")))
		return;
	for (size_t i = 0; i < r->n_windows; i++) {
		const struct ms_window_figures *w = &r->windows[i];
		cJSON *x = cJSON_CreateObject();
		if (!x)
			return;
		ms_window_json_head(x, w);
		ms_window_json_span(x, w);
		ms_json_u64(x, "requested_bytes_at_start", w->requested_at_start);
		ms_json_u64(x, "peak_requested_bytes", w->peak_requested);
		ms_json_u64(x, "peak_requested_event", w->peak_allocated_event);
		ms_json_u64(x, "requested_rise_bytes", w->peak_requested - w->requested_at_start);
		ms_json_u64(x, "requested_bytes_at_end", w->requested_at_end);
		ms_json_u64_known(x, "reserved_bytes_at_end", res, w->reserved_at_end);
		ms_json_u64_known(x, "reserved_bytes_at_start", res, w->reserved_at_start);
		ms_json_u64_known(x, "peak_reserved_bytes", res, w->peak_reserved);
		ms_json_u64_known(x, "peak_reserved_event", res, w->peak_reserved_event);
		ms_json_u64_known(x, "reserved_rise_bytes", res,
		                  w->peak_reserved - w->reserved_at_start);
		ms_json_u64(x, "recorded_ooms", w->recorded_ooms);
		cJSON_AddItemToArray(a, x);
	}
}

cJSON *ms_stats_json(const struct ms_stats_view *v)
{
	const struct ms_trace_stats *r = v->r;
	cJSON *o = cJSON_CreateObject(), *a, *x;

	if (!o)
		return NULL;

	ms_json_schema(o);
	cJSON_AddStringToObject(o, "trace", v->path);
	if (v->device >= 0)
		cJSON_AddNumberToObject(o, "device", (double)v->device);
	else
		cJSON_AddNullToObject(o, "device");
	ms_json_u64(o, "events_total", ms_stats_view_events(v));
	ms_json_u64(o, "allocations", (uint64_t)(r->n_allocs));
	if (!r->n_allocs) { /* no trace, or no allocation in it: no peak to speak of */
		cJSON_AddNullToObject(o, "peak_requested_bytes");
		cJSON_AddNullToObject(o, "peak_requested_index");
		cJSON_AddNullToObject(o, "peak_requested_time_ns");
	} else {
		ms_json_u64(o, "peak_requested_bytes", ms_stats_peak(r));
		ms_json_u64(o, "peak_requested_index", ms_stats_peak_index(r));
		ms_json_i64(o, "peak_requested_time_ns", ms_stats_peak_t_ns(r));
	}
	if (ms_stats_peak_annotation(r))
		cJSON_AddStringToObject(o, "peak_annotation",
		                        ms_symtab_get_str(v->syms, ms_stats_peak_annotation(r))->s);
	else
		cJSON_AddNullToObject(o, "peak_annotation");
	/* what is live at the end, the blocks from before the trace included (as the text and
	   PyTorch's end state count it) */
	ms_json_u64(o, "end_requested_bytes",
	            (uint64_t)(r->end_requested + r->pre_trace_requested));
	ms_json_u64(o, "recorded_ooms", r->recorded_ooms);
	if (r->recorded_ooms)
		ms_json_u64(o, "first_oom_index", r->first_oom_index);
	else
		cJSON_AddNullToObject(o, "first_oom_index");
	/* requested bytes by private pool, where the events name their pool */
	a = cJSON_AddArrayToObject(o, "private_pools_requested");
	for (size_t i = 0; i < r->n_pools_requested; i++) {
		const struct ms_stats_pool_requested *q = &r->pools_requested[i];
		cJSON *e = cJSON_CreateObject();
		uint64_t id[2];
		ms_pool_id(q->code, id);
		ms_json_pool_id(e, id);
		ms_json_u64(e, "peak_requested_bytes", q->peak);
		ms_json_u64(e, "peak_requested_index", q->peak_index);
		ms_json_u64(e, "end_requested_bytes", q->current);
		cJSON_AddItemToArray(a, e);
	}
	outside_json(o, v);
	x = cJSON_AddObjectToObject(o, "live_at_end");
	ms_json_u64(x, "count", (uint64_t)(r->live_count + r->pre_trace_blocks));
	ms_json_u64(x, "bytes", (uint64_t)(r->live_bytes + r->pre_trace_requested));
	ms_json_u64(x, "made_in_trace_count", (uint64_t)(r->live_count));
	ms_json_u64(x, "made_in_trace_bytes", (uint64_t)(r->live_bytes));
	a = cJSON_AddArrayToObject(x, "largest");
	for (size_t i = 0; i < r->n_live_top; i++)
		cJSON_AddItemToArray(a, alloc_json(v, &r->live_top[i]));
	ms_json_u64(o, "pending_frees_at_end", (uint64_t)(r->pending_count));
	ms_json_u64(o, "unmatched_frees", (uint64_t)(r->unmatched_frees));
	cJSON_AddBoolToObject(o, "starts_mid_run", ms_stats_mid_run(r));
	cJSON_AddBoolToObject(o, "cut_short", v->cut_short);
	cJSON_AddBoolToObject(o, "peak_is_lower_bound", ms_stats_mid_run(r) || v->cut_short);
	x = cJSON_AddObjectToObject(o, "before_the_trace");
	ms_json_u64(x, "live_blocks", r->pre_trace_blocks);
	ms_json_u64(x, "requested_bytes", r->pre_trace_requested);
	ms_json_u64(x, "freed_in_trace_requested_bytes", r->pre_freed_requested);
	/* of the blocks freed in it (unmatched_frees), those whose free was requested before it */
	ms_json_u64(x, "freed_in_trace_pending_at_start", r->pre_pending_frees);
	a = cJSON_AddArrayToObject(o, "largest_allocations");
	for (size_t i = 0; i < r->n_largest; i++)
		cJSON_AddItemToArray(a, alloc_json(v, &r->largest[i]));
	/* the peak by compile context: null where the trace records none */
	if (r->n_contexts) {
		a = cJSON_AddArrayToObject(o, "compile_contexts_at_peak");
		for (size_t i = 0; i < r->n_contexts; i++) {
			const struct ms_stats_context *c = &r->contexts[i];
			cJSON *x2 = cJSON_CreateObject();
			if (c->before)
				cJSON_AddNullToObject(x2, "context");
			else
				cJSON_AddStringToObject(
				        x2, "context",
				        c->name ? ms_symtab_get_str(v->syms, c->name)->s : "N/A");
			ms_json_u64(x2, "bytes", c->bytes);
			ms_json_u64(x2, "allocations", c->count);
			cJSON_AddItemToArray(a, x2);
		}
	} else {
		cJSON_AddNullToObject(o, "compile_contexts_at_peak");
	}
	/* the user's categories at the peak: null where none were given */
	if (ms_user_cats_count(v->user_cats)) {
		uint64_t bytes[MS_USER_CATS_MAX + 1], count[MS_USER_CATS_MAX + 1];
		size_t nu = ms_user_cats_count(v->user_cats);
		ms_user_cats_sum_sites(v->user_cats, v->syms, r->sites, r->n_sites, bytes, count);
		a = cJSON_AddArrayToObject(o, "user_categories_at_peak");
		for (size_t i = 0; i <= nu; i++) {
			cJSON *c = cJSON_CreateObject();
			if (i < nu) {
				cJSON_AddStringToObject(c, "name",
				                        ms_user_cats_name(v->user_cats, i));
				cJSON_AddStringToObject(c, "pattern",
				                        ms_user_cats_pattern(v->user_cats, i));
			} else { /* what none of them matches */
				cJSON_AddNullToObject(c, "name");
				cJSON_AddNullToObject(c, "pattern");
			}
			ms_json_u64(c, "bytes", bytes[i]);
			ms_json_u64(c, "allocations", count[i]);
			cJSON_AddItemToArray(a, c);
		}
	} else {
		cJSON_AddNullToObject(o, "user_categories_at_peak");
	}
	/* by site, as the text groups them (stack_id: the group's first stack) */
	a = cJSON_AddArrayToObject(o, "top_sites_at_peak");
	{
		size_t nrows = 0;
		struct ms_site_row *rows = NULL;
		if (ms_site_rows_group(v->syms, r->sites, r->n_sites, v->frames, v->site_depth,
		                       &rows, &nrows)) {
			cJSON_Delete(o);
			return NULL;
		}
		for (size_t i = 0; i < nrows && i < v->top; i++) {
			cJSON *s = cJSON_CreateObject();
			cJSON_AddStringToObject(s, "site", rows[i].label);
			cJSON_AddNumberToObject(s, "stack_id", rows[i].stack);
			ms_site_json_frames(s, v->syms, rows[i].stack, v->frames);
			ms_json_u64(s, "bytes", rows[i].bytes);
			ms_json_u64(s, "count", rows[i].count);
			cJSON_AddItemToArray(a, s);
		}
		ms_free(rows);
	}
	cJSON_AddBoolToObject(o, "no_trace", !r->n_allocs && r->has_segments);
	if (r->has_segments) {
		struct ms_site_row *rows;
		size_t nrows;
		x = cJSON_AddObjectToObject(o, "segments");
		cJSON_AddNumberToObject(x, "fragmentation", ms_stats_fragmentation(r));
		if (ms_site_rows_group(v->syms, r->block_sites, r->n_block_sites, v->frames,
		                       v->site_depth, &rows, &nrows)) {
			cJSON_Delete(o);
			return NULL;
		}
		a = cJSON_AddArrayToObject(x, "top_sites_of_allocated_blocks");
		for (size_t i = 0; i < nrows && i < v->top; i++) {
			cJSON *e = cJSON_CreateObject();
			cJSON_AddStringToObject(e, "site", rows[i].label);
			ms_json_u64(e, "bytes", rows[i].bytes);
			ms_json_u64(e, "blocks", rows[i].count);
			cJSON_AddItemToArray(a, e);
		}
		ms_free(rows);
		ms_json_u64(x, "count", (uint64_t)(r->n_segments));
		ms_json_u64(x, "expandable", (uint64_t)(r->n_expandable));
		ms_json_u64(x, "reserved_bytes", (uint64_t)(r->reserved));
		ms_json_u64(x, "allocated_bytes", (uint64_t)(r->allocated));
		ms_json_u64(x, "active_bytes", (uint64_t)(r->active));
		ms_json_u64(x, "requested_bytes", (uint64_t)(r->requested));
		ms_json_u64(x, "internal_free_bytes", (uint64_t)(r->internal));
		ms_json_u64(x, "external_free_bytes", (uint64_t)(r->external_free));
		ms_json_u64(x, "pending_free_bytes", (uint64_t)(r->pending_free_bytes));
		ms_json_u64(x, "largest_free_block_bytes", (uint64_t)(r->largest_free));
		a = cJSON_AddArrayToObject(x, "pools");
		for (size_t i = 0; i < r->n_pools; i++) {
			cJSON *e = cJSON_CreateObject();
			ms_json_pool_id(e, r->pools[i].id);
			ms_json_u64(e, "segments", r->pools[i].segments);
			ms_json_u64(e, "reserved_bytes", r->pools[i].reserved);
			ms_json_u64(e, "allocated_bytes", r->pools[i].allocated);
			cJSON_AddItemToArray(a, e);
		}
	} else {
		cJSON_AddNullToObject(o, "segments");
	}
	windows_json(o, r);
	return o;
}
