/* Events in a compact byte form, in order (event_pack.h). */
#include "parse/event_pack.h"

#include <string.h>

#include "common/alloc.h"
#include "common/bytes.h"

#define CHUNK_BYTES (MS_PAGES_HUGE - 64) /* with its header and SLACK: a huge page */
/*
 * The most bytes one event takes: tag and lengths 3, four fields of up to 8 bytes; the rare
 * fields' lengths 2, stream 8, user metadata 4, compile context 4, device and pool 4, source 1.
 */
#define EVENT_MAX 64
#define SLACK     8    /* fields are stored and loaded as 8 bytes, past their own end */
#define TAG_RARE  0x80 /* the rarely changing fields follow */

_Static_assert(MS_ACT_COUNT < TAG_RARE, "actions fit the tag byte");

struct ms_event_pack_chunk {
	struct ms_event_pack_chunk *next;
	size_t used; /* bytes of data that hold events (the tail's: up to the pack's w) */
	unsigned char data[CHUNK_BYTES + SLACK];
};

/* Bytes that hold x (0 for 0). */
static inline unsigned bytes_of(uint64_t x)
{
#if defined(__GNUC__)
	return x ? (unsigned)(71 - __builtin_clzll(x)) >> 3 : 0;
#else
	unsigned n = 0;
	while (x) {
		x >>= 8;
		n++;
	}
	return n;
#endif
}

/* x's len low bytes at w, stored as 8 (what follows overwrites the rest). */
static inline unsigned char *put_field(unsigned char *w, uint64_t x, unsigned len)
{
	ms_store_le64(w, x);
	return w + len;
}

static inline const unsigned char *get_field(const unsigned char *r, unsigned len, uint64_t *x)
{
	*x = ms_load_le_first(r, len);
	return r + len;
}

/* A difference as an unsigned number, small for small differences of either sign. */
static inline uint64_t zigzag(uint64_t now, uint64_t before)
{
	uint64_t d = now - before;
	return d << 1 ^ (0 - (d >> 63)); /* all ones where d is negative */
}

static inline uint64_t unzigzag(uint64_t z, uint64_t before)
{
	return before + (z >> 1 ^ (0 - (z & 1)));
}

static inline int same_rare(const struct ms_event *a, const struct ms_event *b)
{
	return a->stream == b->stream && a->device == b->device && a->pool == b->pool &&
	       a->source == b->source && a->user_metadata == b->user_metadata &&
	       a->compile_context == b->compile_context && a->fwd_stack == b->fwd_stack;
}

ms_status ms_event_pack_add(struct ms_event_pack *p, const struct ms_event *e)
{
	unsigned char *w = p->w;
	int rare = !same_rare(e, &p->prev);
	uint64_t a = zigzag(e->addr, p->prev.addr);
	uint64_t t = zigzag((uint64_t)e->t_ns, (uint64_t)p->prev.t_ns);
	unsigned la = bytes_of(a), lt = bytes_of(t), ls = bytes_of(e->size),
	         lk = bytes_of(e->stack);

	if ((size_t)(p->w_end - w) < EVENT_MAX) {
		struct ms_event_pack_chunk *c = ms_pages_alloc(sizeof(*c));
		if (!c)
			return MS_ERR_NOMEM;
		c->next = NULL;
		c->used = 0;
		if (p->tail)
			p->tail->next = c;
		else
			p->head = c;
		p->tail = c;
		w = c->data;
		p->w_end = c->data + CHUNK_BYTES;
	}
	w[0] = (unsigned char)(e->action | (rare ? TAG_RARE : 0));
	w[1] = (unsigned char)(la | lt << 4);
	w[2] = (unsigned char)(ls | lk << 4);
	w = put_field(w + 3, a, la);
	w = put_field(w, t, lt);
	w = put_field(w, e->size, ls);
	w = put_field(w, e->stack, lk);
	if (rare) {
		unsigned lm = bytes_of(e->stream), lu = bytes_of(e->user_metadata),
		         lc = bytes_of(e->compile_context), lf = bytes_of(e->fwd_stack);
		w[0] = (unsigned char)(lm | lu << 4);
		w[1] = (unsigned char)(lc | lf << 4);
		w = put_field(w + 2, e->stream, lm);
		w = put_field(w, e->user_metadata, lu);
		w = put_field(w, e->compile_context, lc);
		w = put_field(w, e->fwd_stack, lf);
		ms_store_le32(w, (uint32_t)e->device | (uint32_t)e->pool << 16);
		w[4] = e->source;
		w += 5;
	}
	p->w = w;
	p->tail->used = (size_t)(w - p->tail->data);
	/* field by field: a copy of the whole event, written just now, would wait on the stores */
	p->prev.addr = e->addr;
	p->prev.t_ns = e->t_ns;
	if (rare) {
		p->prev.stream = e->stream;
		p->prev.user_metadata = e->user_metadata;
		p->prev.compile_context = e->compile_context;
		p->prev.fwd_stack = e->fwd_stack;
		p->prev.device = e->device;
		p->prev.pool = e->pool;
		p->prev.source = e->source;
	}
	p->n++;
	return MS_OK;
}

void ms_event_pack_free(struct ms_event_pack *p)
{
	if (!p)
		return;
	while (p->head) {
		struct ms_event_pack_chunk *c = p->head;
		p->head = c->next;
		ms_pages_free(c, sizeof(*c));
	}
	memset(p, 0, sizeof(*p));
}

void ms_event_pack_read_begin(struct ms_event_pack_reader *rd, const struct ms_event_pack *p)
{
	memset(rd, 0, sizeof(*rd));
	rd->c = p->head;
	rd->r = p->head ? p->head->data : NULL;
	rd->left = p->n;
}

size_t ms_event_pack_read(struct ms_event_pack_reader *rd, struct ms_event *out, size_t max)
{
	const unsigned char *r = rd->r;
	struct ms_event prev = rd->prev;
	size_t n = 0;

	for (; n < max && rd->left; n++, rd->left--) {
		struct ms_event *e = &out[n];
		unsigned tag, l1, l2;
		uint64_t x;

		if (r == rd->c->data + rd->c->used) {
			rd->c = rd->c->next;
			r = rd->c->data;
		}
		tag = r[0], l1 = r[1], l2 = r[2];
		e->action = (uint8_t)(tag & (TAG_RARE - 1));
		r = get_field(r + 3, l1 & 15, &x);
		e->addr = prev.addr = unzigzag(x, prev.addr);
		r = get_field(r, l1 >> 4, &x);
		e->t_ns = prev.t_ns = (int64_t)unzigzag(x, (uint64_t)prev.t_ns);
		r = get_field(r, l2 & 15, &e->size);
		r = get_field(r, l2 >> 4, &x);
		e->stack = (uint32_t)x;
		if (tag & TAG_RARE) {
			uint32_t dp;
			l1 = r[0], l2 = r[1];
			r = get_field(r + 2, l1 & 15, &prev.stream);
			r = get_field(r, l1 >> 4, &x);
			prev.user_metadata = (uint32_t)x;
			r = get_field(r, l2 & 15, &x);
			prev.compile_context = (uint32_t)x;
			r = get_field(r, l2 >> 4, &x);
			prev.fwd_stack = (uint32_t)x;
			dp = ms_load_le32(r);
			prev.device = (uint16_t)dp;
			prev.pool = (uint16_t)(dp >> 16);
			prev.source = r[4];
			r += 5;
		}
		e->stream = prev.stream;
		e->user_metadata = prev.user_metadata;
		e->compile_context = prev.compile_context;
		e->fwd_stack = prev.fwd_stack;
		e->device = prev.device;
		e->pool = prev.pool;
		e->source = prev.source;
	}
	rd->r = r;
	rd->prev = prev;
	return n;
}
