/*
 * What holds a generation job's memory: a device with no optimizer steps and no backward pass,
 * its allocations placed by their lifetimes against the job's forwards (docs/EXPLAIN.md):
 *
 *   weights      made before the first forward and alive at the last forward's start
 *   kv_cache     grows by concatenation: each allocation replaces a smaller one made before
 *                it, freed before the device's next allocation, by the same number of bytes
 *                as the link before or after it (a dynamic cache's torch.cat, token by
 *                token); or kept across two forwards' starts or more and made in a forward
 *                (a module's call, where there are stacks), then released before the end (a
 *                static cache made for a request, a paged cache's blocks); or kept across two
 *                forwards' starts or more by code whose Python frame names a cache (a file or
 *                function with "cache" in its name, outside torch and Python's library)
 *   activations  made from the first forward on, alive at fewer than two forwards' starts
 *   other        the rest: workspaces, inputs, what the job keeps to its end
 *   unplaced     allocated before the trace began
 *
 * The source of a concatenation, once its result is made, is counted as activations until it
 * is freed: the cache is the newer tensor.
 *
 * Forwards are a module's calls where the trace has stacks (an allocation under
 * Module._call_impl after one outside any); without stacks, the links of the KV cache's
 * concatenation chains (one a token; a chain of a token's ids, growing by CHAIN_FLOOR bytes or
 * less, is none), else the steps explain found (repetition, annotations, scopes); stacks with no
 * module's call tell no forwards. Requests are the spans in which their KV cache holds bytes;
 * a concatenation chain begun after the open request's first forward begins the next one, its
 * cache its own where the last one's is still held.
 */
#ifndef MEMSNAP_EXPLAIN_INFERENCE_H
#define MEMSNAP_EXPLAIN_INFERENCE_H

#include <stddef.h>
#include <stdint.h>

#include "explain/explain.h"
#include "memsnap/memsnap.h"

struct ms_life;

struct ms_infer_in {
	const struct ms_trace *t;
	uint32_t device;
	struct ms_life *b; /* categorized in place */
	size_t n;
	int has_stacks;
	/* explain's steps (their first events, ascending) and where they came from */
	const uint64_t *steps;
	size_t n_steps;
	const char *steps_from;
	/* a training job's optimizer steps' first events, ascending (ms_infer_eval_loops) */
	const uint64_t *opt_starts;
	size_t n_opt;
	/* where the job died (its OOM's event) or the trace was cut (its event count); else
	 * MS_LIFE_NONE */
	uint64_t run_end;
};

/*
 * Places the allocations where the device is a generation job's, into x->inference and each
 * allocation's category; x->job becomes "inference". Where it is not (a backward pass, or no
 * forwards to place them by), nothing is placed and x->why_uncategorized says why.
 * @return MS_OK or MS_ERR_NOMEM.
 */
ms_status ms_infer_categorize(const struct ms_infer_in *in, struct ms_explain *x);

/*
 * A training job's evaluation loops: runs of two forwards (module calls) or more with no
 * backward allocation between one's start and the next's, none of whose calls made something
 * still alive when the next training forward starts (an iteration's earlier calls hand their
 * outputs on to its last), and, where the job died or the trace was cut, none holding what was
 * alive at the end (the iteration that never reached its backward; a generation cut
 * mid-request goes on with its chains). Of what a loop makes, the KV cache is placed by two of
 * the rules above (concatenation chains; kept across two of its forwards' starts by code that
 * names a cache: "kept and released" alone is also a validation's outputs kept for a metric);
 * the rest is left to the training rules. Into x->eval_loops with their requests; without
 * stacks, or where the stacks show no backward pass, none are looked for and x->eval_loops_why
 * says why.
 * @return MS_OK or MS_ERR_NOMEM.
 */
ms_status ms_infer_eval_loops(const struct ms_infer_in *in, struct ms_explain *x);

#endif
