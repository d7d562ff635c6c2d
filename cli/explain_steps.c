/* explain's steps, growth, what is live at the end and what the trace shows, as text
 * (explain_text.h). */
#include <stdio.h>
#include <string.h>

#include "cli/explain_text.h"
#include "cli/messages.h"
#include "cli/sites.h"
#include "common/alloc.h"
#include "parse/trace.h"

/*
 * A sparkline of v[0..n) from 0 (a space) to max (a full block), at most WIDTH columns (each the
 * most of the steps it stands for).
 */
static void sparkline(const char *what, const uint64_t *v, size_t n)
{
	enum { WIDTH = 60 };
	static const char *const bar[] = {" ",      "\u2581", "\u2582", "\u2583", "\u2584",
	                                  "\u2585", "\u2586", "\u2587", "\u2588"};
	size_t cols = n < WIDTH ? n : WIDTH;
	uint64_t max = 0;
	char b[32];

	for (size_t i = 0; i < n; i++)
		max = v[i] > max ? v[i] : max;
	if (!n || !max)
		return;
	printf("    %-15s ", what);
	for (size_t c = 0; c < cols; c++) {
		uint64_t m = 0;
		for (size_t i = c * n / cols; i < (c + 1) * n / cols; i++)
			m = v[i] > m ? v[i] : m;
		printf("%s", bar[(size_t)((m * 8 + max - 1) / max)]);
	}
	printf("  0 to %s%s\n", ms_format_size(b, sizeof(b), max),
	       n > cols ? ", a column for several steps" : "");
}

/* The steps: all of them where few, else the first, the last, the peak's and the highest. */
static void print_step_table(const struct ms_explain_report *r)
{
	enum { SHOWN = 12, TOP = 6 };
	const struct ms_explain *x = &r->x;
	const struct ms_replay_result *rp = &r->first;
	const uint64_t *res = r->step_reserved;
	size_t peak_step = r->peak_step;
	unsigned char *show = ms_calloc(x->n_steps, 1);
	char b[32];
	size_t k;

	if (!show)
		ms_die(MS_EXIT_ERROR, "out of memory");
	if (x->n_steps <= SHOWN) {
		memset(show, 1, x->n_steps);
	} else {
		show[0] = show[x->n_steps - 1] = 1;
		if (peak_step)
			show[peak_step - 1] = 1;
		for (int t = 0; t < TOP; t++) { /* the highest peaks not shown yet */
			size_t best = SIZE_MAX;
			for (k = 0; k < x->n_steps; k++)
				if (!show[k] &&
				    (best == SIZE_MAX ||
				     x->steps[k].peak_requested > x->steps[best].peak_requested))
					best = k;
			if (best != SIZE_MAX)
				show[best] = 1;
		}
	}
	if (x->steps_before_trace)
		printf("\n  %zu steps before the trace's first event: their annotations are in "
		       "the file, their events are not (a ring buffer that wrapped, history turned "
		       "on late)",
		       x->steps_before_trace);
	printf("\n  steps (from %s%s%s%s): %zu%s%s\n",
	       x->steps_by_repetition
	               ? "repetition: the same allocations evenly spaced, a loop's iterations or, "
	                 "in one pass, a model's layers"
	               : x->steps_from,
	       x->steps_scope[0] ? " \"" : "", x->steps_scope, x->steps_scope[0] ? "\"" : "",
	       x->n_steps,
	       x->n_steps > SHOWN ? "; the first, the last, the peak's and the highest shown "
	                            "(--json has all)"
	                          : "",
	       x->steps_trailing_dropped ? " (the step annotation after the last optimizer step, "
	                                   "as torch.profiler's step() opens after a loop, is "
	                                   "not a step: its events are in the last)"
	                                 : "");
	printf("    %5s %12s %15s %12s %15s\n", "step", "first event", "peak requested", "at event",
	       "peak reserved");
	for (k = 0; k < x->n_steps; k++)
		if (show[k]) {
			char rb[32];
			if (res[k])
				ms_format_size(rb, sizeof(rb), res[k]);
			else
				snprintf(rb, sizeof(rb), "-");
			printf("    %5zu %12llu %15s %12llu %15s%s\n",
			       k + 1 + x->steps_before_trace,
			       (unsigned long long)x->steps[k].first_event,
			       ms_format_size(b, sizeof(b), x->steps[k].peak_requested),
			       (unsigned long long)x->steps[k].peak_event, rb,
			       k + 1 != peak_step ? ""
			       : rp->ended_by_oom ? "  <- the replay's peak, up to its OOM"
			                          : "  <- the peak");
		}
	ms_free(show);
	if (r->steps_exceed_reserved)
		printf("    (steps asked for more than the replay reserved in them: the file holds "
		       "blocks the replay did not have, an inconsistent trace or another "
		       "allocator's; the requested bytes are not to be trusted)\n");
	if (rp->ended_by_oom)
		printf("    (the replay ran out of memory at event %llu: the steps' requested "
		       "bytes "
		       "are the recorded run's, their reserved peaks the replay's up to there)\n",
		       (unsigned long long)rp->first_oom.index);
	if (x->n_steps >= 2) {
		uint64_t *al = ms_malloc(x->n_steps * sizeof(*al));
		if (!al)
			ms_die(MS_EXIT_ERROR, "out of memory");
		for (k = 0; k < x->n_steps; k++)
			al[k] = x->steps[k].peak_requested;
		printf("\n");
		sparkline("peak requested", al, x->n_steps);
		sparkline("peak reserved", res, x->n_steps);
		ms_free(al);
	}
}

/* The model and optimizer whole, the steps, and what grows from step to step. */
void ms_explain_print_steps(const struct ms_explain_report *r)
{
	const struct ms_trace *t = r->t;
	const struct ms_explain *x = &r->x;
	char b1[32], b2[32], b3[32];
	size_t k;

	if (x->parameter_blocks)
		printf("  model and optimizer (%s): parameters %s, gradients %s, optimizer "
		       "state %s\n",
		       x->optimizer[0] ? x->optimizer : "?",
		       ms_format_size(b1, sizeof(b1), x->parameter_bytes),
		       x->gradients_not_told ? "not told"
		                             : ms_format_size(b2, sizeof(b2), x->gradient_bytes),
		       ms_format_size(b3, sizeof(b3), x->optimizer_state_bytes));
	if (x->job && !strcmp(x->job, "inference") && x->inference.n_requests) {
		/* a generation job's requests take the steps' place (--json has both) */
		printf("\n  steps: %zu found (%s); the requests above take their place (--json "
		       "has them)\n",
		       x->n_steps, x->steps_from[0] ? x->steps_from : "none");
	} else if (x->n_steps) {
		print_step_table(r);
	} else {
		printf("\n  steps: none found (no step annotations, no optimizer steps, no "
		       "allocations repeated evenly)\n");
	}
	if (!x->growth_steps) {
		if (x->n_optimizer_steps && !strcmp(x->steps_from, "optimizer steps"))
			printf("\n  growth from step to step: not looked for (it takes 3 "
			       "optimizer steps; the trace has %zu, in its %zu step%s)\n",
			       (size_t)x->n_optimizer_steps, x->n_steps,
			       x->n_steps == 1 ? "" : "s");
		else
			printf("\n  growth from step to step: not looked for (it takes 4 "
			       "steps, or 3 optimizer steps; the trace has %zu step%s)\n",
			       x->n_steps, x->n_steps == 1 ? "" : "s");
	} else {
		printf("\n  growth from step to step:%s\n", x->n_growth ? "" : " none");
		if (x->n_growth && x->n_optimizer_steps < 3 && !strcmp(x->steps_from, "repetition"))
			printf("    (the steps are from repetition: where they are a "
			       "model's "
			       "layers in one pass, growth is what the pass keeps, such as "
			       "activations for its backward, not a leak)\n");
		for (k = 0; k < x->n_growth; k++) {
			char site[512];
			ms_site_label(&t->syms, x->growth[k].stack, site, sizeof(site));
			printf("    +%s a step over %u steps (%s at the last), first at "
			       "event "
			       "%llu: %s\n",
			       ms_format_size(b1, sizeof(b1), x->growth[k].bytes_per_step),
			       x->growth[k].steps,
			       ms_format_size(b2, sizeof(b2), x->growth[k].bytes_at_last_step),
			       (unsigned long long)x->growth[k].first_event, site);
			if (x->growth[k].blocks_at_last_step <= x->growth[k].blocks_at_first_step)
				printf("      as many allocations at each step (%u), "
				       "larger: "
				       "growing shapes, not more of them kept\n",
				       x->growth[k].blocks_at_last_step);
			else
				printf("      %u allocation%s at the first step, %u at the "
				       "last: more of them kept each step\n",
				       x->growth[k].blocks_at_first_step,
				       x->growth[k].blocks_at_first_step == 1 ? "" : "s",
				       x->growth[k].blocks_at_last_step);
		}
	}
}

/*
 * What the program still held at the end of the trace, by category (e: the categories after its
 * last event), and how much of it the sites that grow held: the model's state apart from what
 * grows. Nothing where the replay ran out of memory before the end.
 */
static void print_live_at_end(const struct ms_explain_report *rep)
{
	const struct ms_trace *t = rep->t;
	const struct ms_explain *x = &rep->x, *e = &rep->at_end;
	const struct ms_replay_result *r = &rep->first;
	char b[32], b2[32];

	if (r->ended_by_oom)
		return;
	printf("\n  live at the end%s: %s in %llu allocation%s: ",
	       t->cut_short ? " (of the part the file holds: it is cut short)"
	       : t->meta.producer && !strncmp(t->meta.producer, "memsnap-recorder", 16)
	               ? " (a recording runs to the program's exit)"
	               : "",
	       ms_format_size(b, sizeof(b), ms_explain_requested(e)),
	       (unsigned long long)rep->end_blocks, rep->end_blocks == 1 ? "" : "s");
	if (!rep->end_blocks) {
		printf("nothing\n");
		return;
	}
	ms_explain_print_cats_line(e, 0);
	if (rep->end_exceeds)
		printf("    more than the replay had allocated at the end (%s): the file counts "
		       "blocks the replay did not have (an inconsistent or cut trace); not to be "
		       "trusted\n",
		       ms_format_size(b, sizeof(b), (uint64_t)r->stats.allocated_bytes[0].current));
	if (x->n_growth && rep->growing_bytes_at_end <= ms_explain_requested(e))
		printf("    of it, %s from the sites that grow (above; %s at the last step); the "
		       "rest did not grow from step to step\n",
		       ms_format_size(b, sizeof(b), rep->growing_bytes_at_end),
		       ms_format_size(b2, sizeof(b2), rep->growing_bytes));
	else if (x->growth_steps)
		printf("    nothing of it grew from step to step\n");
}

/* What the trace shows of the program: where the peak's activations come from, empty_cache() in
 * a loop, memory left cached at the end. */
static void print_findings(const struct ms_explain_report *rep)
{
	const struct ms_explain *x = &rep->x;
	const struct ms_replay_result *r = &rep->first;
	const struct ms_symtab *y = &rep->t->syms;
	uint64_t cached_end = rep->cached_at_end, cached_private = rep->cached_at_end_private;
	char b1[32], b2[32], b3[32];

	if (x->n_top_activations) {
		printf("\n  largest activations and temporaries at the peak, by site:\n");
		ms_explain_print_sites(y, x->top_activations, x->n_top_activations);
	}
	if (x->copies_told && x->copy_bytes) {
		printf("\n  copies alive at the peak (clone, .to(), .contiguous()): %s in %llu "
		       "allocation%s, largest at:\n",
		       ms_format_size(b1, sizeof(b1), x->copy_bytes),
		       (unsigned long long)x->copy_blocks, x->copy_blocks == 1 ? "" : "s");
		ms_explain_print_sites(y, x->top_copies, x->n_top_copies < 3 ? x->n_top_copies : 3);
	} else if (x->copies_told) {
		printf("\n  copies alive at the peak (clone, .to(), .contiguous()): none\n");
	}
	if (rep->empty_cache_every_step)
		printf("\n  empty_cache() is called about every step (%llu calls in %zu optimizer "
		       "steps): the segments it gives back are allocated again, %llu cudaMalloc "
		       "calls in all\n",
		       (unsigned long long)r->empty_cache_calls, x->n_optimizer_steps,
		       (unsigned long long)r->stats.num_device_alloc);
	if (cached_end && r->ended_by_oom)
		printf("\n  when the replay ran out of memory %s is cached but free (of %s "
		       "reserved)\n",
		       ms_format_size(b1, sizeof(b1), cached_end),
		       ms_format_size(b2, sizeof(b2),
		                      (uint64_t)r->stats.reserved_bytes[0].current));
	else if (cached_end && cached_private)
		printf("\n  at the end %s is cached but free (of %s reserved): other processes "
		       "cannot use it until empty_cache() or exit; %s of it in private pools "
		       "(CUDA graphs, MemPools), which empty_cache() gives back only once their "
		       "graphs or pools are gone\n",
		       ms_format_size(b1, sizeof(b1), cached_end),
		       ms_format_size(b2, sizeof(b2), (uint64_t)r->stats.reserved_bytes[0].current),
		       ms_format_size(b3, sizeof(b3), cached_private));
	else if (cached_end)
		printf("\n  at the end %s is cached but free (of %s reserved): other processes "
		       "cannot use it until empty_cache() or exit\n",
		       ms_format_size(b1, sizeof(b1), cached_end),
		       ms_format_size(b2, sizeof(b2),
		                      (uint64_t)r->stats.reserved_bytes[0].current));
}

void ms_explain_print_end(const struct ms_explain_report *r)
{
	print_live_at_end(r);
	print_findings(r);
}
