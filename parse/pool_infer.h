/*
 * Which memory pool each event of a loaded trace was served from, where the trace does not say
 * (PyTorch 2.11 and older record no pool per entry): from the end-state segments' pool ids and
 * the recorded addresses (torch-allocator.md §14.7). An allocation lies in a segment of one pool;
 * a segment alive at the end carries its pool's id; so do the events in it. A segment given back
 * before the end leaves no trace of its pool: its events stay MS_POOL_UNKNOWN.
 */
#ifndef MEMSNAP_PARSE_POOL_INFER_H
#define MEMSNAP_PARSE_POOL_INFER_H

#include <stdint.h>

#include "common/status.h"

struct ms_trace;

/* What the inference found, for the notes a command prints. */
struct ms_pool_inference {
	uint64_t events_told;      /* events whose pool came from the end state */
	uint64_t private_allocs;   /* allocations found in a private pool */
	uint64_t unknown_allocs;   /* allocations whose pool cannot be told (in segments freed
	                            * before the end, or in no recorded segment) */
	uint64_t private_segments; /* end-state segments in a private pool */
};

/*
 * Fill the pool of every event of t whose pool is MS_POOL_UNKNOWN and can be told; events that
 * carry their pool are left as they are, and counted in nothing. MS_ERR_NOMEM only.
 */
ms_status ms_trace_infer_pools(struct ms_trace *t, struct ms_pool_inference *out);

#endif
