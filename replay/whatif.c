/* What-if over settings (whatif.h): a pool of threads taking rows in turn. */
#include "replay/whatif.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cpus.h"
#include "parse/trace.h"
#include "replay/alloc_conf.h"

const char *const ms_whatif_default_configs[] = {
        NULL, /* the recorded setting */
        "expandable_segments:True",
        "max_split_size_mb:64",
        "max_split_size_mb:128",
        "max_split_size_mb:512",
        "garbage_collection_threshold:0.6",
        "garbage_collection_threshold:0.8",
        "roundup_power2_divisions:4",
        "roundup_power2_divisions:8",
        "expandable_segments:True,roundup_power2_divisions:4",
        "max_split_size_mb:128,garbage_collection_threshold:0.8",
};
const size_t ms_whatif_n_default_configs =
        sizeof(ms_whatif_default_configs) / sizeof(ms_whatif_default_configs[0]);

/* The settings that can decide a replay, but for the two whose effect the replay itself tells. */
static int same_but_gc_and_split(const struct ms_alloc_conf *a, const struct ms_alloc_conf *b)
{
	return a->max_non_split_rounding == b->max_non_split_rounding &&
	       a->large_segment_size == b->large_segment_size &&
	       !memcmp(a->roundup_power2_divisions, b->roundup_power2_divisions,
	               sizeof(a->roundup_power2_divisions)) &&
	       a->per_process_memory_fraction == b->per_process_memory_fraction &&
	       a->release_lock_on_cudamalloc == b->release_lock_on_cudamalloc &&
	       a->native_backend == b->native_backend &&
	       a->graph_capture_record_stream_reuse == b->graph_capture_record_stream_reuse &&
	       a->expandable_segments == b->expandable_segments;
}

int ms_whatif_same_replay(const struct ms_replay_result *ref, const char *conf,
                          struct ms_alloc_conf *ac)
{
	const struct ms_alloc_conf *a = &ref->ac;
	struct ms_diag d = MS_DIAG_INIT;

	ms_alloc_conf_init(ac);
	if (!conf || ms_alloc_conf_parse(ac, conf, &d) || ref->rebuilt || a->expandable_segments ||
	    ac->expandable_segments || !same_but_gc_and_split(a, ac))
		return 0;
	/* the collector acts only under a limit */
	if (ref->limit && a->garbage_collection_threshold != ac->garbage_collection_threshold)
		return 0;
	/* max_split_size acts only on blocks as large as it: none where no segment reached it */
	return a->max_split_size == ac->max_split_size ||
	       (ref->stats.largest_segment < a->max_split_size &&
	        ref->stats.largest_segment < ac->max_split_size);
}

void ms_whatif_borrow(const struct ms_trace *t, struct ms_whatif_row *w,
                      const struct ms_replay_result *from, const struct ms_alloc_conf *ac)
{
	struct ms_alloc_conf recorded;

	ms_alloc_conf_from_settings(&recorded, &t->meta.settings);
	w->r = *from;
	w->borrowed = 1;
	w->r.ac = *ac;
	snprintf(w->r.alloc_conf, sizeof(w->r.alloc_conf), "%s", w->conf);
	w->r.settings_recorded = 1;
	w->r.expandable_seen = 0;
	w->r.record_stream_reuse_differs =
	        ac->graph_capture_record_stream_reuse !=
	                recorded.graph_capture_record_stream_reuse ||
	        (!t->meta.settings.present && ac->graph_capture_record_stream_reuse);
}

struct pool {
	const struct ms_trace *t;
	const struct ms_replay_opts *base;
	struct ms_whatif_row *rows;
	size_t n;
	atomic_size_t next;
	/*
	 * like[j]: an earlier row whose replay row j may borrow (may_share), or SIZE_MAX;
	 * done[i]: row i's replay is made (under mu, signalled by made). Rows are taken in
	 * order[] (order_rows).
	 */
	size_t *like, *order;
	unsigned char *done;
	pthread_mutex_t mu;
	pthread_cond_t made;
};

/*
 * Does the whole trace (recorded OOMs included) complete with this limit and setting? Where it
 * does, *reach is the least limit that replays it alike (stats.limit_fit_max, and what a trace
 * that starts mid-run holds at its start): every limit from *reach up to this one completes.
 */
static int completes(const struct pool *p, const struct ms_whatif_row *j, uint64_t limit,
                     uint64_t *reach)
{
	struct ms_replay_opts o = *p->base;
	struct ms_replay_result r;
	struct ms_diag d = MS_DIAG_INIT;
	int ok;

	o.alloc_conf = j->conf;
	o.limit = limit;
	o.fraction = 0;
	o.limit_only = 1;
	/* the result is released after an error too: it may hold what was made before it */
	ok = !ms_replay_trace(p->t, &o, &r, &d) && !r.ended_by_oom && !r.reproduced_ooms;
	*reach = r.stats.limit_fit_max > r.initial_reserved ? r.stats.limit_fit_max
	                                                    : r.initial_reserved;
	ms_replay_result_release(&r);
	return ok;
}

/*
 * A replay that ran under no limit and never ran out of memory, of a trace that records no OOM:
 * neither the device's size nor a limit bound it, so a replay without any limit and without the
 * device's size (the least-memory search's) takes the same path, and has its peaks.
 */
static int unbound(const struct ms_replay_result *r)
{
	return !r->limit && !r->has_oom && !r->ended_by_oom && !r->oom_seen && !r->recorded_ooms &&
	       !r->reproduced_ooms;
}

/* The peaks of the setting's replay without any limit into *lo, *hi; -1 where it runs out. */
static int unlimited_peaks(const struct pool *p, const struct ms_whatif_row *j,
                           const struct ms_replay_result *row, uint64_t *lo, uint64_t *hi)
{
	struct ms_replay_opts o = *p->base;
	struct ms_replay_result unl;
	struct ms_diag d = MS_DIAG_INIT;

	if (unbound(row)) {
		*lo = (uint64_t)row->stats.allocated_bytes[0].peak;
		*hi = (uint64_t)row->stats.reserved_bytes[0].peak;
		return 0;
	}
	o.alloc_conf = j->conf;
	o.limit = 0;
	o.fraction = 0;
	o.no_recorded_limit = 1;
	o.limit_only = 1;
	if (ms_replay_trace(p->t, &o, &unl, &d) || unl.ended_by_oom) {
		ms_replay_result_release(&unl);
		return -1;
	}
	*lo = (uint64_t)unl.stats.allocated_bytes[0].peak;
	*hi = (uint64_t)unl.stats.reserved_bytes[0].peak;
	ms_replay_result_release(&unl);
	return 0;
}

/* Row j's replay borrowed from its like row once that is made, where they cannot differ. */
static void share_alike(struct pool *p, struct ms_whatif_row *j)
{
	size_t i = p->like[j - p->rows];
	struct ms_alloc_conf ac;

	if (i == SIZE_MAX)
		return;
	pthread_mutex_lock(&p->mu);
	while (!p->done[i])
		pthread_cond_wait(&p->made, &p->mu);
	pthread_mutex_unlock(&p->mu);
	if (!p->rows[i].s && ms_whatif_same_replay(&p->rows[i].r, j->conf, &ac))
		ms_whatif_borrow(p->t, j, &p->rows[i].r, &ac);
}

/*
 * Whether row b may borrow row a's replay, a known before either runs: the same settings but
 * for the collector's threshold, without expandable segments, under no limit of the caller's
 * (ms_whatif_same_replay decides on a's replay, which may carry a limit of the trace's).
 */
static int may_share(const struct pool *p, const struct ms_whatif_row *a,
                     const struct ms_whatif_row *b)
{
	struct ms_alloc_conf x, y;
	struct ms_diag d = MS_DIAG_INIT;

	if (p->base->limit || p->base->fraction > 0 || a->given || b->given || b->borrowed ||
	    b->made || !a->conf || !b->conf)
		return 0;
	ms_alloc_conf_init(&x);
	ms_alloc_conf_init(&y);
	return !ms_alloc_conf_parse(&x, a->conf, &d) && !ms_alloc_conf_parse(&y, b->conf, &d) &&
	       !x.expandable_segments && x.max_split_size == y.max_split_size &&
	       same_but_gc_and_split(&x, &y);
}

/*
 * The least limit that completes within (*lo, *hi], *hi taken to complete: to 2 MiB, or 0.5% of
 * the answer when that is coarser (each step is a whole replay). 1 where a limit below *hi
 * completed (*hi is then one that did). A step whose limit lies between a completed replay's
 * reach and its limit completes alike: it is not replayed (alike: where the limit is the one
 * thing that binds, not under a collector's threshold or expandable segments).
 */
static int bisect(const struct pool *p, const struct ms_whatif_row *j, uint64_t *lo, uint64_t *hi)
{
	/* the settings the row's own replay ran with */
	const struct ms_alloc_conf *ac = j->given ? &j->given->ac : &j->r.ac;
	uint64_t reach, alike_lo = 1, alike_hi = 0; /* none yet */
	int completed = 0;
	int by_reach = !ac->expandable_segments && ac->garbage_collection_threshold <= 0;

	while (*hi - *lo > (2u << 20) && *hi - *lo > *hi / 200) {
		uint64_t mid = *lo + (*hi - *lo) / 2 / (2u << 20) * (2u << 20);
		if (mid <= *lo)
			break;
		if ((by_reach && mid >= alike_lo && mid <= alike_hi) ||
		    completes(p, j, mid, &reach)) {
			if (!(mid >= alike_lo && mid <= alike_hi)) {
				alike_lo = reach;
				alike_hi = mid;
			}
			*hi = mid;
			completed = 1;
		} else {
			*lo = mid;
		}
	}
	return completed;
}

static void run_row(struct pool *p, struct ms_whatif_row *j)
{
	struct ms_replay_opts o = *p->base;
	struct ms_diag d = MS_DIAG_INIT;
	uint64_t lo, hi, reach;

	o.alloc_conf = j->conf;
	if (!j->given && !j->borrowed && !j->made)
		share_alike(p, j);
	if (!j->given && !j->borrowed && !j->made &&
	    (j->s = ms_replay_trace(p->t, &o, &j->r, &d))) {
		snprintf(j->err, sizeof(j->err), "%s", d.msg[0] ? d.msg : ms_strerror(j->s));
		return;
	}
	if (j->no_min_memory || (j->helps && !j->helps(j->helps_ctx, j->given ? j->given : &j->r)))
		return;
	/* the least limit that lets everything through lies between the peak allocated and the
	 * peak reserved of a replay without any limit; 2 MiB is the segment granularity */
	const struct ms_replay_result *row = j->given ? j->given : &j->r;
	if (unlimited_peaks(p, j, row, &lo, &hi))
		return;
	lo = lo / (2u << 20) * (2u << 20);
	/* a limit at the unlimited peak can still fail: PyTorch checks the limit against whole
	 * segment sizes (expandable segments: alloc_size, not the pages mapped), the collector
	 * acts under a limit, and a recorded OOM that the job caught goes another way under one
	 * (no retry during a capture): widen a little, then double. Without any of them (the
	 * row's own replay was unbound), the limit binds nowhere: that replay again, complete.
	 * Where expandable segments alone are the reason, the search below it goes first: a limit
	 * under it that completes answers without it. Not under a collector's threshold: a limit
	 * at its peak can fail where lower ones complete (it collects at a fraction of the limit),
	 * and the answer is then one above the peak, as the search from there finds it. */
	int unbound_row = unbound(row) && row->ac.garbage_collection_threshold <= 0;
	if (unbound_row && !row->ac.expandable_segments) {
		bisect(p, j, &lo, &hi);
		j->min_memory = hi;
		return;
	}
	if (unbound_row && bisect(p, j, &lo, &hi)) {
		j->min_memory = hi;
		return;
	}
	for (int tries = 0; !completes(p, j, hi, &reach); tries++) {
		if (tries == 24 || hi > UINT64_MAX / 4)
			return; /* no answer: reported as "never" */
		lo = hi > lo ? hi : lo;
		hi += tries < 4 ? hi / 8 + (20u << 20) : hi;
	}
	bisect(p, j, &lo, &hi);
	j->min_memory = hi;
}

/* Whether row j is likely to take more than its one replay: the given row (its search comes
 * right away), and expandable segments, which most often lower a peak (then searched). */
static int long_row(const struct ms_whatif_row *j)
{
	struct ms_alloc_conf ac;
	struct ms_diag d = MS_DIAG_INIT;

	ms_alloc_conf_init(&ac);
	return j->given ||
	       (j->conf && !ms_alloc_conf_parse(&ac, j->conf, &d) && ac.expandable_segments);
}

/*
 * Each row's like row (the first earlier one it may borrow from, itself like none), and the
 * order rows are taken in: those likely to be long first (so that no search is left alone on
 * one thread at the end), those with a like row last (so that it is made by then).
 */
static void order_rows(struct pool *p)
{
	size_t k = 0;

	for (size_t j = 0; j < p->n; j++) {
		p->like[j] = SIZE_MAX;
		for (size_t i = 0; i < j && p->like[j] == SIZE_MAX; i++)
			if (p->like[i] == SIZE_MAX && may_share(p, &p->rows[i], &p->rows[j]))
				p->like[j] = i;
	}
	for (int group = 0; group < 3; group++)
		for (size_t j = 0; j < p->n; j++)
			if ((p->like[j] != SIZE_MAX ? 2 : long_row(&p->rows[j]) ? 0 : 1) == group)
				p->order[k++] = j;
}

static void *worker(void *arg)
{
	struct pool *p = arg;
	size_t i;

	while ((i = atomic_fetch_add(&p->next, 1)) < p->n) {
		i = p->order[i];
		run_row(p, &p->rows[i]);
		pthread_mutex_lock(&p->mu);
		p->done[i] = 1;
		pthread_cond_broadcast(&p->made);
		pthread_mutex_unlock(&p->mu);
	}
	return NULL;
}

ms_status ms_whatif_run(const struct ms_trace *t, const struct ms_replay_opts *base,
                        struct ms_whatif_row *rows, size_t n, unsigned threads)
{
	struct pool p;
	pthread_t *th;
	size_t nth = threads ? threads : (size_t)ms_cpus_usable(), started = 0;

	memset(&p, 0, sizeof(p));
	p.t = t;
	p.base = base;
	p.rows = rows;
	p.n = n;
	for (size_t k = 0; k < n; k++) {
		rows[k].s = MS_OK;
		rows[k].err[0] = 0;
		rows[k].min_memory = 0;
		if (!rows[k].borrowed && !rows[k].made)
			memset(&rows[k].r, 0, sizeof(rows[k].r));
	}
	if (nth < 1)
		nth = 1;
	if (nth > n)
		nth = n ? n : 1;
	p.like = ms_calloc(n ? n : 1, sizeof(*p.like));
	p.order = ms_calloc(n ? n : 1, sizeof(*p.order));
	p.done = ms_calloc(n ? n : 1, 1);
	if (!(th = ms_calloc(nth, sizeof(*th))) || !p.like || !p.order || !p.done) {
		ms_free(th);
		ms_free(p.like);
		ms_free(p.order);
		ms_free(p.done);
		return MS_ERR_NOMEM;
	}
	order_rows(&p);
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.made, NULL);
	for (size_t k = 0; k < nth; k++)
		if (pthread_create(&th[k], NULL, worker, &p) == 0)
			started++;
		else
			break;
	for (size_t k = 0; k < started; k++)
		pthread_join(th[k], NULL);
	pthread_cond_destroy(&p.made);
	pthread_mutex_destroy(&p.mu);
	ms_free(th);
	ms_free(p.like);
	ms_free(p.order);
	ms_free(p.done);
	return started ? MS_OK : MS_ERR_BACKEND;
}

void ms_whatif_release(struct ms_whatif_row *rows, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (!rows[k].borrowed)
			ms_replay_result_release(&rows[k].r);
}
