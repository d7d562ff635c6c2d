/*
 * Memory outside PyTorch's caching allocator: the raw CUDA events of a recorded trace (source
 * 1, the recorder's interposer) that are not PyTorch's own cudaMalloc/cuMemMap calls.
 *
 * The interposer sees PyTorch's segment calls too, each just before PyTorch's own
 * segment_alloc/segment_map event (the call returns, then the allocator records it). A raw
 * allocation or mapping waits in a short window; a PyTorch segment event at the same address
 * covering it claims it as PyTorch's. What is not claimed is memory others allocated (NCCL,
 * cuBLAS and cuDNN workspaces, other libraries), counted live until its free or unmap.
 */
#ifndef MEMSNAP_ANALYSIS_OUTSIDE_H
#define MEMSNAP_ANALYSIS_OUTSIDE_H

#include <stdint.h>

#include "common/hash.h"
#include "common/event.h"
#include "memsnap/memsnap.h"

#define MS_EXT_WINDOW 64 /* trace events a raw allocation waits for PyTorch to claim it */

struct ms_outside {
	uint64_t events;     /* raw CUDA events seen */
	uint64_t claimed;    /* of them, PyTorch's own segment calls */
	uint64_t frees;      /* of them, frees and unmaps (PyTorch's own or others') */
	uint64_t cur, peak;  /* bytes outside PyTorch: now, highest */
	uint64_t peak_index; /* the event where the peak was reached */
	/* private */
	struct ms_u64map live; /* address -> bytes, allocations and mappings counted */
	struct {
		uint64_t index, addr, size;
		uint8_t action, claimed;
	} win[MS_EXT_WINDOW];
	unsigned head, n;
};

/* Every event of the trace, in order (index: its number); only segment events count. */
ms_status ms_outside_event(struct ms_outside *x, uint64_t index, const struct ms_event *e);
/* The end of the trace: what still waits is decided. */
ms_status ms_outside_finish(struct ms_outside *x);
void ms_outside_release(struct ms_outside *x);

#endif
