/* A stats result (analysis/stats_view.h) as stats --json writes it for one file and device. */
#ifndef MEMSNAP_JSON_STATS_H
#define MEMSNAP_JSON_STATS_H

#include "analysis/stats_view.h"

struct cJSON;

/* A new object (NULL: out of memory). */
struct cJSON *ms_stats_json(const struct ms_stats_view *v);

#endif
