/*
 * check's gate for one device: the figures of a replay (peaks, the waste at the peak, OOMs, a
 * cut, growth per step) against budgets; each budget exceeded, or that cannot be measured, is a
 * line. A dead run never passes: a recorded OOM (unless allowed), a trace cut short (unless
 * allowed), a replay that runs out of memory where the recorded run did not.
 */
#ifndef MEMSNAP_EXPLAIN_CHECK_H
#define MEMSNAP_EXPLAIN_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "memsnap/memsnap.h"
#include "replay/replay.h"
#include "replay/run.h"

struct ms_trace;

#define MS_CHECK_TIMELINE 48

struct ms_check_budgets {
	uint64_t max_reserved, max_allocated; /* 0: no budget */
	double max_waste;                     /* the waste at the peak, 0 to 1; < 0: no budget */
	int growth_per_step_given;
	uint64_t max_growth_per_step;
	const char *baseline; /* the baseline trace's name (max_growth with it), or NULL */
	double max_growth;    /* percent over the baseline's peaks */
	int allow_oom, allow_cut_short;
};

/* What a replay of one device shows of the run, for the gate. */
struct ms_check_figures {
	uint64_t reserved, allocated;
	double waste; /* reserved at the peak never in use at once, over the reserved peak */
	int oom;      /* the replay ran out of memory where the recorded run did not */
	uint64_t oom_index;
	int mid_run;                 /* peaks from the first event on: lower bounds */
	unsigned devsrc;             /* where the device's size came from (enum ms_devmem_source) */
	uint64_t recorded_ooms;      /* the recorded run's */
	uint64_t recorded_oom_index; /* the first of them, UINT64_MAX: not recorded where */
	int cut_short;               /* the trace ends before the run did */
	struct ms_limit_range lim;
	/* growth per step (explain's growing sites' bytes a step, summed): growth_steps 0 where it
	 * was not looked for (fewer than three steps) */
	uint64_t growth_per_step;
	size_t growth_steps, growth_sites;
	size_t steps, optimizer_steps;
	int growth_by_repetition; /* the only steps found repeat in the trace: maybe layers */
	char verdict[768];        /* why the run died, where it did (explain's headline), or "" */
	/* the most reserved in each of n_timeline equal spans of the run's events from the
	 * device's first segment on, from the replay's reserved log (0 spans: it has none) */
	uint64_t timeline[MS_CHECK_TIMELINE];
	size_t n_timeline;
	/* the figures are of a window of the run (its name not kept), not of the run whole */
	int windowed;
	struct ms_window_figures window;
};

/*
 * The figures of r, o->device's replay of t under o with lim its inferred limit. t (held whole)
 * may be NULL: then no verdict, no growth. growth: look for growth per step. MS_ERR_NOMEM only.
 */
ms_status ms_check_figures_of(const struct ms_trace *t, const struct ms_replay_opts *o,
                              const struct ms_replay_result *r, const struct ms_limit_range *lim,
                              int growth, struct ms_check_figures *f);

/*
 * One gate judged: the run's own (no_oom, not_cut_short, replay_completes) and each budget
 * given (max_peak_reserved, max_peak_allocated, max_growth_per_step, max_fragmentation,
 * baseline_reserved, baseline_allocated), its figure against its bound in words, and the line
 * of exceeded[] that says why it failed.
 */
struct ms_check_gate {
	const char *name;
	char value[64], bound[96];
	int passed;
	size_t line; /* into exceeded[] where !passed */
};

#define MS_CHECK_LINES 16
struct ms_check_result {
	size_t n_exceeded;
	char exceeded[MS_CHECK_LINES][256]; /* each budget exceeded, or not measurable */
	size_t n_gates;
	struct ms_check_gate gates[MS_CHECK_LINES];
};

/* f against b (and base, the baseline's figures, where b->baseline). */
void ms_check_judge(const struct ms_check_budgets *b, const struct ms_check_figures *f,
                    const struct ms_check_figures *base, struct ms_check_result *out);

#endif
