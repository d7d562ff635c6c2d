/*
 * The C ABI between memsnap and libmemsnap_torch_replay, the plugin that drives PyTorch's own
 * CUDA caching allocator (replay --backend torch). memsnap loads the plugin with dlopen and
 * calls memsnap_torch_replay_api(); nothing of PyTorch is linked into memsnap itself.
 * One replay per process at a time; every call from one thread.
 */
#ifndef MEMSNAP_REPLAY_TORCH_BACKEND_H
#define MEMSNAP_REPLAY_TORCH_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MST_ABI 10

/* A segment event of the real allocator (its trace tracker): PyTorch's action numbers. */
struct mst_seg {
	uint8_t action;
	uint64_t addr, size;
};

/* PyTorch's memory_stats() for the device ("all" pools), as replay reports them. */
struct mst_stats {
	int64_t allocated_current, allocated_peak, reserved_current, reserved_peak;
	int64_t requested_current, requested_peak, active_current, active_peak;
	int64_t segment_current, segment_peak, inactive_split_bytes_current;
	uint64_t num_alloc_retries, num_ooms, num_device_alloc, num_device_free;
};

/* A segment of PyTorch's snapshot (the default pool), blocks counted. */
struct mst_segment {
	uint64_t address, total_size, allocated_size, active_size;
	uint32_t n_blocks, n_allocated_blocks;
	uint8_t is_large, is_expandable;
};

struct mst_api {
	unsigned abi; /* MST_ABI */
	/* PyTorch's version string */
	const char *(*torch_version)(void);
	/*
	 * Start on device with PYTORCH_CUDA_ALLOC_CONF = alloc_conf (NULL: the environment's) and
	 * a per-process limit of limit bytes (0: none; through setMemoryFraction). Must be the
	 * first call. Returns 0, or -1 with err filled.
	 */
	int (*open)(int device, const char *alloc_conf, uint64_t limit, char *err, size_t n);
	/*
	 * Place PyTorch's segments as the recording did: pairs (address, size) of the recorded
	 * segment_alloc events in order. The allocator's cudaMalloc calls then get memory mapped at
	 * the same offsets from one reserved range, so its best fit, which breaks ties between free
	 * blocks by address, chooses as in the recorded run. Call after open, before any malloc.
	 * Returns 0, or -1 when it cannot (the replay then uses plain cudaMalloc).
	 */
	int (*place)(const uint64_t *addr_size, size_t n);
	/* The device's total and free memory now (cudaMemGetInfo). */
	void (*mem_info)(uint64_t *total, uint64_t *free_bytes);
	/*
	 * Allocate size bytes on the stream that stands for recorded stream handle stream (0: the
	 * default stream), in the memory pool (pool_first, pool_second): (0, 0) the default pools,
	 * else the private pool of that id (a CUDA graph's, a MemPool's), made on its first use
	 * and kept until release_pool. Returns 0 with *ptr, 1 on an out-of-memory error (err:
	 * PyTorch's message), -1 on another error.
	 */
	int (*malloc)(uint64_t size, uint64_t stream, uint64_t pool_first, uint64_t pool_second,
	              uint64_t *ptr, char *err, size_t n);
	/*
	 * Nothing uses the private pool any more (its graphs were reset, its MemPool deleted):
	 * its free segments go back at the next empty_cache, as PyTorch's own do.
	 */
	void (*release_pool)(uint64_t pool_first, uint64_t pool_second);
	void (*free)(uint64_t ptr);
	/*
	 * A free that PyTorch deferred (the block was used on another stream: record_stream):
	 * free_request(ptr) gives it back now, as allocated bytes go, but the allocator keeps the
	 * block until free_complete(ptr), as it kept it until the other stream's work was done.
	 */
	void (*free_request)(uint64_t ptr);
	void (*free_complete)(uint64_t ptr);
	void (*empty_cache)(void);
	/* Segment events since the last call, oldest first: at most max; returns how many. */
	size_t (*take_segments)(struct mst_seg *out, size_t max);
	void (*stats)(struct mst_stats *out);
	/* PyTorch's snapshot of the device's segments now: at most max; returns how many exist. */
	size_t (*segments)(struct mst_segment *out, size_t max);
	/*
	 * What the replay had to do differently from the recording: segments the allocator asked
	 * for where place() had no room kept (the replay's order differs there), and deferred frees
	 * completed early because the allocator waited on them. memsnap reports both.
	 */
	void (*deviations)(uint64_t *misplaced_segments, uint64_t *forced_frees);
	/* Free everything this replay holds and empty the cache. */
	void (*close)(void);
	/*
	 * The private pool (pool_first, pool_second) is a MemPool made with no_split=True. Returns
	 * 0, or -1 where this PyTorch's allocator has no such setting.
	 */
	int (*no_split)(uint64_t pool_first, uint64_t pool_second);
	/*
	 * The private pool (pool_first, pool_second) is a MemPool made with use_on_oom=True: made
	 * now, kept until release_pool, and tried by the allocator when a request of the default
	 * pools cannot be served. Returns 0, or -1 where this PyTorch's allocator cannot.
	 */
	int (*use_on_oom)(uint64_t pool_first, uint64_t pool_second);
	/* emptyCache of the private pool (pool_first, pool_second) alone, as a MemPool's destructor
	 * empties its own pool's cache. */
	void (*empty_pool_cache)(uint64_t pool_first, uint64_t pool_second);
	/*
	 * on: the recorded program opened a use_mem_pool (or a capture), which keeps the allocator
	 * from its last retry (releasing every cached segment) until it ends; 0: none is open now.
	 */
	void (*captures_underway)(int on);
	/*
	 * The private pool (pool_first, pool_second), not used yet, is a MemPool with its own
	 * allocator (MemPool(allocator=...)): made now with one that calls cudaMalloc and cudaFree
	 * (placed as every segment is), kept until release_pool. Returns 0, or -1 where the pool
	 * exists already or this PyTorch cannot.
	 */
	int (*custom_allocator)(uint64_t pool_first, uint64_t pool_second);
	/*
	 * on: the next empty_cache or empty_pool_cache runs as the recorded program's did during a
	 * CUDA graph capture, whose driver refused its cudaFree: the plugin's cudaFree refuses it
	 * the same way, and PyTorch records the segment freed, raises, and keeps it; 0: as usual.
	 */
	void (*refuse_free)(int on);
};

/* The plugin's one exported symbol. */
typedef const struct mst_api *(*mst_api_fn)(void);
#define MST_API_SYMBOL "memsnap_torch_replay_api"

#ifdef __cplusplus
}
#endif

#endif
