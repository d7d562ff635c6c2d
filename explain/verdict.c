/* Would the job have survived under a setting (verdict.h): the death, the evidence, the decision.
 */
#include "explain/verdict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/hash.h"
#include "common/buf.h"
#include "parse/trace.h"
#include "replay/site.h"
#include "replay/whatif.h"

const char *ms_survives_name(unsigned survives)
{
	return survives == MS_SURVIVES_YES ? "yes" : survives == MS_SURVIVES_NO ? "no" : "unknown";
}

static int is_dev_alloc_event(const struct ms_event *e, uint32_t device)
{
	return e->device == device && e->source == MS_SRC_TORCH &&
	       (e->action == MS_ACT_ALLOC || e->action == MS_ACT_FREE_REQUESTED ||
	        e->action == MS_ACT_FREE_COMPLETED);
}

/* [first, end) of step k (numbered from 0) */
static uint64_t step_end(const struct ms_trace *t, const struct ms_explain *x, size_t k)
{
	return k + 1 < x->n_steps ? x->steps[k + 1].first_event : t->n_events;
}

/* The failed request as the step's alloc of orig_size n asked for it: the OOM entry's size is
 * the request rounded (512 bytes, or a power-of-two division) */
static int same_request(uint64_t n, uint64_t oom_size)
{
	return n <= oom_size && (oom_size - n < 512 || oom_size < 2 * n);
}

/*
 * An earlier step that began with the dying step's requests, the highest of them: the dying
 * step's allocations before the failure, in order and of the same sizes, and then the failed
 * request, among the step's allocations. The step may make others besides, up to half as many
 * and 16 (the first step also builds the model, cuBLAS makes its workspace once): those are
 * the `extras`, matched the same way wherever the step is copied (copy_step).
 */
#define MAX_EXTRAS(n) ((n) / 2 + 16)

static void find_like_step(const struct ms_trace *t, uint32_t device, const struct ms_explain *x,
                           struct ms_death *d, const uint64_t *prefix, size_t n)
{
	uint64_t best = 0;

	for (size_t j = 0; j + 1 < d->dying_step; j++) {
		uint64_t end = step_end(t, x, j), c = 0, from = 0, extras = 0;
		int found = 0;
		for (uint64_t i = x->steps[j].first_event;
		     i < end && !found && extras <= MAX_EXTRAS(n); i++) {
			const struct ms_event *e = &t->events[i];
			if (e->device != device || e->source != MS_SRC_TORCH ||
			    e->action != MS_ACT_ALLOC)
				continue;
			if (c < n && e->size == prefix[c]) {
				c++;
			} else if (c == n && same_request(e->size, d->request)) {
				found = 1;
				from = i;
			} else {
				extras++;
			}
		}
		if (found && extras <= MAX_EXTRAS(n) &&
		    (!d->like_step || x->steps[j].peak_requested > best)) {
			d->like_step = j + 1;
			d->like_from = from;
			best = x->steps[j].peak_requested;
		}
	}
}

/* The demand's rise: the peaks of the complete steps before the dying one, rising to it */
static void find_rise(const struct ms_explain *x, struct ms_death *d)
{
	size_t last = d->dying_step - 1; /* complete steps: 1 .. last */
	size_t r = 0;
	uint64_t p;

	if (last < 3)
		return;
	while (r + 1 < last) {
		uint64_t hi = x->steps[last - 1 - r].peak_requested;
		uint64_t lo = x->steps[last - 2 - r].peak_requested;
		if (hi <= lo || hi - lo < hi / 100)
			break;
		r++;
	}
	if (r < 2) /* three steps rising at the least */
		return;
	p = x->steps[last - 1].peak_requested;
	d->rising_steps = r + 1;
	d->rise_per_step = (p - x->steps[last - 1 - r].peak_requested) / r;
	d->projected_dying = p + d->rise_per_step;
	/* the dying step asked for at least what it had when it failed */
	if (x->steps[d->dying_step - 1].peak_requested + d->request > d->projected_dying) {
		d->projected_dying = x->steps[d->dying_step - 1].peak_requested + d->request;
		d->projected_from_failure = 1;
	}
	d->projected_next = d->projected_dying + d->rise_per_step;
}

ms_status ms_death_find(const struct ms_trace *t, uint32_t device, const struct ms_explain *x,
                        struct ms_death *d)
{
	uint64_t first_oom = UINT64_MAX, last_oom = UINT64_MAX, *prefix = NULL;
	size_t n = 0, cap = 0;

	memset(d, 0, sizeof(*d));
	d->cut_short = t->cut_short;
	for (uint64_t i = 0; i < t->n_events; i++) {
		const struct ms_event *e = &t->events[i];
		if (e->device != device || e->source != MS_SRC_TORCH)
			continue;
		if (e->action == MS_ACT_OOM) {
			if (first_oom == UINT64_MAX)
				first_oom = i;
			last_oom = i;
		} else if (e->action == MS_ACT_ALLOC && first_oom != UINT64_MAX) {
			d->went_on = 1;
			if (last_oom != UINT64_MAX && i > last_oom)
				last_oom = UINT64_MAX; /* it went on after the last one too */
		}
	}
	if (last_oom == UINT64_MAX || d->cut_short)
		return MS_OK;
	d->died = 1;
	d->fail_index = last_oom;
	d->request = t->events[last_oom].size;
	/* steps found by repetition may be a model's layers in one pass: no step to judge by */
	for (size_t k = 0; k < x->n_steps && !x->steps_by_repetition; k++)
		if (x->steps[k].first_event <= last_oom)
			d->dying_step = k + 1;
	if (!d->dying_step)
		return MS_OK;
	for (uint64_t i = x->steps[d->dying_step - 1].first_event; i < last_oom; i++) {
		const struct ms_event *e = &t->events[i];
		if (e->device != device || e->source != MS_SRC_TORCH || e->action != MS_ACT_ALLOC)
			continue;
		if (n == cap) {
			uint64_t *p = ms_realloc(prefix, (cap = cap ? 2 * cap : 256) * sizeof(*p));
			if (!p) {
				ms_free(prefix);
				return MS_ERR_NOMEM;
			}
			prefix = p;
		}
		prefix[n++] = e->size;
	}
	d->prefix_allocs = n;
	find_like_step(t, device, x, d, prefix, n);
	ms_free(prefix);
	for (size_t j = 0; j + 1 < d->dying_step; j++)
		if (!d->highest_step ||
		    x->steps[j].peak_requested > x->steps[d->highest_step - 1].peak_requested)
			d->highest_step = j + 1;
	find_rise(x, d);
	return MS_OK;
}

/* ---- the remaining requests, replayed after the failure ---- */

/* A verdict's own replay: its outcome alone, none of the caller's hooks or logs */
static void quiet(struct ms_replay_opts *q)
{
	q->no_segment_log = 1;
	q->snap = 0;
	q->n_more_snaps = 0;
	q->on_event = NULL;
	q->on_release = NULL;
	q->peak_gate = NULL;
	q->on_annotation = NULL;
}

struct cont {
	struct ms_event *ev;
	size_t n, cap;
	struct ms_u64map map; /* an address of the step copied -> the address it takes */
	uint64_t fresh;
	ms_status err;
};

static void cont_push(struct cont *c, const struct ms_event *e, uint64_t addr, int64_t t_ns)
{
	if (c->err)
		return;
	if (c->n == c->cap) {
		size_t nc = c->cap ? 2 * c->cap : 1024;
		struct ms_event *p = ms_realloc(c->ev, nc * sizeof(*p));
		if (!p) {
			c->err = MS_ERR_NOMEM;
			return;
		}
		c->ev = p;
		c->cap = nc;
	}
	c->ev[c->n] = *e;
	c->ev[c->n].addr = addr;
	c->ev[c->n].t_ns = t_ns;
	c->n++;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * A copied step ends whole: what it made and did not free by its end (the outputs a later step
 * frees, or the program's next assignment), and the dying step's blocks it held, are freed
 * there, in address order. What it made to keep was never copied (kept_from).
 */
static void end_copy(struct cont *c, uint32_t device, const struct ms_u64map *live, int64_t t_ns)
{
	uint64_t *addrs;
	size_t n = 0;
	struct ms_event e;

	if (c->err)
		return;
	if (!(addrs = ms_malloc((c->map.n ? c->map.n : 1) * sizeof(*addrs)))) {
		c->err = MS_ERR_NOMEM;
		return;
	}
	for (size_t k = 0; k < c->map.cap; k++) {
		uint64_t v = c->map.vals[k];
		if (c->map.keys[k] && v && (v >= (1ull << 62) || (live && ms_u64map_get(live, v))))
			addrs[n++] = v;
	}
	qsort(addrs, n, sizeof(*addrs), cmp_u64);
	memset(&e, 0, sizeof(e));
	e.device = (uint16_t)device;
	e.source = MS_SRC_TORCH;
	e.pool = MS_POOL_UNKNOWN;
	for (size_t k = 0; k < n; k++) {
		e.action = MS_ACT_FREE_REQUESTED;
		cont_push(c, &e, addrs[k], t_ns);
		e.action = MS_ACT_FREE_COMPLETED;
		cont_push(c, &e, addrs[k], t_ns);
	}
	ms_u64map_clear(&c->map);
	ms_free(addrs);
}

/*
 * The allocations of [from, end) still alive at event `upto` (the dying step's start): what the
 * step made to keep (the model, the optimizer's state, a workspace made once), which the dying
 * step holds already, into kept (keys: their alloc events).
 */
static ms_status kept_from(const struct ms_trace *t, uint32_t device, uint64_t from, uint64_t end,
                           uint64_t upto, struct ms_u64map *kept)
{
	struct ms_u64map live = MS_U64MAP_INIT;
	ms_status s = MS_OK;

	ms_u64map_clear(kept);
	for (uint64_t i = from; i < upto && !s; i++) {
		const struct ms_event *e = &t->events[i];
		if (!is_dev_alloc_event(e, device))
			continue;
		if (e->action == MS_ACT_ALLOC && i < end)
			s = ms_u64map_put(&live, e->addr, i);
		else if (e->action == MS_ACT_FREE_REQUESTED)
			ms_u64map_del(&live, e->addr, NULL);
	}
	for (size_t k = 0; k < live.cap && !s; k++)
		if (live.keys[k])
			s = ms_u64map_put(kept, live.vals[k], 1);
	ms_u64map_release(&live);
	return s;
}

/*
 * Copy the events of [from, end) of device: allocations before `emit_from` take the addresses
 * in `as` (the dying step's, in order) and are not copied; later ones take fresh addresses,
 * except those still alive when the dying step began (`kept`: the dying step has its own). A
 * free is copied where its block is one the copy allocated, or one of `as` still live (`live`);
 * a free of a block from before the step is left out (its memory stays: the evidence errs on
 * the side of too much memory held).
 */
static void copy_step(struct cont *c, const struct ms_trace *t, uint32_t device, uint64_t from,
                      uint64_t end, uint64_t emit_from, const uint64_t *as, const uint64_t *as_size,
                      size_t n_as, const struct ms_u64map *live, uint64_t dying_first, int64_t t_ns)
{
	struct ms_u64map kept = MS_U64MAP_INIT;
	size_t k = 0;

	if ((c->err = kept_from(t, device, from, end, dying_first, &kept))) {
		ms_u64map_release(&kept);
		return;
	}
	ms_u64map_clear(&c->map);
	for (uint64_t i = from; i < end && !c->err; i++) {
		const struct ms_event *e = &t->events[i];
		uint64_t *to;
		if (!is_dev_alloc_event(e, device))
			continue;
		if (e->action == MS_ACT_ALLOC) {
			uint64_t a;
			if (i < emit_from) {
				/* the dying step's block of this place, or an extra (0: no block
				   the copy frees) */
				a = k < n_as && e->size == as_size[k] ? as[k++] : 0;
			} else if (ms_u64map_get(&kept, i)) {
				a = 0; /* kept: made once, held by the dying step already */
			} else {
				a = c->fresh;
				c->fresh += 1u << 20;
			}
			if (ms_u64map_put(&c->map, e->addr, a))
				c->err = MS_ERR_NOMEM;
			else if (i >= emit_from && a)
				cont_push(c, e, a, t_ns);
			continue;
		}
		if (!(to = ms_u64map_get(&c->map, e->addr)))
			continue; /* allocated before the step */
		if (i >= emit_from && *to &&
		    (*to >= (1ull << 62) || (live && ms_u64map_get(live, *to))))
			cont_push(c, e, *to, t_ns);
		if (e->action == MS_ACT_FREE_COMPLETED)
			ms_u64map_del(&c->map, e->addr, NULL);
	}
	ms_u64map_release(&kept);
	end_copy(c, device, live, t_ns);
}

/*
 * The trace up to the failure, then the like step's requests from the one that failed on, then
 * the highest step whole; replayed under o with limit (0: o's own).
 * *ran_out: 1 where it ran out after the failure, 2 before it, 0 not.
 */
static ms_status continued_replay(const struct ms_trace *t, const struct ms_replay_opts *o,
                                  const struct ms_death *d, const struct ms_explain *x,
                                  uint64_t limit, int *ran_out, uint64_t *peak_reserved,
                                  uint64_t *peak_allocated, char *err, size_t errcap)
{
	struct cont c;
	struct ms_u64map live;
	uint64_t *as = NULL, *as_size = NULL;
	size_t n_as = 0, cap_as = 0, n_anns = 0;
	uint64_t kfirst = x->steps[d->dying_step - 1].first_event;
	int64_t t_ns = d->fail_index ? t->events[d->fail_index - 1].t_ns : 0;
	struct ms_trace synth;
	struct ms_replay_opts q = *o;
	struct ms_replay_result r;
	struct ms_diag diag = MS_DIAG_INIT;
	ms_status s;

	memset(&c, 0, sizeof(c));
	c.fresh = 1ull << 62; /* above every address a device has */
	live = (struct ms_u64map)MS_U64MAP_INIT;
	c.map = (struct ms_u64map)MS_U64MAP_INIT;
	/* the dying step's allocations before the failure, and those still live */
	for (uint64_t i = kfirst; i < d->fail_index && !c.err; i++) {
		const struct ms_event *e = &t->events[i];
		if (!is_dev_alloc_event(e, o->device))
			continue;
		if (e->action == MS_ACT_ALLOC) {
			if (n_as == cap_as) {
				size_t nc = cap_as ? 2 * cap_as : 256;
				uint64_t *p = ms_realloc(as, nc * sizeof(*p));
				uint64_t *ps = p ? ms_realloc(as_size, nc * sizeof(*ps)) : NULL;
				if (p)
					as = p;
				if (ps)
					as_size = ps;
				if (!p || !ps) {
					c.err = MS_ERR_NOMEM;
					break;
				}
				cap_as = nc;
			}
			as_size[n_as] = e->size;
			as[n_as++] = e->addr;
			if (ms_u64map_put(&live, e->addr, 1))
				c.err = MS_ERR_NOMEM;
		} else if (e->action == MS_ACT_FREE_REQUESTED) {
			ms_u64map_del(&live, e->addr, NULL);
		}
	}
	if (!c.err) {
		for (uint64_t i = 0; i < d->fail_index; i++)
			cont_push(&c, &t->events[i], t->events[i].addr, t->events[i].t_ns);
		copy_step(&c, t, o->device, x->steps[d->like_step - 1].first_event,
		          step_end(t, x, d->like_step - 1), d->like_from, as, as_size, n_as, &live,
		          kfirst, t_ns);
		if (d->highest_step)
			copy_step(&c, t, o->device, x->steps[d->highest_step - 1].first_event,
			          step_end(t, x, d->highest_step - 1), 0, NULL, NULL, 0, NULL,
			          kfirst, t_ns);
	}
	ms_free(as);
	ms_free(as_size);
	ms_u64map_release(&live);
	ms_u64map_release(&c.map);
	if (c.err) {
		ms_free(c.ev);
		return c.err;
	}
	while (n_anns < t->n_anns && t->anns[n_anns].event_index <= d->fail_index)
		n_anns++;
	synth = *t;
	synth.events = c.ev;
	synth.n_events = synth.cap_events = c.n;
	synth.n_anns = n_anns;
	synth.n_segs = 0; /* the end state is of the run that died */
	synth.cut_short = 0;
	if (limit)
		q.limit = limit;
	quiet(&q);
	s = ms_replay_trace(&synth, &q, &r, &diag);
	if (!s) {
		*ran_out = !r.has_oom ? 0 : r.first_oom.index >= d->fail_index ? 1 : 2;
		*peak_reserved = (uint64_t)r.stats.reserved_bytes[0].peak;
		*peak_allocated = (uint64_t)r.stats.allocated_bytes[0].peak;
	} else {
		snprintf(err, errcap, "%.200s", diag.msg[0] ? diag.msg : ms_strerror(s));
	}
	ms_replay_result_release(&r);
	ms_free(c.ev);
	return s;
}

/* Replay the whole trace under o at limit; 1 where it runs out, 0 not, -1 error */
static int whole_runs_out(const struct ms_trace *t, const struct ms_replay_opts *o, uint64_t limit)
{
	struct ms_replay_opts q = *o;
	struct ms_replay_result r;
	struct ms_diag diag = MS_DIAG_INIT;
	int out;

	q.limit = limit;
	quiet(&q);
	out = ms_replay_trace(t, &q, &r, &diag) ? -1 : r.has_oom ? 1 : 0;
	ms_replay_result_release(&r);
	return out;
}

#define SAY(...) snprintf(out->why, sizeof(out->why), __VA_ARGS__)

/* What the capacity is, in words */
static const char *cap_noun(const struct ms_capacity *cap)
{
	return cap->from == MS_CAP_DEVICE ? "what PyTorch could use of the device"
	       : cap->from == MS_CAP_HELD ? "what the job held when it ran"
	                                  : "the limit";
}

/* The limit less the most the replay had allocated at once: how much more the job could have
 * asked for (reserved bytes grow to fill a limit as the allocator retries, allocated ones do
 * not) */
static void margin_of(struct ms_survival *out, uint64_t cap, uint64_t allocated_peak)
{
	out->margin_known = cap != 0;
	out->margin = cap > allocated_peak ? cap - allocated_peak : 0;
}

static ms_status judge(const struct ms_trace *t, const struct ms_replay_opts *o,
                       const struct ms_death *d, const struct ms_explain *x,
                       const struct ms_capacity *cap, const struct ms_replay_result *whole,
                       struct ms_survival *out)
{
	uint64_t lim_lo = cap->from ? cap->lo : 0, lim_hi = cap->from ? cap->hi : 0;
	int ranged = lim_lo != lim_hi;
	uint64_t peak = (uint64_t)whole->stats.reserved_bytes[0].peak;
	char b1[32], b2[32], b3[32];

	memset(out, 0, sizeof(*out));
	margin_of(out, lim_lo, (uint64_t)whole->stats.allocated_bytes[0].peak);
	if (whole->has_oom) {
		/* it runs out: at the inferred limit's highest too? */
		if (ranged && whole_runs_out(t, o, lim_hi) != 1) {
			SAY("the replay runs out of memory at event %llu under the inferred "
			    "limit's "
			    "middle, not at its highest (%s): the limit decides",
			    (unsigned long long)whole->first_oom.index,
			    ms_format_size(b1, sizeof(b1), lim_hi));
			out->margin_known = 0; /* the limit decides: no margin to give */
			return MS_OK;
		}
		out->survives = MS_SURVIVES_NO;
		out->margin_known = 0; /* it has none */
		SAY("the replay runs out of memory at event %llu (%s requested, %s allocated, %s "
		    "reserved)%s",
		    (unsigned long long)whole->first_oom.index,
		    ms_format_size(b1, sizeof(b1), whole->first_oom.o.requested),
		    ms_format_size(b2, sizeof(b2), whole->first_oom.o.allocated),
		    ms_format_size(b3, sizeof(b3), whole->first_oom.o.reserved),
		    ranged ? ", over the inferred limit's whole range" : "");
		return MS_OK;
	}
	if (d->cut_short) {
		SAY("the trace is cut short: what the job did after it is not known");
		return MS_OK;
	}
	if (!lim_hi) {
		SAY("no limit is known (the replay is unbounded: --limit or --device-memory)");
		return MS_OK;
	}
	if (cap->from == MS_CAP_HELD) {
		/* the job had at least what it held; the replay ran without a limit */
		if (d->died || d->went_on) {
			SAY("no limit is known, and the job ran out of memory: what it could use "
			    "is not "
			    "known (--limit or --device-memory)");
			return MS_OK;
		}
		if (peak > lim_lo) {
			SAY("no limit is known, and the replay under this setting reserves more "
			    "(%s) than "
			    "the job held when it ran (%s): whether the device had that much is "
			    "not "
			    "known",
			    ms_format_size(b1, sizeof(b1), peak),
			    ms_format_size(b2, sizeof(b2), lim_lo));
			out->margin_known = 0; /* the limit decides: no margin to give */
			return MS_OK;
		}
		out->survives = MS_SURVIVES_YES;
		SAY("the job ran to the end of the trace; no limit is known, but the replay under "
		    "this "
		    "setting never reserves more than the job held at once when it ran (%s)",
		    ms_format_size(b1, sizeof(b1), lim_lo));
		return MS_OK;
	}
	if (d->went_on) {
		SAY("the job caught a recorded OOM and went on without the memory: what it would "
		    "have "
		    "done with it, and whether that fits, the trace cannot tell");
		return MS_OK;
	}
	if (!d->died) {
		/* the whole job is in the trace: the replay completing is the answer */
		if (ranged && whole_runs_out(t, o, lim_lo) != 0) {
			SAY("the replay completes under the inferred limit's middle, not at its "
			    "lowest "
			    "(%s): the limit decides",
			    ms_format_size(b1, sizeof(b1), lim_lo));
			out->margin_known = 0; /* the limit decides: no margin to give */
			return MS_OK;
		}
		out->survives = MS_SURVIVES_YES;
		SAY("the job ran to the end of the trace, and the replay of all of it under this "
		    "setting stays within %s%s",
		    cap_noun(cap), ranged ? " over the inferred limit's whole range" : "");
		return MS_OK;
	}
	if (d->like_step) {
		int lo_out = 0, hi_out = 0;
		uint64_t lo_peak = 0, hi_peak = 0, lo_alloc = 0, hi_alloc = 0;
		char err[256] = "";
		ms_status s = continued_replay(t, o, d, x, ranged ? lim_lo : 0, &lo_out, &lo_peak,
		                               &lo_alloc, err, sizeof(err));
		if (s == MS_ERR_NOMEM)
			return s;
		if (s) {
			SAY("the dying step's remaining requests could not be replayed: %s", err);
			return MS_OK;
		}
		out->continued = 1;
		out->continued_peak_reserved = lo_peak;
		if (!lo_out) {
			out->survives = MS_SURVIVES_YES;
			margin_of(out, lim_lo, lo_alloc);
			SAY("step %zu, which died, began with the same %llu requests as step %zu; "
			    "that "
			    "step's remaining requests, then step %zu (the highest before it) once "
			    "more, "
			    "replayed after the failure under this setting, stay within %s%s "
			    "(peak reserved %s; assumed: the steps after it are like those before)",
			    d->dying_step, (unsigned long long)d->prefix_allocs, d->like_step,
			    d->highest_step, cap_noun(cap),
			    ranged ? " at the inferred limit's lowest" : "",
			    ms_format_size(b1, sizeof(b1), lo_peak));
			return MS_OK;
		}
		hi_out = lo_out;
		hi_peak = lo_peak;
		if (ranged) {
			s = continued_replay(t, o, d, x, lim_hi, &hi_out, &hi_peak, &hi_alloc, err,
			                     sizeof(err));
			if (s == MS_ERR_NOMEM)
				return s;
			if (s)
				hi_out = 0;
		}
		if (!hi_out) {
			SAY("the dying step's remaining requests (as step %zu made them) fit at "
			    "the "
			    "inferred limit's highest (%s), not at its lowest (%s): the limit "
			    "decides",
			    d->like_step, ms_format_size(b1, sizeof(b1), lim_hi),
			    ms_format_size(b2, sizeof(b2), lim_lo));
			return MS_OK;
		}
		out->survives = MS_SURVIVES_NO;
		out->margin_known = 0; /* it has none */
		SAY("step %zu, which died, began with the same %llu requests as step %zu; %s, "
		    "replayed after the failure under this setting, run%s out of memory",
		    d->dying_step, (unsigned long long)d->prefix_allocs, d->like_step,
		    hi_out == 1 && lo_out == 1
		            ? "its remaining requests (then the highest step once "
		              "more)"
		            : "the trace up to the failure",
		    ranged ? " at every limit of the inferred range" : "");
		return MS_OK;
	}
	if (d->rising_steps && (d->projected_dying > lim_hi || d->projected_next > lim_hi)) {
		out->survives = MS_SURVIVES_NO;
		out->margin_known = 0; /* it has none */
		SAY("demand: the peaks of the last %zu steps rose %s a step; step %zu asks for "
		    "%s%s "
		    "and the next, at that rate, %s: more than the %s PyTorch could use%s (no "
		    "setting "
		    "gives more; assumed: the job goes on growing as it did, for a step or more)",
		    d->rising_steps, ms_format_size(b1, sizeof(b1), d->rise_per_step),
		    d->dying_step, ms_format_size(b2, sizeof(b2), d->projected_dying),
		    d->projected_from_failure ? " (what it held when it failed, with the request)"
		                              : " at that rate",
		    ms_format_size(b3, sizeof(b3), d->projected_next),
		    ms_format_size((char[32]){0}, 32, lim_hi),
		    ranged ? " at the inferred limit's highest" : "");
		return MS_OK;
	}
	if (!d->dying_step) {
		SAY("the job died at the failed request (event %llu), and the trace has no steps: "
		    "what it would have asked for next is not known",
		    (unsigned long long)d->fail_index);
	} else if (d->rising_steps && d->rise_per_step) {
		uint64_t more = (lim_hi - d->projected_next) / d->rise_per_step + 2;
		SAY("the job died at the failed request (event %llu, step %zu), and no earlier "
		    "step "
		    "began with the same requests; the steps' peaks rose %s a step: at that rate "
		    "they outgrow %s%s %llu steps after step %zu, if the job runs that long",
		    (unsigned long long)d->fail_index, d->dying_step,
		    ms_format_size(b1, sizeof(b1), d->rise_per_step),
		    ms_format_size(b2, sizeof(b2), lim_hi),
		    ranged ? " (the inferred limit's highest)" : "", (unsigned long long)more,
		    d->dying_step);
	} else {
		SAY("the job died at the failed request (event %llu, step %zu): no earlier step "
		    "began with the same requests, so what the step would have asked for next is "
		    "not "
		    "known",
		    (unsigned long long)d->fail_index, d->dying_step);
	}
	return MS_OK;
}

/* ---- why the job ran out of memory ---- */

const char *ms_oom_cause_name(unsigned cause)
{
	static const char *const names[MS_CAUSE_COUNT] = {
	        NULL, "demand", "fragmentation", "segment_size", "outside_pytorch", "cache_kept",
	};
	return cause < MS_CAUSE_COUNT ? names[cause] : NULL;
}

static void add_cause(struct ms_oom_verdict *v, unsigned cause, uint64_t bytes)
{
	if (v->n_causes < MS_CAUSE_COUNT) {
		v->causes[v->n_causes].cause = cause;
		v->causes[v->n_causes].bytes = bytes;
		v->n_causes++;
	}
}

/* The request fitted under cap with no fragmentation: segment size or fragmentation */
unsigned ms_oom_fit_cause(const struct ms_replay_oom *f, uint64_t cap)
{
	uint64_t left = cap > f->o.reserved ? cap - f->o.reserved : 0;
	return left >= f->o.rounded && left < f->o.alloc_size ? MS_CAUSE_SEGMENT_SIZE
	                                                      : MS_CAUSE_FRAGMENTATION;
}

/* What the fit cause holds: the free bytes in pieces, or the segment's rounding */
static uint64_t fit_bytes(const struct ms_replay_oom *f, unsigned cause)
{
	return cause == MS_CAUSE_SEGMENT_SIZE ? f->o.alloc_size - f->o.rounded
	                                      : f->o.free_in_reserved;
}

#define WHY(...) snprintf(v->undecided_because, sizeof(v->undecided_because), __VA_ARGS__)

/* A fit cause, unless the dying step's projected demand exceeds what PyTorch could use */
static void fit_or_demand(struct ms_oom_verdict *v, const struct ms_replay_oom *f,
                          const struct ms_death *d, uint64_t cap)
{
	unsigned c = ms_oom_fit_cause(f, cap);
	if (d && d->died && d->rising_steps && f->index == d->fail_index &&
	    d->projected_dying > v->capacity_hi) {
		v->cause = MS_CAUSE_DEMAND;
		v->demand_projected = 1;
		add_cause(v, MS_CAUSE_DEMAND, d->projected_dying - v->capacity_hi);
		add_cause(v, c, fit_bytes(f, c));
		return;
	}
	v->cause = c;
	add_cause(v, c, fit_bytes(f, c));
}

void ms_oom_cause_find(const struct ms_replay_result *r, const struct ms_limit_range *lim,
                       uint64_t limit, const struct ms_death *d, struct ms_oom_verdict *v)
{
	const struct ms_replay_oom *f = &r->first_oom;
	uint64_t demand = f->o.allocated + f->o.requested;
	char b1[32], b2[32];

	memset(v, 0, sizeof(*v));
	if (!r->has_oom)
		return;
	if (f->o.retry_skipped && f->o.releasable) {
		/* PyTorch gave none of its cached segments back: that alone decides */
		v->cause = MS_CAUSE_CACHE_KEPT;
		add_cause(v, MS_CAUSE_CACHE_KEPT, f->o.releasable);
	}
	v->device_full = f->recorded && r->oom_seen && !lim->inferred && !limit &&
	                 r->oom_device_free < f->o.alloc_size;
	v->device_free = r->oom_seen ? r->oom_device_free : 0;
	v->segment_needed = f->o.alloc_size;
	/* measured wherever the device's size is known, full or not (the device's size less
	 * PyTorch's reserved and its free bytes at the OOM, as PyTorch's own message counts it) */
	if (f->recorded && r->oom_seen &&
	    (r->device_memory_source == MS_DEVMEM_RECORDED ||
	     r->device_memory_source == MS_DEVMEM_GIVEN) &&
	    r->device_memory > r->oom_reserved + r->oom_device_free) {
		v->outside_known = 1;
		v->outside_bytes = r->device_memory - r->oom_reserved - r->oom_device_free;
	}
	if (v->device_full) {
		uint64_t cap = r->oom_reserved + r->oom_device_free;
		v->capacity_lo = v->capacity_hi = cap;
		if (v->cause)
			return;
		if (!v->outside_known) {
			if (demand <= cap) {
				unsigned c = ms_oom_fit_cause(f, cap);
				add_cause(v, c, fit_bytes(f, c));
			}
			WHY("the device was full, and whether memory outside PyTorch or the job's "
			    "own "
			    "filled it needs the device's size (--device-memory; a snapshot does "
			    "not "
			    "record it)");
			return;
		}
		if (demand > r->device_memory) {
			/* the whole device would not hold it */
			v->cause = MS_CAUSE_DEMAND;
			add_cause(v, MS_CAUSE_DEMAND, demand - cap);
			add_cause(v, MS_CAUSE_OUTSIDE, v->outside_bytes);
			return;
		}
		if (v->outside_bytes > r->oom_reserved || demand > cap) {
			v->cause = MS_CAUSE_OUTSIDE;
			add_cause(v, MS_CAUSE_OUTSIDE, v->outside_bytes);
			if (demand <= cap) {
				unsigned c = ms_oom_fit_cause(f, cap);
				add_cause(v, c, fit_bytes(f, c));
			} else {
				add_cause(v, MS_CAUSE_DEMAND, demand - cap);
			}
			return;
		}
		fit_or_demand(v, f, d, cap);
		add_cause(v, MS_CAUSE_OUTSIDE, v->outside_bytes);
		return;
	}
	if (lim->inferred) {
		v->capacity_lo = lim->lo;
		v->capacity_hi = lim->hi;
	} else if (limit) {
		v->capacity_lo = v->capacity_hi = limit;
	} else if (r->device_memory != UINT64_MAX) {
		v->capacity_lo = v->capacity_hi = r->device_memory;
	}
	if (v->cause)
		return;
	if (!v->capacity_hi) {
		WHY("what PyTorch could use is not known (no limit, no device size: --limit or "
		    "--device-memory)");
		return;
	}
	if (demand > v->capacity_hi) {
		v->cause = MS_CAUSE_DEMAND;
		add_cause(v, MS_CAUSE_DEMAND, demand - v->capacity_hi);
		return;
	}
	if (demand > v->capacity_lo) {
		WHY("allocated plus the request (%s) lie within the inferred limit's range (%s to "
		    "%s): demand if the limit was below %s, fragmentation if not (--limit settles "
		    "it)",
		    ms_format_size(b1, sizeof(b1), demand),
		    ms_format_size(b2, sizeof(b2), v->capacity_lo),
		    ms_format_size((char[32]){0}, 32, v->capacity_hi), b1);
		return;
	}
	if (v->capacity_hi != v->capacity_lo &&
	    ms_oom_fit_cause(f, v->capacity_hi) != ms_oom_fit_cause(f, v->capacity_lo)) {
		WHY("over the inferred limit's range the request's segment fits at one end and not "
		    "at the other: segment size or fragmentation (--limit settles it)");
		add_cause(v, MS_CAUSE_FRAGMENTATION, f->o.free_in_reserved);
		return;
	}
	fit_or_demand(v, f, d, v->capacity_lo);
}

struct ms_capacity ms_verdict_capacity(const struct ms_trace *t, uint32_t device,
                                       const struct ms_limit_range *lim, uint64_t limit,
                                       uint64_t capacity, const struct ms_oom_verdict *ov)
{
	struct ms_capacity v = {MS_CAP_NONE, 0, 0};
	if (lim->inferred)
		v = (struct ms_capacity){MS_CAP_INFERRED, lim->lo, lim->hi};
	else if (limit)
		v = (struct ms_capacity){MS_CAP_LIMIT, limit, limit};
	else if (ov->device_full || capacity != UINT64_MAX)
		v = (struct ms_capacity){MS_CAP_DEVICE, capacity, capacity};
	else if ((v.lo = v.hi = ms_trace_held_reserved(t, device)))
		v.from = MS_CAP_HELD;
	return v;
}

/* ---- one verdict per device ---- */

ms_status ms_verdict_begin(const struct ms_trace *t, const struct ms_explain *x,
                           const struct ms_replay_opts *o, const struct ms_replay_result *first,
                           const struct ms_limit_range *lim, struct ms_verdict *v)
{
	uint64_t limit = lim->inferred ? 0 : o->limit ? o->limit : first->limit;
	uint64_t capacity;
	ms_status s;

	memset(v, 0, sizeof(*v));
	if ((s = ms_death_find(t, o->device, x, &v->death)))
		return s;
	v->has_oom = first->has_oom;
	snprintf(v->other_allocator, sizeof(v->other_allocator), "%s", first->other_allocator);
	v->oom_index = first->has_oom ? first->first_oom.index : 0;
	v->oom_recorded = first->has_oom && first->first_oom.recorded;
	v->limit_given = o->limit_given;
	v->conf_given = o->alloc_conf != NULL;
	v->device_given = o->device_memory && !o->device_memory_from_oom;
	for (size_t k = 0; first->has_oom && k < x->n_steps && !x->steps_by_repetition; k++)
		if (x->steps[k].first_event <= v->oom_index)
			v->oom_step = k + 1 + x->steps_before_trace;
	ms_oom_cause_find(first, lim, limit, &v->death, &v->oom);
	/* a full device: PyTorch could use what it reserved and what was free, not the device */
	capacity = v->oom.device_full ? v->oom.capacity_lo : limit ? limit : first->device_memory;
	v->cap = ms_verdict_capacity(t, o->device, lim, limit, capacity, &v->oom);
	return MS_OK;
}

static const char *cause_phrase(const struct ms_oom_verdict *v, char *buf, size_t cap)
{
	char b1[32];
	switch (v->cause) {
	case MS_CAUSE_DEMAND:
		snprintf(buf, cap, "%s",
		         v->demand_projected ? "demand (the step outgrows what PyTorch could use)"
		                             : "demand (more than PyTorch could use)");
		break;
	case MS_CAUSE_FRAGMENTATION:
		snprintf(buf, cap,
		         "fragmentation (it would have fit; no free block was large enough)");
		break;
	case MS_CAUSE_SEGMENT_SIZE:
		snprintf(buf, cap,
		         "segment size (the request fit, the segment it asked for did not)");
		break;
	case MS_CAUSE_OUTSIDE:
		snprintf(buf, cap, "memory outside PyTorch (%s of the device; it was full)",
		         ms_format_size(b1, sizeof(b1), v->outside_bytes));
		break;
	case MS_CAUSE_CACHE_KEPT:
		snprintf(buf, cap, "the cache kept by an open use_mem_pool or CUDA graph capture");
		break;
	default:
		snprintf(buf, cap, "undecided: %s", v->undecided_because);
	}
	return buf;
}

/* The headline: what died where and why, then the setting that helps and how sure */
static void headline(struct ms_verdict *v, const struct ms_whatif_row *rows, size_t n)
{
	char cause[400], b1[32];
	size_t yes = SIZE_MAX, unknown = 0, no = 0, past = 0;
	int len;

	if (!v->has_oom && !v->death.died) {
		snprintf(v->headline, sizeof(v->headline), "%s",
		         v->death.cut_short ? "The trace is cut short (its file ends early: a "
		                              "recording killed, or a file cut): "
		                              "what the job did after it is not known."
		         : v->death.went_on ? "The job caught a recorded OOM and went on."
		                            : "No OOM: the job ran to the end of the trace.");
		return;
	}
	for (size_t k = 0; k < n && k < v->n_sv; k++) {
		if (!rows[k].conf || rows[k].s)
			continue; /* the recorded settings, or a setting the model cannot replay */
		if (!rows[k].r.has_oom)
			past++;
		if (v->sv[k].survives == MS_SURVIVES_YES && yes == SIZE_MAX)
			yes = k;
		else if (v->sv[k].survives == MS_SURVIVES_UNKNOWN)
			unknown++;
		else if (v->sv[k].survives == MS_SURVIVES_NO)
			no++;
	}
	if (!v->has_oom) {
		/* the job died, but the replay gets past its OOM (under a limit given above it) */
		len = snprintf(v->headline, sizeof(v->headline),
		               "Out of memory at event %llu; the replay gets past it%s. ",
		               (unsigned long long)v->death.fail_index,
		               v->conf_given     ? " under the settings given"
		               : v->limit_given  ? " under the limit given (above the job's: the "
		                                   "recorded OOM proves it had less)"
		               : v->device_given ? " on the device given (--device-memory)"
		                                 : "");
	} else {
		len = snprintf(v->headline, sizeof(v->headline), "%s at event %llu",
		               v->oom_recorded ? "Out of memory"
		               : v->limit_given
		                       ? "Out of memory in the replay under the limit given"
		                       : "Out of memory in the replay",
		               (unsigned long long)v->oom_index);
		if (v->oom_step && len > 0 && (size_t)len < sizeof(v->headline))
			len += snprintf(v->headline + len, sizeof(v->headline) - (size_t)len,
			                " (step %zu)", v->oom_step);
		if (!v->oom_recorded && len > 0 && (size_t)len < sizeof(v->headline))
			len += snprintf(v->headline + len, sizeof(v->headline) - (size_t)len,
			                ", where the recorded run did not");
		if (len > 0 && (size_t)len < sizeof(v->headline))
			len += snprintf(v->headline + len, sizeof(v->headline) - (size_t)len,
			                ": %s. ", cause_phrase(&v->oom, cause, sizeof(cause)));
	}
	if (len < 0 || (size_t)len >= sizeof(v->headline))
		return;
	if (yes != SIZE_MAX)
		snprintf(v->headline + len, sizeof(v->headline) - (size_t)len,
		         "%s would have saved it (survives: yes%s%s%s).", rows[yes].conf,
		         v->sv[yes].margin_known ? ", " : "",
		         v->sv[yes].margin_known ? ms_format_size(b1, sizeof(b1), v->sv[yes].margin)
		                                 : "",
		         v->sv[yes].margin_known ? " to spare" : "");
	else if (unknown)
		snprintf(v->headline + len, sizeof(v->headline) - (size_t)len,
		         "No setting is known to save it: of %zu tried, %zu get%s past the OOM, "
		         "and for "
		         "%zu the trace cannot tell whether the job would have finished (survives: "
		         "unknown; %zu: no).",
		         unknown + no, past, past == 1 ? "s" : "", unknown, no);
	else if (no)
		snprintf(v->headline + len, sizeof(v->headline) - (size_t)len,
		         "No setting tried saves it (survives: no for each of %zu).", no);
}

ms_status ms_verdict_judge_rows(const struct ms_trace *t, const struct ms_explain *x,
                                const struct ms_replay_opts *o, const struct ms_whatif_row *rows,
                                size_t n, struct ms_verdict *v)
{
	ms_status s;

	ms_free(v->sv);
	if (!(v->sv = ms_calloc(n ? n : 1, sizeof(*v->sv))))
		return MS_ERR_NOMEM;
	v->n_sv = n;
	for (size_t k = 0; k < n; k++) {
		struct ms_replay_opts so = *o;
		so.alloc_conf = rows[k].conf;
		if (rows[k].s) {
			snprintf(v->sv[k].why, sizeof(v->sv[k].why),
			         "the setting could not be replayed: %.400s", rows[k].err);
			continue;
		}
		/* the job's own settings, as it ran (the recorded row, or a row naming exactly the
		   settings it recorded): it did reach the end of the trace */
		int own = !rows[k].conf || (n && !rows[0].conf && rows[0].r.settings_recorded &&
		                            !strcmp(rows[k].conf, rows[0].r.alloc_conf));
		if (own && !o->alloc_conf && !o->limit_given && !o->device_memory &&
		    !v->death.died && !v->death.went_on && !v->death.cut_short &&
		    !rows[k].r.recorded_ooms && !rows[k].r.has_oom) {
			v->sv[k].survives = MS_SURVIVES_YES;
			snprintf(v->sv[k].why, sizeof(v->sv[k].why),
			         "the job ran with these settings to the end of the trace, with no "
			         "OOM (what it did after the trace ends is not in it)");
			continue;
		}
		if ((s = ms_survival_judge(t, &so, &v->death, x, &v->cap, &rows[k].r, &v->sv[k])))
			return s;
	}
	headline(v, rows, n);
	for (size_t k = strlen(v->headline); k && v->headline[k - 1] == ' '; k--)
		v->headline[k - 1] = 0; /* no setting judged: nothing after the cause */
	if (v->other_allocator[0]) {
		char h[sizeof(v->headline)];
		snprintf(h, sizeof(h), "%s", v->headline);
		/* other_allocator is short: the prefix always fits, and the rest is cut to size */
		size_t used = (size_t)snprintf(
		        v->headline, sizeof(v->headline),
		        "A %.31s snapshot, judged by a model of PyTorch's CUDA allocator: ",
		        v->other_allocator);
		snprintf(v->headline + used, sizeof(v->headline) - used, "%.*s",
		         (int)(sizeof(v->headline) - used - 1), h);
	}
	return MS_OK;
}

void ms_verdict_release(struct ms_verdict *v)
{
	ms_free(v->sv);
	v->sv = NULL;
	v->n_sv = 0;
}

/* ---- a snapshot without a trace ---- */

#define OWHY(...) snprintf(o->undecided_because, sizeof(o->undecided_because), __VA_ARGS__)

/* round_size() of the default settings: 512 bytes (§1.2) */
static uint64_t round512(uint64_t n)
{
	return n < 512 ? 512 : (n + 511) / 512 * 512;
}

void ms_end_state_judge(const struct ms_replay_snap *snap, uint64_t request, uint64_t limit,
                        uint64_t device_memory, struct ms_end_state_verdict *v)
{
	struct ms_oom_verdict *o = &v->oom;
	uint64_t cap = limit ? limit : device_memory != UINT64_MAX ? device_memory : 0;
	char b1[32], b2[32];
	size_t bi = 0;
	uint64_t largest[2] = {0, 0}; /* the largest free block of the large and small pools */
	int small;

	memset(v, 0, sizeof(*v));
	v->segments = snap->n_segs;
	for (size_t i = 0; i < snap->n_segs; i++) {
		const struct ms_segment *g = &snap->segs[i];
		v->reserved += g->total_size;
		for (uint32_t k = 0; k < g->n_blocks; k++, bi++) {
			const struct ms_block *b = &snap->blocks[bi];
			if (b->state == MS_BLOCK_ACTIVE_ALLOCATED) {
				v->allocated += b->size;
				v->requested += b->requested_size;
				v->blocks_allocated++;
			} else if (b->state == MS_BLOCK_INACTIVE) {
				v->free_in_reserved += b->size;
				if (b->size > v->largest_free)
					v->largest_free = b->size;
				if (b->size > largest[g->is_small ? 1 : 0])
					largest[g->is_small ? 1 : 0] = b->size;
			}
		}
	}
	if (!request)
		return;
	v->has_request = 1;
	v->request = request;
	v->rounded = round512(request);
	v->segment_needed = ms_model_default_allocation_size(v->rounded);
	/* a request of 1 MiB or less is served from the small pool's blocks only (§1.2) */
	small = v->rounded <= (1u << 20);
	v->fits_free_block = largest[small] >= v->rounded;
	o->segment_needed = v->segment_needed;
	o->capacity_lo = o->capacity_hi = cap;
	if (cap && cap < v->reserved) {
		OWHY("the capacity given (%s) is below what the snapshot holds reserved (%s): the "
		     "job cannot have run under it",
		     ms_format_size(b1, sizeof(b1), cap),
		     ms_format_size(b2, sizeof(b2), v->reserved));
		return;
	}
	if (v->fits_free_block) {
		OWHY("the largest free block of the %s pool (%s) holds the request: the state the "
		     "snapshot recorded would have served it (a snapshot taken in the OOM handler "
		     "comes after the failing step's tensors were freed as the error unwound)",
		     small ? "small" : "large", ms_format_size(b1, sizeof(b1), largest[small]));
		return;
	}
	if (!cap) {
		OWHY("no free block of the %s pool holds the request (rounded: %s, %llu bytes; its "
		     "largest free block: %s, %llu bytes); whether a new %s segment had room needs "
		     "what PyTorch could use (--limit or --device-memory)",
		     small ? "small" : "large", ms_format_size(b1, sizeof(b1), v->rounded),
		     (unsigned long long)v->rounded, ms_format_size(b2, sizeof(b2), largest[small]),
		     (unsigned long long)largest[small],
		     ms_format_size((char[32]){0}, 32, v->segment_needed));
		return;
	}
	if (v->allocated + v->rounded > cap) {
		o->cause = MS_CAUSE_DEMAND;
		add_cause(o, MS_CAUSE_DEMAND, v->allocated + v->rounded - cap);
	} else if (cap >= v->reserved && cap - v->reserved >= v->rounded &&
	           cap - v->reserved < v->segment_needed) {
		o->cause = MS_CAUSE_SEGMENT_SIZE;
		add_cause(o, MS_CAUSE_SEGMENT_SIZE, v->segment_needed - v->rounded);
	} else if (cap >= v->reserved && cap - v->reserved >= v->segment_needed) {
		OWHY("a new %s segment fits in what is left of %s beside the %s reserved: this "
		     "state "
		     "would have served the request",
		     ms_format_size(b1, sizeof(b1), v->segment_needed),
		     ms_format_size(b2, sizeof(b2), cap),
		     ms_format_size((char[32]){0}, 32, v->reserved));
	} else {
		o->cause = MS_CAUSE_FRAGMENTATION;
		add_cause(o, MS_CAUSE_FRAGMENTATION, v->free_in_reserved);
	}
}

void ms_end_state_headline(const struct ms_end_state_verdict *v, char *buf, size_t cap)
{
	char b1[32], b2[32], b3[32];
	const struct ms_oom_verdict *o = &v->oom;

	if (!v->has_request) {
		snprintf(buf, cap,
		         "No trace, an end state only: %s allocated, %s reserved, %s of it free "
		         "(the largest free block %s); the request that failed is not in such a "
		         "file (explain --request SIZE judges one).",
		         ms_format_size(b1, sizeof(b1), v->allocated),
		         ms_format_size(b2, sizeof(b2), v->reserved),
		         ms_format_size(b3, sizeof(b3), v->free_in_reserved),
		         ms_format_size((char[32]){0}, 32, v->largest_free));
		return;
	}
	if (!o->cause) {
		snprintf(buf, cap, "A request of %s against this end state: undecided: %s.",
		         ms_format_size(b1, sizeof(b1), v->request), o->undecided_because);
		return;
	}
	ms_format_size(b1, sizeof(b1), v->request);
	ms_format_size(b3, sizeof(b3), o->capacity_hi);
	if (o->cause == MS_CAUSE_DEMAND)
		snprintf(buf, cap,
		         "A request of %s against this end state: demand (allocated and "
		         "the request exceed the %s PyTorch could use by %s).",
		         b1, b3, ms_format_size(b2, sizeof(b2), o->causes[0].bytes));
	else if (o->cause == MS_CAUSE_SEGMENT_SIZE)
		snprintf(buf, cap,
		         "A request of %s against this end state: segment_size (it fits "
		         "beside the reserved %s under %s; the %s segment it asks for does not).",
		         b1, ms_format_size(b2, sizeof(b2), v->reserved), b3,
		         ms_format_size((char[32]){0}, 32, v->segment_needed));
	else
		snprintf(buf, cap,
		         "A request of %s against this end state: fragmentation (%s free "
		         "in reserved segments, none of it a block that large; no room under %s "
		         "for a new segment).",
		         b1, ms_format_size(b2, sizeof(b2), v->free_in_reserved), b3);
}

ms_status ms_survival_judge(const struct ms_trace *t, const struct ms_replay_opts *o,
                            const struct ms_death *d, const struct ms_explain *x,
                            const struct ms_capacity *cap, const struct ms_replay_result *whole,
                            struct ms_survival *out)
{
	ms_status s = judge(t, o, d, x, cap, whole, out);
	if (!s && out->survives == MS_SURVIVES_YES && whole->rebuilt) {
		/* the state before the trace is the recorded run's, laid out by its settings */
		char why[sizeof(out->why)];
		snprintf(why, sizeof(why), "%s", out->why);
		out->survives = MS_SURVIVES_UNKNOWN;
		snprintf(out->why, sizeof(out->why),
		         "the trace starts mid-run, and what the job did before its first event is "
		         "not "
		         "replayed under this setting (from there on: %.380s)",
		         why);
	}
	return s;
}

void ms_explain_in_at_peak(struct ms_explain_in *in, const struct ms_trace *t, uint32_t device,
                           const struct ms_replay_result *r)
{
	memset(in, 0, sizeof(*in));
	in->t = t;
	in->device = device;
	in->site_depth = 1;
	in->peak_index = r->fullest_at_peak_index;
	in->allocated_at_peak = r->allocated_at_peak_reserved - r->served_oom_at_peak_reserved;
}

ms_status ms_verdict_of_replay(const struct ms_trace *t, const struct ms_replay_opts *o,
                               const struct ms_replay_result *r, const struct ms_limit_range *lim,
                               const struct ms_whatif_row *rows, size_t n_rows,
                               struct ms_verdict *v)
{
	struct ms_explain x;
	struct ms_explain_in in;
	ms_status s;

	memset(v, 0, sizeof(*v)); /* released by the caller whatever happens here */
	ms_explain_in_at_peak(&in, t, (uint32_t)o->device, r);
	if ((s = ms_explain_run(&in, &x)))
		return s;
	if (!(s = ms_verdict_begin(t, &x, o, r, lim, v)))
		s = ms_verdict_judge_rows(t, &x, o, rows, n_rows, v);
	ms_explain_release(&x);
	return s;
}

void ms_verdict_oom_of_replay(const struct ms_trace *t, const struct ms_replay_opts *o,
                              const struct ms_replay_result *r, const struct ms_limit_range *lim,
                              struct ms_oom_verdict *ov, struct ms_death *death, int *has_death)
{
	struct ms_verdict v;

	*has_death = 0;
	memset(ov, 0, sizeof(*ov));
	memset(&v, 0, sizeof(v)); /* released whichever way the cause is found */
	if (!r->has_oom)
		return;
	if (t && !ms_verdict_of_replay(t, o, r, lim, NULL, 0, &v)) {
		*ov = v.oom;
		*death = v.death;
		*has_death = 1;
	} else {
		ms_oom_cause_find(r, lim,
		                  lim->inferred ? 0
		                  : o->limit    ? o->limit
		                                : r->limit,
		                  NULL, ov);
	}
	ms_verdict_release(&v);
}

size_t ms_end_state_sites(const struct ms_trace *t, const struct ms_replay_snap *snap,
                          struct ms_end_site *sites, size_t cap)
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
			if (j == n && n < cap) {
				snprintf(sites[n].label, sizeof(sites[0].label), "%s", label);
				sites[n].bytes = sites[n].blocks = 0;
				n++;
			} else if (j == n)
				continue; /* past the sites kept: counted in the totals only */
			sites[j].bytes += b->size;
			sites[j].blocks++;
		}
	for (size_t i = 1; i < n; i++) /* largest first (few: insertion) */
		for (size_t j = i; j > 0 && sites[j].bytes > sites[j - 1].bytes; j--) {
			struct ms_end_site x = sites[j];
			sites[j] = sites[j - 1];
			sites[j - 1] = x;
		}
	return n;
}
