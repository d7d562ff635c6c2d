/*
 * The unpickler's insides (pickle.c: the opcode machine and the fast path for trace entries).
 */
#ifndef MEMSNAP_PARSE_PICKLE_INTERNAL_H
#define MEMSNAP_PARSE_PICKLE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/alloc.h"
#include "common/status.h"
#include "parse/pickle.h"

/*
 * Stream hook roles. ROLE_ENTRY: a dict created as an item of a device list (a trace entry);
 * its items are mapped where they lie on the stack at its SETITEM(S), never copied, and it
 * becomes ROLE_MAPPED (consumed, ord = its place in mapping order) until the APPEND(S) that
 * adds it to the list checks that order and makes it ROLE_DONE.
 */
enum { ROLE_NONE = 0, ROLE_OUTER, ROLE_DEVICE, ROLE_ENTRY, ROLE_MAPPED, ROLE_DONE };
#define PK_CONSUMED 255 /* memo slot never written (a hole) */
/*
 * A trace entry read by the fast path (fast_entries): no object, only its place in mapping
 * order and its device list, payload ord | tag << 40. Internal: it never leaves the stack or
 * the memo as such (a copy stored in a container becomes a streamed, empty dict there).
 */
#define PK_STREAMED   254
#define ORD_BITS      40
#define ORD_MASK      (((uint64_t)1 << ORD_BITS) - 1)
#define SLAB_OBJS     1024
#define MEMO_SHIFT    16
#define MEMO_CHUNK    ((size_t)1 << MEMO_SHIFT)
#define MEMO_AT(p, i) (&(p)->memo[(i) >> MEMO_SHIFT][(i) & (MEMO_CHUNK - 1)])
#define MEMO_SLACK    4096 /* memo slots a pickle may skip beyond one per input byte */

struct slab {
	struct slab *next;
	uint32_t used;
	struct ms_pk_obj objs[SLAB_OBJS];
};

/* Items of the fast path's lists, bump-allocated: one allocation per MiB, not per list. */
#define POOL_VALS ((size_t)1 << 16)
struct pool_chunk {
	struct pool_chunk *next;
	size_t used, cap;
	struct ms_pk_val v[];
};

#define KCACHE 256

struct ms_pickle {
	struct ms_symtab strs;
	uint32_t id_device_traces;
	struct slab *slabs;
	uint64_t n_objs;
	struct pool_chunk *pool;
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
	ms_pk_fields_fn fields_fn; /* the fast path for entries, with key_slot */
	int8_t key_slot[64];
	/*
	 * The fast path's keys: memo index + 1 (0: empty) -> the key's slot (SLOT_UNWANTED for a
	 * key the hook does not want). Filled only from memo slots already final, cleared where a
	 * memo slot is written again.
	 */
	struct key_cache {
		uint32_t idx1;
		int8_t slot;
	} kcache[KCACHE];
	struct ms_diag *diag;
	int64_t op_off;
	uint8_t op;
	/* trace entries handed to the hook, and added to their lists; equal at STOP */
	uint64_t ev_mapped, ev_appended;
	uint64_t n_fast; /* of those, read by the fast path */
	/* last strings interned, by length and first bytes: repeated values skip the hash */
	struct {
		uint32_t len, id;
		uint64_t head;
	} scache[64];
	/*
	 * The fast path's last short string by slot (length, first bytes, id): an entry's
	 * string values are most often the ones of the entry before (compile_context "N/A").
	 */
	struct {
		uint32_t len, id;
		uint64_t head;
	} slot_str[MS_PK_SLOTS + 1];
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
		    !(c = ms_malloc(MEMO_CHUNK * sizeof(*c))))
			return MS_ERR_NOMEM;
		p->memo[p->n_memo_chunks++] = c;
	}
	return MS_OK;
}

#endif
