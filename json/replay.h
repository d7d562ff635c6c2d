/* A replay's result (replay/replay.h) as replay --json writes it for one device. */
#ifndef MEMSNAP_JSON_REPLAY_H
#define MEMSNAP_JSON_REPLAY_H

#include <stdint.h>

#include "explain/verdict.h"
#include "replay/replay.h"
#include "replay/run.h"

struct cJSON;
struct ms_cuda_dev;

/* o["limit_inferred"]: the range the recorded OOMs allow, {low_bytes, high_bytes}, or null where
 * the limit was not inferred. */
void ms_json_limit_inferred(struct cJSON *o, const struct ms_limit_range *lim);

/*
 * The windows a replay measured (analysis/window.h) into o as "windows", an array (empty where
 * none opened); nothing where none was asked.
 */
void ms_windows_json(struct cJSON *o, const struct ms_replay_result *r);
/*
 * A new object (NULL: out of memory): path and device name the input; lim is the limit inferred
 * (or not); dev the GPU the cuda backend ran on (NULL: none); frames what --frames shows of a
 * holder's stack; ov the OOM's cause (NULL: not judged).
 */
struct cJSON *ms_replay_result_json(const char *path, uint32_t device,
                                    const struct ms_replay_result *r,
                                    const struct ms_limit_range *lim, struct ms_cuda_dev *dev,
                                    uint32_t frames, const struct ms_oom_verdict *ov);

#endif
