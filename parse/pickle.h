/*
 * A restricted unpickler: a small opcode machine for protocols 2 to 5 that
 * builds plain values (None, bool, int, float, str, bytes, list, tuple, dict)
 * and never executes anything. Opcodes that would import or call Python
 * objects (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, PERSID,
 * EXT*) are refused with MS_ERR_UNSAFE, naming the opcode and its offset.
 *
 * Input is pulled through a read callback in chunks, so the file is never
 * held whole. A "stream hook" lets the caller consume the items of large
 * lists as they are appended (PyTorch's device_traces) instead of keeping
 * them: the consumed objects are released at once.
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
	uint64_t ord; /* stream hook: a trace entry's place in mapping order */
	uint32_t aux; /* free for the consumer (a cached id + 1) */
	uint32_t tag; /* stream hook: device index (device lists and their entries) */
	uint8_t kind; /* MS_PK_LIST, MS_PK_TUPLE or MS_PK_DICT */
	uint8_t role; /* stream hook bookkeeping */
	uint8_t consumed;
	uint8_t pooled; /* items in the machine's pool (not their own allocation) */
};

/* Pulls up to cap bytes of (decompressed) input; *got == 0 at the end. */
typedef ms_status (*ms_pk_read_fn)(void *ctx, void *buf, size_t cap, size_t *got,
                                   struct ms_diag *diag);

/*
 * Called for each item of a streamed list, PyTorch's device_traces[device], in list
 * order. A dict item (a trace entry) is handed over at its SETITEM(S), its items where they
 * lie on the machine's stack, and another item at the APPEND(S) that adds it; offset is
 * that opcode's byte offset and index the item's position among all streamed items. The
 * item is valid during the call only. If the items do not reach their lists in the order
 * they were handed over, the run fails (MS_ERR_UNSUPPORTED).
 */
typedef ms_status (*ms_pk_item_fn)(void *ctx, uint32_t device, uint64_t index,
                                   const struct ms_pk_val *item, int64_t offset);

/*
 * The fast path for trace entries (see ms_pickle_entry_fields): an entry's values by field
 * slot, vals[slot] set where bit slot of present is (the last value given wins, as in
 * Python). The values are valid during the call only.
 */
#define MS_PK_SLOTS 16
typedef ms_status (*ms_pk_fields_fn)(void *ctx, uint32_t device, const struct ms_pk_val *vals,
                                     uint32_t present, int64_t offset);

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
 * Set the hook for PyTorch snapshots: items of device_traces[d] (the list at
 * key "device_traces" of the top-level dict) go to fn instead of staying.
 */
/*
 * The whole input at once (len > 0), in memory the caller keeps (a mapped file) until
 * ms_pickle_free: ms_pickle_run then reads it in place, with no copy and no read callback.
 */
void ms_pickle_borrow_input(struct ms_pickle *p, const void *data, size_t len);
void ms_pickle_stream_traces(struct ms_pickle *p, ms_pk_item_fn fn, void *ctx);
/*
 * With the stream hook set: trace entries laid out as PyTorch writes them (a dict of string
 * keys got from the memo and plain values: memo gets, ints of up to 64 bits, short strings,
 * None, bools, one list of memo gets) are read straight from the input by a second, narrower
 * decoder and handed to fn (with the stream hook's ctx) as values by slot: key string id k < 64
 * goes to slot slot_of[k] (-1: not wanted; keys of other ids and non-string keys are never wanted).
 * Any other entry, or one that crosses the end of the input window, goes to the stream hook as a
 * dict. The two paths accept and refuse the same pickles and give the same values; the fast one
 * skips the dict and the general opcode dispatch.
 */
void ms_pickle_entry_fields(struct ms_pickle *p, const int8_t slot_of[64], ms_pk_fields_fn fn);

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
/* Trace entries read by the fast path so far. */
uint64_t ms_pickle_fast_entries(const struct ms_pickle *p);
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
