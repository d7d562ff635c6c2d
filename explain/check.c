/* check's gate for one device (check.h). */
#include "explain/check.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "explain/explain.h"
#include "explain/verdict.h"

/*
 * The most reserved in each of MS_CHECK_TIMELINE spans of the events the replay went through,
 * from the device's first segment on (a file's other devices may come first).
 */
static void timeline(const struct ms_replay_result *r, struct ms_check_figures *f)
{
	uint64_t from, n, held = 0;
	size_t i = 0, k;

	if (!r->reserved_logged || !r->n_reserved_log ||
	    r->reserved_through <= r->reserved_log[0].index)
		return;
	from = r->reserved_log[0].index;
	n = r->reserved_through - from;
	f->n_timeline = n < MS_CHECK_TIMELINE ? (size_t)n : MS_CHECK_TIMELINE;
	for (k = 0; k < f->n_timeline; k++) {
		uint64_t end = from + n * (k + 1) / f->n_timeline; /* span k ends there */
		f->timeline[k] = held;
		for (; i < r->n_reserved_log && r->reserved_log[i].index < end; i++) {
			held = r->reserved_log[i].reserved;
			if (held > f->timeline[k])
				f->timeline[k] = held;
		}
	}
}

ms_status ms_check_figures_of(const struct ms_trace *t, const struct ms_replay_opts *o,
                              const struct ms_replay_result *r, const struct ms_limit_range *lim,
                              int growth, struct ms_check_figures *f)
{
	ms_status s;

	memset(f, 0, sizeof(*f));
	f->reserved = (uint64_t)r->stats.reserved_bytes[0].peak;
	f->allocated = (uint64_t)r->stats.allocated_bytes[0].peak;
	f->waste = f->reserved ? (double)(f->reserved - r->allocated_at_peak_reserved) /
	                                 (double)f->reserved
	                       : 0.0;
	f->oom = r->ended_by_oom;
	f->oom_index = r->first_oom.index;
	f->mid_run = r->rebuilt;
	f->devsrc = r->device_memory_source;
	/* the trace's, also past where a replay that ran out of memory stopped */
	f->recorded_ooms = r->recorded_ooms > r->recorded_ooms_in_trace ? r->recorded_ooms
	                                                                : r->recorded_ooms_in_trace;
	f->recorded_oom_index = r->recorded_ooms_in_trace             ? r->first_recorded_oom_index
	                        : r->has_oom && r->first_oom.recorded ? r->first_oom.index
	                                                              : UINT64_MAX;
	f->cut_short = r->cut_short;
	f->lim = *lim;
	if (r->windows_asked && r->n_windows) { /* the window's figures, not the run's */
		const struct ms_window_figures *w = &r->windows[0];
		f->windowed = 1;
		f->window = *w;
		f->window.name = NULL;
		f->reserved = w->at ? w->reserved_at_end : w->peak_reserved;
		f->allocated = w->at ? w->allocated_at_end : w->peak_allocated;
		/* a moment (--at): what was held right after its event, not the most of before and
		   after */
		f->waste =
		        f->reserved
		                ? (double)(f->reserved - (w->at ? w->allocated_at_end
		                                                : w->allocated_at_peak_reserved)) /
		                          (double)f->reserved
		                : 0.0;
		f->oom = w->replay_stopped_inside;
		f->recorded_ooms = w->recorded_ooms;
		f->recorded_oom_index = UINT64_MAX;
		if (r->recorded_ooms_in_trace && r->first_recorded_oom_index >= w->from &&
		    r->first_recorded_oom_index < w->to)
			f->recorded_oom_index = r->first_recorded_oom_index;
	}
	timeline(r, f);
	if (!t)
		return MS_OK;
	if ((r->has_oom || r->recorded_ooms) &&
	    (!f->windowed || (r->has_oom && r->first_oom.index >= f->window.from &&
	                      r->first_oom.index < f->window.to))) {
		struct ms_verdict v;
		if ((s = ms_verdict_of_replay(t, o, r, lim, NULL, 0, &v))) {
			ms_verdict_release(&v);
			return s;
		}
		snprintf(f->verdict, sizeof(f->verdict), "%s", v.headline);
		ms_verdict_release(&v);
	}
	if (growth) {
		struct ms_explain x;
		struct ms_explain_in in;
		ms_explain_in_at_peak(&in, t, (uint32_t)o->device, r);
		if (f->windowed) {
			in.growth_from = f->window.from;
			in.growth_to = f->window.to > f->window.from ? f->window.to : 1;
		}
		if ((s = ms_explain_run(&in, &x)))
			return s;
		/* steps told only by repetition may be a model's layers in one pass: no gate */
		f->growth_by_repetition = x.steps_by_repetition;
		f->growth_steps = x.steps_by_repetition ? 0 : x.growth_steps;
		f->growth_sites = x.n_growth;
		f->steps = x.n_steps;
		f->optimizer_steps = x.n_optimizer_steps;
		for (size_t k = 0; k < x.n_growth; k++)
			f->growth_per_step += x.growth[k].bytes_per_step;
		ms_explain_release(&x);
	}
	return MS_OK;
}

static void fail(struct ms_check_result *out, const char *fmt, ...) MS_PRINTF(2, 3);

/* The last gate added failed: why, as a line of exceeded[]. */
static void fail(struct ms_check_result *out, const char *fmt, ...)
{
	va_list ap;

	if (out->n_gates) {
		out->gates[out->n_gates - 1].passed = 0;
		out->gates[out->n_gates - 1].line = out->n_exceeded;
	}
	if (out->n_exceeded == MS_CHECK_LINES)
		return;
	va_start(ap, fmt);
	vsnprintf(out->exceeded[out->n_exceeded++], sizeof(out->exceeded[0]), fmt, ap);
	va_end(ap);
}

static void gate(struct ms_check_result *out, const char *name, const char *value,
                 const char *bound)
{
	struct ms_check_gate *g;

	if (out->n_gates == MS_CHECK_LINES)
		return;
	g = &out->gates[out->n_gates++];
	g->name = name;
	g->passed = 1;
	snprintf(g->value, sizeof(g->value), "%s", value);
	snprintf(g->bound, sizeof(g->bound), "%s", bound);
}

/* The run died, or cannot be told: a recorded OOM, a cut, a replay that runs out. */
static void judge_death(const struct ms_check_budgets *b, const struct ms_check_figures *f,
                        struct ms_check_result *out)
{
	char v[64];

	snprintf(v, sizeof(v), "%llu recorded OOM%s", (unsigned long long)f->recorded_ooms,
	         f->recorded_ooms == 1 ? "" : "s");
	gate(out, "no_oom", v, b->allow_oom ? "allowed (--allow-oom)" : "none");
	if (f->recorded_ooms && !b->allow_oom) {
		if (f->recorded_oom_index != UINT64_MAX)
			fail(out,
			     "the run ran out of memory (%llu recorded OOM%s, the first at event "
			     "%llu; --allow-oom passes it)",
			     (unsigned long long)f->recorded_ooms, f->recorded_ooms == 1 ? "" : "s",
			     (unsigned long long)f->recorded_oom_index);
		else
			fail(out,
			     "the run ran out of memory (%llu recorded OOM%s; --allow-oom passes "
			     "it)",
			     (unsigned long long)f->recorded_ooms,
			     f->recorded_ooms == 1 ? "" : "s");
	}
	gate(out, "not_cut_short", f->cut_short ? "cut short" : "whole",
	     b->allow_cut_short ? "cut short allowed (--allow-cut-short)" : "whole");
	if (f->cut_short && !b->allow_cut_short)
		fail(out,
		     "the trace is cut short: its recording was killed (the job may have died), "
		     "and the peaks are of the part it holds (--allow-cut-short passes it)");
	if (f->oom)
		snprintf(v, sizeof(v), "runs out at event %llu", (unsigned long long)f->oom_index);
	gate(out, "replay_completes", f->oom ? v : "completes", "completes");
	if (f->oom)
		fail(out, "the replay runs out of memory at event %llu",
		     (unsigned long long)f->oom_index);
}

void ms_check_judge(const struct ms_check_budgets *b, const struct ms_check_figures *f,
                    const struct ms_check_figures *base, struct ms_check_result *out)
{
	char b1[32], b2[32], v[64];

	memset(out, 0, sizeof(*out));
	judge_death(b, f, out);
	if (b->max_reserved)
		gate(out, "max_peak_reserved", ms_format_size(b1, sizeof(b1), f->reserved),
		     ms_format_size(b2, sizeof(b2), b->max_reserved));
	if (b->max_reserved && f->reserved > b->max_reserved)
		fail(out, "peak reserved %s exceeds the budget of %s",
		     ms_format_size(b1, sizeof(b1), f->reserved),
		     ms_format_size(b2, sizeof(b2), b->max_reserved));
	if (b->max_allocated)
		gate(out, "max_peak_allocated", ms_format_size(b1, sizeof(b1), f->allocated),
		     ms_format_size(b2, sizeof(b2), b->max_allocated));
	if (b->max_allocated && f->allocated > b->max_allocated)
		fail(out, "peak allocated %s exceeds the budget of %s",
		     ms_format_size(b1, sizeof(b1), f->allocated),
		     ms_format_size(b2, sizeof(b2), b->max_allocated));
	if (b->growth_per_step_given) {
		char bound[48];
		snprintf(v, sizeof(v), "%s%s",
		         f->growth_steps ? ms_format_size(b1, sizeof(b1), f->growth_per_step)
		                         : "not measurable",
		         f->growth_steps ? " a step" : "");
		snprintf(bound, sizeof(bound), "%s a step",
		         ms_format_size(b2, sizeof(b2), b->max_growth_per_step));
		gate(out, "max_growth_per_step", v, bound);
	}
	if (b->growth_per_step_given && !f->growth_steps && f->growth_by_repetition)
		fail(out, "growth per step cannot be checked: the trace's steps are found only by "
		          "repetition, which may be a model's layers (mark them: memsnap.step(), "
		          "torch.profiler)");
	else if (b->growth_per_step_given && !f->growth_steps && f->windowed)
		fail(out,
		     "growth per step cannot be checked: it takes 3 steps' starts inside the "
		     "window (events %llu to %llu), 4 steps or 3 optimizer steps in the trace, "
		     "which has %zu step%s (%zu optimizer step%s)",
		     (unsigned long long)f->window.from, (unsigned long long)f->window.to, f->steps,
		     f->steps == 1 ? "" : "s", f->optimizer_steps,
		     f->optimizer_steps == 1 ? "" : "s");
	else if (b->growth_per_step_given && !f->growth_steps)
		fail(out,
		     "growth per step cannot be checked: it takes 4 steps, or 3 optimizer steps, "
		     "and "
		     "the trace has %zu step%s (%zu optimizer step%s)",
		     f->steps, f->steps == 1 ? "" : "s", f->optimizer_steps,
		     f->optimizer_steps == 1 ? "" : "s");
	else if (b->growth_per_step_given && f->growth_per_step > b->max_growth_per_step)
		fail(out, "growth %s a step (%zu growing site%s) exceeds the budget of %s a step",
		     ms_format_size(b1, sizeof(b1), f->growth_per_step), f->growth_sites,
		     f->growth_sites == 1 ? "" : "s",
		     ms_format_size(b2, sizeof(b2), b->max_growth_per_step));
	if (b->max_waste >= 0) {
		snprintf(v, sizeof(v), "%.3f", f->waste);
		snprintf(b1, sizeof(b1), "%.3f", b->max_waste);
		gate(out, "max_fragmentation", v, b1);
	}
	if (b->max_waste >= 0 && f->waste > b->max_waste)
		fail(out, "waste at the peak %.3f exceeds the --max-fragmentation budget of %.3f",
		     f->waste, b->max_waste);
	if (b->baseline && base) {
		double gr = base->reserved
		                    ? 100.0 * ((double)f->reserved - (double)base->reserved) /
		                              (double)base->reserved
		                    : 0;
		double ga = base->allocated
		                    ? 100.0 * ((double)f->allocated - (double)base->allocated) /
		                              (double)base->allocated
		                    : 0;
		char bound[96];
		snprintf(v, sizeof(v), "%+.1f%% (%s)", gr,
		         ms_format_size(b1, sizeof(b1), f->reserved));
		snprintf(bound, sizeof(bound), "+%.1f%% over %s", b->max_growth,
		         ms_format_size(b2, sizeof(b2), base->reserved));
		gate(out, "baseline_reserved", v, bound);
		if (gr > b->max_growth)
			fail(out, "peak reserved grew %.1f%% over %s (%s to %s), more than %.1f%%",
			     gr, b->baseline, ms_format_size(b1, sizeof(b1), base->reserved),
			     ms_format_size(b2, sizeof(b2), f->reserved), b->max_growth);
		snprintf(v, sizeof(v), "%+.1f%% (%s)", ga,
		         ms_format_size(b1, sizeof(b1), f->allocated));
		snprintf(bound, sizeof(bound), "+%.1f%% over %s", b->max_growth,
		         ms_format_size(b2, sizeof(b2), base->allocated));
		gate(out, "baseline_allocated", v, bound);
		if (ga > b->max_growth)
			fail(out, "peak allocated grew %.1f%% over %s (%s to %s), more than %.1f%%",
			     ga, b->baseline, ms_format_size(b1, sizeof(b1), base->allocated),
			     ms_format_size(b2, sizeof(b2), f->allocated), b->max_growth);
	}
}
