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
/* without stacks, the most a concatenation chain may grow by a link and be no cache */
#define CHAIN_FLOOR 128

/* What a stack shows, found once a stack (flags; FLAGS_KNOWN once looked at). */
enum {
	F_CALL = 1,      /* a module's call: Module._call_impl */
	F_BACKWARD = 2,  /* a backward pass: Tensor.backward, torch.autograd */
	F_WORKSPACE = 4, /* a C++ frame of a library's workspace (cuBLAS, cuDNN) */
	F_CACHE = 8,     /* a Python frame of the program's or a library's naming a cache */
	F_PYTHON = 16,   /* a Python frame at all */
	F_GRAPHS = 32,   /* CUDA graphs' code: torch.cuda.graphs, inductor's cudagraph trees */
	FLAGS_KNOWN = 128,
};

struct inf {
	const struct ms_infer_in *in;
	struct ms_explain *x;
	struct ms_explain_inference *r; /* the figures of the forwards looked at */
	uint8_t *flags;                 /* stack id -> F_* */
	uint64_t *starts;               /* forwards' first events, ascending */
	size_t ns, caps;
	/* the span looked at: events [e_lo, e_hi), the allocations made in it among lives
	 * [i_lo, i_hi); opens_trace: its first forward is the trace's */
	uint64_t e_lo, e_hi;
	size_t i_lo, i_hi;
	int opens_trace;
	int by_chains; /* forwards from the concatenation chains (no stacks) */
	/* requests()' running total: the bytes allocated before event total_ev, swept on from
	 * span to span (before_total: those allocated before the trace; index_lives) */
	uint64_t total, total_ev, before_total;
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
		if (ends_with_py(file) || (file[0] == '<' && file[strlen(file) - 1] == '>'))
			fl |= F_PYTHON; /* a file, or code given as a string ("<string>", "<stdin>")
			                 */
		if (strstr(file, "cudagraph_trees.py") || strstr(file, "torch/cuda/graphs.py"))
			fl |= F_GRAPHS;
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
 * The allocation life i replaced, as a concatenation's result replaces its source (NO_LIFE:
 * none): made before it in the span, smaller, freed after its allocation and before the
 * device's next one; the largest of such. With stacks, i is made in a module's call.
 */
static uint32_t replaced(struct inf *f, size_t i)
{
	const struct ms_life *b = f->in->b;
	uint64_t next = f->in->t->n_events, best = 0;
	uint32_t pick = NO_LIFE;

	if (b[i].before || b[i].cat != MS_CAT_UNPLACED)
		return NO_LIFE;
	if (f->in->has_stacks && !(stack_flags(f, b[i].stack) & F_CALL))
		return NO_LIFE;                   /* a cache is written in a forward */
	for (size_t j = i + 1; j < f->in->n; j++) /* the device's next allocation */
		if (!b[j].before) {
			next = b[j].a;
			break;
		}
	for (uint64_t e = b[i].a + 1; e < next; e++) {
		uint32_t k = f->of_event[e];
		const struct ms_life *a;
		if (k == NO_LIFE)
			continue;
		a = &b[k];
		if (a->f != e || a->before || a->a >= b[i].a || a->a < f->e_lo ||
		    a->size >= b[i].size || a->cat != MS_CAT_UNPLACED)
			continue;
		if (a->size > best) {
			best = a->size;
			pick = k;
		}
	}
	return pick;
}

/*
 * Concatenation chains: an allocation B and the one A it replaced (made before B, smaller, freed
 * after B's allocation and before the device's next one; the largest of such); a link whose
 * growth equals the link's before it makes all three the cache's.
 */
static ms_status chains(struct inf *f)
{
	struct ms_life *b = f->in->b;
	size_t n = f->in->n;
	uint64_t *delta, max_delta = 0;

	if (!(delta = ms_calloc(n ? n : 1, sizeof(*delta))))
		return MS_ERR_NOMEM;
	for (size_t i = f->i_lo; i < f->i_hi; i++) {
		uint32_t pick = replaced(f, i);
		if (pick != NO_LIFE) {
			f->pred[i] = pick;
			delta[i] = b[i].size - b[pick].size;
		}
	}
	/* without stacks a token's ids and mask grow by concatenation too (generate's torch.cat):
	   a chain that grows by CHAIN_FLOOR bytes a link or less, or by less than an eighth of the
	   largest chain's links, is not a cache (one token's keys of one layer are key-value
	   heads x head size x dtype size a sequence: 256 bytes or more in the smallest models;
	   its ids 8 bytes a sequence) */
	for (size_t i = f->i_lo; i < f->i_hi && !f->in->has_stacks; i++) {
		uint32_t a = f->pred[i];
		if (a != NO_LIFE && f->pred[a] != NO_LIFE && delta[a] == delta[i] &&
		    delta[i] > max_delta)
			max_delta = delta[i];
	}
	for (size_t i = f->i_lo; i < f->i_hi; i++) {
		uint32_t a = f->pred[i], z;
		if (a == NO_LIFE || f->pred[a] == NO_LIFE || delta[a] != delta[i])
			continue;
		if (!f->in->has_stacks && (delta[i] <= CHAIN_FLOOR || delta[i] < max_delta / 8))
			continue;
		z = f->pred[a];
		if (b[z].cat != MS_CAT_KV_CACHE) { /* a chain's first: its start */
			f->r->kv_concat_chains++;
			b[z].cat = MS_CAT_KV_CACHE;
		}
		b[a].cat = b[i].cat = MS_CAT_KV_CACHE;
	}
	/* each member replaced by the next is the concatenation's source from then on */
	for (size_t i = f->i_lo; i < f->i_hi; i++) {
		uint32_t a = f->pred[i];
		if (a == NO_LIFE || b[i].cat != MS_CAT_KV_CACHE || b[a].cat != MS_CAT_KV_CACHE) {
			f->pred[i] = NO_LIFE;
			continue;
		}
		b[a].until = b[i].a;
		b[a].cat_after = MS_CAT_ACTIVATIONS;
	}
	for (size_t i = f->i_lo; i < f->i_hi; i++)
		f->r->kv_concat_blocks += !b[i].before && b[i].cat == MS_CAT_KV_CACHE;
	ms_free(delta);
	return MS_OK;
}

/*
 * Without stacks, forwards from the KV cache's concatenation chains (chains() first): each link
 * is one token's forward. A request's first chain (the earliest head once the previous
 * request's first chain is all freed: its first layer's keys) gives its forwards, each starting
 * at that chain's link; its other chains (the other layers' keys and values) are its too.
 */
static ms_status starts_from_chains(struct inf *f)
{
	const struct ms_life *b = f->in->b;
	size_t n = f->in->n;
	uint32_t *succ;
	uint64_t ref_end = 0; /* the current request's first chain's last link */
	int any = 0;
	ms_status s = MS_OK;

	if (!(succ = ms_malloc((n ? n : 1) * sizeof(*succ))))
		return MS_ERR_NOMEM;
	memset(succ, 0xff, (n ? n : 1) * sizeof(*succ));
	for (size_t i = 0; i < n; i++)
		if (f->pred[i] != NO_LIFE)
			succ[f->pred[i]] = (uint32_t)i;
	f->ns = 0;
	for (size_t h = 0; h < n && !s; h++) { /* heads in allocation order */
		uint32_t m, last = (uint32_t)h;
		if (b[h].before || b[h].cat != MS_CAT_KV_CACHE || f->pred[h] != NO_LIFE ||
		    succ[h] == NO_LIFE || (any && b[h].a < ref_end))
			continue;
		for (m = (uint32_t)h; m != NO_LIFE; last = m, m = succ[m]) {
			if (ms_grow(&f->starts, &f->caps, f->ns + 1, sizeof(*f->starts))) {
				s = MS_ERR_NOMEM;
				break;
			}
			f->starts[f->ns++] = b[m].a;
		}
		ref_end = b[last].a;
		any = 1;
	}
	ms_free(succ);
	return s;
}

/* Chains that gave no forwards (fewer than two starts): what chains() placed, taken back. */
static void undo_chains(struct inf *f)
{
	for (size_t i = 0; i < f->in->n; i++) {
		f->in->b[i].cat = MS_CAT_UNPLACED;
		f->in->b[i].until = NONE;
	}
	memset(f->pred, 0xff, (f->in->n ? f->in->n : 1) * sizeof(*f->pred));
	f->r->kv_concat_blocks = f->r->kv_concat_chains = 0;
	f->ns = 0;
}

/* The rest of the rules, in inference.h's order. */
static void place(struct inf *f, uint64_t first_forward)
{
	struct ms_life *b = f->in->b;
	uint64_t last_start = f->starts[f->ns - 1], teardown = NONE;
	struct ms_explain_inference *r = f->r;

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
		if (l->before && (l->f == NONE || l->f > last_start))
			r->before_kept_bytes += l->size;
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
		/* (forwards from chains begin mid-forward: a request's inputs and its prompt's
		   first allocations lie before its first, and nothing tells them apart) */
		if (crossed >= 2 && !kept_to_end && !(fl & F_WORKSPACE) && !f->by_chains &&
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
 * The requests: sweeping the span's events, the spans in which the KV cache holds bytes, each
 * from the forward its first cache allocation was made in to the event its cache was all
 * released at; their forwards, the peaks of their prompt's forward and of the rest, and their
 * cache. The span's own peak of requested bytes into *span_peak, first at *span_peak_event.
 */
static ms_status requests(struct inf *f, uint64_t *span_peak, uint64_t *span_peak_event)
{
	const struct ms_life *b = f->in->b;
	struct ms_explain_inference *r = f->r;
	uint64_t total = 0, last_ev = f->e_lo, *kv_at = NULL, *peak = NULL;
	uint64_t *kvr = NULL;    /* each request's KV cache now */
	uint32_t *req_of = NULL; /* life -> its request (NO_LIFE: none) */
	uint8_t *head = NULL;    /* life -> a concatenation chain's first */
	size_t next = 0, capr = 0, capk = 0, cur = SIZE_MAX; /* cur: the newest request open */
	ms_status s = MS_ERR_NOMEM;

	int mid_run = 0;

	if (!(kv_at = ms_calloc(f->ns, sizeof(*kv_at))) ||
	    !(peak = ms_calloc(f->ns, sizeof(*peak))) ||
	    !(req_of = ms_malloc((f->in->n ? f->in->n : 1) * sizeof(*req_of))) ||
	    !(head = ms_calloc(f->in->n ? f->in->n : 1, 1)))
		goto out;
	memset(req_of, 0xff, (f->in->n ? f->in->n : 1) * sizeof(*req_of));
	for (size_t i = f->i_lo; i < f->i_hi; i++)
		if (f->pred[i] != NO_LIFE && f->pred[f->pred[i]] == NO_LIFE)
			head[f->pred[i]] = 1;
	mid_run = f->before_total != 0;
	if (f->total_ev > f->e_lo) { /* spans ascend; a new sweep starts over */
		f->total_ev = 0;
		f->total = f->before_total;
	}
	for (; f->total_ev < f->e_lo; f->total_ev++) { /* alive as the span begins */
		uint32_t k = f->of_event[f->total_ev];
		if (k == NO_LIFE)
			continue;
		if (b[k].a == f->total_ev && !b[k].before)
			f->total += b[k].size;
		else if (b[k].f == f->total_ev)
			f->total -= b[k].size;
	}
	total = f->total;
	*span_peak = total;
	*span_peak_event = f->e_lo;
	for (uint64_t e = f->e_lo; e < f->e_hi; e++) {
		uint32_t k = f->of_event[e], rr = NO_LIFE;
		const struct ms_life *l;
		while (next < f->ns && f->starts[next] <= e) /* steps may start at one event */
			kv_at[next++] = cur != SIZE_MAX ? kvr[cur] : 0; /* before its first alloc */
		if (k == NO_LIFE)
			continue;
		l = &b[k];
		last_ev = e;
		if (l->a == e && !l->before) {
			uint32_t p = f->pred[k];
			if (p != NO_LIFE && b[p].until == e && b[p].f > e && req_of[p] != NO_LIFE &&
			    kvr[req_of[p]] >= b[p].size)
				kvr[req_of[p]] -= b[p].size; /* its source, from now on */
			if (l->cat == MS_CAT_KV_CACHE) {
				size_t fw = forward_of(f, e);
				rr = p != NO_LIFE ? req_of[p] : NO_LIFE;
				/* a new request where none is open, or where a chain begins after
				   the open one's first forward (its cache may still be held: an
				   output kept with it; a trace that starts mid-forward begins the
				   chains of its first request over two) */
				if (rr == NO_LIFE &&
				    (cur == SIZE_MAX ||
				     (head[k] && fw != SIZE_MAX &&
				      fw > forward_of(f, r->requests[cur].first_event) +
				                      (cur == 0 && mid_run && f->opens_trace)))) {
					struct ms_explain_request *q;
					if (ms_grow(&r->requests, &capr, r->n_requests + 1,
					            sizeof(*r->requests)) ||
					    ms_grow(&kvr, &capk, r->n_requests + 1, sizeof(*kvr)))
						goto out;
					q = &r->requests[r->n_requests];
					memset(q, 0, sizeof(*q));
					q->first_event = fw == SIZE_MAX ? e : f->starts[fw];
					q->end_event = NONE;
					kvr[r->n_requests] = 0;
					cur = r->n_requests++;
				}
				if (rr == NO_LIFE)
					rr = (uint32_t)cur;
				req_of[k] = rr;
				kvr[rr] += l->size;
			}
			total += l->size;
		} else if (l->f == e) {
			/* (a cache an earlier span made is that span's) */
			if (ms_life_cat_at(l, e) == MS_CAT_KV_CACHE && !l->before &&
			    l->a >= f->e_lo && (rr = req_of[k]) != NO_LIFE && kvr[rr] >= l->size) {
				kvr[rr] -= l->size;
				if (!kvr[rr] && r->requests[rr].end_event == NONE) {
					r->requests[rr].end_event = e;
					r->requests[rr].released = 1;
					if (rr == cur)
						cur = SIZE_MAX;
				}
			}
			total -= l->size;
		}
		if (rr != NO_LIFE && kvr[rr] > r->requests[rr].kv_peak)
			r->requests[rr].kv_peak = kvr[rr];
		if (next && total > peak[next - 1])
			peak[next - 1] = total;
		if (total > *span_peak) {
			*span_peak = total;
			*span_peak_event = e;
		}
	}
	for (size_t i = 0; i < r->n_requests; i++)
		if (r->requests[i].end_event == NONE)
			r->requests[i].end_event = last_ev;
	for (size_t i = 0; i < r->n_requests; i++) {
		struct ms_explain_request *rq = &r->requests[i];
		size_t k0 = forward_of(f, rq->first_event), k1 = forward_of(f, rq->end_event) + 1,
		       kb;
		/* its forwards end where the next request's begin (its cache may be held on) */
		if (i + 1 < r->n_requests && forward_of(f, rq[1].first_event) + 1 < k1 + 1 &&
		    forward_of(f, rq[1].first_event) != SIZE_MAX)
			k1 = forward_of(f, rq[1].first_event);
		/* a trace that starts mid-run inside its first request: in its first forwards it
		   frees what was allocated before it (the cache's tensors its concatenations
		   replace); a trace that starts between requests frees nothing of it there */
		if (!i && rq->first_event <= f->starts[0] && mid_run && f->opens_trace) {
			size_t k0b = forward_of(f, rq->first_event);
			size_t k2 = (k0b == SIZE_MAX ? 0 : k0b) + 2;
			uint64_t until = k2 < f->ns ? f->starts[k2] : rq->end_event;
			for (size_t j = 0; j < f->in->n && !rq->began_before_trace; j++)
				rq->began_before_trace = b[j].before && b[j].f != NONE &&
				                         b[j].f >= rq->first_event &&
				                         b[j].f < until;
		}
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
		/* the growth a token from the second forward's start to the last's; begun before
		   the trace, from the third's: a trace that starts mid-forward holds the rest of
		   that forward's links as whole tensors (their sources are from before it) */
		kb = k0 + (rq->began_before_trace ? 2 : 1);
		if (k1 >= kb + 2) {
			rq->per_token_told = 1;
			rq->kv_bytes_per_token = ((int64_t)rq->kv_at_last - (int64_t)kv_at[kb]) /
			                         (int64_t)(k1 - 1 - kb);
		}
		/* the only request, its cache made in the first forward and kept, not grown,
		   across all the others: a cache several requests reuse looks the same */
		rq->may_be_several = r->n_requests == 1 && k0 == 0 && k1 == f->ns &&
		                     rq->forwards >= 3 && rq->kv_at_last == rq->kv_after_prompt &&
		                     rq->kv_at_last == rq->kv_peak;
	}
	s = MS_OK;
out:
	ms_free(kv_at);
	ms_free(peak);
	ms_free(kvr);
	ms_free(req_of);
	ms_free(head);
	return s;
}

/* The indices the rules look lives up by: each life's concatenation source, each event's life. */
static ms_status index_lives(struct inf *f)
{
	const struct ms_infer_in *in = f->in;

	f->pred = ms_malloc((in->n ? in->n : 1) * sizeof(*f->pred));
	f->of_event = ms_malloc((in->t->n_events ? in->t->n_events : 1) * sizeof(*f->of_event));
	if (!f->pred || !f->of_event)
		return MS_ERR_NOMEM;
	memset(f->pred, 0xff, (in->n ? in->n : 1) * sizeof(*f->pred));
	memset(f->of_event, 0xff, (in->t->n_events ? in->t->n_events : 1) * sizeof(*f->of_event));
	f->before_total = f->total_ev = 0;
	for (size_t i = 0; i < in->n; i++) {
		const struct ms_life *l = &in->b[i];
		if (l->before)
			f->before_total += l->size;
		if (!l->before)
			f->of_event[l->a] = (uint32_t)i;
		if (l->f != NONE)
			f->of_event[l->f] = (uint32_t)i;
	}
	f->total = f->before_total;
	return MS_OK;
}

ms_status ms_infer_categorize(const struct ms_infer_in *in, struct ms_explain *x)
{
	struct inf f = {.in = in,
	                .x = x,
	                .r = &x->inference,
	                .e_hi = in->t->n_events,
	                .i_hi = in->n,
	                .opens_trace = 1};
	uint64_t first_forward = NONE, pk, pe;
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
	if ((s = index_lives(&f)) || (in->has_stacks && (s = starts_from_calls(&f))))
		goto out;
	if (!in->has_stacks) { /* the KV cache's chains, where it grows by them, give forwards */
		if ((s = chains(&f)) || (s = starts_from_chains(&f)))
			goto out;
		f.by_chains = f.ns >= 2;
		if (!f.by_chains)
			undo_chains(&f);
	}
	if (f.by_chains) {
		x->inference.forwards_from = "concatenation chains";
		first_forward = first_forward_by_lifetimes(&f, f.starts[f.ns - 1]);
		if (first_forward == NONE || first_forward > f.starts[0])
			first_forward = f.starts[0];
	} else if (f.ns >= 2) {
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
	} else if (in->has_stacks && in->n_steps >= 2) {
		/* stacks without a module's call: no model ran under torch.nn, so the steps found
		   are no forwards (a loop of plain tensors) */
		x->why_uncategorized =
		        "the trace has no optimizer steps, and its stacks show no module's call: "
		        "no forwards to place its allocations by (its steps are not a model's)";
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
		        "by (no module's calls in its stacks, no KV cache growing by "
		        "concatenation, "
		        "no steps repeated or marked; a recording with Python stacks tells a "
		        "module's calls: memsnap record --stacks python)";
		s = MS_OK;
		goto out;
	}
	x->inference.first_forward = first_forward;
	x->inference.n_forwards = f.ns;
	for (size_t i = 0; i < in->n && !x->inference.graphs; i++)
		x->inference.graphs = (stack_flags(&f, in->b[i].stack) & F_GRAPHS) != 0;
	if (!f.by_chains && (s = chains(&f)))
		goto out;
	place(&f, first_forward);
	/* a trace that starts after the model was loaded, or while it was: its weights are
	   among what was allocated before it, all or some (where that is more than 1% of those
	   found: the weights' own tolerance) */
	x->inference.weights_not_told =
	        x->inference.before_kept_bytes > x->inference.weight_bytes / 100;
	if ((s = requests(&f, &pk, &pe)))
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

/*
 * An evaluation loop's own rules: of what it makes, the KV cache (chains, or kept across two of
 * its forwards' starts by code that names a cache); the rest is left to the training rules. Not
 * "kept and released" alone: a validation keeps its batches' outputs for a metric the same way.
 */
static void place_eval(struct inf *f)
{
	struct ms_life *b = f->in->b;

	for (size_t i = f->i_lo; i < f->i_hi; i++) {
		struct ms_life *l = &b[i];
		uint8_t fl;
		int kept_on;
		size_t crossed;
		if (l->before || l->cat != MS_CAT_UNPLACED)
			continue;
		fl = stack_flags(f, l->stack);
		if (fl & F_WORKSPACE)
			continue;
		kept_on = l->f == NONE || l->f >= f->e_hi; /* kept past the loop */
		crossed = starts_crossed(f, l->a, kept_on ? NONE : l->f);
		if (crossed < 2)
			continue;
		if (fl & F_CACHE) {
			l->cat = MS_CAT_KV_CACHE;
			f->r->kv_named_blocks++;
		}
	}
}

/* One loop, forwards [k0, k1] of all: its rules, requests and figures into lp. */
static ms_status eval_loop(struct inf *f, const uint64_t *all, size_t n_all, size_t k0, size_t k1,
                           struct ms_explain_eval_loop *lp)
{
	const struct ms_life *b = f->in->b;
	ms_status s;

	memset(lp, 0, sizeof(*lp));
	f->r = &lp->forwards;
	f->r->first_forward = all[k0];
	f->r->forwards_from = "module calls";
	f->r->n_forwards = k1 - k0 + 1;
	if (!(f->r->forward_starts = ms_malloc(f->r->n_forwards * sizeof(*all))))
		return MS_ERR_NOMEM;
	memcpy(f->r->forward_starts, all + k0, f->r->n_forwards * sizeof(*all));
	f->starts = f->r->forward_starts;
	f->ns = f->r->n_forwards;
	f->e_lo = all[k0];
	f->e_hi = k1 + 1 < n_all ? all[k1 + 1] : f->in->t->n_events;
	f->opens_trace = k0 == 0;
	while (f->i_lo < f->in->n && (b[f->i_lo].before || b[f->i_lo].a < f->e_lo))
		f->i_lo++;
	for (f->i_hi = f->i_lo; f->i_hi < f->in->n; f->i_hi++)
		if (!b[f->i_hi].before && b[f->i_hi].a >= f->e_hi)
			break;
	if ((s = chains(f)))
		return s;
	place_eval(f);
	if ((s = requests(f, &lp->peak_requested, &lp->peak_event)))
		return s;
	lp->first_event = f->e_lo;
	lp->end_event = f->e_hi - 1;
	if (k1 + 1 == n_all) { /* the last: to its last allocation or request's end, not a
		                  recording's exit, which frees what it kept */
		lp->end_event = f->e_lo;
		for (size_t i = f->i_lo; i < f->i_hi; i++)
			if (!b[i].before && b[i].a > lp->end_event)
				lp->end_event = b[i].a;
		if (lp->forwards.n_requests &&
		    lp->forwards.requests[lp->forwards.n_requests - 1].end_event > lp->end_event)
			lp->end_event =
			        lp->forwards.requests[lp->forwards.n_requests - 1].end_event;
	}
	return MS_OK;
}

/* Whether an allocation made from event last on continues a concatenation chain of the run
 * begun at event first: it replaced one that replaced another, by the same growth. */
static int goes_on(struct inf *f, uint64_t first, uint64_t last)
{
	const struct ms_life *b = f->in->b;

	f->e_lo = first;
	for (size_t i = 0; i < f->in->n; i++) {
		uint32_t p, q;
		if (b[i].before || b[i].a < last || (p = replaced(f, i)) == NO_LIFE ||
		    (q = replaced(f, p)) == NO_LIFE)
			continue;
		if (b[i].size - b[p].size == b[p].size - b[q].size)
			return 1;
	}
	return 0;
}

/*
 * A forward is training's too where a module's call in it made something still alive at the
 * start of the iteration's last forward (the next one with a backward allocation in its span):
 * the iteration's earlier calls (an encoder before its decoder, teachers before the student, a
 * model before its loss module) hand their outputs on to it. What an evaluation makes is freed
 * before training goes on; kept to the trace's end, or by code that names a cache, it says
 * nothing (a workspace, a cache the next evaluation uses). Where the job died or the trace was
 * cut (at event end; else NONE), the forwards after the last training one whose calls made
 * something alive at end are an iteration that never reached its backward, unless they go on
 * with a concatenation chain (a generation cut mid-request).
 */
static ms_status part_of_iteration(struct inf *f, uint8_t *training, uint64_t end)
{
	const struct ms_infer_in *in = f->in;
	uint64_t *next, nt = NONE; /* each forward's next training forward's start */
	size_t tail = f->ns;       /* the first forward after the last training one */
	int cut_iteration;

	if (!(next = ms_malloc((f->ns ? f->ns : 1) * sizeof(*next))))
		return MS_ERR_NOMEM;
	for (size_t k = f->ns; k-- > 0;) {
		next[k] = nt;
		if (training[k])
			nt = f->starts[k];
		else if (nt == NONE)
			tail = k;
	}
	cut_iteration =
	        end != NONE && tail < f->ns && !goes_on(f, f->starts[tail], f->starts[f->ns - 1]);
	for (size_t i = 0; i < in->n; i++) {
		const struct ms_life *l = &in->b[i];
		size_t k;
		uint8_t fl;
		if (l->before || (k = forward_of(f, l->a)) == SIZE_MAX || training[k])
			continue;
		fl = stack_flags(f, l->stack);
		if (!(fl & F_CALL) || (fl & F_CACHE))
			continue; /* (an input is made before a call; a named cache is kept on) */
		if (next[k] != NONE ? l->f != NONE && l->f > next[k]
		                    : cut_iteration && l->a <= end && (l->f == NONE || l->f > end))
			training[k] = 2; /* (2: not a training forward's start for next[]) */
	}
	ms_free(next);
	return MS_OK;
}

ms_status ms_infer_eval_loops(const struct ms_infer_in *in, struct ms_explain *x)
{
	struct inf f = {.in = in, .x = x};
	uint8_t *training = NULL;
	uint64_t *all = NULL;
	size_t n_all, cap = 0, o = 0, n_bw = 0;
	int any_backward = 0, graphs = 0;
	ms_status s = MS_ERR_NOMEM;

	x->eval_loops_looked = 0;
	if (!in->has_stacks) {
		x->eval_loops_why = "the trace has no stacks: a forward (a module's call) and a "
		                    "backward pass cannot be told from its allocations";
		return MS_OK;
	}
	if (!(f.flags = ms_calloc(ms_symtab_nstacks(&in->t->syms) + 1, 1)))
		return MS_ERR_NOMEM;
	if ((s = starts_from_calls(&f))) {
		ms_free(f.starts);
		goto out;
	}
	all = f.starts;
	n_all = f.ns;
	f.starts = NULL;
	s = MS_ERR_NOMEM;
	if (!(training = ms_calloc(n_all ? n_all : 1, 1)))
		goto out;
	/* a forward is training's where a backward allocation or an optimizer step lies between
	   its start and the next forward's: one under Tensor.backward, or one without a Python
	   frame in a trace with stacks (made off Python's thread: the autograd engine's, whose
	   allocations carry no frames) */
	f.starts = all;
	f.ns = n_all;
	for (size_t i = 0; i < in->n; i++) {
		const struct ms_life *l = &in->b[i];
		size_t k;
		uint8_t fl;
		if (l->before)
			continue;
		fl = stack_flags(&f, l->stack);
		if ((fl & F_PYTHON) && !(fl & F_BACKWARD))
			continue;
		n_bw++;
		if ((k = forward_of(&f, l->a)) != SIZE_MAX)
			training[k] = 1;
	}
	any_backward = n_bw != 0;
	if (!any_backward) {
		x->eval_loops_why = "the trace's stacks show no backward pass: its training "
		                    "forwards cannot be told from evaluation";
		s = MS_OK;
		goto out;
	}
	if ((s = index_lives(&f)) || (s = part_of_iteration(&f, training, in->run_end)))
		goto out;
	f.starts = NULL;
	f.ns = 0;
	x->eval_loops_looked = 1;
	for (size_t i = 0; i < in->n && !graphs; i++)
		graphs = (stack_flags(&f, in->b[i].stack) & F_GRAPHS) != 0;
	for (size_t k = 0; k < n_all;) {
		size_t k1 = k, start = k;
		if (training[k]) {
			k++;
			continue;
		}
		while (k1 + 1 < n_all && !training[k1 + 1])
			k1++;
		k = k1 + 1;
		if (k1 == start) /* one forward: nothing of a loop to tell by */
			continue;
		if (ms_grow(&x->eval_loops, &cap, o + 1, sizeof(*x->eval_loops))) {
			s = MS_ERR_NOMEM;
			goto out;
		}
		x->n_eval_loops = ++o;
		if ((s = eval_loop(&f, all, n_all, start, k1, &x->eval_loops[o - 1])))
			goto out;
		x->eval_loops[o - 1].forwards.graphs = graphs;
	}
	f.starts = NULL; /* the last loop's own forwards: x owns them */
	s = MS_OK;
out:
	f.starts = NULL;
	ms_free(all);
	ms_free(training);
	ms_free(f.flags);
	ms_free(f.pred);
	ms_free(f.of_event);
	return s;
}
