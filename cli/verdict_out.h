/*
 * The verdict (explain/verdict.h) as the commands print it: one serializer for JSON, one wording
 * for text, whichever command shows it (explain, replay, whatif).
 */
#ifndef MEMSNAP_CLI_VERDICT_OUT_H
#define MEMSNAP_CLI_VERDICT_OUT_H

#include <cjson/cJSON.h>

#include "explain/verdict.h"
#include "json/verdict.h"

/* The cause as one line of text (each line after indent), then what it rests on; d may be NULL
 * where the steps were not read. reserved: PyTorch's reserved bytes at the OOM. */
void ms_verdict_print_oom_cause(const struct ms_oom_verdict *v, const struct ms_death *d,
                                uint64_t reserved, const char *indent);

/* Traces up to this many events are read whole for a verdict (about 56 bytes an event) */
#define MS_CLI_VERDICT_EVENTS 4000000

#endif
