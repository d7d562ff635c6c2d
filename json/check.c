/* check's gate as JSON (check.h); docs/REPLAY.md names each field. */
#include "json/check.h"

#include <cjson/cJSON.h>

#include "common/json.h"
#include "json/replay.h"
#include "json/window.h"
#include "replay/replay.h"

cJSON *ms_check_json(const char *path, uint32_t device, const struct ms_check_budgets *b,
                     const struct ms_check_figures *f, const struct ms_check_result *res)
{
	cJSON *out = cJSON_CreateObject(), *fails, *gates;

	if (!out)
		return NULL;
	ms_json_schema(out);
	cJSON_AddStringToObject(out, "trace", path);
	cJSON_AddNumberToObject(out, "device", device);
	ms_json_u64(out, "peak_reserved_bytes", f->reserved);
	ms_json_u64(out, "peak_allocated_bytes", f->allocated);
	cJSON_AddNumberToObject(out, "waste_at_peak", f->waste);
	cJSON_AddBoolToObject(out, "starts_mid_run", f->mid_run);
	cJSON_AddBoolToObject(out, "peaks_are_lower_bounds", f->mid_run);
	cJSON_AddStringToObject(out, "device_memory_source", ms_devmem_source_name(f->devsrc));
	ms_json_u64(out, "recorded_ooms", f->recorded_ooms);
	cJSON_AddBoolToObject(out, "oom_allowed", b->allow_oom);
	cJSON_AddBoolToObject(out, "trace_cut_short", f->cut_short);
	cJSON_AddBoolToObject(out, "cut_short_allowed", b->allow_cut_short);
	ms_json_u64_known(out, "growth_per_step_bytes", b->growth_per_step_given && f->growth_steps,
	                  f->growth_per_step);
	if (f->verdict[0])
		cJSON_AddStringToObject(out, "verdict", f->verdict);
	else
		cJSON_AddNullToObject(out, "verdict");
	ms_json_limit_inferred(out, &f->lim);
	/* the figures above are the window's, where there is one */
	ms_window_json_brief(out, f->windowed ? &f->window : NULL);
	fails = cJSON_AddArrayToObject(out, "exceeded");
	for (size_t i = 0; i < res->n_exceeded; i++)
		cJSON_AddItemToArray(fails, cJSON_CreateString(res->exceeded[i]));
	gates = cJSON_AddArrayToObject(out, "gates");
	for (size_t i = 0; i < res->n_gates; i++) {
		cJSON *g = cJSON_CreateObject();
		cJSON_AddStringToObject(g, "name", res->gates[i].name);
		cJSON_AddStringToObject(g, "value", res->gates[i].value);
		cJSON_AddStringToObject(g, "bound", res->gates[i].bound);
		cJSON_AddBoolToObject(g, "passed", res->gates[i].passed);
		cJSON_AddItemToArray(gates, g);
	}
	cJSON_AddBoolToObject(out, "passed", !res->n_exceeded);
	return out;
}
