/* The allocator state before the first event of a trace that starts mid-run. */
#ifndef MEMSNAP_REPLAY_REBUILD_H
#define MEMSNAP_REPLAY_REBUILD_H

#include "parse/trace.h"
#include "replay/model.h"

struct ms_replay_opts;
struct ms_replay_result;

/* A block live before the first event of a trace whose state cannot be rebuilt: the model
 * places it at the start (ms_initial_state.placed). */
struct ms_placed_block {
	uint64_t addr, size, stream;
	uint32_t stack;
};

struct ms_initial_state {
	struct ms_segment *segs;  /* in address order */
	struct ms_block **blocks; /* blocks[i]: segs[i].n_blocks blocks */
	size_t n_segs;
	uint64_t live_blocks;  /* allocated before the first event */
	uint64_t inconsistent; /* events that did not fit the state while undoing them */
	/* instead of segs: the blocks live before the first event, in address order, which the
	 * model allocates before it (the end state cannot be rebuilt, or there is none) */
	struct ms_placed_block *placed;
	size_t n_placed;
	uint64_t placed_bytes;
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

/* What ms_replay_from_rebuilt did. */
enum ms_mid_run {
	MS_MID_RUN_NO = 0,          /* nothing before the first event: the replay stands */
	MS_MID_RUN_REBUILT = 1,     /* replayed again from the rebuilt state */
	MS_MID_RUN_NO_SEGMENTS = 2, /* frees of blocks never allocated, no end state to rebuild */
	MS_MID_RUN_UNSUPPORTED = 3, /* the state cannot be rebuilt (diag says why) */
	/* the end-state segments do not fit the events (init->inconsistent of them did not): the
	 * snapshot's end state is not this trace's, and the replay from empty stands */
	MS_MID_RUN_MISMATCH = 4,
	/* the state cannot be rebuilt (no end-state segments, or they do not fit the events), but
	 * blocks were live before the first event: the end state's blocks the trace did not
	 * allocate and the blocks it frees without allocating them. The model allocated them
	 * before the first event (init->placed) and the trace was replayed again from there. */
	MS_MID_RUN_PLACED = 5,
	/* as PLACED, but they do not fit under the recorded limit or in the device's size from a
	 * recorded OOM (diag says so): the replay from an empty allocator stands */
	MS_MID_RUN_NOT_PLACED = 6,
};

/*
 * r holds a replay of t (device o->device) from an empty allocator. Does t start mid-run? Its
 * end-state segments with every event undone are the state before its first event: empty for
 * a trace recorded from the start of the process, else what was there (history turned on late,
 * a ring buffer that wrapped, frees of blocks or segments it never allocated). Then *init gets
 * that state and r a replay from it (o->init points at init; the caller releases init). The
 * state is rebuilt with the recorded settings' rounding (under which it was made), whatever
 * settings o replays.
 */
ms_status ms_replay_from_rebuilt(const struct ms_trace *t, struct ms_replay_opts *o,
                                 struct ms_initial_state *init, struct ms_replay_result *r,
                                 enum ms_mid_run *what, struct ms_diag *diag);

#endif
