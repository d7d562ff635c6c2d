/* The frames a site shows, as JSON: what --frames prints below a site (cli/sites.h). */
#ifndef MEMSNAP_JSON_SITE_H
#define MEMSNAP_JSON_SITE_H

#include <stdint.h>

#include "common/symtab.h"
#include "replay/site.h"

struct cJSON;

/*
 * JSON: into o, "stack": [{"name", "filename", "line"}] of the frames --frames shows (the site
 * first, or with all the whole stack and "site_frame", the site's index). Nothing for user.
 */
void ms_site_json_frames(struct cJSON *o, const struct ms_symtab *y, uint32_t stack,
                         uint32_t frames);

#endif
