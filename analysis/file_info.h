/*
 * What a file holds, from one pass over it: its events by action, device and stream, time span,
 * stacks, annotations, end-state segments and private pools (memsnap info).
 */
#ifndef MEMSNAP_ANALYSIS_FILE_INFO_H
#define MEMSNAP_ANALYSIS_FILE_INFO_H

#include <stdint.h>

#include "common/arena.h"
#include "common/event.h"
#include "common/hash.h"
#include "common/symtab.h"
#include "memsnap/memsnap.h"

struct ms_sink;

struct ms_file_info {
	struct ms_meta meta;
	const struct ms_symtab *syms;
	uint64_t n, by_action[MS_ACT_COUNT], with_stack, anns, segs, reserved;
	uint64_t raw_cuda; /* events of raw CUDA calls (the recorder's interposer) */
	uint64_t raw_by_action[MS_ACT_COUNT]; /* of them, by action */
	int64_t t_first, t_last;
	struct ms_u64map streams;
	uint64_t last_stream; /* the stream of the event before (streams holds it) */
	int any_stream;
	uint64_t *stream_list;
	size_t n_streams, cap_streams;
	int oom;
	struct ms_arena arena;
	/* events and segments per device (devices past the array are counted in the last) */
	uint64_t dev_events[64], dev_segs[64], dev_reserved[64];
	uint64_t dev_marks[64]; /* of dev_events, snapshot marks: PyTorch writes them for every
	                           device, so marks alone are no use of it */
	/* private pools (CUDA graphs, MemPools): those seen, by ms_pool_code; the events the
	 * trace puts in one (memsnap's recordings, PyTorch 2.12+), the end-state segments */
	uint8_t pool_seen[65536 / 8];
	uint64_t n_pools, pool_events, pool_segs, pool_reserved;
	/* the marks by name (string ids of syms), in order of first appearance: the windows'
	 * mark:NAME (analysis/window.h) */
	struct ms_file_mark *marks;
	size_t n_marks, cap_marks;
	struct ms_u64map mark_of; /* name id -> index + 1 into marks */
};

/* The annotations of one name: phases' starts and ends, and point marks (steps too). */
struct ms_file_mark {
	uint32_t name;
	uint64_t starts, ends, points;
};

/* The sink that fills x (zeroed by the caller) from a read of the file. */
void ms_file_info_sink(struct ms_file_info *x, struct ms_sink *sink);
void ms_file_info_release(struct ms_file_info *x);

#endif
