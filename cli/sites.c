/* Allocation sites: --frames, the frames printed with a site, grouping for stats and diff. */
#include "cli/sites.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/messages.h"
#include "common/alloc.h"

void ms_frames_opt_check(struct ms_frames_opt *f, const struct ms_opt *opts,
                         const char *const *usage)
{
	char *end;
	unsigned long long v;

	f->n = MS_FRAMES_USER;
	if (!f->arg || !strcmp(f->arg, "user"))
		return;
	if (!strcmp(f->arg, "all")) {
		f->n = MS_FRAMES_ALL;
		return;
	}
	errno = 0;
	v = strtoull(f->arg, &end, 10);
	if (errno || !f->arg[0] || *end || f->arg[0] == '-' || v < 1 || v >= MS_FRAMES_ALL)
		ms_usage_error(opts, usage,
		               "--frames must be user, all or a number of frames, not '%s'",
		               f->arg);
	f->n = (uint32_t)v;
}

/* The command's --site-depth: set once, before anything reads it. */
static uint32_t g_site_depth = 1;

void ms_site_depth_set(int depth, const struct ms_opt *opts, const char *const *usage)
{
	if (depth < 1 || depth > 64)
		ms_usage_error(opts, usage, "--site-depth must be 1 to 64, not %d", depth);
	g_site_depth = (uint32_t)depth;
}

uint32_t ms_site_depth(void)
{
	return g_site_depth;
}

void ms_site_label(const struct ms_symtab *y, uint32_t stack, char *buf, size_t cap)
{
	ms_stack_label_depth(y, stack, g_site_depth, buf, cap);
}

/* The positions --frames shows of stack (caller frees), their number and the site's index. */
static size_t *shown(const struct ms_symtab *y, uint32_t stack, uint32_t frames, size_t *n,
                     size_t *site)
{
	size_t depth, *pos;

	*n = 0;
	if (!stack)
		return NULL;
	ms_symtab_get_stack(y, stack, &depth);
	if (!(pos = ms_malloc(sizeof(*pos) * (depth ? depth : 1))))
		ms_die(MS_EXIT_ERROR, "out of memory");
	*n = ms_site_frames(y, stack, frames, pos, depth, site);
	return pos;
}

void ms_site_print_frames(const struct ms_symtab *y, uint32_t stack, uint32_t frames, int indent)
{
	size_t n, site = 0, *pos;
	const uint32_t *fr;
	size_t depth;

	if (frames == MS_FRAMES_USER || !(pos = shown(y, stack, frames, &n, &site)))
		return;
	fr = ms_symtab_get_stack(y, stack, &depth);
	for (size_t i = frames == MS_FRAMES_ALL ? 0 : 1; i < n; i++) {
		char label[1024];
		ms_frame_label(y, fr[pos[i]], label, sizeof(label));
		printf("%*s%s%s\n", indent > 2 ? indent - 2 : 0, "",
		       frames == MS_FRAMES_ALL && i == site ? "> " : "  ", label);
	}
	ms_free(pos);
}

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

const char *ms_site_key(struct ms_buf *b, const struct ms_symtab *y, uint32_t stack,
                        uint32_t frames)
{
	size_t n, *pos, depth;
	const uint32_t *fr;
	char label[1024];

	b->len = 0;
	if (frames == MS_FRAMES_USER || !(pos = shown(y, stack, frames, &n, NULL))) {
		ms_site_label(y, stack, label, sizeof(label));
		unqualify(label);
		if (ms_buf_append(b, label, strlen(label) + 1))
			ms_die(MS_EXIT_ERROR, "out of memory");
		return b->data;
	}
	fr = ms_symtab_get_stack(y, stack, &depth);
	for (size_t i = 0; i < n; i++) {
		ms_frame_label(y, fr[pos[i]], label, sizeof(label));
		if (ms_buf_printf(b, "%s%s", i ? "\n" : "", label))
			ms_die(MS_EXIT_ERROR, "out of memory");
	}
	if (ms_buf_append(b, "", 1))
		ms_die(MS_EXIT_ERROR, "out of memory");
	ms_free(pos);
	return b->data;
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
                                   uint32_t frames, size_t *n)
{
	struct ms_site_row *rows = ms_calloc(r->n_sites ? r->n_sites : 1, sizeof(*rows));
	struct ms_label_rows by;
	struct ms_buf key = MS_BUF_INIT;

	if (!rows)
		ms_die(MS_EXIT_ERROR, "out of memory");
	ms_label_rows_init(&by);
	for (size_t i = 0; i < r->n_sites; i++) {
		size_t q;
		int added;
		q = ms_label_row(&by, ms_site_key(&key, y, r->sites[i].stack, frames), &added);
		if (added) {
			ms_site_label(y, r->sites[i].stack, rows[q].label, sizeof(rows[q].label));
			rows[q].stack = r->sites[i].stack;
		}
		rows[q].bytes += r->sites[i].bytes;
		rows[q].count += r->sites[i].count;
		rows[q].stacks++;
	}
	*n = by.n;
	ms_label_rows_release(&by);
	ms_buf_release(&key);
	qsort(rows, *n, sizeof(*rows), row_desc);
	return rows;
}
