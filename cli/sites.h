/* Allocation sites as people read them: a stack shown by its first frame outside torch. */
#ifndef MEMSNAP_CLI_SITES_H
#define MEMSNAP_CLI_SITES_H

#include "common/symtab.h"
#include "replay/trace_stats.h"

/* "name (file:line)" of the first frame outside torch's own files, else the innermost. */
void ms_site_label(const struct ms_symtab *y, uint32_t stack, char *buf, size_t cap);

struct ms_site_row {
	char label[512];
	uint64_t bytes, count;
	uint32_t stacks;
};

/* The sites at the peak of r grouped by label, largest first; caller frees with ms_free. */
struct ms_site_row *ms_group_sites(const struct ms_symtab *y, const struct ms_trace_stats *r,
                                   size_t *n);

#endif
