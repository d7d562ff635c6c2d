/*
 * Restricted unpickler: an opcode machine over plain values that refuses
 * every opcode able to import or call Python code (see pickle.h).
 * Opcode reference: CPython Lib/pickletools.py; layout facts: torch-allocator.md §8.7.
 */
#include "parse/pickle.h"

#include <stddef.h>
#include <string.h>

#include "common/alloc.h"
#include "common/bytes.h"
#include "common/status.h"
#include "parse/pickle_internal.h"

static struct ms_pk_val *pool_take(struct ms_pickle *p, size_t n);

ms_status ms_pickle_new(struct ms_pickle **out)
{
	/* on lines of its own: stats reads several files at once, a machine each */
	struct ms_pickle *p = ms_calloc_lines(sizeof(*p));

	if (!p)
		return MS_ERR_NOMEM;
	if (ms_symtab_init(&p->strs) ||
	    ms_symtab_str(&p->strs, "device_traces", 13, &p->id_device_traces)) {
		ms_pickle_free(p);
		return MS_ERR_NOMEM;
	}
	p->lim.max_string = 256u << 20;
	p->lim.max_memo = UINT32_MAX - 1;
	p->lim.max_objects = 1u << 28;
	for (size_t i = 0; i <= MS_PK_SLOTS; i++)
		p->slot_str[i].len = UINT32_MAX; /* none */
	*out = p;
	return MS_OK;
}

void ms_pickle_free(struct ms_pickle *p)
{
	struct slab *s;

	if (!p)
		return;
	for (s = p->slabs; s;) {
		struct slab *n = s->next;
		for (uint32_t i = 0; i < s->used; i++)
			if (!s->objs[i].pooled)
				ms_free(s->objs[i].items);
		ms_free(s);
		s = n;
	}
	while (p->pool) {
		struct pool_chunk *c = p->pool;
		p->pool = c->next;
		ms_free(c);
	}
	ms_symtab_release(&p->strs);
	ms_free(p->stack);
	ms_free(p->marks);
	for (size_t i = 0; i < p->n_memo_chunks; i++)
		ms_free(p->memo[i]);
	ms_free(p->memo);
	if (!p->borrowed)
		ms_free(p->buf);
	ms_free(p);
}

void ms_pickle_set_limits(struct ms_pickle *p, const struct ms_pickle_limits *l)
{
	if (l->max_string)
		p->lim.max_string = l->max_string;
	if (l->max_memo)
		p->lim.max_memo = l->max_memo;
	if (l->max_objects)
		p->lim.max_objects = l->max_objects;
}

void ms_pickle_borrow_input(struct ms_pickle *p, const void *data, size_t len)
{
	if (!p->borrowed)
		ms_free(p->buf);
	/* never written: reads past the end stop at eof before the window would be moved */
	p->buf = (unsigned char *)(uintptr_t)data;
	p->len = p->cap = len;
	p->pos = 0;
	p->base = 0;
	p->eof = 1;
	p->borrowed = 1;
}

void ms_pickle_stream_traces(struct ms_pickle *p, ms_pk_item_fn fn, void *ctx)
{
	p->item_fn = fn;
	p->item_ctx = ctx;
}

void ms_pickle_entry_fields(struct ms_pickle *p, const int8_t slot_of[64], ms_pk_fields_fn fn)
{
	for (int i = 0; i < 64; i++)
		p->key_slot[i] = slot_of[i] < MS_PK_SLOTS ? slot_of[i] : -1;
	p->fields_fn = fn;
}

const struct ms_symtab *ms_pickle_strings(const struct ms_pickle *p)
{
	return &p->strs;
}

int ms_pickle_protocol(const struct ms_pickle *p)
{
	return p->proto;
}

uint64_t ms_pickle_fast_entries(const struct ms_pickle *p)
{
	return p->n_fast;
}

uint64_t ms_pickle_offset(const struct ms_pickle *p)
{
	return p->base + p->pos;
}

static const char *op_name(uint8_t op)
{
	switch (op) {
	case 'c':
		return "GLOBAL";
	case 0x93:
		return "STACK_GLOBAL";
	case 'R':
		return "REDUCE";
	case 'b':
		return "BUILD";
	case 'i':
		return "INST";
	case 'o':
		return "OBJ";
	case 0x81:
		return "NEWOBJ";
	case 0x92:
		return "NEWOBJ_EX";
	case 'P':
		return "PERSID";
	case 'Q':
		return "BINPERSID";
	case 0x82:
		return "EXT1";
	case 0x83:
		return "EXT2";
	case 0x84:
		return "EXT4";
	case 0x97:
		return "NEXT_BUFFER";
	case 0x98:
		return "READONLY_BUFFER";
	case 'I':
		return "INT";
	case 'L':
		return "LONG";
	case 'S':
		return "STRING";
	case 'T':
		return "BINSTRING";
	case 'U':
		return "SHORT_BINSTRING";
	case 'V':
		return "UNICODE";
	case 'F':
		return "FLOAT";
	case 'p':
		return "PUT";
	case 'g':
		return "GET";
	}
	return NULL;
}

static ms_status fail(struct ms_pickle *p, ms_status s, const char *what)
{
	return ms__diag_set(p->diag, s, p->op_off, -1, "%s at offset %lld", what,
	                    (long long)p->op_off);
}

/* Make n bytes available at buf + pos (slow path: refill). */
static ms_status need_slow(struct ms_pickle *p, size_t n)
{
	while (p->len - p->pos < n) {
		size_t got;
		ms_status s;
		if (p->eof)
			return ms__diag_set(
			        p->diag, MS_ERR_TRUNCATED, p->op_off, -1,
			        "pickle ends early at offset %lld (inside opcode at %lld)",
			        (long long)(p->base + p->len), (long long)p->op_off);
		if (p->pos > 0) {
			memmove(p->buf, p->buf + p->pos, p->len - p->pos);
			p->base += p->pos;
			p->len -= p->pos;
			p->pos = 0;
		}
		if (p->cap - p->len < 65536 || p->cap < n) {
			size_t want = p->len + (n > 65536 ? n : 65536);
			if (want < (1u << 20))
				want = 1u << 20;
			if (ms_grow(&p->buf, &p->cap, want, 1))
				return MS_ERR_NOMEM;
		}
		s = p->rd(p->rd_ctx, p->buf + p->len, p->cap - p->len, &got, p->diag);
		if (s)
			return s;
		if (got == 0)
			p->eof = 1;
		p->len += got;
	}
	return MS_OK;
}

static inline ms_status need(struct ms_pickle *p, size_t n)
{
	return p->len - p->pos >= n ? MS_OK : need_slow(p, n);
}

static inline const unsigned char *take(struct ms_pickle *p, size_t n)
{
	const unsigned char *r = p->buf + p->pos;
	p->pos += n;
	return r;
}

/*
 * A LONG1 of n bytes, 1 <= n <= 8, at b (8 bytes readable): two's complement, sign-extended
 * without branches (all unsigned arithmetic).
 */
static inline uint64_t long1_value(const unsigned char *b, size_t n)
{
	uint64_t mask = ~(uint64_t)0 >> (64 - 8 * n), sign = (uint64_t)1 << (8 * n - 1);

	return ((ms_load_le64(b) & mask) ^ sign) - sign;
}

static inline ms_status push(struct ms_pickle *p, struct ms_pk_val v)
{
	if (p->sp == p->stack_cap && ms_grow(&p->stack, &p->stack_cap, p->sp + 1, sizeof(v)))
		return MS_ERR_NOMEM;
	put_val(&p->stack[p->sp++], v.type, payload_of(&v));
	return MS_OK;
}

static size_t mark_top(const struct ms_pickle *p)
{
	return p->n_marks ? p->marks[p->n_marks - 1] : 0;
}

static ms_status new_obj(struct ms_pickle *p, uint8_t kind, struct ms_pk_obj **out)
{
	struct ms_pk_obj *o = NULL;

	if (p->n_objs >= p->lim.max_objects)
		return fail(p, MS_ERR_LIMIT, "too many containers");
	if (!p->slabs || p->slabs->used == SLAB_OBJS) {
		struct slab *s = ms_malloc(sizeof(*s));
		if (!s)
			return MS_ERR_NOMEM;
		s->used = 0;
		s->next = p->slabs;
		p->slabs = s;
	}
	o = &p->slabs->objs[p->slabs->used++];
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	p->n_objs++;
	*out = o;
	return MS_OK;
}

static ms_status obj_add(struct ms_pk_obj *o, const struct ms_pk_val *v, size_t n)
{
	size_t cap = o->cap;

	if (n == 0)
		return MS_OK;
	if ((uint64_t)o->n + n > UINT32_MAX)
		return MS_ERR_LIMIT;
	if (o->pooled) { /* added to later: the items move to an allocation of their own */
		struct ms_pk_val *own = NULL;
		cap = 0;
		if (ms_grow(&own, &cap, o->n + n, sizeof(*v)))
			return MS_ERR_NOMEM;
		copy_vals(own, o->items, o->n);
		o->items = own;
		o->pooled = 0;
	} else if (o->n + n > cap) {
		if (ms_grow(&o->items, &cap, o->n + n, sizeof(*v)))
			return MS_ERR_NOMEM;
	}
	o->cap = (uint32_t)(cap > UINT32_MAX ? UINT32_MAX : cap);
	copy_vals(o->items + o->n, v, n);
	o->n += (uint32_t)n;
	return MS_OK;
}

static ms_status push_obj(struct ms_pickle *p, struct ms_pk_obj *o)
{
	struct ms_pk_val v;

	v.type = o->kind;
	v.v.o = o;
	return push(p, v);
}

/*
 * obj_add for the general path: a fast-path entry stored anywhere but its device list
 * becomes what the general path would have there, a streamed (consumed, empty) dict.
 */
static ms_status add_items(struct ms_pickle *p, struct ms_pk_obj *o, struct ms_pk_val *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct ms_pk_obj *d = NULL;
		if (v[i].type != PK_STREAMED)
			continue;
		MS_TRY(new_obj(p, MS_PK_DICT, &d));
		d->consumed = 1;
		d->role = ROLE_DONE;
		put_val(&v[i], MS_PK_DICT, (uint64_t)(uintptr_t)d);
	}
	/*
	 * A container's first items from the pool, as the fast path's lists get theirs: most
	 * get all their items at once (segments, blocks, settings), and a malloc, a realloc and
	 * a free each cost a snapshot's fixed part a fifth of its instructions. Not a trace
	 * entry's: those are consumed, and their items given back at once.
	 */
	if (o->n == 0 && !o->items && n && n <= POOL_VALS && o->role != ROLE_ENTRY) {
		if (!(o->items = pool_take(p, n)))
			return MS_ERR_NOMEM;
		copy_vals(o->items, v, n);
		o->n = o->cap = (uint32_t)n;
		o->pooled = 1;
		return MS_OK;
	}
	return obj_add(o, v, n);
}

/* Pre: a new list is about to be pushed. Recognise device_traces and its lists. */
static void assign_role(struct ms_pickle *p, struct ms_pk_obj *o)
{
	const struct ms_pk_val *top;

	if (!p->item_fn || p->sp == 0)
		return;
	top = &p->stack[p->sp - 1];
	if (top->type == MS_PK_STR && top->v.str == p->id_device_traces &&
	    p->stack[0].type == MS_PK_DICT && p->n_marks <= 1 &&
	    (p->n_marks == 0 || p->marks[0] == 1)) {
		o->role = ROLE_OUTER;
	} else if (top->type == MS_PK_LIST && top->v.o->role == ROLE_OUTER) {
		o->role = ROLE_DEVICE;
		o->tag = top->v.o->n;
	} else if (top->type == MS_PK_LIST && top->v.o->role == ROLE_DEVICE && p->sp >= 2 &&
	           mark_top(p) <= p->sp - 1 && p->n_marks &&
	           p->stack[mark_top(p) - 1].type == MS_PK_LIST &&
	           p->stack[mark_top(p) - 1].v.o->role == ROLE_OUTER) {
		o->role = ROLE_DEVICE;
		o->tag = top->v.o->tag + 1;
	}
}

/* Drop the items of a streamed object; its header stays (see pickle.h). */
static void consume(struct ms_pk_obj *o)
{
	if (o->consumed)
		return;
	o->consumed = 1;
	if (!o->pooled)
		ms_free(o->items);
	o->items = NULL;
	o->n = o->cap = 0;
}

/*
 * A trace entry's items, key, value, ..., where they lie on the stack: to the hook at once
 * (they are hot in the cache now, and 1000 entries later at APPENDS they are not). PyTorch's
 * pickler, like Python's, sets all items of a dict this small with one SETITEM(S), so the
 * entry is complete here; a second one is refused in append_to.
 */
static ms_status map_entry(struct ms_pickle *p, struct ms_pk_obj *o, struct ms_pk_val *items,
                           size_t n)
{
	struct ms_pk_obj view = {0};
	struct ms_pk_val v;
	ms_status s;

	if ((uint64_t)n > UINT32_MAX)
		return MS_ERR_LIMIT;
	view.items = items;
	view.n = view.cap = (uint32_t)n;
	view.kind = MS_PK_DICT;
	v.type = MS_PK_DICT;
	v.v.o = &view;
	if ((s = p->item_fn(p->item_ctx, o->tag, p->ev_mapped, &v, p->op_off)))
		return s;
	consume(o);
	o->role = ROLE_MAPPED;
	o->ord = p->ev_mapped++;
	return MS_OK;
}

/*
 * items[0..n) appended to a device list: entries mapped at their SETITEM(S) must arrive in
 * the order they were mapped; any other item goes to the hook now. Entry dicts are then
 * released, only the dicts themselves: what they hold (frames lists, frame dicts) may be
 * shared with later entries through the memo.
 */
static ms_status stream_items(struct ms_pickle *p, struct ms_pk_obj *list,
                              const struct ms_pk_val *items, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct ms_pk_obj *o = NULL;
		ms_status s;

		if (items[i].type == PK_STREAMED) {
			uint64_t w = payload_of(&items[i]);
			if (w == (p->ev_appended | (uint64_t)list->tag << ORD_BITS)) {
				p->ev_appended++; /* the next in order, of this list: the usual case
				                   */
				list->n++;
				continue;
			}
			if ((w & ORD_MASK) < p->ev_appended)
				return fail(p, MS_ERR_UNSUPPORTED, "trace entry object used twice");
			if ((w & ORD_MASK) != p->ev_appended || (w >> ORD_BITS) != list->tag)
				return fail(p, MS_ERR_UNSUPPORTED,
				            "trace entry added to its list out of order");
			p->ev_appended++;
			list->n++;
			continue;
		}
		if (items[i].type == MS_PK_LIST || items[i].type == MS_PK_DICT ||
		    items[i].type == MS_PK_TUPLE)
			o = items[i].v.o;
		if (o && o->role == ROLE_MAPPED) {
			if (o->ord != p->ev_appended || o->tag != list->tag)
				return fail(p, MS_ERR_UNSUPPORTED,
				            "trace entry added to its list out of order");
			o->role = ROLE_DONE;
		} else {
			if (o && o->consumed)
				return fail(p, MS_ERR_UNSUPPORTED, "trace entry object used twice");
			/* the hook first: what is wrong with the item is the better message */
			s = p->item_fn(p->item_ctx, list->tag, p->ev_mapped, &items[i], p->op_off);
			if (s)
				return s;
			if (p->ev_mapped != p->ev_appended)
				return fail(p, MS_ERR_UNSUPPORTED,
				            "trace entry added to its list out of order");
			p->ev_mapped++;
			if (o && o->kind == MS_PK_DICT) {
				consume(o);
				o->role = ROLE_DONE;
			}
		}
		p->ev_appended++;
		list->n++;
	}
	return MS_OK;
}

static ms_status append_to(struct ms_pickle *p, struct ms_pk_val *target, struct ms_pk_val *items,
                           size_t n, int set)
{
	struct ms_pk_obj *o = NULL;

	if (set) {
		if ((target->type != MS_PK_DICT && target->type != PK_STREAMED) || n % 2)
			return fail(p, MS_ERR_FORMAT, "SETITEM(S) on a non-dict");
	} else if (target->type != MS_PK_LIST) {
		return fail(p, MS_ERR_FORMAT, "APPEND(S) on a non-list");
	}
	o = target->v.o;
	if (target->type == PK_STREAMED || o->consumed)
		return fail(p, MS_ERR_UNSUPPORTED, "streamed object modified later");
	if (o->role == ROLE_DEVICE)
		return stream_items(p, o, items, n);
	if (o->role == ROLE_ENTRY)
		return map_entry(p, o, items, n);
	return add_items(p, o, items, n);
}

/*
 * Intern b[0..n): strings of up to 8 bytes seen recently skip the hash table. wide: 8 bytes
 * may be read at b (the input window holds them), so the key is one load, not a byte loop.
 */
static inline ms_status intern(struct ms_pickle *p, const unsigned char *b, size_t n, int wide,
                               uint32_t *id)
{
	uint64_t head = 0;
	unsigned slot;
	ms_status s;

	if (n > 8)
		return ms_symtab_str(&p->strs, (const char *)b, n, id);
	if (wide && n > 0) {
		head = n < 8 ? ms_load_le64(b) & (((uint64_t)1 << (8 * n)) - 1) : ms_load_le64(b);
	} else {
		for (size_t i = n; i-- > 0;)
			head = head << 8 | b[i];
	}
	slot = (unsigned)((head * 0x9e3779b97f4a7c15ULL) >> 58) ^ (unsigned)(n & 63);
	if (p->scache[slot].len == n && p->scache[slot].head == head && p->scache[slot].id) {
		*id = p->scache[slot].id;
		return MS_OK;
	}
	if ((s = ms_symtab_str(&p->strs, (const char *)b, n, id)))
		return s;
	p->scache[slot].len = (uint32_t)n;
	p->scache[slot].head = head;
	p->scache[slot].id = *id;
	return MS_OK;
}

static ms_status push_str(struct ms_pickle *p, size_t n, uint8_t type)
{
	const unsigned char *b;
	uint32_t id;
	struct ms_pk_val *top;
	ms_status s;

	if (n > p->lim.max_string)
		return fail(p, MS_ERR_LIMIT, "string longer than the limit");
	MS_TRY(need(p, n));
	b = take(p, n);
	if ((s = intern(p, b, n, p->len - p->pos >= 8, &id)))
		return s;
	if (p->sp == p->stack_cap &&
	    ms_grow(&p->stack, &p->stack_cap, p->sp + 1, sizeof(*p->stack)))
		return MS_ERR_NOMEM;
	top = &p->stack[p->sp++];
	put_val(top, type, id);
	return MS_OK;
}

static inline ms_status push_long(struct ms_pickle *p, size_t n)
{
	const unsigned char *b;
	struct ms_pk_val v;
	size_t i;
	int neg;

	if (n > p->lim.max_string)
		return fail(p, MS_ERR_LIMIT, "integer longer than the limit");
	MS_TRY(need(p, n));
	b = take(p, n);
	v.type = MS_PK_INT;
	v.v.i = 0;
	if (n == 0)
		return push(p, v);
	neg = (b[n - 1] & 0x80) != 0;
	/* bytes beyond the 8th must be pure sign extension to fit int64 */
	for (i = 8; i < n; i++)
		if (b[i] != (neg ? 0xff : 0x00)) {
			v.type = MS_PK_BIGINT;
			return push(p, v);
		}
	{
		uint64_t u = 0;
		size_t m = n < 8 ? n : 8;
		for (i = m; i-- > 0;)
			u = u << 8 | b[i];
		if (m < 8 && neg)
			u |= ~(uint64_t)0 << (8 * m);
		if (n > 8 && (((u >> 63) != 0) != neg)) {
			v.type = MS_PK_BIGINT;
			return push(p, v);
		}
		v.v.i = (int64_t)u;
	}
	return push(p, v);
}

static inline ms_status memo_put(struct ms_pickle *p, uint64_t idx)
{
	if (p->sp == 0 || (p->n_marks && p->sp == mark_top(p)))
		return fail(p, MS_ERR_FORMAT, "memo store with an empty stack");
	if (idx > p->lim.max_memo)
		return fail(p, MS_ERR_LIMIT, "memo index out of range");
	if (idx >= p->n_memo) {
		/*
		 * Python's picklers put at the next index; a gap costs a memo slot per index
		 * skipped. Gaps in all may not outgrow the input read so far (plus MEMO_SLACK), or
		 * a 1 KB file of puts a million apart would take gigabytes.
		 */
		uint64_t holes = p->memo_holes + (idx - p->n_memo);
		if (holes > (uint64_t)p->op_off + MEMO_SLACK)
			return fail(p, MS_ERR_LIMIT, "memo index out of range");
		p->memo_holes = holes;
		MS_TRY(memo_reach(p, idx));
		for (size_t i = p->n_memo; i < idx; i++)
			MEMO_AT(p, i)->type = PK_CONSUMED; /* holes read as errors */
		p->n_memo = idx + 1;
	}
	copy_vals(MEMO_AT(p, idx), &p->stack[p->sp - 1], 1);
	p->kcache[idx & (KCACHE - 1)].idx1 = 0;
	return MS_OK;
}

/* Collect stack[mark..sp) into a new container of kind; pops the mark. */
static ms_status from_mark(struct ms_pickle *p, uint8_t kind)
{
	struct ms_pk_obj *o = NULL;
	size_t m;

	if (!p->n_marks)
		return fail(p, MS_ERR_FORMAT, "missing MARK");
	m = p->marks[--p->n_marks];
	if (kind == MS_PK_DICT && (p->sp - m) % 2)
		return fail(p, MS_ERR_FORMAT, "odd number of dict items");
	MS_TRY(new_obj(p, kind, &o));
	MS_TRY(add_items(p, o, p->stack + m, p->sp - m));
	p->sp = m;
	return push_obj(p, o);
}

static ms_status tuple_n(struct ms_pickle *p, size_t n)
{
	struct ms_pk_obj *o = NULL;

	if (p->sp < n || p->sp - n < mark_top(p))
		return fail(p, MS_ERR_FORMAT, "stack underflow");
	MS_TRY(new_obj(p, MS_PK_TUPLE, &o));
	MS_TRY(add_items(p, o, p->stack + p->sp - n, n));
	p->sp -= n;
	return push_obj(p, o);
}

/* Items above the innermost mark, applied to the value right under it. */
static ms_status batch(struct ms_pickle *p, int set)
{
	size_t m;
	ms_status s;

	if (!p->n_marks)
		return fail(p, MS_ERR_FORMAT, "missing MARK");
	m = p->marks[p->n_marks - 1];
	if (m == 0)
		return fail(p, MS_ERR_FORMAT, "stack underflow");
	s = append_to(p, &p->stack[m - 1], p->stack + m, p->sp - m, set);
	p->n_marks--;
	p->sp = m;
	return s;
}

/*
 * One opcode, the general way (the hot ones are inlined in ms_pickle_run): p->op is set,
 * p->pos is past it and p->op_off is its offset. STOP is handled by the caller.
 */
static ms_status step(struct ms_pickle *p)
{
	struct ms_pk_val v;
	struct ms_pk_obj *o = NULL;
	const unsigned char *b;

	switch (p->op) {
	case 0x80: /* PROTO */
		MS_TRY(need(p, 1));
		p->proto = *take(p, 1);
		if (p->proto < 2 || p->proto > 5)
			return ms__diag_set(p->diag, MS_ERR_UNSUPPORTED, p->op_off, -1,
			                    "pickle protocol %d at offset %lld is not "
			                    "supported (2 to 5 are)",
			                    p->proto, (long long)p->op_off);
		break;
	case 0x95: /* FRAME: an 8-byte length; framing needs no action */
		MS_TRY(need(p, 8));
		take(p, 8);
		break;
	case ']':  /* EMPTY_LIST */
	case 0x8f: /* EMPTY_SET: read as a list */
		MS_TRY(new_obj(p, MS_PK_LIST, &o));
		if (p->op == ']')
			assign_role(p, o);
		MS_TRY(push_obj(p, o));
		break;
	case ')': /* EMPTY_TUPLE */
		MS_TRY(tuple_n(p, 0));
		break;
	case 0x85: /* TUPLE1 */
	case 0x86: /* TUPLE2 */
	case 0x87: /* TUPLE3 */
		MS_TRY(tuple_n(p, (size_t)(p->op - 0x84)));
		break;
	case 'd': /* DICT */
		MS_TRY(from_mark(p, MS_PK_DICT));
		break;
	case 'l':  /* LIST */
	case 0x91: /* FROZENSET */
		MS_TRY(from_mark(p, MS_PK_LIST));
		break;
	case 't': /* TUPLE */
		MS_TRY(from_mark(p, MS_PK_TUPLE));
		break;
	case 's': /* SETITEM */
		if (p->sp < 3 || p->sp - 3 < mark_top(p))
			return fail(p, MS_ERR_FORMAT, "stack underflow");
		MS_TRY(append_to(p, &p->stack[p->sp - 3], p->stack + p->sp - 2, 2, 1));
		p->sp -= 2;
		break;
	case 'u': /* SETITEMS */
		MS_TRY(batch(p, 1));
		break;
	case 'a': /* APPEND */
		if (p->sp < 2 || p->sp - 2 < mark_top(p))
			return fail(p, MS_ERR_FORMAT, "stack underflow");
		MS_TRY(append_to(p, &p->stack[p->sp - 2], p->stack + p->sp - 1, 1, 0));
		p->sp -= 1;
		break;
	case 'e':  /* APPENDS */
	case 0x90: /* ADDITEMS */
		MS_TRY(batch(p, 0));
		break;
	case '0': /* POP */
		if (p->n_marks && mark_top(p) == p->sp)
			p->n_marks--;
		else if (p->sp)
			p->sp--;
		else
			return fail(p, MS_ERR_FORMAT, "stack underflow");
		break;
	case '1': /* POP_MARK */
		if (!p->n_marks)
			return fail(p, MS_ERR_FORMAT, "missing MARK");
		p->sp = p->marks[--p->n_marks];
		break;
	case '2': /* DUP */
		if (p->sp == 0 || (p->n_marks && p->sp == mark_top(p)))
			return fail(p, MS_ERR_FORMAT, "stack underflow");
		MS_TRY(push(p, p->stack[p->sp - 1]));
		break;
	case 0x8b: /* LONG4 */
		MS_TRY(need(p, 4));
		b = take(p, 4);
		if (b[3] & 0x80)
			return fail(p, MS_ERR_FORMAT, "negative LONG4 length");
		MS_TRY(push_long(p, ms_load_le32(b)));
		break;
	case 'G': { /* BINFLOAT: big-endian double */
		uint64_t u = 0;
		MS_TRY(need(p, 8));
		b = take(p, 8);
		for (int i = 0; i < 8; i++)
			u = u << 8 | b[i];
		v.type = MS_PK_FLOAT;
		memcpy(&v.v.f, &u, 8);
		MS_TRY(push(p, v));
		break;
	}
	case 'X': /* BINUNICODE */
		MS_TRY(need(p, 4));
		MS_TRY(push_str(p, ms_load_le32(take(p, 4)), MS_PK_STR));
		break;
	case 0x8d: /* BINUNICODE8 */
		MS_TRY(need(p, 8));
		MS_TRY(push_str(p, ms_load_le64(take(p, 8)), MS_PK_STR));
		break;
	case 'C': /* SHORT_BINBYTES */
		MS_TRY(need(p, 1));
		MS_TRY(push_str(p, *take(p, 1), MS_PK_BYTES));
		break;
	case 'B': /* BINBYTES */
		MS_TRY(need(p, 4));
		MS_TRY(push_str(p, ms_load_le32(take(p, 4)), MS_PK_BYTES));
		break;
	case 0x8e: /* BINBYTES8 */
	case 0x96: /* BYTEARRAY8 */
		MS_TRY(need(p, 8));
		MS_TRY(push_str(p, ms_load_le64(take(p, 8)), MS_PK_BYTES));
		break;
	default: {
		const char *name = op_name(p->op);
		if (name && (p->op == 'c' || p->op == 0x93 || p->op == 'R' || p->op == 'b' ||
		             p->op == 'i' || p->op == 'o' || p->op == 0x81 || p->op == 0x92 ||
		             p->op == 'P' || p->op == 'Q' || p->op == 0x82 || p->op == 0x83 ||
		             p->op == 0x84))
			return ms__diag_set(
			        p->diag, MS_ERR_UNSAFE, p->op_off, -1,
			        "refusing pickle opcode %s at offset %lld: it would run "
			        "code (memsnap never executes pickles)",
			        name, (long long)p->op_off);
		if (name)
			return ms__diag_set(p->diag, MS_ERR_UNSUPPORTED, p->op_off, -1,
			                    "unsupported pickle opcode %s at offset %lld", name,
			                    (long long)p->op_off);
		return ms__diag_set(p->diag, MS_ERR_UNSUPPORTED, p->op_off, -1,
		                    "unknown pickle opcode 0x%02x at offset %lld", p->op,
		                    (long long)p->op_off);
	}
	}
	return MS_OK;
}

/*
 * A memo put the fast path can do: at the next index (as Python's pickler always puts),
 * within the limit and an existing chunk. ip has 5 bytes readable.
 */
static inline int fast_put(struct ms_pickle *p, const unsigned char **ipp, size_t *n_memo,
                           uint64_t type, uint64_t payload)
{
	const unsigned char *ip = *ipp;
	uint64_t idx = *n_memo;

	if (*ip == 'q')
		idx = ip[1], ip += 2;
	else if (*ip == 'r')
		idx = ms_load_le32(ip + 1), ip += 5;
	else
		ip++; /* MEMOIZE */
	if (idx != *n_memo || idx > p->lim.max_memo || (idx >> MEMO_SHIFT) >= p->n_memo_chunks)
		return 0;
	put_val(MEMO_AT(p, idx), type, payload);
	*n_memo = idx + 1;
	*ipp = ip;
	return 1;
}

/* The first n bytes of a little-endian load. */
static const uint64_t len_mask[9] = {0,
                                     0xff,
                                     0xffff,
                                     0xffffff,
                                     0xffffffff,
                                     0xffffffffff,
                                     0xffffffffffff,
                                     0xffffffffffffff,
                                     0xffffffffffffffff};

static const unsigned char put_op[256] = {[0x94] = 1, ['q'] = 1, ['r'] = 1};
#define SLOT_UNWANTED MS_PK_SLOTS /* the fast path's slot for values of keys not wanted */
static const uint32_t slot_bit[MS_PK_SLOTS + 1] = {
        1u << 0, 1u << 1,  1u << 2,  1u << 3,  1u << 4,  1u << 5,  1u << 6,  1u << 7, 1u << 8,
        1u << 9, 1u << 10, 1u << 11, 1u << 12, 1u << 13, 1u << 14, 1u << 15, 0};

/* n values from the pool, the last ones taken (so that unmake_last can give them back). */
static struct ms_pk_val *pool_take(struct ms_pickle *p, size_t n)
{
	struct pool_chunk *c = p->pool;

	if (!c || c->cap - c->used < n) {
		size_t cap = n > POOL_VALS ? n : POOL_VALS;
		if (!(c = ms_malloc(sizeof(*c) + cap * sizeof(c->v[0]))))
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = p->pool;
		p->pool = c;
	}
	c->used += n;
	return &c->v[c->used - n];
}

/*
 * The memo index of a BINGET or LONG_BINGET at *ipp (5 bytes readable), *ipp past it; -1 if
 * it is not one.
 */
static inline int64_t get_index(const unsigned char **ipp)
{
	const unsigned char *ip = *ipp;

	if (*ip == 'h') {
		*ipp = ip + 2;
		return ip[1];
	}
	if (*ip == 'j') {
		*ipp = ip + 5;
		return ms_load_le32(ip + 1);
	}
	return -1;
}

/*
 * A memo get the fast path can do, at *ipp (BINGET or LONG_BINGET, 5 bytes readable): of a
 * slot written, not a streamed entry or object. 0: give up.
 */
static inline int fast_get(const struct ms_pickle *p, const unsigned char **ipp, size_t n_memo,
                           uint64_t *type, uint64_t *payload)
{
	const unsigned char *ip = *ipp;
	const struct ms_pk_val *m;
	int64_t i = get_index(&ip);
	uint64_t idx = (uint64_t)i;

	if (i < 0 || idx >= n_memo)
		return 0;
	m = MEMO_AT(p, idx);
	if (m->type > MS_PK_DICT || (m->type >= MS_PK_LIST && m->v.o->consumed))
		return 0;
	*type = m->type;
	*payload = payload_of(m);
	*ipp = ip;
	return 1;
}

/*
 * A list value made of memo gets (a frames list of frames seen before): after EMPTY_LIST and
 * its puts, MARK, gets, APPENDS, or one get and APPEND, or nothing. Its items into o.
 * 0: give up; -1: out of memory.
 */
static int fast_list(struct ms_pickle *p, const unsigned char **ipp, const unsigned char *end,
                     size_t n_memo, struct ms_pk_obj *o)
{
	const unsigned char *ip = *ipp, *q = ip;
	uint64_t type = 0, payload = 0;
	struct ms_pk_val *dst = NULL;
	size_t n = 0, room = 0;

	if (*ip != '(') {
		/* one get and APPEND; or nothing, and what follows is the next key or SETITEMS */
		if (!fast_get(p, &q, n_memo, &type, &payload) || *q != 'a')
			return 1;
		if (!(o->items = pool_take(p, 1)))
			return -1;
		put_val(&o->items[0], type, payload);
		o->n = o->cap = 1;
		o->pooled = 1;
		*ipp = q + 1;
		return 1;
	}
	/* straight into the pool's free room; a second pass only if the room runs out */
	if (p->pool) {
		room = p->pool->cap - p->pool->used;
		dst = &p->pool->v[p->pool->used];
	}
	for (q = ip + 1; end - q >= 16 && *q != 'e'; n++) {
		if (!fast_get(p, &q, n_memo, &type, &payload))
			return 0;
		if (n < room)
			put_val(&dst[n], type, payload);
	}
	if (end - q < 16 || n == 0 || n > UINT32_MAX)
		return 0;
	if (n <= room) {
		o->items = pool_take(p, n); /* == dst */
	} else {
		if (!(o->items = pool_take(p, n)))
			return -1;
		q = ip + 1;
		for (size_t i = 0; i < n; i++) {
			fast_get(p, &q, n_memo, &type, &payload);
			put_val(&o->items[i], type, payload);
		}
	}
	o->n = o->cap = (uint32_t)n;
	o->pooled = 1;
	*ipp = q + 1;
	return 1;
}

/* Take back the last object made and its pooled items (the fast path's list, giving up). */
static void unmake_last(struct ms_pickle *p)
{
	struct ms_pk_obj *o = &p->slabs->objs[--p->slabs->used];

	if (o->pooled)
		p->pool->used -= o->n;
	p->n_objs--;
}

/*
 * The fast path (ms_pickle_entry_fields), at the EMPTY_DICT that starts a trace entry of
 * device list tag, *ipp past it. If the whole entry lies in the window and has the layout
 * PyTorch writes (a memo put, MARK, then pairs of a string key by memo get and a plain value
 * with its memo puts, then SETITEMS; a plain value is a memo get, an int of up to 64 bits, a
 * short string, None, a bool, or one list of memo gets), its values go to the fields hook by
 * slot, st[(*spp)++] gets the entry (PK_STREAMED) and *ipp moves past SETITEMS; then the same
 * for the entries right after it, while the stack has room. *gave_up is set when the last one
 * tried is not read (*ipp then right past its EMPTY_DICT, for the general path): of that one
 * nothing is done that the general path, run from the same opcode, would not redo the same
 * way (memo slots past n_memo written, strings interned; a list made is taken back), and the
 * general path has the whole say on what is wrong: this one gives up instead of failing. Only
 * the hook's own error and running out of memory come back.
 */
static ms_status fast_entries(struct ms_pickle *p, const unsigned char **ipp,
                              const unsigned char *end, uint32_t tag, struct ms_pk_val *st,
                              size_t *spp, int *gave_up)
{
	const unsigned char *ip = *ipp;
	struct ms_pk_val vals[MS_PK_SLOTS + 1]; /* the last for values of unwanted keys */
	size_t sp = *spp;
	/* ip <= last: 32 bytes readable */
	uintptr_t last = (uintptr_t)end >= 32 ? (uintptr_t)end - 32 : 0;
	/* memo slots below it can be written: in the chunks there, within the limit */
	size_t memo_room = p->n_memo_chunks << MEMO_SHIFT;
	ms_status s;

	*gave_up = 1;
	if (memo_room > p->lim.max_memo)
		memo_room = p->lim.max_memo + 1;
	if (tag >> (64 - ORD_BITS))
		return MS_OK;
next_entry:;
	const unsigned char *start = ip;
	struct ms_pk_obj *made = NULL;
	uint32_t present = 0;
	size_t n_memo = p->n_memo;
	uint64_t me = p->ev_mapped | (uint64_t)tag << ORD_BITS;

	if (p->ev_mapped > ORD_MASK || end - ip < 16 || !put_op[*ip] ||
	    !fast_put(p, &ip, &n_memo, PK_STREAMED, me) || *ip++ != '(')
		goto give_up;
	/*
	 * 32 bytes readable at each key: the key (5 at most), a value (10 at most; a string or a
	 * list checks for itself), a memo put (5) and the next opcode.
	 */
	for (;;) {
		uint64_t idx, type, payload;
		uint32_t id;
		int slot, r;
		struct key_cache *kc;
		const unsigned char *key;
		int memoized = 0;
		size_t n;

		if ((uintptr_t)ip > last) {
			if (ip < end && *ip == 'u')
				break;
			goto give_up;
		}
		/*
		 * FRAME (protocol 4): Python's framer may end a 64 KiB frame after any key or
		 * value, so one entry in a thousand has one inside; framing needs no action.
		 */
		if (*ip == 0x95) {
			ip += 9;
			continue;
		}
		/* the key's slot, from the cache by memo index or worked out (and cached) */
		key = ip;
		if (*ip == 'h')
			idx = ip[1], ip += 2;
		else if (*ip == 'j')
			idx = ms_load_le32(ip + 1), ip += 5;
		else if (*ip == 'u')
			break;
		else if (*ip == 0x8c)
			goto inline_key;
		else
			goto give_up;
		kc = &p->kcache[idx & (KCACHE - 1)];
		if (kc->idx1 == idx + 1) {
			slot = kc->slot;
		} else {
			ip = key;
			if (!fast_get(p, &ip, n_memo, &type, &payload) || type > MS_PK_BYTES)
				goto give_up; /* a container key: the general path decides */
			if (type == MS_PK_STR && payload == p->id_device_traces)
				goto give_up; /* the general path gives its lists roles */
			slot = type == MS_PK_STR && payload < 64 && p->key_slot[payload] >= 0
			               ? p->key_slot[payload]
			               : SLOT_UNWANTED;
			/* not a slot of this entry's own: only those are final */
			if (idx < p->n_memo && idx < UINT32_MAX) {
				kc->idx1 = (uint32_t)idx + 1;
				kc->slot = (int8_t)slot;
			}
		}
		if (0) {
		inline_key:
			/*
			 * A key seen for the first time (PyTorch's "device_free" in its one OOM
			 * entry): a short string and its MEMOIZE, then the value as usual.
			 */
			n = ip[1];
			if (n > p->lim.max_string || (size_t)(end - ip) < 2 + n + 1 + 32 ||
			    ip[2 + n] != 0x94 || n_memo >= memo_room)
				goto give_up;
			if ((s = intern(p, ip + 2, n, 1, &id)))
				return s;
			if (id == p->id_device_traces)
				goto give_up;
			put_val(MEMO_AT(p, n_memo), MS_PK_STR, id);
			n_memo++;
			ip += 2 + n + 1;
			slot = id < 64 && p->key_slot[id] >= 0 ? p->key_slot[id] : SLOT_UNWANTED;
		}
		if (*ip == 0x95) { /* FRAME between the key and its value: the same */
			ip += 9;
			if ((size_t)(end - ip) < 32)
				goto give_up;
		}
		switch (*ip) {
		case 'h': /* BINGET */
		case 'j': /* LONG_BINGET */
			if (!fast_get(p, &ip, n_memo, &type, &payload))
				goto give_up;
			break;
		case 'K': /* BININT1 */
			type = MS_PK_INT, payload = ip[1], ip += 2;
			break;
		case 'M': /* BININT2 */
			type = MS_PK_INT, payload = (uint64_t)ip[1] | (uint64_t)ip[2] << 8, ip += 3;
			break;
		case 'J': /* BININT */
			type = MS_PK_INT,
			payload = (uint64_t)(int64_t)(int32_t)ms_load_le32(ip + 1);
			ip += 5;
			break;
		case 0x8a: /* LONG1 */
			n = ip[1];
			if (n < 1 || n > 8)
				goto give_up;
			type = MS_PK_INT, payload = long1_value(ip + 2, n), ip += 2 + n;
			break;
		case 0x8c: /* SHORT_BINUNICODE */
			n = ip[1];
			if (n > p->lim.max_string)
				goto give_up;
			if (n <= 8) { /* the 16 bytes after it are within the 32 checked */
				uint64_t head = ms_load_le64(ip + 2) & len_mask[n];
				if (p->slot_str[slot].len == n && p->slot_str[slot].head == head) {
					id = p->slot_str[slot].id;
				} else {
					if ((s = intern(p, ip + 2, n, 1, &id)))
						return s;
					p->slot_str[slot].len = (uint32_t)n;
					p->slot_str[slot].head = head;
					p->slot_str[slot].id = id;
				}
			} else {
				if ((size_t)(end - ip) < 2 + n + 16)
					goto give_up;
				if ((s = intern(p, ip + 2, n, 1, &id)))
					return s;
			}
			type = MS_PK_STR, payload = id, ip += 2 + n;
			memoized = 1;
			break;
		case 'N': /* NONE */
			type = MS_PK_NONE, payload = 0, ip++;
			break;
		case 0x88: /* NEWTRUE */
		case 0x89: /* NEWFALSE */
			type = MS_PK_BOOL, payload = *ip == 0x88, ip++;
			break;
		case ']': /* EMPTY_LIST: one list of memo gets per entry (its frames) */
			if (made || p->n_objs >= p->lim.max_objects)
				goto give_up;
			if ((s = new_obj(p, MS_PK_LIST, &made)))
				return s;
			type = MS_PK_LIST, payload = (uint64_t)(uintptr_t)made, ip++;
			while (put_op[*ip])
				if (end - ip < 16 || !fast_put(p, &ip, &n_memo, type, payload))
					goto give_up;
			if (end - ip < 16 || (r = fast_list(p, &ip, end, n_memo, made)) == 0)
				goto give_up;
			if (r < 0)
				return MS_ERR_NOMEM;
			memoized = 1;
			break;
		default:
			goto give_up;
		}
		/*
		 * Python memoizes strings and lists, never ints or what it got from the memo; a put
		 * after those ends up where a key should be, and the general path reads it.
		 */
		if (memoized) {
			/*
			 * Protocol 4's MEMOIZE, the next slot, checked against a bound worked out
			 * once; a second put after it reads as a key, and the general path takes
			 * it. Protocols 2 and 3 name the slot.
			 */
			if (*ip == 0x94 && n_memo < memo_room) {
				put_val(MEMO_AT(p, n_memo), type, payload);
				n_memo++;
				ip++;
			} else {
				while (put_op[*ip])
					if (end - ip < 16 ||
					    !fast_put(p, &ip, &n_memo, type, payload))
						goto give_up;
			}
		}
		put_val(&vals[slot], type, payload);
		present |= slot_bit[slot];
	}
	/* SETITEMS: the entry is complete */
	p->n_memo = n_memo;
	if ((s = p->fields_fn(p->item_ctx, tag, vals, present,
	                      (int64_t)(p->base + (size_t)(ip - p->buf)))))
		return s;
	p->ev_mapped++;
	p->n_fast++;
	put_val(&st[sp++], PK_STREAMED, me);
	*ipp = ++ip;
	*spp = sp;
	/* the next one, if an entry follows and the stack has room for it and one more */
	if (ip < end && *ip == '}' && sp < p->stack_cap) {
		ip++;
		goto next_entry;
	}
	*gave_up = 0;
	return MS_OK;
give_up:
	if (made)
		unmake_last(p);
	*ipp = start;
	return MS_OK;
}

/*
 * The opcode loop. The opcodes of PyTorch's trace entries (memo gets and puts, small
 * ints, short strings, empty dicts, marks) run inline on local copies of the cursor and the
 * stack pointer; everything else goes through step() with the state saved first. Before
 * each opcode the stack has room for one more value (no opcode pushes more than one).
 */
ms_status ms_pickle_run(struct ms_pickle *p, ms_pk_read_fn rd, void *rd_ctx, struct ms_pk_val *root,
                        struct ms_diag *diag)
{
	const unsigned char *buf, *ip, *end; /* input window, cursor, end of what was read */
	struct ms_pk_val *st;                /* p->stack */
	size_t sp;                           /* p->sp */
	uint64_t base;                       /* offset of buf[0] */
	int64_t off;                         /* offset of the current opcode */
	ms_status s = MS_OK;

	p->rd = rd;
	p->rd_ctx = rd_ctx;
	p->diag = diag;
#define SAVE() (p->pos = (size_t)(ip - buf), p->sp = sp, p->op_off = off)
#define LOAD()                                                                               \
	(buf = p->buf, ip = buf + p->pos, end = buf + p->len, base = p->base, st = p->stack, \
	 sp = p->sp)
#define NEED(n)                                         \
	do {                                            \
		if ((size_t)(end - ip) < (size_t)(n)) { \
			SAVE();                         \
			s = need_slow(p, (n));          \
			LOAD();                         \
			if (s)                          \
				return s;               \
		}                                       \
	} while (0)
#define FAIL(st_, what)                        \
	do {                                   \
		SAVE();                        \
		return fail(p, (st_), (what)); \
	} while (0)
#define PUSH(type, payload) put_val(&st[sp++], (type), (payload))
	/* the window before the first read: no cursor arithmetic on a null pointer */
	if (!p->buf && ms_grow(&p->buf, &p->cap, 1u << 20, 1))
		return MS_ERR_NOMEM;
	LOAD();
	for (;;) {
		uint64_t idx;
		size_t n;

		off = (int64_t)(base + (size_t)(ip - buf));
		if (sp == p->stack_cap) {
			if (ms_grow(&p->stack, &p->stack_cap, sp + 1, sizeof(*st)))
				return MS_ERR_NOMEM;
			st = p->stack;
		}
		if (ip == end) {
			SAVE();
			s = need_slow(p, 1);
			LOAD();
			if (s == MS_ERR_TRUNCATED)
				return ms__diag_set(
				        diag, s, off, -1,
				        off == 0 ? "empty file"
				                 : "pickle ends at offset %lld without STOP",
				        (long long)off);
			if (s)
				return s;
		}
		p->op = *ip++;
		switch (p->op) {
		case 'h': /* BINGET */
			NEED(1);
			idx = *ip++;
			goto get;
		case 'j': /* LONG_BINGET */
			NEED(4);
			idx = ms_load_le32(ip);
			ip += 4;
		get : {
			const struct ms_pk_val *m;
			if (idx >= p->n_memo || (m = MEMO_AT(p, idx))->type == PK_CONSUMED)
				FAIL(MS_ERR_FORMAT, "memo reference to an unknown slot");
			if (m->type == PK_STREAMED)
				FAIL(MS_ERR_UNSUPPORTED, "reference to a streamed trace entry");
			if ((m->type == MS_PK_LIST || m->type == MS_PK_DICT ||
			     m->type == MS_PK_TUPLE) &&
			    m->v.o->consumed)
				FAIL(MS_ERR_UNSUPPORTED, "reference to a streamed trace entry");
			copy_vals(&st[sp++], m, 1);
			break;
		}
		case 0x94: /* MEMOIZE */
			idx = p->n_memo;
			goto put;
		case 'q': /* BINPUT */
			NEED(1);
			idx = *ip++;
			goto put;
		case 'r': /* LONG_BINPUT */
			NEED(4);
			idx = ms_load_le32(ip);
			ip += 4;
		put:
			if (idx < p->n_memo ||
			    (idx == p->n_memo && (idx >> MEMO_SHIFT) < p->n_memo_chunks)) {
				if (sp == 0 || (p->n_marks && sp == p->marks[p->n_marks - 1]))
					FAIL(MS_ERR_FORMAT, "memo store with an empty stack");
				copy_vals(MEMO_AT(p, idx), &st[sp - 1], 1);
				p->n_memo += idx == p->n_memo;
				p->kcache[idx & (KCACHE - 1)].idx1 = 0;
			} else {
				SAVE();
				s = memo_put(p, idx);
				LOAD();
				if (s)
					return s;
			}
			break;
		case 'K': /* BININT1 */
			NEED(1);
			PUSH(MS_PK_INT, *ip++);
			break;
		case 'M': /* BININT2 */
			NEED(2);
			PUSH(MS_PK_INT, (uint64_t)ip[0] | (uint64_t)ip[1] << 8);
			ip += 2;
			break;
		case 'J': /* BININT: signed 32-bit */
			NEED(4);
			PUSH(MS_PK_INT, (uint64_t)(int64_t)(int32_t)ms_load_le32(ip));
			ip += 4;
			break;
		case 0x8a: /* LONG1: up to 8 bytes inline, longer ones in push_long */
			NEED(1);
			n = *ip;
			if (n >= 1 && n <= 8 && end - ip >= 9) {
				PUSH(MS_PK_INT, long1_value(ip + 1, n));
				ip += 1 + n;
				break;
			}
			ip++;
			SAVE();
			s = push_long(p, n);
			LOAD();
			if (s)
				return s;
			break;
		case 0x8c: /* SHORT_BINUNICODE */
			NEED(1);
			n = *ip;
			if (n > p->lim.max_string)
				FAIL(MS_ERR_LIMIT, "string longer than the limit");
			NEED(1 + n);
			{
				uint32_t id;
				if ((s = intern(p, ip + 1, n, end - ip >= 9, &id)))
					return s;
				PUSH(MS_PK_STR, id);
			}
			ip += 1 + n;
			break;
		case '(': /* MARK */
			if (p->n_marks == p->marks_cap &&
			    ms_grow(&p->marks, &p->marks_cap, p->n_marks + 1, sizeof(size_t)))
				return MS_ERR_NOMEM;
			p->marks[p->n_marks++] = sp;
			break;
		case '}': { /* EMPTY_DICT */
			struct ms_pk_obj *o = NULL;
			const struct ms_pk_val *under = NULL;
			p->op_off = off;
			if (p->item_fn) {
				/* an item of a device list: right above it, or above the mark over
				 * it */
				if (p->n_marks && p->marks[p->n_marks - 1] == sp && sp)
					under = &st[sp - 1];
				else if (p->n_marks && p->marks[p->n_marks - 1])
					under = &st[p->marks[p->n_marks - 1] - 1];
				else if (!p->n_marks && sp)
					under = &st[sp - 1];
				if (under &&
				    (under->type != MS_PK_LIST || under->v.o->role != ROLE_DEVICE))
					under = NULL;
			}
			if (under && p->fields_fn) {
				int gave_up;
				/* and the entries right after it, while they go the fast way */
				s = fast_entries(p, &ip, end, under->v.o->tag, st, &sp, &gave_up);
				if (s)
					return s;
				if (!gave_up)
					break;
				/* the general path reads the one at ip - 1 */
				p->op_off = off = (int64_t)(base + (size_t)(ip - 1 - buf));
			}
			if ((s = new_obj(p, MS_PK_DICT, &o)))
				return s;
			if (under) {
				o->role = ROLE_ENTRY;
				o->tag = under->v.o->tag;
			}
			PUSH(MS_PK_DICT, (uint64_t)(uintptr_t)o);
			break;
		}
		case 'N': /* NONE */
			PUSH(MS_PK_NONE, 0);
			break;
		case 0x88: /* NEWTRUE */
		case 0x89: /* NEWFALSE */
			PUSH(MS_PK_BOOL, p->op == 0x88);
			break;
		case '.': /* STOP */
			if (sp != 1 || p->n_marks)
				FAIL(MS_ERR_FORMAT, "STOP with a malformed stack");
			if (p->ev_mapped != p->ev_appended)
				FAIL(MS_ERR_UNSUPPORTED, "a trace entry never added to its list");
			SAVE();
			copy_vals(root, &st[0], 1);
			return MS_OK;
		default:
			SAVE();
			s = step(p);
			LOAD();
			if (s)
				return s;
			break;
		}
	}
#undef SAVE
#undef LOAD
#undef NEED
#undef FAIL
#undef PUSH
}

const struct ms_pk_val *ms_pk_dict_get(const struct ms_pickle *p, const struct ms_pk_val *d,
                                       const char *key)
{
	size_t kl = strlen(key);
	const struct ms_pk_obj *o;

	if (!d || d->type != MS_PK_DICT)
		return NULL;
	o = d->v.o;
	/* from the end: a later assignment of a key wins, as in Python */
	for (uint32_t i = o->n; i >= 2; i -= 2) {
		const struct ms_pk_val *k = &o->items[i - 2];
		if (k->type == MS_PK_STR) {
			const struct ms_str *s = ms_symtab_get_str(&p->strs, k->v.str);
			if (s->len == kl && memcmp(s->s, key, kl) == 0)
				return &o->items[i - 1];
		}
	}
	return NULL;
}

ms_status ms__pk_new(struct ms_pickle *p, uint8_t kind, struct ms_pk_val *out)
{
	struct ms_pk_obj *o = NULL;

	MS_TRY(new_obj(p, kind, &o));
	out->type = kind;
	out->v.o = o;
	return MS_OK;
}

ms_status ms__pk_add(struct ms_pickle *p, struct ms_pk_val *container, const struct ms_pk_val *v)
{
	(void)p;
	return obj_add(container->v.o, v, 1);
}

ms_status ms__pk_str(struct ms_pickle *p, const char *s, size_t n, struct ms_pk_val *out)
{
	out->type = MS_PK_STR;
	return ms_symtab_str(&p->strs, s, n, &out->v.str);
}
