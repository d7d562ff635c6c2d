/* diff's result as text (diff_text.h). */
#include "cli/diff_text.h"

#include <stdio.h>
#include <string.h>

#include "cli/sites.h"
#include "common/buf.h"
#include "common/size.h"

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

/* A figure, or "-" where its run does not have it. */
static const char *size_if(char *buf, size_t cap, int has, uint64_t v)
{
	return has ? ms_format_size(buf, cap, v) : "-";
}

/*
 * What the two runs ran with, where it differs: first, since a difference there explains the
 * rest; then what one of them does not record.
 */
static void ran_with(const struct ms_diff *d)
{
	int said = 0, maybe = 0;

	for (unsigned k = 0; k < MS_DIFF_RAN_WITH_COUNT; k++) {
		const struct ms_diff_setting *w = &d->ran_with[k];
		if (w->differs > 0) {
			if (!said++)
				printf("the two runs differ:\n");
			printf("    %-18s a: %s\n    %-18s b: %s\n", w->what, w->a, "", w->b);
		}
	}
	for (unsigned k = 0; k < MS_DIFF_RAN_WITH_COUNT; k++) {
		const struct ms_diff_setting *w = &d->ran_with[k];
		if (w->differs < 0) {
			if (!maybe++)
				printf("%s",
				       said ? "and may differ (one of them does not record it):\n"
				            : "the two runs may differ (one of them does not "
				              "record it):\n");
			printf("    %-18s a: %s\n    %-18s b: %s\n", w->what, w->a, "", w->b);
		}
	}
	if (said || maybe)
		printf("\n");
}

static void peaks(const struct ms_diff *d, const char *la, const char *lb)
{
	static const char *const names[] = {"peak reserved", "peak allocated", "peak requested"};
	const struct ms_model_stats *a = &d->s[0].r.stats, *b = &d->s[1].r.stats;
	char b1[32], b2[32], b3[48];

	printf("a: %s%s%s\nb: %s%s%s\n\n    %12s %12s %12s\n", la,
	       d->s[0].r.rebuilt ? " (starts mid-run: its peaks are lower bounds)" : "",
	       d->s[0].cut_short ? " (cut short: the part of the run the file holds)" : "", lb,
	       d->s[1].r.rebuilt ? " (starts mid-run: its peaks are lower bounds)" : "",
	       d->s[1].cut_short ? " (cut short: the part of the run the file holds)" : "", "a",
	       "b", "change");
	for (int i = 0; i < 3; i++) {
		uint64_t v[2];
		for (int w = 0; w < 2; w++) {
			const struct ms_model_stats *st = w ? b : a;
			v[w] = (uint64_t)(i == 0   ? st->reserved_bytes[0].peak
			                  : i == 1 ? st->allocated_bytes[0].peak
			                           : st->requested_bytes[0].peak);
		}
		printf("    %12s %12s %12s  %s\n", ms_format_size(b1, sizeof(b1), v[0]),
		       ms_format_size(b2, sizeof(b2), v[1]),
		       signed_size(b3, sizeof(b3), (int64_t)v[1] - (int64_t)v[0]), names[i]);
	}
	printf("    %12lld %12lld %+12lld  segments at the peak\n"
	       "    %12llu %12llu %+12lld  retries\n",
	       (long long)a->segment[0].peak, (long long)b->segment[0].peak,
	       (long long)(b->segment[0].peak - a->segment[0].peak),
	       (unsigned long long)a->num_alloc_retries, (unsigned long long)b->num_alloc_retries,
	       (long long)b->num_alloc_retries - (long long)a->num_alloc_retries);
}

/* What each peak is made of, side by side (memsnap explain's categories). */
static void categories(const struct ms_diff *d)
{
	char b1[32], b2[32], b3[48];

	if (d->at)
		printf("\nwhat each run held right after --at's event (%llu in a, %llu in b; "
		       "memsnap "
		       "explain's categories):\n    %12s %12s %12s\n",
		       (unsigned long long)d->at_event[0], (unsigned long long)d->at_event[1], "a",
		       "b", "change");
	else
		printf("\nwhat each peak is made of (memsnap explain's categories):\n    %12s %12s "
		       "%12s\n",
		       "a", "b", "change");
	for (size_t u = 0; u < ms_user_cats_count(d->user_cats); u++)
		printf("    %12s %12s %12s  %s (yours: %s)\n",
		       ms_format_size(b1, sizeof(b1), d->user[u][0]),
		       ms_format_size(b2, sizeof(b2), d->user[u][1]),
		       signed_size(b3, sizeof(b3), (int64_t)d->user[u][1] - (int64_t)d->user[u][0]),
		       ms_user_cats_name(d->user_cats, u), ms_user_cats_pattern(d->user_cats, u));
	for (unsigned o = 0; o < MS_CAT_COUNT; o++) {
		unsigned k = ms_explain_cat_order[o];
		uint64_t a = d->cat[k][0], b = d->cat[k][1];
		int ta = d->told[k][0], tb = d->told[k][1];
		if (!((a && ta) || (b && tb) || ta != tb)) /* a 0 told against one untold too */
			continue;
		printf("    %12s %12s %12s  %s%s\n", size_if(b1, sizeof(b1), ta, a),
		       size_if(b2, sizeof(b2), tb, b),
		       ta && tb ? signed_size(b3, sizeof(b3), (int64_t)b - (int64_t)a) : "-",
		       ms_explain_cat_name(k),
		       ta && tb ? ""
		       : ta     ? " (not told in b)"
		                : " (not told in a)");
	}
	for (int k = 0; k < 2; k++) {
		const int64_t *v = k ? d->cached_free : d->rounding;
		printf("    %12s %12s %12s  %s\n", size_or_below(b1, sizeof(b1), v[0]),
		       size_or_below(b2, sizeof(b2), v[1]),
		       signed_size(b3, sizeof(b3), v[1] - v[0]), k ? "cached_free" : "rounding");
	}
	for (int w = 0; w < 2; w++)
		if (d->s[w].x.why_uncategorized[0])
			printf("    (%s: %s)\n", w ? "b" : "a", d->s[w].x.why_uncategorized);
}

/* Each peak by compile context, where either run records any. */
static void contexts(const struct ms_diff *d)
{
	char b1[32], b2[32], b3[48];

	if (!d->n_contexts)
		return;
	printf("\neach peak by compile context (torch.compile's regions; N/A: outside them):\n"
	       "    %12s %12s %12s\n",
	       "a", "b", "change");
	for (size_t i = 0; i < d->n_contexts; i++) {
		const struct ms_diff_row *r = &d->contexts[i];
		printf("    %12s %12s %12s  %s\n", size_if(b1, sizeof(b1), r->in[0], r->a),
		       size_if(b2, sizeof(b2), r->in[1], r->b),
		       r->in[0] && r->in[1]
		               ? signed_size(b3, sizeof(b3), (int64_t)r->b - (int64_t)r->a)
		               : "-",
		       r->name);
	}
}

/* Each step's peak, the largest changes first (steps only one run has after those). */
static void steps(const struct ms_diff *d, size_t top)
{
	size_t na = d->s[0].x.n_steps, nb = d->s[1].x.n_steps;
	char b1[32], b2[32], b3[48];

	printf("\npeak requested bytes of each step, step by step (%zu step%s in a, %zu in b; "
	       "%s):\n",
	       na, na == 1 ? "" : "s", nb,
	       na && nb ? "largest changes first" : "one side has none: in order");
	for (size_t k = 0; k < d->n_steps && k < top; k++) {
		const struct ms_diff_step *st = &d->steps[d->steps_by_change[k]];
		printf("    %12s %12s %12s  step %llu\n",
		       size_if(b1, sizeof(b1), st->in[0], st->bytes[0]),
		       size_if(b2, sizeof(b2), st->in[1], st->bytes[1]),
		       st->in[0] && st->in[1]
		               ? signed_size(b3, sizeof(b3),
		                             (int64_t)st->bytes[1] - (int64_t)st->bytes[0])
		               : "-",
		       (unsigned long long)st->step);
	}
	if (!d->n_steps)
		printf("    (no steps in either)\n");
	else if (d->n_steps > top)
		printf("    (%zu more steps: --json lists every step)\n", d->n_steps - top);
}

static void table(const char *title, const struct ms_diff_row *rows, size_t n, size_t top,
                  uint32_t frames)
{
	char b1[32], b2[32], b3[48];

	printf("\n%s\n    %12s %12s %12s  %s\n", title, "a", "b", "change", "name");
	for (size_t i = 0; i < n && i < top; i++) {
		const struct ms_diff_row *r = &rows[i];
		int both = r->in[0] && r->in[1];
		if (!r->a && !r->b)
			continue; /* nothing in either run (an annotation with no allocation in it)
			           */
		printf("    %12s %12s %12s  %s%s\n", size_if(b1, sizeof(b1), r->in[0], r->a),
		       size_if(b2, sizeof(b2), r->in[1], r->b),
		       both ? signed_size(b3, sizeof(b3), (int64_t)r->b - (int64_t)r->a) : "-",
		       r->name, both ? "" : "  (in one run only)");
		if (r->y)
			ms_site_print_frames(r->y, r->stack, frames, 46);
	}
	if (n == 0)
		printf("    (none in either run)\n");
}

void ms_diff_print(const struct ms_diff *d, const char *la, const char *lb, size_t top,
                   uint32_t frames)
{
	ran_with(d);
	peaks(d, la, lb);
	categories(d);
	contexts(d);
	steps(d, top);
	table("bytes live at each run's peak, by allocation site (largest changes first):",
	      d->sites, d->n_sites, top, frames);
	table("peak requested bytes inside each annotation (largest changes first):", d->anns,
	      d->n_anns, top, frames);
}
