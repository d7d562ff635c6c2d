/*
 * Restricted unpickler: the one opcode machine and decoder, over plain values, refusing every
 * opcode able to import or call Python code, and the item readers' calls (see pickle.h).
 * Opcode reference: CPython Lib/pickletools.py.
 */
#include "parse/pickle.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/alloc.h"
#include "common/bytes.h"
#include "common/status.h"

/*
 * Stream hook roles. ROLE_LISTS: the list at the stream key of the top-level dict; ROLE_LIST:
 * a list in it (tag: its index). ROLE_ITEM: a dict created as an item of such a list; its
 * items are handed over where they lie on the stack at its SETITEM(S), never copied, and it
 * becomes ROLE_HANDED (consumed, ord = its place in mapping order) until the APPEND(S) that
 * adds it to the list checks that order and makes it ROLE_DONE.
 */
enum { ROLE_NONE = 0, ROLE_LISTS, ROLE_LIST, ROLE_ITEM, ROLE_HANDED, ROLE_DONE };
#define PK_CONSUMED 255 /* memo slot never written (a hole) */
/*
 * An item read by an item reader (ms_pk_items): no object, only its place in mapping
 * order and its list, payload ord | tag << 40. Internal: it never leaves the stack or the memo
 * as such (a copy stored in a container becomes a streamed, empty dict there).
 */
#define PK_STREAMED 254
/*
 * A list an item reader made, given up (ms_pk_release) and its header reused: payload its aux.
 * A memo get of it gets a new empty list with that aux, as a get of the list itself would have.
 */
#define PK_RELEASED 253
/* ms_pk_obj.recycle: the header may be reused once released (ms_pk_release); it is reused now */
enum { RECYCLE_MEMO = 1, RECYCLE_TEMP = 2, RECYCLE_SPARE = 4 };
#define ORD_BITS      40
#define ORD_MASK      (((uint64_t)1 << ORD_BITS) - 1)
#define MEMO_SHIFT    17 /* a memo chunk of 2 MiB: a huge page (ms_pages_alloc) */
#define MEMO_CHUNK    ((size_t)1 << MEMO_SHIFT)
#define MEMO_AT(p, i) (&(p)->memo[(i) >> MEMO_SHIFT][(i) & (MEMO_CHUNK - 1)])
#define MEMO_SLACK    4096 /* memo slots a pickle may skip beyond one per input byte */
#define KCACHE        256
#define SLOT_UNWANTED MS_PK_SLOTS /* an item reader's slot for values of keys not wanted */

/* Container headers, a huge page of them at a time (ms_pages_alloc). */
struct slab {
	struct slab *next;
	uint32_t used;
	struct ms_pk_obj objs[];
};
#define SLAB_OBJS ((MS_PAGES_HUGE - sizeof(struct slab)) / sizeof(struct ms_pk_obj))

/* Items of containers filled at once, bump-allocated: one allocation per 2 MiB, not per list. */
struct pool_chunk {
	struct pool_chunk *next;
	size_t used, cap;
	struct ms_pk_val v[];
};
#define POOL_VALS             ((MS_PAGES_HUGE - sizeof(struct pool_chunk)) / sizeof(struct ms_pk_val))
#define POOL_CHUNK_BYTES(cap) (sizeof(struct pool_chunk) + (cap) * sizeof(struct ms_pk_val))

struct ms_pickle {
	struct ms_symtab strs;
	uint32_t stream_key; /* string id of the stream hook's key (UINT32_MAX: none) */
	struct slab *slabs;
	uint64_t n_objs;
	struct pool_chunk *pool;
	/*
	 * The pool room the lists of ms_pk_items' last call took: [batch_from, batch_to) of
	 * chunk batch_chunk, and those lists. Once none of them has pooled items (all given up
	 * with ms_pk_release) and nothing has been taken since, the next call takes it again.
	 */
	struct pool_chunk *batch_chunk;
	size_t batch_from, batch_to;
	struct ms_pk_obj *batch_made[MS_PK_BATCH];
	int batch_n;
	/*
	 * Headers of an item reader's lists, released, for its next lists: a trace entry's frames
	 * list is given up as soon as it is mapped, and there is one per entry. A list in a memo
	 * slot (RECYCLE_MEMO, the slot in ord) leaves PK_RELEASED there as it is released.
	 */
	struct ms_pk_obj **spare;
	size_t n_spare, cap_spare;
	struct ms_pk_val *stack;
	size_t sp, stack_cap;
	size_t *marks;
	size_t n_marks, marks_cap;
	/* the memo in chunks of MEMO_CHUNK values: it grows without copying */
	struct ms_pk_val **memo;
	size_t n_memo, n_memo_chunks, memo_chunks_cap;
	uint64_t memo_holes; /* memo slots skipped by puts past the next index, in all */
	/* input window */
	unsigned char *buf;
	size_t pos, len, cap;
	uint64_t base; /* offset of buf[0] */
	int eof;
	int borrowed; /* buf is the caller's whole input (ms_pickle_borrow_input), not ours */
	ms_pk_read_fn rd;
	void *rd_ctx;
	int proto;
	struct ms_pickle_limits lim;
	ms_pk_item_fn item_fn;
	void *item_ctx;
	ms_pk_reader_fn reader_fn; /* the item reader, with the stream hook */
	void *reader_ctx;
	struct ms_pk_cursor *cursor; /* the item reader's */
	int8_t key_slot[64]; /* the item reader's slot of a key by string id, or SLOT_UNWANTED */
	/*
	 * The item reader's keys: memo index + 1 (0: empty) -> the key's slot. Filled only from
	 * memo slots already final, cleared where a memo slot is written again.
	 */
	struct key_cache {
		uint32_t idx1;
		int8_t slot;
	} kcache[KCACHE];
	struct str_hint {
		uint32_t len, id;
		uint64_t head;
	} slot_str[MS_PK_SLOTS + 1]; /* the item reader's last short string by slot */
	struct ms_diag *diag;
	int64_t op_off;
	uint8_t op;
	/* streamed items handed over (to the hook or an item reader), and added to their lists;
	 * equal at STOP */
	uint64_t n_handed, n_added;
	/* last strings interned, by length and first bytes: repeated values skip the hash */
	struct {
		uint32_t len, id;
		uint64_t head;
	} scache[64];
};

/*
 * Values are written and copied as two 8-byte words, never in narrower or wider pieces.
 * A load that spans several recent stores (a 16-byte struct copy of a value whose type byte
 * and payload were stored separately, or memcpy's vector loads over a run of values) cannot
 * be forwarded from the store buffer and waits for the stores to commit; perf put most of
 * the import on such loads (MEMOIZE right after a push, SETITEMS right after its items).
 */
_Static_assert(offsetof(struct ms_pk_val, v) == 8 && sizeof(struct ms_pk_val) == 16,
               "ms_pk_val layout");
static inline void put_val(struct ms_pk_val *dst, uint64_t type, uint64_t payload)
{
	memcpy(dst, &type, 8);
	memcpy((char *)dst + 8, &payload, 8);
}

static inline uint64_t payload_of(const struct ms_pk_val *v)
{
	uint64_t u;

	memcpy(&u, (const char *)v + 8, 8);
	return u;
}

/* The empty asm keeps the compiler from merging the word copies into wider ones (or memcpy). */
static inline void copy_vals(struct ms_pk_val *dst, const struct ms_pk_val *src, size_t n)
{
	for (size_t i = 0; i < 2 * n; i++) {
		uint64_t w;
		memcpy(&w, (const char *)src + 8 * i, 8);
#if defined(__GNUC__)
		__asm__("" : "+r"(w));
#endif
		memcpy((char *)dst + 8 * i, &w, 8);
	}
}

/* Memo chunks up to the one of slot idx. */
static inline ms_status memo_reach(struct ms_pickle *p, uint64_t idx)
{
	while ((idx >> MEMO_SHIFT) >= p->n_memo_chunks) {
		struct ms_pk_val *c;
		if (ms_grow(&p->memo, &p->memo_chunks_cap, p->n_memo_chunks + 1,
		            sizeof(*p->memo)) ||
		    !(c = ms_pages_alloc(MEMO_CHUNK * sizeof(*c))))
			return MS_ERR_NOMEM;
		p->memo[p->n_memo_chunks++] = c;
	}
	return MS_OK;
}

/* The opcodes this machine knows (pickletools' names). */
enum {
	OP_MARK = '(',
	OP_STOP = '.',
	OP_POP = '0',
	OP_POP_MARK = '1',
	OP_DUP = '2',
	OP_BINBYTES = 'B',
	OP_SHORT_BINBYTES = 'C',
	OP_BINFLOAT = 'G',
	OP_BININT = 'J',
	OP_BININT1 = 'K',
	OP_BININT2 = 'M',
	OP_NONE = 'N',
	OP_BINUNICODE = 'X',
	OP_EMPTY_LIST = ']',
	OP_APPEND = 'a',
	OP_DICT = 'd',
	OP_APPENDS = 'e',
	OP_BINGET = 'h',
	OP_LONG_BINGET = 'j',
	OP_LIST = 'l',
	OP_BINPUT = 'q',
	OP_LONG_BINPUT = 'r',
	OP_SETITEM = 's',
	OP_TUPLE = 't',
	OP_SETITEMS = 'u',
	OP_EMPTY_DICT = '}',
	OP_EMPTY_TUPLE = ')',
	OP_PROTO = 0x80,
	OP_TUPLE1 = 0x85,
	OP_TUPLE2 = 0x86,
	OP_TUPLE3 = 0x87,
	OP_NEWTRUE = 0x88,
	OP_NEWFALSE = 0x89,
	OP_LONG1 = 0x8a,
	OP_LONG4 = 0x8b,
	OP_SHORT_BINUNICODE = 0x8c,
	OP_BINUNICODE8 = 0x8d,
	OP_BINBYTES8 = 0x8e,
	OP_EMPTY_SET = 0x8f,
	OP_ADDITEMS = 0x90,
	OP_FROZENSET = 0x91,
	OP_MEMOIZE = 0x94,
	OP_FRAME = 0x95,
	OP_BYTEARRAY8 = 0x96,
};

static struct ms_pk_val *pool_take(struct ms_pickle *p, size_t n);

ms_status ms_pickle_new(struct ms_pickle **out)
{
	/* on lines of its own: stats reads several files at once, a machine each */
	struct ms_pickle *p = ms_calloc_lines(sizeof(*p));

	if (!p)
		return MS_ERR_NOMEM;
	if (ms_symtab_init(&p->strs)) {
		ms_pickle_free(p);
		return MS_ERR_NOMEM;
	}
	p->stream_key = UINT32_MAX;
	for (size_t i = 0; i <= MS_PK_SLOTS; i++)
		p->slot_str[i].len = UINT32_MAX; /* none */
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
			if (!s->objs[i].pooled)
				ms_free(s->objs[i].items);
		ms_pages_free(s, MS_PAGES_HUGE);
		s = n;
	}
	while (p->pool) {
		struct pool_chunk *c = p->pool;
		p->pool = c->next;
		ms_pages_free(c, POOL_CHUNK_BYTES(c->cap));
	}
	ms_symtab_release(&p->strs);
	ms_free(p->stack);
	ms_free(p->marks);
	for (size_t i = 0; i < p->n_memo_chunks; i++)
		ms_pages_free(p->memo[i], MEMO_CHUNK * sizeof(*p->memo[i]));
	ms_free(p->memo);
	ms_free(p->cursor);
	ms_free(p->spare);
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

ms_status ms_pickle_stream_lists(struct ms_pickle *p, const char *key, ms_pk_item_fn fn, void *ctx)
{
	MS_TRY(ms_symtab_str(&p->strs, key, strlen(key), &p->stream_key));
	p->item_fn = fn;
	p->item_ctx = ctx;
	return MS_OK;
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
		struct slab *s = ms_pages_alloc(MS_PAGES_HUGE);
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
 * obj_add for the opcode loop: an item an item reader read, stored anywhere but its list,
 * becomes what the loop would have there, a streamed (consumed, empty) dict.
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
	 * A container's first items from the pool, as an item reader's lists get theirs: most
	 * get all their items at once (a snapshot's segments, blocks, settings), and a malloc, a
	 * realloc and a free each cost a snapshot's fixed part a fifth of its instructions. Not a
	 * streamed item's: those are consumed, and their items given back at once.
	 */
	if (o->n == 0 && !o->items && n && n <= POOL_VALS && o->role != ROLE_ITEM) {
		if (!(o->items = pool_take(p, n)))
			return MS_ERR_NOMEM;
		copy_vals(o->items, v, n);
		o->n = o->cap = (uint32_t)n;
		o->pooled = 1;
		return MS_OK;
	}
	return obj_add(o, v, n);
}

/* Pre: a new list is about to be pushed. Recognise the stream key's list and its lists. */
static void assign_role(struct ms_pickle *p, struct ms_pk_obj *o)
{
	const struct ms_pk_val *top;

	if (!p->item_fn || p->sp == 0)
		return;
	top = &p->stack[p->sp - 1];
	if (top->type == MS_PK_STR && top->v.str == p->stream_key &&
	    p->stack[0].type == MS_PK_DICT && p->n_marks <= 1 &&
	    (p->n_marks == 0 || p->marks[0] == 1)) {
		o->role = ROLE_LISTS;
	} else if (top->type == MS_PK_LIST && top->v.o->role == ROLE_LISTS) {
		o->role = ROLE_LIST;
		o->tag = top->v.o->n;
	} else if (top->type == MS_PK_LIST && top->v.o->role == ROLE_LIST && p->sp >= 2 &&
	           mark_top(p) <= p->sp - 1 && p->n_marks &&
	           p->stack[mark_top(p) - 1].type == MS_PK_LIST &&
	           p->stack[mark_top(p) - 1].v.o->role == ROLE_LISTS) {
		o->role = ROLE_LIST;
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
 * A streamed dict item's items, key, value, ..., where they lie on the stack: to the hook at
 * once (they are hot in the cache now, and 1000 items later at APPENDS they are not).
 * Python's pickler sets all items of a dict this small (a trace entry) with one SETITEM(S),
 * so the item is complete here; a second one is refused in append_to. (The messages call
 * streamed items trace entries, which is what they are in a snapshot.)
 */
static ms_status hand_item(struct ms_pickle *p, struct ms_pk_obj *o, struct ms_pk_val *items,
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
	if ((s = p->item_fn(p->item_ctx, o->tag, p->n_handed, &v, p->op_off)))
		return s;
	consume(o);
	o->role = ROLE_HANDED;
	o->ord = p->n_handed++;
	return MS_OK;
}

/*
 * items[0..n) appended to a streamed list: items handed over at their SETITEM(S) (or read by
 * an item reader) must arrive in the order they were handed over; any other item goes to the
 * hook now. Item dicts are then released, only the dicts themselves: what they hold (a trace
 * entry's frames list and frame dicts) may be shared with later items through the memo.
 */
static ms_status stream_items(struct ms_pickle *p, struct ms_pk_obj *list,
                              const struct ms_pk_val *items, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct ms_pk_obj *o = NULL;
		ms_status s;

		if (items[i].type == PK_STREAMED) {
			uint64_t w = payload_of(&items[i]);
			if (w == (p->n_added | (uint64_t)list->tag << ORD_BITS)) {
				/* the next in order, of this list: the usual case */
				p->n_added++;
				list->n++;
				continue;
			}
			if ((w & ORD_MASK) < p->n_added)
				return fail(p, MS_ERR_UNSUPPORTED, "trace entry object used twice");
			if ((w & ORD_MASK) != p->n_added || (w >> ORD_BITS) != list->tag)
				return fail(p, MS_ERR_UNSUPPORTED,
				            "trace entry added to its list out of order");
			p->n_added++;
			list->n++;
			continue;
		}
		if (items[i].type == MS_PK_LIST || items[i].type == MS_PK_DICT ||
		    items[i].type == MS_PK_TUPLE)
			o = items[i].v.o;
		if (o && o->role == ROLE_HANDED) {
			if (o->ord != p->n_added || o->tag != list->tag)
				return fail(p, MS_ERR_UNSUPPORTED,
				            "trace entry added to its list out of order");
			o->role = ROLE_DONE;
		} else {
			if (o && o->consumed)
				return fail(p, MS_ERR_UNSUPPORTED, "trace entry object used twice");
			/* the hook first: what is wrong with the item is the better message */
			s = p->item_fn(p->item_ctx, list->tag, p->n_handed, &items[i], p->op_off);
			if (s)
				return s;
			if (p->n_handed != p->n_added)
				return fail(p, MS_ERR_UNSUPPORTED,
				            "trace entry added to its list out of order");
			p->n_handed++;
			if (o && o->kind == MS_PK_DICT) {
				consume(o);
				o->role = ROLE_DONE;
			}
		}
		p->n_added++;
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
	if (o->role == ROLE_LIST)
		return stream_items(p, o, items, n);
	if (o->role == ROLE_ITEM)
		return hand_item(p, o, items, n);
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
 * One opcode with more to do than a push (the others are in ms_pickle_run's loop): p->op is
 * set, p->pos is past it and p->op_off is its offset. STOP is handled by the caller.
 */
static ms_status step(struct ms_pickle *p)
{
	struct ms_pk_val v;
	struct ms_pk_obj *o = NULL;
	const unsigned char *b;

	switch (p->op) {
	case OP_PROTO:
		MS_TRY(need(p, 1));
		p->proto = *take(p, 1);
		if (p->proto < 2 || p->proto > 5)
			return ms__diag_set(p->diag, MS_ERR_UNSUPPORTED, p->op_off, -1,
			                    "pickle protocol %d at offset %lld is not "
			                    "supported (2 to 5 are)",
			                    p->proto, (long long)p->op_off);
		break;
	case OP_FRAME: /* an 8-byte length; framing needs no action */
		MS_TRY(need(p, 8));
		take(p, 8);
		break;
	case OP_EMPTY_LIST:
	case OP_EMPTY_SET: /* read as a list */
		MS_TRY(new_obj(p, MS_PK_LIST, &o));
		if (p->op == OP_EMPTY_LIST)
			assign_role(p, o);
		MS_TRY(push_obj(p, o));
		break;
	case OP_EMPTY_TUPLE:
		MS_TRY(tuple_n(p, 0));
		break;
	case OP_TUPLE1:
	case OP_TUPLE2:
	case OP_TUPLE3:
		MS_TRY(tuple_n(p, (size_t)(p->op - 0x84)));
		break;
	case OP_DICT:
		MS_TRY(from_mark(p, MS_PK_DICT));
		break;
	case OP_LIST:
	case OP_FROZENSET:
		MS_TRY(from_mark(p, MS_PK_LIST));
		break;
	case OP_TUPLE:
		MS_TRY(from_mark(p, MS_PK_TUPLE));
		break;
	case OP_SETITEM:
		if (p->sp < 3 || p->sp - 3 < mark_top(p))
			return fail(p, MS_ERR_FORMAT, "stack underflow");
		MS_TRY(append_to(p, &p->stack[p->sp - 3], p->stack + p->sp - 2, 2, 1));
		p->sp -= 2;
		break;
	case OP_SETITEMS:
		MS_TRY(batch(p, 1));
		break;
	case OP_APPEND:
		if (p->sp < 2 || p->sp - 2 < mark_top(p))
			return fail(p, MS_ERR_FORMAT, "stack underflow");
		MS_TRY(append_to(p, &p->stack[p->sp - 2], p->stack + p->sp - 1, 1, 0));
		p->sp -= 1;
		break;
	case OP_APPENDS:
	case OP_ADDITEMS:
		MS_TRY(batch(p, 0));
		break;
	case OP_POP:
		if (p->n_marks && mark_top(p) == p->sp)
			p->n_marks--;
		else if (p->sp)
			p->sp--;
		else
			return fail(p, MS_ERR_FORMAT, "stack underflow");
		break;
	case OP_POP_MARK:
		if (!p->n_marks)
			return fail(p, MS_ERR_FORMAT, "missing MARK");
		p->sp = p->marks[--p->n_marks];
		break;
	case OP_DUP:
		if (p->sp == 0 || (p->n_marks && p->sp == mark_top(p)))
			return fail(p, MS_ERR_FORMAT, "stack underflow");
		MS_TRY(push(p, p->stack[p->sp - 1]));
		break;
	case OP_LONG4:
		MS_TRY(need(p, 4));
		b = take(p, 4);
		if (b[3] & 0x80)
			return fail(p, MS_ERR_FORMAT, "negative LONG4 length");
		MS_TRY(push_long(p, ms_load_le32(b)));
		break;
	case OP_BINFLOAT: { /* big-endian double */
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
	case OP_BINUNICODE:
		MS_TRY(need(p, 4));
		MS_TRY(push_str(p, ms_load_le32(take(p, 4)), MS_PK_STR));
		break;
	case OP_BINUNICODE8:
		MS_TRY(need(p, 8));
		MS_TRY(push_str(p, ms_load_le64(take(p, 8)), MS_PK_STR));
		break;
	case OP_SHORT_BINBYTES:
		MS_TRY(need(p, 1));
		MS_TRY(push_str(p, *take(p, 1), MS_PK_BYTES));
		break;
	case OP_BINBYTES:
		MS_TRY(need(p, 4));
		MS_TRY(push_str(p, ms_load_le32(take(p, 4)), MS_PK_BYTES));
		break;
	case OP_BINBYTES8:
	case OP_BYTEARRAY8:
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

/* Free room in the pool for at least want values (a new chunk if the last has less), not taken. */
static struct ms_pk_val *pool_room(struct ms_pickle *p, size_t want, size_t *room)
{
	struct pool_chunk *c = p->pool;

	if (!c || c->cap - c->used < want) {
		size_t cap = want > POOL_VALS ? want : POOL_VALS;
		if (!(c = ms_pages_alloc(POOL_CHUNK_BYTES(cap))))
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = p->pool;
		p->pool = c;
	}
	*room = c->cap - c->used;
	return &c->v[c->used];
}

/* n values from the pool, the last ones taken (so that unmake can give them back). */
static struct ms_pk_val *pool_take(struct ms_pickle *p, size_t n)
{
	size_t room;
	struct ms_pk_val *v = pool_room(p, n, &room);

	if (v)
		p->pool->used += n;
	return v;
}

/* A header for an item reader's list: a released one again, else a new one. */
static ms_status list_header(struct ms_pickle *p, struct ms_pk_obj **out)
{
	struct ms_pk_obj *o;

	if (!p->n_spare)
		return new_obj(p, MS_PK_LIST, out);
	o = p->spare[--p->n_spare];
	memset(o, 0, sizeof(*o));
	o->kind = MS_PK_LIST;
	*out = o;
	return MS_OK;
}

/*
 * Take back o, the last list an item reader made (left), and its pooled items (the last taken
 * from the pool): the slab's last header, or a spare one again (where a header for a get of a
 * released list came after it, or there is no room, it stays unused: the slab keeps it).
 */
static void unmake(struct ms_pickle *p, struct ms_pk_obj *o)
{
	if (o->pooled)
		p->pool->used -= o->n;
	o->items = NULL; /* the pool's room again, not its own */
	o->pooled = 0;
	o->n = o->cap = 0;
	if (p->slabs && p->slabs->used && o == &p->slabs->objs[p->slabs->used - 1]) {
		p->slabs->used--;
		p->n_objs--;
	} else if (!ms_grow(&p->spare, &p->cap_spare, p->n_spare + 1, sizeof(*p->spare))) {
		o->recycle = RECYCLE_SPARE;
		p->spare[p->n_spare++] = o;
	}
}

/*
 * A memo get of a released list: a new empty list with the released one's aux, as the consumer
 * left it. temp: for an item reader's item (its header reused once released), else one the
 * machine keeps.
 */
static ms_status released_list(struct ms_pickle *p, uint64_t aux, int temp, struct ms_pk_obj **out)
{
	ms_status s = temp ? list_header(p, out) : new_obj(p, MS_PK_LIST, out);

	if (s)
		return s;
	(*out)->aux = (uint32_t)aux;
	(*out)->recycle = temp ? RECYCLE_TEMP : 0;
	return MS_OK;
}

/* --- the value opcodes, for the opcode loop and the item readers ---------------------- */

enum {
	V_OK,           /* *type, *payload: the value; *ipp past the opcode */
	V_OTHER,        /* not a value opcode read here (LONG1 of another length included) */
	V_SHORT,        /* the opcode needs *need bytes from its start, more than the window has */
	V_UNKNOWN_SLOT, /* a memo get of a slot not written */
	V_STREAMED,     /* a memo get of a streamed item, or of a consumed container */
	V_TOO_LONG,     /* a string longer than the limit */
	V_FAILED,       /* interning failed: *st */
	V_RELEASED,     /* a memo get of a released list (PK_RELEASED): *payload its aux, *need
	                   the get's length */
};

/* Bytes readable at the cursor where a decoder is told wide (the longest value opcode's). */
#define WIDE 16

/*
 * The memo index a get at *ipp names (BINGET, LONG_BINGET; op: the opcode there), *ipp past
 * it. 1: a get; 0: one that needs *len bytes, more than the window has; -1: not a get. wide:
 * WIDE bytes are readable at *ipp.
 */
static inline __attribute__((always_inline)) int get_index(unsigned char op,
                                                           const unsigned char **ipp,
                                                           const unsigned char *end, uint64_t *idx,
                                                           size_t *len, const int wide)
{
	const unsigned char *ip = *ipp;

	if (op == OP_BINGET) {
		*len = 2;
		if (!wide && end - ip < 2)
			return 0;
		*idx = ip[1];
	} else if (op == OP_LONG_BINGET) {
		*len = 5;
		if (!wide && end - ip < 5)
			return 0;
		*idx = ms_load_le32(ip + 1);
	} else {
		return -1;
	}
	*ipp = ip + *len;
	return 1;
}

/* Memo slot idx as a get reads it (slots below n_memo are written): V_OK or why not. */
static inline int memo_value(const struct ms_pickle *p, uint64_t idx, size_t n_memo, uint64_t *type,
                             uint64_t *payload)
{
	const struct ms_pk_val *m;
	uint8_t t;

	if (idx >= n_memo)
		return V_UNKNOWN_SLOT;
	m = MEMO_AT(p, idx);
	t = m->type;
	if (t > MS_PK_BYTES) { /* containers, streamed items, released lists, holes */
		if (t == PK_CONSUMED)
			return V_UNKNOWN_SLOT;
		if (t == PK_RELEASED) {
			*payload = payload_of(m);
			return V_RELEASED;
		}
		if (t == PK_STREAMED || m->v.o->consumed)
			return V_STREAMED;
	}
	*type = t;
	*payload = payload_of(m);
	return V_OK;
}

/* A memo get at *ipp (op: BINGET, LONG_BINGET): its value, as decode_value gives it. */
static inline __attribute__((always_inline)) int
get_value(const struct ms_pickle *p, unsigned char op, const unsigned char **ipp,
          const unsigned char *end, size_t n_memo, uint64_t *type, uint64_t *payload, size_t *need,
          const int wide)
{
	const unsigned char *ip = *ipp;
	uint64_t idx;
	int r;

	if ((r = get_index(op, ipp, end, &idx, need, wide)) != 1)
		return r ? V_OTHER : V_SHORT;
	if ((r = memo_value(p, idx, n_memo, type, payload)) != V_OK) {
		*need = (size_t)(*ipp - ip);
		*ipp = ip;
	}
	return r;
}

/*
 * The one decoder of the opcodes that push a plain value: memo gets (BINGET, LONG_BINGET),
 * BININT1, BININT2, BININT, LONG1 of 1 to 8 bytes, SHORT_BINUNICODE, NONE, NEWTRUE and
 * NEWFALSE, op at *ipp (end: the end of the window; where the caller knows op, the switch on
 * it folds away). Memo slots below n_memo count as written; h
 * (if not NULL) is checked before a short string is interned. Nothing is read past end, and
 * *ipp moves only on V_OK. wide: WIDE bytes are readable at *ipp (bounds within them are
 * known).
 */
static inline __attribute__((always_inline)) int
decode_value(struct ms_pickle *p, unsigned char op, const unsigned char **ipp,
             const unsigned char *end, size_t n_memo, uint64_t *type, uint64_t *payload,
             size_t *need, ms_status *st, struct str_hint *h, const int wide)
{
	const unsigned char *ip = *ipp;
	size_t avail = (size_t)(end - ip), len, n;

	switch (op) {
	case OP_BINGET:
	case OP_LONG_BINGET:
		return get_value(p, op, ipp, end, n_memo, type, payload, need, wide);
	case OP_BININT1:
		len = 2;
		if (!wide && avail < len)
			goto short_;
		*type = MS_PK_INT, *payload = ip[1];
		break;
	case OP_BININT2:
		len = 3;
		if (!wide && avail < len)
			goto short_;
		*type = MS_PK_INT, *payload = (uint64_t)ip[1] | (uint64_t)ip[2] << 8;
		break;
	case OP_BININT: /* signed 32-bit */
		len = 5;
		if (!wide && avail < len)
			goto short_;
		*type = MS_PK_INT, *payload = (uint64_t)(int64_t)(int32_t)ms_load_le32(ip + 1);
		break;
	case OP_LONG1: /* up to 8 bytes here, longer ones in push_long */
		len = 2;
		if (!wide && avail < len)
			goto short_;
		n = ip[1];
		if (n < 1 || n > 8 || (!wide && avail - 2 < 8))
			return V_OTHER;
		*type = MS_PK_INT, *payload = long1_value(ip + 2, n);
		len += n;
		break;
	case OP_SHORT_BINUNICODE: {
		uint32_t id;
		len = 2;
		if (!wide && avail < len)
			goto short_;
		n = ip[1];
		if (n > p->lim.max_string)
			return V_TOO_LONG;
		len += n;
		if ((!wide || len > WIDE) && avail < len)
			goto short_;
		if (h && n <= 8 && (wide || avail - 2 >= 8)) {
			uint64_t head = ms_load_le_first(ip + 2, (unsigned)n);
			if (h->len == n && h->head == head) {
				id = h->id;
			} else {
				if ((*st = intern(p, ip + 2, n, 1, &id)))
					return V_FAILED;
				h->len = (uint32_t)n;
				h->head = head;
				h->id = id;
			}
		} else if ((*st = intern(p, ip + 2, n, (wide && n <= 8) || avail - 2 >= 8, &id))) {
			return V_FAILED;
		}
		*type = MS_PK_STR, *payload = id;
		break;
	}
	case OP_NONE:
		len = 1;
		*type = MS_PK_NONE, *payload = 0;
		break;
	case OP_NEWTRUE:
	case OP_NEWFALSE:
		len = 1;
		*type = MS_PK_BOOL, *payload = op == OP_NEWTRUE;
		break;
	default:
		return V_OTHER;
	}
	*ipp = ip + len;
	return V_OK;
short_:
	*need = len;
	return V_SHORT;
}

/*
 * The memo index a put at ip names (op: the opcode there; MEMOIZE: the next, n_memo) and *len
 * its length. 1: a put; 0: one that needs *len bytes, more than the window has; -1: not a put.
 */
static inline __attribute__((always_inline)) int put_index(unsigned char op,
                                                           const unsigned char *ip,
                                                           const unsigned char *end, size_t n_memo,
                                                           uint64_t *idx, size_t *len)
{
	if (op == OP_MEMOIZE) {
		*len = 1;
		*idx = n_memo;
	} else if (op == OP_BINPUT) {
		*len = 2;
		if (end - ip < 2)
			return 0;
		*idx = ip[1];
	} else if (op == OP_LONG_BINPUT) {
		*len = 5;
		if (end - ip < 5)
			return 0;
		*idx = ms_load_le32(ip + 1);
	} else {
		return -1;
	}
	return 1;
}

static const unsigned char put_op[256] = {[OP_MEMOIZE] = 1, [OP_BINPUT] = 1, [OP_LONG_BINPUT] = 1};
static const uint32_t slot_bit[MS_PK_SLOTS + 1] = {
        1u << 0, 1u << 1,  1u << 2,  1u << 3,  1u << 4,  1u << 5,  1u << 6,  1u << 7,  1u << 8,
        1u << 9, 1u << 10, 1u << 11, 1u << 12, 1u << 13, 1u << 14, 1u << 15, 1u << 16, 0};

/*
 * A put at *ipp of (type, payload) that an item reader does: at the next index (as Python's
 * pickler always puts), within the limit and an existing memo chunk. 0: not such a put.
 */
static inline int put_next(struct ms_pickle *p, const unsigned char **ipp, const unsigned char *end,
                           size_t *n_memo, uint64_t type, uint64_t payload)
{
	uint64_t idx;
	size_t len;

	if (put_index(**ipp, *ipp, end, *n_memo, &idx, &len) != 1 || idx != *n_memo ||
	    idx > p->lim.max_memo || (idx >> MEMO_SHIFT) >= p->n_memo_chunks)
		return 0;
	put_val(MEMO_AT(p, idx), type, payload);
	*n_memo = idx + 1;
	*ipp += len;
	return 1;
}

/* The puts after a value, as put_next does them. 0: one it does not. */
static inline int puts_after(struct ms_pickle *p, const unsigned char **ipp,
                             const unsigned char *end, size_t *n_memo, uint64_t type,
                             uint64_t payload)
{
	while (*ipp < end && put_op[**ipp])
		if (!put_next(p, ipp, end, n_memo, type, payload))
			return 0;
	return 1;
}

/* --- item readers (pickle.h) ----------------------------------------------------------- */

/*
 * The streamed list a dict made now would be an item of (right under it, or under the mark
 * over it), or NULL.
 */
static inline struct ms_pk_obj *streamed_list(const struct ms_pickle *p, const struct ms_pk_val *st,
                                              size_t sp)
{
	const struct ms_pk_val *under = NULL;

	if (!p->item_fn)
		return NULL;
	if (p->n_marks && p->marks[p->n_marks - 1] == sp && sp)
		under = &st[sp - 1];
	else if (p->n_marks && p->marks[p->n_marks - 1])
		under = &st[p->marks[p->n_marks - 1] - 1];
	else if (!p->n_marks && sp)
		under = &st[sp - 1];
	return under && under->type == MS_PK_LIST && under->v.o->role == ROLE_LIST ? under->v.o
	                                                                           : NULL;
}

ms_status ms_pickle_item_reader(struct ms_pickle *p, const int8_t slots[64], ms_pk_reader_fn fn,
                                void *ctx)
{
	if (!p->cursor && !(p->cursor = ms_malloc(sizeof(*p->cursor))))
		return MS_ERR_NOMEM;
	for (int i = 0; i < 64; i++)
		p->key_slot[i] = slots[i] >= 0 && slots[i] < MS_PK_SLOTS ? slots[i] : SLOT_UNWANTED;
	p->reader_fn = fn;
	p->reader_ctx = ctx;
	return MS_OK;
}

/* The slot of a key (type, payload). */
static inline int key_slot(const struct ms_pickle *p, uint64_t type, uint64_t payload)
{
	return type == MS_PK_STR && payload < 64 ? p->key_slot[payload] : SLOT_UNWANTED;
}

enum { PAIR_READ, PAIR_LIST, PAIR_STOP };

/*
 * One key and its value at *ipp into vals by slot (see ms_pk_item), or a FRAME before them.
 * PAIR_LIST: the value starts with EMPTY_LIST (*ipp there, *slotp the key's); PAIR_STOP: not
 * such a pair, *ipp and *n_memop as they were (*st: out of memory, if so). wide: 32 bytes are
 * readable at *ipp.
 */
static inline __attribute__((always_inline)) int
item_pair(struct ms_pickle *p, const unsigned char **ipp, const unsigned char *end, size_t *n_memop,
          struct ms_pk_val *vals, uint32_t *presentp, int *slotp, ms_status *st, const int wide)
{
	const unsigned char *ip = *ipp;
	size_t n_memo = *n_memop, need;
	uint64_t idx, type, payload;
	unsigned char op;
	int slot, r;

	/* Python's framer may end a frame after any key or value: framing needs no action */
	if (*ip == OP_FRAME) {
		if (!wide && end - ip < 9)
			return PAIR_STOP;
		*ipp = ip + 9;
		return PAIR_READ;
	}
	/*
	 * The key. A memo get's slot from the cache by memo index, or worked out (and cached); any
	 * other plain value with its puts (a key written out where it first appears). Never a
	 * container nor the stream key: after those the machine may give a list a role.
	 */
	if (get_index(*ip, &ip, end, &idx, &need, wide) == 1) {
		struct key_cache *kc = &p->kcache[idx & (KCACHE - 1)];
		if (kc->idx1 == idx + 1) {
			slot = kc->slot;
		} else {
			if (memo_value(p, idx, n_memo, &type, &payload) != V_OK ||
			    type > MS_PK_BYTES || (type == MS_PK_STR && payload == p->stream_key))
				return PAIR_STOP;
			slot = key_slot(p, type, payload);
			/* not a slot of this item's own: only those are final */
			if (idx < p->n_memo && idx < UINT32_MAX) {
				kc->idx1 = (uint32_t)idx + 1;
				kc->slot = (int8_t)slot;
			}
		}
	} else {
		/* wide: what is left of the 32 bytes must be there again (else the machine reads
		 * it) */
		if (decode_value(p, *ip, &ip, end, n_memo, &type, &payload, &need, st, NULL, 0) !=
		            V_OK ||
		    type > MS_PK_BYTES || (type == MS_PK_STR && payload == p->stream_key) ||
		    !puts_after(p, &ip, end, &n_memo, type, payload) ||
		    (wide && end - ip < 9 + WIDE))
			return PAIR_STOP;
		slot = key_slot(p, type, payload);
	}
	if ((wide || ip < end) && *ip == OP_FRAME) {
		if (!wide && end - ip < 9)
			return PAIR_STOP;
		ip += 9;
	}
	/*
	 * The value (wide: 18 bytes readable). Python memoizes strings (and lists), never ints or
	 * what it got from the memo: a put after those is where the next key should be, and the
	 * pairs end there.
	 */
	if (!wide && ip == end)
		return PAIR_STOP;
	op = *ip;
	r = decode_value(p, op, &ip, end, n_memo, &type, &payload, &need, st, &p->slot_str[slot],
	                 wide);
	if (r == V_RELEASED) {
		/* a list read and given up before (another entry's frames, shared): a new one */
		struct ms_pk_obj *o;
		if ((*st = released_list(p, payload, 1, &o)))
			return PAIR_STOP;
		ip += need;
		type = MS_PK_LIST;
		payload = (uint64_t)(uintptr_t)o;
		r = V_OK;
	}
	if (r != V_OK) {
		if (op != OP_EMPTY_LIST)
			return PAIR_STOP;
		*ipp = ip;
		*n_memop = n_memo;
		*slotp = slot;
		return PAIR_LIST;
	}
	if (op == OP_SHORT_BINUNICODE && !puts_after(p, &ip, end, &n_memo, type, payload))
		return PAIR_STOP;
	put_val(&vals[slot], type, payload);
	*presentp |= slot_bit[slot];
	*ipp = ip;
	*n_memop = n_memo;
	return PAIR_READ;
}

/*
 * An item's keys and values from *ipp into vals by slot (see ms_pk_item). It stops before anything
 * else, and returns 1 if that is a key's value that starts with EMPTY_LIST (*slotp: the key's),
 * else 0; *st gets an out-of-memory status.
 */
static inline int item_pairs(struct ms_pickle *p, const unsigned char **ipp,
                             const unsigned char *end, size_t *n_memop, struct ms_pk_val *vals,
                             uint32_t *presentp, int *slotp, ms_status *st)
{
	const unsigned char *ip = *ipp;
	int r = PAIR_STOP;

	for (;;) {
		if (end - ip >= 2 * WIDE)
			r = item_pair(p, &ip, end, n_memop, vals, presentp, slotp, st, 1);
		else if (ip < end)
			r = item_pair(p, &ip, end, n_memop, vals, presentp, slotp, st, 0);
		else
			r = PAIR_STOP;
		if (r != PAIR_READ)
			break;
	}
	*ipp = ip;
	return r == PAIR_LIST;
}

/*
 * A list's items from *ipp into out[0..max): plain values, a string's memo puts after it,
 * FRAMEs skipped (a list of frames is memo gets of frame dicts, and gets go first).
 */
static size_t read_values(struct ms_pickle *p, const unsigned char **ipp, const unsigned char *end,
                          size_t *n_memo, struct ms_pk_val *out, size_t max, ms_status *st)
{
	const unsigned char *ip = *ipp;
	size_t n = 0;

	while (ip < end && n < max) {
		unsigned char op = *ip;
		uint64_t type, payload;
		size_t need;
		int r;

		if (end - ip >= WIDE)
			r = op == OP_BINGET || op == OP_LONG_BINGET
			            ? get_value(p, op, &ip, end, *n_memo, &type, &payload, &need, 1)
			            : decode_value(p, op, &ip, end, *n_memo, &type, &payload, &need,
			                           st, NULL, 1);
		else
			r = decode_value(p, op, &ip, end, *n_memo, &type, &payload, &need, st, NULL,
			                 0);
		if (r != V_OK) {
			if (op != OP_FRAME || end - ip < 9)
				break;
			ip += 9; /* framing needs no action */
			continue;
		}
		put_val(&out[n++], type, payload);
		/* Python memoizes strings, not what it got from the memo nor ints */
		if (op == OP_SHORT_BINUNICODE && !puts_after(p, &ip, end, n_memo, type, payload))
			break;
	}
	*ipp = ip;
	return n;
}

/*
 * An item's list value at *ipp, EMPTY_LIST (see ms_pk_item), into *out and *made. 0: not such
 * a list, nothing left made (*st: out of memory, if so).
 */
static int list_value(struct ms_pickle *p, const unsigned char **ipp, const unsigned char *end,
                      size_t *n_memop, struct ms_pk_obj **made, struct ms_pk_val *out,
                      ms_status *st)
{
	const unsigned char *ip = *ipp;
	size_t n_memo = *n_memop, n = 0, slot = *n_memop;
	struct ms_pk_obj *o = NULL;
	uint64_t self;

	if (p->n_objs >= p->lim.max_objects)
		return 0;
	if ((*st = list_header(p, &o)))
		return 0;
	self = (uint64_t)(uintptr_t)o;
	ip++;
	if (!puts_after(p, &ip, end, &n_memo, MS_PK_LIST, self))
		goto fail;
	/* in one memo slot (as Python's pickler puts it): reusable once released */
	if (n_memo == slot + 1) {
		o->ord = slot;
		o->recycle = RECYCLE_MEMO;
	}
	if (ip < end && *ip == OP_MARK) {
		/* the items straight into the pool's free room, moved to a new chunk if it runs out
		 */
		size_t room;
		struct ms_pk_val *dst = pool_room(p, 1, &room), *more;
		ip++;
		while (dst) {
			n += read_values(p, &ip, end, &n_memo, dst + n, room - n, st);
			if (*st || n < room)
				break;
			if ((more = pool_room(p, 2 * room, &room)))
				copy_vals(more, dst, n);
			dst = more;
		}
		if (!dst)
			*st = MS_ERR_NOMEM;
		if (*st || n == 0 || ip == end || *ip != OP_APPENDS)
			goto fail;
		o->items = pool_take(p, n); /* == dst */
		ip++;
	} else if (ip < end) {
		/* one value and APPEND; or nothing, and what follows is the next key or SETITEMS */
		const unsigned char *q = ip;
		size_t m = n_memo;
		struct ms_pk_val v;
		if (read_values(p, &q, end, &m, &v, 1, st) == 1 && q < end && *q == OP_APPEND) {
			if (!(o->items = pool_take(p, 1)))
				*st = MS_ERR_NOMEM;
			else
				copy_vals(o->items, &v, 1);
			n = 1;
			ip = q + 1;
			n_memo = m;
		}
		if (*st)
			goto fail;
	}
	if (n) {
		o->n = o->cap = (uint32_t)n;
		o->pooled = 1;
	}
	*made = o;
	*ipp = ip;
	*n_memop = n_memo;
	put_val(out, MS_PK_LIST, self);
	return 1;
fail:
	unmake(p, o);
	return 0;
}

void ms_pk_release(struct ms_pickle *p, struct ms_pk_obj *o)
{
	if (o->recycle & RECYCLE_SPARE)
		return; /* released already */
	if (!o->pooled)
		ms_free(o->items);
	o->items = NULL;
	o->n = o->cap = 0;
	o->pooled = 0;
	/*
	 * An item reader's list: its header goes to the spares, once its memo slot (if it is still
	 * there) says what a get of it must give. Nothing else refers to it: an item's values live
	 * until its reader returns, and a get of the slot gets a new list from now on.
	 */
	if (!o->recycle || ms_grow(&p->spare, &p->cap_spare, p->n_spare + 1, sizeof(*p->spare)))
		return;
	if (o->recycle & RECYCLE_MEMO) {
		struct ms_pk_val *m;
		if (o->ord >= p->n_memo)
			return;
		m = MEMO_AT(p, o->ord);
		if (m->type != MS_PK_LIST || m->v.o != o)
			return;
		put_val(m, PK_RELEASED, o->aux);
		p->kcache[o->ord & (KCACHE - 1)].idx1 = 0;
	}
	o->recycle = RECYCLE_SPARE;
	p->spare[p->n_spare++] = o;
}

/*
 * The pool room of the lists the last ms_pk_items call made, if none of them has pooled items
 * any more and nothing was taken from the pool since: back to the pool. Then the lists it
 * makes now: their room, from the pool's free room now.
 */
static void batch_begin(struct ms_pickle *p)
{
	struct pool_chunk *c = p->pool;

	if (c && c == p->batch_chunk && c->used == p->batch_to) {
		int i = 0;
		while (i < p->batch_n && !p->batch_made[i]->pooled)
			i++;
		if (i == p->batch_n)
			c->used = p->batch_from;
	}
	p->batch_n = 0;
	p->batch_chunk = c;
	p->batch_from = c ? c->used : 0;
}

/* The room the lists of this call took, from its start in the chunk they ended in. */
static void batch_end(struct ms_pickle *p)
{
	struct pool_chunk *c = p->pool;

	if (c != p->batch_chunk) /* a new chunk: this call's room in it starts at 0 */
		p->batch_from = 0;
	p->batch_chunk = c;
	p->batch_to = c ? c->used : 0;
}

int ms_pk_items(struct ms_pickle *p, struct ms_pk_cursor *c, ms_status *st)
{
	const unsigned char *ip = c->ip, *end = c->end;
	struct ms_pk_obj *list = NULL;
	int n = 0;

	*st = MS_OK;
	batch_begin(p);
	for (; n < MS_PK_BATCH; n++) {
		const unsigned char *start = ip;
		struct ms_pk_item *it = &c->items[n];
		struct ms_pk_obj *made = NULL;
		size_t n_memo = p->n_memo;
		uint32_t present = 0;
		uint64_t mark;
		int slot;

		/*
		 * The machine makes room on its stack for the item first. After an item read here,
		 * the stack's top is that item, above the MARK over the list (if none, no item
		 * follows: the item under the next dict would be the one read).
		 */
		if (ip == end || *ip != OP_EMPTY_DICT || p->sp == p->stack_cap)
			break;
		if (n == 0)
			list = streamed_list(p, p->stack, p->sp);
		else if (!p->n_marks || !p->marks[p->n_marks - 1])
			list = NULL;
		if (!list)
			break;
		if (p->n_handed > ORD_MASK || list->tag >> (64 - ORD_BITS))
			goto leave;
		mark = p->n_handed | (uint64_t)list->tag << ORD_BITS;
		/* EMPTY_DICT, its puts and MARK */
		ip++;
		if (ip == end || !put_op[*ip] ||
		    !puts_after(p, &ip, end, &n_memo, PK_STREAMED, mark) || ip == end ||
		    *ip++ != OP_MARK)
			goto leave;
		/* keys and values, one value maybe a list (after a key assign_role leaves alone) */
		while (item_pairs(p, &ip, end, &n_memo, it->vals, &present, &slot, st)) {
			if (*st || made ||
			    !list_value(p, &ip, end, &n_memo, &made, &it->vals[slot], st))
				goto leave;
			present |= slot_bit[slot];
		}
		if (*st || ip == end || *ip != OP_SETITEMS)
			goto leave;
		it->offset = (int64_t)(p->base + (size_t)(ip - p->buf));
		it->list = list->tag;
		it->present = present;
		ip++;
		p->n_memo = n_memo;
		p->n_handed++;
		put_val(&p->stack[p->sp++], PK_STREAMED, mark);
		if (made && made->pooled)
			p->batch_made[p->batch_n++] = made;
		continue;
	leave:
		if (made)
			unmake(p, made);
		ip = start;
		c->left = 1;
		break;
	}
	batch_end(p);
	c->ip = ip;
	return n;
}

/*
 * The opcode loop, on local copies of the cursor and the stack pointer; opcodes with more to
 * do than a push go through step() with the state saved first. Before each opcode the stack
 * has room for one more value (no opcode pushes more than one).
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
	/* the opcode at ip needs n bytes from its start: refilled, and read again */
#define REFILL(n)                      \
	do {                           \
		SAVE();                \
		s = need_slow(p, (n)); \
		LOAD();                \
		if (s)                 \
			return s;      \
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
		uint64_t type, payload;
		size_t need;
		int vr;

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
		p->op = *ip;
		/* the value opcodes and the puts decoded with the opcode known, one case each */
		switch (p->op) {
#define VALUE(op_)                                                                               \
	case op_:                                                                                \
		vr = decode_value(p, op_, &ip, end, p->n_memo, &type, &payload, &need, &s, NULL, \
		                  0);                                                            \
		goto value
			VALUE(OP_BINGET);
			VALUE(OP_LONG_BINGET);
			VALUE(OP_BININT1);
			VALUE(OP_BININT2);
			VALUE(OP_BININT);
			VALUE(OP_LONG1);
			VALUE(OP_SHORT_BINUNICODE);
			VALUE(OP_NONE);
			VALUE(OP_NEWTRUE);
			VALUE(OP_NEWFALSE);
#undef VALUE
#define PUT(op_)                                                          \
	case op_:                                                         \
		vr = put_index(op_, ip, end, p->n_memo, &payload, &need); \
		goto put
			PUT(OP_MEMOIZE);
			PUT(OP_BINPUT);
			PUT(OP_LONG_BINPUT);
#undef PUT
		case OP_MARK:
			ip++;
			if (p->n_marks == p->marks_cap &&
			    ms_grow(&p->marks, &p->marks_cap, p->n_marks + 1, sizeof(size_t)))
				return MS_ERR_NOMEM;
			p->marks[p->n_marks++] = sp;
			break;
		case OP_EMPTY_DICT: {
			struct ms_pk_obj *o = NULL, *list = streamed_list(p, st, sp);
			if (list && p->reader_fn) {
				/* the item reader reads it and the items right after it, if it can
				 */
				struct ms_pk_cursor *c = p->cursor;
				c->ip = ip;
				c->end = end;
				c->left = 0;
				SAVE();
				s = p->reader_fn(p->reader_ctx, p, c);
				LOAD();
				if (s)
					return s;
				if (!c->left && c->ip != ip) {
					ip = c->ip;
					break;
				}
				/* the machine reads the item at c->ip */
				ip = c->ip;
				off = (int64_t)(base + (size_t)(ip - buf));
				list = streamed_list(p, st, sp);
			}
			ip++;
			p->op_off = off;
			if ((s = new_obj(p, MS_PK_DICT, &o)))
				return s;
			if (list) {
				o->role = ROLE_ITEM;
				o->tag = list->tag;
			}
			PUSH(MS_PK_DICT, (uint64_t)(uintptr_t)o);
			break;
		}
		case OP_STOP:
			ip++;
			if (sp != 1 || p->n_marks)
				FAIL(MS_ERR_FORMAT, "STOP with a malformed stack");
			if (p->n_handed != p->n_added)
				FAIL(MS_ERR_UNSUPPORTED, "a trace entry never added to its list");
			SAVE();
			copy_vals(root, &st[0], 1);
			return MS_OK;
		default:
			ip++;
			SAVE();
			s = step(p);
			LOAD();
			if (s)
				return s;
			break;
		}
		continue;
	value:
		switch (vr) {
		case V_OK:
			PUSH(type, payload);
			continue;
		case V_SHORT:
			REFILL(need);
			continue;
		case V_UNKNOWN_SLOT:
			FAIL(MS_ERR_FORMAT, "memo reference to an unknown slot");
		case V_STREAMED:
			FAIL(MS_ERR_UNSUPPORTED, "reference to a streamed trace entry");
		case V_RELEASED: { /* a list an item reader gave up: a new one, with its aux */
			struct ms_pk_obj *o;
			ip += need;
			SAVE();
			s = released_list(p, payload, 0, &o);
			LOAD();
			if (s)
				return s;
			PUSH(MS_PK_LIST, (uint64_t)(uintptr_t)o);
			continue;
		}
		case V_TOO_LONG:
			FAIL(MS_ERR_LIMIT, "string longer than the limit");
		case V_FAILED:
			return s;
		default: /* V_OTHER: a LONG1 longer than 8 bytes, or of 0 */
			ip += 2;
			SAVE();
			s = push_long(p, ip[-1]);
			LOAD();
			if (s)
				return s;
			continue;
		}
	put:
		/* payload: the memo index, need: the put's length */
		if (!vr) {
			REFILL(need);
			continue;
		}
		ip += need;
		if (payload < p->n_memo ||
		    (payload == p->n_memo && (payload >> MEMO_SHIFT) < p->n_memo_chunks)) {
			if (sp == 0 || (p->n_marks && sp == p->marks[p->n_marks - 1]))
				FAIL(MS_ERR_FORMAT, "memo store with an empty stack");
			copy_vals(MEMO_AT(p, payload), &st[sp - 1], 1);
			p->n_memo += payload == p->n_memo;
			p->kcache[payload & (KCACHE - 1)].idx1 = 0;
		} else {
			SAVE();
			s = memo_put(p, payload);
			LOAD();
			if (s)
				return s;
		}
	}
#undef SAVE
#undef LOAD
#undef REFILL
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
