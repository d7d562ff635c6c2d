/*
 * The verdict (explain/verdict.h) as the commands print it: one serializer for JSON, one wording
 * for text, whichever command shows it (explain, replay, whatif).
 */
#ifndef MEMSNAP_CLI_VERDICT_OUT_H
#define MEMSNAP_CLI_VERDICT_OUT_H

#include <cjson/cJSON.h>

#include "explain/verdict.h"

/* The OOM's cause into object o: cause, undecided_because, causes, demand_projected,
 * device_full, device_free_bytes, outside_pytorch_bytes. */
void ms_verdict_json_oom_cause(cJSON *o, const struct ms_oom_verdict *v);
/* A setting's survival into object o: survives, survives_why, margin_bytes. */
void ms_verdict_json_survival(cJSON *o, const struct ms_survival *sv);
/* The cause as one line of text (each line after indent), then what it rests on; d may be NULL
 * where the steps were not read. reserved: PyTorch's reserved bytes at the OOM. */
void ms_verdict_print_oom_cause(const struct ms_oom_verdict *v, const struct ms_death *d,
                                uint64_t reserved, const char *indent);

#endif
