/* whatif's report (explain/whatif_report.h) as whatif --json writes it for one device. */
#ifndef MEMSNAP_JSON_WHATIF_H
#define MEMSNAP_JSON_WHATIF_H

#include "explain/whatif_report.h"

struct cJSON;

/* A new object (NULL: out of memory); path names the input. */
struct cJSON *ms_whatif_report_json(const struct ms_whatif_report *r, const char *path);

#endif
