/* Exact integers and untold figures in cJSON trees (json.h). */
#include "common/json.h"

#include <cjson/cJSON.h>
#include <stdio.h>

void ms_json_u64(struct cJSON *o, const char *key, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	cJSON_AddRawToObject(o, key, buf);
}

void ms_json_u64_known(struct cJSON *o, const char *key, int known, uint64_t v)
{
	if (known)
		ms_json_u64(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

void ms_json_pool_id(struct cJSON *o, const uint64_t id[2])
{
	cJSON *a = cJSON_AddArrayToObject(o, "id");

	for (int i = 0; i < 2; i++) {
		char buf[24];
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)id[i]);
		cJSON_AddItemToArray(a, cJSON_CreateRaw(buf));
	}
}

void ms_json_i64(struct cJSON *o, const char *key, int64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%lld", (long long)v);
	cJSON_AddRawToObject(o, key, buf);
}

void ms_json_schema(struct cJSON *o)
{
	cJSON_AddNumberToObject(o, "schema_version", MS_JSON_SCHEMA_VERSION);
}
