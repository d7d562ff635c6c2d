/* verify's comparison (replay/verify.h) as verify --json writes it for one device. */
#ifndef MEMSNAP_JSON_VERIFY_H
#define MEMSNAP_JSON_VERIFY_H

#include <stdint.h>

#include "replay/replay.h"
#include "replay/run.h"
#include "replay/verify.h"

struct cJSON;

/* A new object (NULL: out of memory): path and device name the input; r is the replay, v its
 * comparison, lim the limit inferred (or not). */
struct cJSON *ms_verify_json(const char *path, uint32_t device, const struct ms_replay_result *r,
                             const struct ms_verify *v, const struct ms_limit_range *lim);

#endif
