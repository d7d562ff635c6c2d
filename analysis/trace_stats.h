/*
 * Statistics from a trace alone (no allocator model), computed in one
 * streaming pass through a sink: peak requested bytes (PyTorch's
 * requested_bytes.all.peak), allocations live at the end, the largest
 * allocations, top allocation sites at the peak, and the end-state segments.
 * Memory is bounded by the live set and the number of distinct stacks.
 */
#ifndef MEMSNAP_ANALYSIS_TRACE_STATS_H
#define MEMSNAP_ANALYSIS_TRACE_STATS_H

#include "analysis/window.h"
#include "common/event.h"

struct ms_stats_alloc {
	uint64_t addr, size, stream, index;
	int64_t t_ns;
	uint32_t stack;
	uint16_t device;
};

/* The bytes live at the peak of one compile context (torch.compile's region). */
struct ms_stats_context {
	uint32_t name; /* string id; 0: "N/A", outside compiled regions */
	int before;    /* allocated before the trace: its context not known */
	uint64_t bytes, count;
};

struct ms_stats_site {
	uint32_t stack; /* 0 = allocations without a stack */
	uint64_t bytes, count;
};

/* Per annotation name: what happened while it was the innermost open annotation. */
struct ms_stats_ann {
	uint32_t name;           /* string id */
	uint64_t peak_requested; /* requested bytes live (all devices) at their highest inside it */
	uint64_t allocs, alloc_bytes;
};

/*
 * Memory outside PyTorch on a device as memsnap's recorder measured it: at each of its
 * cudaMemGetInfo marks there (common/event.h), the device's total less its free bytes and
 * PyTorch's reserved bytes then (the trace's segment events so far), as replay takes it. A mark
 * where that comes out below 0 is left out (replay leaves it out too). Between marks it is not
 * measured.
 */
struct ms_stats_outside {
	uint64_t marks;                    /* 0: not measured, the rest unset */
	uint64_t first_bytes, first_index; /* index: the events before the mark */
	uint64_t highest_bytes, highest_index;
	uint64_t last_bytes, last_index;
};

struct ms_stats_device {
	uint64_t peak_requested, peak_index;
	uint64_t events;   /* of PyTorch's allocator, on this device (counted with or without a
	                      filter) */
	uint64_t segments; /* end-state segments on this device (likewise) */
	uint64_t snapshot_marks; /* memory_snapshot() marks here (always counted): not a use */
	/* PyTorch's reserved bytes by the trace's segment events (only the device counted) */
	uint64_t reserved_now;
	/* segment frees and unmaps of more than the trace reserved: segments from before it, so
	   PyTorch's reserved at the marks is not known (the measured figure is then at most) */
	uint64_t reserved_unknown;
	struct ms_stats_outside outside; /* only the device counted */
};

/* The end state of one memory pool (torch-allocator.md §14): the default or a private one. */
struct ms_stats_pool {
	uint64_t id[2]; /* segment_pool_id; (0, 0) the default pools */
	uint64_t segments, reserved, allocated;
};

/* A private pool's requested bytes over the trace, where its events name their pool. */
struct ms_stats_pool_requested {
	uint16_t code; /* ms_pool_code() of its id (common/event.h) */
	uint64_t current, peak, peak_index;
};

struct ms_trace_stats {
	uint64_t n_events, n_allocs;
	/* requested bytes: + at alloc, - at free_completed, summed over devices */
	uint64_t peak_requested, peak_index;
	int64_t peak_t_ns;
	uint32_t peak_annotation; /* string id of the innermost open annotation, 0 none */
	uint64_t end_requested;
	struct ms_stats_device *devices; /* per device, n_devices entries (events or segments) */
	uint32_t n_devices;
	int64_t device; /* the device the figures are about (ms_stats_builder_only), or -1: all */
	uint64_t live_count, live_bytes; /* allocated and never freed */
	uint64_t pending_count;          /* free requested, not completed */
	struct ms_stats_alloc *live_top, *largest;
	size_t n_live_top, n_largest;
	struct ms_stats_site *sites; /* every stack live at the peak, by bytes, largest first */
	size_t n_sites;
	/* the peak by compile context, most bytes first; none where no allocation of the trace was
	 * made in a compiled region */
	struct ms_stats_context *contexts;
	size_t n_contexts;
	uint64_t unmatched_frees; /* frees of addresses never allocated in the trace */
	uint64_t recorded_ooms,
	        first_oom_index; /* the trace's oom entries, and the first's event */
	/* end-state blocks allocated and never allocated in the trace: live before its first
	 * event and throughout (with unmatched frees: the trace starts mid-run) */
	uint64_t pre_trace_blocks, pre_trace_requested;
	/* requested bytes of blocks from before the trace that it frees (unmatched frees) */
	uint64_t pre_freed_requested;
	/* of the unmatched frees, those whose free_requested came before the trace: blocks the
	   program had freed already, active (pending free, waiting for their stream's work) at
	   its first event; the rest were allocated then */
	uint64_t pre_pending_frees;
	/* a trace that starts mid-run: its peak of requested bytes counting the blocks from
	   before it while they lived (a lower bound of the job's), at this event */
	uint64_t mid_peak_requested, mid_peak_index;
	int64_t mid_peak_t_ns;
	uint32_t mid_peak_annotation;
	struct ms_stats_ann *anns; /* by name, in order of first appearance */
	size_t n_anns;
	/* memory outside PyTorch's allocator: raw CUDA calls not PyTorch's own (external.h) */
	uint64_t raw_events, raw_claimed; /* raw CUDA events; of them PyTorch's own segment calls */
	uint64_t raw_frees;               /* of them, frees and unmaps */
	uint64_t external_peak, external_peak_index, external_end;
	/* end state (segments) */
	int has_segments;
	/* the end state's allocated blocks by stack (their frames), by bytes, largest first:
	 * what holds the memory when there is no trace */
	struct ms_stats_site *block_sites;
	size_t n_block_sites;
	uint64_t n_segments, reserved, allocated, active, requested, internal, external_free,
	        largest_free, pending_free_bytes, n_expandable;
	/* requested bytes in each private pool the events name (a recording, PyTorch 2.12), in
	 * order of first appearance; the default pools' are the rest */
	struct ms_stats_pool_requested *pools_requested;
	size_t n_pools_requested, cap_pools_requested;
	/* the end state by pool: the default pools first, then the others as they come */
	struct ms_stats_pool *pools;
	size_t n_pools, cap_pools;
	/*
	 * The windows asked (ms_stats_builder_windows): requested bytes as the trace's events give
	 * them, with the blocks from before a mid-run trace (as mid_peak_requested counts them);
	 * allocated_* mirror requested_* (the trace holds no blocks' rounding). Reserved bytes come
	 * from the segment events, placed against the end state where the file has one;
	 * windows_reserved_known is 0 where they cannot be (a mid-run trace without an end state,
	 * a segment freed that the trace never made), and the reserved figures are then not set.
	 */
	int windows_asked, windows_reserved_known;
	uint64_t window_events; /* the events of every device, as the windows number them */
	struct ms_window_figures *windows;
	size_t n_windows;
	char window_marks_seen[256];
};

struct ms_stats_builder;

/* top_n: length of the top lists (live_top, largest, sites). */
ms_status ms_stats_builder_new(size_t top_n, struct ms_stats_builder **out);
void ms_stats_builder_sink(struct ms_stats_builder *b, struct ms_sink *sink);
/*
 * Count only device dev's events and segments (before the read): events of other devices keep
 * their place in the numbering and are counted in devices[], nothing else. Devices are never
 * added together: a trace with several devices is read once per device.
 */
void ms_stats_builder_only(struct ms_stats_builder *b, uint32_t dev);
/* Measure the windows a asks for (analysis/window.h; a outlives the read): result.windows. */
void ms_stats_builder_windows(struct ms_stats_builder *b, const struct ms_windows_asked *a);
/* The result, owned by b (valid until ms_stats_builder_free). Call after the read. */
const struct ms_trace_stats *ms_stats_builder_result(struct ms_stats_builder *b);
void ms_stats_builder_free(struct ms_stats_builder *b);

#endif
