/* explain's report (explain/report.h) as explain --json writes it for one device. */
#ifndef MEMSNAP_JSON_EXPLAIN_H
#define MEMSNAP_JSON_EXPLAIN_H

#include "explain/report.h"

struct cJSON;

/* A new object (NULL: out of memory); path names the input. */
struct cJSON *ms_explain_report_json(const struct ms_explain_report *r, const char *path);

#endif
