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

struct pool {
	const struct ms_trace *t;
	const struct ms_replay_opts *base;
	struct ms_whatif_row *rows;
	size_t n;
	atomic_size_t next;
};

/* Does the whole trace (recorded OOMs included) complete with this limit and setting? */
static int completes(const struct pool *p, const struct ms_whatif_row *j, uint64_t limit)
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

static void run_row(struct pool *p, struct ms_whatif_row *j)
{
	struct ms_replay_opts o = *p->base;
	struct ms_diag d = MS_DIAG_INIT;
	uint64_t lo, hi;

	o.alloc_conf = j->conf;
	if (!j->given && !j->borrowed && (j->s = ms_replay_trace(p->t, &o, &j->r, &d))) {
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
	 * row's own replay was unbound), the limit binds nowhere: that replay again, complete. */
	if (!unbound(row) || row->ac.expandable_segments ||
	    row->ac.garbage_collection_threshold > 0)
		for (int tries = 0; !completes(p, j, hi); tries++) {
			if (tries == 24 || hi > UINT64_MAX / 4)
				return; /* no answer: reported as "never" */
			lo = hi > lo ? hi : lo;
			hi += tries < 4 ? hi / 8 + (20u << 20) : hi;
		}
	/* to 2 MiB, or 0.5% of the answer when that is coarser: each step is a whole replay */
	while (hi - lo > (2u << 20) && hi - lo > hi / 200) {
		uint64_t mid = lo + (hi - lo) / 2 / (2u << 20) * (2u << 20);
		if (mid <= lo)
			break;
		if (completes(p, j, mid))
			hi = mid;
		else
			lo = mid;
	}
	j->min_memory = hi;
}

static void *worker(void *arg)
{
	struct pool *p = arg;
	size_t i;

	while ((i = atomic_fetch_add(&p->next, 1)) < p->n)
		run_row(p, &p->rows[i]);
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
		if (!rows[k].borrowed)
			memset(&rows[k].r, 0, sizeof(rows[k].r));
	}
	if (nth < 1)
		nth = 1;
	if (nth > n)
		nth = n ? n : 1;
	if (!(th = ms_calloc(nth, sizeof(*th))))
		return MS_ERR_NOMEM;
	for (size_t k = 0; k < nth; k++)
		if (pthread_create(&th[k], NULL, worker, &p) == 0)
			started++;
		else
			break;
	if (!started) {
		ms_free(th);
		return MS_ERR_BACKEND;
	}
	for (size_t k = 0; k < started; k++)
		pthread_join(th[k], NULL);
	ms_free(th);
	return MS_OK;
}

void ms_whatif_release(struct ms_whatif_row *rows, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (!rows[k].borrowed)
			ms_replay_result_release(&rows[k].r);
}
