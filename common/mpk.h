/*
 * Bounds-checked accessors over msgpack-c objects. A field that is missing
 * (beyond the array) or nil takes the default; a field of the wrong type is
 * reported through *bad so callers can fail with one check per record.
 */
#ifndef MEMSNAP_COMMON_MPK_H
#define MEMSNAP_COMMON_MPK_H

#include <msgpack.h>
#include <stdint.h>
#include <string.h>

static inline const msgpack_object *ms_mpk_field(const msgpack_object *arr, uint32_t i)
{
	if (i >= arr->via.array.size)
		return NULL;
	if (arr->via.array.ptr[i].type == MSGPACK_OBJECT_NIL)
		return NULL;
	return &arr->via.array.ptr[i];
}

static inline uint64_t ms_mpk_u64(const msgpack_object *o, uint64_t def, int *bad)
{
	if (!o)
		return def;
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
		return o->via.u64;
	*bad = 1;
	return def;
}

static inline int64_t ms_mpk_i64(const msgpack_object *o, int64_t def, int *bad)
{
	if (!o)
		return def;
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		return o->via.i64;
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX)
		return (int64_t)o->via.u64;
	*bad = 1;
	return def;
}

static inline double ms_mpk_f64(const msgpack_object *o, double def, int *bad)
{
	if (!o)
		return def;
	if (o->type == MSGPACK_OBJECT_FLOAT64 || o->type == MSGPACK_OBJECT_FLOAT32)
		return o->via.f64;
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
		return (double)o->via.u64;
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		return (double)o->via.i64;
	*bad = 1;
	return def;
}

static inline int ms_mpk_bool(const msgpack_object *o, int def, int *bad)
{
	if (!o)
		return def;
	if (o->type == MSGPACK_OBJECT_BOOLEAN)
		return o->via.boolean;
	*bad = 1;
	return def;
}

/* String or bin bytes; *n gets the length. Missing gives "" */
static inline const char *ms_mpk_str(const msgpack_object *o, uint32_t *n, int *bad)
{
	if (!o) {
		*n = 0;
		return "";
	}
	if (o->type == MSGPACK_OBJECT_STR) {
		*n = o->via.str.size;
		return o->via.str.ptr;
	}
	if (o->type == MSGPACK_OBJECT_BIN) {
		*n = o->via.bin.size;
		return o->via.bin.ptr;
	}
	*bad = 1;
	*n = 0;
	return "";
}

/* The value of key in a map object, or NULL. */
static inline const msgpack_object *ms_mpk_map_get(const msgpack_object *map, const char *key)
{
	size_t kl = strlen(key);

	if (!map || map->type != MSGPACK_OBJECT_MAP)
		return NULL;
	for (uint32_t i = 0; i < map->via.map.size; i++) {
		const msgpack_object *k = &map->via.map.ptr[i].key;
		if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == kl &&
		    memcmp(k->via.str.ptr, key, kl) == 0) {
			const msgpack_object *v = &map->via.map.ptr[i].val;
			return v->type == MSGPACK_OBJECT_NIL ? NULL : v;
		}
	}
	return NULL;
}

#endif
