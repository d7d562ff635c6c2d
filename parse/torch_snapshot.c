/*
 * Maps PyTorch snapshot values ('segments', 'device_traces', 'allocator_settings',
 * 'external_annotations') onto memsnap's model. Layout and quirks: torch-allocator.md §8.
 */
#include "parse/torch_snapshot.h"
#include "parse/torch_release.h"
#include "parse/event_pack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/status.h"

/*
 * A mapped pickle of AHEAD_FROM bytes or more fills a huge page every few milliseconds (memo,
 * values, packed events): AHEAD_PAGES of them are faulted in ahead on another thread.
 */
#define AHEAD_FROM  ((size_t)16 << 20)
#define AHEAD_PAGES 4

enum key_id {
	K_ACTION,
	K_ADDR,
	K_DEVICE_FREE,
	K_SIZE,
	K_STREAM,
	K_TIME_US,
	K_COMPILE_CONTEXT,
	K_USER_METADATA,
	K_FRAMES,
	K_NAME,
	K_FILENAME,
	K_LINE,
	K_TIME_NS,
	K_SOURCE,
	K_POOL_ID,           /* 2.12: read only to tell the release */
	K_INTERNAL_METADATA, /* 2.15: likewise */
	K_FORWARD_FRAMES,    /* main: where a backward allocation's tensor was made in forward */
	K_COUNT
};
static const char *const key_names[K_COUNT] = {
        "action",         "addr",    "device_free",     "size",
        "stream",         "time_us", "compile_context", "user_metadata",
        "frames",         "name",    "filename",        "line",
        "time_ns",        "source",  "pool_id",         "internal_metadata",
        "forward_frames",
};

/* Keys of segments and their blocks (and legacy history entries), mapped in one pass. */
enum seg_key {
	G_DEVICE,
	G_ADDRESS,
	G_TOTAL_SIZE,
	G_ALLOCATED_SIZE,
	G_ACTIVE_SIZE,
	G_REQUESTED_SIZE,
	G_STREAM,
	G_SEGMENT_TYPE,
	G_IS_EXPANDABLE,
	G_SEGMENT_POOL_ID,
	G_FRAMES,
	G_BLOCKS,
	G_SIZE,
	G_STATE,
	G_HISTORY,
	G_REAL_SIZE,
	G_COUNT
};
static const char *const seg_key_names[G_COUNT] = {
        "device",        "address",         "total_size", "allocated_size",
        "active_size",   "requested_size",  "stream",     "segment_type",
        "is_expandable", "segment_pool_id", "frames",     "blocks",
        "size",          "state",           "history",    "real_size",
};

/* Block states as PyTorch writes them ("active_awaiting_free" in older versions). */
static const char *const state_names[4] = {"active_allocated", "active_pending_free",
                                           "active_awaiting_free", "inactive"};
static const int state_of[4] = {MS_BLOCK_ACTIVE_ALLOCATED, MS_BLOCK_ACTIVE_PENDING_FREE,
                                MS_BLOCK_ACTIVE_PENDING_FREE, MS_BLOCK_INACTIVE};

struct ms_snapmap {
	struct ms_pickle *vm;
	struct ms_mapped whole; /* the input the machine reads in place, if mapped (else zero) */
	struct ms_symtab *syms;
	struct ms_diag *diag;
	uint32_t key[K_COUNT];          /* vm string ids of the keys */
	int8_t key_of[64];              /* vm string id (< 64) -> enum key_id, or -1 */
	uint32_t act_str[MS_ACT_COUNT]; /* vm string ids of the action names */
	int8_t act_of[64];              /* vm string id (< 64) -> action, or -1 */
	uint32_t id_na;                 /* vm string id of "N/A" */
	uint32_t id_small;              /* of "small" (segment_type) */
	uint32_t id_state[4];           /* of the block states, as state_names */
	uint32_t gkey[G_COUNT];         /* vm string ids of the segment keys */
	int8_t gkey_of[128];            /* vm string id (< 128) -> enum seg_key, or -1 */
	uint32_t *str_map;              /* vm string id -> syms id + 1 */
	size_t str_map_cap;
	uint32_t *tmp;
	size_t tmp_cap;
	struct ms_event_pack events; /* kept until the settings and annotations are known */
	size_t n_events;
	int64_t first_t_ns; /* the earliest event time */
	uint32_t n_devices_seen;
	/* entries skipped: actions that are no allocator event memsnap replays ("annotate",
	 * "user_defined") or that it does not know; their names, each once, for one warning */
	uint64_t n_skipped;
	char skipped[160];
	uint32_t keys_seen;         /* entry keys seen (1 << enum key_id) */
	int user_defined, annotate; /* entries with these actions seen */
	int mapped;                 /* segment_map or segment_unmap entries seen */
	char release[96];           /* the releases the layout fits (meta.layout_release) */
	uint64_t n_read;            /* trace entries read by read_entries */
};
_Static_assert(K_COUNT <= MS_PK_SLOTS, "trace entry keys fit the item reader's slots");

/* Intern names[0..n) in vm: ids[i] gets name i's id, of[id] = i for ids below of_n (else -1). */
static ms_status intern_keys(struct ms_pickle *vm, const char *const *names, int n, uint32_t *ids,
                             int8_t *of, size_t of_n)
{
	struct ms_pk_val v;

	memset(of, -1, of_n);
	for (int i = 0; i < n; i++) {
		MS_TRY(ms__pk_str(vm, names[i], strlen(names[i]), &v));
		ids[i] = v.v.str;
		if (v.v.str < of_n)
			of[v.v.str] = (int8_t)i;
	}
	return MS_OK;
}

ms_status ms__snapmap_new(struct ms_pickle *vm, struct ms_symtab *syms, struct ms_diag *diag,
                          struct ms_snapmap **out)
{
	struct ms_snapmap *m = ms_calloc_lines(sizeof(*m)); /* as ms_pickle_new */
	const char *act_names[MS_ACT_COUNT];
	struct ms_pk_val v;
	int i;

	if (!m)
		return MS_ERR_NOMEM;
	m->vm = vm;
	m->syms = syms;
	m->diag = diag;
	for (i = 0; i < MS_ACT_COUNT; i++)
		act_names[i] = ms_action_name((unsigned)i);
	/* entry keys first: the item reader (read_entries) wants their ids below 64 */
	if (intern_keys(vm, key_names, K_COUNT, m->key, m->key_of, sizeof(m->key_of)) ||
	    intern_keys(vm, act_names, MS_ACT_COUNT, m->act_str, m->act_of, sizeof(m->act_of)) ||
	    ms__pk_str(vm, "N/A", 3, &v) ||
	    intern_keys(vm, seg_key_names, G_COUNT, m->gkey, m->gkey_of, sizeof(m->gkey_of)))
		goto nomem;
	m->id_na = v.v.str;
	/* the segments' few string values, compared by id */
	if (ms__pk_str(vm, "small", 5, &v))
		goto nomem;
	m->id_small = v.v.str;
	for (i = 0; i < 4; i++) {
		if (ms__pk_str(vm, state_names[i], strlen(state_names[i]), &v))
			goto nomem;
		m->id_state[i] = v.v.str;
	}
	*out = m;
	return MS_OK;
nomem:
	ms_free(m);
	return MS_ERR_NOMEM;
}

void ms__snapmap_free(struct ms_snapmap *m)
{
	if (!m)
		return;
	ms_free(m->str_map);
	ms_free(m->tmp);
	ms_event_pack_free(&m->events);
	ms_free(m);
}

/*
 * Which of the keys ids[0..n) a vm string id is, or -1: by table (of) for ids below of_n (the
 * keys are interned first, so theirs are), by search otherwise.
 */
static inline int key_index(const int8_t *of, size_t of_n, const uint32_t *ids, int n, uint32_t id)
{
	if (id < of_n)
		return of[id];
	for (int q = 0; q < n; q++)
		if (ids[q] == id)
			return q;
	return -1;
}

static ms_status entry_err(struct ms_snapmap *m, uint64_t index, int64_t off, const char *what)
{
	if (off < 0) /* JSON: no offset to tell */
		return ms__diag_set(m->diag, MS_ERR_FORMAT, off, (int64_t)index,
		                    "trace entry %llu: %s", (unsigned long long)index, what);
	return ms__diag_set(m->diag, MS_ERR_FORMAT, off, (int64_t)index,
	                    "trace entry %llu (near offset %lld): %s", (unsigned long long)index,
	                    (long long)off, what);
}

/* Trace-symtab id of a vm string. */
static ms_status map_str_slow(struct ms_snapmap *m, uint32_t vid, uint32_t *out)
{
	const struct ms_str *s;
	uint32_t id;

	if (vid == 0) {
		*out = 0;
		return MS_OK;
	}
	if (vid >= m->str_map_cap) {
		size_t old = m->str_map_cap;
		if (ms_grow(&m->str_map, &m->str_map_cap, (size_t)vid + 1, sizeof(uint32_t)))
			return MS_ERR_NOMEM;
		memset(m->str_map + old, 0, (m->str_map_cap - old) * sizeof(uint32_t));
	}
	if (m->str_map[vid]) {
		*out = m->str_map[vid] - 1;
		return MS_OK;
	}
	s = ms_symtab_get_str(ms_pickle_strings(m->vm), vid);
	MS_TRY(ms_symtab_str(m->syms, s->s, s->len, &id));
	m->str_map[vid] = id + 1;
	*out = id;
	return MS_OK;
}

/* map_str, the string mapped before (the usual case) inline */
static inline ms_status map_str(struct ms_snapmap *m, uint32_t vid, uint32_t *out)
{
	if (vid < m->str_map_cap && m->str_map[vid]) {
		*out = m->str_map[vid] - 1;
		return MS_OK;
	}
	return map_str_slow(m, vid, out);
}

static const struct ms_pk_val *get(const struct ms_snapmap *m, const struct ms_pk_val *d, int key)
{
	const struct ms_pk_obj *o;

	if (!d || d->type != MS_PK_DICT)
		return NULL;
	o = d->v.o;
	for (uint32_t i = o->n; i >= 2; i -= 2)
		if (o->items[i - 2].type == MS_PK_STR && o->items[i - 2].v.str == m->key[key])
			return &o->items[i - 1];
	return NULL;
}

/* An int; bools count as ints, and so do decimal strings (memsnap's JSON writes ns times so). */
static int as_i64_str(const struct ms_snapmap *m, const struct ms_pk_val *v, int64_t *out)
{
	const struct ms_str *s;
	char *end;

	if (!v || v->type != MS_PK_STR)
		return -1;
	s = ms_symtab_get_str(ms_pickle_strings(m->vm), v->v.str);
	if (s->len == 0 || s->len > 20)
		return -1;
	errno = 0;
	*out = strtoll(s->s, &end, 10);
	return errno || *end ? -1 : 0;
}

static inline int as_i64(const struct ms_pk_val *v, int64_t *out)
{
	if (!v)
		return -1;
	if (v->type == MS_PK_INT) {
		*out = v->v.i;
		return 0;
	}
	if (v->type == MS_PK_BOOL) {
		*out = v->v.i;
		return 0;
	}
	return -1;
}

/*
 * A pool id (a trace entry's pool_id, a segment's segment_pool_id) into id and its code; NULL, or
 * what is wrong with it in why (cap bytes).
 */
static const char *pool_id_of(const struct ms_pk_val *v, uint64_t id[2], uint16_t *code, char *why,
                              size_t cap)
{
	int64_t a, b;

	if ((v->type != MS_PK_TUPLE && v->type != MS_PK_LIST) || v->v.o->n != 2 ||
	    as_i64(&v->v.o->items[0], &a) || as_i64(&v->v.o->items[1], &b) || a < 0 || b < 0)
		return "not a pair of integers of at least 0";
	id[0] = (uint64_t)a;
	id[1] = (uint64_t)b;
	if (!ms_pool_code(id[0], id[1], code))
		return NULL;
	snprintf(why, cap,
	         a && b ? "(%lld, %lld): a private pool's id has one half zero"
	                : "(%lld, %lld): memsnap holds pool ids up to %d in each half",
	         (long long)a, (long long)b, MS_POOL_MAX_HALF);
	return why;
}

/*
 * A frame dict's 'line' -> *line. PyTorch writes C++ frames (stacks="all") with the line
 * unknown as size_t(-1), an int past int64 (a JSON reader makes it a float); None, such
 * numbers and ints outside uint32 are read as 0, "no line". Anything else is malformed: -1.
 */
static int frame_line(const struct ms_pk_val *x, uint32_t *line)
{
	*line = 0;
	if (!x || x->type == MS_PK_NONE || x->type == MS_PK_BIGINT || x->type == MS_PK_FLOAT)
		return 0;
	if (x->type != MS_PK_INT && x->type != MS_PK_BOOL)
		return -1;
	if (x->v.i >= 0 && x->v.i <= UINT32_MAX)
		*line = (uint32_t)x->v.i;
	return 0;
}

/* A frame dict's 'name' or 'filename': a string, or absent or None (""); else -1. */
static inline int frame_str(const struct ms_pk_val *x, uint32_t *vid)
{
	*vid = 0;
	if (!x || x->type == MS_PK_NONE)
		return 0;
	if (x->type != MS_PK_STR)
		return -1;
	*vid = x->v.str;
	return 0;
}

/*
 * Frames list -> stack id. Frame dicts and whole frames lists are shared by entries through
 * the memo, so their ids are cached in aux (a value is complete before anything refers to it).
 */
static ms_status map_frames(struct ms_snapmap *m, const struct ms_pk_val *fr, uint32_t *stack)
{
	struct ms_pk_obj *l;
	ms_status s;

	*stack = 0;
	if (!fr || fr->type == MS_PK_NONE)
		return MS_OK;
	if (fr->type != MS_PK_LIST && fr->type != MS_PK_TUPLE)
		return MS_ERR_FORMAT;
	l = fr->v.o;
	if (l->aux) { /* first: a list mapped may have given up its items (ms_pk_release) */
		*stack = l->aux - 1;
		return MS_OK;
	}
	if (l->n == 0)
		return MS_OK;
	if (l->n > m->tmp_cap && ms_grow(&m->tmp, &m->tmp_cap, l->n, sizeof(uint32_t)))
		return MS_ERR_NOMEM;
	/* in locals: the stores to tmp could alias them (all uint32_t) and reload them */
	const uint32_t n = l->n;
	const struct ms_pk_val *items = l->items;
	uint32_t *tmp = m->tmp;
	for (uint32_t i = 0; i < n; i++) {
		const struct ms_pk_val *f = &items[i];
		struct ms_frame fd;
		uint32_t name, file;

		if (f->type != MS_PK_DICT)
			return MS_ERR_FORMAT;
		if (f->v.o->aux) {
			tmp[i] = f->v.o->aux - 1;
			continue;
		}
		/* other keys than these three are skipped */
		if (frame_str(get(m, f, K_NAME), &name) ||
		    frame_str(get(m, f, K_FILENAME), &file) ||
		    frame_line(get(m, f, K_LINE), &fd.line))
			return MS_ERR_FORMAT;
		MS_TRY(map_str(m, name, &fd.name));
		MS_TRY(map_str(m, file, &fd.file));
		MS_TRY(ms_symtab_frame(m->syms, &fd, &tmp[i]));
		f->v.o->aux = tmp[i] + 1;
	}
	if ((s = ms_symtab_stack(m->syms, tmp, n, stack)))
		return s;
	if (*stack < UINT32_MAX)
		l->aux = *stack + 1;
	return MS_OK;
}

/*
 * A forward frame's string as memory_viz shows a frame, "FILE:LINE:NAME" (the first ":digits:"
 * splits it), into fd; else the whole string is the frame's name (no file, line 0).
 */
static ms_status string_frame(struct ms_snapmap *m, uint32_t vid, struct ms_frame *fd)
{
	const struct ms_str *s = ms_symtab_get_str(ms_pickle_strings(m->vm), vid);

	memset(fd, 0, sizeof(*fd));
	for (size_t i = 1; i + 2 < s->len; i++) {
		size_t j = i + 1;
		uint64_t line = 0;
		if (s->s[i] != ':')
			continue;
		while (j < s->len && s->s[j] >= '0' && s->s[j] <= '9' && line <= UINT32_MAX)
			line = line * 10 + (uint64_t)(s->s[j++] - '0');
		/* the line as written again: no leading zero (else the string is kept whole) */
		if (j == i + 1 || j >= s->len || s->s[j] != ':' || line > UINT32_MAX ||
		    (s->s[i + 1] == '0' && j > i + 2))
			continue;
		fd->line = (uint32_t)line;
		MS_TRY(ms_symtab_str(m->syms, s->s, i, &fd->file));
		return ms_symtab_str(m->syms, s->s + j + 1, s->len - j - 1, &fd->name);
	}
	return map_str(m, vid, &fd->name);
}

/*
 * forward_frames (a list of strings, PyTorch's main branch) -> a stack of those frames
 * (string_frame); cached in the list's aux as frames lists are.
 */
static ms_status map_string_frames(struct ms_snapmap *m, const struct ms_pk_val *fr,
                                   uint32_t *stack)
{
	struct ms_pk_obj *l;

	*stack = 0;
	if (!fr || fr->type == MS_PK_NONE)
		return MS_OK;
	if (fr->type != MS_PK_LIST && fr->type != MS_PK_TUPLE)
		return MS_ERR_FORMAT;
	l = fr->v.o;
	if (l->aux) {
		*stack = l->aux - 1;
		return MS_OK;
	}
	if (l->n == 0)
		return MS_OK;
	if (l->n > m->tmp_cap && ms_grow(&m->tmp, &m->tmp_cap, l->n, sizeof(uint32_t)))
		return MS_ERR_NOMEM;
	for (uint32_t i = 0; i < l->n; i++) {
		struct ms_frame fd;
		if (l->items[i].type != MS_PK_STR)
			return MS_ERR_FORMAT;
		MS_TRY(string_frame(m, l->items[i].v.str, &fd));
		MS_TRY(ms_symtab_frame(m->syms, &fd, &m->tmp[i]));
	}
	MS_TRY(ms_symtab_stack(m->syms, m->tmp, l->n, stack));
	if (*stack < UINT32_MAX)
		l->aux = *stack + 1;
	return MS_OK;
}

/*
 * An entry whose action is no allocator event (2.14's "annotate" of a live allocation, the
 * record_function scopes that 2024's nightly builds wrote as "user_defined") or one this reader
 * does not know (a later release's): skipped, counted, its name kept for the warning.
 */
static void skip_entry(struct ms_snapmap *m, const struct ms_str *name)
{
	size_t len = strlen(m->skipped);
	char quoted[64];

	m->n_skipped++;
	m->user_defined |= !strcmp(name->s, "user_defined");
	m->annotate |= !strcmp(name->s, "annotate");
	snprintf(quoted, sizeof(quoted), "'%.40s'", name->s);
	if (strstr(m->skipped, quoted) || len + strlen(quoted) + 8 >= sizeof(m->skipped))
		return;
	snprintf(m->skipped + len, sizeof(m->skipped) - len, "%s%s", len ? ", " : "", quoted);
}

/* A trace entry's values by key (enum key_id; in present) -> the next event. */
static ms_status snapmap_fields(void *ctx, uint32_t device, const struct ms_pk_val *vals,
                                uint32_t present, int64_t offset)
{
#define FIELD(k) ((present >> (k)) & 1 ? &vals[k] : NULL)
	struct ms_snapmap *m = ctx;
	struct ms_event ev, *ep = &ev;
	const struct ms_pk_val *v;
	int64_t x;
	int a;
	ms_status s;
	uint64_t gidx = m->n_events;

	ep->user_metadata = ep->compile_context = ep->stack = ep->fwd_stack = 0;
	m->keys_seen |= present;
	v = FIELD(K_ACTION);
	if (!v || v->type != MS_PK_STR)
		return entry_err(m, gidx, offset, "missing 'action'");
	if (v->v.str < sizeof(m->act_of))
		a = m->act_of[v->v.str] < 0 ? MS_ACT_COUNT : m->act_of[v->v.str];
	else
		for (a = 0; a < MS_ACT_COUNT; a++)
			if (m->act_str[a] == v->v.str)
				break;
	ep->source = MS_SRC_TORCH;
	if (a == MS_ACT_COUNT) {
		const struct ms_str *name = ms_symtab_get_str(ms_pickle_strings(m->vm), v->v.str);
		size_t np = strlen(MS_RAW_CUDA_ACTION_PREFIX);
		/* memsnap's JSON: a raw CUDA call, under a name PyTorch's tools pass over */
		if (name->len > np && !memcmp(name->s, MS_RAW_CUDA_ACTION_PREFIX, np) &&
		    (a = ms_action_parse(name->s + np, name->len - np)) >= 0) {
			ep->source = MS_SRC_CUDA;
		} else {
			skip_entry(m, name);
			return MS_OK;
		}
	}
	ep->action = (uint8_t)a;
	m->mapped |= a == MS_ACT_SEGMENT_MAP || a == MS_ACT_SEGMENT_UNMAP;
	v = FIELD(a == MS_ACT_OOM ? K_DEVICE_FREE : K_ADDR);
	if (!v && a == MS_ACT_OOM)
		v = FIELD(K_ADDR);
	if (v && as_i64(v, &x) == 0)
		ep->addr = (uint64_t)x;
	else if (v || a != MS_ACT_SNAPSHOT)
		return entry_err(m, gidx, offset,
		                 a == MS_ACT_OOM ? "bad 'device_free'" : "bad 'addr'");
	v = FIELD(K_SIZE);
	if (as_i64(v, &x) || x < 0)
		return entry_err(m, gidx, offset, "bad 'size'");
	ep->size = (uint64_t)x;
	v = FIELD(K_STREAM);
	if (v && as_i64(v, &x))
		return entry_err(m, gidx, offset, "bad 'stream'");
	ep->stream = v ? (uint64_t)x : 0;
	v = FIELD(K_TIME_US);
	if (v && (as_i64(v, &x) || x > INT64_MAX / 1000 || x < INT64_MIN / 1000))
		return entry_err(m, gidx, offset, "bad 'time_us'");
	ep->t_ns = v ? x * 1000 : 0;
	v = FIELD(K_TIME_NS); /* memsnap's own JSON keeps nanoseconds */
	if (v && (as_i64(v, &x) == 0 || as_i64_str(m, v, &x) == 0))
		ep->t_ns = x;
	v = FIELD(K_COMPILE_CONTEXT);
	if (v && v->type == MS_PK_STR && v->v.str != m->id_na)
		MS_TRY(map_str(m, v->v.str, &ep->compile_context));
	v = FIELD(K_USER_METADATA);
	if (v && v->type == MS_PK_STR)
		MS_TRY(map_str(m, v->v.str, &ep->user_metadata));
	if ((v = FIELD(K_FRAMES))) {
		s = map_frames(m, v, &ep->stack);
		if (s == MS_ERR_FORMAT)
			return entry_err(m, gidx, offset, "bad 'frames'");
		if (s)
			return s;
		/* its stack id is cached in aux: the frames themselves are needed no more */
		if (v->type != MS_PK_NONE && v->v.o->aux)
			ms_pk_release(m->vm, v->v.o);
	}
	if ((v = FIELD(K_FORWARD_FRAMES))) {
		s = map_string_frames(m, v, &ep->fwd_stack);
		if (s == MS_ERR_FORMAT)
			return entry_err(m, gidx, offset, "bad 'forward_frames'");
		if (s)
			return s;
		if (v->type != MS_PK_NONE && v->v.o->aux)
			ms_pk_release(m->vm, v->v.o);
	}
	ep->pool = MS_POOL_UNKNOWN; /* PyTorch 2.11 and older do not say */
	if ((v = FIELD(K_POOL_ID)) && v->type != MS_PK_NONE) { /* None: not told, as absent */
		uint64_t id[2];
		char why[128], what[160];
		const char *bad = pool_id_of(v, id, &ep->pool, why, sizeof(why));
		if (bad) {
			snprintf(what, sizeof(what), "bad 'pool_id': %s", bad);
			return entry_err(m, gidx, offset, what);
		}
	}
	if (device > UINT16_MAX)
		return entry_err(m, gidx, offset, "device index too large");
	ep->device = (uint16_t)device;
	v = FIELD(K_SOURCE); /* memsnap's JSON before raw calls had an action of their own */
	if (v && as_i64(v, &x) == 0 && x >= 0 && x <= 255)
		ep->source = (uint8_t)x;
	if (device + 1 > m->n_devices_seen)
		m->n_devices_seen = device + 1;
	MS_TRY(ms_event_pack_add(&m->events, ep));
	/* the earliest: a snapshot lists each device's events apart */
	if (ep->t_ns && (!m->first_t_ns || ep->t_ns < m->first_t_ns))
		m->first_t_ns = ep->t_ns;
	m->n_events++;
	return MS_OK;
#undef FIELD
}

ms_status ms__snapmap_entry(void *ctx, uint32_t device, uint64_t index,
                            const struct ms_pk_val *item, int64_t offset)
{
	struct ms_snapmap *m = ctx;
	struct ms_pk_val vals[K_COUNT];
	uint32_t present = 0;

	(void)index;
	if (offset > 0)
		ms_input_mapped_read(&m->whole, (uint64_t)offset);
	if (item->type != MS_PK_DICT)
		return entry_err(m, m->n_events, offset, "not a dict");
	/* one pass over the dict: a later duplicate key wins, as in Python */
	for (uint32_t i = 0; i + 1 < item->v.o->n; i += 2) {
		const struct ms_pk_val *k = &item->v.o->items[i];
		int key;
		if (k->type != MS_PK_STR)
			continue;
		key = key_index(m->key_of, sizeof(m->key_of), m->key, K_COUNT, k->v.str);
		if (key >= 0) {
			vals[key] = item->v.o->items[i + 1];
			present |= (uint32_t)1 << key;
		}
	}
	return snapmap_fields(m, device, vals, present, offset);
}

/*
 * The trace entries read by the pickle machine's item reader (pickle.h, ms_pk_items), each
 * mapped by its values by key; the entries it leaves go to ms__snapmap_entry as dicts.
 */
static ms_status read_entries(void *ctx, struct ms_pickle *p, struct ms_pk_cursor *c)
{
	struct ms_snapmap *m = ctx;
	ms_status s, st;
	int n;

	do {
		n = ms_pk_items(p, c, &st);
		for (int i = 0; i < n; i++) {
			const struct ms_pk_item *e = &c->items[i];
			if ((s = snapmap_fields(m, e->list, e->vals, e->present, e->offset)))
				return s;
		}
		m->n_read += (uint64_t)n;
		/* the input behind these entries is read (the memo holds what is used again) */
		if (n)
			ms_input_mapped_read(&m->whole, (uint64_t)c->items[n - 1].offset);
	} while (n == MS_PK_BATCH && !st);
	return st;
}

/* The device lists streamed, their entries read by read_entries if fast. */
static ms_status stream_entries(struct ms_snapmap *m, int fast)
{
	MS_TRY(ms_pickle_stream_lists(m->vm, "device_traces", ms__snapmap_entry, m));
	/* the item reader knows keys by ids < 64; they are, interned first in a new vm */
	for (int i = 0; fast && i < K_COUNT; i++)
		if (m->key[i] >= sizeof(m->key_of))
			fast = 0;
	return fast ? ms_pickle_item_reader(m->vm, m->key_of, read_entries, m) : MS_OK;
}

/* --- everything but the trace entries ----------------------------------- */

static const struct ms_pk_val *dget(const struct ms_snapmap *m, const struct ms_pk_val *d,
                                    const char *key)
{
	return ms_pk_dict_get(m->vm, d, key);
}

/*
 * A segment's, block's or history entry's values by key (NULL: absent), in one pass over
 * the dict instead of a search by name per key; a later duplicate key wins, as in Python.
 */
static void seg_fields(const struct ms_snapmap *m, const struct ms_pk_val *d,
                       const struct ms_pk_val *f[G_COUNT])
{
	const struct ms_pk_obj *o;

	memset(f, 0, G_COUNT * sizeof(*f));
	if (!d || d->type != MS_PK_DICT)
		return;
	o = d->v.o;
	for (uint32_t i = 0; i + 1 < o->n; i += 2) {
		const struct ms_pk_val *k = &o->items[i];
		int g;
		if (k->type != MS_PK_STR)
			continue;
		g = key_index(m->gkey_of, sizeof(m->gkey_of), m->gkey, G_COUNT, k->v.str);
		if (g >= 0)
			f[g] = &o->items[i + 1];
	}
}

/* An int value (def if absent or None; *bad set if not an int). */
static int64_t vint(const struct ms_snapmap *m, const struct ms_pk_val *v, int64_t def, int *bad)
{
	int64_t x;

	if (!v || v->type == MS_PK_NONE)
		return def;
	if (as_i64(v, &x) && as_i64_str(m, v, &x)) {
		*bad = 1;
		return def;
	}
	return x;
}

static int64_t dint(const struct ms_snapmap *m, const struct ms_pk_val *d, const char *key,
                    int64_t def, int *bad)
{
	return vint(m, dget(m, d, key), def, bad);
}

static const char *vstr(const struct ms_snapmap *m, const struct ms_pk_val *v, const char *def)
{
	if (!v || v->type != MS_PK_STR)
		return def;
	return ms_symtab_get_str(ms_pickle_strings(m->vm), v->v.str)->s;
}

static const char *dstr(const struct ms_snapmap *m, const struct ms_pk_val *d, const char *key,
                        const char *def)
{
	return vstr(m, dget(m, d, key), def);
}

static ms_status map_settings(struct ms_snapmap *m, const struct ms_pk_val *d,
                              struct ms_settings *st)
{
	const struct ms_pk_val *v;
	int bad = 0;

	memset(st, 0, sizeof(*st));
	st->alloc_conf = "";
	st->max_split_size = -1;
	st->pinned_num_register_threads = 1;
	if (!d || d->type != MS_PK_DICT)
		return MS_OK;
	st->present = 1;
	st->alloc_conf = dstr(m, d, "PYTORCH_CUDA_ALLOC_CONF", "");
	st->max_split_size = dint(m, d, "max_split_size", -1, &bad);
	v = dget(m, d, "garbage_collection_threshold");
	if (v && v->type == MS_PK_FLOAT)
		st->garbage_collection_threshold = v->v.f;
	else if (v && v->type == MS_PK_INT)
		st->garbage_collection_threshold = (double)v->v.i;
	st->expandable_segments = dint(m, d, "expandable_segments", 0, &bad) != 0;
	st->release_lock_on_cudamalloc = dint(m, d, "release_lock_on_cudamalloc", 0, &bad) != 0;
	st->pinned_use_cuda_host_register =
	        dint(m, d, "pinned_use_cuda_host_register", 0, &bad) != 0;
	st->graph_capture_record_stream_reuse =
	        dint(m, d, "graph_capture_record_stream_reuse", 0, &bad) != 0;
	st->pinned_num_register_threads = dint(m, d, "pinned_num_register_threads", 1, &bad);
	v = dget(m, d, "roundup_power2_divisions");
	if (v && v->type == MS_PK_DICT) {
		/* keys "1".."32768": the interval's lower bound in MiB; entry = log2(key) */
		for (uint32_t i = 0; i + 1 < v->v.o->n; i += 2) {
			const struct ms_pk_val *k = &v->v.o->items[i];
			int64_t val;
			if (k->type != MS_PK_STR || as_i64(&v->v.o->items[i + 1], &val))
				continue;
			long mb = atol(ms_symtab_get_str(ms_pickle_strings(m->vm), k->v.str)->s);
			int e = 0;
			while (e < 15 && (1L << (e + 1)) <= mb)
				e++;
			if (mb >= 1 && val >= 0 && val <= UINT32_MAX)
				st->roundup_power2_divisions[e] = (uint32_t)val;
		}
	} else if (v && v->type == MS_PK_INT) {
		for (int i = 0; i < 16; i++)
			st->roundup_power2_divisions[i] = (uint32_t)v->v.i;
	}
	return bad ? ms__diag_set(m->diag, MS_ERR_FORMAT, -1, -1, "bad allocator_settings") : MS_OK;
}

/* Is any end-state segment an expandable one? */
static int any_expandable(const struct ms_snapmap *m, const struct ms_pk_val *segs)
{
	int bad = 0;

	for (uint32_t i = 0; segs && segs->type == MS_PK_LIST && i < segs->v.o->n; i++)
		if (segs->v.o->items[i].type == MS_PK_DICT &&
		    dint(m, &segs->v.o->items[i], "is_expandable", 0, &bad) > 0)
			return 1;
	return 0;
}

/* A block's state (inactive when absent or not a string), or -1 for an unknown one. */
static int block_state(const struct ms_snapmap *m, const struct ms_pk_val *v)
{
	if (!v || v->type != MS_PK_STR)
		return MS_BLOCK_INACTIVE;
	for (int i = 0; i < 4; i++)
		if (v->v.str == m->id_state[i])
			return state_of[i];
	return -1;
}

static ms_status map_segment(struct ms_snapmap *m, uint64_t idx, const struct ms_pk_val *d,
                             struct ms_segment *g, struct ms_block **blocks, size_t *cap,
                             struct ms_snapshot_info *info)
{
	const struct ms_pk_val *f[G_COUNT], *bf[G_COUNT], *bl, *v;
	int bad = 0;
	uint64_t addr;

	if (d->type != MS_PK_DICT)
		return ms__diag_set(m->diag, MS_ERR_FORMAT, -1, (int64_t)idx,
		                    "segment %llu: not a dict", (unsigned long long)idx);
	seg_fields(m, d, f);
	memset(g, 0, sizeof(*g));
	g->device = (uint16_t)vint(m, f[G_DEVICE], 0, &bad);
	g->addr = (uint64_t)vint(m, f[G_ADDRESS], 0, &bad);
	g->total_size = (uint64_t)vint(m, f[G_TOTAL_SIZE], 0, &bad);
	g->allocated_size = (uint64_t)vint(m, f[G_ALLOCATED_SIZE], 0, &bad);
	g->active_size = (uint64_t)vint(m, f[G_ACTIVE_SIZE], 0, &bad);
	g->requested_size = (uint64_t)vint(m, f[G_REQUESTED_SIZE], 0, &bad);
	g->stream = (uint64_t)vint(m, f[G_STREAM], 0, &bad);
	v = f[G_SEGMENT_TYPE];
	g->is_small = v && v->type == MS_PK_STR && v->v.str == m->id_small;
	g->is_expandable = vint(m, f[G_IS_EXPANDABLE], 0, &bad) != 0;
	if ((v = f[G_SEGMENT_POOL_ID]) && v->type != MS_PK_NONE) {
		char why[128];
		uint16_t code;
		const char *wrong = pool_id_of(v, g->pool_id, &code, why, sizeof(why));
		if (wrong)
			return ms__diag_set(m->diag, MS_ERR_FORMAT, -1, (int64_t)idx,
			                    "segment %llu: bad 'segment_pool_id': %s",
			                    (unsigned long long)idx, wrong);
	}
	if (map_frames(m, f[G_FRAMES], &g->stack))
		bad = 1;
	bl = f[G_BLOCKS];
	if (bl && bl->type != MS_PK_LIST)
		bad = 1;
	if (bad)
		return ms__diag_set(m->diag, MS_ERR_FORMAT, -1, (int64_t)idx,
		                    "segment %llu: malformed field", (unsigned long long)idx);
	addr = g->addr;
	for (uint32_t i = 0; bl && i < bl->v.o->n; i++) {
		const struct ms_pk_val *b = &bl->v.o->items[i];
		struct ms_block *k;
		int st;
		if (ms_grow(blocks, cap, g->n_blocks + 1, sizeof(**blocks)))
			return MS_ERR_NOMEM;
		k = &(*blocks)[g->n_blocks];
		memset(k, 0, sizeof(*k));
		if (b->type != MS_PK_DICT)
			bad = 1;
		seg_fields(m, b, bf);
		k->size = (uint64_t)vint(m, bf[G_SIZE], 0, &bad);
		k->addr = (uint64_t)vint(m, bf[G_ADDRESS], (int64_t)addr, &bad);
		st = block_state(m, bf[G_STATE]);
		if (st < 0)
			bad = 1;
		k->state = (uint8_t)(st < 0 ? 0 : st);
		v = bf[G_REQUESTED_SIZE];
		if (v) {
			int64_t r;
			if (as_i64(v, &r))
				bad = 1;
			else
				k->requested_size = (uint64_t)r;
			if (map_frames(m, bf[G_FRAMES], &k->stack))
				bad = 1;
		} else {
			/* legacy snapshots (~2.0): history[0] holds real_size and frames */
			const struct ms_pk_val *h = bf[G_HISTORY];
			info->legacy = 1;
			k->requested_size = k->size;
			if (h && h->type == MS_PK_LIST && h->v.o->n > 0) {
				seg_fields(m, &h->v.o->items[0], bf);
				k->requested_size =
				        (uint64_t)vint(m, bf[G_REAL_SIZE], (int64_t)k->size, &bad);
				if (map_frames(m, bf[G_FRAMES], &k->stack))
					bad = 1;
			}
		}
		if (bad)
			return ms__diag_set(m->diag, MS_ERR_FORMAT, -1, (int64_t)idx,
			                    "segment %llu block %u: malformed field",
			                    (unsigned long long)idx, i);
		addr = k->addr + k->size;
		g->n_blocks++;
	}
	if (g->device + 1u > m->n_devices_seen)
		m->n_devices_seen = g->device + 1u;
	return MS_OK;
}

struct ann_vec {
	struct ms_annotation *a;
	size_t n, cap;
};

static ms_status map_annotations(struct ms_snapmap *m, const struct ms_pk_val *l,
                                 struct ann_vec *out)
{
	if (!l || l->type != MS_PK_LIST)
		return MS_OK;
	for (uint32_t i = 0; i < l->v.o->n; i++) {
		const struct ms_pk_val *d = &l->v.o->items[i];
		const struct ms_pk_val *name = dget(m, d, "name");
		struct ms_annotation a;
		const char *stage = dstr(m, d, "stage", "");
		int bad = 0;

		memset(&a, 0, sizeof(a));
		const char *kind = dstr(m, d, "kind", "");
		a.kind = strcmp(kind, "step") == 0    ? MS_ANN_STEP
		         : strcmp(kind, "phase") == 0 ? MS_ANN_PHASE
		                                      : MS_ANN_TORCH;
		a.stage = strcmp(stage, "START") == 0 ? MS_ANN_START
		          : strcmp(stage, "END") == 0 ? MS_ANN_END
		                                      : MS_ANN_MARK;
		a.device = (uint16_t)dint(m, d, "device", 0, &bad);
		a.t_ns = dint(m, d, "time_us", 0, &bad);
		if (a.t_ns > INT64_MAX / 1000 || a.t_ns < INT64_MIN / 1000)
			bad = 1; /* as for an entry's time_us: not a time in ns */
		else
			a.t_ns *= 1000;
		if (bad || d->type != MS_PK_DICT)
			return ms__diag_set(m->diag, MS_ERR_FORMAT, -1, (int64_t)i,
			                    "external_annotations[%u]: malformed", i);
		if (name && name->type == MS_PK_STR)
			MS_TRY(map_str(m, name->v.str, &a.name));
		a.call = ms_ann_call_of(a.kind, ms_symtab_get_str(m->syms, a.name)->s);
		if (ms_grow(&out->a, &out->cap, out->n + 1, sizeof(a)))
			return MS_ERR_NOMEM;
		out->a[out->n++] = a;
	}
	return MS_OK;
}

/* Annotations go before the first event of their device that is later than them. */
static int ann_cmp(const void *x, const void *y)
{
	const struct ms_annotation *a = x, *b = y;

	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	if (a->t_ns != b->t_ns)
		return a->t_ns < b->t_ns ? -1 : 1;
	return 0;
}

/*
 * Whether annotation a goes before event e: PyTorch records them apart from the trace, so an
 * annotation goes before the first event (from where the last one went) that is on a later
 * device, or on its own at the same time or later.
 */
static inline int ann_before(const struct ms_annotation *a, const struct ms_event *e)
{
	return a->device < e->device || (a->device == e->device && a->t_ns <= e->t_ns);
}

/* What the snapshot's fields say about the release that wrote it (parse/torch_release.h). */
static void layout_of(const struct ms_snapmap *m, const struct ms_pk_val *root,
                      const struct ms_pk_val *segs, struct ms_snapshot_layout *l)
{
	const struct ms_pk_val *x;

	memset(l, 0, sizeof(*l));
	l->bare_list = root->type == MS_PK_LIST;
	l->has_entries = m->n_events > 0 || m->n_skipped > 0;
	l->time_us = (m->keys_seen >> K_TIME_US) & 1;
	l->compile_context = (m->keys_seen >> K_COMPILE_CONTEXT) & 1;
	l->user_metadata = (m->keys_seen >> K_USER_METADATA) & 1;
	l->pool_id = (m->keys_seen >> K_POOL_ID) & 1;
	l->internal_metadata = (m->keys_seen >> K_INTERNAL_METADATA) & 1;
	l->user_defined = m->user_defined;
	l->annotate = m->annotate;
	if (root->type == MS_PK_DICT) {
		x = dget(m, root, "allocator_settings");
		l->settings = x != NULL;
		l->graph_reuse = x && x->type == MS_PK_DICT &&
		                 dget(m, x, "graph_capture_record_stream_reuse") != NULL;
		l->annotations = dget(m, root, "external_annotations") != NULL;
		l->host = dget(m, root, "host_segments") || dget(m, root, "host_traces");
	}
	/* the first segment's key order, and the first block's keys */
	for (uint32_t i = 0; segs && i < segs->v.o->n; i++) {
		const struct ms_pk_val *g = &segs->v.o->items[i], *bl, *b;
		int pool_at = -1, type_at = -1;
		if (g->type != MS_PK_DICT)
			continue;
		for (uint32_t k = 0; k + 1 < g->v.o->n; k += 2) {
			const struct ms_pk_val *key = &g->v.o->items[k];
			if (key->type != MS_PK_STR)
				continue;
			if (key->v.str == m->gkey[G_SEGMENT_POOL_ID])
				pool_at = (int)k;
			else if (key->v.str == m->gkey[G_SEGMENT_TYPE])
				type_at = (int)k;
		}
		l->npu = pool_at >= 0 && type_at >= 0 && pool_at < type_at;
		bl = dget(m, g, "blocks");
		if (!bl || bl->type != MS_PK_LIST || !bl->v.o->n)
			continue;
		b = &bl->v.o->items[0];
		l->has_blocks = 1;
		l->block_history = b->type == MS_PK_DICT && !dget(m, b, "address");
		break;
	}
}

ms_status ms__snapmap_finish(struct ms_snapmap *m, const struct ms_pk_val *root,
                             enum ms_input_kind kind, const struct ms_sink *sink,
                             struct ms_snapshot_info *info)
{
	const struct ms_pk_val *segs, *traces, *extra_devs = NULL;
	struct ms_meta meta;
	struct ms_device *devs = NULL;
	struct ann_vec anns = {NULL, 0, 0};
	struct ms_block *blocks = NULL;
	size_t bcap = 0, ai = 0, ei = 0, n;
	struct ms_event_pack_reader rd;
	struct ms_event batch[256];
	ms_status s = MS_OK;

	if (root->type == MS_PK_LIST) {
		segs = root; /* oldest form: a bare list of segments */
		traces = NULL;
		info->legacy = 1;
	} else if (root->type == MS_PK_DICT) {
		segs = dget(m, root, "segments");
		traces = dget(m, root, "device_traces");
		if (!segs && !traces)
			return ms__diag_set(
			        m->diag, MS_ERR_FORMAT, -1, -1,
			        "not a PyTorch memory snapshot (no 'segments' or 'device_traces')");
	} else {
		return ms__diag_set(m->diag, MS_ERR_FORMAT, -1, -1,
		                    "not a PyTorch memory snapshot (top level is not a dict)");
	}
	if (segs && segs->type != MS_PK_LIST)
		return ms__diag_set(m->diag, MS_ERR_FORMAT, -1, -1, "'segments' is not a list");
	if (traces && traces->type != MS_PK_LIST)
		return ms__diag_set(m->diag, MS_ERR_FORMAT, -1, -1,
		                    "'device_traces' is not a list");
	/* traces the stream hook did not see (another layout, JSON): map them now */
	for (uint32_t d = 0; traces && d < traces->v.o->n; d++) {
		const struct ms_pk_val *l = &traces->v.o->items[d];
		if (l->type != MS_PK_LIST)
			return ms__diag_set(m->diag, MS_ERR_FORMAT, -1, -1,
			                    "device_traces[%u] is not a list", d);
		if (l->v.o->role)
			continue;
		for (uint32_t i = 0; i < l->v.o->n; i++)
			MS_TRY(ms__snapmap_entry(m, d, i, &l->v.o->items[i], -1));
	}
	if (traces && traces->v.o->n > m->n_devices_seen)
		m->n_devices_seen = traces->v.o->n;
	info->n_host_segments = info->n_host_traces = -1;
	if (root->type == MS_PK_DICT) {
		const struct ms_pk_val *hs = dget(m, root, "host_segments");
		const struct ms_pk_val *ht = dget(m, root, "host_traces");
		if (hs && hs->type == MS_PK_LIST)
			info->n_host_segments = hs->v.o->n;
		if (ht && ht->type == MS_PK_LIST) {
			/* a list of entries, or (like device_traces) a list of lists of them */
			info->n_host_traces = 0;
			for (uint32_t i = 0; i < ht->v.o->n; i++)
				info->n_host_traces += ht->v.o->items[i].type == MS_PK_LIST
				                               ? ht->v.o->items[i].v.o->n
				                               : 1;
		}
	}
	if (m->n_skipped)
		ms__diag_warn(
		        m->diag,
		        "%llu trace entries skipped: their actions (%s) are no allocator event "
		        "memsnap replays; event numbers count the entries kept",
		        (unsigned long long)m->n_skipped, m->skipped);

	memset(&meta, 0, sizeof(meta));
	meta.input_kind = (uint8_t)kind;
	meta.producer = "torch";
	meta.producer_version = "";
	meta.torch_version = "";
	{
		struct ms_snapshot_layout l;
		layout_of(m, root, segs, &l);
		/* memsnap's own JSON writes each event's pool where it is known, whatever release
		   recorded the events: no sign of PyTorch 2.12 there */
		if (root->type == MS_PK_DICT && dget(m, root, "memsnap"))
			l.pool_id = 0;
		meta.layout_release = ms_snapshot_torch_range(&l, m->release, sizeof(m->release));
		/* an empty list has no fields to tell a release by */
		if (l.bare_list && (!segs || !segs->v.o->n))
			meta.layout_release = "";
		if (l.npu)
			meta.producer = "torch_npu";
	}
	meta.hostname = "";
	meta.limit_bytes = -1;
	meta.time_unit_ns = 1000;
	if (root->type == MS_PK_DICT) {
		const struct ms_pk_val *x = dget(m, root, "memsnap"); /* our own JSON's extras */
		MS_TRY(map_settings(m, dget(m, root, "allocator_settings"), &meta.settings));
		if (x && x->type == MS_PK_DICT) {
			const struct ms_pk_val *dl = dget(m, x, "devices");
			int bad = 0;
			meta.producer = dstr(m, x, "producer", meta.producer);
			meta.producer_version = dstr(m, x, "producer_version", "");
			meta.torch_version = dstr(m, x, "torch_version", "");
			meta.hostname = dstr(m, x, "hostname", "");
			meta.limit_bytes = dint(m, x, "limit_bytes", -1, &bad);
			info->cut_short = dint(m, x, "cut_short", 0, &bad) == 1;
			meta.start_t_ns = dint(m, x, "start_time_ns", 0, &bad);
			if (dl && dl->type == MS_PK_LIST && dl->v.o->n > m->n_devices_seen)
				m->n_devices_seen = dl->v.o->n;
			extra_devs = dl && dl->type == MS_PK_LIST ? dl : NULL;
		}
		if ((s = map_annotations(m, dget(m, root, "external_annotations"), &anns)))
			goto out;
	} else {
		MS_TRY(map_settings(m, NULL, &meta.settings));
	}
	if (!meta.settings.present)
		meta.settings.expandable_seen = m->mapped || any_expandable(m, segs);
	if (m->n_devices_seen) {
		devs = ms_calloc(m->n_devices_seen, sizeof(*devs));
		if (!devs) {
			s = MS_ERR_NOMEM;
			goto out;
		}
		for (uint32_t i = 0; i < m->n_devices_seen; i++) {
			int bad = 0;
			devs[i].index = i;
			devs[i].name = "";
			if (extra_devs && i < extra_devs->v.o->n) {
				const struct ms_pk_val *dd = &extra_devs->v.o->items[i];
				devs[i].index = (uint32_t)dint(m, dd, "index", i, &bad);
				devs[i].name = dstr(m, dd, "name", "");
				devs[i].total_memory =
				        (uint64_t)dint(m, dd, "total_memory", 0, &bad);
			}
		}
	}
	meta.n_devices = m->n_devices_seen;
	meta.devices = devs;
	if (m->n_events && !meta.start_t_ns)
		meta.start_t_ns = m->first_t_ns;
	if (anns.n)
		qsort(anns.a, anns.n, sizeof(*anns.a), ann_cmp);

	if (sink->begin && (s = sink->begin(sink->ctx, &meta, m->syms)))
		goto out;
	/* each batch unpacked in runs: the events up to the next annotation's place, in one call */
	ms_event_pack_read_begin(&rd, &m->events);
	while ((n = ms_event_pack_read(&rd, batch, sizeof(batch) / sizeof(batch[0])))) {
		size_t j = 0, k = ai < anns.n ? 0 : n;
		while (j < n) {
			while (k < n && !ann_before(&anns.a[ai], &batch[k]))
				k++;
			if ((s = ms_sink_events(sink, batch + j, k - j)))
				goto out;
			ei += k - j;
			j = k;
			while (k < n && ai < anns.n && ann_before(&anns.a[ai], &batch[k])) {
				anns.a[ai].event_index = ei;
				if (sink->annotation &&
				    (s = sink->annotation(sink->ctx, &anns.a[ai])))
					goto out;
				ai++;
			}
			if (ai == anns.n)
				k = n;
		}
	}
	for (; ai < anns.n; ai++) {
		anns.a[ai].event_index = m->n_events;
		if (sink->annotation && (s = sink->annotation(sink->ctx, &anns.a[ai])))
			goto out;
	}
	for (uint32_t i = 0; segs && i < segs->v.o->n; i++) {
		struct ms_segment g;
		if ((s = map_segment(m, i, &segs->v.o->items[i], &g, &blocks, &bcap, info)))
			goto out;
		if (sink->segment && (s = sink->segment(sink->ctx, &g, blocks)))
			goto out;
		info->n_segments++;
	}
	info->n_entries = m->n_events;
	info->n_annotations = anns.n;
	if (sink->end)
		s = sink->end(sink->ctx, m->n_events);
out:
	ms_free(devs);
	ms_free(anns.a);
	ms_free(blocks);
	return s;
}

static ms_status input_read(void *ctx, void *buf, size_t cap, size_t *got, struct ms_diag *diag)
{
	return ms_input_read(ctx, buf, cap, got, diag);
}

/*
 * Either form: a pickle pulled through rd (with the machine's limits, and the entries read by
 * read_entries if fast), or JSON.
 */
static ms_status read_snapshot(enum ms_file_kind kind, ms_pk_read_fn rd, void *rd_ctx,
                               const struct ms_mapped *whole, const struct ms_pickle_limits *lim,
                               int fast, struct ms_symtab *syms, const struct ms_sink *sink,
                               struct ms_snapshot_info *info, struct ms_diag *diag)
{
	struct ms_pickle *vm = NULL;
	struct ms_snapmap *m = NULL;
	struct ms_pk_val root;
	int ahead = 0;
	ms_status s;

	if ((s = ms_pickle_new(&vm)) || (s = ms__snapmap_new(vm, syms, diag, &m)))
		goto out;
	if (kind == MS_FILE_PICKLE) {
		if (lim)
			ms_pickle_set_limits(vm, lim);
		if ((s = stream_entries(m, fast)))
			goto out;
		if (whole && whole->data && whole->len) {
			ms_pickle_borrow_input(vm, whole->data, whole->len);
			m->whole = *whole;
			ahead = whole->len >= AHEAD_FROM;
		}
		if (ahead)
			ms_pages_ahead_start(AHEAD_PAGES);
		s = ms_pickle_run(vm, rd, rd_ctx, &root, diag);
		if (ahead)
			ms_pages_ahead_stop();
		info->pickle_protocol = ms_pickle_protocol(vm);
		info->n_fast_entries = m->n_read;
	} else {
		s = ms__json_snapshot_build(rd_ctx, vm, m, &root, diag);
	}
	if (!s)
		s = ms__snapmap_finish(m, &root,
		                       kind == MS_FILE_PICKLE ? MS_INPUT_PICKLE : MS_INPUT_JSON,
		                       sink, info);
out:
	if (s == MS_ERR_NOMEM && diag && !diag->msg[0])
		ms__diag_set(diag, s, -1, -1, "out of memory");
	ms_pickle_free(vm);
	ms__snapmap_free(m);
	return s;
}

ms_status ms__torch_pickle_read(ms_pk_read_fn rd, void *rd_ctx, const struct ms_mapped *whole,
                                const struct ms_pickle_limits *lim, int fast,
                                struct ms_symtab *syms, const struct ms_sink *sink,
                                struct ms_snapshot_info *info, struct ms_diag *diag)
{
	return read_snapshot(MS_FILE_PICKLE, rd, rd_ctx, whole, lim, fast, syms, sink, info, diag);
}

ms_status ms_torch_snapshot_read(struct ms_input *in, struct ms_symtab *syms,
                                 const struct ms_sink *sink, struct ms_snapshot_info *info,
                                 struct ms_diag *diag)
{
	struct ms_snapshot_info tmp;
	enum ms_file_kind kind = ms_input_kind(in);

	if (!info)
		info = &tmp;
	memset(info, 0, sizeof(*info));
	if (kind != MS_FILE_PICKLE && kind != MS_FILE_JSON)
		return ms__diag_set(diag, MS_ERR_FORMAT, 0, -1,
		                    "not a PyTorch snapshot (neither a pickle nor JSON)");
	if (kind == MS_FILE_PICKLE) {
		/* a plain file is read in place, mapped: no copy into the unpickler's window */
		struct ms_mapped whole;
		ms_status s = ms_input_map_plain(in, &whole, diag);
		if (!s)
			s = read_snapshot(kind, input_read, in, &whole, NULL, 1, syms, sink, info,
			                  diag);
		ms_input_unmap(&whole);
		return s;
	}
	return read_snapshot(kind, input_read, in, NULL, NULL, 1, syms, sink, info, diag);
}
