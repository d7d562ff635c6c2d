/*
 * Allocation sites grouped for a table (stats' top sites, diff's rows): by what --frames shows of
 * them, each group's bytes and allocations, largest first; and labels to dense row numbers.
 */
#ifndef MEMSNAP_REPLAY_SITE_ROWS_H
#define MEMSNAP_REPLAY_SITE_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/trace_stats.h"
#include "common/buf.h"
#include "common/symtab.h"
#include "memsnap/memsnap.h"

struct ms_site_row {
	char label[512];
	uint32_t stack; /* the first stack of the group (they all show the same frames) */
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
ms_status ms_label_rows_init(struct ms_label_rows *l);
/* The row of label into *row; *added is set when it is new (its row is then n - 1). */
ms_status ms_label_row(struct ms_label_rows *l, const char *label, size_t *row, int *added);
void ms_label_rows_release(struct ms_label_rows *l);

/*
 * What sites are grouped by, into b (cleared first; NUL-terminated; *key its text): the site's
 * label at site depth depth, or, with frames all or N, the labels of every frame shown, one a
 * line.
 */
ms_status ms_site_rows_key(struct ms_buf *b, const struct ms_symtab *y, uint32_t stack,
                           uint32_t frames, uint32_t depth, const char **key);
/* sites[0..n) grouped by their key, largest first, into *rows (caller frees with ms_free). */
ms_status ms_site_rows_group(const struct ms_symtab *y, const struct ms_stats_site *sites, size_t n,
                             uint32_t frames, uint32_t depth, struct ms_site_row **rows,
                             size_t *n_rows);

#endif
