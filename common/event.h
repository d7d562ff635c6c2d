/*
 * The events every layer shares: events, annotations, end-state segments
 * and blocks, trace metadata, and the sink through which readers hand them out.
 *
 * Sizes and addresses are uint64_t (a trace may come from another machine);
 * times are nanoseconds since the Unix epoch (0 = unknown). Stack and string
 * fields are ids in the reader's struct ms_symtab (0 = none).
 */
#ifndef MEMSNAP_COMMON_EVENT_H
#define MEMSNAP_COMMON_EVENT_H

#include <stdint.h>
#include <stddef.h>

#include "common/symtab.h"
#include "memsnap/memsnap.h"

/* PyTorch's TraceEntry actions, same order and names (torch-allocator.md §9.1). */
#define MS_ACTION_MAP(XX)                       \
	XX(ALLOC, 0, "alloc")                   \
	XX(FREE_REQUESTED, 1, "free_requested") \
	XX(FREE_COMPLETED, 2, "free_completed") \
	XX(SEGMENT_ALLOC, 3, "segment_alloc")   \
	XX(SEGMENT_FREE, 4, "segment_free")     \
	XX(SEGMENT_MAP, 5, "segment_map")       \
	XX(SEGMENT_UNMAP, 6, "segment_unmap")   \
	XX(SNAPSHOT, 7, "snapshot")             \
	XX(OOM, 8, "oom")

enum ms_action {
#define XX(name, val, str) MS_ACT_##name = val,
	MS_ACTION_MAP(XX)
#undef XX
	        MS_ACT_COUNT
};

/* "alloc" etc.; NULL for an invalid action. */
const char *ms_action_name(unsigned action);
/* The action named s[0..n), or -1. */
int ms_action_parse(const char *s, size_t n);

/* Who produced an event. */
enum ms_event_source {
	MS_SRC_TORCH = 0, /* PyTorch's caching allocator */
	MS_SRC_CUDA = 1,  /* raw CUDA calls seen by the interposer */
};
/*
 * In memsnap's JSON form of PyTorch's snapshot a raw CUDA call is an entry whose action is its
 * action's name after this prefix ("cuda_segment_alloc"): PyTorch's tools pass over actions they
 * do not know, and count none of them as the allocator's segments.
 */
#define MS_RAW_CUDA_ACTION_PREFIX "cuda_"

struct ms_event {
	uint64_t addr;   /* block or segment address; for MS_ACT_OOM: device free bytes */
	uint64_t size;   /* bytes; meaning depends on the action (torch-allocator.md §8.4) */
	uint64_t stream; /* cudaStream_t value as an integer (0 = legacy default) */
	int64_t t_ns;
	uint32_t stack;           /* stack id, 0 = none */
	uint32_t user_metadata;   /* string id, 0 = "" */
	uint32_t compile_context; /* string id, 0 = "N/A" (PyTorch's default) */
	/* forward_frames (PyTorch's main branch): for an allocation made in backward, where its
	 * tensor was made in forward, as a stack of frames each one of its strings (the frame's
	 * name; no file, line 0); 0 = none */
	uint32_t fwd_stack;
	uint16_t device;
	uint16_t pool;  /* the memory pool, as ms_pool_code(); MS_POOL_UNKNOWN where not recorded */
	uint8_t action; /* enum ms_action */
	uint8_t source; /* enum ms_event_source */
};

/*
 * A memory pool's id (PyTorch's MempoolId_t, torch-allocator.md §14.1) as one number. Exactly one
 * half of a private pool's id is non-zero: a CUDA graph's own pool is (n, 0), a MemPool or
 * graph_pool_handle() is (0, n). MS_POOL_DEFAULT is (0, 0), the device's default pools.
 */
#define MS_POOL_DEFAULT  0
#define MS_POOL_UNKNOWN  0xffff
#define MS_POOL_MAX_HALF 32766 /* the largest n that fits */

/* The code of pool id (first, second), or -1 where it has none (both halves set, or too large). */
static inline int ms_pool_code(uint64_t first, uint64_t second, uint16_t *code)
{
	if (first && second)
		return -1;
	if (first > MS_POOL_MAX_HALF || second > MS_POOL_MAX_HALF)
		return -1;
	*code = (uint16_t)(first ? first << 1 : second ? second << 1 | 1 : 0);
	return 0;
}

/* "(first, second)", as PyTorch prints a pool id, into buf; returns buf. */
const char *ms_pool_id_text(const uint64_t id[2], char *buf, size_t cap);

/* The id of a pool code (not MS_POOL_UNKNOWN). */
static inline void ms_pool_id(uint16_t code, uint64_t id[2])
{
	id[0] = code & 1 ? 0 : code >> 1;
	id[1] = code & 1 ? code >> 1 : 0;
}

enum ms_ann_stage { MS_ANN_START = 0, MS_ANN_END = 1, MS_ANN_MARK = 2 };
enum ms_ann_kind {
	MS_ANN_TORCH = 0, /* PyTorch external_annotations (record_function) */
	MS_ANN_PHASE = 1, /* user phase (recorder) */
	MS_ANN_STEP = 2,  /* training step (recorder) */
};

/*
 * Calls of the program that an annotation brackets and the replay acts on: memsnap's Python
 * recorder writes a phase of this name around every torch.cuda.empty_cache() (the ones
 * torch.cuda.graph makes before a capture included), which empties every device's cache, so
 * that the call is known even where it freed nothing.
 */
enum ms_ann_call {
	MS_CALL_NONE = 0,
	MS_CALL_EMPTY_CACHE = 1,
	MS_CALL_MEMPOOL_NO_SPLIT = 2,
	MS_CALL_MEMPOOL_USE_ON_OOM = 3,
	MS_CALL_USE_MEM_POOL = 4,
	MS_CALL_MEMORY_FRACTION = 5,
	MS_CALL_GRAPH_CAPTURE = 6,
	MS_CALL_DEVICE_MEMORY = 7,
};
#define MS_EMPTY_CACHE_PHASE "torch.cuda.empty_cache"
/* The recorder's phase around each CUDA graph capture (torch.cuda.CUDAGraph's capture_begin to
 * capture_end): while one is open the allocator never gives cached segments back. */
#define MS_GRAPH_CAPTURE_PHASE "torch.cuda.CUDAGraph capture"
/*
 * Marks that name a pool, its id after the prefix ("torch.cuda.MemPool(no_split=True) (0, 3)"):
 * the recorder marks each torch.cuda.MemPool made with no_split=True (the replay never splits
 * its blocks) or use_on_oom=True (a request of the default pool that cannot be served takes a
 * free block of it), and puts a phase of the third name around each torch.cuda.use_mem_pool
 * (the allocations of the pool inside it were routed there; one of a use_on_oom pool outside
 * any is the allocator's own choice, which the replay makes again). torch-allocator.md §14.6.
 */
#define MS_MEMPOOL_NO_SPLIT_MARK   "torch.cuda.MemPool(no_split=True) "
#define MS_MEMPOOL_USE_ON_OOM_MARK "torch.cuda.MemPool(use_on_oom=True) "
#define MS_USE_MEM_POOL_PHASE      "torch.cuda.use_mem_pool "
/*
 * The call such a mark makes (MS_CALL_MEMPOOL_NO_SPLIT, MS_CALL_MEMPOOL_USE_ON_OOM or
 * MS_CALL_USE_MEM_POOL) with its pool's code in *code, or MS_CALL_NONE where name is not one.
 */
uint8_t ms_ann_pool_mark(const char *name, uint16_t *code);
/*
 * The recorder marks each torch.cuda.set_per_process_memory_fraction with the limit it set on
 * the mark's device, in bytes (the fraction times the device's memory, as PyTorch computes it):
 * "torch.cuda.set_per_process_memory_fraction 2147483647". The replay applies it there.
 */
#define MS_MEMORY_FRACTION_MARK "torch.cuda.set_per_process_memory_fraction "
/* The limit such a mark names in *bytes: 0, or -1 where name is not one. */
int ms_ann_limit_mark(const char *name, uint64_t *bytes);
/*
 * The recorder marks what cudaMemGetInfo says of the mark's device, free then total bytes,
 * when recording starts and after each optimizer step and memsnap.step():
 * "cudaMemGetInfo 1234 5678". Beside PyTorch's reserved bytes then, it measures the memory held
 * outside PyTorch (the CUDA context, NCCL's buffers, other libraries and processes), which no
 * event shows.
 */
#define MS_DEVICE_MEMORY_MARK "cudaMemGetInfo "
/* The free and total bytes such a mark names: 0, or -1 where name is not one. */
int ms_ann_device_memory_mark(const char *name, uint64_t *free_bytes, uint64_t *total_bytes);
/* The call an annotation of kind (enum ms_ann_kind) and name marks. */
uint8_t ms_ann_call_of(unsigned kind, const char *name);

/*
 * A snapshot mark (a memory_snapshot() call): PyTorch writes one for every device's allocator,
 * also for devices the process never used. Such marks alone do not make a device used.
 */
static inline int ms_event_is_snapshot_mark(const struct ms_event *e)
{
	return e->action == MS_ACT_SNAPSHOT;
}

struct ms_annotation {
	int64_t t_ns;
	uint64_t event_index; /* number of events before it in the trace */
	uint32_t name;        /* string id */
	uint16_t device;
	uint8_t stage; /* enum ms_ann_stage */
	uint8_t kind;  /* enum ms_ann_kind */
	uint8_t call;  /* enum ms_ann_call: set by the reader, which knows the name */
};

enum ms_block_state {
	MS_BLOCK_INACTIVE = 0,
	MS_BLOCK_ACTIVE_ALLOCATED = 1,
	MS_BLOCK_ACTIVE_PENDING_FREE = 2,
};

struct ms_block {
	uint64_t addr;
	uint64_t size;
	uint64_t requested_size; /* stale for inactive blocks (torch-allocator.md §8.3) */
	uint32_t stack;
	uint8_t state; /* enum ms_block_state */
};

struct ms_segment {
	uint64_t addr;
	uint64_t total_size;
	uint64_t allocated_size;
	uint64_t active_size;
	uint64_t requested_size;
	uint64_t stream;
	uint64_t pool_id[2]; /* segment_pool_id; (0, 0) = default pool */
	uint32_t stack;
	uint32_t n_blocks;
	uint16_t device;
	uint8_t is_small; /* segment_type "small" */
	uint8_t is_expandable;
};

struct ms_device {
	uint32_t index;
	uint64_t total_memory; /* 0 = unknown */
	const char *name;      /* may be "" */
};

/* Allocator settings as PyTorch reports them (allocator_settings, §8.6). */
struct ms_settings {
	uint8_t present; /* 0: the source had none */
	/* with present 0: the source's events or segments show expandable segments (segment_map,
	 * segment_unmap, is_expandable), so the job ran with expandable_segments:True */
	uint8_t expandable_seen;
	const char *alloc_conf; /* PYTORCH_CUDA_ALLOC_CONF string */
	int64_t max_split_size; /* -1 = unlimited */
	double garbage_collection_threshold;
	uint8_t expandable_segments;
	uint8_t release_lock_on_cudamalloc;
	uint8_t pinned_use_cuda_host_register;
	uint8_t graph_capture_record_stream_reuse;
	int64_t pinned_num_register_threads;
	uint32_t roundup_power2_divisions[16]; /* entry k: sizes in [2^(20+k), 2^(21+k)) */
};

enum ms_input_kind {
	MS_INPUT_ZST = 0,
	MS_INPUT_PICKLE = 1,
	MS_INPUT_JSON = 2,
};

struct ms_meta {
	uint8_t input_kind;                  /* enum ms_input_kind, filled by the reader */
	uint16_t format_major, format_minor; /* of a .zst input; 0 otherwise */
	const char *producer;                /* e.g. "memsnap-convert", "torch-snapshot" */
	const char *producer_version;
	const char *torch_version; /* "" when unknown */
	/* a PyTorch snapshot: the releases its layout fits ("2.10 or 2.11"; parse/torch_release.h),
	 * "" for other inputs */
	const char *layout_release;
	const char *hostname;
	int64_t start_t_ns;
	uint32_t time_unit_ns; /* natural tick of the source: 1, or 1000 for PyTorch's µs */
	int64_t limit_bytes;   /* per-process limit if known, else -1 */
	uint32_t n_devices;
	const struct ms_device *devices;
	struct ms_settings settings;
};

/*
 * A consumer of a trace (perf's struct perf_tool). Readers call, in order:
 * begin once; then events and annotations interleaved in trace order (an
 * annotation with event_index k arrives before event k); then segment for
 * each end-state segment; then end. Any callback may be NULL. A callback
 * returning other than MS_OK stops the reader, which returns that status.
 * Pointers passed to callbacks are borrowed for the duration of the call;
 * the symtab outlives the reading.
 *
 * events, when set, takes runs of consecutive events from readers that hold
 * them in arrays (snapshots, loaded traces): one call for thousands of
 * events rather than one each, which is most of what a cheap consumer costs.
 * Readers hand each event to one of the two, events where it is set
 * (ms_sink_events); a sink that sets events should set event too, for the
 * readers that decode one event at a time.
 */
struct ms_sink {
	void *ctx;
	ms_status (*begin)(void *ctx, const struct ms_meta *m, const struct ms_symtab *syms);
	ms_status (*event)(void *ctx, const struct ms_event *e);
	ms_status (*annotation)(void *ctx, const struct ms_annotation *a);
	ms_status (*segment)(void *ctx, const struct ms_segment *s, const struct ms_block *blocks);
	ms_status (*end)(void *ctx, uint64_t n_events);
	ms_status (*events)(void *ctx, const struct ms_event *e, size_t n);
};

/* Events e[0..n) to the sink: in one call where it takes runs, else one by one. */
static inline ms_status ms_sink_events(const struct ms_sink *sink, const struct ms_event *e,
                                       size_t n)
{
	if (sink->events)
		return n ? sink->events(sink->ctx, e, n) : MS_OK;
	for (size_t i = 0; sink->event && i < n; i++) {
		ms_status s = sink->event(sink->ctx, &e[i]);
		if (s)
			return s;
	}
	return MS_OK;
}

#endif
