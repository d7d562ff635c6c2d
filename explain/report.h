/*
 * explain's answer for one device of a trace, whole: what holds the memory at the peak of
 * reserved bytes (and at the allocated peak, the OOM and the end), the steps with their reserved
 * peaks, the verdict, and the allocator settings that would have helped, each replayed on the
 * trace with the least memory that completes. Computed here; written out by its serializer
 * (ms_explain_report_json) or a command's text.
 */
#ifndef MEMSNAP_EXPLAIN_REPORT_H
#define MEMSNAP_EXPLAIN_REPORT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "explain/explain.h"
#include "explain/verdict.h"
#include "memsnap/memsnap.h"
#include "replay/replay.h"
#include "replay/run.h"
#include "replay/whatif.h"

struct ms_trace;

/* How the memory outside PyTorch at a moment is known */
enum ms_outside_how {
	MS_OUTSIDE_NOT_MEASURED = 0, /* not measured, and no raw CUDA call holds any */
	MS_OUTSIDE_RAW_ONLY = 1,     /* only the raw CUDA calls the recorder saw: a lower bound */
	MS_OUTSIDE_MEASURED = 2, /* the recorder's cudaMemGetInfo mark, with the raw calls since */
};

/* A setting recommended: it avoids the OOM, or lowers the peak by 1% or more. */
struct ms_explain_rec {
	size_t row; /* its row of ms_explain_report.rows */
	uint64_t peak;
	int avoids_oom;
	int went_on; /* the job went on after the OOM it avoids: what follows is unknown */
	struct ms_survival sv; /* would the job have survived under it (verdict.h) */
};

struct ms_explain_report {
	const struct ms_trace *t; /* borrowed */
	uint32_t device;
	uint32_t site_depth;                  /* sites are labelled at it (replay/site.h) */
	const struct ms_user_cats *user_cats; /* the user's categories, or NULL */
	struct ms_replay_opts o;       /* the options replayed with, the recorded limit filled in */
	struct ms_replay_result first; /* the replay under o (owned) */
	struct ms_limit_range lim;     /* its limit, where inferred */

	/* the peak of reserved bytes: the state at it, what was allocated while it stood */
	struct ms_explain x;
	uint64_t reserved, allocated, cached;
	/* the event of the state broken down (the first replay's fullest_at_peak_index), where
	 * the peak was first reached, and the recorded OOM's request served there (the replay's
	 * served_oom_at_peak_reserved) */
	uint64_t peak_index, peak_first_index, served_at_peak;
	/* the allocated peak: bytes, event, the recorded OOM's request served there */
	uint64_t apeak_bytes, apeak_index, apeak_served;
	/* the peaks are a window's (the first replay's opts.windows), not the run's */
	int windowed;
	struct ms_window_figures window; /* its name not kept */
	size_t peak_step;                /* the step it lies in, 1-based (0: before the first) */
	const char *peak_annotation;     /* the innermost annotation open there, or NULL */
	uint64_t outside, outside_mark;
	enum ms_outside_how outside_how;

	int apeak; /* the allocated peak is another moment, with more allocated: at_apeak */
	struct ms_explain at_apeak;
	size_t apeak_step;

	int has_oom; /* the replay ran out of memory: at_oom, before the failed request */
	struct ms_explain at_oom;
	uint64_t capacity; /* what the OOM is judged against (UINT64_MAX: not known) */
	int oom_fits;      /* allocated plus the request within it: 1, 0, -1 cannot be told */

	struct ms_explain at_end; /* after the last event, where the replay got there */
	int end_exceeds;          /* at_end holds more than the replay had allocated there */
	uint64_t end_blocks;
	uint64_t growing_bytes;        /* the growing sites' bytes at their last step */
	uint64_t growing_bytes_at_end; /* and at the end */

	uint64_t *step_reserved; /* each step's most reserved bytes (0: not known) */
	int steps_exceed_reserved;

	struct ms_verdict vd;

	/* the settings tried (row 0: those of the first replay), and those recommended, best first
	 */
	struct ms_whatif_row *rows;
	size_t n_rows;
	struct ms_explain_rec *recs;
	size_t n_recs;

	/* findings: empty_cache() in a loop, memory left cached at the end */
	int empty_cache_every_step;
	uint64_t cached_at_end, cached_at_end_private;
};

/*
 * A setting's replay made ahead, on a thread of its own beside the first replay: expandable
 * segments, which never shares the first replay's. Started with the options the first replay
 * starts from; ms_explain_report_run takes it where the options it ends with (an inferred
 * limit, a rebuilt state) are the same, else it is replayed again. Release it in any case.
 */
struct ms_explain_ahead {
	const struct ms_trace *t;
	struct ms_replay_opts o;
	struct ms_replay_result r;
	ms_status s;
	pthread_t th;
	int started, taken;
};
void ms_explain_ahead_start(struct ms_explain_ahead *a, const struct ms_trace *t,
                            const struct ms_replay_opts *o);
void ms_explain_ahead_release(struct ms_explain_ahead *a);

/*
 * The report of o->device of t, from first, the replay of t under o (moved in: released with
 * the report, whatever the return), and lim, its inferred limit. Replays run on up to jobs
 * threads (0: one per CPU); sites are labelled at site_depth; ahead (or NULL) may hold one made
 * already. MS_ERR_NOMEM, or MS_ERR_BACKEND where no thread could start (d says which). Release
 * *r with ms_explain_report_release().
 */
ms_status ms_explain_report_run(const struct ms_trace *t, const struct ms_replay_opts *o,
                                struct ms_replay_result *first, const struct ms_limit_range *lim,
                                unsigned jobs, uint32_t site_depth,
                                const struct ms_user_cats *user_cats,
                                struct ms_explain_ahead *ahead, struct ms_explain_report *r,
                                struct ms_diag *d);
void ms_explain_report_release(struct ms_explain_report *r);

/* The step an event lies in (1-based), 0 if before the first. */
size_t ms_explain_step_of(const struct ms_explain *x, uint64_t event);
/* Allocated bytes beyond the categories' requested ones: the blocks' rounding and unsplit
 * remainders (below 0 while frees wait for their streams). */
int64_t ms_explain_rounding(const struct ms_explain *x, uint64_t allocated);

#endif
