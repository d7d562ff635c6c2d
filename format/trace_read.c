/*
 * Decodes .zst traces: header and version gate, frame walk (or index seek),
 * msgpack records to sink callbacks; unknown optional records are skipped.
 */
#include "format/trace_read.h"

#include <msgpack.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "common/alloc.h"
#include "common/arena.h"
#include "common/bytes.h"
#include "common/mpk.h"
#include "common/status.h"
#include "memsnap/format.h"

/*
 * Frames that claim more content are refused. msgpack-c turns each input byte into at most one
 * 24-byte object, so this also bounds the zone a hostile frame can make it allocate.
 */
#define MAX_FRAME_CONTENT (32u << 20)

struct rd {
	const unsigned char *data;
	size_t len;
	struct ms_read_opts o;
	struct ms_symtab *syms;
	const struct ms_sink *sink;
	struct ms_zst_info info;
	struct ms_diag *diag;
	ZSTD_DCtx *dctx;
	unsigned char *frame;
	size_t frame_cap;
	/* records of one frame are decoded into this zone, cleared per frame (not per record) */
	msgpack_zone zone;
	int zone_ok;
	msgpack_object obj;
	int64_t frame_off; /* offset of the frame being decoded */
	/* file id -> symtab id */
	uint32_t *map_str, *map_frame, *map_stack;
	size_t n_str, cap_str, n_frame, cap_frame, n_stack, cap_stack;
	uint64_t *streams;
	size_t n_streams, cap_streams;
	uint32_t *tmp;
	size_t cap_tmp;
	/* META */
	struct ms_arena arena;
	struct ms_meta meta;
	struct ms_device *devices;
	int have_meta, begun, in_trailer, preread, meta_from_trailer;
	uint64_t time_unit;
	int64_t t_lim; /* INT64_MAX / time_unit: |t| beyond it is no time in ns */
	/* delta state */
	int64_t t;
	uint64_t addr, size, stream_idx;
	uint16_t device;
	uint16_t pool;         /* the previous event's, MS_POOL_UNKNOWN at a frame's start */
	struct ms_u64map live; /* this frame's allocs: addr -> size, for sizes given as true */
	uint64_t ring[MS_ADDR_RING]; /* addresses of this frame's last events */
	uint64_t frame_seq;
	/* segment being assembled */
	struct ms_segment seg;
	struct ms_block *blocks;
	size_t n_blocks, cap_blocks;
	int in_segment;
	uint64_t blk_addr;
	/* index from the trailer */
	uint64_t *index;
	size_t n_index;
};

int ms_zst_sniff(const void *data, size_t len)
{
	const unsigned char *p = data;

	return len >= 12 && ms_load_le32(p) == MS_HEADER_FRAME_MAGIC &&
	       memcmp(p + 8, MS_HEADER_MAGIC, 4) == 0;
}

#define BADREC(r, what)                                                                     \
	ms__diag_set((r)->diag, MS_ERR_FORMAT, (r)->frame_off, (int64_t)(r)->info.n_events, \
	             "corrupt %s record in frame at offset %lld (event %llu)", what,        \
	             (long long)(r)->frame_off, (unsigned long long)(r)->info.n_events)

/*
 * r->t += dt (the file's time unit), wrapping as unsigned arithmetic does (a corrupt delta is
 * caught where the time is used: in_time) rather than overflowing.
 */
static inline void add_time(struct rd *r, int64_t dt)
{
	r->t = (int64_t)((uint64_t)r->t + (uint64_t)dt);
}

/* Whether r->t is a time int64 holds in ns (so that r->t * time_unit does not overflow). */
static inline int in_time(const struct rd *r)
{
	return r->t <= r->t_lim && r->t >= -r->t_lim;
}

static ms_status parse_meta(struct rd *r, const msgpack_object *map)
{
	struct ms_meta *m = &r->meta;
	const msgpack_object *v, *st;
	int b = 0;
	uint32_t n;
	const char *s;

	if (!map || map->type != MSGPACK_OBJECT_MAP)
		return BADREC(r, "META");
#define STRKEY(field, key)                                   \
	s = ms_mpk_str(ms_mpk_map_get(map, key), &n, &b);    \
	if (!(m->field = ms_arena_strndup(&r->arena, s, n))) \
		return MS_ERR_NOMEM;
	STRKEY(producer, "producer");
	STRKEY(producer_version, "producer_version");
	STRKEY(torch_version, "torch_version");
	STRKEY(hostname, "hostname");
	m->start_t_ns = ms_mpk_i64(ms_mpk_map_get(map, "start_time_ns"), 0, &b);
	m->limit_bytes = ms_mpk_i64(ms_mpk_map_get(map, "limit_bytes"), -1, &b);
	r->time_unit = ms_mpk_u64(ms_mpk_map_get(map, "time_unit_ns"), 1, &b);
	if (r->time_unit == 0 || r->time_unit > 1000000000ULL)
		b = 1;
	else
		r->t_lim = INT64_MAX / (int64_t)r->time_unit;
	v = ms_mpk_map_get(map, "devices");
	if (v) {
		if (v->type != MSGPACK_OBJECT_ARRAY || v->via.array.size > 65536)
			return BADREC(r, "META");
		m->n_devices = v->via.array.size;
		r->devices = ms_arena_alloc(&r->arena, sizeof(*r->devices) * (m->n_devices + 1));
		if (!r->devices)
			return MS_ERR_NOMEM;
		for (uint32_t i = 0; i < m->n_devices; i++) {
			const msgpack_object *d = &v->via.array.ptr[i];
			r->devices[i].index =
			        (uint32_t)ms_mpk_u64(ms_mpk_map_get(d, "index"), i, &b);
			r->devices[i].total_memory =
			        ms_mpk_u64(ms_mpk_map_get(d, "total_memory"), 0, &b);
			s = ms_mpk_str(ms_mpk_map_get(d, "name"), &n, &b);
			if (!(r->devices[i].name = ms_arena_strndup(&r->arena, s, n)))
				return MS_ERR_NOMEM;
		}
		m->devices = r->devices;
	}
	st = ms_mpk_map_get(map, "settings");
	if (st) {
		struct ms_settings *x = &m->settings;
		x->present = 1;
		s = ms_mpk_str(ms_mpk_map_get(st, "alloc_conf"), &n, &b);
		if (!(x->alloc_conf = ms_arena_strndup(&r->arena, s, n)))
			return MS_ERR_NOMEM;
		x->max_split_size = ms_mpk_i64(ms_mpk_map_get(st, "max_split_size"), -1, &b);
		x->garbage_collection_threshold =
		        ms_mpk_f64(ms_mpk_map_get(st, "garbage_collection_threshold"), 0, &b);
		x->expandable_segments =
		        (uint8_t)ms_mpk_bool(ms_mpk_map_get(st, "expandable_segments"), 0, &b);
		x->release_lock_on_cudamalloc = (uint8_t)ms_mpk_bool(
		        ms_mpk_map_get(st, "release_lock_on_cudamalloc"), 0, &b);
		x->pinned_use_cuda_host_register = (uint8_t)ms_mpk_bool(
		        ms_mpk_map_get(st, "pinned_use_cuda_host_register"), 0, &b);
		x->graph_capture_record_stream_reuse = (uint8_t)ms_mpk_bool(
		        ms_mpk_map_get(st, "graph_capture_record_stream_reuse"), 0, &b);
		x->pinned_num_register_threads =
		        ms_mpk_i64(ms_mpk_map_get(st, "pinned_num_register_threads"), 1, &b);
		v = ms_mpk_map_get(st, "roundup_power2_divisions");
		if (v) {
			if (v->type != MSGPACK_OBJECT_ARRAY)
				b = 1;
			else
				for (uint32_t i = 0; i < v->via.array.size && i < 16; i++)
					x->roundup_power2_divisions[i] =
					        (uint32_t)ms_mpk_u64(&v->via.array.ptr[i], 0, &b);
		}
	} else {
		m->settings.alloc_conf = "";
		m->settings.max_split_size = -1;
		m->settings.expandable_seen = (uint8_t)ms_mpk_bool(
		        ms_mpk_map_get(map, "expandable_segments_seen"), 0, &b);
	}
	if (b)
		return BADREC(r, "META");
	m->input_kind = MS_INPUT_ZST;
	m->time_unit_ns = (uint32_t)r->time_unit;
	m->format_major = r->info.major;
	m->format_minor = r->info.minor;
	r->have_meta = 1;
	return MS_OK;
}

/* Map a file id (kind: a table) to the symtab id; 0 maps to 0. */
static int map_id(const uint32_t *map, size_t n, uint64_t id, uint32_t *out)
{
	if (id == 0) {
		*out = 0;
		return 0;
	}
	if (id >= n)
		return -1;
	*out = map[id];
	return 0;
}

static ms_status def_record(struct rd *r, unsigned type, const msgpack_object *a)
{
	int b = 0;
	uint64_t id = ms_mpk_u64(ms_mpk_field(a, 1), 0, &b);
	uint32_t sid;
	ms_status s;

	if (b || id == 0)
		return BADREC(r, "definition");
	switch (type) {
	case MS_REC_STRING: {
		uint32_t n;
		const char *p = ms_mpk_str(ms_mpk_field(a, 2), &n, &b);
		if (b)
			return BADREC(r, "STRING");
		if (id < r->n_str)
			return MS_OK; /* repeated in the trailer */
		if (id != r->n_str)
			return BADREC(r, "STRING (id out of order)");
		if ((s = ms_symtab_str(r->syms, p, n, &sid)))
			return s;
		if (ms_grow(&r->map_str, &r->cap_str, r->n_str + 1, sizeof(uint32_t)))
			return MS_ERR_NOMEM;
		r->map_str[r->n_str++] = sid;
		return MS_OK;
	}
	case MS_REC_FRAMEDEF: {
		struct ms_frame f;
		uint64_t name = ms_mpk_u64(ms_mpk_field(a, 2), 0, &b);
		uint64_t file = ms_mpk_u64(ms_mpk_field(a, 3), 0, &b);
		uint64_t line = ms_mpk_u64(ms_mpk_field(a, 4), 0, &b);
		if (b || line > UINT32_MAX || map_id(r->map_str, r->n_str, name, &f.name) ||
		    map_id(r->map_str, r->n_str, file, &f.file))
			return BADREC(r, "FRAMEDEF");
		f.line = (uint32_t)line;
		if (id < r->n_frame)
			return MS_OK;
		if (id != r->n_frame)
			return BADREC(r, "FRAMEDEF (id out of order)");
		if ((s = ms_symtab_frame(r->syms, &f, &sid)))
			return s;
		if (ms_grow(&r->map_frame, &r->cap_frame, r->n_frame + 1, sizeof(uint32_t)))
			return MS_ERR_NOMEM;
		r->map_frame[r->n_frame++] = sid;
		return MS_OK;
	}
	case MS_REC_STACK: {
		const msgpack_object *fr = ms_mpk_field(a, 2);
		uint32_t n;
		if (!fr || fr->type != MSGPACK_OBJECT_ARRAY)
			return BADREC(r, "STACK");
		if (id < r->n_stack)
			return MS_OK;
		if (id != r->n_stack)
			return BADREC(r, "STACK (id out of order)");
		n = fr->via.array.size;
		if (ms_grow(&r->tmp, &r->cap_tmp, n + 1, sizeof(uint32_t)))
			return MS_ERR_NOMEM;
		for (uint32_t i = 0; i < n; i++) {
			uint64_t fid = ms_mpk_u64(&fr->via.array.ptr[i], 0, &b);
			if (b || fid == 0 || map_id(r->map_frame, r->n_frame, fid, &r->tmp[i]))
				return BADREC(r, "STACK");
		}
		if ((s = ms_symtab_stack(r->syms, r->tmp, n, &sid)))
			return s;
		if (ms_grow(&r->map_stack, &r->cap_stack, r->n_stack + 1, sizeof(uint32_t)))
			return MS_ERR_NOMEM;
		r->map_stack[r->n_stack++] = sid;
		return MS_OK;
	}
	case MS_REC_STREAM: {
		uint64_t h = ms_mpk_u64(ms_mpk_field(a, 2), 0, &b);
		if (b)
			return BADREC(r, "STREAM");
		if (id < r->n_streams)
			return MS_OK;
		if (id != r->n_streams)
			return BADREC(r, "STREAM (index out of order)");
		if (ms_grow(&r->streams, &r->cap_streams, r->n_streams + 1, sizeof(uint64_t)))
			return MS_ERR_NOMEM;
		r->streams[r->n_streams++] = h;
		return MS_OK;
	}
	}
	return MS_OK;
}

static ms_status begin(struct rd *r)
{
	if (r->begun)
		return MS_OK;
	if (!r->have_meta)
		return ms__diag_set(r->diag, MS_ERR_FORMAT, r->frame_off, (int64_t)r->info.n_events,
		                    "record before META in frame at offset %lld",
		                    (long long)r->frame_off);
	r->begun = 1;
	return r->sink->begin ? r->sink->begin(r->sink->ctx, &r->meta, r->syms) : MS_OK;
}

static int in_window(const struct rd *r)
{
	return r->info.n_events >= r->o.from && r->info.n_events < r->o.to;
}

/*
 * The fields of an EVENT record, however decoded: kind 0 missing or nil, 1 an integer >= 0,
 * 2 a negative integer, 3 anything else (a malformed field), 4 true (size field only),
 * 5 a one-integer array [k] (daddr field only).
 */
#define EVF_MAX 12
struct evf {
	uint8_t kind[EVF_MAX];
	uint64_t u[EVF_MAX];
};

static uint64_t evf_u64(const struct evf *f, int i, uint64_t def, int *bad)
{
	if (f->kind[i] == 0)
		return def;
	if (f->kind[i] != 1)
		*bad = 1;
	return f->u[i];
}

static int64_t evf_i64(const struct evf *f, int i, int *bad)
{
	if (f->kind[i] == 0)
		return 0;
	if (f->kind[i] == 3 || (f->kind[i] == 1 && f->u[i] > INT64_MAX))
		*bad = 1;
	return (int64_t)f->u[i];
}

static void evf_from_object(const msgpack_object *a, struct evf *f)
{
	for (uint32_t i = 0; i < EVF_MAX; i++) {
		const msgpack_object *o = ms_mpk_field(a, i);
		f->u[i] = 0;
		if (!o)
			f->kind[i] = 0;
		else if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
			f->kind[i] = 1, f->u[i] = o->via.u64;
		else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
			f->kind[i] = 2, f->u[i] = (uint64_t)o->via.i64;
		else if (o->type == MSGPACK_OBJECT_BOOLEAN && o->via.boolean)
			f->kind[i] = 4;
		else if (o->type == MSGPACK_OBJECT_ARRAY && o->via.array.size == 1 &&
		         o->via.array.ptr[0].type == MSGPACK_OBJECT_POSITIVE_INTEGER)
			f->kind[i] = 5, f->u[i] = o->via.array.ptr[0].via.u64;
		else
			f->kind[i] = 3;
	}
}

/*
 * The hot path: an EVENT record is an array of integers and nils, decoded here directly.
 * msgpack-c's unpacker builds an object per record, which caps decoding near 16 M events/s
 * (README: Dependencies). Returns 1 and advances *pos when the record was decoded, 0 when it
 * is something else (msgpack-c then decodes it, and reports any error).
 */
static int evf_fast(const unsigned char *p, size_t len, size_t *pos, unsigned *type, struct evf *f)
{
	size_t q = *pos;
	unsigned n, i;

	if (q + 2 > len || (p[q] & 0xf0) != 0x90 || p[q + 1] < MS_REC_EVENT ||
	    p[q + 1] > MS_REC_EVENT_LAST)
		return 0;
	n = p[q] & 0x0f;
	*type = p[q + 1];
	q += 2;
	for (i = 1; i < n; i++) {
		unsigned char c;
		uint64_t v = 0;
		int w = 0, k = 1;
		if (q >= len)
			return 0;
		c = p[q++];
		if (c <= 0x7f) {
			v = c;
		} else if (c >= 0xe0) {
			v = (uint64_t)(int64_t)(int8_t)c;
			k = 2;
		} else if (c == 0xc0) {
			k = 0;
		} else if (c == 0xc3) {
			k = 4;
		} else if (c == 0x91 && q < len &&
		           (p[q] <= 0x7f || (p[q] == 0xcc && q + 1 < len))) {
			k = 5; /* [k]: an address by age */
			v = p[q] <= 0x7f ? p[q] : p[q + 1];
			q += p[q] <= 0x7f ? 1 : 2;
		} else if (c >= 0xcc && c <= 0xcf) {
			w = 1 << (c - 0xcc);
		} else if (c >= 0xd0 && c <= 0xd3) {
			w = 1 << (c - 0xd0);
			k = -1; /* signed: sign decided below */
		} else {
			return 0;
		}
		if (w) {
			if (q + (size_t)w > len)
				return 0;
			for (int b = 0; b < w; b++)
				v = v << 8 | p[q + (size_t)b];
			q += (size_t)w;
			if (k == -1) {
				int shift = 64 - 8 * w;
				int64_t sv = shift ? (int64_t)(v << shift) >> shift : (int64_t)v;
				v = (uint64_t)sv;
				k = sv < 0 ? 2 : 1;
			}
		}
		if (i < EVF_MAX) {
			f->kind[i] = (uint8_t)k;
			f->u[i] = v;
		}
	}
	for (; i < EVF_MAX; i++)
		f->kind[i] = 0;
	*pos = q;
	return 1;
}

static ms_status event_record(struct rd *r, unsigned type, const struct evf *f)
{
	struct ms_event e;
	int b = 0;
	uint64_t v;

	MS_TRY(begin(r));
	e.action = (uint8_t)(type - MS_REC_EVENT);
	e.fwd_stack = 0;
	for (int i = 1; i < EVF_MAX; i++)
		if ((f->kind[i] == 4 && i != 3) || (f->kind[i] == 5 && i != 2))
			b = 1;
	add_time(r, evf_i64(f, 1, &b));
	if (f->kind[2] == 5) {
		if (f->u[2] >= MS_ADDR_RING || f->u[2] >= r->frame_seq)
			return BADREC(r, "EVENT (address age out of range)");
		r->addr = r->ring[(r->frame_seq - 1 - f->u[2]) % MS_ADDR_RING];
	} else {
		r->addr += (uint64_t)evf_i64(f, 2, &b);
	}
	r->ring[r->frame_seq++ % MS_ADDR_RING] = r->addr;
	if (f->kind[3] == 4) {
		/* the size this address was allocated with earlier in the frame */
		uint64_t *bs = ms_u64map_get(&r->live, r->addr);
		if (!bs)
			return BADREC(r, "EVENT (size of an unknown block)");
		r->size = *bs;
	} else if (f->kind[3]) {
		r->size = evf_u64(f, 3, 0, &b);
	}
	r->stream_idx = evf_u64(f, 4, r->stream_idx, &b);
	if (b || r->stream_idx >= r->n_streams)
		return BADREC(r, "EVENT");
	v = evf_u64(f, 5, 0, &b);
	if (map_id(r->map_stack, r->n_stack, v, &e.stack))
		return BADREC(r, "EVENT (unknown stack)");
	v = evf_u64(f, 6, r->device, &b);
	if (v > UINT16_MAX)
		b = 1;
	r->device = (uint16_t)v;
	v = evf_u64(f, 7, 0, &b);
	if (map_id(r->map_str, r->n_str, v, &e.user_metadata))
		b = 1;
	v = evf_u64(f, 8, 0, &b);
	if (map_id(r->map_str, r->n_str, v, &e.compile_context))
		b = 1;
	v = evf_u64(f, 9, 0, &b);
	if (b || v > 255)
		return BADREC(r, "EVENT");
	e.source = (uint8_t)v;
	v = evf_u64(f, 10, r->pool, &b);
	if (b || v > UINT16_MAX)
		return BADREC(r, "EVENT (bad pool)");
	r->pool = (uint16_t)v;
	e.pool = r->pool;
	v = evf_u64(f, 11, 0, &b); /* 1.5: forward_frames' stack */
	if (map_id(r->map_stack, r->n_stack, v, &e.fwd_stack))
		return BADREC(r, "EVENT (bad forward stack)");
	if (e.action == MS_ACT_ALLOC && r->addr != UINT64_MAX &&
	    ms_u64map_put(&r->live, r->addr, r->size))
		return MS_ERR_NOMEM;
	e.addr = r->addr;
	e.size = r->size;
	e.stream = r->streams[r->stream_idx];
	if (!in_time(r))
		return BADREC(r, "EVENT (time out of range)");
	e.t_ns = r->t * (int64_t)r->time_unit;
	e.device = r->device;
	if (in_window(r) && r->sink->event) {
		ms_status s = r->sink->event(r->sink->ctx, &e);
		if (s)
			return s;
	}
	r->info.n_events++;
	return MS_OK;
}

static ms_status annotation_record(struct rd *r, const msgpack_object *a)
{
	struct ms_annotation x;
	int b = 0;
	uint64_t name, dev;

	MS_TRY(begin(r));
	add_time(r, ms_mpk_i64(ms_mpk_field(a, 1), 0, &b));
	if (!in_time(r))
		b = 1;
	x.stage = (uint8_t)ms_mpk_u64(ms_mpk_field(a, 2), 0, &b);
	x.kind = (uint8_t)ms_mpk_u64(ms_mpk_field(a, 3), 0, &b);
	name = ms_mpk_u64(ms_mpk_field(a, 4), 0, &b);
	dev = ms_mpk_u64(ms_mpk_field(a, 5), 0, &b);
	if (b || dev > UINT16_MAX || map_id(r->map_str, r->n_str, name, &x.name))
		return BADREC(r, "ANNOTATION");
	x.device = (uint16_t)dev;
	x.call = ms_ann_call_of(x.kind, ms_symtab_get_str(r->syms, x.name)->s);
	x.t_ns = r->t * (int64_t)r->time_unit;
	x.event_index = r->info.n_events;
	if (in_window(r) && r->sink->annotation)
		return r->sink->annotation(r->sink->ctx, &x);
	return MS_OK;
}

static ms_status finish_segment(struct rd *r)
{
	ms_status s = MS_OK;

	r->in_segment = 0;
	if (r->sink->segment)
		s = r->sink->segment(r->sink->ctx, &r->seg, r->blocks);
	return s;
}

static ms_status segment_record(struct rd *r, const msgpack_object *a)
{
	struct ms_segment *g = &r->seg;
	int b = 0;
	uint64_t v, flags;

	MS_TRY(begin(r));
	if (r->in_segment)
		return BADREC(r, "SEGMENT (previous one lacks blocks)");
	memset(g, 0, sizeof(*g));
	v = ms_mpk_u64(ms_mpk_field(a, 1), 0, &b);
	g->addr = ms_mpk_u64(ms_mpk_field(a, 2), 0, &b);
	g->total_size = ms_mpk_u64(ms_mpk_field(a, 3), 0, &b);
	g->stream = ms_mpk_u64(ms_mpk_field(a, 4), 0, &b);
	flags = ms_mpk_u64(ms_mpk_field(a, 5), 0, &b);
	g->device = (uint16_t)ms_mpk_u64(ms_mpk_field(a, 6), 0, &b);
	if (map_id(r->map_stack, r->n_stack, ms_mpk_u64(ms_mpk_field(a, 7), 0, &b), &g->stack))
		b = 1;
	g->pool_id[0] = ms_mpk_u64(ms_mpk_field(a, 8), 0, &b);
	g->pool_id[1] = ms_mpk_u64(ms_mpk_field(a, 9), 0, &b);
	g->allocated_size = ms_mpk_u64(ms_mpk_field(a, 10), 0, &b);
	g->active_size = ms_mpk_u64(ms_mpk_field(a, 11), 0, &b);
	g->requested_size = ms_mpk_u64(ms_mpk_field(a, 12), 0, &b);
	if (b || v > UINT32_MAX)
		return BADREC(r, "SEGMENT");
	g->n_blocks = (uint32_t)v;
	g->is_small = (flags & MS_SEGF_SMALL) != 0;
	g->is_expandable = (flags & MS_SEGF_EXPANDABLE) != 0;
	r->n_blocks = 0;
	r->blk_addr = g->addr;
	r->in_segment = 1;
	if (g->n_blocks == 0)
		return finish_segment(r);
	return MS_OK;
}

static ms_status block_record(struct rd *r, const msgpack_object *a)
{
	struct ms_block *k;
	int b = 0;
	uint64_t st;

	if (!r->in_segment)
		return BADREC(r, "BLOCK (outside a segment)");
	/* grown as blocks arrive, never from the declared count: bounded by the input */
	if (ms_grow(&r->blocks, &r->cap_blocks, r->n_blocks + 1, sizeof(*r->blocks)))
		return MS_ERR_NOMEM;
	k = &r->blocks[r->n_blocks];
	k->addr = r->blk_addr;
	k->size = ms_mpk_u64(ms_mpk_field(a, 1), 0, &b);
	k->requested_size = ms_mpk_u64(ms_mpk_field(a, 2), 0, &b);
	st = ms_mpk_u64(ms_mpk_field(a, 3), 0, &b);
	if (map_id(r->map_stack, r->n_stack, ms_mpk_u64(ms_mpk_field(a, 4), 0, &b), &k->stack))
		b = 1;
	if (b || st > MS_BLOCK_ACTIVE_PENDING_FREE)
		return BADREC(r, "BLOCK");
	k->state = (uint8_t)st;
	r->blk_addr += k->size;
	if (++r->n_blocks == r->seg.n_blocks)
		return finish_segment(r);
	return MS_OK;
}

static ms_status end_record(struct rd *r, const msgpack_object *a)
{
	int b = 0;
	uint64_t n = ms_mpk_u64(ms_mpk_field(a, 1), 0, &b);
	const msgpack_object *by = ms_mpk_field(a, 2);

	if (b)
		return BADREC(r, "END");
	if (by && by->type == MSGPACK_OBJECT_ARRAY)
		for (uint32_t i = 0; i < by->via.array.size && i < MS_ACT_COUNT; i++)
			r->info.end_by_action[i] = ms_mpk_u64(&by->via.array.ptr[i], 0, &b);
	/* optional: 1 where the events came from a trace cut short (convert of one) */
	r->info.source_cut_short = ms_mpk_u64(ms_mpk_field(a, 4), 0, &b) == 1;
	b = 0;
	by = ms_mpk_field(a, 3); /* by_device, 1.2: device, events, raw events, ... */
	if (by && by->type == MSGPACK_OBJECT_ARRAY && by->via.array.size % 3 == 0) {
		r->info.has_end_devices = 1;
		r->info.n_end_devices = 0;
		for (uint32_t i = 0; i + 2 < by->via.array.size; i += 3) {
			struct ms_zst_device_count *dc;
			if (r->info.n_end_devices == 64) {
				r->info.more_end_devices = 1;
				break;
			}
			dc = &r->info.end_devices[r->info.n_end_devices++];
			dc->device = (uint32_t)ms_mpk_u64(&by->via.array.ptr[i], 0, &b);
			dc->events = ms_mpk_u64(&by->via.array.ptr[i + 1], 0, &b);
			dc->raw_events = ms_mpk_u64(&by->via.array.ptr[i + 2], 0, &b);
		}
	} else if (by) {
		b = 1;
	}
	if (b)
		return BADREC(r, "END");
	if (r->preread)
		return MS_OK; /* the trailer read ahead of the events: checked when reached */
	if (n != r->info.n_events)
		return ms__diag_set(r->diag, MS_ERR_FORMAT, r->frame_off, (int64_t)r->info.n_events,
		                    "END record counts %llu events but %llu were read",
		                    (unsigned long long)n, (unsigned long long)r->info.n_events);
	r->info.has_end = 1;
	return MS_OK;
}

static ms_status record(struct rd *r, const msgpack_object *a)
{
	int b = 0;
	uint64_t type;

	if (a->type != MSGPACK_OBJECT_ARRAY || a->via.array.size == 0)
		return BADREC(r, "non-array");
	type = ms_mpk_u64(ms_mpk_field(a, 0), 0, &b);
	if (b || type > MS_REC_OPTIONAL_MAX)
		return BADREC(r, "untyped");
	if (r->in_segment && type != MS_REC_BLOCK)
		return BADREC(r, "SEGMENT (missing blocks)");
	if (type >= MS_REC_EVENT && type <= MS_REC_EVENT_LAST) {
		struct evf f;
		if (r->in_trailer)
			return BADREC(r, "EVENT in trailer");
		evf_from_object(a, &f);
		return event_record(r, (unsigned)type, &f);
	}
	switch (type) {
	case MS_REC_META:
		if (r->have_meta && (r->in_trailer || r->meta_from_trailer))
			return MS_OK; /* the trailer's copy, or the first frame's after a seek */
		if (r->have_meta)
			return BADREC(r, "META (repeated)");
		r->meta_from_trailer = r->preread;
		return parse_meta(r, ms_mpk_field(a, 1));
	case MS_REC_FRAME: {
		uint64_t first = ms_mpk_u64(ms_mpk_field(a, 1), 0, &b);
		int64_t t = ms_mpk_i64(ms_mpk_field(a, 2), 0, &b);
		uint64_t addr = ms_mpk_u64(ms_mpk_field(a, 3), 0, &b);
		if (b)
			return BADREC(r, "FRAME");
		if (first != r->info.n_events)
			return ms__diag_set(
			        r->diag, MS_ERR_FORMAT, r->frame_off, (int64_t)r->info.n_events,
			        "frame at offset %lld starts at event %llu, expected %llu",
			        (long long)r->frame_off, (unsigned long long)first,
			        (unsigned long long)r->info.n_events);
		r->t = t;
		r->addr = addr;
		r->size = 0;
		r->stream_idx = 0;
		r->device = 0;
		r->pool = MS_POOL_UNKNOWN;
		r->frame_seq = 0;
		ms_u64map_clear(&r->live);
		return MS_OK;
	}
	case MS_REC_STRING:
	case MS_REC_FRAMEDEF:
	case MS_REC_STACK:
	case MS_REC_STREAM:
		return def_record(r, (unsigned)type, a);
	case MS_REC_SEGMENT:
		return segment_record(r, a);
	case MS_REC_BLOCK:
		return block_record(r, a);
	case MS_REC_END:
		return end_record(r, a);
	case MS_REC_INDEX: {
		const msgpack_object *e = ms_mpk_field(a, 1);
		if (!e || e->type != MSGPACK_OBJECT_ARRAY || e->via.array.size % 2)
			return BADREC(r, "INDEX");
		ms_free(r->index);
		r->n_index = 0;
		r->index = ms_malloc(sizeof(uint64_t) * (e->via.array.size + 1));
		if (!r->index)
			return MS_ERR_NOMEM;
		for (uint32_t i = 0; i < e->via.array.size; i++)
			r->index[i] = ms_mpk_u64(&e->via.array.ptr[i], 0, &b);
		if (b)
			return BADREC(r, "INDEX");
		r->n_index = e->via.array.size;
		return MS_OK;
	}
	case MS_REC_TRAILER:
		return MS_OK;
	case MS_REC_ANNOTATION:
		return annotation_record(r, a);
	case MS_REC_DROPPED: {
		int64_t dt = ms_mpk_i64(ms_mpk_field(a, 1), 0, &b);
		uint64_t n = ms_mpk_u64(ms_mpk_field(a, 2), 0, &b);
		if (b)
			return BADREC(r, "DROPPED");
		add_time(r, dt);
		if (!r->info.dropped_events)
			r->info.first_drop_event = r->info.n_events;
		r->info.dropped_events += n;
		return MS_OK;
	}
	}
	if (type <= MS_REC_MANDATORY_MAX)
		return ms__diag_set(r->diag, MS_ERR_VERSION, r->frame_off,
		                    (int64_t)r->info.n_events,
		                    "record type %u in frame at offset %lld needs a newer memsnap",
		                    (unsigned)type, (long long)r->frame_off);
	r->info.skipped_optional++;
	return MS_OK;
}

/*
 * Walk one msgpack value at p[pos..len) without building it, checking that every array and map
 * fits in the bytes that remain: msgpack-c allocates a container's slots from its declared
 * length before reading them, so a forged length would otherwise ask for gigabytes.
 * Sets *end and returns 0, or -1 when the value is malformed or truncated.
 */
static int mpk_check(const unsigned char *p, size_t len, size_t pos, size_t *end)
{
	uint64_t todo = 1; /* values still to read */

	while (todo) {
		unsigned char c;
		uint64_t n = 0, skip = 0;
		if (pos >= len)
			return -1;
		c = p[pos++];
		todo--;
		if (c <= 0x7f || c >= 0xe0 || (c >= 0xc0 && c <= 0xc3)) {
			/* fixint, nil, (never used), false, true */
		} else if (c >= 0x80 && c <= 0x8f) {
			n = 2ull * (c & 0x0f);
		} else if (c >= 0x90 && c <= 0x9f) {
			n = c & 0x0f;
		} else if (c >= 0xa0 && c <= 0xbf) {
			skip = c & 0x1f;
		} else {
			/* clang-format off */
			static const signed char w[] = {
				-1, -2, -4,          /* c4-c6 bin8/16/32: length bytes */
				-11, -12, -14,       /* c7-c9 ext8/16/32 */
				4, 8,                /* ca-cb float32/64 */
				1, 2, 4, 8,          /* cc-cf uint8..64 */
				1, 2, 4, 8,          /* d0-d3 int8..64 */
				2, 3, 5, 9, 17,      /* d4-d8 fixext1..16 (type byte + data) */
				-1, -2, -4,          /* d9-db str8/16/32 */
				-32, -34, -64, -66,  /* dc-dd array16/32, de-df map16/32 */
			};
			/* clang-format on */
			int k = w[c - 0xc4], lw;
			if (k > 0) {
				skip = (uint64_t)k;
			} else {
				int ext = 0, arr = 0, map = 0;
				k = -k;
				if (k >= 64)
					map = 1, k -= 62;
				else if (k >= 32)
					arr = 1, k -= 30;
				else if (k >= 10)
					ext = 1, k -= 10;
				lw = k;
				if (pos + (size_t)lw > len)
					return -1;
				for (int i = 0; i < lw; i++)
					n = n << 8 | p[pos + (size_t)i];
				pos += (size_t)lw;
				if (ext)
					skip = n + 1, n = 0; /* type byte + data */
				else if (!arr && !map)
					skip = n, n = 0;
				else if (map)
					n *= 2;
			}
		}
		if (skip > len - pos)
			return -1;
		pos += (size_t)skip;
		/* each value takes at least one byte: more than what is left cannot be */
		if (n > len - pos || todo + n > len - pos)
			return -1;
		todo += n;
	}
	*end = pos;
	return 0;
}

/* Decode one complete zstd frame at r->data + off of compressed size csize. */
static ms_status decode_frame(struct rd *r, size_t off, size_t csize)
{
	unsigned long long content = ZSTD_getFrameContentSize(r->data + off, csize);
	size_t n, pos = 0;
	int first = 1;

	r->frame_off = (int64_t)off;
	if (content == ZSTD_CONTENTSIZE_ERROR || content == ZSTD_CONTENTSIZE_UNKNOWN)
		return ms__diag_set(r->diag, MS_ERR_FORMAT, (int64_t)off, (int64_t)r->info.n_events,
		                    "zstd frame at offset %zu has no content size", off);
	if (content > MAX_FRAME_CONTENT)
		return ms__diag_set(r->diag, MS_ERR_LIMIT, (int64_t)off, (int64_t)r->info.n_events,
		                    "frame at offset %zu claims %llu bytes (limit %u)", off,
		                    content, MAX_FRAME_CONTENT);
	if (ms_grow(&r->frame, &r->frame_cap, (size_t)content + 1, 1))
		return MS_ERR_NOMEM;
	n = ZSTD_decompressDCtx(r->dctx, r->frame, r->frame_cap, r->data + off, csize);
	if (ZSTD_isError(n) || n != content)
		return ms__diag_set(r->diag, MS_ERR_COMPRESSION, (int64_t)off,
		                    (int64_t)r->info.n_events,
		                    "corrupt frame at offset %zu (event %llu): %s", off,
		                    (unsigned long long)r->info.n_events,
		                    ZSTD_isError(n) ? ZSTD_getErrorName(n) : "size mismatch");
	msgpack_zone_clear(&r->zone);
	while (pos < n) {
		struct evf f;
		unsigned et;
		size_t rec_end;
		msgpack_unpack_return ret;
		if (!first && !r->in_segment && !r->in_trailer &&
		    evf_fast(r->frame, n, &pos, &et, &f)) {
			ms_status s = event_record(r, et, &f);
			if (s)
				return s;
			continue;
		}
		if (mpk_check(r->frame, n, pos, &rec_end))
			ret = MSGPACK_UNPACK_PARSE_ERROR;
		else
			ret = msgpack_unpack((const char *)r->frame, rec_end, &pos, &r->zone,
			                     &r->obj);
		ms_status s;
		if (ret == MSGPACK_UNPACK_NOMEM_ERROR)
			return MS_ERR_NOMEM;
		if (ret != MSGPACK_UNPACK_SUCCESS && ret != MSGPACK_UNPACK_EXTRA_BYTES)
			return ms__diag_set(r->diag, MS_ERR_FORMAT, (int64_t)off,
			                    (int64_t)r->info.n_events,
			                    "corrupt record in frame at offset %zu (event %llu)",
			                    off, (unsigned long long)r->info.n_events);
		if (first) {
			/* a frame starts with FRAME (data) or TRAILER */
			const msgpack_object *a = &r->obj;
			int b = 0;
			uint64_t t = a->type == MSGPACK_OBJECT_ARRAY
			                     ? ms_mpk_u64(ms_mpk_field(a, 0), 999, &b)
			                     : 999;
			if (t == MS_REC_TRAILER)
				r->in_trailer = 1;
			else if (t != MS_REC_FRAME)
				return BADREC(r, "frame start");
			first = 0;
		}
		if ((s = record(r, &r->obj)))
			return s;
	}
	if (!r->in_trailer)
		r->info.n_frames++;
	return MS_OK;
}

static ms_status walk(struct rd *r, size_t off)
{
	while (off < r->len) {
		size_t rem = r->len - off;
		uint32_t magic;
		size_t csize;

		if (rem < 8) {
			r->info.truncated = 1;
			break;
		}
		magic = ms_load_le32(r->data + off);
		if ((magic & 0xFFFFFFF0U) == 0x184D2A50U) {
			uint64_t sz = ms_load_le32(r->data + off + 4);
			if (sz > rem - 8) {
				r->info.truncated = 1;
				break;
			}
			if (magic == MS_FOOTER_FRAME_MAGIC && sz >= MS_FOOTER_SIZE &&
			    memcmp(r->data + off + 8, MS_FOOTER_MAGIC, 4) == 0)
				r->info.has_footer = 1;
			off += 8 + (size_t)sz;
			continue;
		}
		csize = ZSTD_findFrameCompressedSize(r->data + off, rem);
		if (ZSTD_isError(csize)) {
			if (ZSTD_getErrorCode(csize) == ZSTD_error_srcSize_wrong) {
				r->info.truncated = 1;
				r->frame_off = (int64_t)off;
				break;
			}
			return ms__diag_set(
			        r->diag, MS_ERR_FORMAT, (int64_t)off, (int64_t)r->info.n_events,
			        "not a zstd frame at offset %zu (event %llu): %s", off,
			        (unsigned long long)r->info.n_events, ZSTD_getErrorName(csize));
		}
		MS_TRY(decode_frame(r, off, csize));
		off += csize;
		if (r->info.n_events >= r->o.to && !r->in_trailer && r->o.to != UINT64_MAX) {
			r->info.stopped = 1; /* window done: the rest is not needed */
			return MS_OK;
		}
	}
	return MS_OK;
}

static ms_status read_header(struct rd *r, size_t *off)
{
	const unsigned char *p = r->data;
	uint32_t psize, hsize;
	uint64_t flags;

	if (r->len < 8 + MS_HEADER_SIZE || !ms_zst_sniff(p, r->len))
		return ms__diag_set(r->diag, MS_ERR_FORMAT, 0, -1,
		                    r->len == 0 ? "empty file" : "not a memsnap trace (bad magic)");
	psize = ms_load_le32(p + 4);
	r->info.major = (uint16_t)(p[12] | p[13] << 8);
	r->info.minor = (uint16_t)(p[14] | p[15] << 8);
	hsize = ms_load_le32(p + 16);
	flags = ms_load_le64(p + 20);
	r->info.producer_version = ms_load_le32(p + 28);
	if (r->info.major > MS_FORMAT_MAJOR)
		return ms__diag_set(
		        r->diag, MS_ERR_VERSION, 12, -1,
		        "trace format %u.%u needs a newer memsnap (this one reads %u.x)",
		        r->info.major, r->info.minor, MS_FORMAT_MAJOR);
	if (r->info.major == 0 || psize < MS_HEADER_SIZE || hsize != psize || psize > r->len - 8)
		return ms__diag_set(r->diag, MS_ERR_FORMAT, 4, -1, "corrupt trace header");
	if (flags & MS_FLAGS_MUST_UNDERSTAND & ~MS_FLAGS_KNOWN)
		return ms__diag_set(r->diag, MS_ERR_VERSION, 20, -1,
		                    "trace uses features this memsnap does not know (flags 0x%llx)",
		                    (unsigned long long)flags);
	*off = 8 + psize;
	return MS_OK;
}

/*
 * With a footer, start at the frame holding event `from`: decode the trailer first (META,
 * every definition, the index), then jump. *off is left unchanged when it cannot seek.
 */
static ms_status seek(struct rd *r, size_t *off)
{
	const unsigned char *f;
	uint64_t toff, nev, start_ev = 0, start_off = 0;
	size_t csize;
	ms_status s;

	if (r->o.from == 0 || r->len < *off + 8 + MS_FOOTER_SIZE)
		return MS_OK;
	f = r->data + r->len - (8 + MS_FOOTER_SIZE);
	if (ms_load_le32(f) != MS_FOOTER_FRAME_MAGIC || ms_load_le32(f + 4) != MS_FOOTER_SIZE ||
	    memcmp(f + 8, MS_FOOTER_MAGIC, 4) != 0)
		return MS_OK;
	toff = ms_load_le64(f + 12);
	nev = ms_load_le64(f + 20);
	if (toff < *off || toff >= r->len - (8 + MS_FOOTER_SIZE))
		return MS_OK; /* a bad footer: fall back to walking every frame */
	csize = ZSTD_findFrameCompressedSize(r->data + toff, r->len - (8 + MS_FOOTER_SIZE) - toff);
	if (ZSTD_isError(csize))
		return MS_OK;
	r->preread = 1;
	s = decode_frame(r, (size_t)toff, csize);
	r->preread = 0;
	r->in_trailer = 0;
	if (s)
		return s;
	r->info.has_footer = 1;
	for (size_t i = 0; i + 1 < r->n_index; i += 2) {
		if (r->index[i] > r->o.from || r->index[i] > nev || r->index[i + 1] >= toff)
			break;
		if (i && (r->index[i] < r->index[i - 2] || r->index[i + 1] <= r->index[i - 1]))
			break; /* not increasing: ignore the rest */
		start_ev = r->index[i];
		start_off = r->index[i + 1];
	}
	if (start_off > *off) {
		r->info.n_events = start_ev;
		r->info.used_index = 1;
		*off = (size_t)start_off;
	}
	return MS_OK;
}

static void rd_release(struct rd *r)
{
	ZSTD_freeDCtx(r->dctx);
	if (r->zone_ok)
		msgpack_zone_destroy(&r->zone);
	ms_free(r->frame);
	ms_free(r->map_str);
	ms_free(r->map_frame);
	ms_free(r->map_stack);
	ms_free(r->streams);
	ms_free(r->tmp);
	ms_free(r->blocks);
	ms_free(r->index);
	ms_u64map_release(&r->live);
	ms_arena_release(&r->arena);
}

ms_status ms_trace_read_buffer(const void *data, size_t len, const struct ms_read_opts *opts,
                               struct ms_symtab *syms, const struct ms_sink *sink,
                               struct ms_zst_info *info, struct ms_diag *diag)
{
	struct rd r;
	size_t off = 0;
	ms_status s;

	memset(&r, 0, sizeof(r));
	r.pool = MS_POOL_UNKNOWN;
	r.data = data;
	r.len = len;
	r.o.to = UINT64_MAX;
	if (opts)
		r.o = *opts;
	r.syms = syms;
	r.sink = sink;
	r.diag = diag;
	r.time_unit = 1;
	r.t_lim = INT64_MAX;
	if (!msgpack_zone_init(&r.zone, 64 * 1024))
		return ms__diag_set(diag, MS_ERR_NOMEM, -1, -1, "out of memory");
	r.zone_ok = 1;
	if ((s = read_header(&r, &off)))
		goto out;
	r.dctx = ZSTD_createDCtx();
	if (!r.dctx || ms_grow(&r.map_str, &r.cap_str, 1, sizeof(uint32_t)) ||
	    ms_grow(&r.map_frame, &r.cap_frame, 1, sizeof(uint32_t)) ||
	    ms_grow(&r.map_stack, &r.cap_stack, 1, sizeof(uint32_t)) ||
	    ms_grow(&r.streams, &r.cap_streams, 1, sizeof(uint64_t))) {
		s = MS_ERR_NOMEM;
		goto out;
	}
	r.map_str[0] = r.map_frame[0] = r.map_stack[0] = 0;
	r.n_str = r.n_frame = r.n_stack = 1;
	r.streams[0] = 0;
	r.n_streams = 1;
	if ((s = seek(&r, &off)))
		goto out;
	if ((s = walk(&r, off)))
		goto out;
	if (!r.have_meta && r.info.n_events == 0 && (r.info.truncated || r.info.n_frames == 0)) {
		/* cut off before the first frame was complete: an empty trace, with a warning */
		r.meta.producer = r.meta.producer_version = r.meta.torch_version = r.meta.hostname =
		        "";
		r.meta.settings.alloc_conf = "";
		r.meta.settings.max_split_size = -1;
		r.meta.limit_bytes = -1;
		r.meta.format_major = r.info.major;
		r.meta.format_minor = r.info.minor;
		r.have_meta = 1;
	}
	if ((s = begin(&r)))
		goto out;
	if (r.in_segment && !r.info.stopped) {
		r.info.truncated = 1;
		r.seg.n_blocks = (uint32_t)r.n_blocks;
		if ((s = finish_segment(&r)))
			goto out;
	}
	if (r.info.truncated)
		ms__diag_warn(diag,
		              "truncated frame at offset %lld (event %llu); %llu events readable",
		              (long long)r.frame_off, (unsigned long long)r.info.n_events,
		              (unsigned long long)r.info.n_events);
	else if (!r.info.has_end && !r.info.stopped)
		ms__diag_warn(diag, "no END record: trace may be truncated; %llu events readable",
		              (unsigned long long)r.info.n_events);
	if (r.info.dropped_events)
		ms__diag_warn(diag,
		              "the recorder dropped %llu events (first before event %llu): "
		              "replay may diverge from there",
		              (unsigned long long)r.info.dropped_events,
		              (unsigned long long)r.info.first_drop_event);
	if (sink->end)
		s = sink->end(sink->ctx, r.info.n_events);
out:
	if (s == MS_ERR_NOMEM && diag && !diag->msg[0])
		ms__diag_set(diag, s, -1, -1, "out of memory");
	if (info)
		*info = r.info;
	rd_release(&r);
	return s;
}
