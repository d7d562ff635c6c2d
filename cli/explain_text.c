/*
 * explain's report as text (explain_text.h): the verdict first, then what holds the memory at the
 * peak, the steps, what grows, the OOM and what to change.
 */
#include "cli/explain_text.h"

#include <stdio.h>
#include <string.h>

#include "cli/messages.h"
#include "cli/sites.h"
#include "cli/verdict_out.h"
#include "common/alloc.h"
#include "parse/trace.h"

/* other's rule where no parameters were found: gradients and optimizer state are in it too */
#define OTHER_NO_PARAMETERS                                                                  \
	"kept across optimizer steps or to the end: workspaces, inputs, caches, leaks, and " \
	"gradients and optimizer state (no parameters to tell them by)"

/* The rule each category's bytes were placed by (explain.h), as the text names it. */
static const char *const cat_rule[MS_CAT_COUNT] = {
        "kept from before the first optimizer step through the last, made by torch.nn (or "
        "FSDP2's fully_shard), a gradient of its size",
        "alive at an optimizer step's start, the size of a parameter",
        "made in an optimizer step, kept through the later ones, a parameter's size",
        "an iteration's own: freed before the next optimizer step, or held when it ran out or "
        "the trace was cut",
        "kept across optimizer steps: workspaces, inputs, caches, leaks",
        "not placed: from before the trace, or no optimizer steps to place it by",
};

/* Parameters, gradients and optimizer state where optimizer steps are found but no parameter:
 * nothing of them is told, and their bytes are in other (said on a line of its own; without
 * optimizer steps a note says it once). */
static int state_not_told(const struct ms_explain *x, unsigned k)
{
	return x->n_optimizer_steps && !ms_explain_cat_told(x, k);
}

static void print_cats(const struct ms_explain *x, uint64_t allocated, uint64_t served,
                       uint64_t cached, uint64_t outside, enum ms_outside_how outside_how,
                       uint64_t mark)
{
	char b[32];
	int64_t rd = ms_explain_rounding(x, allocated - served);
	for (unsigned k = 0; k < MS_CAT_COUNT; k++) {
		/* without optimizer steps only what could not be placed has bytes */
		if (!x->cat_bytes[k] && (k == MS_CAT_UNPLACED || !x->n_optimizer_steps))
			continue;
		/* no parameters found: gradients and optimizer state are not told either */
		if (k == MS_CAT_GRADIENTS && x->gradients_not_told) {
			printf("    %-16s %11s                not told: no block of a parameter's "
			       "size "
			       "was alive at an optimizer step's start (FSDP2's gradients are "
			       "views "
			       "of its reduce-scatter buffers, DDP's with gradient_as_bucket_view "
			       "of its buckets): they are in %s\n",
			       ms_explain_cat_name(k), "-",
			       x->has_stacks ? "activations or other"
			                     : "parameters or activations (no stacks: what the "
			                       "steps keep is counted as parameters)");
			continue;
		}
		if (state_not_told(x, k)) {
			printf("    %-16s %11s                not told: no parameters found (the "
			       "note "
			       "below); what there is of it is in other or unplaced\n",
			       ms_explain_cat_name(k), "-");
			continue;
		}
		printf("    %-16s %11s  %6llu %-6s  %s\n", ms_explain_cat_name(k),
		       ms_format_size(b, sizeof(b), x->cat_bytes[k]),
		       (unsigned long long)x->cat_blocks[k],
		       x->cat_blocks[k] == 1 ? "block" : "blocks",
		       k == MS_CAT_PARAMETERS && !x->has_stacks
		               ? "kept from before the first optimizer step through the last, a "
		                 "gradient of its size (no stacks to tell torch.nn's)"
		       : k == MS_CAT_PARAMETERS && x->gradients_not_told
		               ? "kept from before the first optimizer step through the last, made "
		                 "by torch.nn or FSDP2's fully_shard"
		       : k == MS_CAT_OTHER && !x->parameter_blocks ? OTHER_NO_PARAMETERS
		                                                   : cat_rule[k]);
	}
	if (rd >= 0) {
		printf("    %-16s %11s                allocated beyond the bytes asked for "
		       "(blocks' "
		       "rounding)\n",
		       "rounding", ms_format_size(b, sizeof(b), (uint64_t)rd));
	} else if ((uint64_t)-rd <= (allocated - served) / 100) {
		printf("    %-16s %11s                asked for beyond the allocated bytes: frees "
		       "waiting for their streams\n",
		       "pending", ms_format_size(b, sizeof(b), (uint64_t)-rd));
	} else {
		/* more than pending frees explain: the file holds blocks the replay did not have */
		printf("    %-16s %11s                the categories hold %s more than the replay "
		       "had allocated here: the file's end state or trace counts blocks the replay "
		       "did not have (an inconsistent or cut trace); the categories are not to be "
		       "trusted\n",
		       "rounding", "-", ms_format_size(b, sizeof(b), (uint64_t)-rd));
	}
	if (served)
		printf("    %-16s %11s                the request the recorded run failed on "
		       "(its OOM), served by the replay and given back right after\n",
		       "oom_request", ms_format_size(b, sizeof(b), served));
	printf("    %-16s %11s                reserved but not allocated\n", "cached_free",
	       ms_format_size(b, sizeof(b), cached));
	if (outside_how == MS_OUTSIDE_MEASURED)
		printf("    %-16s %11s                held outside PyTorch: the device's total "
		       "less "
		       "its free bytes and PyTorch's reserved, measured at event %llu "
		       "(cudaMemGetInfo),"
		       " with the raw CUDA calls since: the CUDA context, NCCL's buffers, other "
		       "libraries and processes\n",
		       "outside_pytorch", ms_format_size(b, sizeof(b), outside),
		       (unsigned long long)mark);
	else if (outside_how == MS_OUTSIDE_RAW_ONLY)
		printf("    %-16s %11s                at least: the raw CUDA allocations the "
		       "recorder "
		       "saw (not measured: the CUDA context and calls it does not intercept are "
		       "not "
		       "in it)\n",
		       "outside_pytorch", ms_format_size(b, sizeof(b), outside));
}

/* Sites' rows as text: bytes, allocations, the site. */
static void print_sites(const struct ms_symtab *y, const struct ms_explain_site *s, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		char site[512], b[32];
		ms_site_label(y, s[k].stack, site, sizeof(site));
		printf("    %11s in %llu allocation%s: %s\n",
		       ms_format_size(b, sizeof(b), s[k].bytes), (unsigned long long)s[k].blocks,
		       s[k].blocks == 1 ? "" : "s", site);
	}
}

/* The categories as one line ("parameters 51 MiB, ..."), those with bytes. */
static void print_cats_line(const struct ms_explain *x, uint64_t served)
{
	char b[32];
	int any = 0;
	for (unsigned k = 0; k < MS_CAT_COUNT; k++) {
		if (!x->cat_bytes[k])
			continue;
		printf("%s%s %s", any ? ", " : "", ms_explain_cat_name(k),
		       ms_format_size(b, sizeof(b), x->cat_bytes[k]));
		any = 1;
	}
	if (served)
		printf("%soom_request %s", any ? ", " : "", ms_format_size(b, sizeof(b), served));
	printf("\n");
}

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
static void print_steps(const struct ms_explain_report *r)
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
	print_cats_line(e, 0);
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
		print_sites(y, x->top_activations, x->n_top_activations);
	}
	if (x->copies_told && x->copy_bytes) {
		printf("\n  copies alive at the peak (clone, .to(), .contiguous()): %s in %llu "
		       "allocation%s, largest at:\n",
		       ms_format_size(b1, sizeof(b1), x->copy_bytes),
		       (unsigned long long)x->copy_blocks, x->copy_blocks == 1 ? "" : "s");
		print_sites(y, x->top_copies, x->n_top_copies < 3 ? x->n_top_copies : 3);
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

/* The peak's line, then what holds it. */
static void breakdown(const struct ms_explain_report *r, const char *label)
{
	const struct ms_trace *t = r->t;
	const struct ms_explain *x = &r->x;
	const struct ms_replay_result *first = &r->first;
	uint64_t at = first->fullest_at_peak_index, reserved = r->reserved,
	         allocated = r->allocated;
	size_t ps = r->peak_step;
	char b1[32], b2[32];

	printf("%s: peak %s%s reserved (first at event %llu); at event %llu", label,
	       first->rebuilt || first->cut_short ? "at least " : "",
	       ms_format_size(b1, sizeof(b1), reserved),
	       (unsigned long long)first->peak_reserved_index, (unsigned long long)at);
	if (ps) /* steps from repetition may be a model's layers: said as found */
		printf(" (%s %zu of %zu)", x->steps_by_repetition ? "repetition" : "step",
		       ps + x->steps_before_trace, x->n_steps + x->steps_before_trace);
	if (r->peak_annotation)
		printf(" in \"%s\"", r->peak_annotation);
	if (at < t->n_events && t->events[at].t_ns && ms_trace_first_time(t))
		printf(", %.3f s in", (double)(t->events[at].t_ns - ms_trace_first_time(t)) / 1e9);
	printf(", the most allocated while it stood, %s:\n",
	       ms_format_size(b2, sizeof(b2), allocated));
	print_cats(x, allocated, first->served_oom_at_peak_reserved, r->cached, r->outside,
	           r->outside_how, r->outside_mark);
}

/* The verdict, the peak and its notes. */
static void print_peak(const struct ms_explain_report *r, const char *label)
{
	const struct ms_trace *t = r->t;
	const struct ms_explain *x = &r->x;
	const struct ms_replay_result *first = &r->first;
	const struct ms_verdict *vd = &r->vd;
	uint64_t reserved = r->reserved;
	char b1[32];

	if (vd->headline[0]) /* the conclusion first, as the JSON and the page give it */
		printf("%s: %s\n", label, vd->headline);
	if (!reserved && !first->rebuilt) {
		/* nothing to break down: no figure over zero events */
		if (first->has_oom)
			printf("%s: nothing was reserved before the replay ran out of "
			       "memory at event %llu, asking for its first segment: no "
			       "peak "
			       "to break down\n",
			       label, (unsigned long long)first->first_oom.index);
		else
			printf("%s: nothing was reserved: no peak to break down\n", label);
	} else {
		breakdown(r, label);
	}
	if (first->ended_by_oom)
		printf("  note: the replay ran out of memory at event %llu, where the "
		       "recorded "
		       "run did not (the OOM below): the peak and all of the replay's "
		       "figures "
		       "are up to there\n",
		       (unsigned long long)first->first_oom.index);
	if (t->cut_short)
		printf("  note: the trace is cut short (its file ends early): all of this "
		       "is "
		       "of the part it holds, not of the whole run\n");
	if (x->why_uncategorized[0])
		printf("  note: %s\n", x->why_uncategorized);
	if (r->apeak) {
		size_t as = r->apeak_step;
		printf("  the peak of allocated bytes is another moment: %s at event %llu",
		       ms_format_size(b1, sizeof(b1),
		                      (uint64_t)first->stats.allocated_bytes[0].peak),
		       (unsigned long long)first->peak_allocated_index);
		if (as)
			printf(" (%s %zu)", x->steps_by_repetition ? "repetition" : "step",
			       as + x->steps_before_trace);
		printf(":\n    ");
		print_cats_line(&r->at_apeak, first->served_oom_at_peak_allocated);
	}
	if (x->steps_other_device && x->n_steps)
		printf("  note: the steps are those annotated on other devices (none on "
		       "this one)%s\n",
		       x->steps_by_time ? ", placed among this device's events by their "
		                          "times (a snapshot keeps each device's events apart)"
		                        : "");
}

/* The model and optimizer whole, the steps, and what grows from step to step. */
static void print_model_steps(const struct ms_explain_report *r)
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
	if (x->n_steps) {
		print_steps(r);
	} else {
		printf("\n  steps: none found (no step annotations, no optimizer steps, no "
		       "allocations repeated evenly)\n");
	}
	if (!x->growth_steps) {
		if (x->n_optimizer_steps && !strcmp(x->steps_from, "optimizer steps"))
			printf("\n  growth from step to step: not looked for (it takes 3 "
			       "optimizer steps; the trace has %zu, in its %zu steps)\n",
			       (size_t)x->n_optimizer_steps, x->n_steps);
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

/* The OOM: the state when the request failed, who held it, and why it failed. */
static void print_oom(const struct ms_explain_report *r)
{
	const struct ms_trace *t = r->t;
	const struct ms_verdict *vd = &r->vd;
	const struct ms_limit_range *lim = &r->lim;
	uint64_t capacity = r->capacity;
	char b1[32], b2[32], b3[32];

	const struct ms_replay_oom *f = &r->first.first_oom;
	printf("\n  out of memory at event %llu%s: %s requested, %s allocated, %s "
	       "reserved\n",
	       (unsigned long long)f->index, f->recorded ? " (recorded too)" : "",
	       ms_format_size(b1, sizeof(b1), f->o.requested),
	       ms_format_size(b2, sizeof(b2), f->o.allocated),
	       ms_format_size(b3, sizeof(b3), f->o.reserved));
	print_cats(&r->at_oom, f->o.allocated, 0, f->o.reserved - f->o.allocated, 0,
	           MS_OUTSIDE_NOT_MEASURED, 0);
	if (r->at_oom.n_top_live) {
		printf("    held by, the largest sites of what was allocated:\n");
		print_sites(&t->syms, r->at_oom.top_live, r->at_oom.n_top_live);
	}
	ms_verdict_print_oom_cause(&vd->oom, &vd->death, f->o.reserved, "    ");
	{
		int fit = r->oom_fits;
		uint64_t demand = f->o.allocated + f->o.requested;
		ms_format_size(b1, sizeof(b1), demand);
		if (f->o.retry_skipped)
			printf("    a use_mem_pool or a CUDA graph capture was "
			       "open: "
			       "PyTorch gives no cached segment back then, and %s "
			       "of "
			       "them were free; end it before this allocation, or "
			       "call torch.cuda.empty_cache() before it begins\n",
			       ms_format_size(b2, sizeof(b2), f->o.releasable));
		else if (fit < 0)
			; /* the cause line above says why it cannot be told */
		else if (fit && ms_oom_fit_cause(f, lim->inferred ? lim->lo : capacity) ==
		                        MS_CAUSE_SEGMENT_SIZE) {
			char b4[32], b5[32];
			uint64_t cap = lim->inferred ? lim->lo : capacity;
			printf("    segment size: allocated plus the request (%s) "
			       "fit "
			       "in %s%s, and so did the request beside PyTorch's "
			       "segments (%s free in them), but the new segment it "
			       "asked for (%s) did not fit in the %s left; "
			       "expandable segments grow by 2 MiB pages instead\n",
			       b1, ms_format_size(b2, sizeof(b2), cap),
			       lim->inferred ? ", the inferred limit's lowest" : "",
			       ms_format_size(b3, sizeof(b3), f->o.free_in_reserved),
			       ms_format_size(b4, sizeof(b4), f->o.alloc_size),
			       ms_format_size(b5, sizeof(b5),
			                      cap > f->o.reserved ? cap - f->o.reserved : 0));
		} else if (fit)
			printf("    fragmentation: allocated plus the request (%s) "
			       "fit in "
			       "%s%s; the largest free block was %s\n",
			       b1,
			       ms_format_size(b2, sizeof(b2), lim->inferred ? lim->lo : capacity),
			       lim->inferred ? ", the inferred limit's lowest" : "",
			       ms_format_size(b3, sizeof(b3), f->o.largest_free));
		else
			printf("    demand: allocated plus the request (%s) exceed "
			       "%s%s: "
			       "no setting can make it fit\n",
			       b1,
			       ms_format_size(b2, sizeof(b2), lim->inferred ? lim->hi : capacity),
			       lim->inferred ? ", the inferred limit's highest" : "");
	}
}

/* What to change: each setting that helps, replayed on the trace, and the least memory. */
static void print_changes(const struct ms_explain_report *r)
{
	const struct ms_explain *x = &r->x;
	const struct ms_replay_result *first = &r->first;
	const struct ms_verdict *vd = &r->vd;
	const struct ms_limit_range *lim = &r->lim;
	uint64_t reserved = r->reserved, capacity = r->capacity;
	char b1[32], b2[32], b3[32];
	size_t k;

	printf("\n  what to change (each replayed on this trace%s%s%s%s%s):\n",
	       r->o.limit ? ", limit " : "",
	       r->o.limit ? ms_format_size(b1, sizeof(b1), r->o.limit) : "",
	       !r->n_recs             ? ""
	       : first->alloc_conf[0] ? "; each in place of \""
	                              : "; each in place of the default settings",
	       r->n_recs && first->alloc_conf[0] ? first->alloc_conf : "",
	       r->n_recs && first->alloc_conf[0] ? "\", whatif --configs tries combinations"
	       : r->n_recs                       ? ", whatif --configs tries combinations"
	                                         : "");
	if (r->rows[0].s)
		printf("    the recorded settings could not be replayed: %s\n", r->rows[0].err);
	else if (!r->n_recs && first->has_oom && first->first_oom.o.retry_skipped)
		printf("    no setting tried avoids the OOM (%zu tried: memsnap whatif "
		       "lists them): the cache kept while the use_mem_pool or capture "
		       "was open is the cause (above)\n",
		       r->n_rows - 1);
	else if (!r->n_recs && first->has_oom && lim->inferred)
		printf("    no setting tried avoids the OOM under the inferred limit (%zu "
		       "tried: memsnap whatif lists them); the job's real limit, anywhere "
		       "from %s to %s, may differ (--limit sets it)\n",
		       r->n_rows - 1, ms_format_size(b1, sizeof(b1), lim->lo),
		       ms_format_size(b2, sizeof(b2), lim->hi));
	else if (!r->n_recs && first->has_oom) {
		printf("    no setting tried avoids the OOM (%zu tried: memsnap whatif "
		       "lists them): the job needs less memory, or more than it had\n",
		       r->n_rows - 1);
		/* an OOM of fragmentation, and yet no setting helps: the demand later on */
		size_t hk = SIZE_MAX;
		for (k = 0; k < x->n_steps; k++)
			if (hk == SIZE_MAX ||
			    x->steps[k].peak_requested > x->steps[hk].peak_requested)
				hk = k;
		if (hk != SIZE_MAX && capacity && x->steps[hk].peak_requested > capacity)
			printf("    the job holds %s of allocations at once later on "
			       "(step %zu, event %llu), more than %s: past this OOM it "
			       "runs out whatever the setting\n",
			       ms_format_size(b1, sizeof(b1), x->steps[hk].peak_requested),
			       hk + 1 + x->steps_before_trace,
			       (unsigned long long)x->steps[hk].peak_event,
			       ms_format_size(b2, sizeof(b2), capacity));
	} else if (!r->n_recs)
		printf("    no setting tried lowers the peak (%zu tried: memsnap whatif "
		       "lists "
		       "them)\n",
		       r->n_rows - 1);
	for (k = 0; k < r->n_recs; k++) {
		const struct ms_whatif_row *w = &r->rows[r->recs[k].row];
		uint64_t p = r->recs[k].peak;
		if (r->recs[k].sv.survives == MS_SURVIVES_NO &&
		    (!k || r->recs[k - 1].sv.survives != MS_SURVIVES_NO))
			printf("    %s would not have saved the job:\n",
			       k ? "these"
			         : "none does: these lower the peak or get past the "
			           "recorded OOM, but");
		printf("    %s\n      peak reserved %s (%s%s)%s", w->conf,
		       ms_format_size(b1, sizeof(b1), p), p > reserved ? "+" : "-",
		       ms_format_size(b2, sizeof(b2), p > reserved ? p - reserved : reserved - p),
		       !r->recs[k].avoids_oom      ? ""
		       : first->first_oom.recorded ? ", gets past the recorded OOM"
		                                   : ", gets past the OOM of the replay under this "
		                                     "limit");
		if (r->o.limit && p > r->o.limit)
			printf(" (%s over the limit: PyTorch checks the limit against the "
			       "request, and expandable segments map whole pages past it)",
			       ms_format_size(b2, sizeof(b2), p - r->o.limit));
		if (w->min_memory)
			printf("; least memory that completes %s%s%s",
			       first->rebuilt ? "at least " : "", /* a mid-run start */
			       ms_format_size(b3, sizeof(b3), w->min_memory),
			       w->min_memory > p ? " (more than its peak: under a lower limit "
			                           "the allocator takes other paths, and runs out)"
			       : r->rows[0].min_memory && w->min_memory > r->rows[0].min_memory
			               ? " (more than the settings it replaces need)"
			               : "");
		printf("\n      survives: %s: %s", ms_survives_name(r->recs[k].sv.survives),
		       r->recs[k].sv.why);
		if (r->recs[k].sv.survives != MS_SURVIVES_NO && r->recs[k].sv.margin_known)
			printf("; its allocated peak %s below %s (reserved bytes may "
			       "fill the rest)",
			       ms_format_size(b1, sizeof(b1), r->recs[k].sv.margin),
			       vd->cap.from == MS_CAP_HELD     ? "what the job held at once"
			       : vd->cap.from == MS_CAP_DEVICE ? "what PyTorch could use"
			                                       : "the limit");
		printf("\n");
	}
	if (!r->rows[0].s)
		printf("  least memory that completes with %s: %s%s\n",
		       r->o.alloc_conf            ? "the settings given"
		       : first->settings_recorded ? "the recorded settings"
		       : first->expandable_seen   ? "the settings the trace shows"
		                                  : "the default settings (not recorded)",
		       first->rebuilt && r->rows[0].min_memory ? "at least " : "",
		       r->rows[0].min_memory ? ms_format_size(b1, sizeof(b1), r->rows[0].min_memory)
		                             : "none found");
	/* listed above: the settings that avoid the OOM or lower the peak as run; under a
	   limit, others may need less memory still (the collector acts only under one) */
	if (!first->has_oom && !r->o.limit)
		printf("  (settings that only need less memory under a limit, such as "
		       "garbage_collection_threshold, are not listed: memsnap whatif "
		       "searches "
		       "the least memory of each)\n");
}

void ms_explain_print(const struct ms_explain_report *r, const char *label)
{
	print_peak(r, label);
	print_model_steps(r);
	print_live_at_end(r);
	print_findings(r);
	if (r->has_oom)
		print_oom(r);
	print_changes(r);
}
