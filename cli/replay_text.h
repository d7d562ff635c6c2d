/* A replay's result (replay/replay.h) as `memsnap replay` prints it. */
#ifndef MEMSNAP_CLI_REPLAY_TEXT_H
#define MEMSNAP_CLI_REPLAY_TEXT_H

#include <stdint.h>

#include "explain/verdict.h"
#include "replay/replay.h"
#include "replay/run.h"

struct ms_cuda_dev;

/*
 * The replay under label: frames what --frames shows of a holder's stack; narrowed: --device
 * chose the device; as_recorded: replayed with the recorded settings (a divergence is said);
 * ov, death: the OOM's cause and how the job died (NULL: not judged).
 */
void ms_replay_print(const char *label, const struct ms_replay_result *r,
                     const struct ms_limit_range *lim, uint32_t frames, int narrowed,
                     int as_recorded, const struct ms_oom_verdict *ov,
                     const struct ms_death *death);
/* --backend cuda: the device, its context and the driver calls' latencies. */
void ms_replay_print_cuda(struct ms_cuda_dev *dev);

#endif
