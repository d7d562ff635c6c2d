/* Allocation sites as people read them: a stack shown by its first frame outside torch. */
#ifndef MEMSNAP_CLI_SITES_H
#define MEMSNAP_CLI_SITES_H

#include "common/symtab.h"
#include "replay/site.h"
#include "replay/trace_stats.h"

/* "name (file:line)" of the first frame outside torch's own files, else the innermost. */
void ms_site_label(const struct ms_symtab *y, uint32_t stack, char *buf, size_t cap);

struct ms_site_row {
	char label[512];
	uint64_t bytes, count;
	uint32_t stacks;
};

/*
 * Labels to dense row numbers 0, 1, ... in order of first sight, found by hash (a symtab):
 * grouping a trace's sites or annotations by name stays linear however many there are.
 */
struct ms_label_rows {
	struct ms_symtab t;
	uint32_t *row_of; /* symtab string id -> row */
	size_t cap, n;
	size_t empty; /* the row of "", or SIZE_MAX (the symtab keeps "" as id 0) */
};
void ms_label_rows_init(struct ms_label_rows *l);
/* The row of label; *added is set when it is new (its row is then n - 1). Dies on OOM. */
size_t ms_label_row(struct ms_label_rows *l, const char *label, int *added);
void ms_label_rows_release(struct ms_label_rows *l);

/* The sites at the peak of r grouped by label, largest first; caller frees with ms_free. */
struct ms_site_row *ms_group_sites(const struct ms_symtab *y, const struct ms_trace_stats *r,
                                   size_t *n);

#endif
