/*
 * Restricted unpickler: an opcode machine over plain values that refuses
 * every opcode able to import or call Python code (see pickle.h).
 * Opcode reference: CPython Lib/pickletools.py; layout facts: torch-allocator.md §8.7.
 */
#include "parse/pickle.h"

#include <stddef.h>
#include <string.h>

#include "common/alloc.h"
#include "common/status.h"

enum { ROLE_NONE = 0, ROLE_OUTER = 1, ROLE_DEVICE = 2 };
#define PK_CONSUMED   255 /* memo slot of a streamed object */
#define SLAB_OBJS     1024
#define MEMO_SHIFT    16
#define MEMO_CHUNK    ((size_t)1 << MEMO_SHIFT)
#define MEMO_AT(p, i) (&(p)->memo[(i) >> MEMO_SHIFT][(i) & (MEMO_CHUNK - 1)])
#define SPARE_CAP     32 /* items arrays of this capacity are recycled */

struct slab {
	struct slab *next;
	uint32_t used;
	struct ms_pk_obj objs[SLAB_OBJS];
};

struct ms_pickle {
	struct ms_symtab strs;
	uint32_t id_device_traces;
	struct slab *slabs;
	uint64_t n_objs;
	struct ms_pk_val *stack;
	size_t sp, stack_cap;
	size_t *marks;
	size_t n_marks, marks_cap;
	/* the memo in chunks of MEMO_CHUNK values: it grows without copying */
	struct ms_pk_val **memo;
	size_t n_memo, n_memo_chunks, memo_chunks_cap;
	/* input window */
	unsigned char *buf;
	size_t pos, len, cap;
	uint64_t base; /* offset of buf[0] */
	int eof;
	ms_pk_read_fn rd;
	void *rd_ctx;
	int proto;
	struct ms_pickle_limits lim;
	ms_pk_item_fn item_fn;
	void *item_ctx;
	struct ms_diag *diag;
	int64_t op_off;
	uint8_t op;
	/* items arrays of streamed entries, reused by the next dicts (no malloc per entry) */
	struct ms_pk_val **spare;
	size_t n_spare, cap_spare;
	/* last strings interned, by length and first bytes: repeated values skip the hash */
	struct {
		uint32_t len, id;
		uint64_t head;
	} scache[64];
};

ms_status ms_pickle_new(struct ms_pickle **out)
{
	struct ms_pickle *p = ms_calloc(1, sizeof(*p));

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
			ms_free(s->objs[i].items);
		ms_free(s);
		s = n;
	}
	ms_symtab_release(&p->strs);
	ms_free(p->stack);
	ms_free(p->marks);
	for (size_t i = 0; i < p->n_memo_chunks; i++)
		ms_free(p->memo[i]);
	ms_free(p->memo);
	ms_free(p->buf);
	for (size_t i = 0; i < p->n_spare; i++)
		ms_free(p->spare[i]);
	ms_free(p->spare);
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

void ms_pickle_stream_traces(struct ms_pickle *p, ms_pk_item_fn fn, void *ctx)
{
	p->item_fn = fn;
	p->item_ctx = ctx;
}

const struct ms_symtab *ms_pickle_strings(const struct ms_pickle *p)
{
	return &p->strs;
}

int ms_pickle_protocol(const struct ms_pickle *p)
{
	return p->proto;
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

static uint64_t le(const unsigned char *b, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

static inline ms_status push(struct ms_pickle *p, struct ms_pk_val v)
{
	if (p->sp == p->stack_cap && ms_grow(&p->stack, &p->stack_cap, p->sp + 1, sizeof(v)))
		return MS_ERR_NOMEM;
	p->stack[p->sp++] = v;
	return MS_OK;
}

static size_t mark_top(const struct ms_pickle *p)
{
	return p->n_marks ? p->marks[p->n_marks - 1] : 0;
}

static ms_status new_obj(struct ms_pickle *p, uint8_t kind, struct ms_pk_obj **out)
{
	struct ms_pk_obj *o;

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
	o->serial = p->n_objs++;
	if (kind == MS_PK_DICT && p->n_spare) {
		o->items = p->spare[--p->n_spare];
		o->cap = SPARE_CAP;
	}
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
	if (o->n + n > cap) {
		if (cap == 0 && o->kind == MS_PK_DICT && n <= SPARE_CAP) {
			/* dicts start at SPARE_CAP items so that streamed ones can be recycled */
			o->items = ms_malloc(SPARE_CAP * sizeof(*v));
			if (!o->items)
				return MS_ERR_NOMEM;
			cap = SPARE_CAP;
		} else if (ms_grow(&o->items, &cap, o->n + n, sizeof(*v))) {
			return MS_ERR_NOMEM;
		}
	}
	o->cap = (uint32_t)(cap > UINT32_MAX ? UINT32_MAX : cap);
	memcpy(o->items + o->n, v, n * sizeof(*v));
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
static void consume(struct ms_pickle *p, struct ms_pk_obj *o)
{
	if (o->consumed)
		return;
	o->consumed = 1;
	/* PyTorch's pickler appends up to 1000 entries per APPENDS: keep that many */
	if (o->cap == SPARE_CAP && p->n_spare < 4096 &&
	    (p->n_spare < p->cap_spare ||
	     !ms_grow(&p->spare, &p->cap_spare, p->n_spare + 1, sizeof(*p->spare))))
		p->spare[p->n_spare++] = o->items;
	else
		ms_free(o->items);
	o->items = NULL;
	o->n = o->cap = 0;
}

/* Hand items[0..n) appended to a streamed list to the hook, then release them. */
static ms_status stream_items(struct ms_pickle *p, struct ms_pk_obj *list,
                              const struct ms_pk_val *items, size_t n)
{
	size_t i;
	ms_status s;

	for (i = 0; i < n; i++) {
		if ((items[i].type == MS_PK_LIST || items[i].type == MS_PK_DICT ||
		     items[i].type == MS_PK_TUPLE) &&
		    items[i].v.o->consumed)
			return fail(p, MS_ERR_UNSUPPORTED, "trace entry object used twice");
		s = p->item_fn(p->item_ctx, list->tag, list->n, &items[i], p->op_off);
		if (s)
			return s;
		list->n++;
	}
	/*
	 * Release each entry dict. Only the dict itself: what it holds (frames
	 * lists, frame dicts) may be shared with later entries through the memo.
	 */
	for (i = 0; i < n; i++)
		if (items[i].type == MS_PK_DICT)
			consume(p, items[i].v.o);
	return MS_OK;
}

static ms_status append_to(struct ms_pickle *p, struct ms_pk_val *target, struct ms_pk_val *items,
                           size_t n, int set)
{
	struct ms_pk_obj *o;

	if (set) {
		if (target->type != MS_PK_DICT || n % 2)
			return fail(p, MS_ERR_FORMAT, "SETITEM(S) on a non-dict");
	} else if (target->type != MS_PK_LIST) {
		return fail(p, MS_ERR_FORMAT, "APPEND(S) on a non-list");
	}
	o = target->v.o;
	if (o->consumed)
		return fail(p, MS_ERR_UNSUPPORTED, "streamed object modified later");
	if (o->role == ROLE_DEVICE)
		return stream_items(p, o, items, n);
	return obj_add(o, items, n);
}

/*
 * Write a value with two full 8-byte stores. Byte- or 4-byte-wide stores into a slot that is
 * read back whole at once (MEMOIZE right after) defeat store forwarding and cost ~15 cycles.
 */
_Static_assert(offsetof(struct ms_pk_val, v) == 8 && sizeof(struct ms_pk_val) == 16,
               "ms_pk_val layout");
static inline void store_val(struct ms_pk_val *dst, uint8_t type, uint32_t str)
{
	union {
		uint64_t u;
		uint32_t s;
	} pay;
	uint64_t w0 = type;

	pay.u = 0;
	pay.s = str;
	memcpy(dst, &w0, 8);
	memcpy((char *)dst + 8, &pay.u, 8);
}

/* Intern b[0..n): strings of up to 8 bytes seen recently skip the hash table. */
static inline ms_status intern(struct ms_pickle *p, const unsigned char *b, size_t n, uint32_t *id)
{
	uint64_t head = 0;
	unsigned slot;
	ms_status s;

	if (n > 8)
		return ms_symtab_str(&p->strs, (const char *)b, n, id);
	/* built byte by byte: a short memcpy into a u64 stalls on store forwarding */
	for (size_t i = n; i-- > 0;)
		head = head << 8 | b[i];
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
	if ((s = intern(p, b, n, &id)))
		return s;
	if (p->sp == p->stack_cap &&
	    ms_grow(&p->stack, &p->stack_cap, p->sp + 1, sizeof(*p->stack)))
		return MS_ERR_NOMEM;
	top = &p->stack[p->sp++];
	store_val(top, type, id);
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
	if (idx > p->lim.max_memo || idx > p->n_memo + (1u << 20))
		return fail(p, MS_ERR_LIMIT, "memo index out of range");
	if (idx >= p->n_memo) {
		while ((idx >> MEMO_SHIFT) >= p->n_memo_chunks) {
			struct ms_pk_val *c;
			if (ms_grow(&p->memo, &p->memo_chunks_cap, p->n_memo_chunks + 1,
			            sizeof(*p->memo)) ||
			    !(c = ms_malloc(MEMO_CHUNK * sizeof(*c))))
				return MS_ERR_NOMEM;
			p->memo[p->n_memo_chunks++] = c;
		}
		for (size_t i = p->n_memo; i < idx; i++)
			MEMO_AT(p, i)->type = PK_CONSUMED; /* holes read as errors */
		p->n_memo = idx + 1;
	}
	*MEMO_AT(p, idx) = p->stack[p->sp - 1];
	return MS_OK;
}

static inline ms_status memo_get(struct ms_pickle *p, uint64_t idx)
{
	struct ms_pk_val v;

	if (idx >= p->n_memo || MEMO_AT(p, idx)->type == PK_CONSUMED)
		return fail(p, MS_ERR_FORMAT, "memo reference to an unknown slot");
	v = *MEMO_AT(p, idx);
	if ((v.type == MS_PK_LIST || v.type == MS_PK_DICT || v.type == MS_PK_TUPLE) &&
	    v.v.o->consumed)
		return fail(p, MS_ERR_UNSUPPORTED, "reference to a streamed trace entry");
	return push(p, v);
}

/* Collect stack[mark..sp) into a new container of kind; pops the mark. */
static ms_status from_mark(struct ms_pickle *p, uint8_t kind)
{
	struct ms_pk_obj *o;
	size_t m;

	if (!p->n_marks)
		return fail(p, MS_ERR_FORMAT, "missing MARK");
	m = p->marks[--p->n_marks];
	if (kind == MS_PK_DICT && (p->sp - m) % 2)
		return fail(p, MS_ERR_FORMAT, "odd number of dict items");
	MS_TRY(new_obj(p, kind, &o));
	MS_TRY(obj_add(o, p->stack + m, p->sp - m));
	p->sp = m;
	return push_obj(p, o);
}

static ms_status tuple_n(struct ms_pickle *p, size_t n)
{
	struct ms_pk_obj *o;

	if (p->sp < n || p->sp - n < mark_top(p))
		return fail(p, MS_ERR_FORMAT, "stack underflow");
	MS_TRY(new_obj(p, MS_PK_TUPLE, &o));
	MS_TRY(obj_add(o, p->stack + p->sp - n, n));
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

ms_status ms_pickle_run(struct ms_pickle *p, ms_pk_read_fn rd, void *rd_ctx, struct ms_pk_val *root,
                        struct ms_diag *diag)
{
	struct ms_pk_val v;
	struct ms_pk_obj *o;
	const unsigned char *b;
	ms_status s = MS_OK;

	p->rd = rd;
	p->rd_ctx = rd_ctx;
	p->diag = diag;
	for (;;) {
		p->op_off = (int64_t)(p->base + p->pos);
		if (p->len == p->pos && (s = need(p, 1))) {
			if (s == MS_ERR_TRUNCATED)
				return ms__diag_set(
				        diag, s, p->op_off, -1,
				        p->op_off == 0 ? "empty file"
				                       : "pickle ends at offset %lld without STOP",
				        (long long)p->op_off);
			return s;
		}
		p->op = *take(p, 1);
		switch (p->op) {
		case 0x80: /* PROTO */
			MS_TRY(need(p, 1));
			p->proto = *take(p, 1);
			if (p->proto < 2 || p->proto > 5)
				return ms__diag_set(diag, MS_ERR_UNSUPPORTED, p->op_off, -1,
				                    "pickle protocol %d at offset %lld is not "
				                    "supported (2 to 5 are)",
				                    p->proto, (long long)p->op_off);
			break;
		case 0x95: /* FRAME: an 8-byte length; framing needs no action */
			MS_TRY(need(p, 8));
			take(p, 8);
			break;
		case '.': /* STOP */
			if (p->sp != 1 || p->n_marks)
				return fail(p, MS_ERR_FORMAT, "STOP with a malformed stack");
			*root = p->stack[0];
			return MS_OK;
		case '(': /* MARK */
			if (ms_grow(&p->marks, &p->marks_cap, p->n_marks + 1, sizeof(size_t)))
				return MS_ERR_NOMEM;
			p->marks[p->n_marks++] = p->sp;
			break;
		case '}': /* EMPTY_DICT */
			MS_TRY(new_obj(p, MS_PK_DICT, &o));
			MS_TRY(push_obj(p, o));
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
		case 0x94: /* MEMOIZE */
			MS_TRY(memo_put(p, p->n_memo));
			break;
		case 'q': /* BINPUT */
			MS_TRY(need(p, 1));
			MS_TRY(memo_put(p, *take(p, 1)));
			break;
		case 'r': /* LONG_BINPUT */
			MS_TRY(need(p, 4));
			MS_TRY(memo_put(p, le(take(p, 4), 4)));
			break;
		case 'h': /* BINGET */
			MS_TRY(need(p, 1));
			MS_TRY(memo_get(p, *take(p, 1)));
			break;
		case 'j': /* LONG_BINGET */
			MS_TRY(need(p, 4));
			MS_TRY(memo_get(p, le(take(p, 4), 4)));
			break;
		case 'N': /* NONE */
			v.type = MS_PK_NONE;
			v.v.i = 0;
			MS_TRY(push(p, v));
			break;
		case 0x88: /* NEWTRUE */
		case 0x89: /* NEWFALSE */
			v.type = MS_PK_BOOL;
			v.v.i = p->op == 0x88;
			MS_TRY(push(p, v));
			break;
		case 'K': /* BININT1 */
			MS_TRY(need(p, 1));
			v.type = MS_PK_INT;
			v.v.i = *take(p, 1);
			MS_TRY(push(p, v));
			break;
		case 'M': /* BININT2 */
			MS_TRY(need(p, 2));
			v.type = MS_PK_INT;
			v.v.i = (int64_t)le(take(p, 2), 2);
			MS_TRY(push(p, v));
			break;
		case 'J': /* BININT: signed 32-bit */
			MS_TRY(need(p, 4));
			v.type = MS_PK_INT;
			v.v.i = (int32_t)(uint32_t)le(take(p, 4), 4);
			MS_TRY(push(p, v));
			break;
		case 0x8a: /* LONG1 */
			MS_TRY(need(p, 1));
			MS_TRY(push_long(p, *take(p, 1)));
			break;
		case 0x8b: /* LONG4 */
			MS_TRY(need(p, 4));
			b = take(p, 4);
			if (b[3] & 0x80)
				return fail(p, MS_ERR_FORMAT, "negative LONG4 length");
			MS_TRY(push_long(p, le(b, 4)));
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
		case 0x8c: /* SHORT_BINUNICODE */
			MS_TRY(need(p, 1));
			MS_TRY(push_str(p, *take(p, 1), MS_PK_STR));
			break;
		case 'X': /* BINUNICODE */
			MS_TRY(need(p, 4));
			MS_TRY(push_str(p, le(take(p, 4), 4), MS_PK_STR));
			break;
		case 0x8d: /* BINUNICODE8 */
			MS_TRY(need(p, 8));
			MS_TRY(push_str(p, le(take(p, 8), 8), MS_PK_STR));
			break;
		case 'C': /* SHORT_BINBYTES */
			MS_TRY(need(p, 1));
			MS_TRY(push_str(p, *take(p, 1), MS_PK_BYTES));
			break;
		case 'B': /* BINBYTES */
			MS_TRY(need(p, 4));
			MS_TRY(push_str(p, le(take(p, 4), 4), MS_PK_BYTES));
			break;
		case 0x8e: /* BINBYTES8 */
		case 0x96: /* BYTEARRAY8 */
			MS_TRY(need(p, 8));
			MS_TRY(push_str(p, le(take(p, 8), 8), MS_PK_BYTES));
			break;
		default: {
			const char *name = op_name(p->op);
			if (name &&
			    (p->op == 'c' || p->op == 0x93 || p->op == 'R' || p->op == 'b' ||
			     p->op == 'i' || p->op == 'o' || p->op == 0x81 || p->op == 0x92 ||
			     p->op == 'P' || p->op == 'Q' || p->op == 0x82 || p->op == 0x83 ||
			     p->op == 0x84))
				return ms__diag_set(
				        diag, MS_ERR_UNSAFE, p->op_off, -1,
				        "refusing pickle opcode %s at offset %lld: it would run "
				        "code (memsnap never executes pickles)",
				        name, (long long)p->op_off);
			if (name)
				return ms__diag_set(diag, MS_ERR_UNSUPPORTED, p->op_off, -1,
				                    "unsupported pickle opcode %s at offset %lld",
				                    name, (long long)p->op_off);
			return ms__diag_set(diag, MS_ERR_UNSUPPORTED, p->op_off, -1,
			                    "unknown pickle opcode 0x%02x at offset %lld", p->op,
			                    (long long)p->op_off);
		}
		}
	}
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
	struct ms_pk_obj *o;

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
