/*
 * Allocation sites as people read them (replay/site.h: a stack shown by its user code), the
 * --frames option of the commands that print them, and their grouping for stats and diff.
 */
#ifndef MEMSNAP_CLI_SITES_H
#define MEMSNAP_CLI_SITES_H

#include "analysis/trace_stats.h"
#include "analysis/user_cats.h"
#include "cli/opts.h"
#include "common/buf.h"
#include "common/symtab.h"
#include "json/site.h"
#include "replay/site.h"
#include "replay/site_rows.h"

struct cJSON;

/*
 * --frames user|all|N: which frames are printed where a site is. user (the default): the site
 * alone; all: below it, the whole stack; N: below it, its N - 1 callers of the same kind.
 */
struct ms_frames_opt {
	const char *arg; /* as given; NULL: user */
	uint32_t n;      /* MS_FRAMES_USER, MS_FRAMES_ALL or N, after ms_frames_opt_check */
};
#define MS_FRAMES_OPT_HELP \
	"frames printed with a site: user (default), all, or N (the site, N-1 callers)"
#define MS_OPT_FRAMES(f) MS_OPT_STRING(0, "frames", &(f)->arg, "user|all|N", MS_FRAMES_OPT_HELP)
/* Parse f->arg into f->n; a bad value is a usage error (exit 2). */
void ms_frames_opt_check(struct ms_frames_opt *f, const struct ms_opt *opts,
                         const char *const *usage);

/*
 * --site-depth N: sites as the site's frame and up to N - 1 frames of the user's or a library's
 * code further in (replay/site.h, ms_site_chain), labels joined by " > ": where a model's whole
 * forward is one line, 2 splits it by the library's forward called there. For the whole command.
 */
#define MS_SITE_DEPTH_HELP                                                                    \
	"sites as the site and up to N-1 frames of user or library code it called (1 to 64; " \
	"default 1)"
#define MS_OPT_SITE_DEPTH(v) MS_OPT_INT(0, "site-depth", v, "N", MS_SITE_DEPTH_HELP)
/* Check *depth (1 to 64, else a usage error, exit 2) and make it the site depth. */
void ms_site_depth_set(int depth, const struct ms_opt *opts, const char *const *usage);
uint32_t ms_site_depth(void);

/* The user's categories (analysis/user_cats.h): --category NAME=REGEX (repeatable) and
 * --categories FILE, two entries of a command's option table. */
struct ms_user_cats_args {
	struct ms_opt_list specs;
	const char *file;
};
#define MS_USER_CATS_OPTS(a)                                                                \
	MS_OPT_LIST(0, "category", &(a)->specs, "NAME=REGEX",                               \
	            "a category of your own: allocations one of whose frames (\"file:line " \
	            "function\") the extended regular expression matches; repeatable, the " \
	            "first that matches wins, over memsnap's own categories"),              \
	        MS_OPT_STRING(0, "categories", &(a)->file, "FILE",                          \
	                      "categories of your own, a NAME=REGEX a line (# comments)")
/* Make the command's categories of a (a usage error exits 2; a file that cannot be read exits
 * 1). */
void ms_user_cats_set(const struct ms_user_cats_args *a, const struct ms_opt *opts,
                      const char *const *usage);
/* The command's categories, or NULL where none were given. */
const struct ms_user_cats *ms_user_cats_opt(void);

/* The label of a stack's site at the site depth (ms_stack_label_depth). */
void ms_site_label(const struct ms_symtab *y, uint32_t stack, char *buf, size_t cap);
/*
 * Text: the lines --frames adds below a printed site, each indented by indent columns: with
 * all, every frame, the site's marked "> "; with N, the N - 1 callers. Nothing for user.
 */
void ms_site_print_frames(const struct ms_symtab *y, uint32_t stack, uint32_t frames, int indent);
/*
 * What sites are grouped by (replay/site_rows.h, at the command's site depth). Into b (cleared
 * first; NUL-terminated). Dies on OOM.
 */
const char *ms_site_key(struct ms_buf *b, const struct ms_symtab *y, uint32_t stack,
                        uint32_t frames);

/* The row of label (replay/site_rows.h); out of memory ends the command. */
size_t ms_label_row_or_die(struct ms_label_rows *l, const char *label, int *added);

/*
 * The sites at the peak of r grouped by what --frames shows of them (ms_site_key), largest
 * first; caller frees with ms_free.
 */
struct ms_site_row *ms_group_sites(const struct ms_symtab *y, const struct ms_trace_stats *r,
                                   uint32_t frames, size_t *n);

#endif
