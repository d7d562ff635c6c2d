/*
 * A restricted unpickler: a small opcode machine for protocols 2 to 5 that
 * builds plain values (None, bool, int, float, str, bytes, list, tuple, dict)
 * and never executes anything. Opcodes that would import or call Python
 * objects (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, PERSID,
 * EXT*) are refused with MS_ERR_UNSAFE, naming the opcode and its offset.
 *
 * Input is pulled through a read callback in chunks, so the file is never
 * held whole. A "stream hook" lets the caller consume the items of large
 * lists as they are appended (the lists in the list at one key of the top-level
 * dict: a PyTorch snapshot's device_traces) instead of keeping them: the consumed
 * objects are released at once. An "item reader" lets the caller read such items
 * itself with the machine's own decoder, without the machine's stack and dispatch.
 *
 * This file and pickle.c are the whole of the decoding: whatever reads a pickle
 * reads it through these calls.
 */
#ifndef MEMSNAP_PARSE_PICKLE_H
#define MEMSNAP_PARSE_PICKLE_H

#include <stdint.h>

#include "common/symtab.h"
#include "memsnap/memsnap.h"

enum ms_pk_type {
	MS_PK_NONE = 0,
	MS_PK_BOOL,
	MS_PK_INT,
	MS_PK_BIGINT, /* an int outside int64: kept as a marker, value lost */
	MS_PK_FLOAT,
	MS_PK_STR,   /* v.str: string id in ms_pickle_strings() */
	MS_PK_BYTES, /* v.str as well */
	MS_PK_LIST,
	MS_PK_TUPLE,
	MS_PK_DICT,
};

struct ms_pk_obj;

struct ms_pk_val {
	uint8_t type; /* enum ms_pk_type */
	union {
		int64_t i;
		double f;
		uint32_t str;
		struct ms_pk_obj *o;
	} v;
};

/*
 * list, tuple or dict; a dict's items are key, value, key, value, ...
 * Headers live in slabs owned by the machine and are never freed before it;
 * a streamed (consumed) object keeps its header with no items, so a stale
 * reference can never dangle.
 */
struct ms_pk_obj {
	struct ms_pk_val *items;
	uint32_t n, cap;
	uint64_t ord; /* stream hook: a streamed item's place in mapping order */
	uint32_t aux; /* free for the consumer (a cached id + 1; see ms_pk_release) */
	uint32_t tag; /* stream hook: a streamed list's index (the lists and their items) */
	uint8_t kind; /* MS_PK_LIST, MS_PK_TUPLE or MS_PK_DICT */
	uint8_t role; /* stream hook bookkeeping */
	uint8_t consumed;
	uint8_t pooled;  /* items in the machine's pool (not their own allocation) */
	uint8_t recycle; /* the machine's: an item reader's list it may reuse once released */
};

/* Pulls up to cap bytes of (decompressed) input; *got == 0 at the end. */
typedef ms_status (*ms_pk_read_fn)(void *ctx, void *buf, size_t cap, size_t *got,
                                   struct ms_diag *diag);

/*
 * Called for each item of a streamed list (ms_pickle_stream_lists), number `list` in the list
 * of lists, in list order. A dict item is handed over at its SETITEM(S), its items where they
 * lie on the machine's stack, and another item at the APPEND(S) that adds it; offset is
 * that opcode's byte offset and index the item's position among all streamed items. The
 * item is valid during the call only. If the items do not reach their lists in the order
 * they were handed over, the run fails (MS_ERR_UNSUPPORTED).
 */
typedef ms_status (*ms_pk_item_fn)(void *ctx, uint32_t list, uint64_t index,
                                   const struct ms_pk_val *item, int64_t offset);

struct ms_pickle;

struct ms_pickle_limits {
	uint64_t max_string;  /* longest str/bytes; default 256 MiB */
	uint64_t max_memo;    /* largest memo index; default 2^32 - 2 */
	uint64_t max_objects; /* containers alive at once; default 2^28 */
};

ms_status ms_pickle_new(struct ms_pickle **out);
/* NULL-safe. Invalidates every value the machine produced. */
void ms_pickle_free(struct ms_pickle *p);
void ms_pickle_set_limits(struct ms_pickle *p, const struct ms_pickle_limits *l);
/*
 * The whole input at once (len > 0), in memory the caller keeps (a mapped file) until
 * ms_pickle_free: ms_pickle_run then reads it in place, with no copy and no read callback.
 */
void ms_pickle_borrow_input(struct ms_pickle *p, const void *data, size_t len);
/*
 * The stream hook: the items of the lists in the list at key `key` of the top-level dict go to
 * fn instead of staying (the list of lists and its lists keep the role, and no items). The key
 * is interned in p's strings now. @return MS_OK or MS_ERR_NOMEM.
 */
ms_status ms_pickle_stream_lists(struct ms_pickle *p, const char *key, ms_pk_item_fn fn, void *ctx);

/*
 * Item readers: the dict items of streamed lists read by the caller itself, with the machine's
 * own decoder, straight from its input window: values handed over by key, without a dict, the
 * machine's stack or its general dispatch (a PyTorch snapshot's trace entries,
 * parse/torch_snapshot.c). At the EMPTY_DICT of such an item the machine calls the reader with a
 * cursor there; the reader takes items with ms_pk_items while it gets them, hands them on as it
 * likes (the stream hook is not called for them) and returns. An item that ms_pk_items does not
 * read (another layout, or one that crosses the end of the window) the machine then reads as
 * usual. ms_pk_items never fails on bad input: it leaves the item, and the machine says what is
 * wrong; of an item left nothing is done that the machine, reading it, does not redo the same
 * way (memo slots past its count written, strings interned) or that is not taken back.
 */
#define MS_PK_SLOTS 17 /* keys an item reader wants, by slot */
#define MS_PK_BATCH 32 /* items ms_pk_items reads at most in one call */
struct ms_pk_item {
	uint32_t list;    /* its list (ms_pk_item_fn's list) */
	uint32_t present; /* the slots its keys have (bit slot) */
	int64_t offset;   /* its SETITEMS' byte offset (for messages) */
	/*
	 * Its values by the slots of their keys, vals[slot] where bit slot of present is set (the
	 * last one given wins, as in Python); vals[MS_PK_SLOTS] those of keys not wanted.
	 */
	struct ms_pk_val vals[MS_PK_SLOTS + 1];
};
struct ms_pk_cursor {
	const unsigned char *ip, *end; /* the machine's: the next opcode, the end of the window */
	int left;                      /* the machine's: the cursor is at an item left to it */
	struct ms_pk_item items[MS_PK_BATCH]; /* the items ms_pk_items read */
};
typedef ms_status (*ms_pk_reader_fn)(void *ctx, struct ms_pickle *p, struct ms_pk_cursor *c);
/*
 * The item reader (with the stream hook set): a key that is a string of id i < 64 has slot
 * slots[i] (below MS_PK_SLOTS; -1: not wanted, as keys of other ids and of other types).
 * @return MS_OK or MS_ERR_NOMEM (the cursor is allocated here).
 */
ms_status ms_pickle_item_reader(struct ms_pickle *p, const int8_t slots[64], ms_pk_reader_fn fn,
                                void *ctx);
/*
 * The items at the cursor, into c->items[0..n) (n returned, MS_PK_BATCH at most), each as
 * Python's pickler writes a dict: EMPTY_DICT, its memo puts, MARK, keys and values, SETITEMS.
 * A key is a plain value other than a container or the stream hook's key; a value a plain
 * value (a memo get of anything but a streamed item, an int of up to 64 bits, a short string,
 * None or a bool, and a string's memo puts), or in one key a list of plain values (EMPTY_LIST
 * and its memo puts, then MARK, values and APPENDS, or one value and APPEND, or nothing);
 * FRAME opcodes between them. Each item read is on the machine's stack, as a streamed item.
 * It stops at an item it does not read (left to the machine; *st: out of memory, if that is
 * why), or where no item follows. The values are valid until the reader returns.
 */
int ms_pk_items(struct ms_pickle *p, struct ms_pk_cursor *c, ms_status *st);
/*
 * The caller has what it needs from container o (and keeps it, e.g. in o->aux): o's items go,
 * and o stays, empty, with its aux; every later reader of o, a memo get of it included, meets
 * an empty container. The items of the lists ms_pk_items made go back to its pool once all the
 * lists of a call are given up so (before anything else takes from the pool): a reader that
 * gives up each list it has mapped, before it asks for more items, keeps no list's items.
 */
void ms_pk_release(struct ms_pickle *p, struct ms_pk_obj *o);

/*
 * Run the machine to STOP; *root gets the result, valid until
 * ms_pickle_free(). diag gets the opcode offset on failure.
 * @return MS_OK, MS_ERR_UNSAFE (code-executing opcode), MS_ERR_UNSUPPORTED
 *   (unknown opcode or protocol), MS_ERR_FORMAT (stack underflow, bad memo
 *   reference, ...), MS_ERR_TRUNCATED, MS_ERR_LIMIT, MS_ERR_NOMEM, or what the
 *   read or item callback returned.
 */
ms_status ms_pickle_run(struct ms_pickle *p, ms_pk_read_fn rd, void *rd_ctx, struct ms_pk_val *root,
                        struct ms_diag *diag);

/* The strings of str/bytes values. */
const struct ms_symtab *ms_pickle_strings(const struct ms_pickle *p);
/* Protocol from the PROTO opcode (0 if none). */
int ms_pickle_protocol(const struct ms_pickle *p);
/* Bytes consumed so far. */
uint64_t ms_pickle_offset(const struct ms_pickle *p);

/* Convenience: dict lookup by key string (linear); NULL if absent or not a dict. */
const struct ms_pk_val *ms_pk_dict_get(const struct ms_pickle *p, const struct ms_pk_val *d,
                                       const char *key);

/*
 * For other front ends that build the same values (the JSON reader):
 * a new empty container owned by p, appending to it, interning a string.
 */
ms_status ms__pk_new(struct ms_pickle *p, uint8_t kind, struct ms_pk_val *out);
ms_status ms__pk_add(struct ms_pickle *p, struct ms_pk_val *container, const struct ms_pk_val *v);
ms_status ms__pk_str(struct ms_pickle *p, const char *s, size_t n, struct ms_pk_val *out);

#endif
