/*
 * libmemsnap_recorder: stream GPU memory events into a memsnap trace (.zst).
 *
 * A recorder owns one trace file. Threads record fixed-size events into
 * per-thread rings (no malloc, no lock, no system call); a background thread
 * merges the rings in recording order, encodes them (docs/FORMAT.md) and
 * writes a complete zstd frame at least every flush_ms, so a process killed
 * with SIGKILL leaves a readable trace missing at most the last interval.
 * A full ring never blocks and never loses events silently: the loss is
 * counted and written to the trace as a DROPPED record.
 *
 * Return values: 0 on success or a negative errno value (-ENOMEM, -EINVAL,
 * -EIO, ...); strerror(-rc) describes it.
 *
 * Thread safety: every call but msr_close() may be made from any thread at
 * any time. Async-signal safety: msr_record() and msr_dropped() only (an
 * msr_record() that interrupts another on the same thread is counted as
 * dropped rather than corrupting the ring). After fork(), the child records
 * nothing and never touches the parent's file.
 */
#ifndef MEMSNAP_RECORDER_H
#define MEMSNAP_RECORDER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define MSR_API __attribute__((visibility("default")))
#else
#define MSR_API
#endif

#define MSR_VERSION 3 /* of this API; msr_version() returns the library's */

/* PyTorch's TraceEntry actions, same numbers (the trace format's EVENT action). */
enum msr_action {
	MSR_ALLOC = 0,
	MSR_FREE_REQUESTED = 1,
	MSR_FREE_COMPLETED = 2,
	MSR_SEGMENT_ALLOC = 3,
	MSR_SEGMENT_FREE = 4,
	MSR_SEGMENT_MAP = 5,
	MSR_SEGMENT_UNMAP = 6,
	MSR_SNAPSHOT = 7,
	MSR_OOM = 8,
};

/* Who saw the event. */
enum msr_source {
	MSR_SRC_TORCH = 0, /* PyTorch's caching allocator */
	MSR_SRC_CUDA = 1,  /* a raw CUDA call (the LD_PRELOAD interposer) */
};

struct msr_event {
	uint8_t action;  /* enum msr_action */
	uint8_t source;  /* enum msr_source */
	uint16_t device; /* CUDA device index */
	uint32_t stack;  /* from msr_stack(); 0 = none */
	uint64_t addr;   /* block or segment address; MSR_OOM: the device's free bytes */
	uint64_t size;   /* bytes, with PyTorch's meaning per action (docs/FORMAT.md 4.3) */
	uint64_t stream; /* cudaStream_t as an integer; 0 = the legacy default stream */
	int64_t t_ns;    /* ns since the Unix epoch; 0 = now */
};

/* Annotation kinds and stages (format: ANNOTATION). */
enum msr_ann_kind { MSR_ANN_TORCH = 0, MSR_ANN_PHASE = 1, MSR_ANN_STEP = 2 };
enum msr_ann_stage { MSR_ANN_START = 0, MSR_ANN_END = 1, MSR_ANN_MARK = 2 };

struct msr_device {
	uint32_t index;
	const char *name;      /* "" or NULL when unknown */
	uint64_t total_memory; /* bytes; 0 = unknown */
};

/* PyTorch's allocator_settings (torch-allocator.md 8.6), as the trace header stores them. */
struct msr_settings {
	const char *alloc_conf; /* the PYTORCH_CUDA_ALLOC_CONF string */
	int64_t max_split_size; /* -1 = unlimited */
	double garbage_collection_threshold;
	int expandable_segments;
	int release_lock_on_cudamalloc;
	int pinned_use_cuda_host_register;
	int graph_capture_record_stream_reuse;
	int64_t pinned_num_register_threads;
	uint32_t roundup_power2_divisions[16];
};

/* Flags of struct msr_options. */
#define MSR_F_SIGNALS 1u /* flush on SIGSEGV/SIGBUS/SIGILL/SIGFPE/SIGABRT, then re-raise */
#define MSR_F_ATEXIT  2u /* msr_close() this recorder from atexit() */

/*
 * Options; start from msr_options_init(). Strings are copied by msr_open().
 * Memory is bounded by max_threads * ring_events * 56 bytes (mapped as
 * threads first record) plus about 2 frames of the writer's buffers.
 */
struct msr_options {
	uint32_t size;     /* sizeof(struct msr_options): set by msr_options_init */
	unsigned flags;    /* MSR_F_*; default MSR_F_SIGNALS */
	unsigned flush_ms; /* longest time before an event reaches the file; 1..100, default 100 */
	unsigned ring_events; /* per-thread ring capacity, power of two; default 65536 */
	unsigned max_threads; /* threads that can record; events of more are dropped; default 256 */
	int level;            /* zstd level; default 3 */
	const char *producer; /* default "memsnap-recorder" */
	const char *torch_version; /* NULL or "" when not PyTorch */
	int64_t limit_bytes;       /* per-process memory limit in force; -1 unknown (default) */
	const struct msr_device *devices;
	unsigned n_devices;
	const struct msr_settings *settings; /* NULL: none known */
};

MSR_API void msr_options_init(struct msr_options *o);

struct msr;

/*
 * Create (truncate) path and start recording into it; or record into an open
 * file descriptor (fd is borrowed: msr_close() does not close it). Starts
 * the writer thread. *out is owned by the caller until msr_close().
 */
MSR_API int msr_open(const char *path, const struct msr_options *o, struct msr **out);
MSR_API int msr_open_fd(int fd, const struct msr_options *o, struct msr **out);

/*
 * Record one event. No malloc, no lock, no system call (except a thread's
 * first event, which maps its ring). Returns 0, or -EAGAIN when the event
 * was dropped (ring full, too many threads, re-entered) and counted as such,
 * or -ESHUTDOWN after msr_close() began.
 */
MSR_API int msr_record(struct msr *r, const struct msr_event *e);
/*
 * The same, with the memory pool the allocator served the event from: PyTorch's MempoolId_t
 * (first, second), (0, 0) for the default pools, one half non-zero for a private pool (a CUDA
 * graph's, a MemPool's), each half at most 32766; -EINVAL for other ids. msr_record() records
 * the pool as unknown. (API version 2.)
 */
MSR_API int msr_record_in_pool(struct msr *r, const struct msr_event *e, uint64_t pool_first,
                               uint64_t pool_second);

/*
 * Intern a frame (function, file, line) and a stack of frame ids (innermost
 * first); each distinct one is stored once in the trace. Return the id, or 0
 * when out of memory. Take a lock and may allocate: not async-signal-safe.
 */
MSR_API uint32_t msr_frame(struct msr *r, const char *function, const char *file, uint32_t line);
MSR_API uint32_t msr_stack(struct msr *r, const uint32_t *frames, size_t n);

/*
 * A number no other recorder of this process has had (a recorder's address may be reused after
 * msr_close()): a cache of ids that msr_frame() and msr_stack() returned is valid only for the
 * recorder of its generation. Async-signal-safe. (API version 3.)
 */
MSR_API uint64_t msr_generation(const struct msr *r);

/* Phases and steps, ordered with the events around them. Interns name (may allocate). */
MSR_API int msr_annotate(struct msr *r, enum msr_ann_kind kind, enum msr_ann_stage stage,
                         const char *name, uint16_t device);

/* Events recorded before the call are in the file when it returns 0 (blocks). */
MSR_API int msr_flush(struct msr *r);

/* Events dropped so far (async-signal-safe). */
MSR_API uint64_t msr_dropped(const struct msr *r);

/*
 * Stop recording and finish the trace (index, END); r stays allocated, and
 * later calls on it return -ESHUTDOWN, until msr_close(). For a recorder that
 * other threads may still hold (msr_global()). Returns the first write error.
 */
MSR_API int msr_finish(struct msr *r);

/*
 * Write everything, finish the trace (index, END) and free r. No other
 * thread may use r during or after the call. Returns the first write error.
 */
MSR_API int msr_close(struct msr *r);

/*
 * The process-wide recorder that sources share (the PyTorch hook and the CUDA
 * interposer write to the same trace): NULL until set. msr_set_global()
 * returns the previous one. Both are async-signal-safe.
 */
MSR_API struct msr *msr_global(void);
MSR_API struct msr *msr_set_global(struct msr *r);

/* The library's MSR_VERSION and memsnap version string. */
MSR_API unsigned msr_version(void);
MSR_API const char *msr_version_string(void);

#ifdef __cplusplus
}
#endif

#endif
