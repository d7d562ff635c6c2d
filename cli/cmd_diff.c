/* memsnap diff A B: what changed between two runs: peaks, sites and annotations. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/trace_stats.h"
#include "cli/cmds.h"
#include "cli/opts.h"
#include "cli/messages.h"
#include "cli/output_file.h"
#include "cli/replay_opts.h"
#include "cli/sites.h"
#include "explain/explain.h"
#include "common/alloc.h"
#include "parse/trace.h"

static const char *const usage[] = {
        "memsnap diff [--top N] [--json] [--frames user|all|N] [--site-depth N] [replay options] "
        "<a> <b>",
        "",
        "What changed from run A to run B: the peaks of the allocator replay (reserved,",
        "allocated, requested, segments, retries), what each peak is made of (memsnap",
        "explain's categories), each step's peak step by step, the bytes live at each run's",
        "peak by allocation site, and the peak requested bytes inside each annotation (PyTorch's",
        "record_function scopes, phases and steps). Sites and annotations are matched by name;",
        "with --frames all or N, sites by all the frames printed (see `memsnap help stats`).",
        NULL,
};

struct side {
	const char *path;
	uint32_t device;
	struct ms_replay_result r;
	struct ms_symtab syms;
	struct ms_stats_builder *b;
	const struct ms_trace_stats *st;
	struct ms_site_row *rows;
	size_t n_rows;
	struct ms_explain x; /* what each peak is made of (explain/explain.h) */
	int has_x;
	int cut_short; /* a memsnap trace without its END: what the file holds, not the run */
	/* what the run ran with: said first where the two differ */
	char torch[64], gpu[128];
	uint64_t gpu_total;
	struct ms_limit_range lim;
};

static int load(struct ms_replay_cli *c, struct side *s, uint32_t frames)
{
	struct ms_limit_range lim;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_sink sink;
	struct ms_replay_cli keep = *c;
	ms_status st;

	c->o.device = s->device;
	st = ms_replay_cli_run(c, s->path, &s->r, &lim, &d);
	s->lim = lim;
	ms_replay_cli_release(c);
	*c = keep;
	/* a cut trace is compared as far as it goes: said, once a file */
	if (!st && c->warned_path != s->path)
		ms_report_warnings(s->path, &d);
	if (!st && d.warnings)
		c->warned_path = s->path;
	if (!st && !(st = ms_symtab_init(&s->syms)) && !(st = ms_stats_builder_new(10, &s->b))) {
		ms_stats_builder_only(s->b, s->device);
		ms_stats_builder_sink(s->b, &sink);
		st = ms_source_read(s->path, NULL, &s->syms, &sink, NULL, &d);
	}
	if (st) {
		ms_report(s->path, st, &d);
		return -1;
	}
	s->st = ms_stats_builder_result(s->b);
	s->rows = ms_group_sites(&s->syms, s->st, frames, &s->n_rows);
	{
		/* the categories at the peak the replay found, from the trace whole */
		const struct ms_trace *t;
		struct ms_trace *owned = NULL;
		struct ms_explain_in in;
		if ((st = ms_replay_cli_trace_whole(s->path, &t, &owned, &d))) {
			ms_report(s->path, st, &d);
			return -1;
		}
		memset(&in, 0, sizeof(in));
		in.t = t;
		in.device = s->device;
		in.peak_index = s->r.fullest_at_peak_index;
		in.allocated_at_peak =
		        s->r.allocated_at_peak_reserved - s->r.served_oom_at_peak_reserved;
		if (ms_explain_run(&in, &s->x))
			ms_die(MS_EXIT_ERROR, "out of memory");
		s->has_x = 1;
		s->cut_short = t->cut_short;
		snprintf(s->torch, sizeof(s->torch), "%s",
		         t->meta.torch_version && t->meta.torch_version[0] ? t->meta.torch_version
		         : t->meta.layout_release                          ? t->meta.layout_release
		                                                           : "");
		for (uint32_t k = 0; k < t->meta.n_devices; k++)
			if (t->meta.devices[k].index == s->device) {
				snprintf(s->gpu, sizeof(s->gpu), "%s",
				         t->meta.devices[k].name ? t->meta.devices[k].name : "");
				s->gpu_total = t->meta.devices[k].total_memory;
			}
		ms_trace_free(owned);
	}
	return 0;
}

static void release(struct side *s)
{
	if (s->has_x)
		ms_explain_release(&s->x);
	ms_replay_result_release(&s->r);
	ms_stats_builder_free(s->b);
	ms_symtab_release(&s->syms);
	ms_free(s->rows);
}

static const char *signed_size(char *buf, size_t cap, int64_t d)
{
	char t[24];

	ms_format_size(t, sizeof(t), (uint64_t)(d < 0 ? -d : d));
	snprintf(buf, cap, "%s%s", d < 0 ? "-" : d > 0 ? "+" : "", t);
	return buf;
}

/* A size that may be below 0: "-" before it then, nothing otherwise. */
static const char *size_or_below(char *buf, size_t cap, int64_t d)
{
	char t[24];

	ms_format_size(t, sizeof(t), (uint64_t)(d < 0 ? -d : d));
	snprintf(buf, cap, "%s%s", d < 0 ? "-" : "", t);
	return buf;
}

struct row {
	char name[512];
	uint64_t a, b;
	uint8_t in[2]; /* the run has it (an annotation one run lacks is not 0 bytes there) */
	/* a site's stack, in the table of the first run that has it; NULL for annotations */
	const struct ms_symtab *y;
	uint32_t stack;
};

/* A row's change, 0 where one run lacks it (an annotation only one has) */
static uint64_t row_change(const struct row *r)
{
	int64_t d = (int64_t)r->b - (int64_t)r->a;
	return r->in[0] && r->in[1] ? (uint64_t)(d < 0 ? -d : d) : 0;
}

static int row_cmp(const void *x, const void *y)
{
	const struct row *p = x, *q = y;
	uint64_t ap = row_change(p), aq = row_change(q);
	uint64_t sp = p->a > p->b ? p->a : p->b, sq = q->a > q->b ? q->a : q->b;

	if (ap != aq)
		return ap < aq ? 1 : -1;
	if (sp != sq) /* the same change: the larger first */
		return sp < sq ? 1 : -1;
	if (p->y && q->y && p->y == q->y && p->stack != q->stack)
		return p->stack < q->stack ? -1 : 1;
	return strcmp(p->name, q->name);
}

/*
 * Add (name, value) into rows (by: key, which is name unless --frames groups sites by more)
 * for side a (which = 0) or b (1); a site's stack y, stack (else NULL).
 */
static void put(struct row **rows, size_t *n, size_t *cap, struct ms_label_rows *by,
                const char *key, const char *name, const struct ms_symtab *y, uint32_t stack,
                uint64_t v, int which)
{
	int added;
	size_t i = ms_label_row_or_die(by, key, &added);

	if (added) {
		if (ms_grow(rows, cap, *n + 1, sizeof(**rows)))
			ms_die(MS_EXIT_ERROR, "out of memory");
		memset(&(*rows)[i], 0, sizeof(**rows));
		snprintf((*rows)[i].name, sizeof((*rows)[i].name), "%s", name);
		(*rows)[i].y = y;
		(*rows)[i].stack = stack;
		(*n)++;
	}
	if (which)
		(*rows)[i].b += v;
	else
		(*rows)[i].a += v;
	/* a site absent at a run's peak has 0 bytes there; an annotation absent is not known */
	(*rows)[i].in[which] = 1;
	if (y) {
		(*rows)[i].in[0] = (*rows)[i].in[1] = 1;
	}
}

static void table(const char *title, struct row *rows, size_t n, size_t top, cJSON *json,
                  const char *key, uint32_t frames)
{
	char b1[32], b2[32], b3[48];
	cJSON *arr = json ? cJSON_AddArrayToObject(json, key) : NULL;

	qsort(rows, n, sizeof(*rows), row_cmp);
	if (!json)
		printf("\n%s\n    %12s %12s %12s  %s\n", title, "a", "b", "change", "name");
	for (size_t i = 0; i < n && i < top; i++) {
		if (!rows[i].a && !rows[i].b)
			continue; /* nothing in either run (an annotation with no allocation in it)
			           */
		if (json) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", rows[i].name);
			if (rows[i].in[0])
				ms_json_u64(o, "a_bytes", rows[i].a);
			else
				cJSON_AddNullToObject(o, "a_bytes");
			if (rows[i].in[1])
				ms_json_u64(o, "b_bytes", rows[i].b);
			else
				cJSON_AddNullToObject(o, "b_bytes");
			if (rows[i].y)
				ms_site_json_frames(o, rows[i].y, rows[i].stack, frames);
			cJSON_AddItemToArray(arr, o);
			continue;
		}
		printf("    %12s %12s %12s  %s%s\n",
		       rows[i].in[0] ? ms_format_size(b1, sizeof(b1), rows[i].a) : "-",
		       rows[i].in[1] ? ms_format_size(b2, sizeof(b2), rows[i].b) : "-",
		       rows[i].in[0] && rows[i].in[1]
		               ? signed_size(b3, sizeof(b3),
		                             (int64_t)rows[i].b - (int64_t)rows[i].a)
		               : "-",
		       rows[i].name, rows[i].in[0] && rows[i].in[1] ? "" : "  (in one run only)");
		if (rows[i].y)
			ms_site_print_frames(rows[i].y, rows[i].stack, frames, 46);
	}
	if (!json && n == 0)
		printf("    (none in either run)\n");
}

/* One pair of devices, loaded: their peaks, sites and annotations; text, or *jout. */
/* What each peak is made of, side by side (memsnap explain's categories). */
static void categories(const struct side *s, cJSON *out)
{
	char b1[32], b2[32], b3[48];
	cJSON *o = out ? cJSON_AddObjectToObject(out, "categories") : NULL;
	if (!out)
		printf("\nwhat each peak is made of (memsnap explain's categories):\n    %12s %12s "
		       "%12s\n",
		       "a", "b", "change");
	for (unsigned k = 0; k < MS_CAT_COUNT; k++) {
		uint64_t a = s[0].x.cat_bytes[k], b = s[1].x.cat_bytes[k];
		/* parameters, gradients, optimizer state: where a side could not tell them, no
		   figure (their bytes are in its other or unplaced) and no change */
		int ta = ms_explain_cat_told(&s[0].x, k), tb = ms_explain_cat_told(&s[1].x, k);
		if (o) {
			cJSON *c = cJSON_AddObjectToObject(o, ms_explain_cat_name(k));
			if (ta)
				ms_json_u64(c, "a", a);
			else
				cJSON_AddNullToObject(c, "a");
			if (tb)
				ms_json_u64(c, "b", b);
			else
				cJSON_AddNullToObject(c, "b");
		} else if ((a && ta) || (b && tb) ||
		           ta != tb) { /* a 0 told against one untold too */
			printf("    %12s %12s %12s  %s%s\n",
			       ta ? ms_format_size(b1, sizeof(b1), a) : "-",
			       tb ? ms_format_size(b2, sizeof(b2), b) : "-",
			       ta && tb ? signed_size(b3, sizeof(b3), (int64_t)b - (int64_t)a)
			                : "-",
			       ms_explain_cat_name(k),
			       ta && tb ? ""
			       : ta ? " (not told in b: no optimizer steps or no parameters found)"
			            : " (not told in a: no optimizer steps or no parameters "
			              "found)");
		}
	}
	/* the rest of each peak's reserved bytes, as explain shows them: allocated beyond the
	   categories' requested bytes (below 0 while frees wait for their streams), and cached */
	for (int k = 0; k < 2; k++) {
		const char *name = k ? "cached_free" : "rounding";
		int64_t v[2];
		for (int w = 0; w < 2; w++) {
			/* a recorded OOM's request served at the peak is no allocation of the trace
			 */
			int64_t alloc = (int64_t)s[w].r.allocated_at_peak_reserved;
			if (!k)
				alloc -= (int64_t)s[w].r.served_oom_at_peak_reserved;
			v[w] = k ? (int64_t)s[w].r.stats.reserved_bytes[0].peak - alloc
			         : alloc - (int64_t)ms_explain_requested(&s[w].x);
		}
		if (o) {
			cJSON *c = cJSON_AddObjectToObject(o, name);
			ms_json_i64(c, "a", v[0]);
			ms_json_i64(c, "b", v[1]);
		} else {
			printf("    %12s %12s %12s  %s\n", size_or_below(b1, sizeof(b1), v[0]),
			       size_or_below(b2, sizeof(b2), v[1]),
			       signed_size(b3, sizeof(b3), v[1] - v[0]), name);
		}
	}
	for (int w = 0; w < 2 && !out; w++)
		if (s[w].x.why_uncategorized[0])
			printf("    (%s: %s)\n", w ? "b" : "a", s[w].x.why_uncategorized);
}

/* Step i's peak of allocated bytes in a side, 0 where it has no such step. */
/* Side s's step number lo + i + 1 (steps are matched by number: a trace that starts mid-run
 * numbers its first step after those before it); NULL where it has no such step. */
static const struct ms_explain_step *step_at(const struct side *s, size_t lo, size_t i)
{
	size_t n = lo + i, off = s->x.steps_before_trace;
	return n >= off && n - off < s->x.n_steps ? &s->x.steps[n - off] : NULL;
}

static int64_t step_peak(const struct side *s, size_t lo, size_t i)
{
	const struct ms_explain_step *st = step_at(s, lo, i);
	return st ? (int64_t)st->peak_requested : 0;
}

/* How much step i changed, for the order: steps both sides have by the size of the change,
 * then those only one has (-1: no change to tell). */
static int64_t change_key(const struct side *s, size_t lo, size_t i)
{
	int64_t d;

	if (!step_at(&s[0], lo, i) || !step_at(&s[1], lo, i))
		return -1;
	d = step_peak(&s[1], lo, i) - step_peak(&s[0], lo, i);
	return d < 0 ? -d : d;
}

/* Each step's peak of allocated bytes, step by step, the largest changes first (steps only one
 * side has after those). */
static void steps(const struct side *s, size_t top, cJSON *out)
{
	size_t oa = s[0].x.steps_before_trace, ob = s[1].x.steps_before_trace;
	size_t lo = oa < ob ? oa : ob, ea = oa + s[0].x.n_steps, eb = ob + s[1].x.n_steps;
	size_t n = (ea > eb ? ea : eb) - lo, k;
	size_t *order = ms_calloc(n ? n : 1, sizeof(*order));
	cJSON *arr = out ? cJSON_AddArrayToObject(out, "steps") : NULL;
	char b1[32], b2[32], b3[48];

	if (!order)
		ms_die(MS_EXIT_ERROR, "out of memory");
	for (k = 0; k < n; k++)
		order[k] = k;
	/* by the size of the change (a few steps: a selection keeps it simple) */
	for (k = 0; k < n && k < top; k++) {
		size_t best = k;
		for (size_t j = k + 1; j < n; j++)
			if (change_key(s, lo, order[j]) > change_key(s, lo, order[best]))
				best = j;
		size_t t = order[k];
		order[k] = order[best];
		order[best] = t;
	}
	if (!out)
		printf("\npeak requested bytes of each step, step by step (%zu step%s in a, %zu in "
		       "b; %s):\n",
		       s[0].x.n_steps, s[0].x.n_steps == 1 ? "" : "s", s[1].x.n_steps,
		       s[0].x.n_steps && s[1].x.n_steps ? "largest changes first"
		                                        : "one side has none: in order");
	for (k = 0; k < n && (out || k < top); k++) {
		size_t i = out ? k : order[k];
		const struct ms_explain_step *sa = step_at(&s[0], lo, i),
		                             *sb = step_at(&s[1], lo, i);
		int ha = sa != NULL, hb = sb != NULL;
		if (!ha && !hb) /* a step number between the two traces' ranges */
			continue;
		if (arr) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddNumberToObject(o, "step", (double)(lo + i + 1));
			if (ha)
				ms_json_u64(o, "a_bytes", sa->peak_requested);
			else
				cJSON_AddNullToObject(o, "a_bytes");
			if (hb)
				ms_json_u64(o, "b_bytes", sb->peak_requested);
			else
				cJSON_AddNullToObject(o, "b_bytes");
			cJSON_AddItemToArray(arr, o);
		} else {
			printf("    %12s %12s %12s  step %zu\n",
			       ha ? ms_format_size(b1, sizeof(b1), sa->peak_requested) : "-",
			       hb ? ms_format_size(b2, sizeof(b2), sb->peak_requested) : "-",
			       ha && hb ? signed_size(b3, sizeof(b3),
			                              step_peak(&s[1], lo, i) -
			                                      step_peak(&s[0], lo, i))
			                : "-",
			       lo + i + 1);
		}
	}
	if (!out && !n)
		printf("    (no steps in either)\n");
	else if (!out && n > top)
		printf("    (%zu more steps: --json lists every step)\n", n - top);
	ms_free(order);
}

/* "recorded expandable_segments:True", "the defaults (not recorded)", ... */
static const char *settings_text(const struct ms_replay_result *r, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s%s%s", r->alloc_conf[0] ? r->alloc_conf : "the defaults",
	         r->settings_recorded ? ""
	         : r->expandable_seen ? " (seen in the trace)"
	                              : " (not recorded)",
	         "");
	return buf;
}

static const char *limit_text(const struct side *s, char *buf, size_t cap)
{
	char b1[32], b2[32];
	if (s->lim.inferred)
		snprintf(buf, cap, "inferred, %s to %s", ms_format_size(b1, sizeof(b1), s->lim.lo),
		         ms_format_size(b2, sizeof(b2), s->lim.hi));
	else if (s->r.limit)
		snprintf(buf, cap, "%s", ms_format_size(b1, sizeof(b1), s->r.limit));
	else
		snprintf(buf, cap, "none known");
	return buf;
}

/* How the run ended, as its file tells it */
static const char *ended_text(const struct side *s, char *buf, size_t cap)
{
	if (s->r.recorded_ooms)
		snprintf(buf, cap,
		         "ran out of memory (%llu recorded OOM%s): what it did after is "
		         "not in the file",
		         (unsigned long long)s->r.recorded_ooms,
		         s->r.recorded_ooms == 1 ? "" : "s");
	else if (s->cut_short)
		snprintf(buf, cap, "cut short: what it did after is not in the file");
	else
		snprintf(buf, cap, "ran to the end of its file, no OOM");
	return buf;
}

/* "2.11.0+cu130" against "2.10 or 2.11": the version's major.minor among the releases named */
static int same_release(const char *x, const char *y)
{
	char rel[16];
	const char *exact = strchr(x, '+') || strchr(x, ' ') == NULL ? x : y;
	const char *named = exact == x ? y : x;
	const char *dot;
	size_t n;

	if (!x[0] || !y[0] || !strcmp(x, y))
		return !strcmp(x, y);
	if (!strstr(named, " or ") && strchr(named, '.') && strchr(strchr(named, '.') + 1, '.'))
		return 0; /* two exact versions that differ */
	if (!(dot = strchr(exact, '.')) || !(dot = strchr(dot + 1, '.')))
		dot = exact + strlen(exact);
	n = (size_t)(dot - exact);
	if (n >= sizeof(rel))
		return 0;
	memcpy(rel, exact, n);
	rel[n] = 0;
	for (const char *p = named; (p = strstr(p, rel)); p += n)
		if ((p == named || p[-1] == ' ') && (!p[n] || p[n] == ' ' || p[n] == ','))
			return 1;
	return 0;
}

/*
 * What the two runs ran with, where it differs: allocator settings, limit, device, PyTorch
 * release. First, since a difference there explains the rest.
 */
static void differences(const struct side *s, cJSON *out)
{
	char a[600], b[600];
	cJSON *o = out ? cJSON_AddObjectToObject(out, "ran_with_differs") : NULL;
	struct ms_buf maybe = MS_BUF_INIT; /* what one side does not record: said after */
	int said = 0;
	/* differs: 1, 0, or -1 where one side does not tell (JSON null) */
#define DIFFERS_IF(key, what, x, y, differs)                                                    \
	do {                                                                                    \
		int d_ = (differs);                                                             \
		if (o) {                                                                        \
			cJSON *k_ = cJSON_AddObjectToObject(o, key);                            \
			if (d_ < 0)                                                             \
				cJSON_AddNullToObject(k_, "differs");                           \
			else                                                                    \
				cJSON_AddBoolToObject(k_, "differs", d_);                       \
			cJSON_AddStringToObject(k_, "a", x);                                    \
			cJSON_AddStringToObject(k_, "b", y);                                    \
		} else if (d_ > 0) {                                                            \
			if (!said++)                                                            \
				printf("the two runs differ:\n");                               \
			printf("    %-18s a: %s\n    %-18s b: %s\n", what, x, "", y);           \
		} else if (d_ < 0) {                                                            \
			char l_[1400];                                                          \
			int n_ = snprintf(l_, sizeof(l_), "    %-18s a: %s\n    %-18s b: %s\n", \
			                  what, x, "", y);                                      \
			if (n_ > 0 && ms_buf_append(&maybe, l_, strnlen(l_, sizeof(l_))))       \
				maybe.len = 0;                                                  \
		}                                                                               \
	} while (0)
#define DIFFERS(key, what, x, y) DIFFERS_IF(key, what, x, y, strcmp(x, y) != 0)
	/* the settings replayed: "not recorded" against recorded defaults is no difference */
	DIFFERS_IF("alloc_conf", "allocator settings", settings_text(&s[0].r, a, sizeof(a)),
	           settings_text(&s[1].r, b, sizeof(b)),
	           strcmp(s[0].r.alloc_conf, s[1].r.alloc_conf) != 0);
	/* known on both sides and apart (an inferred range holding the other's limit is no
	   difference; one not known tells nothing) */
	{
		uint64_t lo[2], hi[2];
		int known[2];
		for (int k = 0; k < 2; k++) {
			known[k] = s[k].lim.inferred || s[k].r.limit;
			lo[k] = s[k].lim.inferred ? s[k].lim.lo : s[k].r.limit;
			hi[k] = s[k].lim.inferred ? s[k].lim.hi : s[k].r.limit;
		}
		DIFFERS_IF("limit", "limit", limit_text(&s[0], a, sizeof(a)),
		           limit_text(&s[1], b, sizeof(b)),
		           !known[0] && !known[1]   ? 0
		           : !known[0] || !known[1] ? -1
		                                    : hi[0] < lo[1] || hi[1] < lo[0]);
	}
	{
		char b1[32], b2[32];
		snprintf(a, sizeof(a), "%s%s%s", s[0].gpu[0] ? s[0].gpu : "not recorded",
		         s[0].gpu_total ? ", " : "",
		         s[0].gpu_total ? ms_format_size(b1, sizeof(b1), s[0].gpu_total) : "");
		snprintf(b, sizeof(b), "%s%s%s", s[1].gpu[0] ? s[1].gpu : "not recorded",
		         s[1].gpu_total ? ", " : "",
		         s[1].gpu_total ? ms_format_size(b2, sizeof(b2), s[1].gpu_total) : "");
	}
	DIFFERS_IF("device", "device", a, b,
	           !s[0].gpu[0] && !s[1].gpu[0]   ? 0
	           : !s[0].gpu[0] || !s[1].gpu[0] ? -1
	                                          : strcmp(a, b) != 0);
	/* a snapshot's layout names the releases it fits ("2.10 or 2.11"), a recording its version
	   ("2.11.0+cu130"): the same where the version's release is among them */
	snprintf(a, sizeof(a), "%s", s[0].torch[0] ? s[0].torch : "not recorded");
	snprintf(b, sizeof(b), "%s", s[1].torch[0] ? s[1].torch : "not recorded");
	DIFFERS_IF("torch", "PyTorch", a, b,
	           !s[0].torch[0] && !s[1].torch[0]   ? 0
	           : !s[0].torch[0] || !s[1].torch[0] ? -1
	                                              : !same_release(s[0].torch, s[1].torch));
	/* a run that died holds only what it did up to its OOM: its peaks are no smaller run's */
	ended_text(&s[0], a, sizeof(a));
	ended_text(&s[1], b, sizeof(b));
	DIFFERS("ended", "ending", a, b);
#undef DIFFERS
#undef DIFFERS_IF
	if (maybe.len)
		printf("%s%.*s",
		       said ? "and may differ (one of them does not record it):\n"
		            : "the two runs may differ (one of them does not record it):\n",
		       (int)maybe.len, maybe.data);
	if (said || maybe.len)
		printf("\n");
	ms_buf_release(&maybe);
}

static void diff_pair(struct side *s, const char *la, const char *lb, size_t top, int json,
                      uint32_t frames_n, cJSON **jout)
{
	struct ms_buf key = MS_BUF_INIT;
	struct row *rows = NULL;
	struct ms_label_rows by;
	size_t nrows = 0, cap = 0, k;
	cJSON *out = NULL;
	char b1[32], b2[32], b3[48];

	if (json) {
		out = cJSON_CreateObject();
		ms_json_schema(out);
		cJSON_AddStringToObject(out, "a", s[0].path);
		cJSON_AddNumberToObject(out, "a_device", s[0].device);
		cJSON_AddStringToObject(out, "b", s[1].path);
		cJSON_AddNumberToObject(out, "b_device", s[1].device);
		cJSON_AddBoolToObject(out, "a_starts_mid_run", s[0].r.rebuilt);
		cJSON_AddBoolToObject(out, "b_starts_mid_run", s[1].r.rebuilt);
		cJSON_AddBoolToObject(out, "a_cut_short", s[0].cut_short);
		cJSON_AddBoolToObject(out, "b_cut_short", s[1].cut_short);
		differences(s, out);
	} else {
		differences(s, NULL);
		printf("a: %s%s%s\nb: %s%s%s\n\n    %12s %12s %12s\n", la,
		       s[0].r.rebuilt ? " (starts mid-run: its peaks are lower bounds)" : "",
		       s[0].cut_short ? " (cut short: the part of the run the file holds)" : "", lb,
		       s[1].r.rebuilt ? " (starts mid-run: its peaks are lower bounds)" : "",
		       s[1].cut_short ? " (cut short: the part of the run the file holds)" : "",
		       "a", "b", "change");
	}
	{
		static const char *const names[] = {"peak reserved", "peak allocated",
		                                    "peak requested"};
		static const char *const keys[] = {"peak_reserved_bytes", "peak_allocated_bytes",
		                                   "peak_requested_bytes"};
		cJSON *pk = json ? cJSON_AddObjectToObject(out, "peaks") : NULL;
		for (int i = 0; i < 3; i++) {
			uint64_t v[2];
			for (int w = 0; w < 2; w++)
				v[w] = (uint64_t)(i == 0   ? s[w].r.stats.reserved_bytes[0].peak
				                  : i == 1 ? s[w].r.stats.allocated_bytes[0].peak
				                           : s[w].r.stats.requested_bytes[0].peak);
			if (json) {
				cJSON *o = cJSON_AddObjectToObject(pk, keys[i]);
				ms_json_u64(o, "a", v[0]);
				ms_json_u64(o, "b", v[1]);
			} else {
				printf("    %12s %12s %12s  %s\n",
				       ms_format_size(b1, sizeof(b1), v[0]),
				       ms_format_size(b2, sizeof(b2), v[1]),
				       signed_size(b3, sizeof(b3), (int64_t)v[1] - (int64_t)v[0]),
				       names[i]);
			}
		}
		if (!json)
			printf("    %12lld %12lld %+12lld  segments at the peak\n    %12llu %12llu "
			       "%+12lld  "
			       "retries\n",
			       (long long)s[0].r.stats.segment[0].peak,
			       (long long)s[1].r.stats.segment[0].peak,
			       (long long)(s[1].r.stats.segment[0].peak -
			                   s[0].r.stats.segment[0].peak),
			       (unsigned long long)s[0].r.stats.num_alloc_retries,
			       (unsigned long long)s[1].r.stats.num_alloc_retries,
			       (long long)s[1].r.stats.num_alloc_retries -
			               (long long)s[0].r.stats.num_alloc_retries);
	}
	categories(s, out);
	steps(s, top, out);
	if (ms_label_rows_init(&by))
		ms_die(MS_EXIT_ERROR, "out of memory");
	for (int w = 0; w < 2; w++)
		for (k = 0; k < s[w].n_rows; k++)
			put(&rows, &nrows, &cap, &by,
			    ms_site_key(&key, &s[w].syms, s[w].rows[k].stack, frames_n),
			    s[w].rows[k].label, &s[w].syms, s[w].rows[k].stack, s[w].rows[k].bytes,
			    w);
	table("bytes live at each run's peak, by allocation site (largest changes first):", rows,
	      nrows, top, out, "sites", frames_n);
	ms_label_rows_release(&by);
	nrows = 0;
	if (ms_label_rows_init(&by))
		ms_die(MS_EXIT_ERROR, "out of memory");
	for (int w = 0; w < 2; w++)
		for (k = 0; k < s[w].st->n_anns; k++) {
			const char *name = ms_symtab_get_str(&s[w].syms, s[w].st->anns[k].name)->s;
			put(&rows, &nrows, &cap, &by, name, name, NULL, 0,
			    s[w].st->anns[k].peak_requested, w);
		}
	table("peak requested bytes inside each annotation (largest changes first):", rows, nrows,
	      top, out, "annotations", frames_n);
	ms_label_rows_release(&by);
	*jout = out;
	ms_free(rows);
	ms_buf_release(&key);
}

int cmd_diff(int argc, const char **argv)
{
	struct ms_replay_cli c;
	struct ms_opt opts[MS_REPLAY_OPTS_MAX + 4];
	int site_depth = 1;
	struct ms_frames_opt frames = {0};
	int n, json = 0, rc = MS_EXIT_OK;
	uint64_t top = 10;
	uint32_t *da, *db;
	size_t na, nb, k, pairs = 0;
	uint32_t pa[256], pb[256];
	cJSON *all = NULL, *arr = NULL;

	ms_replay_cli_init(&c, opts, &json);
	ms_opts_drop(opts, "backend");
	for (k = 0; opts[k].type != MS_OPT_T_END; k++)
		;
	opts[k++] = (struct ms_opt)MS_OPT_U64(0, "top", &top, "N", "rows per table (default 10)");
	opts[k++] = (struct ms_opt)MS_OPT_FRAMES(&frames);
	opts[k++] = (struct ms_opt)MS_OPT_SITE_DEPTH(&site_depth);
	opts[k] = (struct ms_opt)MS_OPT_END();
	n = ms_parse_options(argc, argv, opts, usage);
	if (n != 2)
		ms_usage_error(opts, usage, "two traces are compared");
	ms_replay_cli_check(&c, opts, usage);
	ms_frames_opt_check(&frames, opts, usage);
	ms_site_depth_set(site_depth, opts, usage);
	if (ms_same_file(argv[0], argv[1]))
		ms_note("%s and %s are the same file: each device is compared with itself, and "
		        "nothing differs",
		        argv[0], argv[1]);
	if (ms_replay_cli_devices(&c, argv[0], "diff", &da, &na))
		return MS_EXIT_ERROR;
	if (ms_replay_cli_devices(&c, argv[1], "diff", &db, &nb)) {
		ms_free(da);
		return MS_EXIT_ERROR;
	}
	/* one device each (two ranks, say): those two; else device with device */
	if (na == 1 && nb == 1) {
		pa[0] = da[0];
		pb[0] = db[0];
		pairs = 1;
	} else {
		for (size_t i = 0; i < na; i++)
			for (size_t j = 0; j < nb; j++)
				if (da[i] == db[j] && pairs < 256) {
					pa[pairs] = da[i];
					pb[pairs++] = db[j];
				}
		for (size_t i = 0; i < na; i++) {
			size_t j;
			for (j = 0; j < nb && db[j] != da[i]; j++)
				;
			if (j == nb)
				ms_warning(
				        "%s: device %u has events, %s has none there: not compared",
				        argv[0], da[i], argv[1]);
		}
		for (size_t j = 0; j < nb; j++) {
			size_t i;
			for (i = 0; i < na && da[i] != db[j]; i++)
				;
			if (i == na)
				ms_warning(
				        "%s: device %u has events, %s has none there: not compared",
				        argv[1], db[j], argv[0]);
		}
		if (!pairs) {
			ms_error("%s and %s have events on no common device", argv[0], argv[1]);
			rc = MS_EXIT_ERROR;
		}
	}
	if (json && pairs > 1) {
		all = cJSON_CreateObject();
		ms_json_schema(all);
		arr = cJSON_AddArrayToObject(all, "devices");
	}
	for (k = 0; k < pairs && rc == MS_EXIT_OK; k++) {
		struct side s[2];
		char la[4200], lb[4200];
		cJSON *o = NULL;
		size_t named;
		memset(s, 0, sizeof(s));
		s[0].path = argv[0];
		s[0].device = pa[k];
		s[1].path = argv[1];
		s[1].device = pb[k];
		if (load(&c, &s[0], frames.n) || load(&c, &s[1], frames.n)) {
			rc = MS_EXIT_ERROR;
			break;
		}
		if (k && !json)
			putchar('\n');
		named = pairs > 1 || pa[k] != pb[k] ? 2 : 1; /* name the devices where it matters */
		diff_pair(s, ms_replay_cli_label(argv[0], pa[k], named, la, sizeof(la)),
		          ms_replay_cli_label(argv[1], pb[k], named, lb, sizeof(lb)), (size_t)top,
		          json, frames.n, &o);
		if (arr)
			cJSON_AddItemToArray(arr, o);
		else
			all = o;
		release(&s[0]);
		release(&s[1]);
	}
	if (all && rc == MS_EXIT_OK) {
		char *str = cJSON_Print(all);
		if (str)
			puts(str);
		cJSON_free(str);
	}
	cJSON_Delete(all);
	ms_free(da);
	ms_free(db);
	return rc;
}
