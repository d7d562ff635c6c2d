/*
 * Replaying a trace against the allocator model: allocs become mallocs on their stream, frees
 * are applied as recorded, recorded segment frees the model does not make itself are the
 * program's empty_cache(), and recorded OOMs are replayed as allocation attempts.
 */
#ifndef MEMSNAP_REPLAY_REPLAY_H
#define MEMSNAP_REPLAY_REPLAY_H

#include "common/buf.h"
#include "format/trace_read.h"
#include "replay/rebuild.h"
#include "replay/model.h"
#include "analysis/window.h"

struct ms_replay_opts {
	const char *alloc_conf; /* NULL: the settings the trace recorded */
	uint64_t device_memory; /* 0: the trace's device total, else from its OOM entry, else
	                           unbounded */
	uint64_t limit;         /* 0: the one the trace records or marks, if any (or fraction) */
	double fraction;        /* > 0: limit = fraction x device memory */
	uint32_t device;        /* the device whose events are replayed */
	int limit_given;        /* limit is the user's: refused above the device's memory */
	/* limit 0 means none: not the limit the trace recorded or marked (a search's own runs) */
	int no_recorded_limit;
	int device_memory_from_oom; /* device_memory was inferred from the recorded OOM */
	/*
	 * Bytes held outside PyTorch that the trace's raw CUDA events do not show (the CUDA
	 * context, other libraries and processes), taken at the recorded OOM and assumed constant
	 * over the whole run: the model's device is its size less these and less what the raw
	 * events hold at each moment. Only where the device's size is known (recorded or given).
	 */
	uint64_t outside_unseen;
	/* only the limit binds: no device size, and a recorded OOM's free bytes bound nothing (the
	 * least-memory search); device_memory and outside_unseen are not read */
	int limit_only;
	int no_hints;       /* do not reuse the recorded segment addresses */
	int no_segment_log; /* leave result.produced and .recorded empty (they grow with the
	                       trace; only verify and replay --json read them) */
	int reserved_log;   /* keep result.reserved_log (explain's steps, check's timeline) */
	/* the state before the first event (mid-run traces: rebuild.h), or NULL */
	const struct ms_initial_state *init;
	/*
	 * Private pools (codes, common/event.h ms_pool_code) to take as MemPools made with
	 * no_split=True or with use_on_oom=True from the start, where the trace cannot say (a
	 * snapshot): the user's word, as the recorder's marks are (§14.6). A use_on_oom pool given
	 * here serves the default pool's requests; the allocations the trace puts in it stay there.
	 */
	const uint16_t *no_split_pools, *use_on_oom_pools;
	size_t n_no_split_pools, n_use_on_oom_pools;
	/* windows to measure (window.h): result.windows; NULL: none */
	const struct ms_windows_asked *windows;
	/*
	 * Capture the segments and blocks (result.snap) after trace event snap_index has been
	 * replayed, and stop there; at the first OOM instead if the replay fails earlier (or
	 * snap_at_oom asks for it), at the end if the trace is shorter.
	 */
	int snap;
	uint64_t snap_index;
	int snap_at_oom;
	/*
	 * Or, without stopping: the state after each of these events (ascending), into
	 * result.snaps. Segment frees recorded at such an event are not applied early (that could
	 * change how the next malloc is read), so a state may still show them.
	 */
	const uint64_t *more_snaps;
	size_t n_more_snaps;
	/* Called after each replayed event of the device with the statistics then, or NULL. */
	void (*on_event)(void *ctx, uint64_t index, const struct ms_event *e,
	                 const struct ms_model *m);
	/*
	 * Called as an allocation the trace made stops being allocated (its free_requested, or a
	 * free_completed with none before it), index that event, and at the end of the replay for
	 * each one still allocated (index UINT64_MAX): the event that made it, its stack, its
	 * recorded address and its requested bytes. Not for blocks from before the trace (a
	 * rebuilt state). NULL: not called.
	 */
	void (*on_release)(void *ctx, uint64_t index, uint64_t alloc_index, uint32_t stack,
	                   uint64_t addr, uint64_t size);
	/*
	 * At the end of each event where allocated bytes first reach a new high (the peak so far),
	 * peak_gate(peak_gate_ctx, index) says whether that will stay the run's peak: 1 takes the
	 * state there, as more_snaps would, into result.peak_snap (a later one replaces it), 0
	 * not. It may wait (for another replay of the same trace that is ahead of this one).
	 */
	int (*peak_gate)(void *ctx, uint64_t index);
	void *peak_gate_ctx;
	/* Called with each annotation of the trace, in order, or NULL. */
	ms_status (*on_annotation)(void *ctx, const struct ms_annotation *a);
	void *ctx;
	/*
	 * ms_replay_run only: intern the file's strings and stacks here (initialised by the
	 * caller, who keeps them after the replay) instead of in a table of its own.
	 */
	struct ms_symtab *syms;
	/* a real device under the model (replay --backend cuda), or NULL: the simulated one */
	const struct ms_model_device *dev;
};

/* The allocator's state at one moment, as a snapshot shows it (ms_model_snapshot). */
struct ms_replay_snap {
	int taken;
	uint64_t index; /* the last trace event replayed */
	int at_oom;     /* taken at the first OOM: result.first_oom holds the failed request */
	struct ms_model_stats stats;
	struct ms_segment *segs;
	size_t n_segs;
	struct ms_block *blocks;
	size_t n_blocks;
};

struct ms_seg_event {
	uint64_t index; /* the trace event that caused (or recorded) it */
	uint64_t addr, size;
	uint8_t action;
};

/* The model's reserved bytes after a trace event that changed them. */
struct ms_reserved_point {
	uint64_t index, reserved;
};

/* Append one to *arr (n entries, room for cap); *err = MS_ERR_NOMEM when it cannot. */
void ms_seg_events_push(struct ms_seg_event **arr, size_t *n, size_t *cap, uint64_t index,
                        unsigned action, uint64_t addr, uint64_t size, ms_status *err);

/* A live allocation at the OOM: who holds the memory. */
/* A block's allocating event where the block comes from the state before the trace. */
#define MS_REPLAY_BEFORE_TRACE UINT64_MAX

struct ms_replay_holder {
	uint64_t size, index; /* block bytes; the trace event that allocated it (or
	                         MS_REPLAY_BEFORE_TRACE) */
	char site[160];       /* where: its stack's site (replay/site.h), if recorded */
	uint32_t stack;       /* its stack in ms_replay_result.holder_syms, 0 if none */
};

#define MS_OOM_HOLES   5
#define MS_OOM_HOLDERS 10

struct ms_replay_oom {
	uint64_t index; /* trace event */
	int recorded;   /* the trace recorded an OOM there too */
	struct ms_model_oom o;
	struct ms_model_stats stats; /* at the OOM */
	/* the largest free blocks of the pool and stream the request failed in, with neighbours */
	struct ms_model_hole holes[MS_OOM_HOLES];
	size_t n_holes;
	/* the largest live allocations */
	struct ms_replay_holder holders[MS_OOM_HOLDERS];
	size_t n_holders;
};

/* A segment at the end of a replay, as a backend's snapshot gives it (--backend torch). */
struct ms_end_segment {
	uint64_t total_size, allocated_size, active_size;
	uint32_t n_blocks, n_allocated;
	uint8_t small, expandable;
};

/*
 * The simulated device's memory: unknown (unbounded), as the trace recorded it, as given
 * (--device-memory), or inferred from a recorded OOM: PyTorch's reserved bytes plus the device's
 * free bytes then, which is what PyTorch could use, and a lower bound of the device's size (the
 * rest was held outside PyTorch: other libraries, other processes, the CUDA context).
 */
enum ms_devmem_source {
	MS_DEVMEM_UNKNOWN = 0,
	MS_DEVMEM_RECORDED = 1,
	MS_DEVMEM_GIVEN = 2,
	MS_DEVMEM_FROM_OOM = 3,
	MS_DEVMEM_REAL = 4, /* the GPU replayed on (--backend cuda or torch) */
};
/* "unknown", "recorded", "given", "inferred_from_oom", "this_gpu" */
const char *ms_devmem_source_name(unsigned source);

struct ms_replay_result {
	char alloc_conf[512];
	struct ms_alloc_conf ac; /* the settings replayed, as the model took them */
	uint32_t device;
	uint64_t device_memory;          /* UINT64_MAX: unbounded */
	uint64_t device_memory_recorded; /* the size the trace records (0: none), also under
	                                    --device-memory */
	/* where device_memory comes from (enum ms_devmem_source) */
	uint8_t device_memory_source;
	/* a recorded OOM: the device's free bytes and PyTorch's reserved bytes then, and (where
	 * the device's size is known) what was held outside PyTorch: size - reserved - free */
	int oom_seen;
	uint64_t oom_device_free, oom_reserved, outside_at_oom;
	/* of outside_at_oom, what the raw CUDA events held then; the rest, taken as constant over
	 * the whole run (opts.outside_unseen), where the replay was run so */
	uint64_t external_at_oom, outside_unseen;
	/*
	 * Memory outside PyTorch as the recorder measured it (its cudaMemGetInfo marks on the
	 * device, common/event.h): at each, the device's total less its free bytes and PyTorch's
	 * reserved bytes then, and what the raw CUDA events held then (external). In order.
	 */
	struct ms_outside_point {
		uint64_t index; /* events before the mark */
		uint64_t bytes, external;
	} * outside_points;
	size_t n_outside_points, cap_outside_points;
	uint64_t limit;
	int limit_inferred; /* the limit was inferred from the recorded OOMs (set by the caller) */
	int settings_recorded; /* the trace recorded the allocator settings it ran with */
	/* not recorded, but the trace shows expandable segments: alloc_conf is
	 * "expandable_segments:True", the rest the defaults */
	int expandable_seen;
	uint64_t events_total, events_replayed, events_other_devices;
	/* other devices' snapshot marks (written for every device, used or not): in events_total,
	 * in neither this device's events nor events_other_devices */
	uint64_t events_other_marks;
	/* events of raw CUDA calls (the recorder's interposer): memory outside the allocator */
	uint64_t events_external;
	/* bytes outside PyTorch's allocator (analysis/outside.h): now (during the replay, for
	 * on_event) and at their highest, with its event; counted once PyTorch has not claimed
	 * a raw allocation within MS_EXT_WINDOW events */
	uint64_t external_now, external_peak, external_peak_index;
	int ended_by_oom; /* an OOM where the recorded run succeeded: the replay stopped there */
	uint64_t end_oom_index, end_oom_requested; /* that event, and the bytes it asked for */
	struct ms_model_stats stats;
	struct ms_seg_event *produced, *recorded;
	size_t n_produced, n_recorded;
	/*
	 * Beside the segment log (not under no_segment_log): the reserved bytes after each event
	 * that changed them, in order, and the events replayed before the replay stopped
	 * (reserved_through, one past the last). Before the first point reserved was 0.
	 */
	struct ms_reserved_point *reserved_log;
	size_t n_reserved_log;
	int reserved_logged;
	uint64_t reserved_through;
	struct ms_replay_oom first_oom;
	int has_oom;
	uint64_t recorded_ooms, reproduced_ooms;
	/* the trace's recorded OOMs on the device, also those past where the replay stopped, and
	 * the first one's event (where there is one) */
	uint64_t recorded_ooms_in_trace, first_recorded_oom_index;
	/* the windows opts.windows asked for, in the order they opened (window.h) */
	int windows_asked; /* opts.windows was given (n_windows may still be 0) */
	struct ms_window_figures *windows;
	size_t n_windows;
	char window_marks_seen[256]; /* the first names of marks the trace has (window.h) */
	uint64_t missed_ooms;        /* recorded OOMs the model satisfied */
	/* of them, those after which the job allocated again (it caught the error and went on
	 * without the memory): past them the replay follows what it did without it, which need not
	 * be what it would have done with it */
	uint64_t missed_ooms_went_on;
	uint64_t unmatched_frees, empty_cache_calls;
	/* of those, calls told from recorded segment frees just before an allocation the model
	 * could serve without them: the program's empty_cache(), or the allocator's retry under a
	 * limit the trace does not record (a snapshot cannot tell; memsnap's recorder marks calls)
	 */
	uint64_t empty_cache_before_alloc;
	/* of the calls, those whose cudaFree the driver refused (during a stream capture): the
	 * call raised, its segment stayed */
	uint64_t empty_cache_refused;
	/* of the calls, those the trace marks (enum ms_ann_call): the others are told from
	 * recorded segment frees that the model did not make */
	uint64_t empty_cache_marked;
	/* MemPools the recorder marked as made with no_split=True (never split, §14.6) */
	uint64_t no_split_pools;
	/*
	 * MemPools marked as made with use_on_oom=True, and the allocations the trace puts in one
	 * outside any use_mem_pool of it: the allocator's fallback chose that pool, and the replay
	 * asked them of the default pool (its fallback chose again)
	 */
	uint64_t use_on_oom_pools, use_on_oom_decided;
	/* allocations in a pool given as use_on_oom (--use-on-oom-pools) replayed there as the
	 * trace put them: whether the fallback placed them the trace cannot say */
	uint64_t use_on_oom_kept;
	/* the job's torch.cuda.set_per_process_memory_fraction calls on the device, as the recorder
	 * marked them: the model's limit changed at each (none where --limit or --memory-fraction
	 * was given) */
	uint64_t limit_marks;
	uint64_t end_segments; /* the trace's end-state segments of the device */
	uint64_t end_reserved; /* ... and their bytes */
	/* of them, in a private pool (segment_pool_id not (0, 0): a CUDA graph's, a MemPool's) */
	uint64_t end_private_segments;
	/* the replay's graph_capture_record_stream_reuse differs from the recorded one (or the
	   trace has none): its frees deferred during captures still complete where recorded
	   (ms_replay_reuse_as_recorded) */
	uint8_t record_stream_reuse_differs;
	/* allocations replayed in a private pool, and those whose pool the trace does not tell
	 * (replayed in the default pools: parse/pool_infer.h) */
	uint64_t allocs_private, allocs_pool_unknown;
	/* allocations the model placed at another address than the trace recorded (segments take
	 * their recorded addresses, so the two agree while the replay follows PyTorch), and the
	 * first of them, with both addresses */
	uint64_t misplaced_allocs, first_misplaced_index;
	/* a memsnap trace without its END record (the recording process was killed): the replay
	 * covers what the file holds */
	int cut_short;
	uint64_t first_misplaced_recorded, first_misplaced_replayed;
	/* every pool at the end, slot 0 the default one (model.h) */
	struct ms_model_pool *pools;
	size_t n_pools;
	uint64_t mid_run_unmatched; /* a replay from a rebuilt state: the first replay's
	                               unmatched_frees */
	/*
	 * where the model placed the program's empty_cache() calls: before these events; and of
	 * each, the pool it emptied: MS_POOL_DEFAULT every cache (torch.cuda.empty_cache()), a
	 * private pool's code that pool's alone (a MemPool's destructor)
	 */
	uint64_t *empty_cache_at;
	uint16_t *empty_cache_pool;
	uint8_t *empty_cache_refused_at; /* 1: that call's cudaFree was refused (a capture) */
	size_t n_empty_cache_at, cap_empty_cache_at;
	/* the backend's own OOM message (--backend torch: PyTorch's), or "" */
	char backend_message[1024];
	char backend[8]; /* "sim", "cuda" or "torch" */
	/* --backend torch: segments not at their recorded place (the replay's order differs from
	 * the recording's there), deferred frees completed early (the allocator waited on them) */
	uint64_t torch_misplaced_segments, torch_forced_frees;
	/* the trace comes from another allocator (torch_npu): the model is PyTorch's CUDA one */
	char other_allocator[32];
	/* a snapshot written by a release other than the model's (2.11), from its fields: the
	 * releases it fits ("2.1"), else "" */
	char older_release[48];
	/* --backend torch: PyTorch's own snapshot of the segments at the end */
	struct ms_end_segment *end_segs;
	size_t n_end_segs;
	/* the most allocated while reserved bytes stood at their peak: peak reserved minus this is
	 * the waste at the peak (memory reserved that was never in use at once) */
	uint64_t allocated_at_peak_reserved;
	/* of allocated_at_peak_reserved, and of the allocated peak: a request the recorded run
	 * failed on (its OOM) that the replay served and gives back right after, which no
	 * allocation of the trace holds */
	uint64_t served_oom_at_peak_reserved, served_oom_at_peak_allocated;
	uint64_t requested_at_peak_reserved; /* requested bytes at that same moment */
	/* the events at which allocated and reserved bytes first reached their peaks */
	uint64_t peak_allocated_index, peak_reserved_index;
	/* the event of allocated_at_peak_reserved: where the most was allocated while reserved
	 * stood at its peak, the state a breakdown of the peak shows */
	uint64_t fullest_at_peak_index;
	struct ms_replay_snap snap;      /* when opts.snap asked for it */
	struct ms_replay_snap peak_snap; /* opts.peak_gate's */
	struct ms_replay_snap *snaps;    /* opts.more_snaps, in order, as far as the replay got */
	size_t n_snaps;
	/* the stacks of first_oom's holders, copied from the trace's table (which the replay does
	 * not keep); NULL when none has one */
	struct ms_symtab *holder_syms;
	/* a mid-run trace: the state rebuilt before its first event (opts.init) */
	int rebuilt;
	/* ... not from the end state: the blocks live then placed by the model (rebuild.h) */
	int placed;
	uint64_t initial_reserved, initial_segments, initial_live_blocks;
};

/* r was asked for another graph_capture_record_stream_reuse than its trace recorded, and the
 * trace has private pools (captures): the frees that setting decides were replayed as recorded */
int ms_replay_reuse_as_recorded(const struct ms_replay_result *r);

/*
 * Replay path (any format ms_source_read reads). r is filled and owned by the caller; release
 * its arrays with ms_replay_result_release().
 * @return MS_OK (also when the replay ended in an OOM: see r->ended_by_oom), MS_ERR_INVALID_ARG
 *   for a bad --alloc-conf, MS_ERR_UNSUPPORTED for settings the model lacks, reader errors.
 */
ms_status ms_replay_run(const char *path, const struct ms_replay_opts *o,
                        struct ms_replay_result *r, struct ms_diag *diag);
struct ms_source;
/* As ms_replay_run, of an input opened once (parse/source.h), counted as pass (enum ms_pass);
 * from its trace in memory where it was read whole. */
ms_status ms_replay_source(const struct ms_source *src, unsigned pass,
                           const struct ms_replay_opts *o, struct ms_replay_result *r,
                           struct ms_diag *diag);
/*
 * Memory outside PyTorch at event index as the recorder measured it: the last cudaMemGetInfo
 * mark at or before it, moved by what the raw CUDA events held at index (external) against then.
 * Returns 1 with *bytes and *mark_index, or 0 where no mark comes before index.
 */
/* The highest of the recorder's measurements of memory outside PyTorch (NULL: none). */
const struct ms_outside_point *ms_replay_outside_highest(const struct ms_replay_result *r);
int ms_replay_outside_at(const struct ms_replay_result *r, uint64_t index, uint64_t external,
                         uint64_t *bytes, uint64_t *mark_index);
void ms_replay_result_release(struct ms_replay_result *r);
/* Where two lists of segment events first differ (action and size; the index into both), or
 * SIZE_MAX where they are the same. */
size_t ms_seg_events_first_diff(const struct ms_seg_event *a, size_t na,
                                const struct ms_seg_event *b, size_t nb);
/* The same of the replay's segment events against the recorded ones; SIZE_MAX also where the
 * trace recorded none. */
size_t ms_replay_first_divergence(const struct ms_replay_result *r);

struct ms_trace;
/* The same from a trace in memory (whatif and the limit search replay it many times). */
ms_status ms_replay_trace(const struct ms_trace *t, const struct ms_replay_opts *o,
                          struct ms_replay_result *r, struct ms_diag *diag);

/*
 * A trace that recorded OOMs the device had room for ran under a per-process limit: find the
 * limits with which the replay reproduces every recorded OOM and no other, [*lo, *hi] (binary
 * searches over replays). MS_ERR_UNSUPPORTED when no limit does.
 */
ms_status ms_replay_infer_limit(const struct ms_trace *t, const struct ms_replay_opts *o,
                                uint64_t *lo, uint64_t *hi, struct ms_diag *diag);

/* PyTorch's OOM message, with the model's numbers. */
void ms_replay_oom_message(const struct ms_replay_result *r, char *buf, size_t cap);

#endif
