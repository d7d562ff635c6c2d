/*
 * replay --backend cuda: a real GPU under memsnap's allocator model (struct ms_model_device).
 * Segments are cudaMalloc/cudaFree; expandable segments are address ranges reserved with
 * cuMemAddressReserve and mapped page by page (cuMemCreate, cuMemMap, cuMemSetAccess; undone by
 * cuMemUnmap, cuMemRelease). The CUDA runtime and driver are loaded at run time, so memsnap
 * starts and replays on the simulated device where neither exists. Every call is timed.
 * One device per process; not thread-safe.
 */
#ifndef MEMSNAP_REPLAY_DEVICE_CUDA_H
#define MEMSNAP_REPLAY_DEVICE_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "memsnap/memsnap.h"
#include "replay/model.h"

struct ms_cuda_dev;

/* Driver-call latencies of one kind. */
struct ms_cuda_timing {
	const char *call; /* "cudaMalloc", "cuMemMap", ... */
	uint64_t n;
	double p50_us, p99_us, max_us, total_ms;
};

enum { MS_CUDA_N_CALLS = 8 };

/*
 * Open device (the CUDA runtime and driver, a context). limit: the replay's limit in bytes
 * (0: none), refused when above the device's free memory.
 * @return MS_OK, MS_ERR_BACKEND (no CUDA, no device, no such device: d says which),
 *   MS_ERR_INVALID_ARG (the limit), MS_ERR_NOMEM.
 */
ms_status ms_cuda_open(int device, uint64_t limit, struct ms_cuda_dev **out, struct ms_diag *d);
/* The model's view of it (valid until ms_cuda_close). */
const struct ms_model_device *ms_cuda_model_device(struct ms_cuda_dev *c);
/* cudaMemGetInfo now. */
void ms_cuda_mem_info(struct ms_cuda_dev *c, uint64_t *free_bytes, uint64_t *total);
/* When the device first refused memory (cudaMalloc or cuMemCreate out of memory): 1 and
 * cudaMemGetInfo at that moment; 0 if it never did (an OOM then came from the limit). */
int ms_cuda_oom_info(const struct ms_cuda_dev *c, uint64_t *free_bytes, uint64_t *total);
/* Bytes in use on the device before memsnap allocated anything: the CUDA context's own (and
 * other processes'). */
uint64_t ms_cuda_context_bytes(const struct ms_cuda_dev *c);
/* The device's name. */
const char *ms_cuda_name(const struct ms_cuda_dev *c);
/* Latencies of the calls made so far, one entry per kind used; returns how many. */
size_t ms_cuda_timings(const struct ms_cuda_dev *c, struct ms_cuda_timing *out, size_t max);
/* Free every allocation, mapping and reservation still held; c is freed. */
void ms_cuda_close(struct ms_cuda_dev *c);

/* Set by a SIGINT handler: the next device call fails as out of memory, ending the replay. */
extern volatile int ms_cuda_interrupted;

#endif
