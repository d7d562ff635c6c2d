/* memsnap stats FILE... [--json]: statistics from the trace alone; files read in parallel. */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/stats_view.h"
#include "analysis/trace_stats.h"
#include "json/stats.h"
#include "cli/cmds.h"
#include "cli/opts.h"
#include "cli/messages.h"
#include "cli/sites.h"
#include "common/alloc.h"
#include "parse/trace.h"

static const char *const usage[] = {
        "memsnap stats [--json] [--top N] [--device D] <file>...",
        "              [--jobs N] [--frames user|all|N] [--site-depth N]",
        "",
        "From the trace alone: peak requested bytes (PyTorch's requested_bytes.all.peak)",
        "with the event, time and annotation where it happened; allocations still live",
        "at the end (the model's state, caches, leaks: explain tells them apart); the",
        "largest allocations; the top allocation sites by bytes live at the peak; and,",
        "from the end-state segments when present,",
        "reserved, allocated, internal (rounding) and external free bytes, the largest",
        "free block and the number of segments. Several files (one per rank) give one",
        "table with a row per file, read in parallel.",
        "",
        "A site is the first frame of the user's own code in the allocation's stack (else a",
        "library's, torch's, then the C++ that says what ran); --frames all prints the whole",
        "stack below it, --frames N its N-1 callers, and sites are then grouped by all that",
        "is printed.",
        NULL,
};

struct job {
	const char *path;
	int64_t only;   /* read only this device, -1: every device */
	int64_t device; /* the device the result is about, -1: none has anything */
	struct ms_symtab syms;
	struct ms_stats_builder *b;
	const struct ms_trace_stats *r;
	struct ms_source_info si;
	struct ms_diag d;
	ms_status s;
	int64_t t0;
	size_t top;
	uint32_t frames; /* --frames */
	int empty;       /* valid, with no event and no segment: no allocations recorded */
};

struct pool {
	struct job *jobs;
	struct job **todo; /* when set, the jobs to run are todo[0..n), else jobs[0..n) */
	size_t n, top;
	atomic_size_t next;
};

static ms_status t0_begin(void *ctx, const struct ms_meta *m, const struct ms_symtab *y)
{
	(void)y;
	((struct job *)ctx)->t0 = m->start_t_ns;
	return MS_OK;
}

struct fwd {
	struct ms_sink inner;
	struct job *j;
	int first;
};

static ms_status f_begin(void *ctx, const struct ms_meta *m, const struct ms_symtab *y)
{
	struct fwd *f = ctx;
	ms_status s = t0_begin(f->j, m, y);
	return s || !f->inner.begin ? s : f->inner.begin(f->inner.ctx, m, y);
}

static ms_status f_event(void *ctx, const struct ms_event *e)
{
	struct fwd *f = ctx;
	/* times count from the earliest event: a snapshot lists each device's events apart */
	if (f->first || (e->t_ns && e->t_ns < f->j->t0))
		f->j->t0 = e->t_ns;
	f->first = 0;
	return f->inner.event(f->inner.ctx, e);
}

static ms_status f_ann(void *ctx, const struct ms_annotation *a)
{
	struct fwd *f = ctx;
	return f->inner.annotation(f->inner.ctx, a);
}

static ms_status f_seg(void *ctx, const struct ms_segment *s, const struct ms_block *b)
{
	struct fwd *f = ctx;
	return f->inner.segment(f->inner.ctx, s, b);
}

/* The sink that feeds builder b, through f (which notes the job's first time stamp). */
static struct ms_sink job_sink(struct job *j, struct ms_stats_builder *b, struct fwd *f)
{
	struct ms_sink sink = {0};

	if (j->only >= 0)
		ms_stats_builder_only(b, (uint32_t)j->only);
	memset(f, 0, sizeof(*f));
	ms_stats_builder_sink(b, &f->inner);
	f->j = j;
	f->first = 1;
	sink.ctx = f;
	sink.begin = f_begin;
	sink.event = f_event;
	sink.annotation = f_ann;
	sink.segment = f_seg;
	return sink;
}

/* A snapshot with private pools at its end, whose events do not say their pool (PyTorch 2.11
 * and older): the pools the end state tells them (ms_trace_load), read into the result again.
 * Where that fails, the first result stands (the end state by pool, no pool's peak). */
static void with_pools_told(struct job *j, size_t top)
{
	struct ms_trace *t;
	struct ms_stats_builder *b;
	struct ms_source_info si;
	struct ms_diag d = MS_DIAG_INIT;
	struct fwd f;
	struct ms_sink sink;
	int any_private = 0;

	for (size_t i = 0; i < j->r->n_pools; i++)
		any_private |= (j->r->pools[i].id[0] | j->r->pools[i].id[1]) != 0;
	if (!any_private || j->r->n_pools_requested || ms_file_is_snapshot(j->path) <= 0)
		return;
	if (ms_trace_load(j->path, NULL, &t, &si, &d))
		return;
	if (!t->pools.private_allocs || ms_stats_builder_new(top, &b)) {
		ms_trace_free(t);
		return;
	}
	sink = job_sink(j, b, &f);
	if (ms_trace_emit(t, &sink)) {
		ms_stats_builder_free(b);
		ms_trace_free(t);
		return;
	}
	ms_stats_builder_free(j->b);
	j->b = b;
	j->r = ms_stats_builder_result(b);
	/* the result's stacks are the loaded trace's */
	ms_symtab_release(&j->syms);
	j->syms = t->syms;
	memset(&t->syms, 0, sizeof(t->syms));
	ms_trace_free(t);
}

static void run_job(struct job *j, size_t top)
{
	struct fwd f;
	struct ms_sink sink;

	j->d = (struct ms_diag)MS_DIAG_INIT;
	if ((j->s = ms_symtab_init(&j->syms)) || (j->s = ms_stats_builder_new(top, &j->b)))
		return;
	sink = job_sink(j, j->b, &f);
	j->s = ms_source_read(j->path, NULL, &j->syms, &sink, &j->si, &j->d);
	if (!j->s)
		j->r = ms_stats_builder_result(j->b);
	if (!j->s)
		with_pools_told(j, top);
	/* a snapshot of nothing (the empty list memory_snapshot() gives before any allocation) */
	if (!j->s && !j->r->n_events && !j->r->has_segments && j->d.warnings) {
		/* cut off before its first event */
		char w[sizeof(j->d.warning)];
		snprintf(w, sizeof(w), "%s", j->d.warning);
		j->s = ms__diag_set(&j->d, MS_ERR_TRUNCATED, -1, -1, "nothing to show: %s", w);
	} else if (!j->s && !j->r->n_events && !j->r->has_segments) {
		/* a valid file of nothing (a rank that allocated nothing): among several files a
		   row that says so, alone an error */
		j->empty = 1;
		j->s = ms__diag_set(&j->d, MS_ERR_FORMAT, -1, -1,
		                    "no events and no segments: nothing to show");
	}
}

static int has_events(const struct ms_trace_stats *r)
{
	for (uint32_t i = 0; i < r->n_devices; i++)
		if (r->devices[i].events)
			return 1;
	return 0;
}

/*
 * Is a result about device dev: it has allocator events there, or (a snapshot without a trace)
 * segments there.
 */
static int about(const struct ms_trace_stats *r, int events, uint32_t dev)
{
	return events ? r->devices[dev].events > 0 : r->devices[dev].segments > 0;
}

/* How many devices r is about; the first of them in *first. */
static size_t devices_of(const struct ms_trace_stats *r, uint32_t *first)
{
	int events = has_events(r);
	size_t n = 0;

	for (uint32_t i = 0; i < r->n_devices; i++)
		if (about(r, events, i) && !n++)
			*first = i;
	return n;
}

static void *worker(void *arg)
{
	struct pool *p = arg;
	size_t i;

	while ((i = atomic_fetch_add(&p->next, 1)) < p->n)
		run_job(p->todo ? p->todo[i] : &p->jobs[i], p->top);
	return NULL;
}

/* The end state's allocated blocks grouped by site (their stacks), largest first. */
static struct ms_site_row *block_rows(const struct job *j, size_t *n)
{
	struct ms_site_row *rows;

	if (ms_site_rows_group(&j->syms, j->r->block_sites, j->r->n_block_sites, j->frames,
	                       ms_site_depth(), &rows, n))
		ms_die(MS_EXIT_ERROR, "out of memory");
	return rows;
}

/* The job as the library shows it (analysis/stats_view.h). */
static struct ms_stats_view view_of(const struct job *j)
{
	return (struct ms_stats_view){j->path,  j->device, j->only,
	                              &j->syms, j->r,      ms_source_cut_short(&j->si),
	                              j->top,   j->frames, ms_site_depth()};
}

static void print_alloc(const struct job *j, const struct ms_stats_alloc *a)
{
	char b1[32], site[512];

	ms_site_label(&j->syms, a->stack, site, sizeof(site));
	printf("    %12s  event %-9llu %s\n", ms_format_size(b1, sizeof(b1), a->size),
	       (unsigned long long)a->index, site);
	ms_site_print_frames(&j->syms, a->stack, j->frames, 36);
}

/* The median of the rows' peaks of requested bytes (rows with allocations), 0 if none. */
static uint64_t median_peak(const struct job *all, size_t n)
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
static const char *peak_cell(char *buf, size_t cap, const struct job *j)
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

static void print_no_trace(const struct job *j)
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
static void print_outside(const struct job *j)
{
	const struct ms_trace_stats *r = j->r;
	struct ms_stats_view v = view_of(j);
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

static void print_one(const struct job *j)
{
	const struct ms_trace_stats *r = j->r;
	struct ms_stats_view v;
	char b1[32], b2[32], site[512], pn[192];

	if (j->device > 0 || j->only >= 0)
		printf("%s (device %lld)\n", j->path, (long long)j->device);
	else
		printf("%s\n", j->path);
	if (!r->n_allocs && r->has_segments) {
		print_no_trace(j);
		return;
	}
	v = view_of(j);
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
		printf(", in \"%s\"", ms_symtab_get_str(&j->syms, ms_stats_peak_annotation(r))->s);
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
	printf("  top sites at the peak (bytes live, allocations):\n");
	{
		size_t nrows;
		struct ms_site_row *rows = ms_group_sites(&j->syms, j->r, j->frames, &nrows);
		for (size_t i = 0; i < nrows && i < j->top; i++) {
			printf("    %12s %7llu  %s\n",
			       ms_format_size(b1, sizeof(b1), rows[i].bytes),
			       (unsigned long long)rows[i].count, rows[i].label);
			ms_site_print_frames(&j->syms, rows[i].stack, j->frames, 28);
		}
		ms_free(rows);
	}
	(void)site;
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

/* Run the pool's jobs on up to nth threads. */
static void run_pool(struct pool *p, size_t nth)
{
	pthread_t *th;

	atomic_store(&p->next, 0);
	if (nth > p->n)
		nth = p->n;
	if (nth <= 1) {
		worker(p);
		return;
	}
	if (!(th = ms_calloc(nth, sizeof(*th))))
		ms_die(MS_EXIT_ERROR, "out of memory");
	for (size_t i = 0; i < nth; i++)
		if (pthread_create(&th[i], NULL, worker, p))
			ms_die(MS_EXIT_ERROR, "cannot start a thread");
	for (size_t i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	ms_free(th);
}

static void job_release(struct job *j)
{
	ms_stats_builder_free(j->b);
	ms_symtab_release(&j->syms);
	j->b = NULL;
	j->r = NULL;
}

/*
 * Each file is read once; a file with several devices is read again once per device, so that
 * every result is about one device (devices are never added together). The results replace
 * the file's job in order: out[] gets one job per (file, device).
 */
static struct job *per_device(struct pool *p, size_t nth, size_t *n_out)
{
	struct pool q;
	size_t n = 0, k = 0, m = 0;
	uint32_t first = 0;

	for (size_t i = 0; i < p->n; i++) {
		size_t nd =
		        p->jobs[i].s || p->jobs[i].only >= 0 ? 1 : devices_of(p->jobs[i].r, &first);
		n += nd > 1 ? nd : 1;
	}
	memset(&q, 0, sizeof(q));
	q.top = p->top;
	q.jobs = ms_calloc(n, sizeof(*q.jobs));
	q.todo = ms_calloc(n, sizeof(*q.todo));
	if (!q.jobs || !q.todo)
		ms_die(MS_EXIT_ERROR, "out of memory");
	for (size_t i = 0; i < p->n; i++) {
		struct job *j = &p->jobs[i];
		size_t nd = j->s ? 0 : devices_of(j->r, &first);
		int events;
		if (!j->s && j->only >= 0) { /* --device: that one, or none */
			j->device = about(j->r, has_events(j->r), (uint32_t)j->only) ? j->only : -1;
			q.jobs[k++] = *j;
			continue;
		}
		if (nd <= 1) {
			j->device = nd == 1 ? (int64_t)first : -1;
			q.jobs[k++] = *j; /* one device or none: the result as it is */
			continue;
		}
		events = has_events(j->r);
		for (uint32_t dev = 0; dev < j->r->n_devices; dev++) {
			if (!about(j->r, events, dev))
				continue;
			q.jobs[k].path = j->path;
			q.jobs[k].top = j->top;
			q.jobs[k].frames = j->frames;
			q.jobs[k].only = dev;
			q.jobs[k].device = dev;
			q.todo[m++] = &q.jobs[k++];
		}
		job_release(j);
	}
	q.n = m; /* the new reads, one per device of a file with several */
	if (m)
		run_pool(&q, nth);
	ms_free(q.todo);
	ms_free(p->jobs);
	*n_out = k;
	return q.jobs;
}

int cmd_stats(int argc, const char **argv)
{
	int json = 0, n, rc = MS_EXIT_OK;
	uint64_t top = 10, jobs = 0, device = UINT64_MAX;
	struct ms_frames_opt frames = {0};
	int site_depth = 1;
	const struct ms_opt opts[] = {
	        MS_OPT_BOOL(0, "json", &json,
	                    "print JSON (an object; an array for several files or devices)"),
	        MS_OPT_U64(0, "top", &top, "N",
	                   "length of the top lists, 1 to 100000 (default 10)"),
	        MS_OPT_U64('j', "jobs", &jobs, "N",
	                   "files read at once (default: the number of CPUs)"),
	        MS_OPT_U64(0, "device", &device, "D",
	                   "only device D of each file (default: each device with events)"),
	        MS_OPT_FRAMES(&frames),
	        MS_OPT_SITE_DEPTH(&site_depth),
	        MS_OPT_END(),
	};
	struct pool p;
	struct job *all;
	size_t nth, nall;

	n = ms_parse_options(argc, argv, opts, usage);
	if (n < 1)
		ms_usage_error(opts, usage, "no file given");
	if (top == 0 || top > 100000)
		ms_usage_error(opts, usage, "--top must be 1 to 100000");
	if (device != UINT64_MAX && device > UINT16_MAX)
		ms_usage_error(opts, usage, "--device must be 0 to 65535");
	ms_frames_opt_check(&frames, opts, usage);
	ms_site_depth_set(site_depth, opts, usage);
	memset(&p, 0, sizeof(p));
	p.n = (size_t)n;
	p.top = (size_t)top;
	p.jobs = ms_calloc(p.n, sizeof(*p.jobs));
	if (!p.jobs)
		ms_die(MS_EXIT_ERROR, "out of memory");
	for (size_t i = 0; i < p.n; i++) {
		p.jobs[i].path = argv[i];
		p.jobs[i].top = (size_t)top;
		p.jobs[i].only = device == UINT64_MAX ? -1 : (int64_t)device;
		p.jobs[i].frames = frames.n;
	}
	nth = jobs ? (size_t)jobs : (size_t)sysconf(_SC_NPROCESSORS_ONLN);
	if (nth < 1)
		nth = 1;
	run_pool(&p, nth);
	all = per_device(&p, nth, &nall);
	for (size_t i = 0; i < nall; i++) {
		if (device != UINT64_MAX &&
		    (all[i].s ? all[i].empty : all[i].device != (int64_t)device)) {
			ms_error("%s: nothing on device %llu (memsnap info lists the file's "
			         "devices)",
			         all[i].path, (unsigned long long)device);
			rc = MS_EXIT_ERROR;
		} else if (all[i].s && all[i].empty && p.n > 1) {
			continue; /* a row of the table: no allocations recorded */
		} else if (all[i].s) {
			ms_report(all[i].path, all[i].s, &all[i].d);
			rc = MS_EXIT_ERROR;
		} else if (i == 0 || all[i].path != all[i - 1].path) {
			ms_report_warnings(all[i].path, &all[i].d);
		}
	}
	/* an output is whole or none: no table or JSON without the files that failed */
	if (rc)
		goto out;
	if (json) {
		cJSON *root = nall == 1 ? NULL : cJSON_CreateArray();
		uint64_t median = nall > 1 ? median_peak(all, nall) : 0;
		char *s;
		for (size_t i = 0; i < nall; i++) {
			cJSON *o;
			if (all[i].s && all[i].empty && root) {
				o = cJSON_CreateObject();
				cJSON_AddStringToObject(o, "file", all[i].path);
				cJSON_AddNullToObject(o, "device");
				cJSON_AddNumberToObject(o, "allocations", 0);
				cJSON_AddBoolToObject(o, "no_allocations_recorded", 1);
				cJSON_AddItemToArray(root, o);
				continue;
			}
			if (all[i].s)
				continue;
			{
				struct ms_stats_view v = view_of(&all[i]);
				if (!(o = ms_stats_json(&v)))
					ms_die(MS_EXIT_ERROR, "out of memory");
			}
			if (root) {
				/* several files: each peak against the median of them */
				if (median && all[i].r->n_allocs)
					cJSON_AddNumberToObject(o, "peak_against_median",
					                        (double)ms_stats_peak(all[i].r) /
					                                        (double)median -
					                                1);
				else
					cJSON_AddNullToObject(o, "peak_against_median");
				cJSON_AddItemToArray(root, o);
			} else {
				root = o;
			}
		}
		if (root) {
			s = cJSON_Print(root);
			if (s)
				puts(s);
			cJSON_free(s);
			cJSON_Delete(root);
		}
	} else if (nall == 1) {
		if (!all[0].s)
			print_one(&all[0]);
	} else if (p.n == 1) {
		for (size_t i = 0; i < nall; i++) {
			if (i)
				putchar('\n');
			if (!all[i].s)
				print_one(&all[i]);
		}
	} else {
		char b1[32], b2[32], b3[32];
		uint64_t median = median_peak(all, nall);
		size_t n_oom = 0;
		int w = 4; /* the file column: as wide as the longest name */
		for (size_t i = 0; i < nall; i++)
			if ((!all[i].s || all[i].empty) && (int)strlen(all[i].path) > w)
				w = (int)strlen(all[i].path);
		printf("%-*s %6s %10s %14s %9s %10s %12s %14s %9s %12s\n", w, "file", "device",
		       "events", "peak req.", "vs median", "at event", "live at end",
		       "reserved(end)", "segments", "recorded OOM");
		for (size_t i = 0; i < nall; i++) {
			const struct job *j = &all[i];
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
				snprintf(
				        vs, sizeof(vs), "%+.1f%%",
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
				snprintf(segs, sizeof(segs), "%llu",
				         (unsigned long long)j->r->n_segments);
			else
				snprintf(segs, sizeof(segs), "-");
			/* without a trace the peak is the end state's: at no event */
			if (j->r->n_allocs)
				snprintf(at, sizeof(at), "%llu",
				         (unsigned long long)ms_stats_peak_index(j->r));
			else
				snprintf(at, sizeof(at), "-");
			struct ms_stats_view v = view_of(j);
			printf("%-*s %6s %10llu %14s %9s %10s %12s %14s %9s %12s\n", w, j->path,
			       dev, (unsigned long long)ms_stats_view_events(&v),
			       peak_cell(b1, sizeof(b1), j), vs, at,
			       /* as live_at_end.bytes: the blocks from before the trace (without a
			          trace, the end state's allocated ones) included */
			       ms_format_size(b2, sizeof(b2),
			                      j->r->live_bytes + j->r->pre_trace_requested),
			       j->r->has_segments ? ms_format_size(b3, sizeof(b3), j->r->reserved)
			                          : "-",
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
out:
	for (size_t i = 0; i < nall; i++)
		job_release(&all[i]);
	ms_free(all);
	return rc;
}
