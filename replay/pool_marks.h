/*
 * What the recorder's pool marks (common/event.h) tell a replay: which MemPools were made with
 * no_split=True or use_on_oom=True, and which use_mem_pool scopes are open. An allocation the
 * trace puts in a use_on_oom pool while no use_mem_pool of that pool is open was not routed
 * there: the allocator's fallback chose the pool (torch-allocator.md §14.6), and a replay asks it
 * of the default pool, so that the model (or PyTorch's allocator) makes that choice again. Both
 * the model's replay and the torch backend route through here.
 */
#ifndef MEMSNAP_REPLAY_POOL_MARKS_H
#define MEMSNAP_REPLAY_POOL_MARKS_H

#include <stddef.h>
#include <stdint.h>

#include "common/event.h"
#include "common/status.h"

struct ms_pool_marks {
	struct ms_pool_mark {
		uint16_t code;
		uint8_t use_on_oom;
		uint32_t open; /* use_mem_pool scopes of it open now */
	} * pools;
	size_t n, cap;
	uint32_t open;     /* use_mem_pool scopes and captures underway now */
	uint32_t captures; /* of them, CUDA graph captures */
};

/* Is call (enum ms_ann_call) one that ms_pool_marks_take follows? */
static inline int ms_pool_marks_follows(uint8_t call)
{
	return call == MS_CALL_MEMPOOL_NO_SPLIT || call == MS_CALL_MEMPOOL_USE_ON_OOM ||
	       call == MS_CALL_USE_MEM_POOL || call == MS_CALL_GRAPH_CAPTURE;
}

/*
 * Take annotation a, whose name is name: *call gets the pool mark it is (MS_CALL_NONE where
 * none) and *code its pool (none for a capture's phase). MS_OK or MS_ERR_NOMEM.
 */
ms_status ms_pool_marks_take(struct ms_pool_marks *pm, const struct ms_annotation *a,
                             const char *name, uint8_t *call, uint16_t *code);
/* The pool an allocation the trace records in `pool` is asked of: `pool` itself, or the default
 * pool where `pool` is a use_on_oom MemPool with no use_mem_pool of it open. */
uint16_t ms_pool_marks_route(const struct ms_pool_marks *pm, uint16_t pool);
void ms_pool_marks_release(struct ms_pool_marks *pm);

#endif
