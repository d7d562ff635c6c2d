/*
 * The HTML report: one self-contained page (dygraphs and the page's own script and styles
 * inline, a Content-Security-Policy that forbids every request) drawing the data of a report
 * (render/report.h) as one JSON document.
 */
#include "render/render.h"

#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "common/jsonw.h"
#include "common/status.h"
#include "render/report.h"
#include "explain/explain.h"
#include "explain/verdict.h"
#include "json/verdict.h"
#include "json/whatif.h"
#include "replay/whatif.h"

int ms_render_have_html(void)
{
	return MS_HAVE_HTML;
}

/* A key and its value, inside an object. */
static void key_u64(struct ms_jsonw *w, const char *k, uint64_t v)
{
	ms_jsonw_key(w, k);
	ms_jsonw_u64(w, v);
}

static void key_i64(struct ms_jsonw *w, const char *k, int64_t v)
{
	ms_jsonw_key(w, k);
	ms_jsonw_i64(w, v);
}

static void key_cstr(struct ms_jsonw *w, const char *k, const char *v)
{
	ms_jsonw_key(w, k);
	ms_jsonw_cstr(w, v);
}

static void key_bool(struct ms_jsonw *w, const char *k, int v)
{
	ms_jsonw_key(w, k);
	ms_jsonw_bool(w, v);
}

/* A device address or stream as "0x..": pointers can pass 2^53, where JSON numbers stop being
 * exact. */
static void hex(struct ms_jsonw *w, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)v);
	ms_jsonw_cstr(w, buf);
}

/* [frames, the site's position, the positions --frames shows or null for all]; null: none. */
static void stack_json(struct ms_jsonw *w, const struct ms_report_stack *st)
{
	if (!st->known) {
		ms_jsonw_null(w);
		return;
	}
	ms_jsonw_arr_begin(w);
	ms_jsonw_arr_begin(w);
	for (size_t i = 0; i < st->n; i++)
		ms_jsonw_u64(w, st->frames[i]);
	ms_jsonw_arr_end(w);
	ms_jsonw_u64(w, st->site);
	if (st->shown_all) {
		ms_jsonw_null(w);
	} else {
		ms_jsonw_arr_begin(w);
		for (size_t i = 0; i < st->n_shown; i++)
			ms_jsonw_u64(w, st->shown[i]);
		ms_jsonw_arr_end(w);
	}
	ms_jsonw_arr_end(w);
}

/* The table of the frames the stacks refer to: [name, file, line] each. */
static void frames_json(struct ms_jsonw *w, const struct ms_symtab *frames)
{
	ms_jsonw_arr_begin(w);
	for (uint32_t i = 1; i < ms_symtab_nframes(frames); i++) {
		const struct ms_frame *f = &frames->frames[i];
		const struct ms_str *name = ms_symtab_get_str(frames, f->name);
		const struct ms_str *file = ms_symtab_get_str(frames, f->file);
		ms_jsonw_arr_begin(w);
		ms_jsonw_str(w, name->s, name->len);
		ms_jsonw_str(w, file->s, file->len);
		ms_jsonw_u64(w, f->line);
		ms_jsonw_arr_end(w);
	}
	ms_jsonw_arr_end(w);
}

/* The moments: [address, size, stream, small, expandable, [cells: size, state, requested,
 * site, blocks], pool ("" the default pools, else "(first, second)")] per segment. */
static void moments_json(struct ms_jsonw *w, const struct ms_report *rep)
{
	const struct ms_report_segment *g = rep->segs;
	const struct ms_report_cell *c = rep->cells;

	ms_jsonw_arr_begin(w);
	for (size_t i = 0; i < rep->n_moments; i++) {
		const struct ms_report_moment *m = &rep->moments[i];
		ms_jsonw_obj_begin(w);
		key_u64(w, "index", m->index);
		key_cstr(w, "label", m->label);
		key_i64(w, "allocated", m->allocated);
		key_i64(w, "reserved", m->reserved);
		ms_jsonw_key(w, "segments");
		ms_jsonw_arr_begin(w);
		for (const struct ms_report_segment *end = g + m->n_segs; g < end; g++) {
			ms_jsonw_arr_begin(w);
			hex(w, g->addr);
			ms_jsonw_u64(w, g->size);
			hex(w, g->stream);
			ms_jsonw_bool(w, g->small);
			ms_jsonw_bool(w, g->expandable);
			ms_jsonw_arr_begin(w);
			for (const struct ms_report_cell *cend = c + g->n_cells; c < cend; c++) {
				ms_jsonw_u64(w, c->size);
				ms_jsonw_i64(w, c->state);
				ms_jsonw_u64(w, c->requested);
				ms_jsonw_i64(w, c->site);
				ms_jsonw_u64(w, c->blocks);
			}
			ms_jsonw_arr_end(w);
			if (g->pool_id[0] | g->pool_id[1]) {
				char id[48];
				ms_jsonw_cstr(w, ms_pool_id_text(g->pool_id, id, sizeof(id)));
			} else {
				ms_jsonw_cstr(w, "");
			}
			ms_jsonw_arr_end(w);
		}
		ms_jsonw_arr_end(w);
		ms_jsonw_obj_end(w);
	}
	ms_jsonw_arr_end(w);
}

/* Nested [label, bytes, [children]]; nodes under min bytes are left out (their bytes still
 * count in their parent's). */
static void flame_write(struct ms_jsonw *w, const struct ms_report *rep, size_t k, uint64_t min,
                        int depth)
{
	const struct ms_report_flame_node *n = &rep->flame[k];
	char label[300];

	ms_jsonw_arr_begin(w);
	if (k == 0) {
		ms_jsonw_cstr(w, "all");
	} else {
		const struct ms_symtab *y = rep->syms;
		const struct ms_frame *fr = &y->frames[n->frame];
		snprintf(label, sizeof(label), "%s (%s:%u)", ms_symtab_get_str(y, fr->name)->s,
		         ms_symtab_get_str(y, fr->file)->s, fr->line);
		ms_jsonw_cstr(w, label);
	}
	ms_jsonw_u64(w, n->bytes);
	ms_jsonw_arr_begin(w);
	for (size_t c = n->child; c && depth < 128; c = rep->flame[c].next)
		if (rep->flame[c].bytes >= min)
			flame_write(w, rep, c, min, depth + 1);
	ms_jsonw_arr_end(w);
	ms_jsonw_arr_end(w);
}

static void oom_json(struct ms_jsonw *w, const struct ms_report *rep)
{
	const struct ms_replay_oom *x = &rep->oom;

	ms_jsonw_obj_begin(w);
	key_u64(w, "index", x->index);
	key_bool(w, "recorded", x->recorded);
	key_cstr(w, "message", rep->oom_message);
	key_u64(w, "requested", x->o.requested);
	key_u64(w, "rounded", x->o.rounded);
	key_u64(w, "alloc_size", x->o.alloc_size);
	key_u64(w, "stream", x->o.stream);
	key_u64(w, "allocated", x->o.allocated);
	key_u64(w, "reserved", x->o.reserved);
	key_u64(w, "free_in_reserved", x->o.free_in_reserved);
	key_u64(w, "largest_free", x->o.largest_free);
	key_bool(w, "cache_kept", x->o.retry_skipped);
	key_u64(w, "releasable", x->o.releasable);
	ms_jsonw_key(w, "holes");
	ms_jsonw_arr_begin(w);
	for (size_t i = 0; i < x->n_holes; i++) {
		ms_jsonw_arr_begin(w);
		hex(w, x->holes[i].addr);
		ms_jsonw_u64(w, x->holes[i].size);
		ms_jsonw_arr_end(w);
	}
	ms_jsonw_arr_end(w);
	ms_jsonw_key(w, "holders");
	ms_jsonw_arr_begin(w);
	for (size_t i = 0; i < x->n_holders; i++) {
		ms_jsonw_arr_begin(w);
		ms_jsonw_u64(w, x->holders[i].size);
		if (x->holders[i].index == MS_REPLAY_BEFORE_TRACE)
			ms_jsonw_i64(w, -1); /* allocated before the trace */
		else
			ms_jsonw_u64(w, x->holders[i].index);
		ms_jsonw_cstr(w, x->holders[i].site);
		stack_json(w, &rep->holder_stacks[i]);
		ms_jsonw_arr_end(w);
	}
	ms_jsonw_arr_end(w);
	ms_jsonw_obj_end(w);
}

/* A cJSON object of one of the result serializers (json/), written whole; 0, or -1 where it
 * could not be made (out of memory). */
static int put_json(struct ms_jsonw *w, cJSON *o)
{
	char *text = o ? cJSON_PrintUnformatted(o) : NULL;

	cJSON_Delete(o);
	if (!text)
		return -1;
	ms_jsonw_value(w, text);
	cJSON_free(text);
	return 0;
}

/* The verdict as explain gives it (json/verdict.h); null where the caller had none. */
static int verdict_json(struct ms_jsonw *w, const struct ms_verdict *v)
{
	if (!v) {
		ms_jsonw_null(w);
		return 0;
	}
	return put_json(w, ms_verdict_json(v));
}

/* The settings' rows as whatif --json gives them (json/whatif.h), each judged where the verdict
 * judged it. */
static int whatif_json(struct ms_jsonw *w, const struct ms_whatif_row *rows, size_t n,
                       const struct ms_verdict *v)
{
	int bad = 0;

	ms_jsonw_arr_begin(w);
	for (size_t i = 0; i < n && !bad; i++)
		bad = put_json(w,
		               ms_whatif_row_json(&rows[i], v && i < v->n_sv ? &v->sv[i] : NULL));
	ms_jsonw_arr_end(w);
	return bad;
}

/* The timeline's columns (one entry per bucket) and the finer level's. */
static void timeline_json(struct ms_jsonw *w, const struct ms_report *rep)
{
/* one column of a level: rows[0 .. count) of type T, each row x giving expr */
#define COLUMN(name, rows, count, T, expr)                \
	do {                                              \
		ms_jsonw_key(w, name);                    \
		ms_jsonw_arr_begin(w);                    \
		for (size_t i = 0; i < (count); i++) {    \
			const T *x = &(rows)[i];          \
			ms_jsonw_i64(w, (int64_t)(expr)); \
		}                                         \
		ms_jsonw_arr_end(w);                      \
	} while (0)
#define BUCKET(name, expr) COLUMN(name, rep->buckets, rep->n_buckets, struct ms_report_bucket, expr)
#define FINE(name, expr)   COLUMN(name, rep->fine, rep->n_fine, struct ms_report_span, expr)
	ms_jsonw_key(w, "timeline");
	ms_jsonw_obj_begin(w);
	BUCKET("first", x->s.first);
	BUCKET("last", x->last);
	BUCKET("t_ms", x->s.t_ns / 1000000);
	BUCKET("alloc_min", x->s.amin);
	BUCKET("alloc_max", x->s.amax);
	BUCKET("alloc", x->alloc);
	BUCKET("res_min", x->s.rmin);
	BUCKET("res_max", x->s.rmax);
	BUCKET("res", x->reserved);
	BUCKET("active_max", x->active_max);
	BUCKET("ext", x->ext_max);
	BUCKET("inactive_split", x->inactive_split);
	BUCKET("free_in_reserved", x->free_in_reserved);
	BUCKET("largest_free", x->largest_free);
	BUCKET("small_res", x->small_reserved);
	BUCKET("large_res", x->large_reserved);
	BUCKET("priv_alloc", x->private_allocated);
	BUCKET("priv_res", x->private_reserved);
	BUCKET("ann", x->ann);
	BUCKET("big_size", x->big_size);
	BUCKET("big_index", x->big_index);
	BUCKET("big_site", x->big_site);
	/* per stream drawn apart, then "other streams": only where there are several */
	ms_jsonw_key(w, "stream_alloc");
	ms_jsonw_arr_begin(w);
	for (size_t k = 0; k <= rep->n_streams && rep->n_streams > 1; k++) {
		ms_jsonw_arr_begin(w);
		for (size_t i = 0; i < rep->n_buckets; i++)
			ms_jsonw_i64(w, rep->buckets[i].stream_alloc[k]);
		ms_jsonw_arr_end(w);
	}
	ms_jsonw_arr_end(w);
	ms_jsonw_obj_end(w);
	/* the finer level, for zooming in */
	ms_jsonw_key(w, "fine");
	ms_jsonw_obj_begin(w);
	key_u64(w, "bucket_events", rep->fine_events);
	FINE("first", x->first);
	FINE("t_ms", x->t_ns / 1000000);
	FINE("alloc_min", x->amin);
	FINE("alloc_max", x->amax);
	FINE("alloc", x->alast);
	FINE("res_min", x->rmin);
	FINE("res_max", x->rmax);
	ms_jsonw_obj_end(w);
#undef FINE
#undef BUCKET
#undef COLUMN
	ms_jsonw_key(w, "streams");
	ms_jsonw_arr_begin(w);
	for (size_t k = 0; k < rep->n_streams && rep->n_streams > 1; k++)
		hex(w, rep->streams[k]);
	ms_jsonw_arr_end(w);
	/* the annotation names the timeline uses, by string id */
	ms_jsonw_key(w, "strings");
	ms_jsonw_obj_begin(w);
	for (size_t i = 0; i < rep->n_ann_names; i++) {
		const struct ms_str *str = ms_symtab_get_str(rep->syms, rep->ann_names[i]);
		char key[16];
		snprintf(key, sizeof(key), "%u", (unsigned)rep->ann_names[i]);
		ms_jsonw_key(w, key);
		ms_jsonw_str(w, str->s, str->len);
	}
	ms_jsonw_obj_end(w);
}

/* The page's data: one JSON document (docs/RENDER.md), into *json (libc's free). */
/* What the peak is made of (report.h): categories as [name, bytes, blocks], the rest by name. */
/*
 * The per-allocation timeline: "bands" in columns (one entry per allocation drawn, by alloc
 * event), "band_parts" (per level, the number of parts and each part's bands) and
 * "band_stacks" (the stacks the bands refer to).
 */
static void bands_json(struct ms_jsonw *w, const struct ms_report *rep)
{
	const struct ms_bands *b = &rep->bands;
	size_t part = 0;

#define BAND(name, expr)                                  \
	do {                                              \
		ms_jsonw_key(w, name);                    \
		ms_jsonw_arr_begin(w);                    \
		for (size_t i = 0; i < b->n_bands; i++)   \
			ms_jsonw_i64(w, (int64_t)(expr)); \
		ms_jsonw_arr_end(w);                      \
	} while (0)
	ms_jsonw_key(w, "bands");
	ms_jsonw_obj_begin(w);
	BAND("first", b->bands[i].first);
	BAND("last", b->bands[i].last == MS_BANDS_NONE ? -1 : (int64_t)b->bands[i].last);
	BAND("size", b->bands[i].size);
	BAND("addr", b->bands[i].addr);
	BAND("site", rep->band_site[i]);
	BAND("stack", rep->band_stack[i]);
	BAND("fwd", rep->band_fwd[i]);
	BAND("ctx", rep->n_band_ctx_names ? rep->band_ctx[i] : -1);
	BAND("cat", rep->band_cat[i]);
#undef BAND
	ms_jsonw_obj_end(w);
	ms_jsonw_key(w, "band_parts");
	ms_jsonw_arr_begin(w);
	for (unsigned l = 0; l < MS_BANDS_LEVELS && b->part_start; l++) {
		ms_jsonw_arr_begin(w);
		for (size_t p = 0; p < ms_bands_parts(l); p++, part++) {
			ms_jsonw_arr_begin(w);
			for (size_t k = b->part_start[part]; k < b->part_start[part + 1]; k++)
				ms_jsonw_u64(w, b->part_idx[k]);
			ms_jsonw_arr_end(w);
		}
		ms_jsonw_arr_end(w);
	}
	ms_jsonw_arr_end(w);
	ms_jsonw_key(w, "band_stacks");
	ms_jsonw_arr_begin(w);
	for (size_t i = 0; i < rep->n_band_stacks; i++)
		stack_json(w, &rep->band_stacks[i]);
	ms_jsonw_arr_end(w);
	/* the compile contexts the bands' ctx refer to ("N/A": outside compiled regions); null
	   where the trace records none */
	ms_jsonw_key(w, "band_compile_contexts");
	if (!rep->n_band_ctx_names) {
		ms_jsonw_null(w);
		return;
	}
	ms_jsonw_arr_begin(w);
	for (size_t i = 0; i < rep->n_band_ctx_names; i++)
		ms_jsonw_cstr(w, rep->band_ctx_names[i]
		                         ? ms_symtab_get_str(rep->syms, rep->band_ctx_names[i])->s
		                         : "N/A");
	ms_jsonw_arr_end(w);
}

static void diagnosis_json(struct ms_jsonw *w, const struct ms_report_diagnosis *g,
                           const struct ms_user_cats *user_cats)
{
	ms_jsonw_obj_begin(w);
	key_u64(w, "event", g->event);
	key_u64(w, "reserved", g->reserved);
	key_u64(w, "allocated", g->allocated);
	/* the user's: [name, bytes, allocations, pattern], in their order (band categories
	 * MS_CAT_COUNT + i) */
	ms_jsonw_key(w, "user_categories");
	ms_jsonw_arr_begin(w);
	for (size_t k = 0; k < g->n_user; k++) {
		ms_jsonw_arr_begin(w);
		ms_jsonw_cstr(w, ms_user_cats_name(user_cats, k));
		ms_jsonw_u64(w, g->user_bytes[k]);
		ms_jsonw_u64(w, g->user_blocks[k]);
		ms_jsonw_cstr(w, ms_user_cats_pattern(user_cats, k));
		ms_jsonw_arr_end(w);
	}
	ms_jsonw_arr_end(w);
	ms_jsonw_key(w, "categories");
	ms_jsonw_arr_begin(w);
	for (unsigned o = 0; o < MS_CAT_COUNT; o++) {
		unsigned k = ms_explain_cat_order[o];
		ms_jsonw_arr_begin(w);
		ms_jsonw_cstr(w, ms_explain_cat_name(k));
		ms_jsonw_u64(w, g->cat_bytes[k]);
		ms_jsonw_u64(w, g->cat_blocks[k]);
		ms_jsonw_arr_end(w);
	}
	ms_jsonw_arr_end(w);
	key_i64(w, "rounding", g->rounding);
	key_u64(w, "oom_request", g->oom_request);
	key_u64(w, "optimizer_steps", g->n_optimizer_steps);
	key_cstr(w, "optimizer", g->optimizer);
	ms_jsonw_key(w, "model");
	if (g->model_found) {
		ms_jsonw_arr_begin(w);
		ms_jsonw_u64(w, g->parameter_bytes);
		ms_jsonw_u64(w, g->gradient_bytes);
		ms_jsonw_u64(w, g->optimizer_state_bytes);
		ms_jsonw_arr_end(w);
	} else {
		ms_jsonw_null(w);
	}
	key_cstr(w, "note", g->note);
	key_u64(w, "growth_steps", g->growth_steps);
	ms_jsonw_key(w, "growth_by_repetition");
	ms_jsonw_bool(w, g->growth_by_repetition);
	ms_jsonw_key(w, "copies");
	if (g->copies_told) {
		ms_jsonw_arr_begin(w);
		ms_jsonw_u64(w, g->copy_bytes);
		ms_jsonw_u64(w, g->copy_blocks);
		ms_jsonw_cstr(w, g->copy_site);
		ms_jsonw_arr_end(w);
	} else {
		ms_jsonw_null(w);
	}
	key_cstr(w, "steps_from", g->steps_from);
	key_cstr(w, "steps_scope", g->steps_scope);
	ms_jsonw_key(w, "has_stacks");
	ms_jsonw_bool(w, g->has_stacks);
	key_cstr(w, "job", g->job ? g->job : "");
	ms_jsonw_key(w, "eager_forwards_only");
	ms_jsonw_bool(w, g->eager_forwards_only);
	key_u64(w, "steps_before_trace", g->steps_before_trace);
	/* a generation job's requests: [first event, forwards, prompt peak, decode peak (null with
	 * one forward), KV cache peak, KV added a token (null under 3 forwards), released, may be
	 * several requests, begun before the trace (its prompt peak null)] each */
	ms_jsonw_key(w, "requests");
	ms_jsonw_arr_begin(w);
	for (size_t k = 0; k < g->n_requests; k++) {
		const struct ms_explain_request *q = &g->requests[k];
		ms_jsonw_arr_begin(w);
		ms_jsonw_u64(w, q->first_event);
		ms_jsonw_u64(w, q->forwards);
		if (q->began_before_trace)
			ms_jsonw_null(w);
		else
			ms_jsonw_u64(w, q->prompt_peak);
		if (q->forwards >= 2)
			ms_jsonw_u64(w, q->decode_peak);
		else
			ms_jsonw_null(w);
		ms_jsonw_u64(w, q->kv_peak);
		if (q->per_token_told)
			ms_jsonw_i64(w, q->kv_bytes_per_token);
		else
			ms_jsonw_null(w);
		ms_jsonw_bool(w, q->released);
		ms_jsonw_bool(w, q->may_be_several);
		ms_jsonw_bool(w, q->began_before_trace);
		ms_jsonw_arr_end(w);
	}
	ms_jsonw_arr_end(w);
	/* a training job's evaluation loops: [first event, last event, forwards, peak requested,
	 * requests, largest request's KV cache] each */
	ms_jsonw_key(w, "eval_loops");
	ms_jsonw_arr_begin(w);
	for (size_t k = 0; k < g->n_eval_loops; k++) {
		const struct ms_report_eval_loop *lp = &g->eval_loops[k];
		ms_jsonw_arr_begin(w);
		ms_jsonw_u64(w, lp->first_event);
		ms_jsonw_u64(w, lp->end_event);
		ms_jsonw_u64(w, lp->forwards);
		ms_jsonw_u64(w, lp->peak_requested);
		ms_jsonw_u64(w, lp->n_requests);
		ms_jsonw_u64(w, lp->kv_peak);
		ms_jsonw_arr_end(w);
	}
	ms_jsonw_arr_end(w);
	ms_jsonw_key(w, "steps"); /* [first event, peak requested, its event] each */
	ms_jsonw_arr_begin(w);
	for (size_t k = 0; k < g->n_steps; k++) {
		ms_jsonw_arr_begin(w);
		ms_jsonw_u64(w, g->steps[k].first_event);
		ms_jsonw_u64(w, g->steps[k].peak_requested);
		ms_jsonw_u64(w, g->steps[k].peak_event);
		ms_jsonw_arr_end(w);
	}
	ms_jsonw_arr_end(w);
	ms_jsonw_key(w, "growth");
	ms_jsonw_arr_begin(w);
	for (size_t k = 0; k < g->n_growth; k++) {
		ms_jsonw_arr_begin(w);
		ms_jsonw_cstr(w, g->growth[k].site);
		ms_jsonw_u64(w, g->growth[k].bytes_per_step);
		ms_jsonw_u64(w, g->growth[k].steps);
		ms_jsonw_u64(w, g->growth[k].blocks_first);
		ms_jsonw_u64(w, g->growth[k].blocks_last);
		ms_jsonw_arr_end(w);
	}
	ms_jsonw_arr_end(w);
	ms_jsonw_obj_end(w);
}

static ms_status data_json(const struct ms_report *rep, const struct ms_whatif_row *whatif,
                           size_t n_whatif, char **json, size_t *json_len)
{
	struct ms_jsonw w;
	FILE *f;
	int bad;

	*json = NULL;
	if (!(f = open_memstream(json, json_len)))
		return MS_ERR_NOMEM;
	ms_jsonw_init(&w, f, 0);
	ms_jsonw_obj_begin(&w);
	key_cstr(&w, "source", rep->source);
	if (rep->no_trace) {
		key_bool(&w, "no_trace", 1);
	}
	key_u64(&w, "device", rep->device);
	key_cstr(&w, "alloc_conf", rep->alloc_conf);
	key_bool(&w, "settings_recorded", rep->settings_recorded);
	key_bool(&w, "expandable_segments_seen", rep->expandable_seen);
	ms_jsonw_key(&w, "device_memory");
	if (rep->device_memory == UINT64_MAX)
		ms_jsonw_null(&w);
	else
		ms_jsonw_u64(&w, rep->device_memory);
	key_u64(&w, "limit", rep->limit);
	if (!rep->no_trace) {
		/* what the verdicts rest on: a guessed size or limit is said to be one */
		key_cstr(&w, "device_memory_source",
		         ms_devmem_source_name(rep->device_memory_source));
		key_bool(&w, "cut_short", rep->cut_short);
		ms_jsonw_key(&w, "mid_run");
		if (rep->rebuilt) {
			ms_jsonw_obj_begin(&w);
			key_u64(&w, "reserved", rep->initial_reserved);
			key_u64(&w, "segments", rep->initial_segments);
			key_u64(&w, "live_blocks", rep->initial_live_blocks);
			key_bool(&w, "placed", rep->placed);
			ms_jsonw_obj_end(&w);
		} else {
			ms_jsonw_null(&w);
		}
		ms_jsonw_key(&w, "limit_inferred");
		if (rep->limit_inferred) {
			ms_jsonw_arr_begin(&w);
			ms_jsonw_u64(&w, rep->limit_lo);
			ms_jsonw_u64(&w, rep->limit_hi);
			ms_jsonw_arr_end(&w);
		} else {
			ms_jsonw_null(&w);
		}
	}
	key_u64(&w, "events", rep->events);
	key_u64(&w, "replayed", rep->replayed);
	key_bool(&w, "ended_by_oom", rep->ended_by_oom);
	ms_jsonw_key(&w, "window");
	ms_jsonw_arr_begin(&w);
	ms_jsonw_u64(&w, rep->from);
	ms_jsonw_u64(&w, rep->to);
	ms_jsonw_arr_end(&w);
	ms_jsonw_key(&w, "peak");
	ms_jsonw_obj_begin(&w);
	key_u64(&w, "index", rep->peak_index);
	key_u64(&w, "allocated", rep->peak_allocated);
	key_u64(&w, "reserved", rep->peak_reserved);
	ms_jsonw_obj_end(&w);
	key_u64(&w, "bucket_events", rep->bucket_events);
	timeline_json(&w, rep);
	ms_jsonw_key(&w, "moments");
	moments_json(&w, rep);
	ms_jsonw_key(&w, "diagnosis");
	if (rep->diag.has)
		diagnosis_json(&w, &rep->diag, rep->user_cats);
	else
		ms_jsonw_null(&w);
	ms_jsonw_key(&w, "oom");
	if (rep->has_oom)
		oom_json(&w, rep);
	else
		ms_jsonw_null(&w);
	ms_jsonw_key(&w, "verdict");
	bad = verdict_json(&w, rep->verdict);
	ms_jsonw_key(&w, "whatif");
	if (rep->has_oom && whatif && !bad)
		bad = whatif_json(&w, whatif, n_whatif, rep->verdict);
	else
		ms_jsonw_null(&w);
	ms_jsonw_key(&w, "top_sites_at_peak");
	if (rep->has_peak) {
		ms_jsonw_arr_begin(&w);
		for (size_t i = 0; i < rep->n_top_sites; i++) {
			ms_jsonw_arr_begin(&w);
			ms_jsonw_u64(&w, rep->top_sites[i].bytes);
			ms_jsonw_u64(&w, rep->top_sites[i].count);
			ms_jsonw_i64(&w, rep->top_sites[i].site);
			ms_jsonw_arr_end(&w);
		}
		ms_jsonw_arr_end(&w);
	} else {
		ms_jsonw_null(&w);
	}
	ms_jsonw_key(&w, "flame_at_peak");
	if (rep->n_flame && rep->flame[0].bytes)
		flame_write(&w, rep, 0, rep->flame[0].bytes / 1000, 0);
	else
		ms_jsonw_null(&w);
	ms_jsonw_key(&w, "sites");
	ms_jsonw_arr_begin(&w);
	for (size_t i = 0; i < rep->n_sites; i++)
		ms_jsonw_cstr(&w, ms_symtab_get_str(&rep->site_labels, (uint32_t)i + 1)->s);
	ms_jsonw_arr_end(&w);
	ms_jsonw_key(&w, "site_stacks");
	ms_jsonw_arr_begin(&w);
	for (size_t i = 0; i < rep->n_sites; i++)
		stack_json(&w, &rep->site_stacks[i]);
	ms_jsonw_arr_end(&w);
	bands_json(&w, rep);
	ms_jsonw_key(&w, "frames");
	frames_json(&w, &rep->frames);
	ms_jsonw_obj_end(&w);
	if (fclose(f) != 0 || !*json || bad) {
		free(*json); /* open_memstream's buffer belongs to libc */
		*json = NULL;
		return MS_ERR_NOMEM;
	}
	return MS_OK;
}

ms_status ms_render_html_data(const struct ms_report *rep, const struct ms_whatif_row *whatif,
                              size_t n_whatif, struct ms_buf *out)
{
	char *json;
	size_t len;
	ms_status s = data_json(rep, whatif, n_whatif, &json, &len);

	if (!s)
		s = ms_buf_append(out, json, len);
	free(json);
	return s;
}

#if MS_HAVE_HTML
extern const unsigned char ms_asset_report_css[], ms_asset_report_js[], ms_asset_report_body[],
        ms_asset_dygraphs_js[], ms_asset_dygraphs_css[];
extern const size_t ms_asset_report_css_len, ms_asset_report_js_len, ms_asset_report_body_len,
        ms_asset_dygraphs_js_len, ms_asset_dygraphs_css_len;

/* Append data to out with "</" written "<\/", so that no string ends the script element. */
static ms_status append_script_safe(struct ms_buf *out, const char *data, size_t len)
{
	size_t from = 0;

	for (size_t i = 0; i + 1 < len; i++)
		if (data[i] == '<' && data[i + 1] == '/') {
			MS_TRY(ms_buf_append(out, data + from, i + 1 - from));
			MS_TRY(ms_buf_append(out, "\\", 1));
			from = i + 1;
		}
	return ms_buf_append(out, data + from, len - from);
}

/* One device's data block: <script id="memsnap-data-N" ...> (the first: "memsnap-data"). */
static ms_status data_block(struct ms_buf *out, const char *json, size_t json_len, uint32_t device,
                            int first)
{
	char id[24];
	ms_status s;

	snprintf(id, sizeof(id), "-%u", device);
	if ((s = ms_buf_printf(out,
	                       "<script id=\"memsnap-data%s\" type=\"application/json\" "
	                       "class=\"memsnap-data\" data-device=\"%u\"%s>",
	                       first ? "" : id, device, first ? " data-first=\"1\"" : "")) ||
	    (s = append_script_safe(out, json, json_len)))
		return s;
	return ms_buf_printf(out, "</script>\n");
}

/* The page: the template, the data blocks (one per device) as JSON, dygraphs and report.js. */
static ms_status write_pages(struct ms_buf *out, const char *source, const struct ms_buf *datas,
                             const uint32_t *devices, size_t n, size_t first)
{
	ms_status s;

	if ((s = ms_buf_printf(out,
	                       "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	                       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
	                       "'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
	                       "img-src data:\">\n<title>memsnap: ")) ||
	    (s = ms_render_escape(out, source)) ||
	    (s = ms_buf_printf(out, "</title>\n<style>\n")) ||
	    (s = ms_buf_append(out, ms_asset_dygraphs_css, ms_asset_dygraphs_css_len)) ||
	    (s = ms_buf_append(out, ms_asset_report_css, ms_asset_report_css_len)) ||
	    (s = ms_buf_printf(out, "</style>\n</head>\n<body>\n")) ||
	    (s = ms_buf_append(out, ms_asset_report_body, ms_asset_report_body_len)))
		return s;
	for (size_t i = 0; i < n; i++)
		if ((s = data_block(out, datas[i].data, datas[i].len, devices[i], i == first)))
			return s;
	if ((s = ms_buf_printf(out, "<script>\n")) ||
	    (s = ms_buf_append(out, ms_asset_dygraphs_js, ms_asset_dygraphs_js_len)) ||
	    (s = ms_buf_printf(out, "\n</script>\n<script>\n")) ||
	    (s = ms_buf_append(out, ms_asset_report_js, ms_asset_report_js_len)) ||
	    (s = ms_buf_printf(out, "</script>\n</body>\n</html>\n")))
		return s;
	return MS_OK;
}
#else
static ms_status write_pages(struct ms_buf *out, const char *source, const struct ms_buf *datas,
                             const uint32_t *devices, size_t n, size_t first)
{
	(void)out;
	(void)source;
	(void)datas;
	(void)devices;
	(void)n;
	(void)first;
	return MS_ERR_UNSUPPORTED; /* built without dygraphs */
}
#endif

ms_status ms_render_html(const struct ms_report *rep, const struct ms_whatif_row *whatif,
                         size_t n_whatif, struct ms_buf *out)
{
	struct ms_buf one = MS_BUF_INIT;
	ms_status s = data_json(rep, whatif, n_whatif, &one.data, &one.len);

	if (!s)
		s = write_pages(out, rep->source, &one, &rep->device, 1, 0);
	free(one.data);
	return s;
}

ms_status ms_render_html_devices(struct ms_buf *out, const char *source, const struct ms_buf *datas,
                                 const uint32_t *devices, size_t n, size_t first)
{
	return write_pages(out, source, datas, devices, n, first);
}
