/* memsnap stats FILE... [--json]: statistics from the trace alone; files read in parallel. */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmds.h"
#include "cli/opts.h"
#include "cli/out.h"
#include "cli/sites.h"
#include "common/alloc.h"
#include "parse/trace.h"
#include "replay/trace_stats.h"

static const char *const usage[] = {
        "memsnap stats [--json] [--top N] [--jobs N] [--frames user|all|N] <file>...",
        "",
        "From the trace alone: peak requested bytes (PyTorch's requested_bytes.all.peak)",
        "with the event, time and annotation where it happened; allocations still live",
        "at the end (possible leaks); the largest allocations; the top allocation sites",
        "by bytes live at the peak; and, from the end-state segments when present,",
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
	struct ms_symtab syms;
	struct ms_stats_builder *b;
	const struct ms_trace_stats *r;
	struct ms_source_info si;
	struct ms_diag d;
	ms_status s;
	int64_t t0;
	size_t top;
	uint32_t frames; /* --frames */
};

struct pool {
	struct job *jobs;
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
	return t0_begin(f->j, m, y);
}

static ms_status f_event(void *ctx, const struct ms_event *e)
{
	struct fwd *f = ctx;
	if (f->first) {
		f->first = 0;
		f->j->t0 = e->t_ns;
	}
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

static void run_job(struct job *j, size_t top)
{
	struct fwd f;
	struct ms_sink sink = {0};

	j->d = (struct ms_diag)MS_DIAG_INIT;
	if ((j->s = ms_symtab_init(&j->syms)) || (j->s = ms_stats_builder_new(top, &j->b)))
		return;
	memset(&f, 0, sizeof(f));
	ms_stats_builder_sink(j->b, &f.inner);
	f.j = j;
	f.first = 1;
	sink.ctx = &f;
	sink.begin = f_begin;
	sink.event = f_event;
	sink.annotation = f_ann;
	sink.segment = f_seg;
	j->s = ms_source_read(j->path, NULL, &j->syms, &sink, &j->si, &j->d);
	if (!j->s)
		j->r = ms_stats_builder_result(j->b);
}

static void *worker(void *arg)
{
	struct pool *p = arg;
	size_t i;

	while ((i = atomic_fetch_add(&p->next, 1)) < p->n)
		run_job(&p->jobs[i], p->top);
	return NULL;
}

static cJSON *alloc_json(const struct job *j, const struct ms_stats_alloc *a)
{
	cJSON *o = cJSON_CreateObject();
	char buf[512], hex[24];

	snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)a->addr);
	ms_json_u64(o, "index", (uint64_t)(a->index));
	ms_json_u64(o, "size", (uint64_t)(a->size));
	cJSON_AddStringToObject(o, "addr", hex);
	ms_json_u64(o, "stream", (uint64_t)(a->stream));
	cJSON_AddNumberToObject(o, "device", a->device);
	ms_json_i64(o, "time_ns", a->t_ns);
	if (a->stack) {
		ms_site_label(&j->syms, a->stack, buf, sizeof(buf));
		cJSON_AddStringToObject(o, "site", buf);
		ms_site_json_frames(o, &j->syms, a->stack, j->frames);
	} else {
		cJSON_AddNullToObject(o, "site");
	}
	return o;
}

static cJSON *job_json(const struct job *j)
{
	const struct ms_trace_stats *r = j->r;
	cJSON *o = cJSON_CreateObject(), *a, *x;
	char buf[512];

	cJSON_AddStringToObject(o, "file", j->path);
	ms_json_u64(o, "events_total", (uint64_t)(r->n_events));
	ms_json_u64(o, "allocations", (uint64_t)(r->n_allocs));
	ms_json_u64(o, "peak_requested_bytes", (uint64_t)(r->peak_requested));
	ms_json_u64(o, "peak_requested_index", (uint64_t)(r->peak_index));
	ms_json_i64(o, "peak_requested_time_ns", r->peak_t_ns);
	if (r->peak_annotation)
		cJSON_AddStringToObject(o, "peak_annotation",
		                        ms_symtab_get_str(&j->syms, r->peak_annotation)->s);
	else
		cJSON_AddNullToObject(o, "peak_annotation");
	ms_json_u64(o, "end_requested_bytes", (uint64_t)(r->end_requested));
	{
		cJSON *ext = cJSON_AddObjectToObject(o, "outside_pytorch");
		ms_json_u64(ext, "raw_cuda_events", r->raw_events);
		ms_json_u64(ext, "pytorch_own_calls", r->raw_claimed);
		ms_json_u64(ext, "peak_bytes", r->external_peak);
		ms_json_u64(ext, "peak_index", r->external_peak_index);
		ms_json_u64(ext, "end_bytes", r->external_end);
	}
	x = cJSON_AddObjectToObject(o, "live_at_end");
	ms_json_u64(x, "count", (uint64_t)(r->live_count));
	ms_json_u64(x, "bytes", (uint64_t)(r->live_bytes));
	a = cJSON_AddArrayToObject(x, "largest");
	for (size_t i = 0; i < r->n_live_top; i++)
		cJSON_AddItemToArray(a, alloc_json(j, &r->live_top[i]));
	ms_json_u64(o, "pending_frees_at_end", (uint64_t)(r->pending_count));
	ms_json_u64(o, "unmatched_frees", (uint64_t)(r->unmatched_frees));
	a = cJSON_AddArrayToObject(o, "largest_allocations");
	for (size_t i = 0; i < r->n_largest; i++)
		cJSON_AddItemToArray(a, alloc_json(j, &r->largest[i]));
	a = cJSON_AddArrayToObject(o, "top_sites_at_peak");
	for (size_t i = 0; i < r->n_sites; i++) {
		cJSON *s = cJSON_CreateObject();
		ms_site_label(&j->syms, r->sites[i].stack, buf, sizeof(buf));
		cJSON_AddStringToObject(s, "site", buf);
		cJSON_AddNumberToObject(s, "stack_id", r->sites[i].stack);
		ms_site_json_frames(s, &j->syms, r->sites[i].stack, j->frames);
		ms_json_u64(s, "bytes", (uint64_t)(r->sites[i].bytes));
		ms_json_u64(s, "count", (uint64_t)(r->sites[i].count));
		cJSON_AddItemToArray(a, s);
	}
	if (r->n_devices > 1) {
		a = cJSON_AddArrayToObject(o, "devices");
		for (uint32_t i = 0; i < r->n_devices; i++) {
			cJSON *d = cJSON_CreateObject();
			cJSON_AddNumberToObject(d, "device", i);
			ms_json_u64(d, "peak_requested_bytes", r->devices[i].peak_requested);
			ms_json_u64(d, "peak_requested_index", r->devices[i].peak_index);
			cJSON_AddItemToArray(a, d);
		}
	}
	if (r->has_segments) {
		x = cJSON_AddObjectToObject(o, "segments");
		ms_json_u64(x, "count", (uint64_t)(r->n_segments));
		ms_json_u64(x, "expandable", (uint64_t)(r->n_expandable));
		ms_json_u64(x, "reserved_bytes", (uint64_t)(r->reserved));
		ms_json_u64(x, "allocated_bytes", (uint64_t)(r->allocated));
		ms_json_u64(x, "active_bytes", (uint64_t)(r->active));
		ms_json_u64(x, "requested_bytes", (uint64_t)(r->requested));
		ms_json_u64(x, "internal_free_bytes", (uint64_t)(r->internal));
		ms_json_u64(x, "external_free_bytes", (uint64_t)(r->external_free));
		ms_json_u64(x, "pending_free_bytes", (uint64_t)(r->pending_free_bytes));
		ms_json_u64(x, "largest_free_block_bytes", (uint64_t)(r->largest_free));
	} else {
		cJSON_AddNullToObject(o, "segments");
	}
	return o;
}

static void print_alloc(const struct job *j, const struct ms_stats_alloc *a)
{
	char b1[32], site[512];

	ms_site_label(&j->syms, a->stack, site, sizeof(site));
	printf("    %12s  event %-9llu %s\n", ms_format_size(b1, sizeof(b1), a->size),
	       (unsigned long long)a->index, site);
	ms_site_print_frames(&j->syms, a->stack, j->frames, 36);
}

static void print_one(const struct job *j)
{
	const struct ms_trace_stats *r = j->r;
	char b1[32], b2[32], site[512];

	printf("%s\n", j->path);
	printf("  events:           %llu (%llu allocations)\n", (unsigned long long)r->n_events,
	       (unsigned long long)r->n_allocs);
	if (!r->n_allocs)
		printf("  peak requested:   0 bytes (no allocations)");
	else
		printf("  peak requested:   %s (%llu bytes) at event %llu, +%.3f s",
		       ms_format_size(b1, sizeof(b1), r->peak_requested),
		       (unsigned long long)r->peak_requested, (unsigned long long)r->peak_index,
		       (double)(r->peak_t_ns - j->t0) / 1e9);
	if (r->peak_annotation)
		printf(", in \"%s\"", ms_symtab_get_str(&j->syms, r->peak_annotation)->s);
	if (r->raw_events)
		printf("\n  outside PyTorch:  peak %s at event %llu, %s at the end (%llu raw CUDA "
		       "events, %llu of them PyTorch's own segment calls)",
		       ms_format_size(b1, sizeof(b1), r->external_peak),
		       (unsigned long long)r->external_peak_index,
		       ms_format_size(b2, sizeof(b2), r->external_end),
		       (unsigned long long)r->raw_events, (unsigned long long)r->raw_claimed);
	printf("\n  live at end:      %llu allocations, %s (possible leaks)\n",
	       (unsigned long long)r->live_count, ms_format_size(b1, sizeof(b1), r->live_bytes));
	for (size_t i = 0; i < r->n_live_top; i++)
		print_alloc(j, &r->live_top[i]);
	if (r->pending_count)
		printf("  pending frees:    %llu at the end\n",
		       (unsigned long long)r->pending_count);
	if (r->unmatched_frees)
		printf("  unmatched frees:  %llu (the trace starts after these blocks were "
		       "allocated)\n",
		       (unsigned long long)r->unmatched_frees);
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
	}
}

int cmd_stats(int argc, const char **argv)
{
	int json = 0, n, rc = MS_EXIT_OK;
	uint64_t top = 10, jobs = 0;
	struct ms_frames_opt frames = {0};
	const struct ms_opt opts[] = {
	        MS_OPT_BOOL(0, "json", &json, "print JSON (an object; an array for several files)"),
	        MS_OPT_U64(0, "top", &top, "N", "length of the top lists (default 10)"),
	        MS_OPT_U64('j', "jobs", &jobs, "N",
	                   "files read at once (default: the number of CPUs)"),
	        MS_OPT_FRAMES(&frames),
	        MS_OPT_END(),
	};
	struct pool p;
	pthread_t *th;
	size_t nth;

	n = ms_parse_options(argc, argv, opts, usage);
	if (n < 1)
		ms_usage_error(opts, usage, "no file given");
	if (top == 0 || top > 100000)
		ms_usage_error(opts, usage, "--top must be 1 to 100000");
	ms_frames_opt_check(&frames, opts, usage);
	memset(&p, 0, sizeof(p));
	p.n = (size_t)n;
	p.top = (size_t)top;
	p.jobs = ms_calloc(p.n, sizeof(*p.jobs));
	if (!p.jobs)
		ms_die(MS_EXIT_ERROR, "out of memory");
	for (size_t i = 0; i < p.n; i++) {
		p.jobs[i].path = argv[i];
		p.jobs[i].top = (size_t)top;
		p.jobs[i].frames = frames.n;
	}
	nth = jobs ? (size_t)jobs : (size_t)sysconf(_SC_NPROCESSORS_ONLN);
	if (nth < 1)
		nth = 1;
	if (nth > p.n)
		nth = p.n;
	th = ms_calloc(nth, sizeof(*th));
	if (!th)
		ms_die(MS_EXIT_ERROR, "out of memory");
	if (nth == 1) {
		worker(&p);
	} else {
		for (size_t i = 0; i < nth; i++)
			if (pthread_create(&th[i], NULL, worker, &p))
				ms_die(MS_EXIT_ERROR, "cannot start a thread");
		for (size_t i = 0; i < nth; i++)
			pthread_join(th[i], NULL);
	}
	for (size_t i = 0; i < p.n; i++) {
		if (p.jobs[i].s) {
			ms_report(p.jobs[i].path, p.jobs[i].s, &p.jobs[i].d);
			rc = MS_EXIT_ERROR;
		} else {
			ms_report_warnings(p.jobs[i].path, &p.jobs[i].d);
		}
	}
	if (json) {
		cJSON *root = p.n == 1 ? NULL : cJSON_CreateArray();
		char *s;
		for (size_t i = 0; i < p.n; i++) {
			if (p.jobs[i].s)
				continue;
			if (root)
				cJSON_AddItemToArray(root, job_json(&p.jobs[i]));
			else
				root = job_json(&p.jobs[i]);
		}
		if (root) {
			s = cJSON_Print(root);
			if (s)
				puts(s);
			cJSON_free(s);
			cJSON_Delete(root);
		}
	} else if (p.n == 1) {
		if (!p.jobs[0].s)
			print_one(&p.jobs[0]);
	} else {
		char b1[32], b2[32], b3[32];
		printf("%-40s %10s %14s %10s %12s %14s %12s\n", "file", "events", "peak req.",
		       "at event", "live at end", "reserved(end)", "segments");
		for (size_t i = 0; i < p.n; i++) {
			const struct job *j = &p.jobs[i];
			if (j->s)
				continue;
			printf("%-40s %10llu %14s %10llu %12s %14s %12llu\n", j->path,
			       (unsigned long long)j->r->n_events,
			       ms_format_size(b1, sizeof(b1), j->r->peak_requested),
			       (unsigned long long)j->r->peak_index,
			       ms_format_size(b2, sizeof(b2), j->r->live_bytes),
			       j->r->has_segments ? ms_format_size(b3, sizeof(b3), j->r->reserved)
			                          : "-",
			       (unsigned long long)j->r->n_segments);
		}
	}
	for (size_t i = 0; i < p.n; i++) {
		ms_stats_builder_free(p.jobs[i].b);
		ms_symtab_release(&p.jobs[i].syms);
	}
	ms_free(p.jobs);
	ms_free(th);
	return rc;
}
