/*
 * memsnap's model of PyTorch's CUDA caching allocator (2.11, native backend) over a simulated
 * device: size rounding, small and large pools, best fit by (stream, size, address), splitting
 * and merging, oversize blocks, pending frees, the release paths and the retry, the per-process
 * limit, and memory_stats() counters with PyTorch's names (torch-allocator.md §1-7).
 *
 * Ownership: ms_model_new() returns a model freed with ms_model_free(); blocks it hands out
 * belong to it and stay valid until freed through it. Not thread-safe: one model per thread.
 */
#ifndef MEMSNAP_REPLAY_MODEL_H
#define MEMSNAP_REPLAY_MODEL_H

#include <stdint.h>

#include "common/event.h"
#include "replay/alloc_conf.h"

/* A memory_stats() statistic: current, peak, allocated (sum of increases), freed. */
struct ms_stat {
	int64_t current, peak, allocated, freed;
};

enum { MS_POOL_ALL = 0, MS_POOL_SMALL = 1, MS_POOL_LARGE = 2 };

struct ms_model_stats {
	struct ms_stat allocation[3], segment[3], active[3], inactive_split[3];
	struct ms_stat allocated_bytes[3], reserved_bytes[3], active_bytes[3];
	struct ms_stat inactive_split_bytes[3], requested_bytes[3];
	struct ms_stat oversize_allocations, oversize_segments;
	uint64_t num_alloc_retries, num_ooms, num_sync_all_streams;
	uint64_t num_device_alloc, num_device_free;
	/* requests of the default pool served by a use_on_oom MemPool's free block (§14.6) */
	uint64_t use_on_oom_fallbacks;
	/* the largest segment ever held that is not an expandable one (bytes): max_split_size
	 * acts only on blocks as large as it, which no smaller segment holds */
	uint64_t largest_segment;
	/*
	 * Under a limit, the most that reserved bytes plus a new segment came to where the limit
	 * let the segment be (0: no limit looked at): every limit from it up to the one replayed
	 * under decides each request alike (without the collector's threshold, which acts at a
	 * fraction of the limit).
	 */
	uint64_t limit_fit_max;
};

/*
 * One memory pool (torch-allocator.md §14): the default pools (code MS_POOL_DEFAULT) or a
 * private one (a CUDA graph's, a MemPool), with its share of reserved_bytes, allocated_bytes
 * and segment (all pools together are ms_model_stats' MS_POOL_ALL).
 */
struct ms_model_pool {
	uint16_t code; /* ms_pool_code() of its id (common/event.h) */
	struct ms_stat reserved_bytes, allocated_bytes, segment;
};

/* A segment event the model produced (a simulated cudaMalloc, cudaFree, map or unmap). */
typedef void (*ms_model_segment_fn)(void *ctx, unsigned action, uint64_t addr, uint64_t size,
                                    uint64_t stream);

/*
 * A real device under the model (replay --backend cuda). The model keeps its own addresses
 * (best fit orders free blocks by them, and replays use the recorded ones) and asks the device
 * for the memory of each segment or mapping it creates at such an address. seg_alloc, reserve
 * and map return 0, or -1 when the device is out of memory: the model then acts as on a full
 * device (releases its cache, retries, reports the OOM). NULL: the simulated device.
 */
struct ms_model_device {
	void *ctx;
	int (*seg_alloc)(void *ctx, uint64_t addr, uint64_t size);
	void (*seg_free)(void *ctx, uint64_t addr, uint64_t size);
	/* an expandable segment's address range, mapped later page by page */
	int (*reserve)(void *ctx, uint64_t base, uint64_t size, uint64_t page);
	int (*map)(void *ctx, uint64_t addr, uint64_t size);
	void (*unmap)(void *ctx, uint64_t addr, uint64_t size);
};

struct ms_model_conf {
	struct ms_alloc_conf ac;
	uint64_t device_memory; /* bytes the process may get from the device; UINT64_MAX = no bound
	                         */
	uint64_t limit;         /* per-process limit (set_per_process_memory_fraction); 0 = none */
	ms_model_segment_fn on_segment;
	void *ctx;
	const struct ms_model_device *dev; /* NULL: the simulated device */
};

struct ms_model;
struct ms_model_block; /* an allocation handed out by the model */

/* What the model knew when an allocation failed. */
struct ms_model_oom {
	uint64_t requested;  /* the caller's bytes */
	uint64_t rounded;    /* round_size() */
	uint64_t alloc_size; /* the segment it tried to get: PyTorch's "Tried to allocate" */
	uint64_t stream;
	uint64_t allocated, reserved, free_in_reserved, largest_free, inactive_split;
	/*
	 * A request of the default pool made while a use_mem_pool or a capture was open: the last
	 * retry, which gives every cached segment back, was skipped (§14.1); releasable is what it
	 * would have given back (whole free segments).
	 */
	uint8_t retry_skipped;
	uint64_t releasable;
};

ms_status ms_model_new(const struct ms_model_conf *c, struct ms_model **out);
void ms_model_free(struct ms_model *m);

/* round_size() and get_allocation_size() of PyTorch (§1.2, §1.5). */
uint64_t ms_model_round_size(const struct ms_model *m, uint64_t n);
uint64_t ms_model_allocation_size(const struct ms_model *m, uint64_t rounded);
/* The same under the default settings, with no model: the segment a rounded request needs
 * outside expandable segments (a recorded OOM's, where the settings may not be known). */
uint64_t ms_model_default_allocation_size(uint64_t rounded);

/*
 * Offer the address of the next segment the model creates, if it has this size (replays use
 * the addresses the trace recorded, so that ties in best fit break as they did). Queued.
 * map: it comes from a recorded segment_map (expandable segments); with the device's memory
 * unknown such a hint also ends a reservation it falls in (model_expandable.c: xs_cut_at).
 */
void ms_model_hint_segment(struct ms_model *m, uint64_t size, uint64_t addr, int map);

/*
 * malloc(n) on stream: *out gets the block, or NULL when the allocation fails (an OOM; *oom,
 * if not NULL, says what the model knew). MS_OK either way; other statuses are errors.
 */
ms_status ms_model_malloc(struct ms_model *m, uint64_t n, uint64_t stream,
                          struct ms_model_block **out, struct ms_model_oom *oom);
/*
 * malloc(n) on stream routed to a pool (§14.2; pool is an ms_pool_code(), MS_POOL_DEFAULT as
 * ms_model_malloc): best fit among that pool's free blocks only, a new segment tagged with the
 * pool; a private pool's request never empties the other pools' caches (§14.2). A pool the
 * model has not seen is created.
 */
ms_status ms_model_malloc_pool(struct ms_model *m, uint64_t n, uint64_t stream, uint16_t pool,
                               struct ms_model_block **out, struct ms_model_oom *oom);
/* Would malloc(n) succeed without releasing anything (no garbage collection, no retry, no flush)?
 */
int ms_model_fits_without_release(struct ms_model *m, uint64_t n, uint64_t stream);
int ms_model_fits_without_release_pool(struct ms_model *m, uint64_t n, uint64_t stream,
                                       uint16_t pool);
/*
 * A private pool's use count reached zero (its graphs reset, its MemPool deleted): from now on
 * empty_cache() and the OOM retry give back its free whole segments (§14.5). No effect on the
 * default pool, nor on a pool the model has no block of. MS_OK.
 */
ms_status ms_model_release_pool(struct ms_model *m, uint16_t pool);
/*
 * Private pool code pool is a MemPool made with no_split=True (§14.6): an allocation in it takes
 * a whole free block or a whole new segment, never a split one. MS_OK, or MS_ERR_NOMEM.
 */
ms_status ms_model_pool_no_split(struct ms_model *m, uint16_t pool);
/*
 * Private pool code pool is a MemPool made with its own allocator (MemPool(allocator=...),
 * §3 step 4): its segments are allocated whole, also under expandable_segments:True.
 */
ms_status ms_model_pool_custom_allocator(struct ms_model *m, uint16_t pool);
/*
 * The private pool `pool` is a MemPool made with use_on_oom=True: a request of the default pool
 * that no new segment can serve takes a free block of it, before cached blocks are released
 * (PyTorch 2.11's order, torch-allocator.md §14.6). Pools are tried in the order they were
 * marked; a released pool no more.
 */
ms_status ms_model_pool_use_on_oom(struct ms_model *m, uint16_t pool);
/*
 * n allocations to private pools are being routed now (open use_mem_pool scopes, captures):
 * while n > 0 a request that nothing else serves fails without the last retry, which would
 * release every cached segment (PyTorch's captures_underway, §14.1).
 */
void ms_model_set_captures_underway(struct ms_model *m, uint32_t n);
/*
 * While on, the driver refuses cudaFree, as it does during a stream capture (in its global and
 * thread-local modes): the first segment a release comes to is recorded freed and counted in
 * num_device_free, as PyTorch does before it calls cudaFree, but stays; the call then raises,
 * and nothing more is released. Off again: releases work.
 */
void ms_model_refuse_free(struct ms_model *m, int on);
/* The pools so far, slot 0 the default one; *n gets how many. Valid until the next malloc. */
const struct ms_model_pool *ms_model_pools(const struct ms_model *m, size_t *n);
/* The tensor is gone (free_requested): allocated bytes drop, the block stays active. */
void ms_model_free_requested(struct ms_model *m, struct ms_model_block *b);
/* Its last use finished (free_completed): the block is merged and back in its pool. */
ms_status ms_model_free_completed(struct ms_model *m, struct ms_model_block *b);
/* Change the simulated device's size (a trace's OOM entry tells it late). */
void ms_model_set_device_memory(struct ms_model *m, uint64_t bytes);
/* Change the per-process limit (0: none), as torch.cuda.set_per_process_memory_fraction does. */
void ms_model_set_limit(struct ms_model *m, uint64_t bytes);
/* torch.cuda.empty_cache(): release every cached segment with nothing allocated in it. */
void ms_model_empty_cache(struct ms_model *m);
/* emptyCache(pool) of a private pool (a MemPool's destructor): that pool's free segments alone
 * go back, the same way (§14.5). */
void ms_model_empty_pool_cache(struct ms_model *m, uint16_t pool);

/* The caller's labels on a block (a replay stores the allocating event and its stack). */
void ms_model_block_set_tag(struct ms_model_block *b, uint64_t index, uint32_t stack);
void ms_model_block_tag(const struct ms_model_block *b, uint64_t *index, uint32_t *stack);

/* A block next to a free one, as an OOM report shows it. */
struct ms_model_neighbour {
	int present;
	uint64_t addr, size, index;
	uint32_t stack;
	uint8_t state; /* enum ms_block_state */
	uint8_t mapped;
};

/* A neighbour's state as reports name it: "allocated", "pending_free", "free", "unmapped". */
const char *ms_model_neighbour_state(const struct ms_model_neighbour *n);

/* A free block of the pool a request failed in, with its neighbours. */
struct ms_model_hole {
	uint64_t addr, size, segment_addr;
	struct ms_model_neighbour before, after;
};

/* The max largest free blocks of stream's small or large pool, largest first; returns how many. */
size_t ms_model_largest_free(const struct ms_model *m, uint64_t stream, int small,
                             struct ms_model_hole *out, size_t max);

uint64_t ms_model_block_addr(const struct ms_model_block *b);
uint64_t ms_model_block_size(const struct ms_model_block *b);
uint64_t ms_model_block_requested(const struct ms_model_block *b);
const struct ms_model_stats *ms_model_stats(const struct ms_model *m);
/* Free bytes in reserved segments and the largest free block, now. */
void ms_model_free_space(const struct ms_model *m, uint64_t *free_bytes, uint64_t *largest);

/*
 * Check the model's invariants: blocks tile their segments, pools hold exactly the free mapped
 * blocks, no two free neighbours are left unmerged, and the statistics equal the sums over the
 * blocks. held: every block handed out and not yet free_completed (the model keeps no list of
 * them). Returns 0, or -1 with the reason in why. For tests and fuzzing: O(blocks).
 */
int ms_model_check(const struct ms_model *m, struct ms_model_block *const *held, size_t n_held,
                   char *why, size_t cap);

/*
 * Traces that start mid-run: put a segment that existed before the first event into the model.
 * blocks (n, in address order, tiling the segment) carry their state (enum ms_block_state),
 * size and requested size; out (n entries, may be NULL) gets the model block of each
 * allocated or pending one. Expandable segments cannot be imported (MS_ERR_UNSUPPORTED).
 */
ms_status ms_model_import_segment(struct ms_model *m, const struct ms_segment *s,
                                  const struct ms_block *blocks, struct ms_model_block **out);

/*
 * The state now as PyTorch's snapshot reports it: segments in address order (an expandable
 * segment as one segment per mapped range), each followed in blocks by its blocks in address
 * order; a block's stack is its tag. held: every block handed out and not free_completed.
 * The caller frees both arrays with ms_free().
 */
ms_status ms_model_snapshot(const struct ms_model *m, struct ms_model_block *const *held,
                            size_t n_held, struct ms_segment **segs, size_t *n_segs,
                            struct ms_block **blocks, size_t *n_blocks);

#endif
