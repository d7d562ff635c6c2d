/*
 * What holds a trace's memory: each allocation of one device placed in a category by its
 * lifetime against the program's optimizer steps and by its stack, the steps, and the sites
 * whose memory grows from step to step. The rules, in the order they are tried (docs/EXPLAIN.md):
 *
 *   optimizer_state  allocated inside an optimizer step and alive at its end
 *   gradients        alive at the start of an optimizer step, allocated outside the optimizer
 *                    steps since the program began, and the size of a parameter (a block each:
 *                    PyTorch allocates a gradient of its parameter's size)
 *   parameters       alive from before the first optimizer step through the last, allocated by
 *                    torch.nn code (module construction, .to(), .cuda()), and with a gradient of
 *                    its size at some step (buffers and frozen weights have none: other)
 *   activations      what an iteration allocates and frees before the next optimizer step
 *   other            the rest of what is kept across steps: workspaces, inputs, caches, leaks
 *   unplaced         live at the peak but allocated before the trace began
 *
 * Optimizer steps are the phases PyTorch's optimizers annotate ("Optimizer.step#AdamW.step",
 * in a snapshot's external_annotations; memsnap's Python recorder writes the same). A trace
 * without them gets steps from step annotations, scopes or repetition where it has them, and
 * no category but unplaced (ms_explain.why_uncategorized says so).
 */
#ifndef MEMSNAP_EXPLAIN_EXPLAIN_H
#define MEMSNAP_EXPLAIN_EXPLAIN_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/user_cats.h"
#include "memsnap/memsnap.h"

struct ms_trace;

enum ms_explain_cat {
	MS_CAT_PARAMETERS,
	MS_CAT_GRADIENTS,
	MS_CAT_OPTIMIZER_STATE,
	MS_CAT_ACTIVATIONS,
	MS_CAT_OTHER,
	MS_CAT_UNPLACED,
	MS_CAT_WEIGHTS,  /* a generation job's (inference.h) */
	MS_CAT_KV_CACHE, /* a generation job's */
	MS_CAT_COUNT
};
/* The categories in the order reports list them: a training job's, a generation job's, then
 * those of both. */
extern const unsigned ms_explain_cat_order[MS_CAT_COUNT];
/* "parameters", ..., as the JSON names them. */
const char *ms_explain_cat_name(unsigned cat);

struct ms_explain_in {
	const struct ms_trace *t;
	uint32_t device;
	/* the event whose state is broken down (a replay's reserved peak: replay.h), and the
	 * allocated bytes the replay had then (the categories' sum is checked against them) */
	uint64_t peak_index;
	uint64_t allocated_at_peak;
	int before; /* the state before event peak_index, not after it (an OOM: the failed request)
	             */
	/* sites at this depth (replay/site.h, ms_site_chain): 0 or 1, the site frame alone */
	uint32_t site_depth;
	/* optional: the category of each allocation whose alloc event is in cat_query (ascending)
	 * into cat_of (enum ms_explain_cat; -1: no allocation of the device there) */
	const uint64_t *cat_query;
	size_t n_cat_query;
	int8_t *cat_of;
	/* optional: the device's allocations with their lifetimes, made once for several passes
	 * over one trace and device (ms_explain_lives_new); NULL: the pass finds them itself */
	const struct ms_explain_lives *lives;
	/* the state's categories and top_live only: no steps' peaks, growth, activations' or
	 * copies' sites (a second moment of a trace whose peak is broken down whole) */
	int state_only;
	/* growth looked for at the step starts inside events [growth_from, growth_to) only (a
	 * window: analysis/window.h); both 0: all of them */
	uint64_t growth_from, growth_to;
	/* optional: the user's categories (analysis/user_cats.h), which win over the rules: an
	 * allocation one of them matches is counted in it (user_bytes), not in cat_bytes, and
	 * cat_of gives MS_CAT_COUNT + its index */
	const struct ms_user_cats *user_cats;
};

/* The allocations of one device of a trace with their lifetimes, shared read-only by passes. */
struct ms_explain_lives;
/* @return MS_OK or MS_ERR_NOMEM. Free with ms_explain_lives_free. */
ms_status ms_explain_lives_new(const struct ms_trace *t, uint32_t device,
                               struct ms_explain_lives **out);
void ms_explain_lives_free(struct ms_explain_lives *l);

/* A step: from its first event to the next step's, and its peak of allocated bytes. */
struct ms_explain_step {
	uint64_t first_event;
	uint64_t peak_requested; /* the bytes the trace's allocations asked for, at their highest */
	uint64_t peak_event;
};

/* A site whose memory kept across steps grows (a leak, or a cache that only fills). */
struct ms_explain_growth {
	uint32_t stack; /* a stack of the site's blocks (its site frame names the site) */
	uint32_t frame; /* the site frame, at a site depth past 1 the deepest of the site's frames
	                   (0: the blocks have no stack) */
	uint64_t bytes_per_step;
	uint32_t steps; /* steps over which it grew (ms_explain.growth_steps were looked at) */
	uint64_t first_event; /* the first allocation of what it holds at the last step */
	uint64_t bytes_at_last_step;
	/* its blocks at the first step looked at and at the last: as many at both, the same
	   allocations grew in size (larger shapes), not in number (a leak keeps more of them) */
	uint32_t blocks_at_first_step, blocks_at_last_step;
	uint64_t bytes_at_end; /* of its blocks, those never freed: live at the end */
};

/* A site's allocations alive at the peak. */
struct ms_explain_site {
	uint32_t stack, frame; /* as in ms_explain_growth */
	uint64_t bytes, blocks;
	/* made in backward: stack and frame are where their tensors were made in forward (the
	 * snapshot's forward_frames, PyTorch's main branch) */
	int backward;
};
#define MS_EXPLAIN_TOP_SITES 5

/* A request of a generation job: a span in which its KV cache holds bytes. */
struct ms_explain_request {
	uint64_t first_event; /* its first forward's first event */
	/* the trace starts mid-run inside it (its first request, with blocks from before the
	 * trace): its first forward may be a token's, not the prompt's; prompt figures unknown */
	int began_before_trace;
	uint64_t end_event; /* the event its cache was all released at (released) or the last */
	int released;       /* 0: the trace ends with its cache held */
	uint32_t forwards;  /* forwards begun in it: the prompt's, then one a token */
	/* the bytes its allocations asked for, at their highest: in its first forward (the
	 * prompt), in the rest (decoding; 0 with one forward) */
	uint64_t prompt_peak, decode_peak;
	uint64_t kv_peak;         /* its KV cache at its largest */
	uint64_t kv_after_prompt; /* ... at its second forward's start (0: one forward) */
	uint64_t kv_at_last;      /* ... at its last forward's start */
	int per_token_told;       /* 3 forwards or more (4 begun before the trace) */
	/* (kv_at_last - kv_after_prompt) / (forwards - 2); begun before the trace, from the third
	 * forward's start */
	int64_t kv_bytes_per_token;
	/* the job's (or loop's) only request, its cache made in the first forward and kept, not
	 * grown, through the last: one request or several reusing the cache (a static cache kept
	 * across requests, a server's blocks made once) cannot be told apart */
	int may_be_several;
};

/* What explain found of a generation job (inference.h). */
struct ms_explain_inference {
	uint64_t first_forward; /* event */
	size_t n_forwards;
	const char *forwards_from; /* "module calls", or the steps' steps_from */
	/* the job captured CUDA graphs (their code is in its stacks): a forward replayed from one
	 * allocates nothing, so the forwards counted are the eager ones */
	int graphs;
	uint64_t weight_bytes, weight_blocks;
	/* allocated before the trace and alive at the last forward's start (unplaced) */
	uint64_t before_kept_bytes;
	/* bytes kept from before the trace: it starts after the model was loaded, or while it was,
	 * its weights all or some among those (weights not told; weight_bytes: those made in it) */
	int weights_not_told;
	/* KV cache allocations by rule: concatenation chains, kept and released, named a cache */
	uint64_t kv_concat_blocks, kv_kept_blocks, kv_named_blocks;
	uint64_t kv_concat_chains;
	struct ms_explain_request *requests;
	size_t n_requests;
	uint64_t *forward_starts; /* the forwards' first events, n_forwards of them (owned) */
};

/* A training job's evaluation loop (inference.h): its forwards, KV cache and requests as a
 * generation job's (no weights: the parameters are the training rules'), and its span. */
struct ms_explain_eval_loop {
	struct ms_explain_inference forwards;
	uint64_t first_event, end_event;     /* its first forward's first event; its last event */
	uint64_t peak_requested, peak_event; /* the bytes allocations asked for, at their highest */
};

/* The allocations of one compile context (torch.compile's region) in the state broken down. */
struct ms_explain_context {
	uint32_t name; /* string id; 0: "N/A", outside compiled regions */
	int before;    /* allocated before the trace: its context not known (name 0) */
	uint64_t bytes, blocks;
};

/* A category's own peak over the trace: its bytes at their highest, first at event. */
struct ms_explain_cat_peak {
	uint64_t bytes, event;
};

struct ms_explain {
	/* "training" (optimizer steps), "inference" (forwards, no backward, no optimizer steps:
	 * inference.h) or "" (neither told) */
	const char *job;
	uint64_t cat_bytes[MS_CAT_COUNT]; /* live at peak_index, by category */
	uint64_t cat_blocks[MS_CAT_COUNT];
	/* each category's own peak over the whole trace (not computed where state_only) */
	struct ms_explain_cat_peak cat_peak[MS_CAT_COUNT];
	struct ms_explain_inference inference; /* job "inference" */
	/* job "training": its evaluation loops, where looked for (eval_loops_looked; else
	 * eval_loops_why says why) */
	struct ms_explain_eval_loop *eval_loops;
	size_t n_eval_loops;
	int eval_loops_looked;
	const char *eval_loops_why;
	/* the state by compile context, most bytes first; n_contexts 0 where no allocation of the
	 * device's trace was made in a compiled region (a trace recorded without
	 * compile_context=True has none) */
	struct ms_explain_context *contexts;
	size_t n_contexts;
	/* the user's categories (ms_explain_in.user_cats, borrowed): at the state, and each at its
	 * own peak */
	const struct ms_user_cats *user_cats;
	size_t n_user;
	uint64_t user_bytes[MS_USER_CATS_MAX], user_blocks[MS_USER_CATS_MAX];
	struct ms_explain_cat_peak user_peak[MS_USER_CATS_MAX];
	/* the sets found, whole: what the model and the optimizer hold (gradients: the most alive
	 * at one optimizer step's start) */
	uint64_t parameter_bytes, gradient_bytes, optimizer_state_bytes;
	uint64_t parameter_blocks, gradient_blocks, optimizer_state_blocks;
	size_t n_optimizer_steps;
	char optimizer[64]; /* the first optimizer step's name ("AdamW"), or "" */
	/* "step annotations", "user_metadata" (the allocations' metadata, numbered: its prefix in
	 * steps_scope), "optimizer steps", "record_function scopes" (a scope the program
	 * repeats, steps_scope), "repetition" (the same allocations made evenly
	 * spaced: a loop's iterations, or in a trace of one pass a model's layers) or "" (none) */
	const char *steps_from;
	int steps_by_repetition;
	/* a last step annotation after the last optimizer step was not counted (torch.profiler's
	 * step() after a loop opens one more ProfilerStep scope) */
	int steps_trailing_dropped;
	char steps_scope[128];  /* the scope's name, or the metadata's prefix ("step") */
	int steps_other_device; /* the steps are annotated on other devices (none on this one) */
	int steps_by_time;      /* ... in a snapshot: placed among this device's events by time */
	/* parameters found, yet no block of a parameter's size alive at an optimizer step's start:
	 * the gradients are views of larger buffers (FSDP2's reduce-scatter output, DDP's buckets
	 * with gradient_as_bucket_view); gradient_bytes is no figure then */
	int gradients_not_told;
	const char *why_uncategorized; /* "" or why parameters etc. could not be told */
	int has_stacks;
	struct ms_explain_step *steps;
	size_t n_steps;
	/* steps whose annotations lie before the trace's first event (a ring buffer that wrapped
	   keeps them, not their events): left out of steps; the first of steps is number
	   steps_before_trace + 1 */
	size_t steps_before_trace;
	struct ms_explain_growth *growth; /* largest bytes_per_step first */
	/* the step starts growth was looked for at: the optimizer steps' (3 or more), else those
	 * of the steps after the first (3 or more); 0: not looked for */
	size_t growth_steps;
	size_t n_growth;
	/* the sites whose activations hold the most at the peak, largest first */
	struct ms_explain_site top_activations[MS_EXPLAIN_TOP_SITES];
	size_t n_top_activations;
	/* the sites whose allocations, of every category, hold the most in the state */
	struct ms_explain_site top_live[MS_EXPLAIN_TOP_SITES];
	size_t n_top_live;
	/*
	 * Copies alive at the peak: blocks made by a copying operator (clone, .to(), .contiguous(),
	 * a dtype or device conversion), told by the C++ frames of their stacks; copies_told is 0
	 * where no stack has C++ frames (Python stacks alone cannot tell a copy). The largest
	 * sites of them, largest first.
	 */
	int copies_told;
	uint64_t copy_bytes, copy_blocks;
	struct ms_explain_site top_copies[MS_EXPLAIN_TOP_SITES];
	size_t n_top_copies;
};

/* Whether category cat could be told in x: a training job's need optimizer steps, and
 * parameters, gradients and optimizer state the parameters found too (their bytes are otherwise
 * in other or unplaced, and a 0 would be a count of nothing); a generation job's (weights,
 * kv_cache, activations, other) need its forwards; unplaced always is. */
int ms_explain_cat_told(const struct ms_explain *x, unsigned cat);

/* The categories' bytes at the state broken down (the user's among them), together: the bytes its
 * allocations asked for. */
uint64_t ms_explain_requested(const struct ms_explain *x);

/* A generation job's forward event i lies in (1-based; 0: before the first), and its request
 * (1-based; 0: none holds it). */
size_t ms_explain_forward_of(const struct ms_explain *x, uint64_t i);
size_t ms_explain_request_of(const struct ms_explain *x, uint64_t i);
/* A training job's evaluation loop event i lies in (1-based; 0: none). */
size_t ms_explain_eval_loop_of(const struct ms_explain *x, uint64_t i);

/* @return MS_OK or MS_ERR_NOMEM. Release with ms_explain_release. */
ms_status ms_explain_run(const struct ms_explain_in *in, struct ms_explain *out);
void ms_explain_release(struct ms_explain *x);

#endif
