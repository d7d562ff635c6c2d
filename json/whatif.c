/* whatif's report as JSON (whatif.h); docs/REPLAY.md names each field. */
#include "json/whatif.h"

#include <cjson/cJSON.h>

#include "common/json.h"
#include "json/replay.h"
#include "json/verdict.h"

cJSON *ms_whatif_row_json(const struct ms_whatif_row *j, const struct ms_survival *sv)
{
	cJSON *o = cJSON_CreateObject();
	const struct ms_replay_result *r = &j->r;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "alloc_conf", j->conf ? j->conf : r->alloc_conf);
	cJSON_AddBoolToObject(o, "recorded", !j->conf);
	if (j->s) {
		cJSON_AddStringToObject(o, "error", j->err);
		return o;
	}
	ms_json_u64(o, "peak_reserved_bytes", (uint64_t)r->stats.reserved_bytes[0].peak);
	ms_json_u64(o, "peak_allocated_bytes", (uint64_t)r->stats.allocated_bytes[0].peak);
	ms_json_u64(o, "waste_at_peak_bytes",
	            (uint64_t)r->stats.reserved_bytes[0].peak - r->allocated_at_peak_reserved);
	ms_json_i64(o, "rounding_at_peak_bytes",
	            (int64_t)r->allocated_at_peak_reserved -
	                    (int64_t)r->requested_at_peak_reserved);
	ms_json_u64(o, "num_alloc_retries", r->stats.num_alloc_retries);
	/* PyTorch's segment.all.peak: no segments under expandable segments */
	ms_json_u64(o, "peak_segments", (uint64_t)r->stats.segment[0].peak);
	ms_json_u64_known(o, "first_oom_index", r->has_oom, r->first_oom.index);
	ms_json_u64_known(o, "min_memory_bytes", j->min_memory != 0, j->min_memory);
	cJSON_AddBoolToObject(o, "graph_capture_record_stream_reuse_as_recorded",
	                      ms_replay_reuse_as_recorded(r));
	ms_json_u64(o, "served_recorded_ooms_then_went_on", r->missed_ooms_went_on);
	/* whether the job would have survived: avoids_oom alone is the replay getting past every
	   recorded request, not the job finishing */
	cJSON_AddBoolToObject(o, "avoids_oom", !r->has_oom);
	ms_verdict_json_survival(o, sv);
	return o;
}

cJSON *ms_whatif_report_json(const struct ms_whatif_report *r, const char *path)
{
	cJSON *root = cJSON_CreateObject(), *a;

	if (!root)
		return NULL;
	ms_json_schema(root);
	cJSON_AddStringToObject(root, "trace", path);
	/* the one line explain opens with (explain/verdict.h) */
	cJSON_AddStringToObject(root, "verdict", r->v.headline);
	cJSON_AddNumberToObject(root, "device", r->device);
	ms_json_u64(root, "limit_bytes", r->limit);
	ms_json_limit_inferred(root, &r->lim);
	cJSON_AddStringToObject(root, "device_memory_source",
	                        ms_devmem_source_name(r->device_memory_source));
	cJSON_AddBoolToObject(root, "starts_mid_run", r->mid_run);
	cJSON_AddBoolToObject(root, "trace_cut_short", r->cut_short);
	/* a trace that starts mid-run or is cut short: the job's peaks may have been higher */
	cJSON_AddBoolToObject(root, "peaks_are_lower_bounds", r->mid_run || r->cut_short);
	ms_json_u64_known(root, "device_memory_bytes", r->device_memory != UINT64_MAX,
	                  r->device_memory);
	a = cJSON_AddArrayToObject(root, "settings");
	for (size_t k = 0; k < r->n_rows; k++)
		cJSON_AddItemToArray(a, ms_whatif_row_json(&r->rows[k], &r->v.sv[k]));
	return root;
}
