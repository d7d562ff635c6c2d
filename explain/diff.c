/* What changed between two runs on one pair of devices (diff.h). */
#include "explain/diff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/size.h"
#include "parse/trace.h"
#include "replay/site_rows.h"

uint64_t ms_diff_row_change(const struct ms_diff_row *r)
{
	int64_t d = (int64_t)r->b - (int64_t)r->a;
	return r->in[0] && r->in[1] ? (uint64_t)(d < 0 ? -d : d) : 0;
}

static int row_cmp(const void *x, const void *y)
{
	const struct ms_diff_row *p = x, *q = y;
	uint64_t ap = ms_diff_row_change(p), aq = ms_diff_row_change(q);
	uint64_t sp = p->a > p->b ? p->a : p->b, sq = q->a > q->b ? q->a : q->b;

	if (ap != aq)
		return ap < aq ? 1 : -1;
	if (sp != sq) /* the same change: the larger first */
		return sp < sq ? 1 : -1;
	if (p->y && q->y && p->y == q->y && p->stack != q->stack)
		return p->stack < q->stack ? -1 : 1;
	return strcmp(p->name, q->name);
}

/* Rows being gathered: by key (a site's frames shown, an annotation's name). */
struct table {
	struct ms_diff_row *rows;
	size_t n, cap;
	struct ms_label_rows by;
};

/* Add (name, v) to run which's column (0: a, 1: b); a site's stack y, stack (else NULL). */
static ms_status put(struct table *tb, const char *key, const char *name, const struct ms_symtab *y,
                     uint32_t stack, uint64_t v, int which)
{
	struct ms_diff_row *r;
	size_t i;
	int added;
	ms_status s;

	if ((s = ms_label_row(&tb->by, key, &i, &added)))
		return s;
	if (added) {
		if (ms_grow(&tb->rows, &tb->cap, tb->n + 1, sizeof(*tb->rows)))
			return MS_ERR_NOMEM;
		r = &tb->rows[i];
		memset(r, 0, sizeof(*r));
		snprintf(r->name, sizeof(r->name), "%s", name);
		r->y = y;
		r->stack = stack;
		tb->n++;
	}
	r = &tb->rows[i];
	if (which)
		r->b += v;
	else
		r->a += v;
	/* a site absent at a run's peak has 0 bytes there; an annotation absent is not known */
	r->in[which] = 1;
	if (y)
		r->in[0] = r->in[1] = 1;
	return MS_OK;
}

/* The sites live at each peak, matched by what frames shows of them. */
static ms_status site_table(struct ms_diff *d, uint32_t frames, uint32_t depth)
{
	struct table tb = {0};
	struct ms_buf key = MS_BUF_INIT;
	ms_status s = ms_label_rows_init(&tb.by);

	for (int w = 0; w < 2 && !s; w++) {
		const struct ms_diff_side *sd = &d->s[w];
		struct ms_site_row *rows = NULL;
		size_t n = 0;
		s = ms_site_rows_group(sd->syms, sd->st->sites, sd->st->n_sites, frames, depth,
		                       &rows, &n);
		for (size_t k = 0; k < n && !s; k++) {
			const char *kt;
			if (!(s = ms_site_rows_key(&key, sd->syms, rows[k].stack, frames, depth,
			                           &kt)))
				s = put(&tb, kt, rows[k].label, sd->syms, rows[k].stack,
				        rows[k].bytes, w);
		}
		ms_free(rows);
	}
	ms_label_rows_release(&tb.by);
	ms_buf_release(&key);
	if (tb.n)
		qsort(tb.rows, tb.n, sizeof(*tb.rows), row_cmp);
	d->sites = tb.rows;
	d->n_sites = tb.n;
	return s;
}

/* The peak requested bytes inside each annotation, matched by name. */
static ms_status annotation_table(struct ms_diff *d)
{
	struct table tb = {0};
	ms_status s = ms_label_rows_init(&tb.by);

	for (int w = 0; w < 2 && !s; w++) {
		const struct ms_diff_side *sd = &d->s[w];
		for (size_t k = 0; k < sd->st->n_anns && !s; k++) {
			const char *name = ms_symtab_get_str(sd->syms, sd->st->anns[k].name)->s;
			s = put(&tb, name, name, NULL, 0, sd->st->anns[k].peak_requested, w);
		}
	}
	ms_label_rows_release(&tb.by);
	if (tb.n)
		qsort(tb.rows, tb.n, sizeof(*tb.rows), row_cmp);
	d->anns = tb.rows;
	d->n_anns = tb.n;
	return s;
}

/* Run w's step lo + i + 1 (steps are matched by number: a trace that starts mid-run numbers its
 * first step after those before it); NULL where it has no such step. */
static const struct ms_explain_step *step_at(const struct ms_diff_side *s, size_t n)
{
	size_t off = s->x.steps_before_trace;
	return n >= off && n - off < s->x.n_steps ? &s->x.steps[n - off] : NULL;
}

/* How much a step changed, for the order: steps both runs have by the size of the change, then
 * those only one has (-1). */
static int64_t step_change(const struct ms_diff_step *st)
{
	int64_t c;

	if (!st->in[0] || !st->in[1])
		return -1;
	c = (int64_t)st->bytes[1] - (int64_t)st->bytes[0];
	return c < 0 ? -c : c;
}

static ms_status step_table(struct ms_diff *d)
{
	size_t oa = d->s[0].x.steps_before_trace, ob = d->s[1].x.steps_before_trace;
	size_t lo = oa < ob ? oa : ob, ea = oa + d->s[0].x.n_steps, eb = ob + d->s[1].x.n_steps;
	size_t n = (ea > eb ? ea : eb) - lo;

	d->steps = ms_calloc(n ? n : 1, sizeof(*d->steps));
	d->steps_by_change = ms_calloc(n ? n : 1, sizeof(*d->steps_by_change));
	if (!d->steps || !d->steps_by_change)
		return MS_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		struct ms_diff_step *st = &d->steps[d->n_steps];
		for (int w = 0; w < 2; w++) {
			const struct ms_explain_step *e = step_at(&d->s[w], lo + i);
			st->in[w] = e != NULL;
			st->bytes[w] = e ? e->peak_requested : 0;
		}
		if (!st->in[0] && !st->in[1]) /* a step number between the two traces' ranges */
			continue;
		st->step = lo + i + 1;
		d->steps_by_change[d->n_steps] = d->n_steps;
		d->n_steps++;
	}
	/* a stable order by the size of the change: insertion, steps are few */
	for (size_t i = 1; i < d->n_steps; i++) {
		size_t v = d->steps_by_change[i], j = i;
		for (; j > 0 && step_change(&d->steps[d->steps_by_change[j - 1]]) <
		                        step_change(&d->steps[v]);
		     j--)
			d->steps_by_change[j] = d->steps_by_change[j - 1];
		d->steps_by_change[j] = v;
	}
	return MS_OK;
}

static int row_by_change(const void *a, const void *b)
{
	uint64_t x = ms_diff_row_change(a), y = ms_diff_row_change(b);
	if (x != y)
		return x < y ? 1 : -1;
	return strcmp(((const struct ms_diff_row *)a)->name, ((const struct ms_diff_row *)b)->name);
}

/* Each peak by compile context, matched by name (allocations from before a trace: apart). */
static ms_status context_table(struct ms_diff *d)
{
	size_t cap = 0;

	if (!d->s[0].x.n_contexts && !d->s[1].x.n_contexts)
		return MS_OK;
	for (int w = 0; w < 2; w++) {
		const struct ms_explain *x = &d->s[w].x;
		for (size_t i = 0; i < x->n_contexts; i++) {
			const struct ms_explain_context *c = &x->contexts[i];
			char name[512];
			struct ms_diff_row *r = NULL;
			snprintf(name, sizeof(name), "%s",
			         c->before ? "(before the trace)"
			         : c->name ? ms_symtab_get_str(d->s[w].syms, c->name)->s
			                   : "N/A");
			for (size_t k = 0; k < d->n_contexts && !r; k++)
				if (!strcmp(d->contexts[k].name, name))
					r = &d->contexts[k];
			if (!r) {
				if (ms_grow(&d->contexts, &cap, d->n_contexts + 1,
				            sizeof(*d->contexts)))
					return MS_ERR_NOMEM;
				r = &d->contexts[d->n_contexts++];
				memset(r, 0, sizeof(*r));
				memcpy(r->name, name, sizeof(r->name));
				/* a run that records contexts has 0 bytes of one it lacks */
				r->in[0] = d->s[0].x.n_contexts != 0;
				r->in[1] = d->s[1].x.n_contexts != 0;
			}
			if (w)
				r->b += c->bytes;
			else
				r->a += c->bytes;
		}
	}
	qsort(d->contexts, d->n_contexts, sizeof(*d->contexts), row_by_change);
	return MS_OK;
}

static void categories(struct ms_diff *d)
{
	for (size_t u = 0; u < d->s[0].x.n_user; u++)
		for (int w = 0; w < 2; w++)
			d->user[u][w] = d->s[w].x.user_bytes[u];
	for (unsigned k = 0; k < MS_CAT_COUNT; k++)
		for (int w = 0; w < 2; w++) {
			d->cat[k][w] = d->s[w].x.cat_bytes[k];
			/* parameters, gradients, optimizer state: where a run could not tell them,
			   their bytes are in its other or unplaced */
			d->told[k][w] = (uint8_t)ms_explain_cat_told(&d->s[w].x, k);
		}
	for (int w = 0; w < 2; w++) {
		const struct ms_replay_result *r = &d->s[w].r;
		/* a recorded OOM's request served at the peak is no allocation of the trace */
		int64_t alloc = (int64_t)r->allocated_at_peak_reserved;
		int64_t served = (int64_t)r->served_oom_at_peak_reserved;
		int64_t reserved = r->stats.reserved_bytes[0].peak;
		if (r->n_windows && r->windows[0].at) { /* right after the event asked */
			alloc = (int64_t)r->windows[0].allocated_at_end;
			reserved = (int64_t)r->windows[0].reserved_at_end;
			served = 0;
			d->at = 1;
			d->at_event[w] = r->windows[0].from;
		}
		d->rounding[w] = alloc - served - (int64_t)ms_explain_requested(&d->s[w].x);
		d->cached_free[w] = reserved - alloc;
	}
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

/* "recorded expandable_segments:True", "the defaults (not recorded)", ... */
static void settings_text(const struct ms_replay_result *r, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s%s", r->alloc_conf[0] ? r->alloc_conf : "the defaults",
	         r->settings_recorded ? ""
	         : r->expandable_seen ? " (seen in the trace)"
	                              : " (not recorded)");
}

static void limit_text(const struct ms_diff_side *s, char *buf, size_t cap)
{
	char b1[32], b2[32];

	if (s->lim.inferred)
		snprintf(buf, cap, "inferred, %s to %s", ms_format_size(b1, sizeof(b1), s->lim.lo),
		         ms_format_size(b2, sizeof(b2), s->lim.hi));
	else if (s->r.limit)
		snprintf(buf, cap, "%s", ms_format_size(b1, sizeof(b1), s->r.limit));
	else
		snprintf(buf, cap, "none known");
}

/* How the run ended, as its file tells it */
static void ended_text(const struct ms_diff_side *s, char *buf, size_t cap)
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
}

static void device_text(const struct ms_diff_side *s, char *buf, size_t cap)
{
	char b[32];

	snprintf(buf, cap, "%s%s%s", s->gpu[0] ? s->gpu : "not recorded", s->gpu_total ? ", " : "",
	         s->gpu_total ? ms_format_size(b, sizeof(b), s->gpu_total) : "");
}

/* differs: 1 or 0 where both runs tell it, -1 where one of them does not */
static int told_differs(int told_a, int told_b, int differs)
{
	return !told_a && !told_b ? 0 : !told_a || !told_b ? -1 : differs;
}

/* What the two runs ran with: allocator settings, limit, device, PyTorch release, ending. */
static void ran_with(struct ms_diff *d)
{
	const struct ms_diff_side *s = d->s;
	struct ms_diff_setting *w = d->ran_with;
	uint64_t lo[2], hi[2];
	int known[2];

	w[MS_DIFF_ALLOC_CONF] =
	        (struct ms_diff_setting){.key = "alloc_conf", .what = "allocator settings"};
	settings_text(&s[0].r, w[MS_DIFF_ALLOC_CONF].a, sizeof(w->a));
	settings_text(&s[1].r, w[MS_DIFF_ALLOC_CONF].b, sizeof(w->b));
	/* a run that does not record its settings was replayed with the defaults, but may have
	   run with others: against the other run's, not told (the trace shows expandable segments
	   where it has them, which tells that much) */
	w[MS_DIFF_ALLOC_CONF].differs =
	        told_differs(s[0].r.settings_recorded || s[0].r.expandable_seen,
	                     s[1].r.settings_recorded || s[1].r.expandable_seen,
	                     strcmp(s[0].r.alloc_conf, s[1].r.alloc_conf) != 0);

	/* known on both sides and apart (an inferred range holding the other's limit is no
	   difference; one not known tells nothing) */
	for (int k = 0; k < 2; k++) {
		known[k] = s[k].lim.inferred || s[k].r.limit;
		lo[k] = s[k].lim.inferred ? s[k].lim.lo : s[k].r.limit;
		hi[k] = s[k].lim.inferred ? s[k].lim.hi : s[k].r.limit;
	}
	w[MS_DIFF_LIMIT] = (struct ms_diff_setting){.key = "limit", .what = "limit"};
	limit_text(&s[0], w[MS_DIFF_LIMIT].a, sizeof(w->a));
	limit_text(&s[1], w[MS_DIFF_LIMIT].b, sizeof(w->b));
	w[MS_DIFF_LIMIT].differs = told_differs(known[0], known[1], hi[0] < lo[1] || hi[1] < lo[0]);

	w[MS_DIFF_DEVICE] = (struct ms_diff_setting){.key = "device", .what = "device"};
	device_text(&s[0], w[MS_DIFF_DEVICE].a, sizeof(w->a));
	device_text(&s[1], w[MS_DIFF_DEVICE].b, sizeof(w->b));
	w[MS_DIFF_DEVICE].differs = told_differs(s[0].gpu[0], s[1].gpu[0],
	                                         strcmp(w[MS_DIFF_DEVICE].a, w[MS_DIFF_DEVICE].b));

	/* a snapshot's layout names the releases it fits ("2.10 or 2.11"), a recording its version
	   ("2.11.0+cu130"): the same where the version's release is among them */
	w[MS_DIFF_TORCH] = (struct ms_diff_setting){.key = "torch", .what = "PyTorch"};
	snprintf(w[MS_DIFF_TORCH].a, sizeof(w->a), "%s",
	         s[0].torch[0] ? s[0].torch : "not recorded");
	snprintf(w[MS_DIFF_TORCH].b, sizeof(w->b), "%s",
	         s[1].torch[0] ? s[1].torch : "not recorded");
	w[MS_DIFF_TORCH].differs =
	        told_differs(s[0].torch[0], s[1].torch[0], !same_release(s[0].torch, s[1].torch));

	/* a run that died holds only what it did up to its OOM: its peaks are no smaller run's */
	w[MS_DIFF_ENDED] = (struct ms_diff_setting){.key = "ended", .what = "ending"};
	ended_text(&s[0], w[MS_DIFF_ENDED].a, sizeof(w->a));
	ended_text(&s[1], w[MS_DIFF_ENDED].b, sizeof(w->b));
	w[MS_DIFF_ENDED].differs = strcmp(w[MS_DIFF_ENDED].a, w[MS_DIFF_ENDED].b) != 0;
}

/* A run's stats at its device, what its peak is made of, and what it ran with. */
static ms_status side_run(struct ms_diff_side *s, const struct ms_trace *t,
                          const struct ms_user_cats *user_cats)
{
	struct ms_explain_in in;
	struct ms_sink sink;
	ms_status st;

	if ((st = ms_stats_builder_new(10, &s->b)))
		return st;
	ms_stats_builder_only(s->b, s->device);
	ms_stats_builder_sink(s->b, &sink);
	if ((st = ms_trace_emit(t, &sink)))
		return st;
	s->st = ms_stats_builder_result(s->b);
	s->syms = &t->syms;
	/* the categories at the peak the replay found */
	memset(&in, 0, sizeof(in));
	in.t = t;
	in.device = s->device;
	in.user_cats = user_cats;
	in.peak_index = s->r.fullest_at_peak_index;
	in.allocated_at_peak = s->r.allocated_at_peak_reserved - s->r.served_oom_at_peak_reserved;
	if (s->r.n_windows && s->r.windows[0].at) { /* the moment asked (--at) */
		in.peak_index = s->r.windows[0].from;
		in.allocated_at_peak = s->r.windows[0].allocated_at_end;
	}
	if ((st = ms_explain_run(&in, &s->x)))
		return st;
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
	return MS_OK;
}

ms_status ms_diff_run(struct ms_diff_input in[2], uint32_t frames, uint32_t depth,
                      struct ms_diff *d)
{
	ms_status s = MS_OK;

	memset(d, 0, sizeof(*d));
	for (int w = 0; w < 2; w++) {
		d->s[w].path = in[w].path;
		d->s[w].device = in[w].device;
		d->s[w].lim = in[w].lim;
		d->s[w].r = *in[w].r;
		memset(in[w].r, 0, sizeof(*in[w].r));
	}
	for (int w = 0; w < 2 && !s; w++)
		s = side_run(&d->s[w], in[w].t, in[w].user_cats);
	if (s)
		return s;
	ran_with(d);
	d->user_cats = in[0].user_cats;
	categories(d);
	if (!(s = step_table(d)) && !(s = site_table(d, frames, depth)) &&
	    !(s = annotation_table(d)))
		s = context_table(d);
	return s;
}

void ms_diff_release(struct ms_diff *d)
{
	for (int w = 0; w < 2; w++) {
		if (d->s[w].has_x)
			ms_explain_release(&d->s[w].x);
		ms_replay_result_release(&d->s[w].r);
		ms_stats_builder_free(d->s[w].b);
	}
	ms_free(d->steps);
	ms_free(d->steps_by_change);
	ms_free(d->sites);
	ms_free(d->anns);
	ms_free(d->contexts);
	memset(d, 0, sizeof(*d));
}

size_t ms_diff_pairs(const uint32_t *da, size_t na, const uint32_t *db, size_t nb, uint32_t *pa,
                     uint32_t *pb)
{
	size_t n = 0;

	if (na == 1 && nb == 1) {
		pa[0] = da[0];
		pb[0] = db[0];
		return 1;
	}
	for (size_t i = 0; i < na; i++)
		for (size_t j = 0; j < nb; j++)
			if (da[i] == db[j]) {
				pa[n] = da[i];
				pb[n++] = db[j];
			}
	return n;
}
