/* verify's comparison as verify --json writes it for one device (verify.h). */
#include "json/verify.h"

#include <cjson/cJSON.h>
#include <stdint.h>

#include "common/json.h"
#include "json/replay.h"

cJSON *ms_verify_json(const char *path, uint32_t device, const struct ms_replay_result *r,
                      const struct ms_verify *v, const struct ms_limit_range *lim)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	ms_json_schema(o);
	cJSON_AddStringToObject(o, "trace", path);
	cJSON_AddNumberToObject(o, "device", device);
	cJSON_AddStringToObject(o, "backend", r->backend);
	cJSON_AddBoolToObject(o, "identical", v->identical);
	ms_json_u64(o, v->against_model ? "segment_events_model" : "segment_events_recorded",
	            v->n_ref);
	ms_json_u64(o, "segment_events_replayed", r->n_produced);
	ms_json_u64_known(o, "first_divergence", v->first_divergence != SIZE_MAX,
	                  v->first_divergence);
	ms_json_u64(o, "allocations_pool_unknown", r->allocs_pool_unknown);
	if (!v->against_model && r->misplaced_allocs)
		ms_json_u64(o, "first_misplaced_allocation", r->first_misplaced_index);
	else
		cJSON_AddNullToObject(o, "first_misplaced_allocation");
	ms_json_u64(o, v->against_model ? "peak_reserved_model" : "peak_reserved_recorded",
	            v->ref_peak);
	ms_json_u64(o, "peak_reserved_replayed", (uint64_t)r->stats.reserved_bytes[0].peak);
	ms_json_u64(o, "peak_allocated_replayed", (uint64_t)r->stats.allocated_bytes[0].peak);
	ms_json_u64(o, "peak_requested_replayed", (uint64_t)r->stats.requested_bytes[0].peak);
	ms_json_u64(o, "recorded_ooms", r->recorded_ooms);
	ms_json_u64(o, "reproduced_ooms", r->reproduced_ooms);
	cJSON_AddBoolToObject(o, "ended_by_oom", r->ended_by_oom);
	/* a mid-run trace: what happened before its first event is unknown */
	cJSON_AddBoolToObject(o, "starts_mid_run", r->rebuilt);
	cJSON_AddBoolToObject(o, "trace_cut_short", r->cut_short);
	cJSON_AddStringToObject(o, "device_memory_source",
	                        ms_devmem_source_name(r->device_memory_source));
	ms_json_limit_inferred(o, lim);
	cJSON_AddBoolToObject(o, "peaks_are_lower_bounds", r->rebuilt || r->cut_short);
	if (v->against_model)
		cJSON_AddBoolToObject(o, "end_segments_same", v->end_same);
	return o;
}
