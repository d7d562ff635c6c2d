/* A replay command's decisions in one call (run.h): backend, model first, mid-run, limit. */
#include "replay/run.h"

#include "parse/source.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/status.h"
#include "parse/trace.h"
#include "replay/replay_torch.h"

static struct ms_replay_note *add_note(struct ms_replay_outcome *out, unsigned kind)
{
	struct ms_replay_note *n;

	if (out->n_notes == MS_REPLAY_NOTES_MAX)
		MS_BUG("more than %d replay notes", MS_REPLAY_NOTES_MAX);
	n = &out->notes[out->n_notes++];
	memset(n, 0, sizeof(*n));
	n->kind = kind;
	return n;
}

/* The note's reason: the diagnostic's message, which the note takes. */
static void take_why(struct ms_replay_note *n, struct ms_diag *d)
{
	snprintf(n->why, sizeof(n->why), "%s", d->msg);
	d->msg[0] = 0;
}

/* One replay of the request's trace: the one in memory, else streamed from its file. */
static ms_status replay_once(const struct ms_replay_request *q, const struct ms_replay_opts *o,
                             struct ms_replay_result *r, struct ms_diag *d)
{
	return q->trace ? ms_replay_trace(q->trace, o, r, d)
	       : q->src ? ms_replay_source(q->src, MS_PASS_REPLAY, o, r, d)
	                : ms_replay_run(q->path, o, r, d);
}

/* The request's trace in memory: its own, else loaded (*owned, for ms_trace_free). */
static ms_status trace_of(const struct ms_replay_request *q, const struct ms_trace **t,
                          struct ms_trace **owned, struct ms_diag *d)
{
	ms_status s = MS_OK;

	*owned = NULL;
	if (q->trace)
		*t = q->trace;
	else if (!(s = q->src ? ms_trace_load_source(q->src, NULL, owned, NULL, d)
	                      : ms_trace_load(q->path, NULL, owned, NULL, d)))
		*t = *owned;
	return s;
}

/* A trace that starts mid-run: replayed again from the state rebuilt before its first event. */
static ms_status replay_mid_run(const struct ms_replay_request *q, struct ms_replay_outcome *out,
                                struct ms_replay_result *r, struct ms_diag *d)
{
	const struct ms_trace *t;
	struct ms_trace *owned;
	struct ms_initial_state *init;
	struct ms_replay_note *n;
	enum ms_mid_run what;
	ms_status s;
	uint64_t unmatched = r->unmatched_frees;

	if (!(init = ms_calloc(1, sizeof(*init))))
		return MS_ERR_NOMEM;
	if ((s = trace_of(q, &t, &owned, d))) {
		ms_free(init);
		return s;
	}
	s = ms_replay_from_rebuilt(t, &out->o, init, r, &what, d);
	ms_trace_free(owned);
	if (!s && what == MS_MID_RUN_NO_SEGMENTS)
		add_note(out, MS_REPLAY_NOTE_NO_SEGMENTS)->n = unmatched;
	if (!s && what == MS_MID_RUN_UNSUPPORTED)
		take_why(add_note(out, MS_REPLAY_NOTE_NOT_REBUILT), d);
	/* another allocator's end state need not fit: its replay is a what-if anyway */
	if (!s && what == MS_MID_RUN_MISMATCH && !r->other_allocator[0])
		add_note(out, MS_REPLAY_NOTE_MISMATCH)->n = init->inconsistent;
	if (!s && what == MS_MID_RUN_NOT_PLACED) {
		n = add_note(out, MS_REPLAY_NOTE_NOT_PLACED);
		take_why(n, d);
	}
	if (!s && what == MS_MID_RUN_PLACED) {
		n = add_note(out, MS_REPLAY_NOTE_PLACED);
		n->blocks = init->n_placed;
		n->bytes = init->placed_bytes;
		n->n = init->inconsistent;
		n->inconsistent = init->inconsistent != 0;
	}
	if (!s && what == MS_MID_RUN_REBUILT) {
		n = add_note(out, MS_REPLAY_NOTE_REBUILT);
		n->segments = init->n_segs;
		n->blocks = init->live_blocks;
		n->n = unmatched;
		n->inconsistent = init->inconsistent != 0;
	}
	if (out->o.init == init) {
		out->init = init;
	} else {
		ms_initial_state_release(init);
		ms_free(init);
	}
	return s;
}

/*
 * The model on the simulated device: a trace that starts mid-run replayed from its rebuilt
 * state, the device's size from a recorded OOM, a limit inferred from recorded OOMs the device
 * had room for. out->o is the request's options and becomes those that reproduce r.
 */
/*
 * Whether every recorded OOM of device found the device itself full: its device_free below the
 * segment the request needed (then the cudaMalloc failed for want of memory, whatever a limit);
 * the first one's free bytes and segment.
 */
static int device_full_at_ooms(const struct ms_trace *t, uint32_t device, uint64_t *free_bytes,
                               uint64_t *segment)
{
	int seen = 0;
	for (size_t i = 0; i < t->n_events; i++) {
		const struct ms_event *e = &t->events[i];
		if (e->device != device || e->source != MS_SRC_TORCH || e->action != MS_ACT_OOM)
			continue;
		if (e->addr >= ms_model_default_allocation_size(e->size))
			return 0;
		if (!seen++) {
			*free_bytes = e->addr;
			*segment = ms_model_default_allocation_size(e->size);
		}
	}
	return seen;
}

uint64_t ms_trace_held_reserved(const struct ms_trace *t, uint32_t device)
{
	int64_t now = 0, low = 0, high = 0;
	uint64_t end = 0;

	for (size_t i = 0; i < t->n_events; i++) {
		const struct ms_event *e = &t->events[i];
		if (e->device != device || e->source != MS_SRC_TORCH)
			continue;
		if (e->action == MS_ACT_SEGMENT_ALLOC || e->action == MS_ACT_SEGMENT_MAP)
			now += (int64_t)e->size;
		else if (e->action == MS_ACT_SEGMENT_FREE || e->action == MS_ACT_SEGMENT_UNMAP)
			now -= (int64_t)e->size;
		else
			continue;
		if (now < low)
			low = now;
		if (now > high)
			high = now;
	}
	for (size_t i = 0; i < t->n_segs; i++)
		if (t->segs[i].device == device)
			end += t->segs[i].total_size;
	/* the end state is what was held after the last event: as much before it as now says */
	if (end && (int64_t)end - now + high > high - low)
		return (uint64_t)((int64_t)end - now + high);
	return (uint64_t)(high - low);
}

static int seg_cmp(const void *a, const void *b)
{
	const struct ms_segment *x = *(const struct ms_segment *const *)a,
	                        *y = *(const struct ms_segment *const *)b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * Whether an allocation of device lands in an end-state segment that no segment event of the
 * trace made (nor mapped, for an expandable one): the trace began inside segments it never
 * allocated, a start mid-run that frees nothing it did not allocate. 0 where it cannot tell
 * (no end state, out of memory).
 */
static int allocs_in_unmade_segment(const struct ms_trace *t, uint32_t device)
{
	const struct ms_segment **segs;
	uint8_t *made;
	size_t n = 0;
	int found = 0;

	if (!t->n_segs || !(segs = ms_malloc(t->n_segs * sizeof(*segs))))
		return 0;
	for (size_t i = 0; i < t->n_segs; i++)
		if (t->segs[i].device == device)
			segs[n++] = &t->segs[i];
	if (!n || !(made = ms_calloc(n, 1))) {
		ms_free(segs);
		return 0;
	}
	qsort(segs, n, sizeof(*segs), seg_cmp);
	for (size_t i = 0; i < t->n_events && !found; i++) {
		const struct ms_event *e = &t->events[i];
		size_t lo = 0, hi = n;
		if (e->device != device || e->source != MS_SRC_TORCH ||
		    (e->action != MS_ACT_ALLOC && e->action != MS_ACT_SEGMENT_ALLOC &&
		     e->action != MS_ACT_SEGMENT_MAP))
			continue;
		/* the end-state segment holding e->addr, if any */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (segs[mid]->addr <= e->addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (!lo || e->addr >= segs[lo - 1]->addr + segs[lo - 1]->total_size)
			continue;
		if (e->action != MS_ACT_ALLOC)
			made[lo - 1] = 1;
		else if (!made[lo - 1])
			found = 1;
	}
	ms_free(made);
	ms_free(segs);
	return found;
}

static ms_status run_sim(const struct ms_replay_request *req, struct ms_replay_outcome *out,
                         struct ms_replay_result *r, struct ms_diag *d)
{
	struct ms_replay_opts *o = &out->o, q;
	struct ms_limit_range *lim = &out->lim;
	struct ms_replay_note *n;
	const struct ms_trace *t;
	struct ms_trace *owned;
	uint64_t missed, full_free = 0, full_seg = 0;
	ms_status s;

	s = replay_once(req, o, r, d);
	/*
	 * A trace that starts mid-run frees what it never allocated, or ends with other segments
	 * than its replay from an empty allocator: then the state before its first event is
	 * rebuilt (which loads it whole). A replay that stopped at an OOM cannot tell: rebuild.
	 */
	if (!s && !o->init &&
	    (r->unmatched_frees ||
	     (r->end_segments &&
	      (r->ended_by_oom ||
	       r->end_reserved != (uint64_t)r->stats.reserved_bytes[0].current))))
		s = replay_mid_run(req, out, r, d);
	else if (!s && !o->init && r->end_segments) {
		/* it may also have begun inside segments it never made, freeing nothing of before
		 */
		const struct ms_trace *whole;
		struct ms_trace *loaded;
		int unmade = 0;
		if (!(s = trace_of(req, &whole, &loaded, d))) {
			unmade = allocs_in_unmade_segment(whole, o->device);
			ms_trace_free(loaded);
		}
		if (!s && unmade)
			s = replay_mid_run(req, out, r, d);
	}
	/*
	 * A device size inferred from the recorded OOM bounds the whole run, not only what comes
	 * after it: replay again with it from the start
	 */
	if (!s && r->ended_by_oom && r->device_memory_source == MS_DEVMEM_UNKNOWN &&
	    !o->device_memory) {
		/* it ran out before the recorded OOM that bounds the device: find that bound
		   without the limit */
		struct ms_replay_opts unlimited = *o;
		struct ms_replay_result probe;
		unlimited.limit = 0;
		unlimited.limit_given = 0;
		unlimited.fraction = 0;
		unlimited.no_recorded_limit = 1;
		if (replay_once(req, &unlimited, &probe, d) == MS_OK &&
		    probe.device_memory_source == MS_DEVMEM_FROM_OOM) {
			r->device_memory_source = MS_DEVMEM_FROM_OOM;
			r->device_memory = probe.device_memory;
			r->oom_seen = 1;
			r->oom_reserved = probe.oom_reserved;
			r->oom_device_free = probe.oom_device_free;
		}
		d->msg[0] = 0;
		ms_replay_result_release(&probe);
	}
	if (!s && r->device_memory_source == MS_DEVMEM_FROM_OOM && !o->device_memory) {
		uint64_t ores = r->oom_reserved, ofree = r->oom_device_free;
		o->device_memory = r->device_memory;
		o->device_memory_from_oom = 1;
		ms_replay_result_release(r);
		s = replay_once(req, o, r, d);
		if (!s &&
		    !r->oom_seen) { /* the bound's figures, where this replay did not get there */
			r->oom_seen = 1;
			r->oom_reserved = ores;
			r->oom_device_free = ofree;
		}
	}
	/*
	 * With the device's size known, what its recorded OOM shows held outside PyTorch beyond
	 * the raw CUDA events is one figure, taken as constant over the whole run: replay again
	 * with it from the start, or the cache PyTorch gave back before the OOM for want of it
	 * would read as empty_cache() calls, and settings would peak beyond what PyTorch could use
	 */
	if (!s && !o->outside_unseen && r->oom_seen && !r->n_outside_points &&
	    (r->device_memory_source == MS_DEVMEM_RECORDED ||
	     r->device_memory_source == MS_DEVMEM_GIVEN) &&
	    r->outside_at_oom > r->external_at_oom &&
	    r->outside_at_oom - r->external_at_oom < r->device_memory) {
		struct ms_replay_result first = *r;
		o->outside_unseen = r->outside_at_oom - r->external_at_oom;
		memset(r, 0, sizeof(*r));
		s = replay_once(req, o, r, d);
		if (!s && !r->oom_seen) { /* the figures, where this replay did not get there */
			r->oom_seen = 1;
			r->oom_reserved = first.oom_reserved;
			r->oom_device_free = first.oom_device_free;
			r->outside_at_oom = first.outside_at_oom;
			r->external_at_oom = first.external_at_oom;
		}
		ms_replay_result_release(&first);
	}
	if (s || !r->recorded_ooms || o->limit || o->fraction > 0 || r->limit)
		return s;
	/* on a device of another size than the recorded one (the user's what-if), OOMs the replay
	   gets past are the answer, not a limit to infer */
	if (o->device_memory && !o->device_memory_from_oom && r->device_memory_recorded &&
	    o->device_memory != r->device_memory_recorded)
		return s;
	/*
	 * OOMs that the recorded settings' replay does not have, with room on the device: the job
	 * ran under a per-process limit. It is a property of the job, found with the recorded
	 * settings whatever --alloc-conf asks (which then replays under it).
	 */
	if ((s = trace_of(req, &t, &owned, d)))
		return s;
	q = *o;
	q.alloc_conf = NULL;
	missed = r->missed_ooms;
	if (o->alloc_conf) {
		struct ms_replay_result rr;
		if ((s = ms_replay_trace(t, &q, &rr, d))) {
			ms_replay_result_release(&rr);
			ms_trace_free(owned);
			return s;
		}
		missed = rr.missed_ooms;
		ms_replay_result_release(&rr);
	}
	if (!missed) {
		ms_trace_free(owned);
		return MS_OK;
	}
	if (device_full_at_ooms(t, o->device, &full_free, &full_seg)) {
		/* the device itself was full: no per-process limit is needed to explain it */
		n = add_note(out, MS_REPLAY_NOTE_DEVICE_FULL);
		n->n = r->recorded_ooms;
		n->bytes = full_free;
		n->blocks = full_seg;
		ms_trace_free(owned);
		return MS_OK;
	}
	s = ms_replay_infer_limit(t, &q, &lim->lo, &lim->hi, d);
	if (s == MS_OK) {
		/* never below what the job is known to have held under it */
		lim->held = ms_trace_held_reserved(t, o->device);
		if (lim->lo < lim->held) {
			lim->raised = 1;
			lim->lo = lim->held;
			if (lim->hi < lim->lo)
				lim->hi = lim->lo;
		}
		lim->inferred = 1;
		lim->used = lim->lo + (lim->hi - lim->lo) / 2;
		o->limit = lim->used;
		ms_replay_result_release(r);
		s = ms_replay_trace(t, o, r, d);
		r->limit_inferred = 1;
		n = add_note(out, MS_REPLAY_NOTE_LIMIT_INFERRED);
		n->n = r->recorded_ooms;
		n->lim = *lim;
	} else if (s == MS_ERR_UNSUPPORTED) {
		take_why(add_note(out, MS_REPLAY_NOTE_NO_LIMIT), d);
		s = MS_OK;
	}
	ms_trace_free(owned);
	return s;
}

/*
 * The GPU backends replay after the model on the simulated device: the limit (inferred when the
 * trace needs one) and, for torch, the program's empty_cache() calls come from it (out->model).
 * Mid-run traces are refused: only the model replays them from a rebuilt state.
 */
static ms_status run_model_first(const struct ms_replay_request *q, struct ms_replay_outcome *out,
                                 const char *backend, struct ms_diag *d)
{
	struct ms_replay_opts asked = out->o;
	ms_status s = run_sim(q, out, &out->model, d);
	uint64_t limit = out->o.limit;

	/* of the simulated device's replay only its limit carries over */
	if (out->init) {
		ms_initial_state_release(out->init);
		ms_free(out->init);
		out->init = NULL;
	}
	out->o = asked;
	if (s)
		return s;
	if (out->model.rebuilt)
		return ms__diag_set(d, MS_ERR_UNSUPPORTED, -1, -1,
		                    "--backend %s: the trace starts mid-run; only sim replays it "
		                    "from a rebuilt state",
		                    backend);
	out->o.limit = limit;
	/*
	 * A device size inferred from a recorded OOM is what PyTorch could use then: the real GPU
	 * has more (nothing else holds it now), so PyTorch's allocator gets that much as a limit
	 */
	if (!out->o.limit && !out->model.limit &&
	    out->model.device_memory_source == MS_DEVMEM_FROM_OOM) {
		out->o.limit = out->model.device_memory;
		out->model.limit = out->model.device_memory;
	}
	return MS_OK;
}

static void on_sigint(int sig)
{
	(void)sig;
	ms_cuda_interrupted = 1;
}

/*
 * The model first on the simulated device (the limit, inferred if the trace needs one), then
 * the model again over the real device; Ctrl-C ends the replay at the next device call and
 * everything is freed.
 */
static ms_status run_cuda(const struct ms_replay_request *q, struct ms_replay_outcome *out,
                          struct ms_replay_result *r, struct ms_diag *d)
{
	struct ms_replay_opts o;
	struct sigaction sa, old;
	uint64_t fr, total;
	ms_status s;

	if ((s = run_model_first(q, out, "cuda", d)) ||
	    (s = ms_cuda_open((int)out->o.device, out->o.limit, &out->dev, d)))
		return s;
	ms_cuda_mem_info(out->dev, &fr, &total);
	o = out->o;
	o.device_memory = total; /* the real device: its cudaMalloc says when it is full */
	o.dev = ms_cuda_model_device(out->dev);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old);
	s = replay_once(q, &o, r, d);
	r->device_memory_source = MS_DEVMEM_REAL;
	sigaction(SIGINT, &old, NULL);
	snprintf(r->backend, sizeof(r->backend), "cuda");
	if (!s && ms_cuda_interrupted)
		s = ms__diag_set(d, MS_ERR_BACKEND, -1, -1,
		                 "--backend cuda: interrupted; device memory freed");
	return s;
}

/* The model first, then PyTorch's allocator through the plugin found in libdir. */
static ms_status run_torch(const struct ms_replay_request *q, struct ms_replay_outcome *out,
                           struct ms_replay_result *r, struct ms_diag *d)
{
	char plugin[4200];
	ms_status s;

	if ((s = run_model_first(q, out, "torch", d)))
		return s;
	if (!q->libdir)
		return ms__diag_set(d, MS_ERR_BACKEND, -1, -1,
		                    "--backend torch: the plugins' folder is not found (set "
		                    "MEMSNAP_LIBDIR)");
	snprintf(plugin, sizeof(plugin), "%s/libmemsnap_torch_replay.so", q->libdir);
	if (access(plugin, R_OK) != 0)
		return ms__diag_set(d, MS_ERR_BACKEND, -1, -1,
		                    "--backend torch: %s: not built (MEMSNAP_TORCH needs "
		                    "PyTorch and CUDA at build time)",
		                    plugin);
	return ms_replay_torch(q->path, q->trace, plugin, &out->o, &out->model, r, d);
}

ms_status ms_replay_request_run(const struct ms_replay_request *q, struct ms_replay_outcome *out,
                                struct ms_replay_result *r, struct ms_diag *diag)
{
	struct ms_diag own = MS_DIAG_INIT;
	struct ms_diag *d = diag ? diag : &own;

	memset(out, 0, sizeof(*out));
	out->o = q->o;
	switch (q->backend) {
	case MS_REPLAY_CUDA:
		return run_cuda(q, out, r, d);
	case MS_REPLAY_TORCH:
		return run_torch(q, out, r, d);
	default:
		return run_sim(q, out, r, d);
	}
}

void ms_replay_outcome_release(struct ms_replay_outcome *out)
{
	if (out->init) {
		ms_initial_state_release(out->init);
		ms_free(out->init);
	}
	ms_replay_result_release(&out->model);
	ms_cuda_close(out->dev);
	memset(out, 0, sizeof(*out));
}
