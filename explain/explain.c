/* What holds a trace's memory, by category, step and growing site (explain.h). */
#include "explain/explain.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/hash.h"
#include "explain/inference.h"
#include "explain/lives.h"
#include "parse/trace.h"
#include "replay/site.h"

#define NONE MS_LIFE_NONE

static const char *const cat_names[MS_CAT_COUNT] = {
        "parameters", "gradients", "optimizer_state", "activations",
        "other",      "unplaced",  "weights",         "kv_cache",
};

const unsigned ms_explain_cat_order[MS_CAT_COUNT] = {
        MS_CAT_PARAMETERS, MS_CAT_GRADIENTS,   MS_CAT_OPTIMIZER_STATE, MS_CAT_WEIGHTS,
        MS_CAT_KV_CACHE,   MS_CAT_ACTIVATIONS, MS_CAT_OTHER,           MS_CAT_UNPLACED,
};

const char *ms_explain_cat_name(unsigned cat)
{
	return cat < MS_CAT_COUNT ? cat_names[cat] : "?";
}

int ms_explain_cat_told(const struct ms_explain *x, unsigned cat)
{
	int inference = x->job && strcmp(x->job, "inference") == 0;

	if (cat == MS_CAT_UNPLACED)
		return 1;
	if (inference)
		return (cat == MS_CAT_WEIGHTS &&
		        !(x->inference.weights_not_told && !x->inference.weight_blocks)) ||
		       cat == MS_CAT_KV_CACHE || cat == MS_CAT_ACTIVATIONS || cat == MS_CAT_OTHER;
	if (cat == MS_CAT_KV_CACHE) /* a training job's evaluation loops' */
		return x->n_eval_loops != 0;
	if (cat == MS_CAT_WEIGHTS)
		return 0;
	if (cat == MS_CAT_ACTIVATIONS || cat == MS_CAT_OTHER)
		return x->n_optimizer_steps != 0; /* without them all is unplaced */
	if (cat == MS_CAT_GRADIENTS && x->gradients_not_told)
		return 0;
	return x->n_optimizer_steps && x->parameter_blocks;
}

struct window {
	uint64_t s, e; /* first event inside, first event after */
};

struct ex {
	const struct ms_trace *t;
	const struct ms_explain_in *in;
	struct ms_explain *x;
	struct ms_life *b;
	size_t n, cap;
	struct window *w;
	size_t nw, capw;
	uint64_t *bounds; /* steps' first events */
	size_t nb, capb;
	int8_t *nn_of;   /* stack id -> 1 if a frame is torch.nn's, 0 if not, -1 not known yet */
	int8_t *user_of; /* stack id -> 1 if its site is the program's code, 0 if not, -1 not yet */
	int8_t *copy_of; /* stack id -> 1 if a copying operator made it, 0 if not, -1 not known */
	int8_t *ucat_of; /* stack id -> the user's category (-1: none); NULL without them */
	uint32_t *site_of; /* stack id -> its site key (site_frame) + 1, 0 not known yet */
	/* at a site depth past 1: chains of frames (by their hash) -> key, and each key's deepest
	 * frame */
	struct ms_u64map chain_key;
	uint32_t *chain_frame;
	size_t n_chains, cap_chains;
};

/*
 * The device's allocations with their lifetimes: from the alloc to the program's free. Those
 * made before the trace began are alive from its start: until their free, or, never freed, to
 * the end, where the trace's end state holds them (a trace that starts mid-run).
 */
struct ms_explain_lives {
	struct ms_life *b;
	size_t n, cap;
	int has_stacks;
};

static ms_status add_life(struct ms_explain_lives *l, const struct ms_life *b)
{
	if (ms_grow(&l->b, &l->cap, l->n + 1, sizeof(*l->b)))
		return MS_ERR_NOMEM;
	l->b[l->n] = *b;
	l->b[l->n++].until = NONE; /* no category change, until a pass finds one */
	return MS_OK;
}

static ms_status lifetimes(const struct ms_trace *t, uint32_t device, struct ms_explain_lives *x)
{
	struct ms_u64map live = MS_U64MAP_INIT, gone = MS_U64MAP_INIT;
	ms_status s = MS_OK;

	for (size_t i = 0; i < t->n_events && !s; i++) {
		const struct ms_event *e = &t->events[i];
		uint64_t *k, idx;
		if (e->device != device || e->source != MS_SRC_TORCH)
			continue;
		if (e->action == MS_ACT_ALLOC) {
			struct ms_life b = {.size = e->size,
			                    .a = i,
			                    .f = NONE,
			                    .stack = e->stack,
			                    .cat = MS_CAT_UNPLACED};
			x->has_stacks |= e->stack != 0;
			if (!(s = add_life(x, &b)))
				s = ms_u64map_put(&live, e->addr, x->n - 1);
		} else if (e->action == MS_ACT_FREE_REQUESTED) {
			if ((k = ms_u64map_get(&live, e->addr))) {
				x->b[*k].f = i;
				ms_u64map_del(&live, e->addr, &idx);
				/* 2: freed in the trace; its completion may wait past the end */
				s = ms_u64map_put(&gone, e->addr, 2);
			} else if (!(k = ms_u64map_get(&gone, e->addr)) || *k == 2) {
				/* allocated before the trace: alive from its start (once: a second
				 * free with no alloc between says nothing more) */
				struct ms_life b = {.size = e->size,
				                    .f = i,
				                    .stack = e->stack,
				                    .cat = MS_CAT_UNPLACED,
				                    .before = 1};
				if (!(s = add_life(x, &b)))
					s = ms_u64map_put(&gone, e->addr, 1);
			}
		} else if (e->action == MS_ACT_FREE_COMPLETED &&
		           (k = ms_u64map_get(&live, e->addr))) {
			/* a completion with no request before it (a trace that records only
			 * completions): the free is here */
			x->b[*k].f = i;
			ms_u64map_del(&live, e->addr, &idx);
			s = ms_u64map_put(&gone, e->addr, 2);
		}
	}
	/* alive at the end but never allocated in the trace: from before it, never freed */
	for (size_t g = 0; g < t->n_segs && !s; g++) {
		const struct ms_segment *sg = &t->segs[g];
		if (sg->device != device)
			continue;
		for (uint32_t j = 0; j < sg->n_blocks && !s; j++) {
			const struct ms_block *k = &t->blocks[t->seg_block0[g] + j];
			struct ms_life b = {.size = k->requested_size ? k->requested_size : k->size,
			                    .f = NONE,
			                    .stack = k->stack,
			                    .cat = MS_CAT_UNPLACED,
			                    .before = 1};
			uint64_t *how = ms_u64map_get(&gone, k->addr);
			/* a block freed in the trace whose free still waits on its streams
			   (record_stream) is that block, not one from before the trace */
			if (k->state == MS_BLOCK_INACTIVE || ms_u64map_get(&live, k->addr) ||
			    (how && (*how == 1 || k->state == MS_BLOCK_ACTIVE_PENDING_FREE)))
				continue;
			s = add_life(x, &b);
		}
	}
	ms_u64map_release(&live);
	ms_u64map_release(&gone);
	return s;
}

ms_status ms_explain_lives_new(const struct ms_trace *t, uint32_t device,
                               struct ms_explain_lives **out)
{
	struct ms_explain_lives *l = ms_calloc(1, sizeof(*l));
	ms_status s;

	*out = NULL;
	if (!l)
		return MS_ERR_NOMEM;
	if ((s = lifetimes(t, device, l))) {
		ms_explain_lives_free(l);
		return s;
	}
	*out = l;
	return MS_OK;
}

void ms_explain_lives_free(struct ms_explain_lives *l)
{
	if (!l)
		return;
	ms_free(l->b);
	ms_free(l);
}

/* The pass's own copy of the lifetimes: its categories are written into it. */
static ms_status take_lives(struct ex *x)
{
	struct ms_explain_lives own = {0};
	const struct ms_explain_lives *l = x->in->lives;
	ms_status s;

	if (!l) {
		if ((s = lifetimes(x->t, x->in->device, &own))) {
			ms_free(own.b);
			return s;
		}
		x->b = own.b;
		x->n = own.n;
		x->cap = own.cap;
		x->x->has_stacks = own.has_stacks;
		return MS_OK;
	}
	if (l->n && !(x->b = ms_malloc(l->n * sizeof(*x->b))))
		return MS_ERR_NOMEM;
	if (l->n)
		memcpy(x->b, l->b, l->n * sizeof(*x->b));
	x->n = x->cap = l->n;
	x->x->has_stacks = l->has_stacks;
	return MS_OK;
}

static int starts_with(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

/* The optimizer steps (annotated phases), and the steps' first events. */
/* An allocation's signature for steps_by_repetition: its size and stack. */
struct sig {
	uint64_t first, last; /* events of its first and last allocation */
	uint64_t n;           /* allocations */
	double sum, sumsq;    /* of the gaps between them */
};

/*
 * Steps from the trace's own repetition, where nothing marks them: a training loop makes the
 * same allocations (a size from a stack) once a step, evenly spaced. Signatures allocated four
 * times or more (two gaps alike tell little: a loop over changing shapes repeats a few sizes by
 * chance), at gaps whose spread (their standard deviation) is at most a third of their
 * mean, over half the device's events or more, vote with their count, weighed by it: the count
 * with the most such allocations is the number of steps (a layer's allocations, made several
 * times a step, are not evenly spaced; a pattern of every other step covers half as many). The
 * boundaries are the allocations of the most evenly spaced of them (the earliest of equals); the
 * first step begins with the trace.
 */
static ms_status steps_by_repetition(struct ex *x)
{
	struct ms_u64map idx = MS_U64MAP_INIT, votes = MS_U64MAP_INIT;
	struct sig *s = NULL;
	size_t ns = 0, caps = 0, best = SIZE_MAX;
	uint64_t first_ev = NONE, last_ev = 0, steps = 0, most = 0;
	ms_status st = MS_OK;

	for (size_t i = 0; i < x->t->n_events && !st; i++) {
		const struct ms_event *e = &x->t->events[i];
		uint64_t key, *v;
		if (e->action != MS_ACT_ALLOC || e->device != x->in->device ||
		    e->source != MS_SRC_TORCH)
			continue;
		first_ev = first_ev == NONE ? i : first_ev;
		last_ev = i;
		key = (e->size * 0x9E3779B97F4A7C15ULL ^ (uint64_t)e->stack) >> 1;
		if (!(v = ms_u64map_get(&idx, key))) {
			if (ms_grow(&s, &caps, ns + 1, sizeof(*s)) ||
			    ms_u64map_put(&idx, key, ns)) {
				st = MS_ERR_NOMEM;
				break;
			}
			s[ns++] = (struct sig){i, i, 1, 0, 0};
			continue;
		}
		{
			struct sig *g = &s[*v];
			double gap = (double)(i - g->last);
			g->sum += gap;
			g->sumsq += gap * gap;
			g->last = i;
			g->n++;
		}
	}
	/* the regular ones vote with their count */
	for (size_t k = 0; k < ns && !st && first_ev != NONE; k++) {
		const struct sig *g = &s[k];
		double m, var;
		uint64_t *c;
		if (g->n < 4 || 2 * (g->last - g->first) < last_ev - first_ev)
			continue;
		m = g->sum / (double)(g->n - 1);
		var = g->sumsq / (double)(g->n - 1) - m * m;
		if (var > m * m / 9)
			continue;
		if ((c = ms_u64map_get(&votes, g->n)))
			(*c)++;
		else if (ms_u64map_put(&votes, g->n, 1))
			st = MS_ERR_NOMEM;
	}
	/* each count weighed by the allocations it covers (a pattern every other step loses to
	 * the one every step); the larger of equals (the finer of two regular patterns) */
	for (size_t i = 0; i < votes.cap && !st; i++) {
		uint64_t c = votes.keys[i] - 1, w;
		if (!votes.keys[i])
			continue;
		w = votes.vals[i] * c;
		if (w > most || (w == most && c > steps)) {
			most = w;
			steps = c;
		}
	}
	/* the most even of those with that count */
	for (size_t k = 0; k < ns && steps; k++) {
		const struct sig *g = &s[k];
		double m, var, bm, bvar;
		if (g->n != steps || 2 * (g->last - g->first) < last_ev - first_ev)
			continue;
		m = g->sum / (double)(g->n - 1);
		var = g->sumsq / (double)(g->n - 1) - m * m;
		if (var > m * m / 9)
			continue;
		if (best != SIZE_MAX) {
			bm = s[best].sum / (double)(s[best].n - 1);
			bvar = s[best].sumsq / (double)(s[best].n - 1) - bm * bm;
			if (var / (m * m) >= bvar / (bm * bm))
				continue;
		}
		best = k;
	}
	if (!st && best != SIZE_MAX) {
		/* its allocations, again: the boundaries */
		const struct sig *g = &s[best];
		x->nb = 0;
		if (ms_grow(&x->bounds, &x->capb, g->n, sizeof(*x->bounds))) {
			st = MS_ERR_NOMEM;
		} else {
			x->bounds[x->nb++] = 0;
			for (size_t i = g->first + 1; i <= g->last && x->nb < g->n; i++) {
				const struct ms_event *e = &x->t->events[i];
				if (e->action == MS_ACT_ALLOC && e->device == x->in->device &&
				    e->source == MS_SRC_TORCH &&
				    e->size == x->t->events[g->first].size &&
				    e->stack == x->t->events[g->first].stack)
					x->bounds[x->nb++] = i;
			}
			x->x->steps_from = "repetition";
			x->x->steps_by_repetition = 1;
		}
	}
	ms_free(s);
	ms_u64map_release(&idx);
	ms_u64map_release(&votes);
	return st;
}

/* A step the annotation begins: memsnap.step(), or the scope torch.profiler's step() opens
 * ("ProfilerStep#N"). */
static int step_start(const struct ms_trace *t, const struct ms_annotation *a)
{
	const char *name = ms_symtab_get_str(&t->syms, a->name)->s;

	if (a->kind == MS_ANN_STEP)
		return 1;
	if (a->stage != MS_ANN_START || !starts_with(name, "ProfilerStep#"))
		return 0;
	name += sizeof("ProfilerStep#") - 1;
	return *name && strspn(name, "0123456789") == strlen(name);
}

/* A scope of PyTorch's own (torch.compile's timers, operators): never a program's step. */
static int torch_scope(const char *name)
{
	size_t n = strlen(name), k = sizeof(" (dynamo_timed)") - 1;
	return starts_with(name, "Optimizer.") || starts_with(name, "ProfilerStep#") ||
	       starts_with(name, "aten::") || starts_with(name, "##") ||
	       (n >= k && !strcmp(name + n - k, " (dynamo_timed)"));
}

/*
 * Steps from a scope the program repeats, each entry a step: a record_function (or memsnap
 * phase) name of its own opened 3 times or more, never inside itself, whose scopes hold at least
 * half of the device's allocations; of several, the one holding the most (the loop's body, not a
 * layer inside it). 0 where there is none.
 */
static ms_status steps_by_scope(struct ex *x, int *found)
{
	struct cand {
		uint32_t name;
		size_t starts, allocs;
		uint64_t open; /* the event its open scope began at, or NONE */
		int nested;
	} *c = NULL;
	size_t nc = 0, capc = 0, best = SIZE_MAX, allocs = 0, ai = 0;
	const struct ms_trace *t = x->t;

	*found = 0;
	for (size_t i = 0; i < t->n_events; i++)
		allocs += t->events[i].action == MS_ACT_ALLOC &&
		          t->events[i].device == x->in->device &&
		          t->events[i].source == MS_SRC_TORCH;
	/* the annotations in order, with the allocations between them counted into open scopes */
	for (size_t i = 0; i <= t->n_events; i++) {
		for (; ai < t->n_anns && t->anns[ai].event_index <= i; ai++) {
			const struct ms_annotation *a = &t->anns[ai];
			const char *name = ms_symtab_get_str(&t->syms, a->name)->s;
			size_t k;
			if (a->call != MS_CALL_NONE || a->device != x->in->device ||
			    (a->stage != MS_ANN_START && a->stage != MS_ANN_END) ||
			    torch_scope(name))
				continue;
			for (k = 0; k < nc && c[k].name != a->name; k++)
				;
			if (k == nc) {
				if (a->stage != MS_ANN_START)
					continue;
				if (ms_grow(&c, &capc, nc + 1, sizeof(*c))) {
					ms_free(c);
					return MS_ERR_NOMEM;
				}
				c[nc++] = (struct cand){a->name, 0, 0, NONE, 0};
			}
			if (a->stage == MS_ANN_START) {
				c[k].nested |= c[k].open != NONE;
				c[k].open = a->event_index;
				c[k].starts++;
			} else {
				c[k].open = NONE;
			}
		}
		if (i < t->n_events && t->events[i].action == MS_ACT_ALLOC &&
		    t->events[i].device == x->in->device && t->events[i].source == MS_SRC_TORCH)
			for (size_t k = 0; k < nc; k++)
				c[k].allocs += c[k].open != NONE;
	}
	for (size_t k = 0; k < nc; k++)
		if (c[k].starts >= 3 && !c[k].nested && allocs && 2 * c[k].allocs >= allocs &&
		    (best == SIZE_MAX || c[k].allocs > c[best].allocs))
			best = k;
	if (best != SIZE_MAX) {
		x->nb = 0;
		for (size_t i = 0; i < t->n_anns; i++) {
			const struct ms_annotation *a = &t->anns[i];
			if (a->name != c[best].name || a->stage != MS_ANN_START ||
			    a->device != x->in->device)
				continue;
			if (ms_grow(&x->bounds, &x->capb, x->nb + 1, sizeof(*x->bounds))) {
				ms_free(c);
				return MS_ERR_NOMEM;
			}
			x->bounds[x->nb++] = a->event_index;
		}
		x->x->steps_from = "record_function scopes";
		snprintf(x->x->steps_scope, sizeof(x->x->steps_scope), "%s",
		         ms_symtab_get_str(&t->syms, c[best].name)->s);
		*found = 1;
	}
	ms_free(c);
	return MS_OK;
}

/*
 * Steps from the allocations' user metadata (torch.cuda.memory._set_memory_metadata, attached to
 * every allocation the setting thread makes after it): a string ending in a number ("step 7",
 * "iter=7") that takes 3 or more values of one prefix, the numbers rising, from its first to
 * its last allocation over at least half of the device's allocations (other threads', such as
 * the autograd engine's, carry none, but fall among them). Each value's first allocation begins
 * a step. 0 where there is no such string.
 */
static ms_status steps_by_metadata(struct ex *x, int *found)
{
	const struct ms_trace *t = x->t;
	char prefix[sizeof(x->x->steps_scope)] = "";
	size_t allocs = 0, covered = 0, since = 0, nb = 0, cap = 0;
	uint64_t *bounds = NULL, last_num = 0;
	uint32_t cur = 0;
	int have = 0, broken = 0;

	*found = 0;
	for (size_t i = 0; i < t->n_events && !broken; i++) {
		const struct ms_event *e = &t->events[i];
		const char *s;
		size_t n, j;
		uint64_t num;
		if (e->action != MS_ACT_ALLOC || e->device != x->in->device ||
		    e->source != MS_SRC_TORCH)
			continue;
		allocs++;
		since += nb != 0; /* allocations since the first label, to the last one */
		if (!e->user_metadata)
			continue;
		if (e->user_metadata == cur) {
			covered = since;
			continue;
		}
		s = ms_symtab_get_str(&t->syms, e->user_metadata)->s;
		n = strlen(s);
		for (j = n; j > 0 && s[j - 1] >= '0' && s[j - 1] <= '9'; j--)
			;
		if (j == n || n - j > 18 || j >= sizeof(prefix))
			continue; /* no number at its end: another kind of label */
		num = strtoull(s + j, NULL, 10);
		if (!have) {
			memcpy(prefix, s, j);
			prefix[j] = 0;
			have = 1;
		} else if (strncmp(prefix, s, j) || prefix[j]) {
			continue; /* another prefix: not this one's steps */
		} else if (num <= last_num) {
			broken = 1; /* numbers that do not rise: not a step counter */
			break;
		}
		if (ms_grow(&bounds, &cap, nb + 1, sizeof(*bounds))) {
			ms_free(bounds);
			return MS_ERR_NOMEM;
		}
		since += !nb; /* the first label's allocation counts too */
		bounds[nb++] = i;
		covered = since;
		last_num = num;
		cur = e->user_metadata;
	}
	if (!broken && nb >= 3 && 2 * covered >= allocs) {
		ms_free(x->bounds);
		x->bounds = bounds;
		x->capb = cap;
		x->nb = nb;
		x->x->steps_from = "user_metadata";
		/* "step 7" -> "step" */
		for (size_t k = strlen(prefix); k > 0 && strchr(" =:#_-", prefix[k - 1]); k--)
			prefix[k - 1] = 0;
		snprintf(x->x->steps_scope, sizeof(x->x->steps_scope), "%s", prefix);
		*found = 1;
		return MS_OK;
	}
	ms_free(bounds);
	return MS_OK;
}

/* Where nothing marks the steps: the user metadata, a scope the program repeats, else the
 * repetition. */
static ms_status steps_unmarked(struct ex *x)
{
	int found;
	ms_status s = steps_by_metadata(x, &found);

	if (s || found)
		return s;
	s = steps_by_scope(x, &found);
	return s || found ? s : steps_by_repetition(x);
}

/*
 * Whether the events after the last optimizer step are an iteration begun (and ended by an OOM,
 * or cut off with the trace), not the program's teardown: an OOM there, a trace cut short with
 * allocations there, or allocations of at least a quarter of the bytes the last whole step
 * allocated (a recording that runs to the program's exit has a few small ones).
 */
static int iteration_after_last_step(const struct ex *x)
{
	uint64_t tail = 0, last = 0, from = x->w[x->nw - 1].e;
	uint64_t start = x->nb ? x->bounds[x->nb - 1] : 0;
	int oom = 0;

	for (size_t i = start; i < x->t->n_events; i++) {
		const struct ms_event *e = &x->t->events[i];
		if (e->device != x->in->device || e->source != MS_SRC_TORCH)
			continue;
		if (i >= from && e->action == MS_ACT_OOM)
			oom = 1;
		if (e->action == MS_ACT_ALLOC)
			*(i >= from ? &tail : &last) += e->size;
	}
	if (!tail && !oom)
		return 0;
	return oom || x->t->cut_short || tail >= last / 4;
}

/*
 * A last annotated step with no optimizer step in it, where every earlier one has exactly one:
 * the scope torch.profiler's step() opens after a loop's last iteration (ProfilerStep#N with N
 * the number of iterations), not an iteration. Its events stay in the step before.
 */
static void drop_trailing_step(struct ex *x)
{
	size_t k = 0;

	if (x->nb < 3 || x->nw != x->nb - 1 || x->bounds[x->nb - 1] < x->w[x->nw - 1].e)
		return;
	for (k = 0; k + 1 < x->nb; k++)
		if (x->w[k].s < x->bounds[k] || x->w[k].e > x->bounds[k + 1])
			return;
	x->nb--;
	x->x->steps_trailing_dropped = 1;
}

/*
 * A snapshot's annotations of other devices placed among this device's events by their times:
 * each at the first event of the device at or after it (n_events where none is). A process
 * driving several devices annotates its optimizer steps on the current one only, and a snapshot
 * keeps each device's events apart. NULL where the times cannot place them (a trace without
 * times) or out of memory (*s).
 */
static struct ms_annotation *anns_by_time(const struct ex *x, ms_status *s)
{
	const struct ms_trace *t = x->t;
	struct ms_annotation *out;
	uint64_t *idx = NULL;
	int64_t *ts = NULL;
	size_t n = 0, cap_i = 0, cap_t = 0, j = 0;

	*s = MS_OK;
	for (size_t i = 0; i < t->n_events; i++) {
		if (t->events[i].device != x->in->device)
			continue;
		if (!t->events[i].t_ns || (n && t->events[i].t_ns < ts[n - 1])) {
			ms_free(idx);
			ms_free(ts);
			return NULL; /* no times, or not in time order: they cannot place anything
			              */
		}
		if (ms_grow(&idx, &cap_i, n + 1, sizeof(*idx)) ||
		    ms_grow(&ts, &cap_t, n + 1, sizeof(*ts))) {
			*s = MS_ERR_NOMEM;
			break;
		}
		idx[n] = i;
		ts[n++] = t->events[i].t_ns;
	}
	if (*s || !n || !(out = ms_malloc(t->n_anns * sizeof(*out) + 1))) {
		*s = *s ? *s : n ? MS_ERR_NOMEM : MS_OK;
		ms_free(idx);
		ms_free(ts);
		return NULL;
	}
	for (size_t k = 0; k < t->n_anns; k++) {
		out[k] = t->anns[k];
		if (!out[k].t_ns) {
			ms_free(out);
			out = NULL;
			break;
		}
		while (j < n && ts[j] < out[k].t_ns)
			j++;
		out[k].event_index = j < n ? idx[j] : t->n_events;
		out[k].device = (uint16_t)x->in->device;
	}
	ms_free(idx);
	ms_free(ts);
	return out;
}

static ms_status windows_and_steps(struct ex *x)
{
	static const char prefix[] = "Optimizer.step#";
	uint64_t open = NONE;
	size_t n_step_anns = 0, steps_before = 0;
	const struct ms_annotation *anns = x->t->anns;
	struct ms_annotation *by_time = NULL;
	ms_status err;

	int own = 0, other = 0;

	/*
	 * This device's annotations, or where it has none, in a memsnap trace, those of any device
	 * (the optimizer of a process driving several devices annotates on the current one). A
	 * snapshot lists each device's events apart and places its annotations among those of
	 * their own device: another device's say nothing of this one's.
	 */
	for (size_t i = 0; i < x->t->n_anns && !own; i++) {
		const struct ms_annotation *a = &x->t->anns[i];
		int step = step_start(x->t, a) ||
		           starts_with(ms_symtab_get_str(&x->t->syms, a->name)->s, prefix);
		own = step && a->device == x->in->device;
		other |= step && a->device != x->in->device;
	}
	if (!own && other && x->t->meta.input_kind != MS_INPUT_ZST) {
		/* a snapshot: another device's steps, placed among this one's events by time */
		if (!(by_time = anns_by_time(x, &err)))
			return err ? err : steps_unmarked(x);
		anns = by_time;
		x->x->steps_by_time = 1;
	} else if (!own && !other) {
		return steps_unmarked(x); /* nothing marks the steps */
	}
	x->x->steps_other_device = !own;
	/* the time of the device's first event: a step that ended before it is not in the trace */
	int64_t first_t = 0;
	for (size_t i = 0; i < x->t->n_events; i++)
		if (x->t->events[i].device == x->in->device) {
			first_t = x->t->events[i].t_ns;
			break;
		}
	for (size_t i = 0; i < x->t->n_anns; i++) {
		const struct ms_annotation *a = &anns[i];
		const char *name = ms_symtab_get_str(&x->t->syms, a->name)->s;
		int before =
		        (by_time || a->event_index == 0) && a->t_ns && first_t && a->t_ns < first_t;
		if (own && a->device != x->in->device)
			continue;
		if (step_start(x->t, a)) {
			if (ms_grow(&x->bounds, &x->capb, x->nb + 1, sizeof(*x->bounds))) {
				ms_free(by_time);
				return MS_ERR_NOMEM;
			}
			x->bounds[x->nb++] = a->event_index;
			n_step_anns++;
			steps_before += before;
			continue;
		}
		if (!starts_with(name, prefix))
			continue;
		if (a->stage == MS_ANN_START) {
			open = a->event_index;
			if (!x->x->optimizer[0]) {
				/* "Optimizer.step#AdamW.step" -> "AdamW" */
				const char *p = name + sizeof(prefix) - 1;
				size_t l = strcspn(p, ".");
				if (l >= sizeof(x->x->optimizer))
					l = sizeof(x->x->optimizer) - 1;
				memcpy(x->x->optimizer, p, l);
				x->x->optimizer[l] = 0;
			}
		} else if (a->stage == MS_ANN_END && open != NONE) {
			if (before) { /* the whole optimizer step came before the trace */
				x->x->steps_before_trace++;
				open = NONE;
				continue;
			}
			if (ms_grow(&x->w, &x->capw, x->nw + 1, sizeof(*x->w))) {
				ms_free(by_time);
				return MS_ERR_NOMEM;
			}
			x->w[x->nw].s = open;
			x->w[x->nw++].e = a->event_index;
			open = NONE;
		}
	}
	ms_free(by_time);
	x->x->n_optimizer_steps = x->nw;
	/* steps that began before the trace: all but the last of them also ended before it */
	if (steps_before >= 2) {
		size_t drop = steps_before - 1;
		memmove(x->bounds, x->bounds + drop, (x->nb - drop) * sizeof(*x->bounds));
		x->nb -= drop;
		n_step_anns -= drop;
		x->x->steps_before_trace += drop;
	}
	if (n_step_anns >= 2) {
		x->x->steps_from = "step annotations";
		drop_trailing_step(x);
		return MS_OK;
	}
	{
		/* the user's own step labels, before the optimizer's */
		int found;
		ms_status s = steps_by_metadata(x, &found);
		if (s || found)
			return s;
	}
	if (x->nw) {
		/* a step ends where its optimizer step does; the first begins with the trace */
		x->nb = 0;
		if (ms_grow(&x->bounds, &x->capb, x->nw, sizeof(*x->bounds)))
			return MS_ERR_NOMEM;
		x->bounds[x->nb++] = 0;
		for (size_t k = 0; k + 1 < x->nw; k++)
			x->bounds[x->nb++] = x->w[k].e;
		/* an iteration begun after the last optimizer step (one that ran out of memory) */
		if (iteration_after_last_step(x)) {
			if (ms_grow(&x->bounds, &x->capb, x->nb + 1, sizeof(*x->bounds)))
				return MS_ERR_NOMEM;
			x->bounds[x->nb++] = x->w[x->nw - 1].e;
		}
		x->x->steps_from = "optimizer steps";
	} else {
		return steps_unmarked(x);
	}
	return MS_OK;
}

/* Whether a frame's function is fn: PyTorch names it so, memsnap by its qualified name
 * ("Module._call_impl"). */
static int is_func(const char *name, const char *fn)
{
	size_t n = strlen(name), k = strlen(fn);
	return n >= k && strcmp(name + n - k, fn) == 0 && (n == k || name[n - k - 1] == '.');
}

/*
 * Whether a stack made a module's tensors: a frame of torch.nn's code (a module's construction,
 * .to(), .cuda()) and none of a module's call (what a forward allocates, a cuBLAS workspace
 * among it, is no parameter).
 */
static int nn_stack(struct ex *x, uint32_t stack)
{
	const struct ms_symtab *y = &x->t->syms;
	size_t n;
	const uint32_t *fr;
	int nn = 0, call = 0;

	if (!stack)
		return 0;
	if (x->nn_of[stack] >= 0)
		return x->nn_of[stack];
	fr = ms_symtab_get_stack(y, stack, &n);
	for (size_t i = 0; i < n && !call; i++) {
		const struct ms_frame *f = &y->frames[fr[i]];
		const char *name = ms_symtab_get_str(y, f->name)->s;
		const char *file = ms_symtab_get_str(y, f->file)->s;
		nn |= strstr(file, "/torch/nn/") != NULL;
		/* FSDP2's fully_shard makes each parameter again as its rank's shard */
		nn |= strstr(file, "/torch/distributed/fsdp/") != NULL &&
		      is_func(name, "_init_sharded_param");
		call = is_func(name, "_call_impl") || is_func(name, "_wrapped_call_impl");
	}
	x->nn_of[stack] = (int8_t)(nn && !call);
	return nn && !call;
}

/*
 * Whether a stack's block is a copy: a C++ frame of a copying operator (at::native::clone,
 * _to_copy, contiguous, and their autograd and dispatcher forms name the same functions).
 * *native gets 1 where the stack has C++ frames at all.
 */
static int copy_stack(struct ex *x, uint32_t stack, int *native)
{
	static const char *const ops[] = {"::clone(",    "::_to_copy(",     "::contiguous(",
	                                  "::to_dtype(", "::_to_copy_out(", "::clone_out("};
	const struct ms_symtab *y = &x->t->syms;
	size_t n;
	const uint32_t *fr;
	int copy = 0, cpp = 0;

	if (!stack)
		return 0;
	if (x->copy_of[stack] >= 0) {
		*native |= x->copy_of[stack] >= 1;
		return x->copy_of[stack] == 2;
	}
	fr = ms_symtab_get_stack(y, stack, &n);
	for (size_t i = 0; i < n && !copy; i++) {
		const char *name = ms_symtab_get_str(y, y->frames[fr[i]].name)->s;
		if (!strstr(name, "::"))
			continue;
		cpp = 1;
		for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]) && !copy; k++)
			copy = strstr(name, ops[k]) != NULL;
	}
	x->copy_of[stack] = (int8_t)(copy ? 2 : cpp);
	*native |= cpp;
	return copy;
}

/* The first window whose start is after event i (windows are in event order). */
static uint32_t windows_up_to(const struct ex *x, uint64_t i)
{
	size_t lo = 0, hi = x->nw;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (x->w[mid].s <= i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (uint32_t)lo;
}

/* The window that event i lies in, or SIZE_MAX. */
static size_t window_of(const struct ex *x, uint64_t i)
{
	uint32_t k = windows_up_to(x, i);

	return k && i < x->w[k - 1].e ? k - 1 : SIZE_MAX;
}

/* Whether b is part of the state broken down (explain.h, peak_index and before). */
static int in_state(const struct ex *x, const struct ms_life *b)
{
	uint64_t p = x->in->peak_index;

	if (x->in->before)
		return b->a < p && (b->f == NONE || b->f >= p);
	return b->a <= p && (b->f == NONE || b->f > p);
}

/* b's category in the state broken down */
static unsigned state_cat(const struct ex *x, const struct ms_life *b)
{
	return ms_life_cat_at(b, x->in->before ? x->in->peak_index - 1 : x->in->peak_index);
}

/* The user's category of b (-1: none): it wins over the rules. */
static int user_cat(const struct ex *x, const struct ms_life *b)
{
	return x->ucat_of ? x->ucat_of[b->stack] : -1;
}

/* Count of the sizes in a map size -> count. */
static ms_status count_add(struct ms_u64map *m, uint64_t size, int64_t d)
{
	uint64_t *c = ms_u64map_get(m, size);
	if (c) {
		*c = (uint64_t)((int64_t)*c + d);
		return MS_OK;
	}
	return d > 0 ? ms_u64map_put(m, size, (uint64_t)d) : MS_OK;
}

/* Each block's optimizer steps whose start it is alive at: started before it, freed after. */
static void windows_alive(struct ex *x)
{
	for (size_t i = 0; i < x->n; i++) {
		struct ms_life *b = &x->b[i];
		b->k_lo = b->before ? 0 : windows_up_to(x, b->a);
		b->k_hi = b->f == NONE ? (uint32_t)x->nw : windows_up_to(x, b->f);
		if (b->k_hi < b->k_lo)
			b->k_hi = b->k_lo;
	}
}

/* Whether b may be a gradient: made in the trace, neither a parameter's candidate nor state. */
/* Made by the program's own Python code (its stack's site is a user frame): no gradient, which
 * the autograd engine makes on a thread of its own, without the program's frames. */
static int user_made(struct ex *x, uint32_t stack)
{
	const uint32_t *fr;
	size_t n;
	enum ms_frame_kind kind = MS_FRAME_PLUMBING;

	if (!stack)
		return 0;
	if (x->user_of[stack] >= 0)
		return x->user_of[stack];
	fr = ms_symtab_get_stack(&x->t->syms, stack, &n);
	if (n)
		ms_site_pos(&x->t->syms, fr, n, &kind);
	x->user_of[stack] = (int8_t)(kind == MS_FRAME_USER);
	return x->user_of[stack];
}

static int grad_candidate(struct ex *x, const struct ms_life *b)
{
	return !b->before && !b->param_cand && b->cat != MS_CAT_OPTIMIZER_STATE &&
	       !user_made(x, b->stack);
}

/* Optimizer state, gradients and parameters (explain.h's rules). */
static ms_status categorize_state(struct ex *x)
{
	struct ms_u64map cand = MS_U64MAP_INIT, avail = MS_U64MAP_INIT, need = MS_U64MAP_INIT,
	                 took = MS_U64MAP_INIT;
	struct ms_explain *r = x->x;
	const struct window *first = &x->w[0], *last = &x->w[x->nw - 1];
	uint64_t n_grad_matched = 0;
	size_t *first_of = NULL, *entries = NULL, n_entries = 0;
	ms_status s = MS_OK;

	windows_alive(x);
	for (size_t i = 0; i < x->n; i++) {
		struct ms_life *b = &x->b[i];
		size_t k;
		if (b->before)
			continue;
		k = window_of(x, b->a);
		if (k != SIZE_MAX) {
			/*
			 * Kept through every later optimizer step: state. What the last step makes
			 * and keeps may as well be its gradients (Lightning runs the whole
			 * iteration inside the optimizer's step): told only where there is one
			 * step.
			 */
			b->in_window = 1;
			if ((b->f == NONE || b->f >= last->e) && (k + 1 < x->nw || x->nw == 1))
				b->cat = MS_CAT_OPTIMIZER_STATE;
			continue;
		}
		if (b->a < first->s && (b->f == NONE || b->f >= last->e) &&
		    (nn_stack(x, b->stack) || !r->has_stacks)) {
			b->param_cand = 1;
			if ((s = count_add(&cand, b->size, 1)))
				goto out;
		}
	}
	/*
	 * Each step: what is alive at its start, of a parameter's size, one block per parameter.
	 * The candidates by step (the blocks alive at its start), in allocation order.
	 */
	/* counted by step, then placed: each step's candidates in allocation order */
	first_of = ms_calloc(x->nw + 1, sizeof(*first_of));
	if (!first_of) {
		s = MS_ERR_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < x->n; i++)
		if (grad_candidate(x, &x->b[i]))
			for (uint32_t k = x->b[i].k_lo; k < x->b[i].k_hi; k++)
				first_of[k + 1]++;
	for (size_t k = 0; k < x->nw; k++)
		first_of[k + 1] += first_of[k];
	n_entries = first_of[x->nw];
	if (!(entries = ms_malloc((n_entries ? n_entries : 1) * sizeof(*entries)))) {
		s = MS_ERR_NOMEM;
		goto out;
	}
	{
		size_t *fill = ms_calloc(x->nw + 1, sizeof(*fill));
		if (!fill) {
			s = MS_ERR_NOMEM;
			goto out;
		}
		for (size_t i = 0; i < x->n; i++) {
			if (grad_candidate(x, &x->b[i]))
				for (uint32_t k = x->b[i].k_lo; k < x->b[i].k_hi; k++)
					entries[first_of[k] + fill[k]++] = i;
		}
		ms_free(fill);
	}
	for (size_t k = 0; k < x->nw; k++) {
		uint64_t bytes = 0;
		ms_u64map_clear(&took);
		for (size_t e = first_of[k]; e < first_of[k + 1]; e++) {
			struct ms_life *b = &x->b[entries[e]];
			uint64_t *have = ms_u64map_get(&cand, b->size), *t, *nd;
			if (!have)
				continue;
			t = ms_u64map_get(&took, b->size);
			if (t && *t >= *have)
				continue;
			if (!t) {
				if ((s = ms_u64map_put(&took, b->size, 0)))
					goto out;
				t = ms_u64map_get(&took, b->size);
			}
			++*t;
			b->grad = 1;
			bytes += b->size;
			n_grad_matched++;
			/* a parameter of each size for the most gradients of that size at one step
			 */
			nd = ms_u64map_get(&need, b->size);
			if (!nd) {
				if ((s = ms_u64map_put(&need, b->size, *t)))
					goto out;
			} else if (*t > *nd) {
				*nd = *t;
			}
		}
		if (bytes > r->gradient_bytes)
			r->gradient_bytes = bytes;
	}
	if (!r->has_stacks)
		r->why_uncategorized = "the trace has no stacks: parameters and gradients are told "
		                       "by their lifetimes and sizes alone, not by the code that "
		                       "made them (an input made before the loop, or a buffer "
		                       "kept across steps such as DDP's gradient buckets, of a "
		                       "parameter's size would count)";
	if (!n_grad_matched && !r->has_stacks)
		r->why_uncategorized =
		        "the trace has no stacks and no gradient was told at an optimizer step: "
		        "everything kept from before the first optimizer step through the last is "
		        "counted as parameters, gradients kept across steps with them";
	/* the parameters: the earliest candidates of each size, as many as gradients need (all of
	 * them where no gradient was told) */
	for (size_t i = 0; i < x->n; i++) {
		struct ms_life *b = &x->b[i];
		uint64_t *nd;
		if (!b->param_cand)
			continue;
		if (n_grad_matched) {
			if (!(nd = ms_u64map_get(&need, b->size)) || !*nd)
				continue;
			(*nd)--;
		}
		b->cat = MS_CAT_PARAMETERS;
		r->parameter_bytes += b->size;
		r->parameter_blocks++;
	}
	/*
	 * The state is kept per parameter (Adam's two moments, SGD's momentum): what the steps
	 * keep of other sizes is no state (the cuBLAS workspaces of a forward that Lightning runs
	 * inside the optimizer's step). Factored or quantized states (Adafactor, 8-bit Adam) are
	 * not told so.
	 */
	ms_u64map_clear(&avail);
	for (size_t i = 0; i < x->n; i++)
		if (x->b[i].cat == MS_CAT_PARAMETERS && (s = count_add(&avail, x->b[i].size, 1)))
			goto out;
	/* without stacks, the gradients kept across steps are counted with the parameters */
	if (r->parameter_blocks && !n_grad_matched)
		r->gradients_not_told = 1;
	if (!r->parameter_blocks) {
		r->gradient_bytes = 0;
		r->why_uncategorized =
		        "no parameters found (the model's tensors were made before the trace "
		        "began, "
		        "or not by torch.nn code): gradients and optimizer state, told by a "
		        "parameter's size, are not placed either";
	}
	for (size_t i = 0; i < x->n; i++) {
		struct ms_life *b = &x->b[i];
		if (b->grad && !r->parameter_blocks)
			b->grad = 0; /* no parameter to be the gradient of */
		if (b->grad) {
			b->cat = MS_CAT_GRADIENTS;
			r->gradient_blocks++;
		} else if (b->cat == MS_CAT_OPTIMIZER_STATE) {
			if (!r->parameter_blocks || !ms_u64map_get(&avail, b->size)) {
				b->cat = MS_CAT_UNPLACED; /* left to the rules that follow */
				continue;
			}
			r->optimizer_state_bytes += b->size;
			r->optimizer_state_blocks++;
		}
	}
out:
	ms_free(first_of);
	ms_free(entries);
	ms_u64map_release(&cand);
	ms_u64map_release(&avail);
	ms_u64map_release(&need);
	ms_u64map_release(&took);
	return s;
}

/*
 * The event where the job died: the device's last recorded OOM, with no allocation after it
 * (the trace ends in the step that ran out); NONE where it did not die in the trace.
 */
static uint64_t death_event(const struct ex *x)
{
	uint64_t death = NONE;
	for (size_t i = 0; i < x->t->n_events; i++) {
		const struct ms_event *e = &x->t->events[i];
		if (e->device != x->in->device || e->source != MS_SRC_TORCH)
			continue;
		if (e->action == MS_ACT_OOM)
			death = i;
		else if (e->action == MS_ACT_ALLOC)
			death = NONE;
	}
	return death;
}

/*
 * What is left: kept across steps (alive at two optimizer steps' starts, or at the end), or
 * an iteration's own. Where the job died in an iteration begun after the last optimizer step,
 * or the trace is cut off in one (a rank killed), what that iteration made and still held is
 * its own (activations, or what led to the request that failed): it never reached the
 * optimizer step that would have shown it freed.
 */
static void categorize_rest(struct ex *x)
{
	uint64_t died = x->nw ? death_event(x) : NONE;
	if (died == NONE && x->nw && x->t->cut_short)
		died = x->t->n_events;
	uint64_t last_end = x->nw ? x->w[x->nw - 1].e : 0;

	for (size_t i = 0; i < x->n; i++) {
		struct ms_life *b = &x->b[i];
		if (b->before || b->cat != MS_CAT_UNPLACED)
			continue;
		if (!x->nw)
			continue; /* no optimizer steps: nothing to place it by */
		if (died != NONE && b->a >= last_end && b->a < died &&
		    (b->f == NONE || b->f > died)) {
			b->cat = MS_CAT_ACTIVATIONS;
			continue;
		}
		b->cat = b->k_hi - b->k_lo >= 2 || b->f == NONE ? MS_CAT_OTHER : MS_CAT_ACTIVATIONS;
	}
}

static uint64_t death_event(const struct ex *x);

/* A training job's evaluation loops (inference.h), their KV cache placed before the rest. */
static ms_status eval_loops(struct ex *x)
{
	uint64_t *opt = ms_malloc(x->nw * sizeof(*opt));
	ms_status s;

	if (!opt)
		return MS_ERR_NOMEM;
	for (size_t i = 0; i < x->nw; i++)
		opt[i] = x->w[i].s;
	struct ms_infer_in ii = {.t = x->t,
	                         .device = x->in->device,
	                         .b = x->b,
	                         .n = x->n,
	                         .has_stacks = x->x->has_stacks,
	                         .opt_starts = opt,
	                         .n_opt = x->nw,
	                         .run_end = death_event(x) != NONE ? death_event(x)
	                                    : x->t->cut_short      ? x->t->n_events
	                                                           : NONE};
	s = ms_infer_eval_loops(&ii, x->x);
	ms_free(opt);
	return s;
}

static int context_cmp(const void *a, const void *b)
{
	const struct ms_explain_context *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* The state by compile context (Mosaic's breakdown), where the trace records any. */
static ms_status by_context(struct ex *x)
{
	struct ms_explain *r = x->x;
	struct ms_u64map at = MS_U64MAP_INIT;
	size_t cap = 0;
	int any = 0;

	for (size_t i = 0; i < x->n && !any; i++)
		any = !x->b[i].before && x->t->events[x->b[i].a].compile_context != 0;
	if (!any)
		return MS_OK;
	for (size_t i = 0; i < x->n; i++) {
		const struct ms_life *b = &x->b[i];
		uint32_t name = b->before ? 0 : x->t->events[b->a].compile_context;
		/* key: the context's name, and apart those from before the trace */
		uint64_t key = b->before ? UINT64_MAX - 1 : name, *k;
		struct ms_explain_context *c;
		if (!in_state(x, b))
			continue;
		if (!(k = ms_u64map_get(&at, key))) {
			if (ms_grow(&r->contexts, &cap, r->n_contexts + 1, sizeof(*r->contexts)) ||
			    ms_u64map_put(&at, key, r->n_contexts)) {
				ms_u64map_release(&at);
				return MS_ERR_NOMEM;
			}
			r->contexts[r->n_contexts] =
			        (struct ms_explain_context){.name = name, .before = b->before};
			k = ms_u64map_get(&at, key);
			r->n_contexts++;
		}
		c = &r->contexts[*k];
		c->bytes += b->size;
		c->blocks++;
	}
	ms_u64map_release(&at);
	if (r->n_contexts > 1)
		qsort(r->contexts, r->n_contexts, sizeof(*r->contexts), context_cmp);
	return MS_OK;
}

/* An allocation whose category changes (lives.h's until), at that event. */
struct move {
	uint64_t until;
	uint32_t i;
};

static int by_until(const void *a, const void *b)
{
	uint64_t x = ((const struct move *)a)->until, y = ((const struct move *)b)->until;
	return x < y ? -1 : x > y;
}

/*
 * Each category's own peak over the trace, sweeping the events: an allocation counts from its
 * allocation to the program's free (as the state broken down counts it), those from before the
 * trace from its start.
 */
static ms_status cat_peaks(struct ex *x)
{
	struct ms_explain *r = x->x;
	uint64_t cur[MS_CAT_COUNT + MS_USER_CATS_MAX] = {0};
	uint32_t *of_event;
	struct move *moves = NULL;
	size_t n_moves = 0, m = 0;
	const uint64_t n_ev = x->t->n_events;

	if (!(of_event = ms_malloc((n_ev ? n_ev : 1) * sizeof(*of_event))))
		return MS_ERR_NOMEM;
	/* the allocations whose category changes (lives.h's until), by the event it changes at */
	for (size_t i = 0; i < x->n; i++)
		n_moves += x->b[i].until != NONE;
	if (n_moves && !(moves = ms_malloc(n_moves * sizeof(*moves)))) {
		ms_free(of_event);
		return MS_ERR_NOMEM;
	}
	for (size_t i = 0; i < x->n; i++)
		if (x->b[i].until != NONE)
			moves[m++] = (struct move){x->b[i].until, (uint32_t)i};
	if (n_moves)
		qsort(moves, n_moves, sizeof(*moves), by_until);
	m = 0;
	memset(of_event, 0xff, (n_ev ? n_ev : 1) * sizeof(*of_event));
	for (size_t i = 0; i < x->n; i++) {
		const struct ms_life *b = &x->b[i];
		if (b->before)
			cur[user_cat(x, b) >= 0 ? MS_CAT_COUNT + (unsigned)user_cat(x, b)
			                        : b->cat] += b->size;
		else
			of_event[b->a] = (uint32_t)i;
		if (b->f != NONE)
			of_event[b->f] = (uint32_t)i;
		/* a category change at another allocation's event: found at that event */
	}
	for (unsigned c = 0; c < MS_CAT_COUNT; c++)
		r->cat_peak[c] = (struct ms_explain_cat_peak){cur[c], 0};
	for (unsigned c = 0; c < MS_USER_CATS_MAX; c++)
		r->user_peak[c] = (struct ms_explain_cat_peak){cur[MS_CAT_COUNT + c], 0};
	for (uint64_t e = 0; e < n_ev; e++) {
		uint32_t k = of_event[e];
		const struct ms_life *b;
		unsigned c;
		for (; m < n_moves && moves[m].until <= e; m++) {
			const struct ms_life *v = &x->b[moves[m].i];
			if ((v->f != NONE && v->f <= v->until) || user_cat(x, v) >= 0)
				continue; /* freed first, or the user's: no change */
			cur[v->cat] -= cur[v->cat] > v->size ? v->size : cur[v->cat];
			cur[v->cat_after] += v->size;
			if (cur[v->cat_after] > r->cat_peak[v->cat_after].bytes)
				r->cat_peak[v->cat_after] = (struct ms_explain_cat_peak){
				        cur[v->cat_after], moves[m].until};
		}
		if (k == UINT32_MAX)
			continue;
		b = &x->b[k];
		if (b->a == e && !b->before) {
			c = ms_life_cat_at(b, e);
		} else {
			c = e ? ms_life_cat_at(b, e - 1) : b->cat;
		}
		if (user_cat(x, b) >= 0)
			c = MS_CAT_COUNT + (unsigned)user_cat(x, b);
		if (b->a != e || b->before) {
			cur[c] -= cur[c] > b->size ? b->size : cur[c];
			continue;
		}
		cur[c] += b->size;
		if (c >= MS_CAT_COUNT) {
			if (cur[c] > r->user_peak[c - MS_CAT_COUNT].bytes)
				r->user_peak[c - MS_CAT_COUNT] =
				        (struct ms_explain_cat_peak){cur[c], e};
		} else if (cur[c] > r->cat_peak[c].bytes) {
			r->cat_peak[c] = (struct ms_explain_cat_peak){cur[c], e};
		}
	}
	ms_free(of_event);
	ms_free(moves);
	return MS_OK;
}

/* Each step's peak of allocated bytes, sweeping the events. */
static ms_status step_peaks(struct ex *x)
{
	struct ms_explain *r = x->x;
	uint64_t cur = 0;
	size_t k = 0;

	if (!x->nb)
		return MS_OK;
	r->steps = ms_calloc(x->nb, sizeof(*r->steps));
	if (!r->steps)
		return MS_ERR_NOMEM;
	r->n_steps = x->nb;
	for (k = 0; k < x->nb; k++)
		r->steps[k].first_event = x->bounds[k];
	/* a first step from the trace's start begins at the device's first event */
	for (size_t i = x->bounds[0]; i < x->t->n_events; i++)
		if (x->t->events[i].device == x->in->device) {
			if (x->nb < 2 || i < x->bounds[1])
				r->steps[0].first_event = i;
			break;
		}
	/* the blocks alive before the trace count from its start */
	for (size_t i = 0; i < x->n; i++)
		if (x->b[i].before)
			cur += x->b[i].size;
	k = 0;
	for (size_t i = 0; i < x->t->n_events; i++) {
		const struct ms_event *e = &x->t->events[i];
		while (k + 1 < x->nb && x->bounds[k + 1] <= i)
			k++;
		if (e->device != x->in->device || e->source != MS_SRC_TORCH)
			continue;
		/* as PyTorch's requested_bytes: a block counts until its free completes */
		if (e->action == MS_ACT_ALLOC)
			cur += e->size;
		else if (e->action == MS_ACT_FREE_COMPLETED)
			cur -= cur > e->size ? e->size : cur;
		else
			continue;
		if (i >= x->bounds[0] && cur > r->steps[k].peak_requested) {
			r->steps[k].peak_requested = cur;
			r->steps[k].peak_event = i;
		}
	}
	return MS_OK;
}

/* The site frame of a stack (0: none), found once a stack. */
/* Site keys past frame ids: chains of frames (a site depth past 1). */
#define CHAIN_KEY 0x80000000u

/*
 * The key a stack's blocks are grouped by: its site frame, or at a site depth past 1 its chain
 * of frames (CHAIN_KEY + a number; frame_of_key gives its deepest frame). UINT32_MAX: out of
 * memory.
 */
static uint32_t site_frame(struct ex *x, uint32_t stack)
{
	const struct ms_symtab *y = &x->t->syms;
	size_t n, pos[64], k;
	uint32_t ids[64];
	const uint64_t *v;
	uint64_t h;
	const uint32_t *fr;

	if (!stack)
		return 0;
	if (x->site_of[stack])
		return x->site_of[stack] - 1;
	fr = ms_symtab_get_stack(y, stack, &n);
	if (!n || x->in->site_depth <= 1) {
		x->site_of[stack] = (n ? fr[ms_site_pos(y, fr, n, NULL)] : 0) + 1;
		return x->site_of[stack] - 1;
	}
	k = ms_site_chain(y, fr, n, x->in->site_depth, pos, sizeof(pos) / sizeof(pos[0]));
	for (size_t i = 0; i < k; i++)
		ids[i] = fr[pos[i]];
	h = ms_hash_bytes(ids, k * sizeof(ids[0]));
	if (!(v = ms_u64map_get(&x->chain_key, h))) {
		if (ms_grow(&x->chain_frame, &x->cap_chains, x->n_chains + 1,
		            sizeof(*x->chain_frame)) ||
		    ms_u64map_put(&x->chain_key, h, CHAIN_KEY + x->n_chains))
			return UINT32_MAX;
		x->chain_frame[x->n_chains++] = ids[k - 1];
		v = ms_u64map_get(&x->chain_key, h);
	}
	x->site_of[stack] = (uint32_t)*v + 1;
	return (uint32_t)*v;
}

/* The frame a site key names: the site frame, or a chain's deepest. */
static uint32_t frame_of_key(const struct ex *x, uint32_t key)
{
	return key >= CHAIN_KEY && key != UINT32_MAX ? x->chain_frame[key - CHAIN_KEY] : key;
}

/* The number of points of pts[0..n) at or before event i. */
static uint32_t points_up_to(const uint64_t *pts, size_t n, uint64_t i)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (pts[mid] <= i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (uint32_t)lo;
}

/*
 * Sites whose memory alive at a step's start grows from one step to the next: at the optimizer
 * steps' starts where there are three or more, else at the starts of the steps (annotated or
 * from repetition) after the first.
 */
static ms_status growth(struct ex *x)
{
	struct ms_explain *r = x->x;
	struct ms_u64map row_of = MS_U64MAP_INIT;
	struct row {
		uint32_t frame, stack;
		uint64_t first_event;
		uint64_t *live;  /* bytes at each optimizer step's start */
		uint64_t at_end; /* bytes of its blocks never freed */
		uint32_t *count; /* ... in so many blocks */
	} *rows = NULL;
	size_t nrows = 0, caprows = 0, capg = 0, np = 0;
	uint64_t *pts;
	ms_status s = MS_OK;

	if (x->nw < 3 && x->nb < 4)
		return MS_OK;
	if (!(pts = ms_malloc(sizeof(*pts) * (x->nw >= 3 ? x->nw : x->nb))))
		return MS_ERR_NOMEM;
	if (x->nw >= 3)
		for (size_t k = 0; k < x->nw; k++)
			pts[np++] = x->w[k].s;
	else
		for (size_t k = 1; k < x->nb; k++) /* nothing is alive at the first's start */
			pts[np++] = x->bounds[k];
	if (x->in->growth_to) { /* a window's steps only: three or more, as the trace's */
		size_t kept = 0;
		for (size_t k = 0; k < np; k++)
			if (pts[k] >= x->in->growth_from && pts[k] < x->in->growth_to)
				pts[kept++] = pts[k];
		np = kept;
		if (np < 3) {
			ms_free(pts);
			return MS_OK;
		}
	}
	x->x->growth_steps = np;
	for (size_t i = 0; i < x->n && !s; i++) {
		const struct ms_life *b = &x->b[i];
		uint32_t frame, k_lo, k_hi;
		uint64_t *ri;
		struct row *w;
		/* an iteration's own blocks count where alive at a step's start (what the last step
		 * keeps is freed only at exit, so it looks like one); without optimizer steps
		 * nothing is categorized: every block the trace made */
		if (x->nw >= 3 ? b->cat != MS_CAT_OTHER && b->cat != MS_CAT_ACTIVATIONS : b->before)
			continue;
		if ((frame = site_frame(x, b->stack)) == UINT32_MAX) {
			s = MS_ERR_NOMEM;
			break;
		}
		/* the points it is alive at: [k_lo, k_hi) */
		k_lo = b->before ? 0 : points_up_to(pts, np, b->a);
		k_hi = b->f == NONE ? (uint32_t)np : points_up_to(pts, np, b->f);
		if (!(ri = ms_u64map_get(&row_of, frame))) {
			if (ms_grow(&rows, &caprows, nrows + 1, sizeof(*rows)) ||
			    !(rows[nrows].live = ms_calloc(np, sizeof(uint64_t)))) {
				s = MS_ERR_NOMEM;
				break;
			}
			if (!(rows[nrows].count = ms_calloc(np, sizeof(uint32_t))) ||
			    ms_u64map_put(&row_of, frame, nrows)) {
				ms_free(rows[nrows].live);
				ms_free(rows[nrows].count);
				s = MS_ERR_NOMEM;
				break;
			}
			rows[nrows].frame = frame;
			rows[nrows].stack = b->stack;
			rows[nrows].first_event = NONE;
			rows[nrows].at_end = 0;
			ri = ms_u64map_get(&row_of, frame);
			nrows++;
		}
		w = &rows[*ri];
		if (b->f == NONE)
			w->at_end += b->size;
		for (uint32_t k = k_lo; k < k_hi; k++) {
			w->live[k] += b->size;
			w->count[k]++;
		}
		if (k_hi == np && k_lo < np && b->a > pts[0] && b->a < w->first_event)
			w->first_event = b->a;
	}
	for (size_t j = 0; j < nrows && !s; j++) {
		const struct row *w = &rows[j];
		size_t ups = 0, downs = 0, last = np - 1;
		for (size_t k = 1; k < np; k++) {
			ups += w->live[k] > w->live[k - 1];
			downs += w->live[k] < w->live[k - 1];
		}
		/* grew at half the steps or more, never shrank */
		if (downs || 2 * ups < last || w->live[last] <= w->live[0])
			continue;
		if (ms_grow(&r->growth, &capg, r->n_growth + 1, sizeof(*r->growth))) {
			s = MS_ERR_NOMEM;
			break;
		}
		r->growth[r->n_growth++] = (struct ms_explain_growth){
		        w->stack,
		        frame_of_key(x, w->frame),
		        (w->live[last] - w->live[0]) / last,
		        (uint32_t)ups,
		        w->first_event == NONE ? 0 : w->first_event,
		        w->live[last],
		        w->count[0],
		        w->count[last],
		        w->at_end,
		};
	}
	for (size_t j = 0; j < nrows; j++) {
		ms_free(rows[j].live);
		ms_free(rows[j].count);
	}
	ms_free(rows);
	ms_free(pts);
	ms_u64map_release(&row_of);
	return s;
}

/*
 * The sites whose blocks alive at the peak hold the most, largest first, into out: the
 * activations', or (copies) the copies' (copy_stack), whose totals go to copy_bytes and
 * copy_blocks.
 */
enum site_set { SITES_ACTIVATIONS, SITES_COPIES, SITES_ALL };

/* The largest sites of a set of the blocks live in the state (copies: also their sums). */
static ms_status top_sites(struct ex *x, enum site_set set, struct ms_explain_site *out,
                           size_t *n_out)
{
	int copies = set == SITES_COPIES;
	struct ms_explain *r = x->x;
	struct ms_u64map row_of = MS_U64MAP_INIT;
	struct ms_explain_site *rows = NULL;
	size_t nrows = 0, cap = 0;
	ms_status s = MS_OK;

	for (size_t i = 0; i < x->n; i++) {
		const struct ms_life *b = &x->b[i];
		uint32_t frame, fwd;
		uint64_t *ri, key;
		if (!in_state(x, b) ||
		    (set == SITES_COPIES && !copy_stack(x, b->stack, &r->copies_told)) ||
		    (set == SITES_ACTIVATIONS &&
		     (state_cat(x, b) != MS_CAT_ACTIVATIONS || user_cat(x, b) >= 0)))
			continue;
		if (copies) {
			r->copy_bytes += b->size;
			r->copy_blocks++;
		}
		/* made in backward, where the snapshot says where in forward: that site's */
		fwd = b->before ? 0 : x->t->events[b->a].fwd_stack;
		if ((frame = site_frame(x, fwd ? fwd : b->stack)) == UINT32_MAX) {
			s = MS_ERR_NOMEM;
			goto out;
		}
		key = (uint64_t)frame | (fwd ? UINT64_C(1) << 32 : 0);
		if (!(ri = ms_u64map_get(&row_of, key))) {
			if (ms_grow(&rows, &cap, nrows + 1, sizeof(*rows)) ||
			    ms_u64map_put(&row_of, key, nrows)) {
				s = MS_ERR_NOMEM;
				goto out;
			}
			rows[nrows] = (struct ms_explain_site){fwd ? fwd : b->stack, frame, 0, 0,
			                                       fwd != 0};
			ri = ms_u64map_get(&row_of, key);
			nrows++;
		}
		rows[*ri].bytes += b->size;
		rows[*ri].blocks++;
	}
	/* the largest few, by selection */
	while (*n_out < MS_EXPLAIN_TOP_SITES) {
		size_t best = SIZE_MAX;
		for (size_t j = 0; j < nrows; j++)
			if (rows[j].bytes && (best == SIZE_MAX || rows[j].bytes > rows[best].bytes))
				best = j;
		if (best == SIZE_MAX)
			break;
		out[*n_out] = rows[best];
		out[(*n_out)++].frame = frame_of_key(x, rows[best].frame);
		rows[best].bytes = 0;
	}
out:
	ms_free(rows);
	ms_u64map_release(&row_of);
	return s;
}

static int growth_cmp(const void *a, const void *b)
{
	const struct ms_explain_growth *x = a, *y = b;
	return x->bytes_per_step < y->bytes_per_step   ? 1
	       : x->bytes_per_step > y->bytes_per_step ? -1
	                                               : 0;
}

/*
 * The categories in->cat_query asks for: the allocations made in the trace are in event order
 * among the blocks (those from before it have none), so one merge finds them.
 */
static void categories_asked(struct ex *x)
{
	const struct ms_explain_in *in = x->in;
	size_t q = 0;

	for (size_t i = 0; i < in->n_cat_query; i++)
		in->cat_of[i] = -1;
	for (size_t i = 0; i < x->n && q < in->n_cat_query; i++) {
		const struct ms_life *b = &x->b[i];
		if (b->before)
			continue;
		while (q < in->n_cat_query && in->cat_query[q] < b->a)
			q++;
		if (q < in->n_cat_query && in->cat_query[q] == b->a) {
			int u = user_cat(x, b);
			in->cat_of[q++] = (int8_t)(u >= 0 ? MS_CAT_COUNT + u : b->cat);
		}
	}
}

ms_status ms_explain_run(const struct ms_explain_in *in, struct ms_explain *out)
{
	struct ex x;
	ms_status s;

	memset(out, 0, sizeof(*out));
	memset(&x, 0, sizeof(x));
	out->optimizer[0] = 0;
	out->steps_from = out->why_uncategorized = out->eval_loops_why = "";
	x.t = in->t;
	x.in = in;
	x.x = out;
	x.nn_of = ms_malloc(ms_symtab_nstacks(&in->t->syms) + 1);
	x.copy_of = ms_malloc(ms_symtab_nstacks(&in->t->syms) + 1);
	x.user_of = ms_malloc(ms_symtab_nstacks(&in->t->syms) + 1);
	if (!x.nn_of || !x.copy_of || !x.user_of) {
		ms_free(x.user_of);
		ms_free(x.nn_of);
		ms_free(x.copy_of);
		return MS_ERR_NOMEM;
	}
	memset(x.nn_of, -1, ms_symtab_nstacks(&in->t->syms) + 1);
	memset(x.copy_of, -1, ms_symtab_nstacks(&in->t->syms) + 1);
	memset(x.user_of, -1, ms_symtab_nstacks(&in->t->syms) + 1);
	if (!(x.site_of = ms_calloc(ms_symtab_nstacks(&in->t->syms) + 1, sizeof(*x.site_of)))) {
		ms_free(x.user_of);
		ms_free(x.nn_of);
		ms_free(x.copy_of);
		return MS_ERR_NOMEM;
	}
	if ((s = take_lives(&x)) || (s = windows_and_steps(&x)))
		goto out;
	if (x.nw) {
		out->job = "training";
		if ((s = categorize_state(&x)) || (s = eval_loops(&x)))
			goto out;
	} else {
		struct ms_infer_in ii = {.t = x.t,
		                         .device = in->device,
		                         .b = x.b,
		                         .n = x.n,
		                         .has_stacks = out->has_stacks,
		                         .steps = x.bounds,
		                         .n_steps = x.nb,
		                         .steps_from = out->steps_from};
		out->job = "";
		if ((s = ms_infer_categorize(&ii, out)))
			goto out;
	}
	categorize_rest(&x);
	out->user_cats = in->user_cats;
	if ((out->n_user = ms_user_cats_count(in->user_cats)) &&
	    !(x.ucat_of = ms_user_cats_of_stacks(in->user_cats, &in->t->syms))) {
		s = MS_ERR_NOMEM;
		goto out;
	}
	categories_asked(&x);
	for (size_t i = 0; i < x.n; i++) {
		const struct ms_life *b = &x.b[i];
		if (in_state(&x, b)) {
			int u = user_cat(&x, b);
			unsigned c = state_cat(&x, b);
			if (u >= 0) {
				out->user_bytes[u] += b->size;
				out->user_blocks[u]++;
				continue;
			}
			out->cat_bytes[c] += b->size;
			out->cat_blocks[c]++;
		}
	}
	if ((s = by_context(&x)))
		goto out;
	if (in->state_only) {
		s = top_sites(&x, SITES_ALL, out->top_live, &out->n_top_live);
		goto out;
	}
	if ((s = step_peaks(&x)) || (s = cat_peaks(&x)) || (s = growth(&x)) ||
	    (s = top_sites(&x, SITES_ACTIVATIONS, out->top_activations, &out->n_top_activations)) ||
	    (s = top_sites(&x, SITES_ALL, out->top_live, &out->n_top_live)))
		goto out;
	/* copies: whether any stack has C++ frames is learnt as they are looked at, all of them */
	for (size_t i = 0; i < x.n && !out->copies_told; i++)
		(void)copy_stack(&x, x.b[i].stack, &out->copies_told);
	if ((s = top_sites(&x, SITES_COPIES, out->top_copies, &out->n_top_copies)))
		goto out;
	if (out->n_growth > 1)
		qsort(out->growth, out->n_growth, sizeof(*out->growth), growth_cmp);
out:
	if (s)
		ms_explain_release(out);
	ms_free(x.b);
	ms_free(x.w);
	ms_free(x.bounds);
	ms_free(x.nn_of);
	ms_free(x.copy_of);
	ms_free(x.user_of);
	ms_free(x.ucat_of);
	ms_free(x.site_of);
	ms_free(x.chain_frame);
	ms_u64map_release(&x.chain_key);
	return s;
}

size_t ms_explain_forward_of(const struct ms_explain *x, uint64_t i)
{
	const uint64_t *s = x->inference.forward_starts;
	size_t lo = 0, hi = s ? x->inference.n_forwards : 0;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s[mid] <= i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t ms_explain_request_of(const struct ms_explain *x, uint64_t i)
{
	for (size_t k = x->inference.n_requests; k-- > 0;) /* the newest, where they overlap */
		if (i >= x->inference.requests[k].first_event &&
		    i <= x->inference.requests[k].end_event)
			return k + 1;
	return 0;
}

size_t ms_explain_eval_loop_of(const struct ms_explain *x, uint64_t i)
{
	for (size_t k = 0; k < x->n_eval_loops; k++)
		if (i >= x->eval_loops[k].first_event && i <= x->eval_loops[k].end_event)
			return k + 1;
	return 0;
}

uint64_t ms_explain_requested(const struct ms_explain *x)
{
	uint64_t sum = 0;

	for (unsigned k = 0; k < MS_CAT_COUNT; k++)
		sum += x->cat_bytes[k];
	for (size_t k = 0; k < x->n_user; k++)
		sum += x->user_bytes[k];
	return sum;
}

void ms_explain_release(struct ms_explain *x)
{
	if (!x)
		return;
	ms_free(x->steps);
	ms_free(x->growth);
	ms_free(x->inference.requests);
	ms_free(x->inference.forward_starts);
	for (size_t i = 0; i < x->n_eval_loops; i++) {
		ms_free(x->eval_loops[i].forwards.requests);
		ms_free(x->eval_loops[i].forwards.forward_starts);
	}
	ms_free(x->eval_loops);
	x->eval_loops = NULL;
	x->n_eval_loops = 0;
	x->inference.forward_starts = NULL;
	ms_free(x->contexts);
	x->contexts = NULL;
	x->n_contexts = 0;
	x->inference.requests = NULL;
	x->inference.n_requests = 0;
	x->steps = NULL;
	x->growth = NULL;
	x->n_steps = x->n_growth = 0;
}
