/* The verdict's JSON (verdict.h). */
#include "json/verdict.h"

#include <cjson/cJSON.h>

#include "common/json.h"

void ms_verdict_json_oom_cause(cJSON *o, const struct ms_oom_verdict *v)
{
	cJSON *a;
	if (v->cause)
		cJSON_AddStringToObject(o, "cause", ms_oom_cause_name(v->cause));
	else
		cJSON_AddNullToObject(o, "cause");
	if (v->cause)
		cJSON_AddNullToObject(o, "undecided_because");
	else
		cJSON_AddStringToObject(o, "undecided_because", v->undecided_because);
	a = cJSON_AddArrayToObject(o, "causes");
	for (size_t k = 0; k < v->n_causes; k++) {
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "cause", ms_oom_cause_name(v->causes[k].cause));
		ms_json_u64(c, "bytes", v->causes[k].bytes);
		cJSON_AddItemToArray(a, c);
	}
	cJSON_AddBoolToObject(o, "demand_projected", v->demand_projected);
	cJSON_AddBoolToObject(o, "device_full", v->device_full);
	ms_json_u64_known(o, "device_free_bytes", v->device_full, v->device_free);
	/* one figure at the OOM, assumed constant: never a timeline made up */
	ms_json_u64_known(o, "outside_pytorch_bytes", v->outside_known, v->outside_bytes);
}

void ms_verdict_json_survival(cJSON *o, const struct ms_survival *sv)
{
	if (!sv) {
		cJSON_AddNullToObject(o, "survives");
		cJSON_AddNullToObject(o, "survives_why");
		cJSON_AddNullToObject(o, "margin_bytes");
		return;
	}
	cJSON_AddStringToObject(o, "survives", ms_survives_name(sv->survives));
	cJSON_AddStringToObject(o, "survives_why", sv->why);
	ms_json_u64_known(o, "margin_bytes", sv->margin_known, sv->margin);
}

cJSON *ms_verdict_json(const struct ms_verdict *v)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "headline", v->headline);
	if (v->has_oom)
		ms_verdict_json_oom_cause(cJSON_AddObjectToObject(o, "oom"), &v->oom);
	else
		cJSON_AddNullToObject(o, "oom");
	return o;
}
