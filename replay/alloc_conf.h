/*
 * PYTORCH_CUDA_ALLOC_CONF: its grammar and keys as PyTorch 2.11 parses them
 * (torch-allocator.md §6), into the settings the allocator model uses.
 */
#ifndef MEMSNAP_REPLAY_ALLOC_CONF_H
#define MEMSNAP_REPLAY_ALLOC_CONF_H

#include <stdint.h>

#include "common/event.h"

#define MS_MIB (1024ull * 1024ull)

struct ms_alloc_conf {
	uint64_t max_split_size;         /* UINT64_MAX = unlimited */
	uint64_t max_non_split_rounding; /* default 20 MiB */
	uint64_t large_segment_size;     /* default 20 MiB */
	uint32_t roundup_power2_divisions[16];
	double garbage_collection_threshold; /* 0 = off */
	double per_process_memory_fraction;  /* 1 = no limit from the config */
	uint8_t expandable_segments;
	uint8_t release_lock_on_cudamalloc;
	uint8_t native_backend; /* 0 for backend:cudaMallocAsync */
	/* read and kept, not modelled: the replay completes a capture's deferred frees where the
	   trace recorded them (torch-allocator.md 14.4) */
	uint8_t graph_capture_record_stream_reuse;
};

/* PyTorch's defaults. */
void ms_alloc_conf_init(struct ms_alloc_conf *c);

/*
 * Parse s (PYTORCH_CUDA_ALLOC_CONF syntax: key:value[,key:value...], lists as key:[a:b,...])
 * on top of c. As in PyTorch, max_split_size_mb, roundup_power2_divisions and
 * garbage_collection_threshold are reset to their defaults unless given.
 * @return MS_OK or MS_ERR_INVALID_ARG with the reason in diag
 */
ms_status ms_alloc_conf_parse(struct ms_alloc_conf *c, const char *s, struct ms_diag *diag);

/* The settings a snapshot recorded (allocator_settings); where it recorded none, the defaults,
 * with expandable segments if its events or segments show them (expandable_seen). */
void ms_alloc_conf_from_settings(struct ms_alloc_conf *c, const struct ms_settings *s);

/* Those settings as a PYTORCH_CUDA_ALLOC_CONF string: the recorded one,
 * "expandable_segments:True" where only the trace shows them, else "" (the defaults). */
const char *ms_settings_alloc_conf(const struct ms_settings *s);

#endif
