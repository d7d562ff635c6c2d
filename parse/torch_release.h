/*
 * Which PyTorch release wrote a snapshot, as far as its layout tells (docs/snapshot-versions.md,
 * "Telling the release from a snapshot"): each field narrows a range of releases; some releases
 * cannot be told apart, and a file whose fields contradict each other was made by another tool.
 */
#ifndef MEMSNAP_PARSE_TORCH_RELEASE_H
#define MEMSNAP_PARSE_TORCH_RELEASE_H

#include <stddef.h>

/* What a snapshot holds, field by field (1: seen; for entries, in any entry). */
struct ms_snapshot_layout {
	unsigned bare_list : 1;         /* the top level is a list of segments */
	unsigned npu : 1;               /* segment_pool_id before segment_type: torch_npu */
	unsigned has_blocks : 1;        /* any block at all (the block checks need one) */
	unsigned block_history : 1;     /* blocks with 'history' and no 'address' (2.0) */
	unsigned has_entries : 1;       /* any trace entry (the entry checks need one) */
	unsigned time_us : 1;           /* 2.2 */
	unsigned settings : 1;          /* allocator_settings, 2.3 */
	unsigned annotations : 1;       /* external_annotations, 2.5 */
	unsigned user_defined : 1;      /* entries of 2024's nightly builds */
	unsigned compile_context : 1;   /* 2.8 */
	unsigned graph_reuse : 1;       /* graph_capture_record_stream_reuse setting, 2.9 */
	unsigned user_metadata : 1;     /* 2.10 */
	unsigned pool_id : 1;           /* on entries, 2.12 */
	unsigned host : 1;              /* host_segments / host_traces, 2.14 */
	unsigned annotate : 1;          /* annotate entries, 2.14 */
	unsigned internal_metadata : 1; /* 2.15 */
};

/*
 * The releases l fits, into buf: "2.10 or 2.11", "2.12 or later", "2.0", "torch_npu (Ascend)",
 * or "no PyTorch release (its fields contradict each other)". Returns buf.
 */
const char *ms_snapshot_torch_range(const struct ms_snapshot_layout *l, char *buf, size_t cap);

#endif
