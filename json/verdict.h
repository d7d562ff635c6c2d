/*
 * The verdict (verdict.h) as JSON: one serializer, whichever result carries it (explain, replay,
 * whatif, the page).
 */
#ifndef MEMSNAP_JSON_VERDICT_H
#define MEMSNAP_JSON_VERDICT_H

#include "explain/verdict.h"

struct cJSON;

/* The OOM's cause into object o: cause, undecided_because, causes, demand_projected,
 * device_full, device_free_bytes, outside_pytorch_bytes. */
void ms_verdict_json_oom_cause(struct cJSON *o, const struct ms_oom_verdict *v);
/* A setting's survival into object o: survives, survives_why, margin_bytes (all null where sv
 * is NULL: not judged). */
void ms_verdict_json_survival(struct cJSON *o, const struct ms_survival *sv);
/* The verdict as the page carries it: headline, and oom (the OOM's cause as above) or null.
 * A new object (NULL: out of memory). */
struct cJSON *ms_verdict_json(const struct ms_verdict *v);

#endif
