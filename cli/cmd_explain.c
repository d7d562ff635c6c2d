/*
 * memsnap explain TRACE: what holds the memory at the peak (explain/explain.h), the steps, what
 * grows, the OOM, and the allocator settings that would have helped, each replayed on the trace.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/external.h"
#include "cli/cmds.h"
#include "cli/opts.h"
#include "cli/out.h"
#include "cli/replay_opts.h"
#include "cli/sites.h"
#include "common/alloc.h"
#include "explain/explain.h"
#include "explain/verdict.h"
#include "cli/verdict_out.h"
#include "replay/end_state.h"
#include "parse/trace.h"
#include "replay/replay.h"
#include "replay/whatif.h"

static const char *const usage[] = {
        "memsnap explain [--limit N | --memory-fraction F] [--device-memory N] [--device D]",
        "                [--alloc-conf CONF] [--jobs N] [--site-depth N] [--request SIZE]",
        "                [--json] <trace>...",
        "",
        "What a trace's memory is made of and what to change. At the peak of reserved memory:",
        "parameters, gradients, optimizer state, activations, other memory kept across steps,",
        "memory cached but free, and memory outside PyTorch where the trace records it, each",
        "placed by a rule it names (docs/EXPLAIN.md); the steps and their peaks; the sites whose",
        "memory grows from step to step; the OOM, if the replay runs out, and whether the demand",
        "or the fragmentation caused it; and the allocator settings that lower the peak or avoid",
        "the OOM, each replayed on this trace, with the least memory that completes. Several",
        "traces (the ranks of a job) are each explained, then compared: each peak against the",
        "median, and which of them ran out of memory. Exit code 3 where a replay ran out of",
        "memory where the recorded run did not (a --limit below what the trace needs).",
        NULL,
};

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
        "an iteration's own: freed before the next optimizer step, or held when it ran out",
        "kept across optimizer steps: workspaces, inputs, caches, leaks",
        "not placed: from before the trace, or no optimizer steps to place it by",
};

/*
 * Memory outside PyTorch at event peak, from the trace's raw CUDA events of the device; known
 * where the trace records raw CUDA calls at all (memsnap record's interposer: 0 is a figure
 * then, even if every call comes after the peak).
 */
/* How the memory outside PyTorch at a moment is known */
enum outside_how {
	OUTSIDE_UNKNOWN = 0,  /* not measured, and no raw CUDA call holds any */
	OUTSIDE_RAW_ONLY = 1, /* only the raw CUDA calls the recorder saw: a lower bound */
	OUTSIDE_MEASURED = 2, /* the recorder's cudaMemGetInfo mark, with the raw calls since */
};

/* Memory outside PyTorch on device after event at: measured where the replay r has a mark */
static uint64_t outside_at(const struct ms_trace *t, const struct ms_replay_result *r,
                           uint32_t device, uint64_t at, int *how, uint64_t *mark)
{
	struct ms_external x;
	uint64_t cur = 0, bytes;

	memset(&x, 0, sizeof(x));
	for (size_t i = 0; i < t->n_events && i <= at; i++) {
		if (t->events[i].device != device)
			continue;
		if (ms_external_event(&x, i, &t->events[i]))
			ms_die(MS_EXIT_ERROR, "out of memory");
	}
	cur = x.cur;
	ms_external_release(&x);
	if (ms_replay_outside_at(r, at + 1, cur, &bytes, mark)) {
		*how = OUTSIDE_MEASURED;
		return bytes;
	}
	*how = cur ? OUTSIDE_RAW_ONLY : OUTSIDE_UNKNOWN;
	return cur;
}

/* The innermost annotation open at event at (record_function, a phase), or NULL. */
static const char *open_annotation(const struct ms_trace *t, uint64_t at)
{
	uint32_t *open = NULL;
	size_t n = 0, cap = 0;
	const char *name = NULL;

	for (size_t i = 0; i < t->n_anns && t->anns[i].event_index <= at; i++) {
		const struct ms_annotation *a = &t->anns[i];
		if (a->stage == MS_ANN_START) {
			if (ms_grow(&open, &cap, n + 1, sizeof(*open)))
				ms_die(MS_EXIT_ERROR, "out of memory");
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
		name = ms_symtab_get_str(&t->syms, open[n - 1])->s;
	ms_free(open);
	return name;
}

/* The step an event lies in (1-based), 0 if before the first. */
static size_t step_of(const struct ms_explain *x, uint64_t ev)
{
	size_t k = 0;
	while (k < x->n_steps && x->steps[k].first_event <= ev)
		k++;
	return k;
}

struct rec {
	size_t row;
	uint64_t peak;
	int avoids_oom;
	int went_on; /* the job went on after the OOM it avoids: what follows is not known */
	struct ms_survival sv; /* would the job have survived under it (explain/verdict.h) */
};

/* yes first, then unknown, then no */
static int survives_rank(unsigned s)
{
	return s == MS_SURVIVES_YES ? 0 : s == MS_SURVIVES_UNKNOWN ? 1 : 2;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	if (survives_rank(x->sv.survives) != survives_rank(y->sv.survives))
		return survives_rank(x->sv.survives) - survives_rank(y->sv.survives);
	if (x->avoids_oom != y->avoids_oom)
		return y->avoids_oom - x->avoids_oom;
	return x->peak < y->peak ? -1 : x->peak > y->peak;
}

/* Allocated bytes beyond the categories' requested ones: the blocks' rounding and unsplit
 * remainders (below 0 while frees wait for their streams). */
static int64_t rounding(const struct ms_explain *x, uint64_t allocated)
{
	return (int64_t)allocated - (int64_t)ms_explain_requested(x);
}

/* Parameters, gradients and optimizer state where optimizer steps are found but no parameter:
 * nothing of them is told, and their bytes are in other (said on a line of its own; without
 * optimizer steps a note says it once). */
static int state_not_told(const struct ms_explain *x, unsigned k)
{
	return x->n_optimizer_steps && !ms_explain_cat_told(x, k);
}

/*
 * "categories" (bytes by name) into parent, and beside it "categories_exceed_allocated": more
 * than frees waiting for their streams explain, so that the categories are not to be trusted.
 */
static void json_cats(cJSON *parent, const struct ms_explain *x, uint64_t allocated,
                      uint64_t served, uint64_t cached, uint64_t outside, int outside_how)
{
	cJSON *o = cJSON_AddObjectToObject(parent, "categories");

	allocated -= served;

	for (unsigned k = 0; k < MS_CAT_COUNT; k++)
		if (!ms_explain_cat_told(x, k))
			cJSON_AddNullToObject(o, ms_explain_cat_name(k)); /* not told */
		else
			ms_json_u64(o, ms_explain_cat_name(k), x->cat_bytes[k]);
	int exceed =
	        rounding(x, allocated) < 0 && (uint64_t)-rounding(x, allocated) > allocated / 100;
	/* beyond what frees waiting for their streams explain, rounding is no figure at all */
	if (exceed)
		cJSON_AddNullToObject(o, "rounding");
	else
		ms_json_i64(o, "rounding", rounding(x, allocated));
	cJSON_AddBoolToObject(parent, "categories_exceed_allocated", exceed);
	ms_json_u64(o, "recorded_oom_request", served);
	if (cached == UINT64_MAX) /* not known at that moment */
		cJSON_AddNullToObject(o, "cached_free");
	else
		ms_json_u64(o, "cached_free", cached);
	ms_json_u64_known(o, "outside_pytorch", outside_how != OUTSIDE_UNKNOWN, outside);
}

static void print_cats(const struct ms_explain *x, uint64_t allocated, uint64_t served,
                       uint64_t cached, uint64_t outside, int outside_how, uint64_t mark)
{
	char b[32];
	int64_t rd = rounding(x, allocated - served);
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
			       "of its buckets): they are in activations or other\n",
			       ms_explain_cat_name(k), "-");
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
	if (outside_how == OUTSIDE_MEASURED)
		printf("    %-16s %11s                held outside PyTorch: the device's total "
		       "less "
		       "its free bytes and PyTorch's reserved, measured at event %llu "
		       "(cudaMemGetInfo),"
		       " with the raw CUDA calls since: the CUDA context, NCCL's buffers, other "
		       "libraries and processes\n",
		       "outside_pytorch", ms_format_size(b, sizeof(b), outside),
		       (unsigned long long)mark);
	else if (outside_how == OUTSIDE_RAW_ONLY)
		printf("    %-16s %11s                at least: the raw CUDA allocations the "
		       "recorder "
		       "saw (not measured: the CUDA context and calls it does not intercept are "
		       "not "
		       "in it)\n",
		       "outside_pytorch", ms_format_size(b, sizeof(b), outside));
}

/*
 * A site into JSON object o: its frame as "file:line" and its function, and the whole site as
 * the text names it (label: at --site-depth N the frames from the user's down to it).
 */
static void json_site(cJSON *o, const struct ms_symtab *y, uint32_t stack, uint32_t frame)
{
	char site[1200];

	if (!frame) {
		cJSON_AddNullToObject(o, "site"); /* the allocations have no stack */
		cJSON_AddNullToObject(o, "function");
		cJSON_AddNullToObject(o, "label");
		return;
	}
	ms_site_label(y, stack, site, sizeof(site));
	cJSON_AddStringToObject(o, "label", site);
	/* a native frame has no file and line: the function names it alone */
	if (ms_symtab_get_str(y, y->frames[frame].file)->s[0]) {
		snprintf(site, sizeof(site), "%s:%u",
		         ms_symtab_get_str(y, y->frames[frame].file)->s, y->frames[frame].line);
		cJSON_AddStringToObject(o, "site", site);
	} else {
		cJSON_AddNullToObject(o, "site");
	}
	cJSON_AddStringToObject(o, "function", ms_symtab_get_str(y, y->frames[frame].name)->s);
}

/* Sites' rows into array a: site, function, bytes, allocations. */
static void json_sites(cJSON *a, const struct ms_symtab *y, const struct ms_explain_site *s,
                       size_t n)
{
	for (size_t k = 0; k < n; k++) {
		cJSON *o = cJSON_CreateObject();
		json_site(o, y, s[k].stack, s[k].frame);
		ms_json_u64(o, "bytes", s[k].bytes);
		ms_json_u64(o, "allocations", s[k].blocks);
		cJSON_AddItemToArray(a, o);
	}
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

/* What the trace shows of the program: where the peak's activations come from, empty_cache() in
 * a loop, memory left cached at the end. */
static void findings(const struct ms_explain *x, const struct ms_replay_result *r,
                     const struct ms_symtab *y, cJSON *jo)
{
	uint64_t cached_end = (uint64_t)r->stats.reserved_bytes[0].current -
	                      (uint64_t)r->stats.allocated_bytes[0].current;
	int churn = r->empty_cache_calls >= 2 && x->n_optimizer_steps &&
	            2 * r->empty_cache_calls >= x->n_optimizer_steps;
	uint64_t cached_private = 0; /* of it, in private pools (the first is the default) */
	char b1[32], b2[32], b3[32];

	for (size_t i = 1; i < r->n_pools; i++)
		cached_private += (uint64_t)(r->pools[i].reserved_bytes.current -
		                             r->pools[i].allocated_bytes.current);

	if (jo) {
		json_sites(cJSON_AddArrayToObject(jo, "largest_activations"), y, x->top_activations,
		           x->n_top_activations);
		if (x->copies_told) {
			cJSON *c = cJSON_AddObjectToObject(jo, "copies_at_peak");
			ms_json_u64(c, "bytes", x->copy_bytes);
			ms_json_u64(c, "allocations", x->copy_blocks);
			json_sites(cJSON_AddArrayToObject(c, "sites"), y, x->top_copies,
			           x->n_top_copies);
		} else {
			cJSON_AddNullToObject(jo,
			                      "copies_at_peak"); /* no C++ frames to tell them by */
		}
		ms_json_u64(jo, "empty_cache_calls", r->empty_cache_calls);
		ms_json_u64(jo, "empty_cache_calls_before_alloc", r->empty_cache_before_alloc);
		cJSON_AddBoolToObject(jo, "empty_cache_every_step", churn);
		ms_json_u64(jo, "cuda_malloc_calls", r->stats.num_device_alloc);
		/* where the replay ran out of memory: the bytes cached then */
		ms_json_u64(jo, "cached_at_end_bytes", cached_end);
		ms_json_u64(jo, "cached_at_end_in_private_pools_bytes", cached_private);
		return;
	}
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
	if (churn)
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

/*
 * Whether the failed request would have fit with no fragmentation: allocated plus requested
 * within the capacity. 1 yes, 0 no, -1 cannot be told (no capacity known, or a limit inferred
 * over a range that the demand lies within).
 */
static int fits(const struct ms_replay_oom *f, uint64_t capacity, const struct ms_limit_range *lim)
{
	uint64_t demand = f->o.allocated + f->o.requested;

	if (lim->inferred)
		return demand <= lim->lo ? 1 : demand > lim->hi ? 0 : -1;
	if (capacity == UINT64_MAX)
		return -1;
	return demand <= capacity;
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

/* res[k]: step k's most reserved bytes (all 0 where the replay fails: none shown). */
static int steps_reserved(const struct ms_trace *t, const struct ms_replay_opts *base,
                          const struct ms_explain *x, uint64_t *res)
{
	struct ms_replay_opts o = *base;
	struct ms_replay_result r;
	struct step_res sr = {x, res, 0};
	struct ms_diag d = MS_DIAG_INIT;
	ms_status s;

	if (!x->n_steps)
		return 0;
	o.no_segment_log = 1;
	o.on_event = step_res_event;
	o.ctx = &sr;
	s = ms_replay_trace(t, &o, &r, &d);
	ms_replay_result_release(&r);
	if (s)
		memset(res, 0, x->n_steps * sizeof(*res));
	return s == MS_OK;
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

/* The steps: all of them where few, else the first, the last, the peak's and the highest. */
static void print_steps(const struct ms_explain *x, size_t peak_step, const uint64_t *res,
                        const struct ms_replay_result *rp)
{
	enum { SHOWN = 12, TOP = 6 };
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
			char r[32];
			if (res[k])
				ms_format_size(r, sizeof(r), res[k]);
			else
				snprintf(r, sizeof(r), "-");
			printf("    %5zu %12llu %15s %12llu %15s%s\n",
			       k + 1 + x->steps_before_trace,
			       (unsigned long long)x->steps[k].first_event,
			       ms_format_size(b, sizeof(b), x->steps[k].peak_requested),
			       (unsigned long long)x->steps[k].peak_event, r,
			       k + 1 != peak_step ? ""
			       : rp->ended_by_oom ? "  <- the replay's peak, up to its OOM"
			                          : "  <- the peak");
		}
	ms_free(show);
	if (steps_exceed_reserved(x, res, rp))
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

/* One device of t: the explanation as text on stdout or into *jout. */
/* One file's device, as the comparison of several files (ranks) shows it. */
/* Whether the categories at the end hold more than the replay had allocated there (beyond what
 * frees waiting for their streams explain): the file counts blocks the replay did not have. */
static int end_exceeds(const struct ms_explain *e, const struct ms_replay_result *r)
{
	uint64_t alloc = (uint64_t)r->stats.allocated_bytes[0].current;
	return ms_explain_requested(e) > alloc + alloc / 100;
}

/* The growing sites' bytes at the last step they were looked at (growth above), together. */
static uint64_t growing_bytes(const struct ms_explain *x)
{
	uint64_t n = 0;
	for (size_t k = 0; k < x->n_growth; k++)
		n += x->growth[k].bytes_at_last_step;
	return n;
}

/* Of what is live at the end, the growing sites' blocks. */
static uint64_t growing_bytes_at_end(const struct ms_explain *x)
{
	uint64_t n = 0;
	for (size_t k = 0; k < x->n_growth; k++)
		n += x->growth[k].bytes_at_end;
	return n;
}

static uint64_t blocks_of(const struct ms_explain *e)
{
	uint64_t n = 0;
	for (unsigned k = 0; k < MS_CAT_COUNT; k++)
		n += e->cat_blocks[k];
	return n;
}

/*
 * What the program still held at the end of the trace, by category (e: the categories after its
 * last event), and how much of it the sites that grow held: the model's state apart from what
 * grows. Nothing where the replay ran out of memory before the end.
 */
static void print_live_at_end(const struct ms_trace *t, const struct ms_explain *x,
                              const struct ms_explain *e, const struct ms_replay_result *r)
{
	char b[32], b2[32];

	if (r->ended_by_oom)
		return;
	printf("\n  live at the end%s: %s in %llu allocation%s: ",
	       t->cut_short ? " (of the part the file holds: it is cut short)"
	       : t->meta.producer && !strncmp(t->meta.producer, "memsnap-recorder", 16)
	               ? " (a recording runs to the program's exit)"
	               : "",
	       ms_format_size(b, sizeof(b), ms_explain_requested(e)),
	       (unsigned long long)blocks_of(e), blocks_of(e) == 1 ? "" : "s");
	if (!blocks_of(e)) {
		printf("nothing\n");
		return;
	}
	print_cats_line(e, 0);
	if (end_exceeds(e, r))
		printf("    more than the replay had allocated at the end (%s): the file counts "
		       "blocks the replay did not have (an inconsistent or cut trace); not to be "
		       "trusted\n",
		       ms_format_size(b, sizeof(b), (uint64_t)r->stats.allocated_bytes[0].current));
	if (x->n_growth && growing_bytes_at_end(x) <= ms_explain_requested(e))
		printf("    of it, %s from the sites that grow (above; %s at the last step); the "
		       "rest did not grow from step to step\n",
		       ms_format_size(b, sizeof(b), growing_bytes_at_end(x)),
		       ms_format_size(b2, sizeof(b2), growing_bytes(x)));
	else if (x->growth_steps)
		printf("    nothing of it grew from step to step\n");
}

static void json_live_at_end(cJSON *root, const struct ms_explain *x, const struct ms_explain *e,
                             const struct ms_replay_result *r)
{
	cJSON *o, *c;

	if (r->ended_by_oom) {
		cJSON_AddNullToObject(root, "live_at_end");
		return;
	}
	o = cJSON_AddObjectToObject(root, "live_at_end");
	ms_json_u64(o, "bytes", ms_explain_requested(e));
	cJSON_AddBoolToObject(o, "exceeds_allocated", end_exceeds(e, r));
	ms_json_u64(o, "allocations", blocks_of(e));
	c = cJSON_AddObjectToObject(o, "categories");
	for (unsigned k = 0; k < MS_CAT_COUNT; k++)
		if (!ms_explain_cat_told(e, k))
			cJSON_AddNullToObject(c, ms_explain_cat_name(k));
		else
			ms_json_u64(c, ms_explain_cat_name(k), e->cat_bytes[k]);
	if (x->growth_steps) {
		ms_json_u64(o, "growing_sites_bytes_at_last_step", growing_bytes(x));
		ms_json_u64(o, "growing_sites_bytes", growing_bytes_at_end(x));
	} else {
		cJSON_AddNullToObject(o, "growing_sites_bytes_at_last_step");
		cJSON_AddNullToObject(o, "growing_sites_bytes");
	}
}

struct rank_row {
	char label[4200];
	const char *path;
	uint32_t device;
	uint64_t reserved, allocated, parameters;
	int parameters_known, oom, lower_bound;
	int ended_by_oom; /* the replay ran out where the recorded run did not */
	uint64_t oom_event;
};

static int explain_one(struct ms_replay_cli *c, const char *path, const struct ms_trace *t,
                       uint32_t device, const char *label, unsigned jobs, int json, cJSON **jout,
                       struct rank_row *row)
{
	struct ms_replay_result first;
	struct ms_limit_range lim;
	struct ms_explain x, at_oom, at_apeak, at_end;
	struct ms_explain_in in;
	struct ms_whatif_row *rows;
	struct ms_replay_opts wo;
	struct rec *recs;
	uint64_t *sres;
	size_t nrows = ms_whatif_n_default_configs, nrec = 0, k;
	uint64_t reserved, allocated, cached, outside, capacity;
	int outside_how, has_oom, apeak;
	uint64_t outside_mark = 0;
	struct ms_verdict vd;
	char b1[32], b2[32], b3[32];
	ms_status s;

	if (ms_replay_cli_run_reported(c, path, &first, &lim))
		return MS_EXIT_ERROR;
	if (!c->o.limit && first.limit)
		c->o.limit = first.limit;
	reserved = (uint64_t)first.stats.reserved_bytes[0].peak;
	allocated = first.allocated_at_peak_reserved;
	cached = reserved > allocated ? reserved - allocated : 0;
	memset(&in, 0, sizeof(in));
	in.t = t;
	in.device = device;
	in.site_depth = ms_site_depth();
	in.peak_index = first.fullest_at_peak_index;
	in.allocated_at_peak = allocated - first.served_oom_at_peak_reserved;
	if ((s = ms_explain_run(&in, &x)))
		ms_die(MS_EXIT_ERROR, "out of memory");
	outside = outside_at(t, &first, device, in.peak_index, &outside_how, &outside_mark);
	/* what is live at the end, where the replay got there */
	memset(&at_end, 0, sizeof(at_end));
	if (!first.ended_by_oom && t->n_events) {
		struct ms_explain_in e = in;
		e.peak_index = t->n_events - 1;
		e.allocated_at_peak = (uint64_t)first.stats.allocated_bytes[0].current;
		if ((s = ms_explain_run(&e, &at_end)))
			ms_die(MS_EXIT_ERROR, "out of memory");
	}
	/* the allocated peak, where it is another moment with more allocated */
	memset(&at_apeak, 0, sizeof(at_apeak));
	apeak = (uint64_t)first.stats.allocated_bytes[0].peak > allocated;
	if (apeak) {
		in.peak_index = first.peak_allocated_index;
		in.allocated_at_peak = (uint64_t)first.stats.allocated_bytes[0].peak -
		                       first.served_oom_at_peak_allocated;
		if ((s = ms_explain_run(&in, &at_apeak)))
			ms_die(MS_EXIT_ERROR, "out of memory");
	}
	has_oom = first.has_oom;
	memset(&at_oom, 0, sizeof(at_oom));
	if (has_oom) {
		in.peak_index = first.first_oom.index;
		in.allocated_at_peak = first.first_oom.o.allocated;
		in.before = 1; /* what was there when the request failed */
		if ((s = ms_explain_run(&in, &at_oom)))
			ms_die(MS_EXIT_ERROR, "out of memory");
	}
	capacity = c->o.limit ? c->o.limit
	                      : first.device_memory; /*
	                                              * The settings that would have helped,
	                                              * replayed on this trace: every one once (the
	                                              * recorded one is the replay above), then the
	                                              * least memory searched (a dozen replays each)
	                                              * for the recorded one and those that help.
	                                              */
	/* why it ran out, how the job ended, and the limit the verdicts rest on */
	if (ms_verdict_begin(t, &x, &c->o, &first, &lim, &vd))
		ms_die(MS_EXIT_ERROR, "out of memory");
	/* a full device: PyTorch could use what it reserved and what was free, not the device */
	if (vd.oom.device_full)
		capacity = vd.oom.capacity_lo;
	rows = ms_calloc(nrows, sizeof(*rows));
	recs = ms_calloc(nrows, sizeof(*recs));
	if (!rows || !recs)
		ms_die(MS_EXIT_ERROR, "out of memory");
	wo = c->o;
	wo.no_segment_log = 1;
	for (k = 0; k < nrows; k++) {
		rows[k].conf = ms_whatif_default_configs[k];
		rows[k].no_min_memory = 1;
	}
	rows[0].conf = c->o.alloc_conf; /* the settings of the first replay: given, or recorded */
	if ((s = ms_whatif_run(t, &wo, rows + 1, nrows - 1, jobs)))
		ms_die(MS_EXIT_ERROR, "%s",
		       s == MS_ERR_NOMEM ? "out of memory" : "cannot start a thread");
	/* would the job have survived under each (explain/verdict.h) */
	if (ms_verdict_judge_rows(t, &x, &wo, rows + 1, nrows - 1, &vd))
		ms_die(MS_EXIT_ERROR, "out of memory");
	for (k = 1; k < nrows; k++) {
		const struct ms_whatif_row *w = &rows[k];
		uint64_t p;
		int avoids;
		if (w->s)
			continue;
		p = (uint64_t)w->r.stats.reserved_bytes[0].peak;
		avoids = first.has_oom && !w->r.has_oom;
		/* a setting that avoids the OOM, or lowers the peak by 1% or more */
		if (avoids || (!w->r.has_oom && p < reserved && reserved - p >= reserved / 100))
			recs[nrec++] = (struct rec){
			        k, p, avoids, avoids && w->r.missed_ooms_went_on, vd.sv[k - 1]};
	}
	qsort(recs, nrec, sizeof(*recs), rec_cmp);
	{
		/* the least memory: the recorded settings and the helpful ones, searched together
		 */
		struct ms_whatif_row *mins = ms_calloc(nrec + 1, sizeof(*mins));
		if (!mins)
			ms_die(MS_EXIT_ERROR, "out of memory");
		mins[0].conf = rows[0].conf;
		for (k = 0; k < nrec; k++)
			mins[k + 1].conf = rows[recs[k].row].conf;
		if ((s = ms_whatif_run(t, &wo, mins, nrec + 1, jobs)))
			ms_die(MS_EXIT_ERROR, "%s",
			       s == MS_ERR_NOMEM ? "out of memory" : "cannot start a thread");
		if (mins[0].s) { /* the recorded settings could not be replayed again */
			rows[0].s = mins[0].s;
			snprintf(rows[0].err, sizeof(rows[0].err), "%s", mins[0].err);
		} else {
			rows[0].min_memory = mins[0].min_memory;
			for (k = 0; k < nrec; k++)
				rows[recs[k].row].min_memory = mins[k + 1].min_memory;
		}
		ms_whatif_release(mins, nrec + 1);
		ms_free(mins);
	}

	/* each step's most reserved bytes */
	if (!(sres = ms_calloc(x.n_steps ? x.n_steps : 1, sizeof(*sres))))
		ms_die(MS_EXIT_ERROR, "out of memory");
	steps_reserved(t, &wo, &x, sres);

	if (json) {
		cJSON *root = cJSON_CreateObject(), *o, *a;
		uint64_t at = first.fullest_at_peak_index;
		size_t ps = step_of(&x, at);
		cJSON_AddStringToObject(root, "trace", path);
		cJSON_AddNumberToObject(root, "device", device);
		cJSON_AddBoolToObject(root, "trace_cut_short", t->cut_short);
		/* the one line a postmortem opens with (explain/verdict.h) */
		cJSON_AddStringToObject(root, "verdict", vd.headline);
		o = cJSON_AddObjectToObject(root, "peak");
		ms_json_u64(o, "event", at);
		ms_json_u64(o, "bytes", reserved);
		ms_json_u64(o, "allocated_bytes", allocated);
		ms_json_u64(o, "reserved_first_event", first.peak_reserved_index);
		if (at < t->n_events && t->events[at].t_ns && t->events[0].t_ns)
			cJSON_AddNumberToObject(o, "time_s",
			                        (double)(t->events[at].t_ns - t->events[0].t_ns) /
			                                1e9);
		else /* the trace records no times */
			cJSON_AddNullToObject(o, "time_s");
		if (ps)
			cJSON_AddNumberToObject(o, "step", (double)(ps + x.steps_before_trace));
		else
			cJSON_AddNullToObject(o, "step");
		const char *ann = open_annotation(t, at);
		if (ann)
			cJSON_AddStringToObject(o, "annotation", ann);
		else
			cJSON_AddNullToObject(o, "annotation");
		cJSON_AddBoolToObject(o, "is_lower_bound", first.rebuilt);
		/* the replay stopped at an OOM the recorded run did not have (exit code 3) */
		cJSON_AddBoolToObject(root, "replay_ended_by_oom", first.ended_by_oom);
		json_cats(root, &x, allocated, first.served_oom_at_peak_reserved, cached, outside,
		          outside_how);
		cJSON_AddStringToObject(root, "outside_pytorch_is",
		                        outside_how == OUTSIDE_MEASURED   ? "measured"
		                        : outside_how == OUTSIDE_RAW_ONLY ? "raw_calls_only"
		                                                          : "not_measured");
		if (apeak) {
			uint64_t ab = (uint64_t)first.stats.allocated_bytes[0].peak;
			size_t as = step_of(&x, first.peak_allocated_index);
			o = cJSON_AddObjectToObject(root, "allocated_peak");
			ms_json_u64(o, "event", first.peak_allocated_index);
			ms_json_u64(o, "allocated_bytes", ab);
			if (as)
				cJSON_AddNumberToObject(o, "step",
				                        (double)(as + x.steps_before_trace));
			else
				cJSON_AddNullToObject(o, "step");
			json_cats(o, &at_apeak, ab, first.served_oom_at_peak_allocated, UINT64_MAX,
			          0, 0);
		} else {
			cJSON_AddNullToObject(root, "allocated_peak");
		}
		o = cJSON_AddObjectToObject(root, "state");
		if (x.parameter_blocks) {
			ms_json_u64(o, "parameter_bytes", x.parameter_bytes);
			ms_json_u64_known(o, "gradient_bytes", !x.gradients_not_told,
			                  x.gradient_bytes);
			ms_json_u64(o, "optimizer_state_bytes", x.optimizer_state_bytes);
		} else { /* not found: no count, rather than a count of 0 */
			cJSON_AddNullToObject(o, "parameter_bytes");
			cJSON_AddNullToObject(o, "gradient_bytes");
			cJSON_AddNullToObject(o, "optimizer_state_bytes");
		}
		cJSON_AddBoolToObject(o, "steps_annotated_on_another_device", x.steps_other_device);
		cJSON_AddBoolToObject(o, "steps_placed_by_time", x.steps_by_time);
		cJSON_AddStringToObject(o, "optimizer", x.optimizer);
		ms_json_u64(o, "optimizer_steps", x.n_optimizer_steps);
		if (x.steps_from[0])
			cJSON_AddStringToObject(root, "steps_from", x.steps_from);
		else
			cJSON_AddNullToObject(root, "steps_from");
		if (x.steps_scope[0])
			cJSON_AddStringToObject(root, "steps_scope", x.steps_scope);
		else
			cJSON_AddNullToObject(root, "steps_scope");
		cJSON_AddBoolToObject(root, "steps_trailing_annotation_dropped",
		                      x.steps_trailing_dropped);
		cJSON_AddBoolToObject(root, "steps_exceed_reserved",
		                      steps_exceed_reserved(&x, sres, &first));
		if (x.why_uncategorized[0])
			cJSON_AddStringToObject(root, "categories_note", x.why_uncategorized);
		else
			cJSON_AddNullToObject(root, "categories_note");
		ms_json_u64(root, "steps_before_trace", x.steps_before_trace);
		a = cJSON_AddArrayToObject(root, "steps");
		for (k = 0; k < x.n_steps; k++) {
			cJSON *st = cJSON_CreateObject();
			cJSON_AddNumberToObject(st, "step", (double)(k + 1 + x.steps_before_trace));
			ms_json_u64(st, "first_event", x.steps[k].first_event);
			ms_json_u64(st, "peak_requested_bytes", x.steps[k].peak_requested);
			ms_json_u64(st, "peak_event", x.steps[k].peak_event);
			if (sres[k])
				ms_json_u64(st, "peak_reserved_bytes", sres[k]);
			else
				cJSON_AddNullToObject(st, "peak_reserved_bytes");
			cJSON_AddItemToArray(a, st);
		}
		/* growth is looked for over 3 steps or more: null where it was not, [] where
		   nothing grew */
		cJSON_AddNumberToObject(root, "growth_steps", (double)x.growth_steps);
		if (x.growth_steps)
			a = cJSON_AddArrayToObject(root, "growth");
		else
			cJSON_AddNullToObject(root, "growth");
		for (k = 0; x.growth_steps && k < x.n_growth; k++) {
			cJSON *g = cJSON_CreateObject();
			json_site(g, &t->syms, x.growth[k].stack, x.growth[k].frame);
			ms_json_u64(g, "bytes_per_step", x.growth[k].bytes_per_step);
			cJSON_AddNumberToObject(g, "steps", x.growth[k].steps);
			ms_json_u64(g, "first_event", x.growth[k].first_event);
			ms_json_u64(g, "bytes_at_last_step", x.growth[k].bytes_at_last_step);
			ms_json_u64(g, "bytes_at_end", x.growth[k].bytes_at_end);
			cJSON_AddNumberToObject(g, "blocks_at_first_step",
			                        x.growth[k].blocks_at_first_step);
			cJSON_AddNumberToObject(g, "blocks_at_last_step",
			                        x.growth[k].blocks_at_last_step);
			cJSON_AddItemToArray(a, g);
		}
		json_live_at_end(root, &x, &at_end, &first);
		findings(&x, &first, &t->syms, cJSON_AddObjectToObject(root, "findings"));
		if (has_oom) {
			const struct ms_replay_oom *f = &first.first_oom;
			o = cJSON_AddObjectToObject(root, "oom");
			ms_json_u64(o, "event", f->index);
			cJSON_AddBoolToObject(o, "recorded", f->recorded);
			ms_json_u64(o, "requested_bytes", f->o.requested);
			ms_json_u64(o, "allocated_bytes", f->o.allocated);
			ms_json_u64(o, "reserved_bytes", f->o.reserved);
			ms_json_u64(o, "free_in_reserved_bytes", f->o.free_in_reserved);
			ms_json_u64(o, "largest_free_bytes", f->o.largest_free);
			int fit = fits(f, capacity, &lim);
			if (capacity != UINT64_MAX)
				ms_json_u64(o, "capacity_bytes", capacity);
			else
				cJSON_AddNullToObject(o, "capacity_bytes");
			if (lim.inferred) {
				cJSON *li = cJSON_AddObjectToObject(o, "capacity_inferred");
				ms_json_u64(li, "low_bytes", lim.lo);
				ms_json_u64(li, "high_bytes", lim.hi);
			} else {
				cJSON_AddNullToObject(o, "capacity_inferred");
			}
			if (fit < 0)
				cJSON_AddNullToObject(o, "fits_without_fragmentation");
			else
				cJSON_AddBoolToObject(o, "fits_without_fragmentation", fit);
			ms_json_u64(o, "new_segment_bytes", f->o.alloc_size);
			ms_verdict_json_oom_cause(o, &vd.oom);
			/* a use_mem_pool or a capture was open: the last retry was not made */
			cJSON_AddBoolToObject(o, "cache_kept_by_open_pool_or_capture",
			                      f->o.retry_skipped);
			ms_json_u64(o, "cache_releasable_bytes", f->o.releasable);
			json_cats(o, &at_oom, f->o.allocated, 0, f->o.reserved - f->o.allocated, 0,
			          0);
			json_sites(cJSON_AddArrayToObject(o, "holders"), &t->syms, at_oom.top_live,
			           at_oom.n_top_live);
		} else {
			cJSON_AddNullToObject(root, "oom");
		}
		a = cJSON_AddArrayToObject(root, "recommendations");
		for (k = 0; k < nrec; k++) {
			const struct ms_whatif_row *w = &rows[recs[k].row];
			cJSON *r = cJSON_CreateObject();
			cJSON_AddStringToObject(r, "alloc_conf", w->conf);
			ms_json_u64(r, "peak_reserved_bytes", recs[k].peak);
			cJSON_AddBoolToObject(r, "avoids_oom", recs[k].avoids_oom);
			ms_verdict_json_survival(r, &recs[k].sv);
			cJSON_AddBoolToObject(r, "job_went_on_after_oom", recs[k].went_on);
			if (w->min_memory)
				ms_json_u64(r, "min_memory_bytes", w->min_memory);
			else
				cJSON_AddNullToObject(r, "min_memory_bytes");
			cJSON_AddItemToArray(a, r);
		}
		if (!rows[0].s && rows[0].min_memory)
			ms_json_u64(root, "min_memory_bytes", rows[0].min_memory);
		else
			cJSON_AddNullToObject(root, "min_memory_bytes");
		*jout = root;
	} else {
		uint64_t at = first.fullest_at_peak_index;
		size_t ps = step_of(&x, at);
		if (vd.headline[0]) /* the conclusion first, as the JSON and the page give it */
			printf("%s: %s\n", label, vd.headline);
		if (!reserved && !first.rebuilt) {
			/* nothing to break down: no figure over zero events */
			if (first.has_oom)
				printf("%s: nothing was reserved before the replay ran out of "
				       "memory at event %llu, asking for its first segment: no "
				       "peak "
				       "to break down\n",
				       label, (unsigned long long)first.first_oom.index);
			else
				printf("%s: nothing was reserved: no peak to break down\n", label);
			goto after_breakdown;
		}
		printf("%s: peak %s%s reserved (first at event %llu); at event %llu", label,
		       first.rebuilt ? "at least " : "", ms_format_size(b1, sizeof(b1), reserved),
		       (unsigned long long)first.peak_reserved_index, (unsigned long long)at);
		if (ps) /* steps from repetition may be a model's layers: said as found */
			printf(" (%s %zu of %zu)", x.steps_by_repetition ? "repetition" : "step",
			       ps + x.steps_before_trace, x.n_steps + x.steps_before_trace);
		const char *ann = open_annotation(t, at);
		if (ann)
			printf(" in \"%s\"", ann);
		if (at < t->n_events && t->events[at].t_ns && t->events[0].t_ns)
			printf(", %.3f s in",
			       (double)(t->events[at].t_ns - t->events[0].t_ns) / 1e9);
		printf(", the most allocated while it stood, %s:\n",
		       ms_format_size(b2, sizeof(b2), allocated));
		print_cats(&x, allocated, first.served_oom_at_peak_reserved, cached, outside,
		           outside_how, outside_mark);
	after_breakdown:
		if (first.ended_by_oom)
			printf("  note: the replay ran out of memory at event %llu, where the "
			       "recorded "
			       "run did not (the OOM below): the peak and all of the replay's "
			       "figures "
			       "are up to there\n",
			       (unsigned long long)first.first_oom.index);
		if (t->cut_short)
			printf("  note: the trace is cut short (its file ends early): all of this "
			       "is "
			       "of the part it holds, not of the whole run\n");
		if (x.why_uncategorized[0])
			printf("  note: %s\n", x.why_uncategorized);
		if (apeak) {
			size_t as = step_of(&x, first.peak_allocated_index);
			printf("  the peak of allocated bytes is another moment: %s at event %llu",
			       ms_format_size(b1, sizeof(b1),
			                      (uint64_t)first.stats.allocated_bytes[0].peak),
			       (unsigned long long)first.peak_allocated_index);
			if (as)
				printf(" (%s %zu)", x.steps_by_repetition ? "repetition" : "step",
				       as + x.steps_before_trace);
			printf(":\n    ");
			print_cats_line(&at_apeak, first.served_oom_at_peak_allocated);
		}
		if (x.steps_other_device && x.n_steps)
			printf("  note: the steps are those annotated on other devices (none on "
			       "this one)%s\n",
			       x.steps_by_time
			               ? ", placed among this device's events by their "
			                 "times (a snapshot keeps each device's events apart)"
			               : "");
		if (x.parameter_blocks)
			printf("  model and optimizer (%s): parameters %s, gradients %s, optimizer "
			       "state %s\n",
			       x.optimizer[0] ? x.optimizer : "?",
			       ms_format_size(b1, sizeof(b1), x.parameter_bytes),
			       x.gradients_not_told
			               ? "not told"
			               : ms_format_size(b2, sizeof(b2), x.gradient_bytes),
			       ms_format_size(b3, sizeof(b3), x.optimizer_state_bytes));
		if (x.n_steps) {
			print_steps(&x, ps, sres, &first);
		} else {
			printf("\n  steps: none found (no step annotations, no optimizer steps, no "
			       "allocations repeated evenly)\n");
		}
		if (!x.growth_steps) {
			if (x.n_optimizer_steps && !strcmp(x.steps_from, "optimizer steps"))
				printf("\n  growth from step to step: not looked for (it takes 3 "
				       "optimizer steps; the trace has %zu, in its %zu steps)\n",
				       (size_t)x.n_optimizer_steps, x.n_steps);
			else
				printf("\n  growth from step to step: not looked for (it takes 4 "
				       "steps, or 3 optimizer steps; the trace has %zu step%s)\n",
				       x.n_steps, x.n_steps == 1 ? "" : "s");
		} else {
			printf("\n  growth from step to step:%s\n", x.n_growth ? "" : " none");
			if (x.n_growth && x.n_optimizer_steps < 3 &&
			    !strcmp(x.steps_from, "repetition"))
				printf("    (the steps are from repetition: where they are a "
				       "model's "
				       "layers in one pass, growth is what the pass keeps, such as "
				       "activations for its backward, not a leak)\n");
			for (k = 0; k < x.n_growth; k++) {
				char site[512];
				ms_site_label(&t->syms, x.growth[k].stack, site, sizeof(site));
				printf("    +%s a step over %u steps (%s at the last), first at "
				       "event "
				       "%llu: %s\n",
				       ms_format_size(b1, sizeof(b1), x.growth[k].bytes_per_step),
				       x.growth[k].steps,
				       ms_format_size(b2, sizeof(b2),
				                      x.growth[k].bytes_at_last_step),
				       (unsigned long long)x.growth[k].first_event, site);
				if (x.growth[k].blocks_at_last_step <=
				    x.growth[k].blocks_at_first_step)
					printf("      as many allocations at each step (%u), "
					       "larger: "
					       "growing shapes, not more of them kept\n",
					       x.growth[k].blocks_at_last_step);
				else
					printf("      %u allocation%s at the first step, %u at the "
					       "last: more of them kept each step\n",
					       x.growth[k].blocks_at_first_step,
					       x.growth[k].blocks_at_first_step == 1 ? "" : "s",
					       x.growth[k].blocks_at_last_step);
			}
		}
		print_live_at_end(t, &x, &at_end, &first);
		findings(&x, &first, &t->syms, NULL);
		if (has_oom) {
			const struct ms_replay_oom *f = &first.first_oom;
			printf("\n  out of memory at event %llu%s: %s requested, %s allocated, %s "
			       "reserved\n",
			       (unsigned long long)f->index, f->recorded ? " (recorded too)" : "",
			       ms_format_size(b1, sizeof(b1), f->o.requested),
			       ms_format_size(b2, sizeof(b2), f->o.allocated),
			       ms_format_size(b3, sizeof(b3), f->o.reserved));
			print_cats(&at_oom, f->o.allocated, 0, f->o.reserved - f->o.allocated, 0,
			           OUTSIDE_UNKNOWN, 0);
			if (at_oom.n_top_live) {
				printf("    held by, the largest sites of what was allocated:\n");
				print_sites(&t->syms, at_oom.top_live, at_oom.n_top_live);
			}
			ms_verdict_print_oom_cause(&vd.oom, &vd.death, f->o.reserved, "    ");
			{
				int fit = fits(f, capacity, &lim);
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
				else if (fit &&
				         ms_oom_fit_cause(f, lim.inferred ? lim.lo : capacity) ==
				                 MS_CAUSE_SEGMENT_SIZE) {
					char b4[32], b5[32];
					uint64_t cap = lim.inferred ? lim.lo : capacity;
					printf("    segment size: allocated plus the request (%s) "
					       "fit "
					       "in %s%s, and so did the request beside PyTorch's "
					       "segments (%s free in them), but the new segment it "
					       "asked for (%s) did not fit in the %s left; "
					       "expandable segments grow by 2 MiB pages instead\n",
					       b1, ms_format_size(b2, sizeof(b2), cap),
					       lim.inferred ? ", the inferred limit's lowest" : "",
					       ms_format_size(b3, sizeof(b3),
					                      f->o.free_in_reserved),
					       ms_format_size(b4, sizeof(b4), f->o.alloc_size),
					       ms_format_size(b5, sizeof(b5),
					                      cap > f->o.reserved
					                              ? cap - f->o.reserved
					                              : 0));
				} else if (fit)
					printf("    fragmentation: allocated plus the request (%s) "
					       "fit in "
					       "%s%s; the largest free block was %s\n",
					       b1,
					       ms_format_size(b2, sizeof(b2),
					                      lim.inferred ? lim.lo : capacity),
					       lim.inferred ? ", the inferred limit's lowest" : "",
					       ms_format_size(b3, sizeof(b3), f->o.largest_free));
				else
					printf("    demand: allocated plus the request (%s) exceed "
					       "%s%s: "
					       "no setting can make it fit\n",
					       b1,
					       ms_format_size(b2, sizeof(b2),
					                      lim.inferred ? lim.hi : capacity),
					       lim.inferred ? ", the inferred limit's highest"
					                    : "");
			}
		}
		printf("\n  what to change (each replayed on this trace%s%s%s%s%s):\n",
		       c->o.limit ? ", limit " : "",
		       c->o.limit ? ms_format_size(b1, sizeof(b1), c->o.limit) : "",
		       !nrec                 ? ""
		       : first.alloc_conf[0] ? "; each in place of \""
		                             : "; each in place of the default settings",
		       nrec && first.alloc_conf[0] ? first.alloc_conf : "",
		       nrec && first.alloc_conf[0] ? "\", whatif --configs tries combinations"
		       : nrec                      ? ", whatif --configs tries combinations"
		                                   : "");
		if (rows[0].s)
			printf("    the recorded settings could not be replayed: %s\n",
			       rows[0].err);
		else if (!nrec && first.has_oom && first.first_oom.o.retry_skipped)
			printf("    no setting tried avoids the OOM (%zu tried: memsnap whatif "
			       "lists them): the cache kept while the use_mem_pool or capture "
			       "was open is the cause (above)\n",
			       nrows - 1);
		else if (!nrec && first.has_oom && lim.inferred)
			printf("    no setting tried avoids the OOM under the inferred limit (%zu "
			       "tried: memsnap whatif lists them); the job's real limit, anywhere "
			       "from %s to %s, may differ (--limit sets it)\n",
			       nrows - 1, ms_format_size(b1, sizeof(b1), lim.lo),
			       ms_format_size(b2, sizeof(b2), lim.hi));
		else if (!nrec && first.has_oom) {
			printf("    no setting tried avoids the OOM (%zu tried: memsnap whatif "
			       "lists them): the job needs less memory, or more than it had\n",
			       nrows - 1);
			/* an OOM of fragmentation, and yet no setting helps: the demand later on */
			size_t hk = SIZE_MAX;
			for (k = 0; k < x.n_steps; k++)
				if (hk == SIZE_MAX ||
				    x.steps[k].peak_requested > x.steps[hk].peak_requested)
					hk = k;
			if (hk != SIZE_MAX && capacity && x.steps[hk].peak_requested > capacity)
				printf("    the job holds %s of allocations at once later on "
				       "(step %zu, event %llu), more than %s: past this OOM it "
				       "runs out whatever the setting\n",
				       ms_format_size(b1, sizeof(b1), x.steps[hk].peak_requested),
				       hk + 1 + x.steps_before_trace,
				       (unsigned long long)x.steps[hk].peak_event,
				       ms_format_size(b2, sizeof(b2), capacity));
		} else if (!nrec)
			printf("    no setting tried lowers the peak (%zu tried: memsnap whatif "
			       "lists "
			       "them)\n",
			       nrows - 1);
		for (k = 0; k < nrec; k++) {
			const struct ms_whatif_row *w = &rows[recs[k].row];
			uint64_t p = recs[k].peak;
			if (recs[k].sv.survives == MS_SURVIVES_NO &&
			    (!k || recs[k - 1].sv.survives != MS_SURVIVES_NO))
				printf("    %s would not have saved the job:\n",
				       k ? "these"
				         : "none does: these lower the peak or get past the "
				           "recorded OOM, but");
			printf("    %s\n      peak reserved %s (%s%s)%s", w->conf,
			       ms_format_size(b1, sizeof(b1), p), p > reserved ? "+" : "-",
			       ms_format_size(b2, sizeof(b2),
			                      p > reserved ? p - reserved : reserved - p),
			       !recs[k].avoids_oom ? ""
			       : first.first_oom.recorded
			               ? ", gets past the recorded OOM"
			               : ", gets past the OOM of the replay under this "
			                 "limit");
			if (c->o.limit && p > c->o.limit)
				printf(" (%s over the limit: PyTorch checks the limit against the "
				       "request, and expandable segments map whole pages past it)",
				       ms_format_size(b2, sizeof(b2), p - c->o.limit));
			if (w->min_memory)
				printf("; least memory that completes %s%s%s",
				       first.rebuilt ? "at least " : "", /* a mid-run start */
				       ms_format_size(b3, sizeof(b3), w->min_memory),
				       w->min_memory > p
				               ? " (more than its peak: under a lower limit "
				                 "the allocator takes other paths, and runs out)"
				       : rows[0].min_memory && w->min_memory > rows[0].min_memory
				               ? " (more than the settings it replaces need)"
				               : "");
			printf("\n      survives: %s: %s", ms_survives_name(recs[k].sv.survives),
			       recs[k].sv.why);
			if (recs[k].sv.survives != MS_SURVIVES_NO && recs[k].sv.margin_known)
				printf("; its allocated peak %s below %s (reserved bytes may "
				       "fill the rest)",
				       ms_format_size(b1, sizeof(b1), recs[k].sv.margin),
				       vd.cap.from == MS_CAP_HELD     ? "what the job held at once"
				       : vd.cap.from == MS_CAP_DEVICE ? "what PyTorch could use"
				                                      : "the limit");
			printf("\n");
		}
		if (!rows[0].s)
			printf("  least memory that completes with %s: %s%s\n",
			       c->o.alloc_conf           ? "the settings given"
			       : first.settings_recorded ? "the recorded settings"
			       : first.expandable_seen   ? "the settings the trace shows"
			                                 : "the default settings (not recorded)",
			       first.rebuilt && rows[0].min_memory ? "at least " : "",
			       rows[0].min_memory
			               ? ms_format_size(b1, sizeof(b1), rows[0].min_memory)
			               : "none found");
		/* listed above: the settings that avoid the OOM or lower the peak as run; under a
		   limit, others may need less memory still (the collector acts only under one) */
		if (!first.has_oom && !c->o.limit)
			printf("  (settings that only need less memory under a limit, such as "
			       "garbage_collection_threshold, are not listed: memsnap whatif "
			       "searches "
			       "the least memory of each)\n");
	}
	ms_whatif_release(rows, nrows);
	ms_free(rows);
	ms_free(recs);
	ms_free(sres);
	ms_explain_release(&at_oom);
	ms_explain_release(&at_apeak);
	ms_explain_release(&at_end);
	snprintf(row->label, sizeof(row->label), "%s", label);
	row->path = path;
	row->device = device;
	row->reserved = reserved;
	row->allocated = allocated;
	row->parameters = x.parameter_bytes;
	row->parameters_known = x.parameter_blocks != 0;
	row->oom = has_oom;
	row->oom_event = has_oom ? first.first_oom.index : 0;
	row->lower_bound = first.rebuilt;
	row->ended_by_oom = first.ended_by_oom;
	ms_explain_release(&x);
	ms_verdict_release(&vd);
	ms_replay_result_release(&first);
	return MS_EXIT_OK;
}

/* Several files (the ranks of a job): each one's peak against the median, and who ran out. */
static void compare(const struct rank_row *rows, size_t n, cJSON *jroot)
{
	uint64_t *peaks = ms_calloc(n, sizeof(*peaks)), median;
	char b1[32], b2[32], b3[32];
	size_t k, n_oom = 0;

	if (!peaks)
		ms_die(MS_EXIT_ERROR, "out of memory");
	for (k = 0; k < n; k++)
		peaks[k] = rows[k].reserved;
	median = ms_median_u64(peaks, n);
	ms_free(peaks);
	for (k = 0; k < n; k++)
		n_oom += rows[k].oom;
	if (jroot) {
		cJSON *o = cJSON_AddObjectToObject(jroot, "comparison"), *a;
		ms_json_u64(o, "median_peak_reserved_bytes", median);
		a = cJSON_AddArrayToObject(o, "rows");
		for (k = 0; k < n; k++) {
			cJSON *r = cJSON_CreateObject();
			cJSON_AddStringToObject(r, "trace", rows[k].path);
			cJSON_AddNumberToObject(r, "device", rows[k].device);
			ms_json_u64(r, "peak_reserved_bytes", rows[k].reserved);
			cJSON_AddNumberToObject(
			        r, "against_median",
			        median ? (double)rows[k].reserved / (double)median - 1 : 0);
			ms_json_u64(r, "allocated_bytes", rows[k].allocated);
			if (rows[k].parameters_known)
				ms_json_u64(r, "parameter_bytes", rows[k].parameters);
			else
				cJSON_AddNullToObject(r, "parameter_bytes");
			if (rows[k].oom)
				ms_json_u64(r, "oom_event", rows[k].oom_event);
			else
				cJSON_AddNullToObject(r, "oom_event");
			cJSON_AddBoolToObject(r, "is_lower_bound", rows[k].lower_bound);
			cJSON_AddItemToArray(a, r);
		}
		return;
	}
	{
		size_t files = 0;
		for (k = 0; k < n; k++)
			files += !k || strcmp(rows[k].path, rows[k - 1].path) != 0;
		if (files == n)
			printf("\n%zu traces compared", n);
		else
			printf("\n%zu devices of %zu files compared", n, files);
	}
	printf(": the median peak reserved is %s; ", ms_format_size(b1, sizeof(b1), median));
	if (n_oom)
		printf("%zu of them run%s out of memory\n", n_oom, n_oom == 1 ? "s" : "");
	else
		printf("none runs out of memory\n");
	printf("  %14s %10s %14s %14s  %-12s %s\n", "peak reserved", "vs median", "allocated",
	       "parameters", "OOM", "trace");
	for (k = 0; k < n; k++) {
		char oom[32], vs[32];
		double d = median ? 100.0 * ((double)rows[k].reserved / (double)median - 1) : 0;
		snprintf(vs, sizeof(vs), "%+.1f%%", d);
		if (rows[k].oom)
			snprintf(oom, sizeof(oom), "event %llu",
			         (unsigned long long)rows[k].oom_event);
		else
			snprintf(oom, sizeof(oom), "-");
		printf("  %s%13s %10s %14s %14s  %-12s %s\n", rows[k].lower_bound ? ">" : " ",
		       ms_format_size(b1, sizeof(b1), rows[k].reserved), vs,
		       ms_format_size(b2, sizeof(b2), rows[k].allocated),
		       rows[k].parameters_known ? ms_format_size(b3, sizeof(b3), rows[k].parameters)
		                                : "not found",
		       oom, rows[k].label);
	}
	for (k = 0; k < n; k++)
		if (rows[k].lower_bound) {
			printf("  (>: a trace that starts mid-run, whose peak is at least that)\n");
			break;
		}
}

/* One file, every device it covers: as text, or its JSON into *jout (as for one file alone). */
/* The largest sites of the allocated blocks of an end state, by bytes, into sites[0..n) */
struct end_site {
	char label[256];
	uint64_t bytes, blocks;
};

static size_t end_sites(const struct ms_trace *t, const struct ms_replay_snap *snap,
                        struct end_site *sites, size_t cap)
{
	size_t n = 0, bi = 0;
	for (size_t i = 0; i < snap->n_segs; i++)
		for (uint32_t k = 0; k < snap->segs[i].n_blocks; k++, bi++) {
			const struct ms_block *b = &snap->blocks[bi];
			char label[256];
			size_t j;
			if (b->state != MS_BLOCK_ACTIVE_ALLOCATED)
				continue;
			if (b->stack)
				ms_stack_label(&t->syms, b->stack, label, sizeof(label));
			else
				snprintf(label, sizeof(label), "(no stack recorded)");
			for (j = 0; j < n && strcmp(sites[j].label, label); j++)
				;
			if (j == n && n < cap)
				snprintf(sites[n++].label, sizeof(sites[0].label), "%s", label);
			else if (j == n)
				continue; /* past the sites kept: counted in the totals only */
			sites[j].bytes += b->size;
			sites[j].blocks++;
		}
	for (size_t i = 1; i < n; i++) /* largest first (few: insertion) */
		for (size_t j = i; j > 0 && sites[j].bytes > sites[j - 1].bytes; j--) {
			struct end_site x = sites[j];
			sites[j] = sites[j - 1];
			sites[j - 1] = x;
		}
	return n;
}

/*
 * A snapshot without a trace (history off, enabled="state"), of one device: what its end state
 * tells, and a failed request's verdict where --request gives one (explain/verdict.h).
 */
static int explain_end_state(const struct ms_replay_cli *c, const char *path,
                             const struct ms_trace *t, uint32_t dev, const char *label,
                             uint64_t request, int json, cJSON **jout)
{
	struct ms_replay_result r;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_end_state_verdict v;
	struct end_site sites[64];
	size_t ns;
	char b1[32], b2[32], b3[32], headline[1024];
	ms_status s;

	if ((s = ms_end_state_snap(t, dev, &r, &d))) {
		ms_report(path, s, &d);
		ms_replay_result_release(&r);
		return MS_EXIT_ERROR;
	}
	ms_end_state_judge(&r.snap, request, c->o.limit,
	                   c->o.device_memory ? c->o.device_memory : UINT64_MAX, &v);
	ns = end_sites(t, &r.snap, sites, sizeof(sites) / sizeof(sites[0]));
	ms_end_state_headline(&v, headline, sizeof(headline));
	if (json) {
		cJSON *o = cJSON_CreateObject(), *a;
		cJSON_AddStringToObject(o, "trace", path);
		cJSON_AddStringToObject(o, "verdict", headline);
		cJSON_AddNumberToObject(o, "device", dev);
		cJSON_AddBoolToObject(o, "no_trace", 1);
		ms_json_u64(o, "segments", v.segments);
		ms_json_u64(o, "reserved_bytes", v.reserved);
		ms_json_u64(o, "allocated_bytes", v.allocated);
		ms_json_u64(o, "requested_bytes", v.requested);
		ms_json_u64(o, "free_in_reserved_bytes", v.free_in_reserved);
		ms_json_u64(o, "largest_free_bytes", v.largest_free);
		ms_json_u64(o, "allocations", v.blocks_allocated);
		a = cJSON_AddArrayToObject(o, "sites");
		for (size_t k = 0; k < ns && k < 10; k++) {
			cJSON *x = cJSON_CreateObject();
			cJSON_AddStringToObject(x, "label", sites[k].label);
			ms_json_u64(x, "bytes", sites[k].bytes);
			ms_json_u64(x, "allocations", sites[k].blocks);
			cJSON_AddItemToArray(a, x);
		}
		if (v.has_request) {
			cJSON *q = cJSON_AddObjectToObject(o, "request");
			ms_json_u64(q, "bytes", v.request);
			ms_json_u64(q, "rounded_bytes", v.rounded);
			ms_json_u64(q, "new_segment_bytes", v.segment_needed);
			cJSON_AddBoolToObject(q, "fits_free_block", v.fits_free_block);
			if (v.oom.capacity_hi)
				ms_json_u64(q, "capacity_bytes", v.oom.capacity_hi);
			else
				cJSON_AddNullToObject(q, "capacity_bytes");
			ms_verdict_json_oom_cause(q, &v.oom);
		} else {
			cJSON_AddNullToObject(o, "request");
		}
		*jout = o;
	} else {
		printf("%s: %s\n", label, headline);
		printf("%s: no trace (taken with history off or enabled=\"state\"): the end state "
		       "as "
		       "the snapshot recorded it\n",
		       label);
		printf("  %s allocated in %llu block%s, %s reserved in %llu segment%s, %s of it "
		       "free; "
		       "the largest free block %s\n",
		       ms_format_size(b1, sizeof(b1), v.allocated),
		       (unsigned long long)v.blocks_allocated, v.blocks_allocated == 1 ? "" : "s",
		       ms_format_size(b2, sizeof(b2), v.reserved), (unsigned long long)v.segments,
		       v.segments == 1 ? "" : "s",
		       ms_format_size(b3, sizeof(b3), v.free_in_reserved),
		       ms_format_size((char[32]){0}, 32, v.largest_free));
		printf("  held by, the largest sites of what was allocated:\n");
		for (size_t k = 0; k < ns && k < 5; k++)
			printf("    %10s in %llu allocation%s: %s\n",
			       ms_format_size(b1, sizeof(b1), sites[k].bytes),
			       (unsigned long long)sites[k].blocks, sites[k].blocks == 1 ? "" : "s",
			       sites[k].label);
		if (v.has_request) {
			printf("  a request of %s (%s rounded; a new segment of %s): ",
			       ms_format_size(b1, sizeof(b1), v.request),
			       ms_format_size(b2, sizeof(b2), v.rounded),
			       ms_format_size(b3, sizeof(b3), v.segment_needed));
			if (v.oom.cause)
				printf("%s, against %s\n", ms_oom_cause_name(v.oom.cause),
				       ms_format_size(b1, sizeof(b1), v.oom.capacity_hi));
			else
				printf("undecided: %s\n", v.oom.undecided_because);
		} else {
			printf("  the request that failed is not recorded in such a file: "
			       "--request SIZE "
			       "judges it against this state\n");
		}
		printf("  (no events: peaks, steps, growth and what each setting would have done "
		       "need "
		       "a trace: torch.cuda.memory._record_memory_history or memsnap record)\n");
	}
	ms_replay_result_release(&r);
	return MS_EXIT_OK;
}

/* A trace with end-state segments and no allocation of PyTorch's allocator at all */
static int no_trace(const struct ms_trace *t)
{
	if (!t->n_segs)
		return 0;
	for (size_t i = 0; i < t->n_events; i++)
		if (t->events[i].action == MS_ACT_ALLOC && t->events[i].source == MS_SRC_TORCH)
			return 0;
	return 1;
}

static int explain_file(struct ms_replay_cli *c, const char *path, unsigned jobs, int json,
                        uint64_t request, cJSON **jout, struct rank_row **rows, size_t *nrows,
                        size_t *caprows)
{
	size_t nd, k;
	const struct ms_trace *t;
	struct ms_trace *owned;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_replay_opts base = c->o;
	uint32_t *devs;
	cJSON *byd = NULL;
	int rc = MS_EXIT_OK, oom = 0;
	ms_status s;

	*jout = NULL;
	if ((s = ms_replay_cli_trace_whole(path, &t, &owned, &d))) {
		ms_report(path, s, &d);
		return MS_EXIT_ERROR;
	}
	if (no_trace(t)) {
		/* the end state's devices (--device: that one) */
		uint32_t seen[64];
		size_t ns = 0;
		for (size_t i = 0; i < t->n_segs; i++) {
			size_t j;
			for (j = 0; j < ns && seen[j] != t->segs[i].device; j++)
				;
			if (j == ns && ns < 64 &&
			    (c->device == UINT64_MAX || t->segs[i].device == c->device))
				seen[ns++] = t->segs[i].device;
		}
		if (!ns) {
			ms_error("%s: no segments on device %llu", path,
			         (unsigned long long)c->device);
			ms_trace_free(owned);
			return MS_EXIT_ERROR;
		}
		if (json && ns > 1) {
			*jout = cJSON_CreateObject();
			cJSON_AddStringToObject(*jout, "trace", path);
			byd = cJSON_AddObjectToObject(*jout, "devices");
		}
		for (k = 0; k < ns && rc == MS_EXIT_OK; k++) {
			char label[4200], key[16];
			cJSON *o = NULL;
			if (k && !json)
				putchar('\n');
			rc = explain_end_state(
			        c, path, t, seen[k],
			        ms_replay_cli_label(path, seen[k], ns, label, sizeof(label)),
			        request, json, &o);
			if (o && byd) {
				snprintf(key, sizeof(key), "%u", seen[k]);
				cJSON_AddItemToObject(byd, key, o);
			} else if (o) {
				*jout = o;
			}
		}
		ms_trace_free(owned);
		return rc;
	}
	if (request) {
		ms_error("%s: --request is for a snapshot without a trace: this one records its "
		         "requests",
		         path);
		ms_trace_free(owned);
		return MS_EXIT_USAGE; /* a flag that does not apply to this input */
	}
	if (ms_replay_cli_devices(c, path, "explain", &devs, &nd)) {
		ms_trace_free(owned);
		return MS_EXIT_ERROR;
	}
	if (json && nd > 1) {
		*jout = cJSON_CreateObject();
		cJSON_AddStringToObject(*jout, "trace", path);
		byd = cJSON_AddObjectToObject(*jout, "devices");
	}
	for (k = 0; k < nd && rc == MS_EXIT_OK; k++) {
		char label[4200], key[16];
		cJSON *o = NULL;
		c->o = base;
		c->o.device = devs[k];
		if (k && !json)
			putchar('\n');
		if (ms_grow(rows, caprows, *nrows + 1, sizeof(**rows)))
			ms_die(MS_EXIT_ERROR, "out of memory");
		rc = explain_one(c, path, t, devs[k],
		                 ms_replay_cli_label(path, devs[k], nd, label, sizeof(label)), jobs,
		                 json, &o, &(*rows)[*nrows]);
		if (rc == MS_EXIT_OK)
			oom |= (*rows)[(*nrows)++].ended_by_oom;
		ms_replay_cli_release(c);
		if (o && byd) {
			snprintf(key, sizeof(key), "%u", devs[k]);
			cJSON_AddItemToObject(byd, key, o);
		} else if (o) {
			*jout = o;
		}
	}
	c->o = base;
	ms_free(devs);
	ms_trace_free(owned);
	return rc == MS_EXIT_OK && oom ? MS_EXIT_OOM : rc;
}

int cmd_explain(int argc, const char **argv)
{
	struct ms_replay_cli c;
	int n, json = 0, rc = MS_EXIT_OK;
	uint64_t jobs = 0, request = 0;
	struct ms_opt opts[MS_REPLAY_OPTS_MAX + 3];
	int site_depth = 1;
	struct rank_row *rows = NULL;
	size_t nrows = 0, caprows = 0, k;
	cJSON *files = NULL, *root = NULL;

	ms_replay_cli_init(&c, opts, &json);
	ms_opts_drop(opts, "backend");
	for (k = 0; opts[k].type != MS_OPT_T_END; k++)
		;
	opts[k++] = (struct ms_opt)MS_OPT_U64('j', "jobs", &jobs, "N",
	                                      "threads for the replays (default: CPUs)");
	opts[k++] = (struct ms_opt)MS_OPT_SITE_DEPTH(&site_depth);
	opts[k++] = (struct ms_opt)MS_OPT_SIZE(0, "request", &request, "SIZE",
	                                       "a snapshot without a trace: the request that "
	                                       "failed, judged against its end state");
	opts[k] = (struct ms_opt)MS_OPT_END();
	n = ms_parse_options(argc, argv, opts, usage);
	if (n < 1)
		ms_usage_error(opts, usage, "no trace given");
	ms_replay_cli_check(&c, opts, usage);
	ms_site_depth_set(site_depth, opts, usage);
	if (json && n > 1) {
		root = cJSON_CreateObject();
		files = cJSON_AddArrayToObject(root, "files");
	} /* each file on its own: one that cannot be read is said, and the others go on */
	for (int f = 0; f < n; f++) {
		cJSON *o = NULL;
		int dup = 0, r;
		for (int g = 0; g < f && !dup; g++)
			dup = strcmp(argv[g], argv[f]) == 0;
		if (dup) {
			ms_note("%s is given more than once: explained and compared once", argv[f]);
			continue;
		}
		if (f && !json)
			putchar('\n');
		r = explain_file(&c, argv[f], (unsigned)(jobs > 1024 ? 1024 : jobs), json, request,
		                 &o, &rows, &nrows, &caprows);
		/* an error outranks a replay that ran out of memory */
		if (r != MS_EXIT_OK && rc != MS_EXIT_ERROR)
			rc = r;
		if (o && files)
			cJSON_AddItemToArray(files, o);
		else if (o && (r == MS_EXIT_OK || r == MS_EXIT_OOM))
			root = o;
		else
			cJSON_Delete(o);
	}
	if (n > 1 && nrows > 1)
		compare(rows, nrows, root);
	/* JSON is whole or none: none that leaves out a file that failed (text has gone out file
	   by file, the error line among them) */
	if (json && root && rc != MS_EXIT_ERROR) {
		char *js = cJSON_Print(root);
		if (!js)
			ms_die(MS_EXIT_ERROR, "out of memory");
		puts(js);
		cJSON_free(js);
	}
	cJSON_Delete(root);
	ms_free(rows);
	return rc;
}
