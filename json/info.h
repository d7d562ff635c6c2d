/* What a file holds (analysis/file_info.h) as info --json writes it. */
#ifndef MEMSNAP_JSON_INFO_H
#define MEMSNAP_JSON_INFO_H

#include "analysis/file_info.h"
#include "parse/trace.h"

struct cJSON;

/* A new object (NULL: out of memory): path names the file, si is its read, d its warnings. */
struct cJSON *ms_file_info_json(const char *path, const struct ms_file_info *x,
                                const struct ms_source_info *si, const struct ms_diag *d);

#endif
