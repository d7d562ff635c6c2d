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

void ms_label_rows_init(struct ms_label_rows *l)
{
	memset(l, 0, sizeof(*l));
	l->empty = SIZE_MAX;
	if (ms_symtab_init(&l->t))
		ms_die(MS_EXIT_ERROR, "out of memory");
}

size_t ms_label_row(struct ms_label_rows *l, const char *label, int *added)
{
	size_t before = ms_symtab_nstrs(&l->t);
	uint32_t id;

	*added = 0;
	if (!label[0]) {
		if (l->empty == SIZE_MAX)
			l->empty = l->n++, *added = 1;
		return l->empty;
	}
	if (ms_symtab_str(&l->t, label, strlen(label), &id))
		ms_die(MS_EXIT_ERROR, "out of memory");
	if (ms_symtab_nstrs(&l->t) > before) { /* new: ids are dense, so is row_of */
		if (ms_grow(&l->row_of, &l->cap, (size_t)id + 1, sizeof(*l->row_of)))
			ms_die(MS_EXIT_ERROR, "out of memory");
		l->row_of[id] = (uint32_t)l->n++;
		*added = 1;
	}
	return l->row_of[id];
}

void ms_label_rows_release(struct ms_label_rows *l)
{
	ms_symtab_release(&l->t);
	ms_free(l->row_of);
	memset(l, 0, sizeof(*l));
}

struct ms_site_row *ms_group_sites(const struct ms_symtab *y, const struct ms_trace_stats *r,
                                   size_t *n)
{
	struct ms_site_row *rows = ms_calloc(r->n_sites ? r->n_sites : 1, sizeof(*rows));
	struct ms_label_rows by;

	if (!rows)
		ms_die(MS_EXIT_ERROR, "out of memory");
	ms_label_rows_init(&by);
	for (size_t i = 0; i < r->n_sites; i++) {
		char label[512];
		size_t q;
		int added;
		ms_site_label(y, r->sites[i].stack, label, sizeof(label));
		q = ms_label_row(&by, label, &added);
		if (added)
			memcpy(rows[q].label, label, sizeof(label));
		rows[q].bytes += r->sites[i].bytes;
		rows[q].count += r->sites[i].count;
		rows[q].stacks++;
	}
	*n = by.n;
	ms_label_rows_release(&by);
	qsort(rows, *n, sizeof(*rows), row_desc);
	return rows;
}
