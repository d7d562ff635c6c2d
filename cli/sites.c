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

/* The command's categories: made once, kept to its exit. */
static struct ms_user_cats *g_user_cats;

void ms_user_cats_set(const struct ms_user_cats_args *a, const struct ms_opt *opts,
                      const char *const *usage)
{
	char err[1400];
	ms_status s = MS_OK;

	if (!a->specs.n && !a->file)
		return;
	if (!(g_user_cats = ms_user_cats_new()))
		ms_die(MS_EXIT_ERROR, "out of memory");
	for (size_t i = 0; i < a->specs.n && !s; i++)
		s = ms_user_cats_add(g_user_cats, a->specs.v[i], err, sizeof(err));
	if (s == MS_ERR_INVALID_ARG)
		ms_usage_error(opts, usage, "--category: %s", err);
	if (!s && a->file)
		s = ms_user_cats_load(g_user_cats, a->file, err, sizeof(err));
	if (s == MS_ERR_NOMEM)
		ms_die(MS_EXIT_ERROR, "out of memory");
	if (s == MS_ERR_IO)
		ms_die(MS_EXIT_ERROR, "--categories: %s", err);
	if (s)
		ms_usage_error(opts, usage, "--categories: %s", err);
}

const struct ms_user_cats *ms_user_cats_opt(void)
{
	return g_user_cats;
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

const char *ms_site_key(struct ms_buf *b, const struct ms_symtab *y, uint32_t stack,
                        uint32_t frames)
{
	const char *key;

	if (ms_site_rows_key(b, y, stack, frames, g_site_depth, &key))
		ms_die(MS_EXIT_ERROR, "out of memory");
	return key;
}

size_t ms_label_row_or_die(struct ms_label_rows *l, const char *label, int *added)
{
	size_t row;

	if (ms_label_row(l, label, &row, added))
		ms_die(MS_EXIT_ERROR, "out of memory");
	return row;
}

struct ms_site_row *ms_group_sites(const struct ms_symtab *y, const struct ms_trace_stats *r,
                                   uint32_t frames, size_t *n)
{
	struct ms_site_row *rows;

	if (ms_site_rows_group(y, r->sites, r->n_sites, frames, g_site_depth, &rows, n))
		ms_die(MS_EXIT_ERROR, "out of memory");
	return rows;
}
