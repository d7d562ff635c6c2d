/* The recorder's pool marks, as a replay follows them (see pool_marks.h). */
#include "replay/pool_marks.h"

#include <string.h>

#include "common/alloc.h"

static struct ms_pool_mark *find(const struct ms_pool_marks *pm, uint16_t code)
{
	for (size_t i = 0; i < pm->n; i++)
		if (pm->pools[i].code == code)
			return &pm->pools[i];
	return NULL;
}

/* A phase's start or end: *n (its kind's) and the total open move together, never below 0. */
static void open_close(struct ms_pool_marks *pm, uint32_t *n, uint8_t stage)
{
	if (stage == MS_ANN_START) {
		++*n;
		pm->open++;
	} else if (stage == MS_ANN_END && *n) {
		--*n;
		pm->open--;
	}
}

ms_status ms_pool_marks_take(struct ms_pool_marks *pm, const struct ms_annotation *a,
                             const char *name, uint8_t *call, uint16_t *code)
{
	struct ms_pool_mark *p;

	*code = MS_POOL_DEFAULT;
	if (a->call == MS_CALL_GRAPH_CAPTURE) {
		*call = MS_CALL_GRAPH_CAPTURE;
		open_close(pm, &pm->captures, a->stage);
		return MS_OK;
	}
	*call = a->call == MS_CALL_MEMPOOL_NO_SPLIT || a->call == MS_CALL_MEMPOOL_USE_ON_OOM ||
	                        a->call == MS_CALL_USE_MEM_POOL
	                ? ms_ann_pool_mark(name, code)
	                : MS_CALL_NONE;
	if (*call != MS_CALL_MEMPOOL_USE_ON_OOM && *call != MS_CALL_USE_MEM_POOL)
		return MS_OK;
	if (!(p = find(pm, *code))) {
		if (ms_grow(&pm->pools, &pm->cap, pm->n + 1, sizeof(*pm->pools)))
			return MS_ERR_NOMEM;
		p = &pm->pools[pm->n++];
		memset(p, 0, sizeof(*p));
		p->code = *code;
	}
	if (*call == MS_CALL_MEMPOOL_USE_ON_OOM)
		p->use_on_oom = 1;
	else
		open_close(pm, &p->open, a->stage);
	return MS_OK;
}

uint16_t ms_pool_marks_route(const struct ms_pool_marks *pm, uint16_t pool)
{
	const struct ms_pool_mark *p;

	if (pool == MS_POOL_DEFAULT || pool == MS_POOL_UNKNOWN || !(p = find(pm, pool)))
		return pool;
	return p->use_on_oom && !p->open ? MS_POOL_DEFAULT : pool;
}

void ms_pool_marks_release(struct ms_pool_marks *pm)
{
	ms_free(pm->pools);
	memset(pm, 0, sizeof(*pm));
}
