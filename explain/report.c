/*
 * explain's answer for one device (report.h): the state at the peaks, the OOM and the end, the
 * verdict, and the settings replayed on the trace.
 */
#include "explain/report.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/outside.h"
#include "common/alloc.h"
#include "parse/trace.h"
#include "replay/alloc_conf.h"

size_t ms_explain_step_of(const struct ms_explain *x, uint64_t event)
{
	size_t k = 0;
	while (k < x->n_steps && x->steps[k].first_event <= event)
		k++;
	return k;
}

int64_t ms_explain_rounding(const struct ms_explain *x, uint64_t allocated)
{
	return (int64_t)allocated - (int64_t)ms_explain_requested(x);
}

/* Memory outside PyTorch on the device after event at into *out: measured where the replay r
 * has a mark. MS_ERR_NOMEM only. */
static ms_status outside_at(const struct ms_trace *t, const struct ms_replay_result *r,
                            uint32_t device, uint64_t at, enum ms_outside_how *how, uint64_t *mark,
                            uint64_t *out)
{
	struct ms_outside x;
	uint64_t cur, bytes;
	ms_status s = MS_OK;

	memset(&x, 0, sizeof(x));
	for (size_t i = 0; i < t->n_events && i <= at && !s; i++)
		if (t->events[i].device == device)
			s = ms_outside_event(&x, i, &t->events[i]);
	cur = x.cur;
	ms_outside_release(&x);
	if (s)
		return s;
	if (ms_replay_outside_at(r, at + 1, cur, &bytes, mark)) {
		*how = MS_OUTSIDE_MEASURED;
		*out = bytes;
	} else {
		*how = cur ? MS_OUTSIDE_RAW_ONLY : MS_OUTSIDE_NOT_MEASURED;
		*out = cur;
	}
	return MS_OK;
}

/* The innermost annotation open at event at (record_function, a phase) into *name (NULL: none). */
static ms_status open_annotation(const struct ms_trace *t, uint64_t at, const char **name)
{
	uint32_t *open = NULL;
	size_t n = 0, cap = 0;

	*name = NULL;
	for (size_t i = 0; i < t->n_anns && t->anns[i].event_index <= at; i++) {
		const struct ms_annotation *a = &t->anns[i];
		if (a->stage == MS_ANN_START) {
			if (ms_grow(&open, &cap, n + 1, sizeof(*open))) {
				ms_free(open);
				return MS_ERR_NOMEM;
			}
			open[n++] = a->name;
		} else if (a->stage == MS_ANN_END) {
			for (size_t k = n; k-- > 0;)
				if (open[k] == a->name) {
					memmove(open + k, open + k + 1,
					        (n - k - 1) * sizeof(*open));
					n--;
					break;
				}
		}
	}
	if (n)
		*name = ms_symtab_get_str(&t->syms, open[n - 1])->s;
	ms_free(open);
	return MS_OK;
}

/* yes first, then unknown, then no */
static int survives_rank(unsigned s)
{
	return s == MS_SURVIVES_YES ? 0 : s == MS_SURVIVES_UNKNOWN ? 1 : 2;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct ms_explain_rec *x = a, *y = b;
	if (survives_rank(x->sv.survives) != survives_rank(y->sv.survives))
		return survives_rank(x->sv.survives) - survives_rank(y->sv.survives);
	if (x->avoids_oom != y->avoids_oom)
		return y->avoids_oom - x->avoids_oom;
	return x->peak < y->peak ? -1 : x->peak > y->peak;
}

/*
 * Whether the failed request would have fit with no fragmentation: allocated plus requested
 * within the capacity. 1 yes, 0 no, -1 cannot be told (no capacity known, or a limit inferred
 * over a range that the demand lies within).
 */
static int oom_fits(const struct ms_replay_oom *f, uint64_t capacity,
                    const struct ms_limit_range *lim)
{
	uint64_t demand = f->o.allocated + f->o.requested;

	if (lim->inferred)
		return demand <= lim->lo ? 1 : demand > lim->hi ? 0 : -1;
	if (capacity == UINT64_MAX)
		return -1;
	return demand <= capacity;
}

/* The most reserved bytes in each step, from a replay under the first pass's options. */
struct step_res {
	const struct ms_explain *x;
	uint64_t *res;
	size_t k;
};

static void step_res_event(void *ctx, uint64_t index, const struct ms_event *e,
                           const struct ms_model *m)
{
	struct step_res *sr = ctx;
	uint64_t r = (uint64_t)ms_model_stats(m)->reserved_bytes[0].current;

	(void)e;
	while (sr->k + 1 < sr->x->n_steps && sr->x->steps[sr->k + 1].first_event <= index)
		sr->k++;
	if (index >= sr->x->steps[0].first_event && r > sr->res[sr->k])
		sr->res[sr->k] = r;
}

/* Whether the replay's on_event sees trace event i: the allocator's own events of its device. */
static int replay_sees(const struct ms_trace *t, uint32_t device, uint64_t i)
{
	const struct ms_event *e = &t->events[i];
	return e->device == device && e->source == MS_SRC_TORCH;
}

/*
 * Each step's most reserved bytes from a replay's reserved log, as step_res_event takes them
 * from the replay's events: what the replay held after each event it saw in the step (events
 * before the first step are no step's; a step it saw no event of has none). The log holds
 * every change, each at an event the replay saw.
 */
static void steps_from_log(const struct ms_trace *t, const struct ms_replay_result *r,
                           const struct ms_explain *x, uint64_t *res)
{
	const struct ms_reserved_point *pt = r->reserved_log;
	size_t n = r->n_reserved_log, i = 0;
	uint64_t held = 0; /* after the last point before the event looked at */
	uint64_t end = r->reserved_through < t->n_events ? r->reserved_through : t->n_events;

	for (size_t k = 0; k < x->n_steps; k++) {
		uint64_t a = x->steps[k].first_event;
		uint64_t b = k + 1 < x->n_steps ? x->steps[k + 1].first_event : UINT64_MAX;
		if (b > end)
			b = end;
		while (a < b && !replay_sees(t, r->device, a))
			a++;
		res[k] = 0;
		if (a >= b)
			continue;
		for (; i < n && pt[i].index <= a; i++)
			held = pt[i].reserved; /* after the step's first event the replay saw */
		res[k] = held;
		for (; i < n && pt[i].index < b; i++)
			if (pt[i].reserved > res[k])
				res[k] = pt[i].reserved;
		if (i)
			held = pt[i - 1].reserved;
	}
}

/*
 * res[k]: step k's most reserved bytes, from the first replay's reserved log where it has one
 * (the same replay: the log holds every change), else from a replay of its own (all 0 where it
 * fails: none shown). A step past where the replay stopped has none.
 */
static void steps_reserved(const struct ms_trace *t, const struct ms_replay_opts *base,
                           const struct ms_replay_result *first, const struct ms_explain *x,
                           uint64_t *res)
{
	struct ms_replay_opts o = *base;
	struct ms_replay_result r;
	struct step_res sr = {x, res, 0};
	struct ms_diag d = MS_DIAG_INIT;

	if (!x->n_steps)
		return;
	if (first->reserved_logged) {
		steps_from_log(t, first, x, res);
		return;
	}
	o.no_segment_log = 1;
	o.on_event = step_res_event;
	o.ctx = &sr;
	if (ms_replay_trace(t, &o, &r, &d))
		memset(res, 0, x->n_steps * sizeof(*res));
	ms_replay_result_release(&r);
}

/* A step whose requested bytes exceed what the replay reserved in it: the file holds blocks the
 * replay did not have (an inconsistent trace, another allocator's). Steps the replay did not
 * finish (it ran out of memory in them or before) are not compared. */
static int steps_exceed_reserved(const struct ms_explain *x, const uint64_t *res,
                                 const struct ms_replay_result *r)
{
	for (size_t k = 0; k < x->n_steps; k++) {
		if (r->ended_by_oom && x->steps[k].peak_event >= r->first_oom.index)
			break;
		if (res[k] && x->steps[k].peak_requested > res[k])
			return 1;
	}
	return 0;
}

static ms_status whatif_failed(ms_status s, struct ms_diag *d)
{
	return ms__diag_set(d, s, -1, -1, "%s",
	                    s == MS_ERR_NOMEM ? "out of memory" : "cannot start a thread");
}

/* An explain pass on a thread of its own. */
struct pass {
	struct ms_explain_in in;
	struct ms_explain *out;
	ms_status s;
};

static void *pass_run(void *arg)
{
	struct pass *p = arg;
	p->s = ms_explain_run(&p->in, p->out);
	return NULL;
}

struct passes {
	struct pass *p;
	size_t n;
};

static void *passes_run(void *arg)
{
	struct passes *ps = arg;
	for (size_t k = 0; k < ps->n; k++)
		pass_run(&ps->p[k]);
	return NULL;
}

/* The state at the peak, at the allocated peak, at the OOM and at the end: the peak's on this
 * thread, the others on a second one. */
static ms_status states(struct ms_explain_report *r)
{
	const struct ms_replay_result *f = &r->first;
	struct pass ps[3];
	struct passes all;
	size_t np = 0;
	struct ms_explain_in in;
	struct ms_explain_lives *lives;
	pthread_t th;
	int threaded;
	ms_status s;

	memset(&in, 0, sizeof(in));
	in.t = r->t;
	in.device = r->device;
	in.site_depth = r->site_depth;
	in.user_cats = r->user_cats;
	in.peak_index = r->peak_index;
	in.allocated_at_peak = r->allocated - r->served_at_peak;
	if ((s = ms_explain_lives_new(r->t, r->device, &lives)))
		return s;
	in.lives = lives;
	if (!f->ended_by_oom && r->t->n_events) {
		ps[np] = (struct pass){in, &r->at_end, MS_OK};
		ps[np].in.peak_index = r->t->n_events - 1;
		ps[np++].in.allocated_at_peak = (uint64_t)f->stats.allocated_bytes[0].current;
	}
	r->apeak = r->apeak_bytes > r->allocated;
	if (r->apeak) {
		ps[np] = (struct pass){in, &r->at_apeak, MS_OK};
		ps[np].in.peak_index = r->apeak_index;
		ps[np++].in.allocated_at_peak = r->apeak_bytes - r->apeak_served;
	}
	r->has_oom = f->has_oom;
	if (r->has_oom) {
		ps[np] = (struct pass){in, &r->at_oom, MS_OK};
		ps[np].in.peak_index = f->first_oom.index;
		ps[np].in.allocated_at_peak = f->first_oom.o.allocated;
		ps[np++].in.before = 1; /* what was there when the request failed */
	}
	/* the others one after another on the second thread, beside the peak's */
	for (size_t k = 0; k < np; k++)
		ps[k].in.state_only = 1; /* the peak's pass has the steps and sites */
	all = (struct passes){ps, np};
	threaded = np && pthread_create(&th, NULL, passes_run, &all) == 0;
	s = ms_explain_run(&in, &r->x);
	if (threaded)
		pthread_join(th, NULL);
	for (size_t k = 0; k < np; k++) {
		if (!threaded)
			pass_run(&ps[k]);
		if (!s)
			s = ps[k].s;
	}
	ms_explain_lives_free(lives);
	return s;
}

/* Row k's replay, borrowed from the first where the settings cannot differ. */
static void borrow_first(struct ms_explain_report *r, struct ms_whatif_row *w)
{
	struct ms_alloc_conf ac;

	if (ms_whatif_same_replay(&r->first, w->conf, &ac))
		ms_whatif_borrow(r->t, w, &r->first, &ac);
}

/* A setting helps where its replay avoids the first's OOM or lowers the peak by 1% or more. */
static int helps(const void *ctx, const struct ms_replay_result *w)
{
	const struct ms_explain_report *r = ctx;
	uint64_t reserved = r->reserved, p = (uint64_t)w->stats.reserved_bytes[0].peak;

	return (r->first.has_oom && !w->has_oom) ||
	       (!w->has_oom && p < reserved && reserved - p >= reserved / 100);
}

/* The rows that help, in order (recs). */
static void recommend(struct ms_explain_report *r)
{
	for (size_t k = 1; k < r->n_rows; k++) {
		const struct ms_whatif_row *w = &r->rows[k];
		int avoids;
		if (w->s || !helps(r, &w->r))
			continue;
		avoids = r->first.has_oom && !w->r.has_oom;
		r->recs[r->n_recs++] = (struct ms_explain_rec){
		        k, (uint64_t)w->r.stats.reserved_bytes[0].peak, avoids,
		        avoids && w->r.missed_ooms_went_on, r->vd.sv[k - 1]};
	}
	qsort(r->recs, r->n_recs, sizeof(*r->recs), rec_cmp);
}

static void *ahead_run(void *arg)
{
	struct ms_explain_ahead *a = arg;
	struct ms_diag d = MS_DIAG_INIT;

	a->s = ms_replay_trace(a->t, &a->o, &a->r, &d);
	return NULL;
}

void ms_explain_ahead_start(struct ms_explain_ahead *a, const struct ms_trace *t,
                            const struct ms_replay_opts *o)
{
	memset(a, 0, sizeof(*a));
	a->t = t;
	a->o = *o;
	a->o.alloc_conf = ms_whatif_default_configs[1]; /* expandable segments */
	a->o.windows = NULL;
	a->o.no_segment_log = 1;
	a->started = pthread_create(&a->th, NULL, ahead_run, a) == 0;
}

void ms_explain_ahead_release(struct ms_explain_ahead *a)
{
	if (a->started)
		pthread_join(a->th, NULL);
	a->started = 0;
	if (!a->taken)
		ms_replay_result_release(&a->r);
	a->taken = 1;
}

/* Whether replays under a and b, both of a row's setting, are the same replay. */
static int same_replay_opts(const struct ms_replay_opts *a, const struct ms_replay_opts *b)
{
	return a->device_memory == b->device_memory && a->limit == b->limit &&
	       a->fraction == b->fraction && a->device == b->device &&
	       a->limit_given == b->limit_given && a->no_recorded_limit == b->no_recorded_limit &&
	       a->device_memory_from_oom == b->device_memory_from_oom &&
	       a->outside_unseen == b->outside_unseen && a->limit_only == b->limit_only &&
	       a->no_hints == b->no_hints && a->no_segment_log == b->no_segment_log &&
	       a->init == b->init && a->no_split_pools == b->no_split_pools &&
	       a->use_on_oom_pools == b->use_on_oom_pools &&
	       a->n_no_split_pools == b->n_no_split_pools &&
	       a->n_use_on_oom_pools == b->n_use_on_oom_pools && !a->snap && !b->snap &&
	       !a->snap_at_oom && !b->snap_at_oom && !a->n_more_snaps && !b->n_more_snaps &&
	       !a->on_event && !b->on_event && !a->on_release && !b->on_release && !a->peak_gate &&
	       !b->peak_gate && !a->on_annotation && !b->on_annotation && !a->syms && !b->syms &&
	       !a->dev && !b->dev;
}

/* The row of the setting replayed ahead takes that replay, where it is the same replay. */
static void take_ahead(struct ms_explain_report *r, const struct ms_replay_opts *wo,
                       struct ms_explain_ahead *a)
{
	struct ms_replay_opts o = *wo;

	if (!a || !a->started)
		return;
	pthread_join(a->th, NULL);
	a->started = 0;
	o.alloc_conf = a->o.alloc_conf;
	if (a->s || !same_replay_opts(&o, &a->o))
		return;
	for (size_t k = 1; k < r->n_rows; k++)
		if (r->rows[k].conf == a->o.alloc_conf && !r->rows[k].borrowed) {
			r->rows[k].r = a->r;
			r->rows[k].made = 1;
			a->taken = 1;
			return;
		}
}

/*
 * The settings that would have helped, replayed on this trace: every one once (the recorded one
 * is the first replay), and the least memory of the recorded one and of each that helps searched
 * right after (a dozen replays each), in one pool on a thread of its own (rows_start), beside
 * the explain passes; then judged (rows_finish).
 */
struct rows_job {
	struct ms_explain_report *r;
	struct ms_replay_opts wo;
	unsigned jobs;
	ms_status s;
	pthread_t th;
	int threaded;
};

static void *rows_run(void *arg)
{
	struct rows_job *j = arg;
	j->s = ms_whatif_run(j->r->t, &j->wo, j->r->rows, j->r->n_rows, j->jobs);
	return NULL;
}

static ms_status rows_start(struct ms_explain_report *r, unsigned jobs,
                            struct ms_explain_ahead *ahead, struct rows_job *j)
{
	size_t k, n = ms_whatif_n_default_configs;

	*j = (struct rows_job){.r = r, .wo = r->o, .jobs = jobs};
	j->wo.no_segment_log = 1;
	r->rows = ms_calloc(n, sizeof(*r->rows));
	r->recs = ms_calloc(n, sizeof(*r->recs));
	if (!r->rows || !r->recs)
		return j->s = MS_ERR_NOMEM;
	r->n_rows = n;
	/* each setting's least memory searched right after its replay, where it helps */
	for (k = 0; k < n; k++) {
		r->rows[k].conf = ms_whatif_default_configs[k];
		r->rows[k].helps = helps;
		r->rows[k].helps_ctx = r;
	}
	for (k = 1; k < n; k++)
		borrow_first(r, &r->rows[k]);
	/* the settings of the first replay: given, or recorded */
	r->rows[0].conf = r->o.alloc_conf;
	r->rows[0].given = &r->first;
	r->rows[0].helps = NULL; /* the recorded settings' is searched in any case */
	take_ahead(r, &j->wo, ahead);
	j->threaded = pthread_create(&j->th, NULL, rows_run, j) == 0;
	return MS_OK;
}

/* The pool's end (run here where no thread started), each step's most reserved bytes, and the
 * verdicts. */
static ms_status rows_finish(struct ms_explain_report *r, struct rows_job *j, ms_status s,
                             struct ms_diag *d)
{
	if (j->threaded)
		pthread_join(j->th, NULL);
	else if (!s)
		rows_run(j);
	if (s)
		return s;
	if (!(r->step_reserved = ms_calloc(r->x.n_steps ? r->x.n_steps : 1, sizeof(uint64_t))))
		return MS_ERR_NOMEM;
	steps_reserved(r->t, &j->wo, &r->first, &r->x, r->step_reserved);
	s = j->s;
	/* would the job have survived under each (verdict.h) */
	if (!s)
		s = ms_verdict_judge_rows(r->t, &r->x, &j->wo, r->rows + 1, r->n_rows - 1, &r->vd);
	if (s)
		return s != MS_ERR_NOMEM || !d->msg[0] ? whatif_failed(s, d) : s;
	recommend(r);
	r->steps_exceed_reserved = steps_exceed_reserved(&r->x, r->step_reserved, &r->first);
	return MS_OK;
}

/* The states at the peak and after, the peak's annotation and what was held outside PyTorch,
 * why it ran out, and the capacity the verdicts rest on. */
static ms_status report_states(struct ms_explain_report *r)
{
	const struct ms_trace *t = r->t;
	ms_status s;

	if ((s = states(r)))
		return s;
	r->peak_step = ms_explain_step_of(&r->x, r->peak_index);
	if (r->apeak)
		r->apeak_step = ms_explain_step_of(&r->x, r->apeak_index);
	if ((s = open_annotation(t, r->peak_index, &r->peak_annotation)) ||
	    (s = outside_at(t, &r->first, r->device, r->peak_index, &r->outside_how,
	                    &r->outside_mark, &r->outside)) ||
	    (s = ms_verdict_begin(t, &r->x, &r->o, &r->first, &r->lim, &r->vd)))
		return s;
	r->capacity = r->o.limit ? r->o.limit : r->first.device_memory;
	/* a full device: PyTorch could use what it reserved and what was free, not the device */
	if (r->vd.oom.device_full)
		r->capacity = r->vd.oom.capacity_lo;
	if (r->has_oom)
		r->oom_fits = oom_fits(&r->first.first_oom, r->capacity, &r->lim);
	return MS_OK;
}

/* What is live at the end against the growing sites, and what the trace shows of the program. */
static void findings(struct ms_explain_report *r)
{
	const struct ms_replay_result *f = &r->first;
	const struct ms_explain *x = &r->x, *e = &r->at_end;
	uint64_t alloc = (uint64_t)f->stats.allocated_bytes[0].current;

	r->end_exceeds = ms_explain_requested(e) > alloc + alloc / 100;
	for (unsigned k = 0; k < MS_CAT_COUNT; k++)
		r->end_blocks += e->cat_blocks[k];
	for (size_t k = 0; k < x->n_growth; k++) {
		r->growing_bytes += x->growth[k].bytes_at_last_step;
		r->growing_bytes_at_end += x->growth[k].bytes_at_end;
	}
	r->empty_cache_every_step = f->empty_cache_calls >= 2 && x->n_optimizer_steps &&
	                            2 * f->empty_cache_calls >= x->n_optimizer_steps;
	r->cached_at_end = (uint64_t)f->stats.reserved_bytes[0].current -
	                   (uint64_t)f->stats.allocated_bytes[0].current;
	for (size_t i = 1; i < f->n_pools; i++) /* the first pool is the default */
		r->cached_at_end_private += (uint64_t)(f->pools[i].reserved_bytes.current -
		                                       f->pools[i].allocated_bytes.current);
}

/* The moment broken down: the run's peak of reserved bytes, or the window's the replay
 * measured (analysis/window.h). */
static void peaks_of(struct ms_explain_report *r)
{
	const struct ms_replay_result *f = &r->first;

	r->reserved = (uint64_t)f->stats.reserved_bytes[0].peak;
	r->allocated = f->allocated_at_peak_reserved;
	r->peak_index = f->fullest_at_peak_index;
	r->peak_first_index = f->peak_reserved_index;
	r->served_at_peak = f->served_oom_at_peak_reserved;
	r->apeak_bytes = (uint64_t)f->stats.allocated_bytes[0].peak;
	r->apeak_index = f->peak_allocated_index;
	r->apeak_served = f->served_oom_at_peak_allocated;
	if (f->windows_asked && f->n_windows) {
		const struct ms_window_figures *w = &f->windows[0];
		r->windowed = 1;
		r->window = *w;
		r->window.name = NULL;
		r->reserved = w->peak_reserved;
		r->allocated = w->allocated_at_peak_reserved;
		r->peak_index = w->fullest_event;
		r->peak_first_index = w->peak_reserved_event;
		r->served_at_peak = 0;
		r->apeak_bytes = w->peak_allocated;
		r->apeak_index = w->peak_allocated_event;
		r->apeak_served = 0;
		if (w->at) { /* the moment after its event, not the most of before and after */
			r->reserved = w->reserved_at_end;
			r->allocated = r->apeak_bytes = w->allocated_at_end;
			r->peak_index = r->peak_first_index = r->apeak_index = w->from;
		}
	}
	r->cached = r->reserved > r->allocated ? r->reserved - r->allocated : 0;
}

ms_status ms_explain_report_run(const struct ms_trace *t, const struct ms_replay_opts *o,
                                struct ms_replay_result *first, const struct ms_limit_range *lim,
                                unsigned jobs, uint32_t site_depth,
                                const struct ms_user_cats *user_cats,
                                struct ms_explain_ahead *ahead, struct ms_explain_report *r,
                                struct ms_diag *d)
{
	struct rows_job rows;
	ms_status s;

	memset(r, 0, sizeof(*r));
	r->t = t;
	r->o = *o;
	r->device = (uint32_t)o->device;
	r->site_depth = site_depth;
	r->user_cats = user_cats;
	r->first = *first;
	memset(first, 0, sizeof(*first));
	r->lim = *lim;
	if (!r->o.limit && r->first.limit)
		r->o.limit = r->first.limit;
	r->o.windows = NULL; /* the first replay's; the settings' rows are of the run whole */
	peaks_of(r);
	if ((s = rows_start(r, jobs, ahead, &rows)))
		return ms__diag_set(d, s, -1, -1, "out of memory");
	s = report_states(r);
	if ((s = rows_finish(r, &rows, s, d))) /* joins the pool, also after an error */
		return d->msg[0] ? s : ms__diag_set(d, s, -1, -1, "out of memory");
	findings(r);
	return MS_OK;
}

void ms_explain_report_release(struct ms_explain_report *r)
{
	if (r->rows)
		ms_whatif_release(r->rows, r->n_rows);
	ms_free(r->rows);
	ms_free(r->recs);
	ms_free(r->step_reserved);
	ms_explain_release(&r->at_oom);
	ms_explain_release(&r->at_apeak);
	ms_explain_release(&r->at_end);
	ms_explain_release(&r->x);
	ms_verdict_release(&r->vd);
	ms_replay_result_release(&r->first);
	memset(r, 0, sizeof(*r));
}
