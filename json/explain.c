/* explain's report as JSON (explain.h); docs/EXPLAIN.md names each field. */
#include "json/explain.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "explain/report.h"
#include "json/verdict.h"
#include "json/window.h"
#include "parse/trace.h"
#include "replay/site.h"

/*
 * "categories" (bytes by name) into parent, and beside it "categories_exceed_allocated": more
 * than frees waiting for their streams explain, so that the categories are not to be trusted.
 * cached UINT64_MAX: not known at that moment.
 */
static void cats(cJSON *parent, const struct ms_explain *x, uint64_t allocated, uint64_t served,
                 uint64_t cached, uint64_t outside, enum ms_outside_how how)
{
	cJSON *o = cJSON_AddObjectToObject(parent, "categories");
	int64_t rd;
	int exceed;

	allocated -= served;
	for (unsigned o2 = 0; o2 < MS_CAT_COUNT; o2++) {
		unsigned k = ms_explain_cat_order[o2];
		if (!ms_explain_cat_told(x, k))
			cJSON_AddNullToObject(o, ms_explain_cat_name(k)); /* not told */
		else
			ms_json_u64(o, ms_explain_cat_name(k), x->cat_bytes[k]);
	}
	rd = ms_explain_rounding(x, allocated);
	exceed = rd < 0 && (uint64_t)-rd > allocated / 100;
	/* beyond what frees waiting for their streams explain, rounding is no figure at all */
	if (exceed)
		cJSON_AddNullToObject(o, "rounding");
	else
		ms_json_i64(o, "rounding", rd);
	cJSON_AddBoolToObject(parent, "categories_exceed_allocated", exceed);
	ms_json_u64(o, "recorded_oom_request", served);
	ms_json_u64_known(o, "cached_free", cached != UINT64_MAX, cached);
	ms_json_u64_known(o, "outside_pytorch", how != MS_OUTSIDE_NOT_MEASURED, outside);
}

/*
 * A site into o: its frame as "file:line" and its function, and the whole site as the text names
 * it (label: at the site depth, the frames from the user's down to it).
 */
static void site(cJSON *o, const struct ms_symtab *y, uint32_t stack, uint32_t frame,
                 uint32_t depth)
{
	char label[1200];

	if (!frame) {
		cJSON_AddNullToObject(o, "site"); /* the allocations have no stack */
		cJSON_AddNullToObject(o, "function");
		cJSON_AddNullToObject(o, "label");
		return;
	}
	ms_stack_label_depth(y, stack, depth, label, sizeof(label));
	cJSON_AddStringToObject(o, "label", label);
	/* a native frame has no file and line: the function names it alone */
	if (ms_symtab_get_str(y, y->frames[frame].file)->s[0]) {
		snprintf(label, sizeof(label), "%s:%u",
		         ms_symtab_get_str(y, y->frames[frame].file)->s, y->frames[frame].line);
		cJSON_AddStringToObject(o, "site", label);
	} else {
		cJSON_AddNullToObject(o, "site");
	}
	cJSON_AddStringToObject(o, "function", ms_symtab_get_str(y, y->frames[frame].name)->s);
}

/* Sites' rows into array a: site, function, bytes, allocations. */
static void sites(cJSON *a, const struct ms_symtab *y, const struct ms_explain_site *s, size_t n,
                  uint32_t depth)
{
	for (size_t k = 0; k < n; k++) {
		cJSON *o = cJSON_CreateObject();
		site(o, y, s[k].stack, s[k].frame, depth);
		/* made in backward: the site is where forward made its tensor (forward_frames) */
		cJSON_AddBoolToObject(o, "made_in_backward", s[k].backward);
		ms_json_u64(o, "bytes", s[k].bytes);
		ms_json_u64(o, "allocations", s[k].blocks);
		cJSON_AddItemToArray(a, o);
	}
}

static void add_step(cJSON *o, const struct ms_explain *x, size_t step)
{
	if (step)
		cJSON_AddNumberToObject(o, "step", (double)(step + x->steps_before_trace));
	else
		cJSON_AddNullToObject(o, "step");
}

static void add_str_or_null(cJSON *o, const char *key, const char *s)
{
	if (s && s[0])
		cJSON_AddStringToObject(o, key, s);
	else
		cJSON_AddNullToObject(o, key);
}

/* Each category's own peak over the whole trace, null where the category is not told. */
static void cat_peaks(cJSON *root, const struct ms_explain *x)
{
	cJSON *o = cJSON_AddObjectToObject(root, "category_peaks");

	for (unsigned o2 = 0; o2 < MS_CAT_COUNT; o2++) {
		unsigned k = ms_explain_cat_order[o2];
		cJSON *p;
		if (!ms_explain_cat_told(x, k)) {
			cJSON_AddNullToObject(o, ms_explain_cat_name(k));
			continue;
		}
		p = cJSON_AddObjectToObject(o, ms_explain_cat_name(k));
		ms_json_u64(p, "bytes", x->cat_peak[k].bytes);
		/* a category that never held a byte has no moment of its peak */
		ms_json_u64_known(p, "event", x->cat_peak[k].bytes != 0, x->cat_peak[k].event);
	}
}

/* The user's categories: at the state and each at its own peak; null where none were given. */
static void user_cats(cJSON *root, const struct ms_explain *x)
{
	cJSON *a;

	if (!x->n_user) {
		cJSON_AddNullToObject(root, "user_categories");
		return;
	}
	a = cJSON_AddArrayToObject(root, "user_categories");
	for (size_t u = 0; u < x->n_user; u++) {
		cJSON *o = cJSON_CreateObject(), *p;
		cJSON_AddStringToObject(o, "name", ms_user_cats_name(x->user_cats, u));
		cJSON_AddStringToObject(o, "pattern", ms_user_cats_pattern(x->user_cats, u));
		ms_json_u64(o, "bytes", x->user_bytes[u]);
		ms_json_u64(o, "allocations", x->user_blocks[u]);
		p = cJSON_AddObjectToObject(o, "peak");
		ms_json_u64(p, "bytes", x->user_peak[u].bytes);
		ms_json_u64_known(p, "event", x->user_peak[u].bytes != 0, x->user_peak[u].event);
		cJSON_AddItemToArray(a, o);
	}
}

/* The state by compile context: null where the trace records none. */
static void contexts(cJSON *root, const struct ms_symtab *y, const struct ms_explain *x)
{
	cJSON *a;

	if (!x->n_contexts) {
		cJSON_AddNullToObject(root, "compile_contexts");
		return;
	}
	a = cJSON_AddArrayToObject(root, "compile_contexts");
	for (size_t i = 0; i < x->n_contexts; i++) {
		const struct ms_explain_context *c = &x->contexts[i];
		cJSON *o = cJSON_CreateObject();
		if (c->before) /* allocated before the trace: not known */
			cJSON_AddNullToObject(o, "context");
		else
			cJSON_AddStringToObject(o, "context",
			                        c->name ? ms_symtab_get_str(y, c->name)->s : "N/A");
		ms_json_u64(o, "bytes", c->bytes);
		ms_json_u64(o, "allocations", c->blocks);
		cJSON_AddItemToArray(a, o);
	}
}

/* A generation job's forwards, weights, KV cache and requests (explain/inference.h); null for
 * any other job. */
static void event_time(cJSON *o, const char *key, const struct ms_trace *t, uint64_t i)
{
	if (i < t->n_events && t->events[i].t_ns && ms_trace_first_time(t))
		cJSON_AddNumberToObject(o, key,
		                        (double)(t->events[i].t_ns - ms_trace_first_time(t)) / 1e9);
	else /* the trace records no times */
		cJSON_AddNullToObject(o, key);
}

static void kv_and_requests(cJSON *o, const struct ms_trace *t,
                            const struct ms_explain_inference *f);

static void inference(cJSON *root, const struct ms_trace *t, const struct ms_explain *x,
                      uint64_t peak)
{
	const struct ms_explain_inference *f = &x->inference;
	cJSON *o, *a;

	if (!x->job || strcmp(x->job, "inference") != 0) {
		cJSON_AddNullToObject(root, "inference");
		return;
	}
	o = cJSON_AddObjectToObject(root, "inference");
	cJSON_AddStringToObject(o, "forwards_from", f->forwards_from);
	ms_json_u64(o, "forwards", f->n_forwards);
	/* replayed CUDA graphs allocate nothing: their forwards are not among those counted */
	cJSON_AddBoolToObject(o, "eager_forwards_only", f->graphs);
	ms_json_u64(o, "first_forward_event", f->first_forward);
	/* the forward and the request the state broken down lies in (0: none) */
	ms_json_u64(o, "peak_forward", ms_explain_forward_of(x, peak));
	ms_json_u64(o, "peak_request", ms_explain_request_of(x, peak));
	a = cJSON_AddObjectToObject(o, "weights");
	/* null: not told (the trace starts after the model was loaded) */
	ms_json_u64_known(a, "bytes", !f->weights_not_told, f->weight_bytes);
	ms_json_u64(a, "allocated_before_trace_kept_bytes", f->before_kept_bytes);
	ms_json_u64_known(a, "allocations", !f->weights_not_told, f->weight_blocks);
	kv_and_requests(o, t, f);
}

/* A training job's evaluation loops; null for any other job. */
static void eval_loops(cJSON *root, const struct ms_trace *t, const struct ms_explain *x)
{
	cJSON *o, *a;

	if (!x->job || strcmp(x->job, "training") != 0) {
		cJSON_AddNullToObject(root, "eval_loops");
		return;
	}
	o = cJSON_AddObjectToObject(root, "eval_loops");
	cJSON_AddBoolToObject(o, "looked_for", x->eval_loops_looked);
	add_str_or_null(o, "why_not", x->eval_loops_looked ? "" : x->eval_loops_why);
	a = cJSON_AddArrayToObject(o, "loops");
	for (size_t i = 0; i < x->n_eval_loops; i++) {
		const struct ms_explain_eval_loop *lp = &x->eval_loops[i];
		cJSON *l = cJSON_CreateObject();
		cJSON_AddNumberToObject(l, "loop", (double)(i + 1));
		ms_json_u64(l, "first_event", lp->first_event);
		ms_json_u64(l, "end_event", lp->end_event);
		event_time(l, "first_time_s", t, lp->first_event);
		event_time(l, "end_time_s", t, lp->end_event);
		ms_json_u64(l, "forwards", lp->forwards.n_forwards);
		cJSON_AddBoolToObject(l, "eager_forwards_only", lp->forwards.graphs);
		ms_json_u64(l, "peak_requested_bytes", lp->peak_requested);
		ms_json_u64(l, "peak_event", lp->peak_event);
		kv_and_requests(l, t, &lp->forwards);
		cJSON_AddItemToArray(a, l);
	}
}

/* The KV cache's rules and the requests of a generation job or an evaluation loop. */
static void kv_and_requests(cJSON *o, const struct ms_trace *t,
                            const struct ms_explain_inference *f)
{
	cJSON *a = cJSON_AddObjectToObject(o, "kv_cache_rules");

	ms_json_u64(a, "concatenated_allocations", f->kv_concat_blocks);
	ms_json_u64(a, "concatenation_chains", f->kv_concat_chains);
	ms_json_u64(a, "kept_and_released_allocations", f->kv_kept_blocks);
	ms_json_u64(a, "named_cache_allocations", f->kv_named_blocks);
	a = cJSON_AddArrayToObject(o, "requests");
	for (size_t i = 0; i < f->n_requests; i++) {
		const struct ms_explain_request *q = &f->requests[i];
		cJSON *rq = cJSON_CreateObject();
		cJSON_AddNumberToObject(rq, "request", (double)(i + 1));
		ms_json_u64(rq, "first_event", q->first_event);
		ms_json_u64(rq, "end_event", q->end_event);
		event_time(rq, "first_time_s", t, q->first_event);
		event_time(rq, "end_time_s", t, q->end_event);
		cJSON_AddBoolToObject(rq, "released", q->released);
		/* begun before a trace that starts mid-run: its first forward may be a token's */
		cJSON_AddBoolToObject(rq, "began_before_trace", q->began_before_trace);
		/* a cache made once and kept through every forward: one request or several */
		cJSON_AddBoolToObject(rq, "may_be_several", q->may_be_several);
		cJSON_AddNumberToObject(rq, "forwards", q->forwards);
		ms_json_u64_known(rq, "prompt_peak_requested_bytes", !q->began_before_trace,
		                  q->prompt_peak);
		ms_json_u64_known(rq, "decode_peak_requested_bytes", q->forwards >= 2,
		                  q->decode_peak);
		ms_json_u64(rq, "kv_cache_peak_bytes", q->kv_peak);
		ms_json_u64_known(rq, "kv_cache_after_prompt_bytes",
		                  q->forwards >= 2 && !q->began_before_trace, q->kv_after_prompt);
		if (q->per_token_told)
			cJSON_AddNumberToObject(rq, "kv_cache_bytes_per_token",
			                        (double)q->kv_bytes_per_token);
		else
			cJSON_AddNullToObject(rq, "kv_cache_bytes_per_token");
		cJSON_AddItemToArray(a, rq);
	}
}

/* The peak of reserved bytes and the allocated peak, where it is another moment. */
static void peaks(cJSON *root, const struct ms_explain_report *r)
{
	const struct ms_trace *t = r->t;
	const struct ms_replay_result *f = &r->first;
	uint64_t at = r->peak_index;
	cJSON *o;

	/* the peaks below are the window's, where there is one */
	ms_window_json_brief(root, r->windowed ? &r->window : NULL);
	o = cJSON_AddObjectToObject(root, "peak");
	ms_json_u64(o, "event", at);
	ms_json_u64(o, "bytes", r->reserved);
	ms_json_u64(o, "allocated_bytes", r->allocated);
	ms_json_u64(o, "reserved_first_event", r->peak_first_index);
	event_time(o, "time_s", t, at);
	add_step(o, &r->x, r->peak_step);
	if (ms_explain_eval_loop_of(&r->x, at))
		ms_json_u64(o, "eval_loop", ms_explain_eval_loop_of(&r->x, at));
	else
		cJSON_AddNullToObject(o, "eval_loop");
	add_str_or_null(o, "annotation", r->peak_annotation);
	/* the sites whose allocations of every category hold the most there */
	sites(cJSON_AddArrayToObject(o, "holders"), &t->syms, r->x.top_live, r->x.n_top_live,
	      r->site_depth);
	/* a trace that starts mid-run or is cut short: the job's peak may have been higher */
	cJSON_AddBoolToObject(o, "is_lower_bound", f->rebuilt || f->cut_short);
	/* the replay stopped at an OOM the recorded run did not have (exit code 3) */
	cJSON_AddBoolToObject(root, "replay_ended_by_oom", f->ended_by_oom);
	cats(root, &r->x, r->allocated, r->served_at_peak, r->cached, r->outside, r->outside_how);
	cat_peaks(root, &r->x);
	user_cats(root, &r->x);
	contexts(root, &t->syms, &r->x);
	cJSON_AddStringToObject(root, "outside_pytorch_is",
	                        r->outside_how == MS_OUTSIDE_MEASURED   ? "measured"
	                        : r->outside_how == MS_OUTSIDE_RAW_ONLY ? "raw_calls_only"
	                                                                : "not_measured");
	if (r->apeak) {
		uint64_t ab = r->apeak_bytes;
		o = cJSON_AddObjectToObject(root, "allocated_peak");
		ms_json_u64(o, "event", r->apeak_index);
		ms_json_u64(o, "allocated_bytes", ab);
		add_step(o, &r->x, r->apeak_step);
		cats(o, &r->at_apeak, ab, r->apeak_served, UINT64_MAX, 0, MS_OUTSIDE_NOT_MEASURED);
	} else {
		cJSON_AddNullToObject(root, "allocated_peak");
	}
}

/* The model's state whole, and where the steps came from. */
static void state(cJSON *root, const struct ms_explain_report *r)
{
	const struct ms_explain *x = &r->x;
	cJSON *o = cJSON_AddObjectToObject(root, "state");

	if (x->parameter_blocks) {
		ms_json_u64(o, "parameter_bytes", x->parameter_bytes);
		ms_json_u64_known(o, "gradient_bytes", !x->gradients_not_told, x->gradient_bytes);
		ms_json_u64(o, "optimizer_state_bytes", x->optimizer_state_bytes);
	} else { /* not found: no count, rather than a count of 0 */
		cJSON_AddNullToObject(o, "parameter_bytes");
		cJSON_AddNullToObject(o, "gradient_bytes");
		cJSON_AddNullToObject(o, "optimizer_state_bytes");
	}
	cJSON_AddBoolToObject(o, "steps_annotated_on_another_device", x->steps_other_device);
	cJSON_AddBoolToObject(o, "steps_placed_by_time", x->steps_by_time);
	cJSON_AddStringToObject(o, "optimizer", x->optimizer);
	ms_json_u64(o, "optimizer_steps", x->n_optimizer_steps);
	add_str_or_null(root, "steps_from", x->steps_from);
	add_str_or_null(root, "steps_scope", x->steps_scope);
	cJSON_AddBoolToObject(root, "steps_trailing_annotation_dropped", x->steps_trailing_dropped);
	cJSON_AddBoolToObject(root, "steps_exceed_reserved", r->steps_exceed_reserved);
	add_str_or_null(root, "categories_note", x->why_uncategorized);
	ms_json_u64(root, "steps_before_trace", x->steps_before_trace);
}

/* The steps, and the sites that grow from step to step. */
static void steps(cJSON *root, const struct ms_explain_report *r)
{
	const struct ms_explain *x = &r->x;
	cJSON *a = cJSON_AddArrayToObject(root, "steps");

	for (size_t k = 0; k < x->n_steps; k++) {
		cJSON *st = cJSON_CreateObject();
		cJSON_AddNumberToObject(st, "step", (double)(k + 1 + x->steps_before_trace));
		ms_json_u64(st, "first_event", x->steps[k].first_event);
		ms_json_u64(st, "peak_requested_bytes", x->steps[k].peak_requested);
		ms_json_u64(st, "peak_event", x->steps[k].peak_event);
		ms_json_u64_known(st, "peak_reserved_bytes", r->step_reserved[k] != 0,
		                  r->step_reserved[k]);
		cJSON_AddItemToArray(a, st);
	}
	/* growth is looked for over 3 steps or more: null where it was not, [] where nothing
	   grew */
	cJSON_AddNumberToObject(root, "growth_steps", (double)x->growth_steps);
	if (!x->growth_steps) {
		cJSON_AddNullToObject(root, "growth");
		return;
	}
	a = cJSON_AddArrayToObject(root, "growth");
	for (size_t k = 0; k < x->n_growth; k++) {
		const struct ms_explain_growth *gr = &x->growth[k];
		cJSON *g = cJSON_CreateObject();
		site(g, &r->t->syms, gr->stack, gr->frame, r->site_depth);
		ms_json_u64(g, "bytes_per_step", gr->bytes_per_step);
		cJSON_AddNumberToObject(g, "steps", gr->steps);
		ms_json_u64(g, "first_event", gr->first_event);
		ms_json_u64(g, "bytes_at_last_step", gr->bytes_at_last_step);
		ms_json_u64(g, "bytes_at_end", gr->bytes_at_end);
		cJSON_AddNumberToObject(g, "blocks_at_first_step", gr->blocks_at_first_step);
		cJSON_AddNumberToObject(g, "blocks_at_last_step", gr->blocks_at_last_step);
		cJSON_AddItemToArray(a, g);
	}
}

static void live_at_end(cJSON *root, const struct ms_explain_report *r)
{
	const struct ms_explain *x = &r->x, *e = &r->at_end;
	cJSON *o, *c;

	if (r->first.ended_by_oom) {
		cJSON_AddNullToObject(root, "live_at_end");
		return;
	}
	o = cJSON_AddObjectToObject(root, "live_at_end");
	ms_json_u64(o, "bytes", ms_explain_requested(e));
	cJSON_AddBoolToObject(o, "exceeds_allocated", r->end_exceeds);
	ms_json_u64(o, "allocations", r->end_blocks);
	c = cJSON_AddObjectToObject(o, "categories");
	for (unsigned o2 = 0; o2 < MS_CAT_COUNT; o2++) {
		unsigned k = ms_explain_cat_order[o2];
		if (!ms_explain_cat_told(e, k))
			cJSON_AddNullToObject(c, ms_explain_cat_name(k));
		else
			ms_json_u64(c, ms_explain_cat_name(k), e->cat_bytes[k]);
	}
	ms_json_u64_known(o, "growing_sites_bytes_at_last_step", x->growth_steps != 0,
	                  r->growing_bytes);
	ms_json_u64_known(o, "growing_sites_bytes", x->growth_steps != 0, r->growing_bytes_at_end);
}

/* What the trace shows of the program: where the peak's activations come from, empty_cache() in
 * a loop, memory left cached at the end. */
static void findings(cJSON *jo, const struct ms_explain_report *r)
{
	const struct ms_explain *x = &r->x;
	const struct ms_symtab *y = &r->t->syms;

	sites(cJSON_AddArrayToObject(jo, "largest_activations"), y, x->top_activations,
	      x->n_top_activations, r->site_depth);
	if (x->copies_told) {
		cJSON *c = cJSON_AddObjectToObject(jo, "copies_at_peak");
		ms_json_u64(c, "bytes", x->copy_bytes);
		ms_json_u64(c, "allocations", x->copy_blocks);
		sites(cJSON_AddArrayToObject(c, "sites"), y, x->top_copies, x->n_top_copies,
		      r->site_depth);
	} else {
		cJSON_AddNullToObject(jo, "copies_at_peak"); /* no C++ frames to tell them by */
	}
	ms_json_u64(jo, "empty_cache_calls", r->first.empty_cache_calls);
	ms_json_u64(jo, "empty_cache_calls_before_alloc", r->first.empty_cache_before_alloc);
	cJSON_AddBoolToObject(jo, "empty_cache_every_step", r->empty_cache_every_step);
	ms_json_u64(jo, "cuda_malloc_calls", r->first.stats.num_device_alloc);
	/* where the replay ran out of memory: the bytes cached then */
	ms_json_u64(jo, "cached_at_end_bytes", r->cached_at_end);
	ms_json_u64(jo, "cached_at_end_in_private_pools_bytes", r->cached_at_end_private);
}

static void oom(cJSON *root, const struct ms_explain_report *r)
{
	const struct ms_replay_oom *f = &r->first.first_oom;
	cJSON *o;

	if (!r->has_oom) {
		cJSON_AddNullToObject(root, "oom");
		return;
	}
	o = cJSON_AddObjectToObject(root, "oom");
	ms_json_u64(o, "event", f->index);
	cJSON_AddBoolToObject(o, "recorded", f->recorded);
	ms_json_u64(o, "requested_bytes", f->o.requested);
	ms_json_u64(o, "allocated_bytes", f->o.allocated);
	ms_json_u64(o, "reserved_bytes", f->o.reserved);
	ms_json_u64(o, "free_in_reserved_bytes", f->o.free_in_reserved);
	ms_json_u64(o, "largest_free_bytes", f->o.largest_free);
	ms_json_u64_known(o, "capacity_bytes", r->capacity != UINT64_MAX, r->capacity);
	if (r->lim.inferred) {
		cJSON *li = cJSON_AddObjectToObject(o, "capacity_inferred");
		ms_json_u64(li, "low_bytes", r->lim.lo);
		ms_json_u64(li, "high_bytes", r->lim.hi);
	} else {
		cJSON_AddNullToObject(o, "capacity_inferred");
	}
	if (r->oom_fits < 0)
		cJSON_AddNullToObject(o, "fits_without_fragmentation");
	else
		cJSON_AddBoolToObject(o, "fits_without_fragmentation", r->oom_fits);
	ms_json_u64(o, "new_segment_bytes", f->o.alloc_size);
	ms_verdict_json_oom_cause(o, &r->vd.oom);
	/* a use_mem_pool or a capture was open: the last retry was not made */
	cJSON_AddBoolToObject(o, "cache_kept_by_open_pool_or_capture", f->o.retry_skipped);
	ms_json_u64(o, "cache_releasable_bytes", f->o.releasable);
	cats(o, &r->at_oom, f->o.allocated, 0, f->o.reserved - f->o.allocated, 0,
	     MS_OUTSIDE_NOT_MEASURED);
	sites(cJSON_AddArrayToObject(o, "holders"), &r->t->syms, r->at_oom.top_live,
	      r->at_oom.n_top_live, r->site_depth);
}

static void recommendations(cJSON *root, const struct ms_explain_report *r)
{
	cJSON *a = cJSON_AddArrayToObject(root, "recommendations");

	for (size_t k = 0; k < r->n_recs; k++) {
		const struct ms_explain_rec *rec = &r->recs[k];
		const struct ms_whatif_row *w = &r->rows[rec->row];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "alloc_conf", w->conf);
		ms_json_u64(o, "peak_reserved_bytes", rec->peak);
		cJSON_AddBoolToObject(o, "avoids_oom", rec->avoids_oom);
		ms_verdict_json_survival(o, &rec->sv);
		cJSON_AddBoolToObject(o, "job_went_on_after_oom", rec->went_on);
		ms_json_u64_known(o, "min_memory_bytes", w->min_memory != 0, w->min_memory);
		cJSON_AddItemToArray(a, o);
	}
	ms_json_u64_known(root, "min_memory_bytes", !r->rows[0].s && r->rows[0].min_memory,
	                  r->rows[0].min_memory);
}

cJSON *ms_explain_report_json(const struct ms_explain_report *r, const char *path)
{
	cJSON *root = cJSON_CreateObject();

	if (!root)
		return NULL;
	ms_json_schema(root);
	cJSON_AddStringToObject(root, "trace", path);
	cJSON_AddNumberToObject(root, "device", r->device);
	cJSON_AddBoolToObject(root, "trace_cut_short", r->t->cut_short);
	/* the one line a postmortem opens with (verdict.h) */
	cJSON_AddStringToObject(root, "verdict", r->vd.headline);
	add_str_or_null(root, "job", r->x.job);
	peaks(root, r);
	state(root, r);
	inference(root, r->t, &r->x, r->peak_index);
	eval_loops(root, r->t, &r->x);
	steps(root, r);
	live_at_end(root, r);
	findings(cJSON_AddObjectToObject(root, "findings"), r);
	oom(root, r);
	recommendations(root, r);
	return root;
}
