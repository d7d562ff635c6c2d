/*
 * The second reader (docs/DESIGN.md, "Two readers"; pickle.h, ms_pickle_split): its thread,
 * which reads trace entries from the middle of the input with the fast path, and the merge by
 * which the first reader takes what it read over when it gets there.
 */
#include "parse/pickle_internal.h"

#include <sched.h>
#include <string.h>

#include "common/alloc.h"

/*
 * helper_get's slot idx, at or above what p had published when p2 last looked: p's (and
 * final) once p publishes past it; p2's own once p lands short of it (*mine). NULL: give up.
 */
const struct ms_pk_val *ms__pk_helper_wait(struct ms_pickle *p, uint64_t idx, size_t n_memo,
                                           int *mine)
{
	struct split *x = p->split;

	for (;;) {
		int phase;
		p->n1_seen = atomic_load_explicit(&x->memo_pub, memory_order_acquire);
		if (idx < p->n1_seen)
			break;
		phase = atomic_load_explicit(&x->phase, memory_order_acquire);
		if (phase == SPLIT_ABORT)
			return NULL;
		if (phase == SPLIT_LANDED) {
			if (idx < x->base)
				break;
			if (idx - x->base >= n_memo)
				return NULL;
			*mine = 1;
			return MEMO_AT(p, idx - x->base);
		}
		sched_yield();
	}
	return &x->memo1[idx >> MEMO_SHIFT][idx & (MEMO_CHUNK - 1)];
}

/*
 * The second reader's thread: from the EMPTY_DICT at `at`, in the device list p will be in
 * there (a MARK open right above it), entries the fast way, MARK, APPENDS and FRAME, and
 * nothing else: at anything more it stops, and p goes on from there. Its stack holds the
 * entries since the last MARK (streamed values, as p's would).
 */
#define HELPER_MAX_OPEN ((size_t)1 << 16) /* entries after one MARK */
static void helper_read(struct ms_pickle *p);
static void *helper_main(void *arg)
{
	struct ms_pickle *p = arg;

	helper_read(p);
	/* p may take everything over now: the thread's exit is joined later (split_join) */
	atomic_store_explicit(&p->split->done, 1, memory_order_release);
	return NULL;
}

static void helper_read(struct ms_pickle *p)
{
	struct split *x = p->split;
	const unsigned char *buf = p->buf, *ip, *end = buf + p->len;
	size_t sp = 0;
	int mark_open = 1;
	ms_status s = MS_OK;

	if (x->at == SPLIT_AUTO) {
		/*
		 * Where p has got to decides: the middle of the rest (the best of 46% to 60% on
		 * the real snapshots: p also has what follows the trace, and p2 its own costs).
		 * Chosen now, not when p started this thread, which may have taken a while.
		 */
		size_t pos = atomic_load_explicit(&x->pos_pub, memory_order_relaxed);
		size_t rest = p->len > pos ? p->len - pos : 0;
		x->at = (size_t)ms_pickle_split_point(buf, p->len, pos + rest / 2);
		if (x->at >= p->len) {
			x->status = MS_ERR_UNSUPPORTED; /* no entry there: p reads alone */
			return;
		}
	}
	ip = buf + x->at;
	atomic_store_explicit(&x->land, ip + 1, memory_order_relaxed);
	/* what p2 writes as it reads comes from its own thread's arena, away from p's lines */
	if (ms_grow(&p->memo, &p->memo_chunks_cap, x->memo_chunks, sizeof(*p->memo)) ||
	    ms_grow(&p->stack, &p->stack_cap, 1024, sizeof(*p->stack))) {
		x->status = MS_ERR_NOMEM;
		return;
	}

	while (ip < end) {
		if (*ip == '}') {
			int gave_up;
			const unsigned char *q = ip + 1;
			/*
			 * Room for what one call may read: half a memo chunk of puts (an entry
			 * with more gives up, and p reads it), 1024 entries on the stack.
			 */
			if ((s = memo_reach(p, p->n_memo + MEMO_CHUNK / 2)))
				break;
			if (sp + 1024 > p->stack_cap &&
			    (sp >= HELPER_MAX_OPEN ||
			     ms_grow(&p->stack, &p->stack_cap, sp + 1024, sizeof(*p->stack))))
				break;
			if ((s = ms__pk_helper_entries(p, &q, end, p->stack, &sp, &gave_up)))
				break;
			if (gave_up) {
				ip = q - 1; /* at the EMPTY_DICT of the entry p2 leaves to p */
				break;
			}
			ip = q;
		} else if (*ip == 'e' && mark_open) { /* APPENDS */
			if (!x->first_close) {
				x->first_close = (size_t)(ip - buf);
				x->first_batch = sp;
			}
			sp = 0;
			mark_open = 0;
			ip++;
		} else if (*ip == '(' && !mark_open) { /* MARK */
			mark_open = 1;
			ip++;
		} else if (*ip == 0x95 && end - ip >= 9) { /* FRAME: as p reads it, no check */
			ip += 9;
		} else {
			break;
		}
	}
	x->stop = (size_t)(ip - buf);
	x->mark_open = mark_open;
	x->open_n = sp;
	x->status = s;
}

/*
 * p: the second reader told to stop (phase) and done. Its thread's exit (a few us) is not
 * waited for here but by split_join, from ms_pickle_free: p2 touches nothing after `done`.
 */
void ms__pk_split_stop(struct ms_pickle *p, int phase)
{
	struct split *x = p->split;

	if (!x || !x->active)
		return;
	atomic_store_explicit(&x->memo_pub, p->n_memo, memory_order_release);
	atomic_store_explicit(&x->phase, phase, memory_order_release);
	while (!atomic_load_explicit(&x->done, memory_order_acquire))
		sched_yield();
	x->active = 0;
	atomic_store_explicit(&x->land, NULL, memory_order_relaxed);
}

/* p: the second reader stopped and its thread joined. */
static void split_join(struct ms_pickle *p, int phase)
{
	struct split *x = p->split;

	ms__pk_split_stop(p, phase);
	if (x && x->started) {
		pthread_join(x->thread, NULL);
		x->started = 0;
	}
}

/* One of p2's memo values as p reads it: its strings interned in p, its ordinals p's. */
static ms_status translate(struct ms_pickle *p, const struct ms_pk_val *v, struct ms_pk_val *out)
{
	struct split *x = p->split;
	uint64_t w = payload_of(v);

	if (v->type == PK_STREAMED) {
		w = ((w & ORD_MASK) + x->e1) | (uint64_t)x->tag << ORD_BITS;
	} else if ((v->type == MS_PK_STR || v->type == MS_PK_BYTES) && (uint32_t)w >= x->n_pre) {
		uint32_t id2 = (uint32_t)w, id;
		if (id2 & REMOTE_STR) {
			w = id2 & ~REMOTE_STR; /* p's own */
		} else {
			size_t k = id2 - x->n_pre;
			if (k >= x->str_xl_cap) {
				size_t old = x->str_xl_cap;
				if (ms_grow(&x->str_xl, &x->str_xl_cap, k + 1, sizeof(uint32_t)))
					return MS_ERR_NOMEM;
				memset(x->str_xl + old, 0,
				       (x->str_xl_cap - old) * sizeof(uint32_t));
			}
			if (!x->str_xl[k]) {
				const struct ms_str *str = ms_symtab_get_str(&x->p2->strs, id2);
				MS_TRY(ms_symtab_str(&p->strs, str->s, str->len, &id));
				x->str_xl[k] = id + 1;
			}
			w = x->str_xl[k] - 1;
		}
	}
	put_val(out, v->type, w);
	return MS_OK;
}

/*
 * p reads one of p2's memo slots, or writes one again: all of them become p's own first
 * (rare: PyTorch's later parts do not refer back into the trace entries).
 */
ms_status ms__pk_split_materialize(struct ms_pickle *p)
{
	size_t lo = p->fx_lo, n = p->fx_n;

	MS_TRY(memo_reach(p, lo + n - 1));
	for (size_t i = 0; i < n; i++)
		MS_TRY(translate(p, MEMO_AT(p->split->p2, i), MEMO_AT(p, lo + i)));
	p->fx_lo = p->fx_n = 0;
	return MS_OK;
}

/* n of p2's entries onto p's stack (room made), as the fast path leaves them: *ord on. */
static void push_streamed(struct ms_pickle *p, uint64_t n, uint64_t *ord, uint32_t tag)
{
	for (uint64_t k = 0; k < n; k++)
		put_val(&p->stack[p->sp++], PK_STREAMED, (*ord)++ | (uint64_t)tag << ORD_BITS);
}

/*
 * p has reached the second reader's start (p->pos at its EMPTY_DICT, in the fast path, a
 * device list under it). Takes over what p2 read, exactly as p would have read it, and moves
 * p->pos to where p2 stopped; or drops it, and p reads on from where it is.
 */
ms_status ms__pk_split_land(struct ms_pickle *p)
{
	struct split *x = p->split;
	struct ms_pickle *p2 = x->p2;
	size_t mk = p->n_marks ? p->marks[p->n_marks - 1] : 0;
	struct ms_pk_obj *list;
	uint64_t e1 = p->ev_mapped, e2, rest, ord;
	size_t push;
	ms_status s;

	/* p2 began inside a batch: a MARK right above the device list */
	if (!p->n_marks || mk == 0 || mk > p->sp || p->stack[mk - 1].type != MS_PK_LIST ||
	    p->stack[mk - 1].v.o->role != ROLE_DEVICE) {
		ms__pk_split_stop(p, SPLIT_ABORT);
		return MS_OK;
	}
	x->base = p->n_memo;
	ms__pk_split_stop(p, SPLIT_LANDED);
	list = p->stack[mk - 1].v.o;
	e2 = p2->ev_mapped;
	if (x->status || e2 == 0 || e1 + e2 > ORD_MASK ||
	    p->n_memo + p2->n_memo > p->lim.max_memo ||
	    p->n_objs + p2->n_objs > p->lim.max_objects || list->tag >> (64 - ORD_BITS))
		return MS_OK;
	/* what p's batch holds must be entries the way APPENDS wants them, as p2's are */
	for (size_t i = mk; i < p->sp; i++) {
		const struct ms_pk_val *v = &p->stack[i];
		if (v->type != PK_STREAMED &&
		    !(v->type == MS_PK_DICT && v->v.o->role == ROLE_MAPPED))
			return MS_OK;
	}
	push = x->first_close ? (size_t)x->first_batch : (size_t)e2;
	if (x->mark_open && x->first_close && x->open_n > push)
		push = (size_t)x->open_n;
	if (p->sp + push + 1 > p->stack_cap &&
	    ms_grow(&p->stack, &p->stack_cap, p->sp + push + 1, sizeof(*p->stack)))
		return MS_ERR_NOMEM;
	/* the hook takes p2's entries (or refuses them, before anything is changed) */
	if ((s = x->merge(x->merge_ctx, list->tag, e2)))
		return s == MS_ERR_UNSUPPORTED ? MS_OK : s;
	x->e1 = e1;
	x->tag = list->tag;
	ord = e1;
	if (x->first_close) {
		/* p2's first APPENDS closes p's batch: run it as p would, with p's entries */
		push_streamed(p, x->first_batch, &ord, list->tag);
		p->ev_mapped = ord;
		p->op_off = (int64_t)x->first_close;
		if ((s = ms__pk_batch(p, 0)))
			return s;
		/* the rest of p2's closed batches: entries in order, as stream_items counts them */
		rest = e2 - x->first_batch - (x->mark_open ? x->open_n : 0);
		ord += rest;
		p->ev_appended += rest;
		list->n += (uint32_t)rest;
		if (x->mark_open) {
			if (p->n_marks == p->marks_cap &&
			    ms_grow(&p->marks, &p->marks_cap, p->n_marks + 1, sizeof(size_t)))
				return MS_ERR_NOMEM;
			p->marks[p->n_marks++] = p->sp;
			push_streamed(p, x->open_n, &ord, list->tag);
		}
	} else {
		push_streamed(p, e2, &ord, list->tag);
	}
	p->ev_mapped = ord;
	p->n_objs += p2->n_objs; /* p2's lists (frames), counted as p would have */
	p->n_fast += e2;
	p->n_split = e2;
	p->fx_lo = p->n_memo;
	p->fx_n = p2->n_memo;
	p->n_memo += p2->n_memo;
	p->pos = x->stop;
	return MS_OK;
}

ms_status ms_pickle_split(struct ms_pickle *p, struct ms_pickle *p2, uint64_t at, int wait,
                          ms_pk_merge_fn merge, void *ctx)
{
	struct split *x;
	/* memo indices stay below 2 * len + MEMO_SLACK (a byte per put, holes bounded) */
	size_t chunks;

	if (!p->borrowed || !p2->borrowed || p2->buf != p->buf || p2->len != p->len ||
	    (at >= p->len && at != MS_PK_SPLIT_AUTO) || p->len > ((size_t)1 << 30) || p->split ||
	    !p2->fields_fn)
		return MS_ERR_INVALID_ARG;
	if (!(x = ms_calloc_lines(sizeof(*x))))
		return MS_ERR_NOMEM;
	chunks = ((2 * p->len + MEMO_SLACK) >> MEMO_SHIFT) + 2;
	/*
	 * p's memo index never moves while p2 reads it, and lies on lines of its own; p2
	 * makes its own when it starts.
	 */
	if (chunks > p->memo_chunks_cap) {
		struct ms_pk_val **dir = ms_calloc_lines(chunks * sizeof(*dir));
		if (!dir) {
			ms_free(x);
			return MS_ERR_NOMEM;
		}
		if (p->n_memo_chunks)
			memcpy(dir, p->memo, p->n_memo_chunks * sizeof(*dir));
		ms_free(p->memo);
		p->memo = dir;
		p->memo_chunks_cap = chunks;
	}
	x->memo_chunks = chunks;
	x->wait = wait;
	x->memo1 = p->memo;
	x->p2 = p2;
	x->merge = merge;
	x->merge_ctx = ctx;
	x->at = at == MS_PK_SPLIT_AUTO ? SPLIT_AUTO : (size_t)at;
	x->n_pre = ms_symtab_nstrs(&p2->strs);
	p->split = x;
	p2->split = x;
	p2->peer = p;
	return MS_OK;
}

uint64_t ms_pickle_split_point(const void *data, size_t len, size_t from)
{
	const unsigned char *b = data;
	static const unsigned char pat[3] = {'}', 0x94, '('};

	for (size_t i = from ? from : 1; i + 3 <= len;) {
		const unsigned char *q = memchr(b + i, '}', len - i);
		if (!q)
			break;
		i = (size_t)(q - b);
		if (i + 4 <= len && memcmp(q, pat, 3) == 0 && (q[-1] == 'u' || q[-1] == '(') &&
		    (q[3] == 'h' || q[3] == 'j'))
			return i;
		i++;
	}
	return len;
}

void ms_pickle_defer_slot(struct ms_pickle *p2, int slot)
{
	p2->defer_slot = slot;
}

/* A deferred get as p reads it at the split: p's slot below the base, else p2's, then. */
static ms_status resolve_get(struct ms_pickle *p, const struct ms_pk_val *v, struct ms_pk_val *out)
{
	struct split *x = p->split;
	uint64_t w = payload_of(v), idx = (uint32_t)w, then = w >> 32;
	const struct ms_pk_val *m;

	if (v->type != MS_PK_DEFERRED)
		return MS_ERR_UNSUPPORTED;
	if (idx < x->base)
		m = MEMO_AT(p, idx);
	else if (idx - x->base < then)
		m = MEMO_AT(x->p2, idx - x->base);
	else
		return MS_ERR_UNSUPPORTED; /* not written yet */
	/* what fast_get refuses, the general path reads (as an error) */
	if (m->type > MS_PK_DICT || (m->type >= MS_PK_LIST && m->v.o->consumed))
		return MS_ERR_UNSUPPORTED;
	copy_vals(out, m, 1);
	return MS_OK;
}

ms_status ms_pickle_split_resolve(struct ms_pickle *p, struct ms_pk_val *v)
{
	struct ms_pk_obj *o;

	if (v->type == MS_PK_DEFERRED)
		MS_TRY(resolve_get(p, v, v));
	if (v->type != MS_PK_LIST || !(o = v->v.o)->deferred)
		return MS_OK;
	/* p2's list: its items one level down (lists in it are refused: no frame is a list) */
	o->deferred = 0;
	for (uint32_t i = 0; i < o->n; i++) {
		MS_TRY(resolve_get(p, &o->items[i], &o->items[i]));
		if (o->items[i].type == MS_PK_LIST && o->items[i].v.o->deferred)
			return MS_ERR_UNSUPPORTED;
	}
	return MS_OK;
}

uint64_t ms_pickle_split_entries(const struct ms_pickle *p)
{
	return p->n_split;
}

void ms__pk_split_start(struct ms_pickle *p)
{
	struct split *x = p->split;

	if (x->started)
		return;
	/* a start given: p must know it before it can get there */
	if (x->at != SPLIT_AUTO)
		atomic_store_explicit(&x->land, p->buf + x->at + 1, memory_order_relaxed);
	x->started = x->active = pthread_create(&x->thread, NULL, helper_main, x->p2) == 0;
}

void ms__pk_split_free(struct ms_pickle *p)
{
	split_join(p, SPLIT_ABORT);
	ms_free(p->split->str_xl);
	ms_free(p->split);
	p->split = NULL;
}
