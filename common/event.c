/* Names of the event actions, the calls annotations mark, and pool ids as text. */
#include "common/event.h"

#include <stdio.h>
#include <string.h>

static const char *const action_names[MS_ACT_COUNT] = {
#define XX(name, val, str) [val] = str,
        MS_ACTION_MAP(XX)
#undef XX
};

const char *ms_action_name(unsigned action)
{
	return action < MS_ACT_COUNT ? action_names[action] : NULL;
}

int ms_action_parse(const char *s, size_t n)
{
	int i;

	for (i = 0; i < MS_ACT_COUNT; i++)
		if (strlen(action_names[i]) == n && memcmp(action_names[i], s, n) == 0)
			return i;
	return -1;
}

uint8_t ms_ann_call_of(unsigned kind, const char *name)
{
	uint16_t code;
	uint64_t bytes;

	if (kind != MS_ANN_PHASE || !name)
		return MS_CALL_NONE;
	if (strcmp(name, MS_EMPTY_CACHE_PHASE) == 0)
		return MS_CALL_EMPTY_CACHE;
	if (strcmp(name, MS_GRAPH_CAPTURE_PHASE) == 0)
		return MS_CALL_GRAPH_CAPTURE;
	if (ms_ann_limit_mark(name, &bytes) == 0)
		return MS_CALL_MEMORY_FRACTION;
	if (ms_ann_device_memory_mark(name, &bytes, &bytes) == 0)
		return MS_CALL_DEVICE_MEMORY;
	return ms_ann_pool_mark(name, &code);
}

int ms_ann_limit_mark(const char *name, uint64_t *bytes)
{
	size_t n = sizeof(MS_MEMORY_FRACTION_MARK) - 1;
	unsigned long long v;
	int end = 0;

	if (strncmp(name, MS_MEMORY_FRACTION_MARK, n) != 0 || name[n] < '0' || name[n] > '9' ||
	    sscanf(name + n, "%llu%n", &v, &end) != 1 || name[n + end] != 0)
		return -1;
	*bytes = v;
	return 0;
}

int ms_ann_device_memory_mark(const char *name, uint64_t *free_bytes, uint64_t *total_bytes)
{
	size_t n = sizeof(MS_DEVICE_MEMORY_MARK) - 1;
	unsigned long long f, t;
	int mid = 0, end = 0;

	if (strncmp(name, MS_DEVICE_MEMORY_MARK, n) != 0 || name[n] < '0' || name[n] > '9' ||
	    sscanf(name + n, "%llu%n %llu%n", &f, &mid, &t, &end) != 2 || name[n + mid] != ' ' ||
	    name[n + mid + 1] < '0' || name[n + mid + 1] > '9' || name[n + end] != 0 || f > t)
		return -1;
	*free_bytes = f;
	*total_bytes = t;
	return 0;
}

uint8_t ms_ann_pool_mark(const char *name, uint16_t *code)
{
	static const struct {
		const char *prefix;
		uint8_t call;
	} marks[] = {{MS_MEMPOOL_NO_SPLIT_MARK, MS_CALL_MEMPOOL_NO_SPLIT},
	             {MS_MEMPOOL_USE_ON_OOM_MARK, MS_CALL_MEMPOOL_USE_ON_OOM},
	             {MS_USE_MEM_POOL_PHASE, MS_CALL_USE_MEM_POOL}};
	unsigned long long a, b;
	int end = 0;

	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
		size_t n = strlen(marks[i].prefix);
		if (strncmp(name, marks[i].prefix, n) != 0)
			continue;
		name += n;
		if (sscanf(name, "(%llu, %llu)%n", &a, &b, &end) != 2 || name[end] != 0 ||
		    ms_pool_code(a, b, code) != 0)
			return MS_CALL_NONE;
		return marks[i].call;
	}
	return MS_CALL_NONE;
}

const char *ms_pool_id_text(const uint64_t id[2], char *buf, size_t cap)
{
	snprintf(buf, cap, "(%llu, %llu)", (unsigned long long)id[0], (unsigned long long)id[1]);
	return buf;
}
