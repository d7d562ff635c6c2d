/* The allocator state before the first event of a trace that starts mid-run. */
#ifndef MEMSNAP_REPLAY_REBUILD_H
#define MEMSNAP_REPLAY_REBUILD_H

#include "parse/trace.h"
#include "replay/model.h"

struct ms_initial_state {
	struct ms_segment *segs;  /* in address order */
	struct ms_block **blocks; /* blocks[i]: segs[i].n_blocks blocks */
	size_t n_segs;
	uint64_t live_blocks;  /* allocated before the first event */
	uint64_t inconsistent; /* events that did not fit the state while undoing them */
};

/*
 * Undo t's events of device, last to first, starting from its end-state segments. m gives the
 * rounding of block sizes that no recorded alloc tells. Caller releases out.
 * @return MS_OK, MS_ERR_UNSUPPORTED (expandable segments), MS_ERR_NOMEM
 */
ms_status ms_rebuild_initial_state(const struct ms_trace *t, uint32_t device,
                                   const struct ms_model *m, struct ms_initial_state *out,
                                   struct ms_diag *diag);
void ms_initial_state_release(struct ms_initial_state *st);

#endif
