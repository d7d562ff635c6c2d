/* Allocation sites: labels and grouping shared by stats and diff. */
#include "cli/sites.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/out.h"
#include "common/alloc.h"

void ms_site_label(const struct ms_symtab *y, uint32_t stack, char *buf, size_t cap)
{
	ms_stack_label(y, stack, buf, cap);
}

static int row_desc(const void *x, const void *y)
{
	const struct ms_site_row *a = x, *b = y;

	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? 1 : -1;
	return strcmp(a->label, b->label);
}

struct ms_site_row *ms_group_sites(const struct ms_symtab *y, const struct ms_trace_stats *r,
                                   size_t *n)
{
	struct ms_site_row *rows = ms_calloc(r->n_sites ? r->n_sites : 1, sizeof(*rows));
	size_t k = 0;

	if (!rows)
		ms_die(MS_EXIT_ERROR, "out of memory");
	for (size_t i = 0; i < r->n_sites; i++) {
		char label[512];
		size_t q;
		ms_site_label(y, r->sites[i].stack, label, sizeof(label));
		for (q = 0; q < k; q++)
			if (strcmp(rows[q].label, label) == 0)
				break;
		if (q == k)
			memcpy(rows[k++].label, label, sizeof(label));
		rows[q].bytes += r->sites[i].bytes;
		rows[q].count += r->sites[i].count;
		rows[q].stacks++;
	}
	qsort(rows, k, sizeof(*rows), row_desc);
	*n = k;
	return rows;
}
