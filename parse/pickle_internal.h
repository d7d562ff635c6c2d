/*
 * The unpickler's insides, shared by its two files and by nothing else: pickle.c (the opcode
 * machine and the fast path for trace entries) and pickle_split.c (the second reader's thread
 * and the merge by which the first takes its work over; pickle.h, ms_pickle_split).
 */
#ifndef MEMSNAP_PARSE_PICKLE_INTERNAL_H
#define MEMSNAP_PARSE_PICKLE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
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

/*
 * The second reader (ms_pickle_split; docs/DESIGN.md, "Two readers"). p2 reads trace entries
 * from `at` on while p reads up to there; p2's memo indices are its own (from 0), as p's count
 * at the split, the base, is known only when p lands. A memo get in p2 below what p has
 * published is p's slot, final; at or above it, p2 waits until p publishes past it or lands.
 */
enum { SPLIT_RUNNING = 0, SPLIT_LANDED, SPLIT_ABORT };
#define SPLIT_AUTO SIZE_MAX
#define REMOTE_STR 0x80000000u /* in p2: a string id of p's (not below n_pre): unreadable */
struct split {
	struct ms_pickle *p2;
	ms_pk_merge_fn merge;
	void *merge_ctx;
	size_t at; /* offset of the EMPTY_DICT p2 starts at (SPLIT_AUTO: p2 chooses, see
	              helper_main) */
	pthread_t thread;
	int started; /* the thread is running, or has ended and is not joined yet */
	int wait;    /* p lets p2 read all it can once p is there (tests: ms_pickle_split) */
	int active;  /* p2 reads: p publishes and looks for its start (until split_stop) */
	/* each on a cache line of its own: p writes memo_pub after every entry, p2 reads phase */
	char pad0[64];
	_Atomic size_t memo_pub; /* p's memo slots below it are written for good */
	_Atomic size_t pos_pub;  /* and its offset then */
	char pad1[64];
	_Atomic int phase;
	_Atomic int done; /* p2's last act: what it read is all in place */
	/* right past the EMPTY_DICT p2 starts at, once p2 has chosen it: where p lands */
	const unsigned char *_Atomic land;
	char pad2[64];
	size_t base; /* p's memo count at the split, once LANDED */
	/*
	 * p's memo index, which never moves while p2 reads it: p2 reads it here, not in p, where
	 * it shares a cache line with n_memo, which p writes after every entry.
	 */
	struct ms_pk_val *const *memo1;
	uint32_t n_pre; /* string ids below it mean the same in both machines */
	/* p2's result, read after the join */
	size_t stop;          /* offset where p goes on */
	size_t first_close;   /* offset of p2's first APPENDS; 0: none */
	uint64_t first_batch; /* p2's entries before it */
	uint64_t open_n;      /* p2's entries after its last MARK, when one is open at the stop */
	int mark_open;
	ms_status status;
	/* after the merge: p's memo slots [fx_lo, fx_lo + fx_n) are p2's [0, fx_n) */
	uint64_t e1;      /* p's entries before the split */
	uint32_t tag;     /* the device list */
	uint32_t *str_xl; /* p2's string id - n_pre -> p's id + 1 */
	size_t str_xl_cap;
	size_t memo_chunks; /* room in each memo index for what the input can put */
};

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
	/* the second reader: in p, its state (owned); in p2, p's (peer) */
	struct split *split;
	struct ms_pickle *peer;
	size_t n1_seen;     /* p2: p's memo_pub as last read */
	size_t fx_lo, fx_n; /* p: memo slots that are p2's (see struct split) */
	uint64_t n_split;   /* p: entries taken over from p2 */
	int defer_slot;     /* p2: the slot whose values may be deferred, or -1 */
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

/* pickle.c */

/* A batch of items (APPENDS or SETITEMS: set) from the top MARK onto the container below. */
ms_status ms__pk_batch(struct ms_pickle *p, int set);
/* p2's fast path over the entries from *ipp (see fast_entries_t in pickle.c). */
ms_status ms__pk_helper_entries(struct ms_pickle *p, const unsigned char **ipp,
                                const unsigned char *end, struct ms_pk_val *st, size_t *spp,
                                int *gave_up);

/* pickle_split.c */

/* p: starts the second reader's thread (ms_pickle_run, before p reads anything). */
void ms__pk_split_start(struct ms_pickle *p);
/* p: the second reader told to stop (phase: SPLIT_*) and done reading. */
void ms__pk_split_stop(struct ms_pickle *p, int phase);
/* p: the second reader stopped, its thread joined, the split freed (ms_pickle_free). */
void ms__pk_split_free(struct ms_pickle *p);
/* p reads one of p2's memo slots, or writes one again: all of them become p's own. */
ms_status ms__pk_split_materialize(struct ms_pickle *p);
/* p at the second reader's start: takes its work over, or drops it. */
ms_status ms__pk_split_land(struct ms_pickle *p);
/* p2: a memo slot at or above what p had published (see helper_get in pickle.c). */
const struct ms_pk_val *ms__pk_helper_wait(struct ms_pickle *p, uint64_t idx, size_t n_memo,
                                           int *mine);

#endif
