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

struct ms_replay_cli;
struct ms_whatif_row;

/* Traces up to this many events are read whole for a verdict (about 56 bytes an event) */
#define MS_CLI_VERDICT_EVENTS 4000000

/*
 * The verdict of c's device of path (explain/verdict.h): from t when the caller holds the trace
 * whole, else read whole here (up to MS_CLI_VERDICT_EVENTS events; *has 0 beyond). r is the
 * replay with c's options, lim its inferred limit, rows the what-if rows judged (or none).
 * Release *v with ms_verdict_release() whatever the return.
 */
ms_status ms_cli_verdict(const struct ms_replay_cli *c, const char *path, const struct ms_trace *t,
                         const struct ms_replay_result *r, const struct ms_limit_range *lim,
                         const struct ms_whatif_row *rows, size_t n_rows, struct ms_verdict *v,
                         int *has, struct ms_diag *d);

#endif
