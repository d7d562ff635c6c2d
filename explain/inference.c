/* What holds a generation job's memory: weights, KV cache, activations (inference.h). */
#include "explain/inference.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "explain/lives.h"
#include "parse/trace.h"

#define NONE    MS_LIFE_NONE
#define NO_LIFE UINT32_MAX

/* What a stack shows, found once a stack (flags; FLAGS_KNOWN once looked at). */
enum {
	F_CALL = 1,      /* a module's call: Module._call_impl */
	F_BACKWARD = 2,  /* a backward pass: Tensor.backward, torch.autograd */
	F_WORKSPACE = 4, /* a C++ frame of a library's workspace (cuBLAS, cuDNN) */
	F_CACHE = 8,     /* a Python frame of the program's or a library's naming a cache */
	FLAGS_KNOWN = 128,
};

struct inf {
	const struct ms_infer_in *in;
	struct ms_explain *x;
	uint8_t *flags;   /* stack id -> F_* */
	uint64_t *starts; /* forwards' first events, ascending */
	size_t ns, caps;
	uint32_t *pred;     /* life -> the life its concatenation replaced (NO_LIFE: none) */
	uint32_t *of_event; /* event -> the life allocated or freed there (NO_LIFE: none) */
};

static int ends_with_func(const char *name, const char *fn)
{
	size_t n = strlen(name), k = strlen(fn);
	return n >= k && strcmp(name + n - k, fn) == 0 && (n == k || name[n - k - 1] == '.');
}

static int has_cache_word(const char *s)
{
	static const char w[] = "cache";

	for (; *s; s++) {
		size_t k = 0;
		while (k < sizeof(w) - 1 && tolower((unsigned char)s[k]) == w[k])
			k++;
		if (k == sizeof(w) - 1)
			return 1;
	}
	return 0;
}

static int ends_with_py(const char *file)
{
	size_t n = strlen(file);
	return n > 3 && strcmp(file + n - 3, ".py") == 0;
}

/* A Python file of torch's or of Python's own library: past an installation's last
 * "-packages/", the torch package; else a "/torch/" directory (a source tree) or Python's
 * lib/python3.x (a virtual environment under /opt/torch/ holds other packages too). */
static int torch_or_stdlib(const char *file)
{
	const char *p = NULL, *q = file;

	while ((q = strstr(q, "-packages/")))
		p = q += 10;
	if (p)
		return !strncmp(p, "torch/", 6);
	return strstr(file, "/torch/") || strstr(file, "/lib/python3");
}

static uint8_t stack_flags(struct inf *f, uint32_t stack)
{
	const struct ms_symtab *y = &f->in->t->syms;
	const uint32_t *fr;
	size_t n;
	uint8_t fl = FLAGS_KNOWN;

	if (!stack)
		return FLAGS_KNOWN;
	if (f->flags[stack])
		return f->flags[stack];
	fr = ms_symtab_get_stack(y, stack, &n);
	for (size_t i = 0; i < n; i++) {
		const struct ms_frame *fm = &y->frames[fr[i]];
		const char *name = ms_symtab_get_str(y, fm->name)->s;
		const char *file = ms_symtab_get_str(y, fm->file)->s;
		const char *base = strrchr(file, '/');
		if (ends_with_func(name, "_call_impl") ||
		    ends_with_func(name, "_wrapped_call_impl"))
			fl |= F_CALL;
		if ((ends_with_func(name, "backward") &&
		     (strstr(file, "torch/_tensor.py") || strstr(file, "/torch/autograd/"))) ||
		    ends_with_func(name, "_engine_run_backward"))
			fl |= F_BACKWARD;
		if (!file[0] && strstr(name, "::") && strstr(name, "orkspace"))
			fl |= F_WORKSPACE;
		if (ends_with_py(file) && !torch_or_stdlib(file) &&
		    (has_cache_word(name) || has_cache_word(base ? base + 1 : file)))
			fl |= F_CACHE;
	}
	f->flags[stack] = fl;
	return fl;
}

/* Forwards' starts from module calls: an allocation under a module's call after one outside
 * any (allocations without a stack say nothing). */
static ms_status starts_from_calls(struct inf *f)
{
	int prev_in = 0;

	for (size_t i = 0; i < f->in->n; i++) {
		const struct ms_life *b = &f->in->b[i];
		uint8_t fl;
		if (b->before || !b->stack)
			continue;
		fl = stack_flags(f, b->stack);
		if ((fl & F_CALL) && !prev_in) {
			if (ms_grow(&f->starts, &f->caps, f->ns + 1, sizeof(*f->starts)))
				return MS_ERR_NOMEM;
			f->starts[f->ns++] = b->a;
		}
		prev_in = (fl & F_CALL) != 0;
	}
	return MS_OK;
}

/* The forwards' starts in (a, f): those an allocation alive from a to f is alive at. */
static size_t starts_crossed(const struct inf *f, uint64_t a, uint64_t fr)
{
	size_t lo = 0, hi = f->ns, first, end;

	while (lo < hi) { /* the first start past a */
		size_t mid = (lo + hi) / 2;
		if (f->starts[mid] <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	first = lo;
	if (fr == NONE)
		return f->ns - first;
	hi = f->ns;
	while (lo < hi) { /* the first start at or past fr */
		size_t mid = (lo + hi) / 2;
		if (f->starts[mid] < fr)
			lo = mid + 1;
		else
			hi = mid;
	}
	end = lo;
	return end - first;
}

/*
 * Without stacks, the first forward: the first allocation freed before the last forward's
 * start during whose life no allocation kept to that start was made (what loading a model
 * frees, an fp32 copy converted to bf16, had the kept copy made in its life).
 */
static uint64_t first_forward_by_lifetimes(const struct inf *f, uint64_t last_start)
{
	const struct ms_life *b = f->in->b;
	size_t n = f->in->n;
	uint64_t *kept = NULL, found = NONE;
	size_t nk = 0;

	if (!(kept = ms_malloc((n ? n : 1) * sizeof(*kept))))
		return NONE;
	for (size_t i = 0; i < n; i++)
		if (!b[i].before && (b[i].f == NONE || b[i].f > last_start))
			kept[nk++] = b[i].a;
	for (size_t i = 0; i < n && found == NONE; i++) {
		size_t lo = 0, hi = nk;
		if (b[i].before || b[i].f == NONE || b[i].f > last_start)
			continue;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (kept[mid] <= b[i].a)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == nk || kept[lo] > b[i].f)
			found = b[i].a;
	}
	ms_free(kept);
	return found;
}

/*
 * Concatenation chains: an allocation B and the one A it replaced (made before B, smaller, freed
 * after B's allocation and before the device's next one; the largest of such); a link whose
 * growth equals the link's before it makes all three the cache's.
 */
static ms_status chains(struct inf *f)
{
	const struct ms_trace *t = f->in->t;
	struct ms_life *b = f->in->b;
	size_t n = f->in->n;
	uint64_t *delta;

	if (!(delta = ms_calloc(n ? n : 1, sizeof(*delta))))
		return MS_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		uint64_t next = t->n_events, best = 0;
		uint32_t pick = NO_LIFE;
		if (b[i].before)
			continue;
		for (size_t j = i + 1; j < n; j++) /* the device's next allocation */
			if (!b[j].before) {
				next = b[j].a;
				break;
			}
		if (f->in->has_stacks && !(stack_flags(f, b[i].stack) & F_CALL))
			continue; /* a cache is written in a forward */
		for (uint64_t e = b[i].a + 1; e < next; e++) {
			uint32_t k = f->of_event[e];
			const struct ms_life *a;
			if (k == NO_LIFE)
				continue;
			a = &b[k];
			if (a->f != e || a->before || a->a >= b[i].a || a->size >= b[i].size)
				continue;
			if (a->size > best) {
				best = a->size;
				pick = k;
			}
		}
		if (pick != NO_LIFE) {
			f->pred[i] = pick;
			delta[i] = b[i].size - b[pick].size;
		}
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t a = f->pred[i], z;
		if (a == NO_LIFE || f->pred[a] == NO_LIFE || delta[a] != delta[i])
			continue;
		z = f->pred[a];
		if (b[z].cat != MS_CAT_KV_CACHE) { /* a chain's first: its start */
			f->x->inference.kv_concat_chains++;
			b[z].cat = MS_CAT_KV_CACHE;
		}
		b[a].cat = b[i].cat = MS_CAT_KV_CACHE;
	}
	/* each member replaced by the next is the concatenation's source from then on */
	for (size_t i = 0; i < n; i++) {
		uint32_t a = f->pred[i];
		if (a == NO_LIFE || b[i].cat != MS_CAT_KV_CACHE || b[a].cat != MS_CAT_KV_CACHE) {
			f->pred[i] = NO_LIFE;
			continue;
		}
		b[a].until = b[i].a;
		b[a].cat_after = MS_CAT_ACTIVATIONS;
	}
	for (size_t i = 0; i < n; i++)
		f->x->inference.kv_concat_blocks += b[i].cat == MS_CAT_KV_CACHE;
	ms_free(delta);
	return MS_OK;
}

/* The rest of the rules, in inference.h's order. */
static void place(struct inf *f, uint64_t first_forward)
{
	struct ms_life *b = f->in->b;
	uint64_t last_start = f->starts[f->ns - 1], teardown = NONE;
	struct ms_explain_inference *r = &f->x->inference;

	/* the program's teardown: from the first free of its weights (a recording that runs to
	   the program's exit frees them, and what was kept with them, there); what is released
	   then was not released by the job */
	for (size_t i = 0; i < f->in->n; i++) {
		const struct ms_life *l = &b[i];
		if (!l->before && l->a < first_forward && l->f != NONE && l->f > last_start &&
		    l->f < teardown)
			teardown = l->f;
	}

	for (size_t i = 0; i < f->in->n; i++) {
		struct ms_life *l = &b[i];
		uint8_t fl = stack_flags(f, l->stack);
		size_t crossed;
		int kept_to_end;
		if (l->before || l->cat == MS_CAT_KV_CACHE)
			continue;
		/* freed in the teardown: kept by the job to its end */
		kept_to_end = l->f == NONE || l->f >= teardown;
		crossed = starts_crossed(f, l->a, kept_to_end ? NONE : l->f);
		if (crossed >= 2 && (fl & F_CACHE) && !(fl & F_WORKSPACE)) {
			l->cat = MS_CAT_KV_CACHE;
			r->kv_named_blocks++;
			continue;
		}
		if (l->a < first_forward) {
			if ((l->f == NONE || l->f > last_start) && !(fl & F_WORKSPACE)) {
				l->cat = MS_CAT_WEIGHTS;
				r->weight_bytes += l->size;
				r->weight_blocks++;
			} else {
				l->cat = MS_CAT_OTHER;
			}
			continue;
		}
		if (crossed >= 2 && !kept_to_end && !(fl & F_WORKSPACE) &&
		    (!f->in->has_stacks || (fl & F_CALL))) {
			l->cat = MS_CAT_KV_CACHE;
			r->kv_kept_blocks++;
			continue;
		}
		l->cat = crossed >= 2 || kept_to_end ? MS_CAT_OTHER : MS_CAT_ACTIVATIONS;
	}
}

/* The forward whose start is the last at or before event i (SIZE_MAX: none). */
static size_t forward_of(const struct inf *f, uint64_t i)
{
	size_t lo = 0, hi = f->ns;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (f->starts[mid] <= i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : SIZE_MAX;
}

/*
 * The requests: sweeping the events, the spans in which the KV cache holds bytes, each from the
 * forward its first cache allocation was made in to the event its cache was all released at;
 * their forwards, the peaks of their prompt's forward and of the rest, and their cache.
 */
static ms_status requests(struct inf *f)
{
	const struct ms_trace *t = f->in->t;
	const struct ms_life *b = f->in->b;
	struct ms_explain_inference *r = &f->x->inference;
	uint64_t kv = 0, total = 0, last_ev = 0, *kv_at = NULL, *peak = NULL;
	size_t next = 0, capr = 0;
	struct ms_explain_request *q = NULL;
	ms_status s = MS_ERR_NOMEM;

	int mid_run = 0;

	if (!(kv_at = ms_calloc(f->ns, sizeof(*kv_at))) ||
	    !(peak = ms_calloc(f->ns, sizeof(*peak))))
		goto out;
	for (size_t i = 0; i < f->in->n; i++)
		if (b[i].before) {
			total += b[i].size;
			mid_run = 1;
		}
	for (uint64_t e = 0; e < t->n_events; e++) {
		uint32_t k = f->of_event[e];
		const struct ms_life *l;
		while (next < f->ns && f->starts[next] <= e) /* steps may start at one event */
			kv_at[next++] = kv;                  /* before its first allocation */
		if (k == NO_LIFE)
			continue;
		l = &b[k];
		last_ev = e;
		if (l->a == e && !l->before) {
			uint32_t p = f->pred[k];
			if (p != NO_LIFE && b[p].until == e && b[p].f > e)
				kv -= b[p].size; /* its source, from now on */
			if (l->cat == MS_CAT_KV_CACHE) {
				if (!q) { /* (not kv: a chain's source was just taken off it) */
					size_t fw = forward_of(f, e);
					if (ms_grow(&r->requests, &capr, r->n_requests + 1,
					            sizeof(*r->requests)))
						goto out;
					q = &r->requests[r->n_requests++];
					memset(q, 0, sizeof(*q));
					q->first_event = fw == SIZE_MAX ? e : f->starts[fw];
					q->end_event = NONE;
				}
				kv += l->size;
			}
			total += l->size;
		} else if (l->f == e) {
			if (ms_life_cat_at(l, e) == MS_CAT_KV_CACHE)
				kv -= l->size;
			total -= l->size;
			if (q && !kv) {
				q->end_event = e;
				q->released = 1;
				q = NULL;
			}
		}
		if (q && kv > q->kv_peak)
			q->kv_peak = kv;
		if (next && total > peak[next - 1])
			peak[next - 1] = total;
	}
	if (q)
		q->end_event = last_ev;
	for (size_t i = 0; i < r->n_requests; i++) {
		struct ms_explain_request *rq = &r->requests[i];
		size_t k0 = forward_of(f, rq->first_event), k1 = forward_of(f, rq->end_event) + 1;
		/* a trace that starts mid-run, in its first request: what came before is not known
		 */
		if (!i && rq->first_event <= f->starts[0] && mid_run)
			rq->began_before_trace = 1;
		if (k0 == SIZE_MAX && k1 == 0)
			continue;   /* all before the first forward: no forwards of its own */
		if (k0 == SIZE_MAX) /* a cache made before the first forward: from that one */
			k0 = 0;
		rq->forwards = (uint32_t)(k1 - k0);
		rq->prompt_peak = peak[k0];
		for (size_t k = k0 + 1; k < k1; k++)
			if (peak[k] > rq->decode_peak)
				rq->decode_peak = peak[k];
		rq->kv_after_prompt = k1 - k0 >= 2 ? kv_at[k0 + 1] : 0;
		rq->kv_at_last = kv_at[k1 - 1];
		if (rq->forwards >= 3) {
			rq->per_token_told = 1;
			rq->kv_bytes_per_token =
			        ((int64_t)rq->kv_at_last - (int64_t)rq->kv_after_prompt) /
			        (int64_t)(rq->forwards - 2);
		}
	}
	s = MS_OK;
out:
	ms_free(kv_at);
	ms_free(peak);
	return s;
}

ms_status ms_infer_categorize(const struct ms_infer_in *in, struct ms_explain *x)
{
	struct inf f = {.in = in, .x = x};
	uint64_t first_forward = NONE;
	ms_status s = MS_ERR_NOMEM;

	memset(&x->inference, 0, sizeof(x->inference));
	x->inference.first_forward = NONE;
	if (!(f.flags = ms_calloc(ms_symtab_nstacks(&in->t->syms) + 1, 1)))
		return MS_ERR_NOMEM;
	for (size_t i = 0; i < in->n; i++)
		if (stack_flags(&f, in->b[i].stack) & F_BACKWARD) {
			x->why_uncategorized =
			        "the trace has a backward pass but no optimizer steps (PyTorch "
			        "annotates each Optimizer.step in a snapshot recorded with "
			        "history; "
			        "memsnap's Python recorder marks them too): parameters, gradients, "
			        "optimizer state and activations cannot be told apart";
			s = MS_OK;
			goto out;
		}
	if (in->has_stacks && (s = starts_from_calls(&f)))
		goto out;
	if (f.ns >= 2) {
		x->inference.forwards_from = "module calls";
		first_forward = f.starts[0];
	} else if (f.ns == 1) {
		/* a single forward: what it keeps may be saved for a backward the trace does not
		 * hold (autograd on), or a generation's one step; nothing tells them apart */
		x->why_uncategorized =
		        "the trace has no optimizer steps and a single forward (one module call at "
		        "the top): what it keeps cannot be told from activations saved for a "
		        "backward the trace does not hold";
		s = MS_OK;
		goto out;
	} else if (in->n_steps >= 2) {
		f.ns = 0;
		if (ms_grow(&f.starts, &f.caps, in->n_steps, sizeof(*f.starts)))
			goto nomem;
		memcpy(f.starts, in->steps, in->n_steps * sizeof(*f.starts));
		f.ns = in->n_steps;
		x->inference.forwards_from = in->steps_from;
		first_forward = first_forward_by_lifetimes(&f, f.starts[f.ns - 1]);
		if (first_forward == NONE)
			first_forward = f.starts[0];
	} else {
		x->why_uncategorized =
		        "the trace has no optimizer steps and no forwards to place its allocations "
		        "by (no module's calls in its stacks, no steps repeated or marked)";
		s = MS_OK;
		goto out;
	}
	x->inference.first_forward = first_forward;
	x->inference.n_forwards = f.ns;
	f.pred = ms_malloc((in->n ? in->n : 1) * sizeof(*f.pred));
	f.of_event = ms_malloc((in->t->n_events ? in->t->n_events : 1) * sizeof(*f.of_event));
	if (!f.pred || !f.of_event)
		goto nomem;
	memset(f.pred, 0xff, (in->n ? in->n : 1) * sizeof(*f.pred));
	memset(f.of_event, 0xff, (in->t->n_events ? in->t->n_events : 1) * sizeof(*f.of_event));
	for (size_t i = 0; i < in->n; i++) {
		const struct ms_life *l = &in->b[i];
		if (!l->before)
			f.of_event[l->a] = (uint32_t)i;
		if (l->f != NONE)
			f.of_event[l->f] = (uint32_t)i;
	}
	if ((s = chains(&f)))
		goto out;
	place(&f, first_forward);
	if ((s = requests(&f)))
		goto out;
	x->job = "inference";
	x->inference.forward_starts = f.starts; /* kept: the forwards' first events */
	f.starts = NULL;
	s = MS_OK;
	goto out;
nomem:
	s = MS_ERR_NOMEM;
out:
	ms_free(f.flags);
	ms_free(f.starts);
	ms_free(f.pred);
	ms_free(f.of_event);
	return s;
}
