/*
 * verify's comparison of one device: a replay's segment events, reserved peak, OOMs and (against
 * PyTorch's allocator) allocated peak and end state, against the reference: the recording, or
 * the model's replay of the same trace (--backend torch).
 */
#ifndef MEMSNAP_REPLAY_VERIFY_H
#define MEMSNAP_REPLAY_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "replay/replay.h"

struct ms_verify {
	int identical;
	int against_model;              /* the reference is the model's replay (--backend torch) */
	const struct ms_seg_event *ref; /* the reference's segment events (borrowed) */
	size_t n_ref;
	size_t first_divergence; /* the first segment event that differs; SIZE_MAX: none */
	uint64_t ref_peak;       /* the reference's reserved peak */
	int end_same; /* against the model: the segments at the end agree (1 otherwise) */
};

/* r against the recording (model NULL) or against model, the model's replay of the same trace
 * with its end state taken (o.snap). */
void ms_verify_compare(const struct ms_replay_result *r, const struct ms_replay_result *model,
                       struct ms_verify *v);

#endif
