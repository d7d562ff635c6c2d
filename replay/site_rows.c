/* Allocation sites grouped for a table (site_rows.h). */
#include "replay/site_rows.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "replay/site.h"

/*
 * A label's function names without what qualifies them ("gpt.<locals>.GPT.forward (m.py:100)"
 * -> "forward (m.py:100)"): a snapshot names a Python frame by its code's name, memsnap's
 * recorder by its qualified name, and the same site must match in both. The file and line
 * keep sites apart.
 */
static void unqualify(char *label)
{
	char *out = label, *seg = label;

	while (*seg) {
		char *open = strstr(seg, " (");
		char *end = strstr(seg, " > ");
		char *name = seg, *dot = NULL;
		if (open && (!end || open < end)) {
			for (char *p = seg; p < open; p++)
				if (*p == '.')
					dot = p;
			if (dot)
				name = dot + 1;
		}
		if (!end)
			end = seg + strlen(seg);
		else
			end += 3; /* keep the separator */
		memmove(out, name, (size_t)(end - name));
		out += end - name;
		seg = end;
	}
	*out = 0;
}

ms_status ms_site_rows_key(struct ms_buf *b, const struct ms_symtab *y, uint32_t stack,
                           uint32_t frames, uint32_t depth, const char **key)
{
	size_t n, site, depth_of, *pos = NULL;
	const uint32_t *fr;
	char label[1024];
	ms_status s = MS_OK;

	b->len = 0;
	*key = NULL;
	fr = ms_symtab_get_stack(y, stack, &depth_of);
	if (frames != MS_FRAMES_USER && stack &&
	    !(pos = ms_malloc(sizeof(*pos) * (depth_of ? depth_of : 1))))
		return MS_ERR_NOMEM;
	if (!pos) {
		ms_stack_label_depth(y, stack, depth, label, sizeof(label));
		unqualify(label);
		if ((s = ms_buf_append(b, label, strlen(label) + 1)))
			return s;
		*key = b->data;
		return MS_OK;
	}
	n = ms_site_frames(y, stack, frames, pos, depth_of, &site);
	for (size_t i = 0; i < n && !s; i++) {
		ms_frame_label(y, fr[pos[i]], label, sizeof(label));
		s = ms_buf_printf(b, "%s%s", i ? "\n" : "", label);
	}
	ms_free(pos);
	if (s || (s = ms_buf_append(b, "", 1)))
		return s;
	*key = b->data;
	return MS_OK;
}

static int row_desc(const void *x, const void *y)
{
	const struct ms_site_row *a = x, *b = y;
	int c;

	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? 1 : -1;
	if ((c = strcmp(a->label, b->label)))
		return c;
	return a->stack < b->stack ? -1 : a->stack > b->stack;
}

ms_status ms_label_rows_init(struct ms_label_rows *l)
{
	memset(l, 0, sizeof(*l));
	l->empty = SIZE_MAX;
	return ms_symtab_init(&l->t);
}

ms_status ms_label_row(struct ms_label_rows *l, const char *label, size_t *row, int *added)
{
	size_t before = ms_symtab_nstrs(&l->t);
	uint32_t id;
	ms_status s;

	*added = 0;
	if (!label[0]) {
		if (l->empty == SIZE_MAX)
			l->empty = l->n++, *added = 1;
		*row = l->empty;
		return MS_OK;
	}
	if ((s = ms_symtab_str(&l->t, label, strlen(label), &id)))
		return s;
	if (ms_symtab_nstrs(&l->t) > before) { /* new: ids are dense, so is row_of */
		if (ms_grow(&l->row_of, &l->cap, (size_t)id + 1, sizeof(*l->row_of)))
			return MS_ERR_NOMEM;
		l->row_of[id] = (uint32_t)l->n++;
		*added = 1;
	}
	*row = l->row_of[id];
	return MS_OK;
}

void ms_label_rows_release(struct ms_label_rows *l)
{
	ms_symtab_release(&l->t);
	ms_free(l->row_of);
	memset(l, 0, sizeof(*l));
}

ms_status ms_site_rows_group(const struct ms_symtab *y, const struct ms_stats_site *sites, size_t n,
                             uint32_t frames, uint32_t depth, struct ms_site_row **out,
                             size_t *n_rows)
{
	struct ms_site_row *rows = ms_calloc(n ? n : 1, sizeof(*rows));
	struct ms_label_rows by;
	struct ms_buf key = MS_BUF_INIT;
	ms_status s;

	*out = NULL;
	*n_rows = 0;
	if (!rows || (s = ms_label_rows_init(&by))) {
		ms_free(rows);
		return MS_ERR_NOMEM;
	}
	for (size_t i = 0; i < n && !s; i++) {
		size_t q;
		int added;
		const char *k;
		if ((s = ms_site_rows_key(&key, y, sites[i].stack, frames, depth, &k)) ||
		    (s = ms_label_row(&by, k, &q, &added)))
			break;
		if (added) {
			ms_stack_label_depth(y, sites[i].stack, depth, rows[q].label,
			                     sizeof(rows[q].label));
			rows[q].stack = sites[i].stack;
		}
		rows[q].bytes += sites[i].bytes;
		rows[q].count += sites[i].count;
		rows[q].stacks++;
	}
	*n_rows = by.n;
	ms_label_rows_release(&by);
	ms_buf_release(&key);
	if (s) {
		ms_free(rows);
		*n_rows = 0;
		return s;
	}
	qsort(rows, *n_rows, sizeof(*rows), row_desc);
	*out = rows;
	return MS_OK;
}
