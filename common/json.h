/*
 * Small helpers for results written as cJSON trees: exact integers (cJSON's numbers are doubles,
 * exact only below 2^53) and figures that were not told (null, never 0).
 */
#ifndef MEMSNAP_COMMON_JSON_H
#define MEMSNAP_COMMON_JSON_H

#include <stdint.h>

struct cJSON;

/* o[key] = v, written as its digits. */
void ms_json_u64(struct cJSON *o, const char *key, uint64_t v);
/* o[key] = v where known, else null: a figure nothing told is never written as 0. */
void ms_json_u64_known(struct cJSON *o, const char *key, int known, uint64_t v);
void ms_json_i64(struct cJSON *o, const char *key, int64_t v);
/*
 * The version of the results' JSON (docs/COMMANDS.md, "JSON"): every result object opens with
 * "schema_version"; it changes when a field is renamed, removed or changes meaning.
 */
#define MS_JSON_SCHEMA_VERSION 1
/* o["schema_version"] = MS_JSON_SCHEMA_VERSION: a result's first key. */
void ms_json_schema(struct cJSON *o);
/* A pool id as o's "id": [first, second]. */
void ms_json_pool_id(struct cJSON *o, const uint64_t id[2]);

#endif
