/* stats' reading (stats_read.h). */
#include "analysis/stats_read.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "parse/source.h"

struct pool {
	struct ms_stats_read *jobs;
	struct ms_stats_read **todo; /* when set, the jobs to run are todo[0..n), else jobs[0..n) */
	size_t n, top;
	atomic_size_t next;
};

static ms_status t0_begin(void *ctx, const struct ms_meta *m, const struct ms_symtab *y)
{
	(void)y;
	((struct ms_stats_read *)ctx)->t0 = m->start_t_ns;
	return MS_OK;
}

struct fwd {
	struct ms_sink inner;
	struct ms_stats_read *j;
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
static struct ms_sink job_sink(struct ms_stats_read *j, struct ms_stats_builder *b, struct fwd *f)
{
	struct ms_sink sink = {0};

	if (j->only >= 0)
		ms_stats_builder_only(b, (uint32_t)j->only);
	if (j->windows)
		ms_stats_builder_windows(b, j->windows);
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
static void with_pools_told(struct ms_stats_read *j, const struct ms_source *src, size_t top)
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
	if (!any_private || j->r->n_pools_requested || src->is_stdin || !ms_source_is_snapshot(src))
		return;
	if (ms_trace_load_source(src, NULL, &t, &si, &d))
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

void ms_stats_read_run(struct ms_stats_read *j, size_t top)
{
	int opened_here = 0;
	struct fwd f;
	struct ms_sink sink;

	j->d = (struct ms_diag)MS_DIAG_INIT;
	if ((j->s = ms_symtab_init(&j->syms)) || (j->s = ms_stats_builder_new(top, &j->b)))
		return;
	sink = job_sink(j, j->b, &f);
	if (!j->src && !(j->s = ms_source_open(j->path, &j->src, &j->d)))
		j->own_src = opened_here = 1;
	if (j->s)
		return;
	/* standard input can be read once: whole, where the file may be read again a device */
	if (opened_here && j->src->is_stdin && j->only < 0) {
		const struct ms_trace *t;
		if ((j->s = ms_source_whole(j->src, &t, &j->d)))
			return;
	}
	j->s = ms_source_stream(j->src, MS_PASS_STATS, NULL, &j->syms, &sink, &j->si, &j->d);
	if (j->src->whole && j->src->is_stdin) /* emitted from memory: the ids are its table's */
		j->ext_syms = &j->src->whole->syms;
	if (!j->s)
		j->r = ms_stats_builder_result(j->b);
	if (!j->s)
		with_pools_told(j, j->src, top);
	/* kept open only for a file read again for each of its devices (per_device), or whose
	   trace in memory the result's ids refer to: a command over many files holds no more of
	   them open than it reads at once */
	if (opened_here && !j->ext_syms &&
	    (j->s || j->only >= 0 || ms_stats_devices_of(j->r, &(uint32_t){0}) <= 1)) {
		ms_source_close(j->src);
		j->src = NULL;
		j->own_src = 0;
	}
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

int ms_stats_has_events(const struct ms_trace_stats *r)
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
int ms_stats_about(const struct ms_trace_stats *r, int events, uint32_t dev)
{
	return events ? r->devices[dev].events > 0 : r->devices[dev].segments > 0;
}

/* How many devices r is about; the first of them in *first. */
size_t ms_stats_devices_of(const struct ms_trace_stats *r, uint32_t *first)
{
	int events = ms_stats_has_events(r);
	size_t n = 0;

	for (uint32_t i = 0; i < r->n_devices; i++)
		if (ms_stats_about(r, events, i) && !n++)
			*first = i;
	return n;
}

static void *worker(void *arg)
{
	struct pool *p = arg;
	size_t i;

	while ((i = atomic_fetch_add(&p->next, 1)) < p->n)
		ms_stats_read_run(p->todo ? p->todo[i] : &p->jobs[i], p->top);
	return NULL;
}

static ms_status run_pool(struct pool *p, size_t nth)
{
	pthread_t *th;

	atomic_store(&p->next, 0);
	if (nth > p->n)
		nth = p->n;
	if (nth <= 1) {
		worker(p);
		return MS_OK;
	}
	if (!(th = ms_calloc(nth, sizeof(*th))))
		return MS_ERR_NOMEM;
	for (size_t i = 0; i < nth; i++)
		if (pthread_create(&th[i], NULL, worker, p)) {
			/* the threads started take every read: none is lost */
			for (size_t k = 0; k < i; k++)
				pthread_join(th[k], NULL);
			ms_free(th);
			if (i)
				return MS_OK;
			worker(p);
			return MS_OK;
		}
	for (size_t i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	ms_free(th);
	return MS_OK;
}

const struct ms_symtab *ms_stats_read_syms(const struct ms_stats_read *j)
{
	return j->ext_syms ? j->ext_syms : &j->syms;
}

void ms_stats_read_release(struct ms_stats_read *j)
{
	ms_stats_builder_free(j->b);
	ms_symtab_release(&j->syms);
	if (j->own_src)
		ms_source_close(j->src);
	j->src = NULL;
	j->own_src = 0;
	j->ext_syms = NULL;
	j->b = NULL;
	j->r = NULL;
}

/*
 * Each file is read once; a file with several devices is read again once per device, so that
 * every result is about one device (devices are never added together). The results replace
 * the file's job in order: out[] gets one job per (file, device).
 */
static ms_status per_device(struct pool *p, size_t nth, struct ms_stats_read **out, size_t *n_out)
{
	struct pool q;
	size_t n = 0, k = 0, m = 0;
	uint32_t first = 0;
	ms_status s;

	for (size_t i = 0; i < p->n; i++) {
		size_t nd = p->jobs[i].s || p->jobs[i].only >= 0
		                    ? 1
		                    : ms_stats_devices_of(p->jobs[i].r, &first);
		n += nd > 1 ? nd : 1;
	}
	memset(&q, 0, sizeof(q));
	q.top = p->top;
	q.jobs = ms_calloc(n, sizeof(*q.jobs));
	q.todo = ms_calloc(n, sizeof(*q.todo));
	if (!q.jobs || !q.todo) {
		ms_free(q.jobs);
		ms_free(q.todo);
		return MS_ERR_NOMEM;
	}
	for (size_t i = 0; i < p->n; i++) {
		struct ms_stats_read *j = &p->jobs[i];
		size_t nd = j->s ? 0 : ms_stats_devices_of(j->r, &first);
		int events;
		if (!j->s && j->only >= 0) { /* --device: that one, or none */
			j->device =
			        ms_stats_about(j->r, ms_stats_has_events(j->r), (uint32_t)j->only)
			                ? j->only
			                : -1;
			q.jobs[k++] = *j;
			continue;
		}
		if (nd <= 1) {
			j->device = nd == 1 ? (int64_t)first : -1;
			q.jobs[k++] = *j; /* one device or none: the result as it is */
			continue;
		}
		events = ms_stats_has_events(j->r);
		for (uint32_t dev = 0; dev < j->r->n_devices; dev++) {
			if (!ms_stats_about(j->r, events, dev))
				continue;
			/* the file's source, read again for each device: the first closes it */
			q.jobs[k].src = j->src;
			q.jobs[k].own_src = j->own_src;
			j->own_src = 0;
			q.jobs[k].path = j->path;
			q.jobs[k].top = j->top;
			q.jobs[k].frames = j->frames;
			q.jobs[k].windows = j->windows;
			q.jobs[k].only = dev;
			q.jobs[k].device = dev;
			q.todo[m++] = &q.jobs[k++];
		}
		ms_stats_read_release(j);
	}
	q.n = m; /* the new reads, one per device of a file with several */
	s = m ? run_pool(&q, nth) : MS_OK;
	ms_free(q.todo);
	*out = q.jobs;
	*n_out = k;
	return s;
}

ms_status ms_stats_read_files(struct ms_stats_read *reads, size_t n, size_t top, size_t nth,
                              struct ms_stats_read **out, size_t *n_out)
{
	struct pool p;
	ms_status s;

	*out = NULL;
	*n_out = 0;
	memset(&p, 0, sizeof(p));
	p.jobs = reads;
	p.n = n;
	p.top = top;
	if ((s = run_pool(&p, nth)))
		return s;
	return per_device(&p, nth, out, n_out);
}
