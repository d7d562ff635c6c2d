/* render's page made whole (page.h). */
#include "render/page.h"

#include <pthread.h>
#include <string.h>

#include "common/alloc.h"
#include "explain/verdict.h"
#include "parse/devices.h"
#include "parse/source.h"
#include "parse/trace.h"
#include "render/report.h"
#include "replay/whatif.h"

/*
 * Which settings would have avoided the OOM: whatif.h's default matrix under o (the first
 * pass's options: the same limit). The searches replay the trace dozens of times: from memory.
 * Release *rows with ms_whatif_release() and ms_free().
 */
static ms_status whatif_rows(const struct ms_trace *t, const struct ms_replay_opts *o,
                             struct ms_whatif_row **rows_out, size_t *n_out)
{
	size_t n = ms_whatif_n_default_configs;
	struct ms_whatif_row *rows;
	ms_status s;

	if (!(rows = ms_calloc(n, sizeof(*rows))))
		return MS_ERR_NOMEM;
	for (size_t i = 0; i < n; i++)
		rows[i].conf = ms_whatif_default_configs[i];
	s = ms_whatif_run(t, o, rows, n, 0);
	if (s) {
		ms_whatif_release(rows, n);
		ms_free(rows);
		return s;
	}
	*rows_out = rows;
	*n_out = n;
	return MS_OK;
}

/* The trace of src whole, read once for every page made of it (the source keeps it). */
static ms_status whole_of(const struct ms_source *src, const struct ms_trace **t, struct ms_diag *d)
{
	return ms_source_whole((struct ms_source *)(uintptr_t)src, t, d);
}

/* The run's verdict (explain/verdict.h) into *v where the trace is whole in memory (t). */
static ms_status verdict(const struct ms_trace *t, const struct ms_replay_opts *o,
                         const struct ms_replay_result *r, const struct ms_limit_range *lim,
                         const struct ms_whatif_row *rows, size_t n_rows, struct ms_verdict *v,
                         int *has)
{
	ms_status s;

	*has = 0;
	if (!t)
		return MS_OK;
	if (!(s = ms_verdict_of_replay(t, o, r, lim, rows, n_rows, v)))
		*has = 1;
	return s;
}

ms_status ms_page_write(const struct ms_source *src, const struct ms_trace *t,
                        const struct ms_replay_opts *o, const struct ms_replay_result *first,
                        const struct ms_limit_range *lim, const struct ms_page_opts *pg,
                        enum ms_page_out what, struct ms_buf *out, struct ms_diag *d)
{
	const char *path = src->path;
	struct ms_report_input in = {
	        .source = path,
	        .path = path,
	        .src = src,
	        .trace = t,
	        .opts = o,
	        .first = first,
	        .buckets = pg->detail,
	        .frames = pg->frames,
	        .site_depth = pg->site_depth,
	        .user_cats = pg->user_cats,
	        .from = pg->from,
	        .to = pg->to,
	        .limit_inferred = lim->inferred,
	        .limit_lo = lim->lo,
	        .limit_hi = lim->hi,
	};
	struct ms_report rep;
	struct ms_whatif_row *rows = NULL;
	size_t n_rows = 0;
	struct ms_verdict v;
	int has_verdict = 0, whole, small, judge;
	ms_status s;

	s = ms_report_collect(&in, &rep, d);
	/* the whole trace drawn (a window's end at the trace's end is no window) */
	whole = !pg->from && (!pg->to || pg->to >= first->events_total);
	/* the trace whole, read once for what needs it: the diagnosis and the verdict (a .zst
	   trace up to MS_PAGE_WHOLE_EVENTS), the what-if table (any) */
	small = t || first->events_total <= MS_PAGE_WHOLE_EVENTS;
	/* the settings are judged where the run (not only the window) has an OOM: the verdict
	   names them on every page of it */
	judge = what != MS_PAGE_CSV && (rep.has_oom || first->has_oom) && !pg->no_whatif;
	if (!s && !t && ((what != MS_PAGE_CSV && small) || judge))
		s = whole_of(src, &t, d);
	if (!s && what != MS_PAGE_CSV && whole && small)
		s = ms_report_diagnose(&rep, t, first);
	if (!s && judge)
		s = whatif_rows(t, o, &rows, &n_rows);
	memset(&v, 0, sizeof(v));
	/* of the whole run, a window's page included: it opens with how the job ended */
	if (!s && what != MS_PAGE_CSV && small)
		s = verdict(t, o, first, lim, rows, n_rows, &v, &has_verdict);
	if (has_verdict)
		rep.verdict = &v;
	if (!s)
		s = what == MS_PAGE_HTML   ? ms_render_html(&rep, rows, n_rows, out)
		    : what == MS_PAGE_DATA ? ms_render_html_data(&rep, rows, n_rows, out)
		                           : ms_render_csv(&rep, out);
	if (rows) {
		ms_whatif_release(rows, n_rows);
		ms_free(rows);
	}
	ms_verdict_release(&v);
	ms_report_release(&rep);
	return s;
}

/*
 * The first pass of ms_page_together_write, on a thread of its own, and how far it has come:
 * the last event at which allocated bytes reached a new high (the peak so far), and whether it
 * is done. A replay of the same trace with the same options on the other thread meets the same
 * highs, and at each asks (peak_gate) whether it will stay the peak: it waits until the first
 * pass has found a higher one, or ended. If the first pass starts a replay again (a mid-run
 * rebuild, a limit inferred), its highs are of another run: it counts as ended, and the page
 * is made again after it.
 */
struct first_pass {
	int (*run)(void *ctx, struct ms_replay_result *r, struct ms_limit_range *lim);
	void *ctx;
	struct ms_replay_result r;
	struct ms_limit_range lim;
	int rc;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int64_t seen;        /* the allocated peak so far (the first pass's thread only) */
	uint64_t last, peak; /* its last event and its peak's; the peak's under mu */
	int started;         /* it has replayed an event (the first pass's thread only) */
	int have, done, again;
};

static void first_pass_event(void *ctx, uint64_t index, const struct ms_event *e,
                             const struct ms_model *m)
{
	struct first_pass *f = ctx;
	int64_t peak = ms_model_stats(m)->allocated_bytes[0].peak;

	(void)e;
	if (f->again)
		return;
	if (f->started && index <= f->last) {
		pthread_mutex_lock(&f->mu);
		f->again = f->done = 1;
		pthread_cond_broadcast(&f->cv);
		pthread_mutex_unlock(&f->mu);
		return;
	}
	f->last = index;
	f->started = 1;
	if (peak > f->seen) {
		f->seen = peak;
		pthread_mutex_lock(&f->mu);
		f->peak = index;
		f->have = 1;
		pthread_cond_broadcast(&f->cv);
		pthread_mutex_unlock(&f->mu);
	}
}

static int first_pass_gate(void *ctx, uint64_t index)
{
	struct first_pass *f = ctx;
	int take;

	pthread_mutex_lock(&f->mu);
	while (!f->done && !(f->have && f->peak > index))
		pthread_cond_wait(&f->cv, &f->mu);
	take = !f->again && f->have && f->peak == index;
	pthread_mutex_unlock(&f->mu);
	return take;
}

static void *first_pass_run(void *arg)
{
	struct first_pass *f = arg;

	f->rc = f->run(f->ctx, &f->r, &f->lim);
	pthread_mutex_lock(&f->mu);
	f->done = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* Every event of src, from the trace in memory or the trailer of a .zst; 0 if unknown. */
static uint64_t events_in(const struct ms_source *src, const struct ms_trace *t)
{
	struct ms_devices ds;
	struct ms_diag d = MS_DIAG_INIT;
	uint64_t n = 0;

	if (t)
		return t->n_events;
	if (ms_devices_read_source(src, &ds, &d))
		return 0;
	for (size_t i = 0; i < ds.n; i++)
		n += ds.d[i].events + ds.d[i].raw_events;
	ms_devices_release(&ds);
	return n;
}

/* The page from the report made beside the first pass f: its diagnosis, verdict and page. */
static ms_status together_page(const struct ms_source *src, const struct ms_trace *t,
                               const struct ms_replay_opts *o, struct first_pass *f,
                               struct ms_report *rep, struct ms_buf *out, struct ms_diag *d)
{
	struct ms_verdict v;
	int has_verdict = 0;
	ms_status s = MS_OK;

	rep->device_memory_source = f->r.device_memory_source;
	memset(&v, 0, sizeof(v));
	/* a .zst trace, streamed for the page, is read whole for the diagnosis and the verdict up
	   to MS_PAGE_WHOLE_EVENTS events */
	if (!t && f->r.events_total <= MS_PAGE_WHOLE_EVENTS)
		s = whole_of(src, &t, d);
	if (!s && t && !(s = ms_report_diagnose(rep, t, &f->r)))
		s = verdict(t, o, &f->r, &f->lim, NULL, 0, &v, &has_verdict);
	if (has_verdict) /* the page opens with it, as every page does */
		rep->verdict = &v;
	if (!s)
		s = ms_render_html(rep, NULL, 0, out);
	ms_verdict_release(&v);
	return s;
}

void ms_page_together_write(const struct ms_source *src, const struct ms_trace *t,
                            struct ms_replay_opts *o,
                            int (*first_pass)(void *ctx, struct ms_replay_result *r,
                                              struct ms_limit_range *lim),
                            void *ctx, const struct ms_page_opts *pg, struct ms_buf *out,
                            struct ms_page_together *res, struct ms_diag *d)
{
	struct ms_replay_opts asked = *o;
	struct ms_replay_result known;
	struct first_pass f = {.run = first_pass,
	                       .ctx = ctx,
	                       .mu = PTHREAD_MUTEX_INITIALIZER,
	                       .cv = PTHREAD_COND_INITIALIZER};
	struct ms_report rep;
	struct ms_report_input in;
	pthread_t th;
	ms_status s;

	memset(res, 0, sizeof(*res));
	res->how = MS_PAGE_NOT_TOGETHER;
	memset(&known, 0, sizeof(known));
	if (!(known.events_total = events_in(src, t)))
		return;
	in = (struct ms_report_input){.source = src->path,
	                              .path = src->path,
	                              .src = src,
	                              .trace = t,
	                              .opts = &asked,
	                              .first = &known,
	                              .buckets = pg->detail,
	                              .frames = pg->frames,
	                              .site_depth = pg->site_depth,
	                              .user_cats = pg->user_cats,
	                              .find_peak = 1};
	asked.peak_gate = first_pass_gate;
	asked.peak_gate_ctx = &f;
	o->on_event = first_pass_event;
	o->ctx = &f;
	if (pthread_create(&th, NULL, first_pass_run, &f)) {
		o->on_event = NULL;
		o->ctx = NULL;
		return;
	}
	s = ms_report_collect(&in, &rep, d);
	pthread_join(th, NULL);
	/* the options the first pass leaves are the page's, without this function's hooks */
	o->on_event = NULL;
	o->ctx = NULL;
	asked.peak_gate = NULL;
	asked.peak_gate_ctx = NULL;
	if (f.rc) {
		res->how = MS_PAGE_FIRST_FAILED;
		res->first_rc = f.rc;
	} else if (s || !f.r.events_replayed || f.again || f.r.has_oom || f.r.rebuilt ||
	           f.lim.inferred || f.r.events_total != known.events_total ||
	           f.r.peak_allocated_index != rep.peak_index || o->limit != asked.limit ||
	           o->device_memory != asked.device_memory || o->init ||
	           o->fraction != asked.fraction) {
		/* the first pass decided otherwise: the page is made the usual way */
		res->how = MS_PAGE_SEPARATELY;
		res->r = f.r;
		res->lim = f.lim;
		*d = (struct ms_diag)MS_DIAG_INIT;
	} else {
		res->how = MS_PAGE_WROTE;
		res->status = together_page(src, t, o, &f, &rep, out, d);
		ms_replay_result_release(&f.r);
	}
	ms_report_release(&rep);
}

ms_status ms_page_end_state(const struct ms_render_input *in, uint64_t limit,
                            uint64_t device_memory, struct ms_buf *out)
{
	struct ms_report rep;
	struct ms_end_state_verdict ev;
	struct ms_verdict v;
	ms_status s = ms_report_end_state(in, &rep);

	memset(&v, 0, sizeof(v));
	ms_end_state_judge(&in->r->snap, 0, limit, device_memory ? device_memory : UINT64_MAX, &ev);
	ms_end_state_headline(&ev, v.headline, sizeof(v.headline));
	rep.verdict = &v;
	if (!s)
		s = ms_render_html(&rep, NULL, 0, out);
	ms_report_release(&rep);
	return s;
}
