/* check's gate (explain/check.h) as check --json writes it for one device. */
#ifndef MEMSNAP_JSON_CHECK_H
#define MEMSNAP_JSON_CHECK_H

#include <stdint.h>

#include "explain/check.h"

struct cJSON;

/* A new object (NULL: out of memory): path and device name the input. */
struct cJSON *ms_check_json(const char *path, uint32_t device, const struct ms_check_budgets *b,
                            const struct ms_check_figures *f, const struct ms_check_result *res);

#endif
