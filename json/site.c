/* The frames --frames shows of a site, as JSON (site.h). */
#include "json/site.h"

#include <cjson/cJSON.h>

#include "common/alloc.h"

void ms_site_json_frames(struct cJSON *o, const struct ms_symtab *y, uint32_t stack,
                         uint32_t frames)
{
	size_t n, site = 0, *pos, depth;
	const uint32_t *fr;
	cJSON *a;

	if (frames == MS_FRAMES_USER)
		return;
	fr = ms_symtab_get_stack(y, stack, &depth);
	if (!stack || !(pos = ms_malloc(sizeof(*pos) * (depth ? depth : 1)))) {
		cJSON_AddNullToObject(o, "stack"); /* no stack, or no memory for its frames */
		return;
	}
	n = ms_site_frames(y, stack, frames, pos, depth, &site);
	a = cJSON_AddArrayToObject(o, "stack");
	for (size_t i = 0; i < n; i++) {
		const struct ms_frame *f = &y->frames[fr[pos[i]]];
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "name", ms_symtab_get_str(y, f->name)->s);
		cJSON_AddStringToObject(e, "filename", ms_symtab_get_str(y, f->file)->s);
		cJSON_AddNumberToObject(e, "line", f->line);
		cJSON_AddItemToArray(a, e);
	}
	if (frames == MS_FRAMES_ALL)
		cJSON_AddNumberToObject(o, "site_frame", (double)site);
	ms_free(pos);
}
