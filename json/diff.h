/* diff's result (explain/diff.h) as diff --json writes it for one pair of devices. */
#ifndef MEMSNAP_JSON_DIFF_H
#define MEMSNAP_JSON_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "explain/diff.h"

struct cJSON;

/*
 * A new object (NULL: out of memory): top rows of the site and annotation tables (every step),
 * a site's frames as frames asks (replay/site.h).
 */
struct cJSON *ms_diff_json(const struct ms_diff *d, size_t top, uint32_t frames);

#endif
