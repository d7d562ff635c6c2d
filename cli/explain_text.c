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
        "made before the first forward, alive at the last forward's start",
        "grows by concatenation token by token, or kept across forwards and released (a "
        "static or paged cache), or made by code that names a cache",
};

/* A generation job's rules where they differ from a training job's (explain/inference.h). */
static const char *cat_rule_of(const struct ms_explain *x, unsigned k)
{
	if (k == MS_CAT_KV_CACHE && x->job && !strcmp(x->job, "training"))
		return "made in an evaluation loop: grows by concatenation token by token, or made "
		       "by "
		       "code that names a cache and kept across its forwards";
	if (!x->job || strcmp(x->job, "inference") != 0)
		return cat_rule[k];
	if (k == MS_CAT_ACTIVATIONS)
		return "made in a forward, alive at fewer than two forwards' starts";
	if (k == MS_CAT_OTHER)
		return "kept across forwards or to the end: workspaces, inputs, what the job keeps";
	if (k == MS_CAT_UNPLACED)
		return "allocated before the trace began";
	return cat_rule[k];
}

/* Parameters, gradients and optimizer state where optimizer steps are found but no parameter:
 * nothing of them is told, and their bytes are in other (said on a line of its own; without
 * optimizer steps a note says it once). */
static int state_not_told(const struct ms_explain *x, unsigned k)
{
	return x->n_optimizer_steps && !ms_explain_cat_told(x, k) &&
	       (k == MS_CAT_PARAMETERS || k == MS_CAT_GRADIENTS || k == MS_CAT_OPTIMIZER_STATE);
}

void ms_explain_print_cats(const struct ms_explain *x, uint64_t allocated, uint64_t served,
                           uint64_t cached, uint64_t outside, enum ms_outside_how outside_how,
                           uint64_t mark)
{
	char b[32];
	int64_t rd = ms_explain_rounding(x, allocated - served);
	for (size_t u = 0; u < x->n_user; u++)
		printf("    %-16s %11s  %6llu %-6s  yours: a frame matches %s (before memsnap's "
		       "rules)\n",
		       ms_user_cats_name(x->user_cats, u),
		       ms_format_size(b, sizeof(b), x->user_bytes[u]),
		       (unsigned long long)x->user_blocks[u],
		       x->user_blocks[u] == 1 ? "block" : "blocks",
		       ms_user_cats_pattern(x->user_cats, u));
	for (unsigned o = 0; o < MS_CAT_COUNT; o++) {
		unsigned k = ms_explain_cat_order[o];
		/* a category of another kind of job, or nothing to place by: no line */
		if (!x->cat_bytes[k] && (k == MS_CAT_UNPLACED || !ms_explain_cat_told(x, k)) &&
		    !state_not_told(x, k))
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
		       : k == MS_CAT_OTHER && !x->parameter_blocks && x->n_optimizer_steps
		               ? OTHER_NO_PARAMETERS
		               : cat_rule_of(x, k));
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
void ms_explain_print_sites(const struct ms_symtab *y, const struct ms_explain_site *s, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		char site[512], b[32];
		ms_site_label(y, s[k].stack, site, sizeof(site));
		printf("    %11s in %llu allocation%s: %s%s\n",
		       ms_format_size(b, sizeof(b), s[k].bytes), (unsigned long long)s[k].blocks,
		       s[k].blocks == 1 ? "" : "s",
		       s[k].backward ? "made in backward, for the forward at " : "", site);
	}
}

/* The categories as one line ("parameters 51 MiB, ..."), those with bytes. */
void ms_explain_print_cats_line(const struct ms_explain *x, uint64_t served)
{
	char b[32];
	int any = 0;
	for (size_t u = 0; u < x->n_user; u++) {
		if (!x->user_bytes[u])
			continue;
		printf("%s%s %s", any ? ", " : "", ms_user_cats_name(x->user_cats, u),
		       ms_format_size(b, sizeof(b), x->user_bytes[u]));
		any = 1;
	}
	for (unsigned o = 0; o < MS_CAT_COUNT; o++) {
		unsigned k = ms_explain_cat_order[o];
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

/* The peak's line, then what holds it. */
static void breakdown(const struct ms_explain_report *r, const char *label)
{
	const struct ms_trace *t = r->t;
	const struct ms_explain *x = &r->x;
	const struct ms_replay_result *first = &r->first;
	uint64_t at = r->peak_index, reserved = r->reserved, allocated = r->allocated;
	size_t ps = r->peak_step;
	char b1[32], b2[32];

	if (r->windowed && r->window.at)
		printf("%s: the moment after event %llu (a window of that one event): reserved %s "
		       "before it, allocated %s\n",
		       label, (unsigned long long)r->window.from,
		       ms_format_size(b1, sizeof(b1), r->window.reserved_at_start),
		       ms_format_size(b2, sizeof(b2), r->window.allocated_at_start));
	else if (r->windowed)
		printf("%s: the window of events %llu to %llu%s: reserved %s at its start, "
		       "allocated %s\n",
		       label, (unsigned long long)r->window.from, (unsigned long long)r->window.to,
		       r->window.closed ? "" : " (open at the end)",
		       ms_format_size(b1, sizeof(b1), r->window.reserved_at_start),
		       ms_format_size(b2, sizeof(b2), r->window.allocated_at_start));
	if (r->windowed && r->window.at)
		printf("%s: %s%s reserved after event %llu", label,
		       first->rebuilt || first->cut_short ? "at least " : "",
		       ms_format_size(b1, sizeof(b1), reserved), (unsigned long long)at);
	else
		printf("%s: %speak %s%s reserved (first at event %llu); at event %llu", label,
		       r->windowed ? "the window's " : "",
		       first->rebuilt || first->cut_short ? "at least " : "",
		       ms_format_size(b1, sizeof(b1), reserved),
		       (unsigned long long)r->peak_first_index, (unsigned long long)at);
	if (x->job && !strcmp(x->job, "inference") && ms_explain_forward_of(x, at)) {
		/* a generation job: its forward and request, not the steps repetition found */
		size_t rq = ms_explain_request_of(x, at);
		printf(" (forward %zu of %zu", ms_explain_forward_of(x, at),
		       x->inference.n_forwards);
		if (rq)
			printf(", request %zu", rq);
		printf(")");
	} else if (ps) { /* steps from repetition may be a model's layers: said as found */
		printf(" (%s %zu of %zu", x->steps_by_repetition ? "repetition" : "step",
		       ps + x->steps_before_trace, x->n_steps + x->steps_before_trace);
		if (ms_explain_eval_loop_of(x, at))
			printf(", evaluation loop %zu", ms_explain_eval_loop_of(x, at));
		printf(")");
	} else if (ms_explain_eval_loop_of(x, at)) {
		printf(" (evaluation loop %zu)", ms_explain_eval_loop_of(x, at));
	}
	if (r->peak_annotation)
		printf(" in \"%s\"", r->peak_annotation);
	if (at < t->n_events && t->events[at].t_ns && ms_trace_first_time(t))
		printf(", %.3f s in", (double)(t->events[at].t_ns - ms_trace_first_time(t)) / 1e9);
	printf(r->windowed && r->window.at ? ", allocated %s:\n"
	                                   : ", the most allocated while it stood, %s:\n",
	       ms_format_size(b2, sizeof(b2), allocated));
	ms_explain_print_cats(x, allocated, r->served_at_peak, r->cached, r->outside,
	                      r->outside_how, r->outside_mark);
	if (x->n_contexts) {
		printf("  by compile context (torch.compile's regions; N/A: outside them):");
		for (size_t i = 0; i < x->n_contexts && i < 5; i++)
			printf("%s %s %s (%llu)", i ? "," : "",
			       x->contexts[i].before ? "(before the trace)"
			       : x->contexts[i].name
			               ? ms_symtab_get_str(&t->syms, x->contexts[i].name)->s
			               : "N/A",
			       ms_format_size(b1, sizeof(b1), x->contexts[i].bytes),
			       (unsigned long long)x->contexts[i].blocks);
		if (x->n_contexts > 5)
			printf(", and %zu more (--json has them)", x->n_contexts - 5);
		printf("\n");
	}
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
		       ms_format_size(b1, sizeof(b1), r->apeak_bytes),
		       (unsigned long long)r->apeak_index);
		if (as)
			printf(" (%s %zu)", x->steps_by_repetition ? "repetition" : "step",
			       as + x->steps_before_trace);
		printf(":\n    ");
		ms_explain_print_cats_line(&r->at_apeak, r->apeak_served);
	}
	if (x->steps_other_device && x->n_steps)
		printf("  note: the steps are those annotated on other devices (none on "
		       "this one)%s\n",
		       x->steps_by_time ? ", placed among this device's events by their "
		                          "times (a snapshot keeps each device's events apart)"
		                        : "");
}

static void print_requests(const struct ms_explain_inference *f, const char *indent);

/* A generation job: its forwards, weights, KV cache, each category's peak and the requests. */
static void print_inference(const struct ms_explain_report *r)
{
	const struct ms_explain *x = &r->x;
	const struct ms_explain_inference *f = &x->inference;
	char b1[32], b2[32];

	if (!x->job || strcmp(x->job, "inference") != 0)
		return;
	printf("\n  a generation job: %zu forwards (from %s), no backward, no optimizer steps; ",
	       f->n_forwards, f->forwards_from);
	if (f->weights_not_told)
		printf("weights not told: the trace starts after the model was loaded, or while "
		       "it was (%s allocated before it and kept to the last forward is unplaced, "
		       "weights among it; %s made in the trace)\n",
		       ms_format_size(b1, sizeof(b1), f->before_kept_bytes),
		       ms_format_size(b2, sizeof(b2), f->weight_bytes));
	else
		printf("weights %s in %llu allocations\n",
		       ms_format_size(b1, sizeof(b1), f->weight_bytes),
		       (unsigned long long)f->weight_blocks);
	if (f->graphs)
		printf("  note: the job captured CUDA graphs: a forward replayed from one "
		       "allocates "
		       "nothing, so the forwards counted here and in the requests are the eager "
		       "ones\n");
	printf("  each category at its own peak%s:", r->windowed ? " over the whole trace" : "");
	for (size_t u = 0; u < x->n_user; u++)
		if (x->user_peak[u].bytes)
			printf("%s %s %s (event %llu)", u ? "," : "",
			       ms_user_cats_name(x->user_cats, u),
			       ms_format_size(b1, sizeof(b1), x->user_peak[u].bytes),
			       (unsigned long long)x->user_peak[u].event);
		else
			printf("%s %s never held a byte", u ? "," : "",
			       ms_user_cats_name(x->user_cats, u));
	for (unsigned o = 0, any = x->n_user != 0; o < MS_CAT_COUNT; o++) {
		unsigned k = ms_explain_cat_order[o];
		if (!ms_explain_cat_told(x, k) || (k == MS_CAT_UNPLACED && !x->cat_peak[k].bytes))
			continue;
		if (!x->cat_peak[k].bytes)
			printf("%s %s never held a byte", any++ ? "," : "", ms_explain_cat_name(k));
		else
			printf("%s %s %s (event %llu)", any++ ? "," : "", ms_explain_cat_name(k),
			       ms_format_size(b1, sizeof(b1), x->cat_peak[k].bytes),
			       (unsigned long long)x->cat_peak[k].event);
	}
	printf("\n");
	if (!f->n_requests) {
		printf("  requests: none found (no KV cache: nothing grows by concatenation or is "
		       "kept across forwards and released)\n");
		return;
	}
	printf("  requests (each a span in which the KV cache holds bytes; the prompt is its first "
	       "forward):\n");
	print_requests(f, "    ");
}

/* A training job's evaluation loops (explain/inference.h): each one's span, forwards and peak,
 * and its requests; the first few, --json has all. */
static void print_eval_loops(const struct ms_explain_report *r)
{
	const struct ms_explain *x = &r->x;
	char b1[32];
	size_t shown = x->n_eval_loops < 3 ? x->n_eval_loops : 3;

	if (!x->n_eval_loops)
		return;
	printf("\n  evaluation loops: %zu (forwards with no backward after them and "
	       "nothing kept for one; their KV cache by the generation rules)\n",
	       x->n_eval_loops);
	for (size_t i = 0; i < shown; i++) {
		const struct ms_explain_eval_loop *lp = &x->eval_loops[i];
		printf("    loop %zu: events %llu to %llu, %zu forwards, peak %s requested at "
		       "event "
		       "%llu; ",
		       i + 1, (unsigned long long)lp->first_event,
		       (unsigned long long)lp->end_event, lp->forwards.n_forwards,
		       ms_format_size(b1, sizeof(b1), lp->peak_requested),
		       (unsigned long long)lp->peak_event);
		if (!lp->forwards.n_requests) {
			printf("no requests (no KV cache)\n");
			continue;
		}
		printf("%zu request%s:\n", lp->forwards.n_requests,
		       lp->forwards.n_requests == 1 ? "" : "s");
		print_requests(&lp->forwards, "      ");
	}
	if (shown < x->n_eval_loops)
		printf("    and %zu more (--json has them)\n", x->n_eval_loops - shown);
}

/* The requests' table of a generation job or an evaluation loop, each line after indent. */
static void print_requests(const struct ms_explain_inference *f, const char *indent)
{
	char b1[32], b2[32], b3[32], b4[32];

	printf("%srequest  first event  forwards  prompt peak  decode peak   KV cache  "
	       "KV added/token\n",
	       indent);
	for (size_t i = 0; i < f->n_requests; i++) {
		const struct ms_explain_request *q = &f->requests[i];
		char tok[32];
		if (q->per_token_told)
			snprintf(tok, sizeof(tok), "%s%s", q->kv_bytes_per_token < 0 ? "-" : "",
			         ms_format_size(b4, sizeof(b4),
			                        (uint64_t)(q->kv_bytes_per_token < 0
			                                           ? -q->kv_bytes_per_token
			                                           : q->kv_bytes_per_token)));
		else
			snprintf(tok, sizeof(tok), "-");
		printf("%s%7zu  %11llu  %8u  %11s  %11s  %9s  %14s%s%s\n", indent, i + 1,
		       (unsigned long long)q->first_event, q->forwards,
		       q->began_before_trace ? "-" : ms_format_size(b1, sizeof(b1), q->prompt_peak),
		       q->forwards >= 2 ? ms_format_size(b2, sizeof(b2), q->decode_peak) : "-",
		       ms_format_size(b3, sizeof(b3), q->kv_peak), tok,
		       q->released ? "" : "  (held at the end)",
		       q->began_before_trace ? "  (begun before the trace: its prompt not in it)"
		                             : "");
		if (q->may_be_several)
			printf("%sits cache was made in its first forward and kept, not grown, "
			       "through "
			       "every other: one request or several that reuse the cache (a static "
			       "cache kept across requests, blocks made once) cannot be told "
			       "apart\n",
			       indent);
	}
}

void ms_explain_print(const struct ms_explain_report *r, const char *label)
{
	print_peak(r, label);
	print_inference(r);
	ms_explain_print_steps(r);
	print_eval_loops(r);
	ms_explain_print_end(r);
	if (r->has_oom)
		ms_explain_print_oom(r);
	ms_explain_print_changes(r);
}
