/* stats' results as text (stats_text.h): one file's sections, or a table of several. */
#include "cli/stats_text.h"

#include <stdio.h>
#include <string.h>

#include "cli/messages.h"
#include "cli/sites.h"
#include "common/alloc.h"

/* The end state's allocated blocks grouped by site (their stacks), largest first. */
static struct ms_site_row *block_rows(const struct ms_stats_read *j, size_t *n)
{
	struct ms_site_row *rows;

	if (ms_site_rows_group(ms_stats_read_syms(j), j->r->block_sites, j->r->n_block_sites,
	                       j->frames, ms_site_depth(), &rows, n))
		ms_die(MS_EXIT_ERROR, "out of memory");
	return rows;
}

/* The job as the library shows it (analysis/stats_view.h). */
struct ms_stats_view ms_stats_view_of(const struct ms_stats_read *j)
{
	return (struct ms_stats_view){j->path,
	                              j->device,
	                              j->only,
	                              ms_stats_read_syms(j),
	                              j->r,
	                              ms_source_cut_short(&j->si),
	                              j->top,
	                              j->frames,
	                              ms_site_depth(),
	                              ms_user_cats_opt()};
}

static void print_alloc(const struct ms_stats_read *j, const struct ms_stats_alloc *a)
{
	char b1[32], site[512];

	ms_site_label(ms_stats_read_syms(j), a->stack, site, sizeof(site));
	printf("    %12s  event %-9llu %s\n", ms_format_size(b1, sizeof(b1), a->size),
	       (unsigned long long)a->index, site);
	ms_site_print_frames(ms_stats_read_syms(j), a->stack, j->frames, 36);
}

/* The median of the rows' peaks of requested bytes (rows with allocations), 0 if none. */
uint64_t ms_stats_median_peak(const struct ms_stats_read *all, size_t n)
{
	uint64_t *p = ms_calloc(n ? n : 1, sizeof(*p)), m = 0;
	size_t k = 0;

	if (!p)
		ms_die(MS_EXIT_ERROR, "out of memory");
	for (size_t i = 0; i < n; i++)
		if (!all[i].s && all[i].r->n_allocs)
			p[k++] = ms_stats_peak(all[i].r);
	m = ms_median_u64(p, k);
	ms_free(p);
	return m;
}

/* The table's peak: "at least" written as ">=" where the trace starts mid-run or is cut short. */
static const char *peak_cell(char *buf, size_t cap, const struct ms_stats_read *j)
{
	char b[32];

	snprintf(buf, cap, "%s%s",
	         ms_stats_mid_run(j->r) || ms_source_cut_short(&j->si) ? ">=" : "",
	         ms_format_size(b, sizeof(b), ms_stats_peak(j->r)));
	return buf;
}

/* A snapshot without a trace: what its end state holds, and by whom. */
/* The end state by pool, where private pools (CUDA graphs, MemPools) hold any of it. */
static void print_pools(const struct ms_trace_stats *r)
{
	char b1[32], b2[32], id[48];

	if (r->n_pools < 2 && (!r->n_pools || !(r->pools[0].id[0] | r->pools[0].id[1])))
		return;
	for (size_t i = 0; i < r->n_pools; i++) {
		const struct ms_stats_pool *p = &r->pools[i];
		printf("    pool %s: %llu segments, %s reserved, %s allocated%s\n",
		       ms_pool_id_text(p->id, id, sizeof(id)), (unsigned long long)p->segments,
		       ms_format_size(b1, sizeof(b1), p->reserved),
		       ms_format_size(b2, sizeof(b2), p->allocated),
		       p->id[0] | p->id[1] ? "" : " (default)");
	}
}

static void print_no_trace(const struct ms_stats_read *j)
{
	const struct ms_trace_stats *r = j->r;
	char b1[32], b2[32], b3[32];
	struct ms_site_row *rows;
	size_t nrows;

	printf("  no trace:         the segments as the snapshot recorded them (taken with "
	       "history off or enabled=\"state\"); peaks, growth and leaks need a trace\n");
	printf("  end state:        %llu segments, %s reserved, %s allocated, %s free\n",
	       (unsigned long long)r->n_segments, ms_format_size(b1, sizeof(b1), r->reserved),
	       ms_format_size(b2, sizeof(b2), r->allocated),
	       ms_format_size(b3, sizeof(b3), r->external_free));
	printf("    internal free:  %s (rounding inside allocated blocks)\n",
	       ms_format_size(b1, sizeof(b1), r->internal));
	printf("    largest free:   %s; fragmentation %.3f (1 - largest free block / free "
	       "bytes)\n",
	       ms_format_size(b1, sizeof(b1), r->largest_free), ms_stats_fragmentation(r));
	if (r->pending_free_bytes)
		printf("    pending free:   %s\n",
		       ms_format_size(b1, sizeof(b1), r->pending_free_bytes));
	print_pools(r);
	rows = block_rows(j, &nrows);
	printf("  top sites of the allocated blocks (bytes, blocks):\n");
	if (!nrows)
		printf("    (none allocated)\n");
	for (size_t i = 0; i < nrows && i < j->top; i++)
		printf("    %12s %7llu  %s\n", ms_format_size(b1, sizeof(b1), rows[i].bytes),
		       (unsigned long long)rows[i].count, rows[i].label);
	ms_free(rows);
}

/* Memory outside PyTorch, as far as the trace measured it (a line of its own, begun with its
   newline as the pool lines are), or nothing where it has neither marks nor raw CUDA calls. */
static void print_outside(const struct ms_stats_read *j)
{
	const struct ms_trace_stats *r = j->r;
	struct ms_stats_view v = ms_stats_view_of(j);
	const struct ms_stats_outside *m = ms_stats_view_measured(&v);
	char b1[32], b2[32], b3[32], raw[160];

	snprintf(raw, sizeof(raw),
	         "%llu raw CUDA events: %llu allocations, %llu of them PyTorch's own segments; "
	         "%llu frees",
	         (unsigned long long)r->raw_events,
	         (unsigned long long)(r->raw_events - r->raw_frees),
	         (unsigned long long)r->raw_claimed, (unsigned long long)r->raw_frees);
	if (m) {
		printf("\n  outside PyTorch:  measured%s: %s at event %llu, the most %s (event "
		       "%llu), "
		       "%s at the last of %llu cudaMemGetInfo marks (event %llu): the device's "
		       "total less its free bytes and PyTorch's reserved (the CUDA context, NCCL's "
		       "buffers, other libraries and processes); not measured between the marks",
		       ms_stats_view_measured_at_most(&v)
		               ? ", at most (PyTorch's segments from before the trace "
		                 "are in it)"
		               : "",
		       ms_format_size(b1, sizeof(b1), m->first_bytes),
		       (unsigned long long)m->first_index,
		       ms_format_size(b2, sizeof(b2), m->highest_bytes),
		       (unsigned long long)m->highest_index,
		       ms_format_size(b3, sizeof(b3), m->last_bytes), (unsigned long long)m->marks,
		       (unsigned long long)m->last_index);
		if (ms_stats_raw_outside(r))
			printf("\n    of it, raw CUDA calls outside PyTorch's segments: peak %s at "
			       "event %llu, %s at the end (%s)",
			       ms_format_size(b1, sizeof(b1), r->external_peak),
			       (unsigned long long)r->external_peak_index,
			       ms_format_size(b2, sizeof(b2), r->external_end), raw);
		else if (r->raw_events)
			printf("\n    of it, raw CUDA calls outside PyTorch's segments: none (%s)",
			       raw);
	} else if (ms_stats_raw_outside(r)) {
		printf("\n  outside PyTorch:  at least: peak %s at event %llu, %s at the end: only "
		       "the raw CUDA calls outside PyTorch's segments (%s); not measured (no "
		       "cudaMemGetInfo marks): the CUDA context and the calls the interposer does "
		       "not see are not in it",
		       ms_format_size(b1, sizeof(b1), r->external_peak),
		       (unsigned long long)r->external_peak_index,
		       ms_format_size(b2, sizeof(b2), r->external_end), raw);
	} else if (r->raw_events) {
		printf("\n  outside PyTorch:  not measured: no cudaMemGetInfo marks, and none of "
		       "the "
		       "raw CUDA calls held memory outside PyTorch's segments (%s)",
		       raw);
	}
}

/* Of the blocks from before the trace that it frees, those the program had freed before it. */
static const char *pending_note(char *buf, size_t cap, const struct ms_trace_stats *r)
{
	if (!r->pre_pending_frees)
		return "";
	snprintf(buf, cap,
	         ", %llu of those freed by the program before it: pending free, not allocated, "
	         "at its start",
	         (unsigned long long)r->pre_pending_frees);
	return buf;
}

static void print_end(const struct ms_stats_read *j);

void ms_stats_print_one(const struct ms_stats_read *j)
{
	const struct ms_trace_stats *r = j->r;
	struct ms_stats_view v;
	char b1[32], b2[32], pn[192];

	if (j->device > 0 || j->only >= 0)
		printf("%s (device %lld)\n", j->path, (long long)j->device);
	else
		printf("%s\n", j->path);
	if (!r->n_allocs && r->has_segments) {
		print_no_trace(j);
		return;
	}
	v = ms_stats_view_of(j);
	printf("  events:           %llu (%llu allocation%s)\n",
	       (unsigned long long)ms_stats_view_events(&v), (unsigned long long)r->n_allocs,
	       r->n_allocs == 1 ? "" : "s");
	if (ms_source_cut_short(&j->si))
		printf("  cut short:        the file ends early (%s): the figures below are of the "
		       "part it holds, its peak at least that\n",
		       j->si.zst.truncated ? "truncated" : "no END record");
	if (ms_stats_mid_run(r))
		printf("  mid-run:          the trace starts after the job did: %llu blocks (%s "
		       "requested) were live before its first event (%llu of them freed in it%s); "
		       "the "
		       "peak below counts them while they lived, and may have been higher before "
		       "the trace\n",
		       (unsigned long long)(r->pre_trace_blocks + r->unmatched_frees),
		       ms_format_size(b1, sizeof(b1),
		                      r->pre_trace_requested + r->pre_freed_requested),
		       (unsigned long long)r->unmatched_frees, pending_note(pn, sizeof(pn), r));
	if (!r->n_allocs)
		printf("  peak requested:   %s (no allocations in the trace)",
		       ms_format_size(b1, sizeof(b1), r->pre_trace_requested));
	else {
		int64_t t = ms_stats_peak_t_ns(r);
		printf("  peak requested:   %s%s (%llu bytes) at event %llu",
		       ms_stats_mid_run(r) || ms_source_cut_short(&j->si) ? "at least " : "",
		       ms_format_size(b1, sizeof(b1), ms_stats_peak(r)),
		       (unsigned long long)ms_stats_peak(r),
		       (unsigned long long)ms_stats_peak_index(r));
		if (t || j->t0) /* times: PyTorch 2.2 and later */
			printf(", +%.3f s", (double)(t - j->t0) / 1e9);
	}
	if (ms_stats_peak_annotation(r))
		printf(", in \"%s\"",
		       ms_symtab_get_str(ms_stats_read_syms(j), ms_stats_peak_annotation(r))->s);
	for (size_t i = 0; i < r->n_pools_requested; i++) {
		const struct ms_stats_pool_requested *q = &r->pools_requested[i];
		uint64_t id[2];
		char name[48];
		ms_pool_id(q->code, id);
		printf("\n    in pool %s: peak %s at event %llu, %s at the end",
		       ms_pool_id_text(id, name, sizeof(name)),
		       ms_format_size(b1, sizeof(b1), q->peak), (unsigned long long)q->peak_index,
		       ms_format_size(b2, sizeof(b2), q->current));
	}
	print_outside(j);
	print_end(j);
}

/* What was live at the end, the largest allocations, the top sites, the end state. */
static void print_end(const struct ms_stats_read *j)
{
	const struct ms_trace_stats *r = j->r;
	char b1[32], b2[32];

	if (r->pre_trace_blocks)
		printf("\n  live at end:      %llu allocations, %s: %llu made in the trace (%s) "
		       "and "
		       "%llu from before it (the model's state, caches, leaks: memsnap explain "
		       "tells them apart)\n",
		       (unsigned long long)(r->live_count + r->pre_trace_blocks),
		       ms_format_size(b1, sizeof(b1), r->live_bytes + r->pre_trace_requested),
		       (unsigned long long)r->live_count,
		       ms_format_size(b2, sizeof(b2), r->live_bytes),
		       (unsigned long long)r->pre_trace_blocks);
	else
		printf("\n  live at end:      %llu allocation%s, %s (the model's state, caches, "
		       "leaks: memsnap explain tells them apart)\n",
		       (unsigned long long)r->live_count, r->live_count == 1 ? "" : "s",
		       ms_format_size(b1, sizeof(b1), r->live_bytes));
	for (size_t i = 0; i < r->n_live_top; i++)
		print_alloc(j, &r->live_top[i]);
	if (r->pending_count)
		printf("  pending frees:    %llu at the end\n",
		       (unsigned long long)r->pending_count);
	if (r->unmatched_frees)
		printf("  unmatched frees:  %llu (the trace starts after these blocks were "
		       "allocated)\n",
		       (unsigned long long)r->unmatched_frees);
	if (r->pre_trace_blocks)
		printf("  live throughout:  %llu blocks allocated before the trace (%s requested), "
		       "still live at its end\n",
		       (unsigned long long)r->pre_trace_blocks,
		       ms_format_size(b1, sizeof(b1), r->pre_trace_requested));
	printf("  largest allocations:\n");
	for (size_t i = 0; i < r->n_largest; i++)
		print_alloc(j, &r->largest[i]);
	if (j->r->n_contexts) {
		printf("  by compile context at the peak (torch.compile's regions; N/A: outside "
		       "them):\n");
		for (size_t i = 0; i < j->r->n_contexts; i++) {
			const struct ms_stats_context *c = &j->r->contexts[i];
			printf("    %12s %7llu  %s\n", ms_format_size(b1, sizeof(b1), c->bytes),
			       (unsigned long long)c->count,
			       c->before ? "(from before the trace: not known)"
			       : c->name ? ms_symtab_get_str(ms_stats_read_syms(j), c->name)->s
			                 : "N/A");
		}
	}
	if (ms_user_cats_count(ms_user_cats_opt())) {
		const struct ms_user_cats *u = ms_user_cats_opt();
		uint64_t bytes[MS_USER_CATS_MAX + 1], count[MS_USER_CATS_MAX + 1];
		size_t nu = ms_user_cats_count(u);
		ms_user_cats_sum_sites(u, ms_stats_read_syms(j), j->r->sites, j->r->n_sites, bytes,
		                       count);
		printf("  your categories at the peak (bytes live, allocations):\n");
		for (size_t i = 0; i <= nu; i++)
			printf("    %12s %7llu  %s%s%s\n", ms_format_size(b1, sizeof(b1), bytes[i]),
			       (unsigned long long)count[i],
			       i < nu ? ms_user_cats_name(u, i) : "(none of them)",
			       i < nu ? ": " : "", i < nu ? ms_user_cats_pattern(u, i) : "");
	}
	printf("  top sites at the peak (bytes live, allocations):\n");
	{
		size_t nrows;
		struct ms_site_row *rows =
		        ms_group_sites(ms_stats_read_syms(j), j->r, j->frames, &nrows);
		for (size_t i = 0; i < nrows && i < j->top; i++) {
			printf("    %12s %7llu  %s\n",
			       ms_format_size(b1, sizeof(b1), rows[i].bytes),
			       (unsigned long long)rows[i].count, rows[i].label);
			ms_site_print_frames(ms_stats_read_syms(j), rows[i].stack, j->frames, 28);
		}
		ms_free(rows);
	}
	if (r->has_segments) {
		printf("  end state:        %llu segments, %s reserved, %s allocated\n",
		       (unsigned long long)r->n_segments,
		       ms_format_size(b1, sizeof(b1), r->reserved),
		       ms_format_size(b2, sizeof(b2), r->allocated));
		printf("    internal free:  %s (rounding inside allocated blocks)\n",
		       ms_format_size(b1, sizeof(b1), r->internal));
		printf("    external free:  %s, largest free block %s\n",
		       ms_format_size(b1, sizeof(b1), r->external_free),
		       ms_format_size(b2, sizeof(b2), r->largest_free));
		if (r->pending_free_bytes)
			printf("    pending free:   %s\n",
			       ms_format_size(b1, sizeof(b1), r->pending_free_bytes));
		print_pools(r);
	}
}

/* Several results: a row each, every peak against their median. */
void ms_stats_print_table(const struct ms_stats_read *all, size_t nall)
{
	char b1[32], b2[32], b3[32];
	uint64_t median = ms_stats_median_peak(all, nall);
	size_t n_oom = 0;
	int w = 4; /* the file column: as wide as the longest name */
	for (size_t i = 0; i < nall; i++)
		if ((!all[i].s || all[i].empty) && (int)strlen(all[i].path) > w)
			w = (int)strlen(all[i].path);
	printf("%-*s %6s %10s %14s %9s %10s %12s %14s %9s %12s\n", w, "file", "device", "events",
	       "peak req.", "vs median", "at event", "live at end", "reserved(end)", "segments",
	       "recorded OOM");
	for (size_t i = 0; i < nall; i++) {
		const struct ms_stats_read *j = &all[i];
		char dev[24], vs[24], oom[32];
		if (j->s && j->empty) {
			printf("%-*s %6s %10s  no allocations recorded (no events, no "
			       "segments)\n",
			       w, j->path, "-", "0");
			continue;
		}
		if (j->s)
			continue;
		if (j->device >= 0)
			snprintf(dev, sizeof(dev), "%lld", (long long)j->device);
		else
			snprintf(dev, sizeof(dev), "-");
		if (median && j->r->n_allocs)
			snprintf(vs, sizeof(vs), "%+.1f%%",
			         100.0 * ((double)ms_stats_peak(j->r) / (double)median - 1));
		else
			snprintf(vs, sizeof(vs), "-");
		if (j->r->recorded_ooms)
			snprintf(oom, sizeof(oom), "event %llu",
			         (unsigned long long)j->r->first_oom_index);
		else
			snprintf(oom, sizeof(oom), "-");
		n_oom += j->r->recorded_ooms != 0;
		char at[24], segs[24];
		/* a recording holds no end state: no segment count */
		if (j->r->has_segments)
			snprintf(segs, sizeof(segs), "%llu", (unsigned long long)j->r->n_segments);
		else
			snprintf(segs, sizeof(segs), "-");
		/* without a trace the peak is the end state's: at no event */
		if (j->r->n_allocs)
			snprintf(at, sizeof(at), "%llu",
			         (unsigned long long)ms_stats_peak_index(j->r));
		else
			snprintf(at, sizeof(at), "-");
		struct ms_stats_view v = ms_stats_view_of(j);
		printf("%-*s %6s %10llu %14s %9s %10s %12s %14s %9s %12s\n", w, j->path, dev,
		       (unsigned long long)ms_stats_view_events(&v), peak_cell(b1, sizeof(b1), j),
		       vs, at,
		       /* as live_at_end.bytes: the blocks from before the trace (without a
		          trace, the end state's allocated ones) included */
		       ms_format_size(b2, sizeof(b2), j->r->live_bytes + j->r->pre_trace_requested),
		       j->r->has_segments ? ms_format_size(b3, sizeof(b3), j->r->reserved) : "-",
		       segs, oom);
	}
	if (median)
		printf("vs median: the peak against the median of the rows' peaks (%s); "
		       "%zu "
		       "of them recorded an OOM\n",
		       ms_format_size(b1, sizeof(b1), median), n_oom);
	else
		printf("vs median: none, no row has a trace (their peaks are their end "
		       "states'); %zu of them recorded an OOM\n",
		       n_oom);
	for (size_t i = 0; i < nall; i++) /* a file once, whatever its devices */
		if (!all[i].s && ms_source_cut_short(&all[i].si) &&
		    (!i || all[i].path != all[i - 1].path))
			printf("%s is cut short (its file ends early): its figures are of "
			       "the "
			       "part it holds, its peak at least that\n",
			       all[i].path);
}
