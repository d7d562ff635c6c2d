/* whatif's report (explain/whatif_report.h) as whatif --json writes it for one device. */
#ifndef MEMSNAP_JSON_WHATIF_H
#define MEMSNAP_JSON_WHATIF_H

#include "explain/whatif_report.h"

struct cJSON;

/* One setting's row: its replay and whether the job would have survived under it (sv; NULL:
 * not judged), as whatif --json's settings[] and the page carry it. NULL: out of memory. */
struct cJSON *ms_whatif_row_json(const struct ms_whatif_row *j, const struct ms_survival *sv);
/* A new object (NULL: out of memory); path names the input. */
struct cJSON *ms_whatif_report_json(const struct ms_whatif_report *r, const char *path);

#endif
