/* diff's result as JSON (diff.h). */
#include "json/diff.h"

#include <cjson/cJSON.h>

#include "common/json.h"
#include "json/site.h"

/* o[key] = {"a": .., "b": ..}, each null where its run does not tell it */
static void pair(cJSON *o, const char *key, const int told[2], const uint64_t v[2])
{
	cJSON *c = cJSON_AddObjectToObject(o, key);
	ms_json_u64_known(c, "a", told[0], v[0]);
	ms_json_u64_known(c, "b", told[1], v[1]);
}

static void ran_with(cJSON *out, const struct ms_diff *d)
{
	cJSON *o = cJSON_AddObjectToObject(out, "ran_with_differs");

	for (unsigned k = 0; k < MS_DIFF_RAN_WITH_COUNT; k++) {
		const struct ms_diff_setting *w = &d->ran_with[k];
		cJSON *c = cJSON_AddObjectToObject(o, w->key);
		if (w->differs < 0)
			cJSON_AddNullToObject(c, "differs");
		else
			cJSON_AddBoolToObject(c, "differs", w->differs);
		cJSON_AddStringToObject(c, "a", w->a);
		cJSON_AddStringToObject(c, "b", w->b);
	}
}

static void peaks(cJSON *out, const struct ms_diff *d)
{
	static const char *const keys[] = {"peak_reserved_bytes", "peak_allocated_bytes",
	                                   "peak_requested_bytes"};
	static const int told[2] = {1, 1};
	cJSON *o = cJSON_AddObjectToObject(out, "peaks");

	for (int i = 0; i < 3; i++) {
		uint64_t v[2];
		for (int w = 0; w < 2; w++) {
			const struct ms_model_stats *st = &d->s[w].r.stats;
			v[w] = (uint64_t)(i == 0   ? st->reserved_bytes[0].peak
			                  : i == 1 ? st->allocated_bytes[0].peak
			                           : st->requested_bytes[0].peak);
		}
		pair(o, keys[i], told, v);
	}
}

static void categories(cJSON *out, const struct ms_diff *d)
{
	cJSON *o;
	size_t nu = ms_user_cats_count(d->user_cats);

	if (nu) { /* the user's, by name: a and b */
		cJSON *u = cJSON_AddArrayToObject(out, "user_categories");
		for (size_t k = 0; k < nu; k++) {
			cJSON *c = cJSON_CreateObject();
			int told[2] = {1, 1};
			cJSON_AddStringToObject(c, "name", ms_user_cats_name(d->user_cats, k));
			cJSON_AddStringToObject(c, "pattern",
			                        ms_user_cats_pattern(d->user_cats, k));
			pair(c, "bytes", told, d->user[k]);
			cJSON_AddItemToArray(u, c);
		}
	} else {
		cJSON_AddNullToObject(out, "user_categories");
	}
	o = cJSON_AddObjectToObject(out, "categories");

	for (unsigned o2 = 0; o2 < MS_CAT_COUNT; o2++) {
		unsigned k = ms_explain_cat_order[o2];
		int told[2] = {d->told[k][0], d->told[k][1]};
		pair(o, ms_explain_cat_name(k), told, d->cat[k]);
	}
	for (int k = 0; k < 2; k++) {
		const int64_t *v = k ? d->cached_free : d->rounding;
		cJSON *c = cJSON_AddObjectToObject(o, k ? "cached_free" : "rounding");
		ms_json_i64(c, "a", v[0]);
		ms_json_i64(c, "b", v[1]);
	}
}

/* Each peak by compile context: null where neither run records any; a run's null where it
 * records none. */
static void contexts(cJSON *out, const struct ms_diff *d)
{
	cJSON *arr;

	if (!d->n_contexts) {
		cJSON_AddNullToObject(out, "compile_contexts");
		return;
	}
	arr = cJSON_AddArrayToObject(out, "compile_contexts");
	for (size_t i = 0; i < d->n_contexts; i++) {
		const struct ms_diff_row *r = &d->contexts[i];
		cJSON *o = cJSON_CreateObject();
		int told[2] = {r->in[0], r->in[1]};
		uint64_t v[2] = {r->a, r->b};
		cJSON_AddStringToObject(o, "context", r->name);
		pair(o, "bytes", told, v);
		cJSON_AddItemToArray(arr, o);
	}
}

static void steps(cJSON *out, const struct ms_diff *d)
{
	cJSON *arr = cJSON_AddArrayToObject(out, "steps");

	for (size_t i = 0; i < d->n_steps; i++) {
		const struct ms_diff_step *st = &d->steps[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "step", (double)st->step);
		ms_json_u64_known(o, "a_bytes", st->in[0], st->bytes[0]);
		ms_json_u64_known(o, "b_bytes", st->in[1], st->bytes[1]);
		cJSON_AddItemToArray(arr, o);
	}
}

static void table(cJSON *out, const char *key, const struct ms_diff_row *rows, size_t n, size_t top,
                  uint32_t frames)
{
	cJSON *arr = cJSON_AddArrayToObject(out, key);

	for (size_t i = 0; i < n && i < top; i++) {
		cJSON *o;
		if (!rows[i].a && !rows[i].b)
			continue; /* nothing in either run (an annotation with no allocation in it)
			           */
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", rows[i].name);
		ms_json_u64_known(o, "a_bytes", rows[i].in[0], rows[i].a);
		ms_json_u64_known(o, "b_bytes", rows[i].in[1], rows[i].b);
		if (rows[i].y)
			ms_site_json_frames(o, rows[i].y, rows[i].stack, frames);
		cJSON_AddItemToArray(arr, o);
	}
}

cJSON *ms_diff_json(const struct ms_diff *d, size_t top, uint32_t frames)
{
	cJSON *out = cJSON_CreateObject();

	if (!out)
		return NULL;
	ms_json_schema(out);
	cJSON_AddStringToObject(out, "a", d->s[0].path);
	cJSON_AddNumberToObject(out, "a_device", d->s[0].device);
	cJSON_AddStringToObject(out, "b", d->s[1].path);
	cJSON_AddNumberToObject(out, "b_device", d->s[1].device);
	cJSON_AddBoolToObject(out, "a_starts_mid_run", d->s[0].r.rebuilt);
	cJSON_AddBoolToObject(out, "b_starts_mid_run", d->s[1].r.rebuilt);
	cJSON_AddBoolToObject(out, "a_cut_short", d->s[0].cut_short);
	cJSON_AddBoolToObject(out, "b_cut_short", d->s[1].cut_short);
	ran_with(out, d);
	peaks(out, d);
	/* the moment compared (--at), or null: the peaks */
	if (d->at) {
		cJSON *m = cJSON_AddObjectToObject(out, "at");
		ms_json_u64(m, "a_event", d->at_event[0]);
		ms_json_u64(m, "b_event", d->at_event[1]);
	} else {
		cJSON_AddNullToObject(out, "at");
	}
	categories(out, d);
	contexts(out, d);
	steps(out, d);
	table(out, "sites", d->sites, d->n_sites, top, frames);
	table(out, "annotations", d->anns, d->n_anns, top, frames);
	return out;
}
