/* Writes the header frame, zstd frames of msgpack records, and the trailer/footer on close. */
#include "format/trace_write.h"

#include <msgpack.h>
#include <string.h>
#include <zstd.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/bytes.h"
#include "common/hash.h"
#include "common/status.h"
#include "memsnap/format.h"

struct ms_writer {
	FILE *f;
	const struct ms_symtab *syms;
	struct ms_writer_opts o;
	ZSTD_CCtx *cctx;
	struct ms_buf raw;  /* records of the current frame */
	struct ms_buf comp; /* compressed output */
	msgpack_packer pk;
	int ok;          /* 0 after a write error: later calls fail fast */
	uint64_t offset; /* bytes written to f */
	uint64_t n_events, by_action[MS_ACT_COUNT];
	int source_cut_short; /* END's optional fifth field */
	/* events by device, [2 * device] PyTorch's allocator's, [2 * device + 1] raw CUDA calls */
	uint64_t *by_device;
	size_t cap_by_device;
	uint32_t strs_out, frames_out, stacks_out; /* definitions written: ids below these */
	struct ms_u64map streams;                  /* handle -> index */
	struct ms_u64map blocks;                   /* this frame's allocs: addr -> size */
	struct ms_u64map seen;                     /* this frame's addresses: addr -> last event */
	uint64_t frame_seq;                        /* events written in this frame */
	uint64_t *stream_handles;                  /* index -> handle; [0] = 0 */
	size_t n_streams, cap_streams;
	uint64_t *index; /* first_event, offset pairs */
	size_t n_index, cap_index;
	int frame_open;
	/* delta state; t in ticks of time_unit_ns */
	int64_t t;
	uint64_t addr, size, stream_idx;
	uint16_t device;
	uint16_t pool;          /* the previous event's, MS_POOL_UNKNOWN at a frame's start */
	struct ms_buf meta_rec; /* packed META record, repeated in the trailer */
};

static int pk_write(void *data, const char *buf, size_t len)
{
	struct ms_writer *w = data;

	return ms_buf_append(&w->raw, buf, len) == MS_OK ? 0 : -1;
}

static ms_status write_bytes(struct ms_writer *w, const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, w->f) != n) {
		w->ok = 0;
		return MS_ERR_IO;
	}
	w->offset += n;
	return MS_OK;
}

ms_status ms_writer_open(FILE *f, const struct ms_writer_opts *o, const struct ms_symtab *syms,
                         struct ms_writer **out, struct ms_diag *diag)
{
	struct ms_writer *w = ms_calloc(1, sizeof(*w));
	unsigned char hdr[8 + MS_HEADER_SIZE];
	ms_status s;

	if (!w)
		return ms__diag_set(diag, MS_ERR_NOMEM, -1, -1, "out of memory");
	w->f = f;
	w->syms = syms;
	w->ok = 1;
	if (o)
		w->o = *o;
	if (w->o.level == 0)
		w->o.level = 3;
	if (w->o.frame_bytes == 0)
		w->o.frame_bytes = 1 << 20;
	if (!w->o.producer)
		w->o.producer = "memsnap";
	if (!w->o.source)
		w->o.source = "";
	w->strs_out = w->frames_out = w->stacks_out = 1;
	w->cctx = ZSTD_createCCtx();
	if (!w->cctx || ms_grow(&w->stream_handles, &w->cap_streams, 1, sizeof(uint64_t)) ||
	    ms_u64map_put(&w->streams, 0, 0)) {
		ms_writer_free(w);
		return ms__diag_set(diag, MS_ERR_NOMEM, -1, -1, "out of memory");
	}
	w->stream_handles[0] = 0;
	w->n_streams = 1;
	if (ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, w->o.level)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1))) {
		ms_writer_free(w);
		return ms__diag_set(diag, MS_ERR_COMPRESSION, -1, -1, "bad zstd level %d",
		                    w->o.level);
	}
	msgpack_packer_init(&w->pk, w, pk_write);

	ms_store_le32(hdr, MS_HEADER_FRAME_MAGIC);
	ms_store_le32(hdr + 4, MS_HEADER_SIZE);
	memcpy(hdr + 8, MS_HEADER_MAGIC, 4);
	hdr[12] = MS_FORMAT_MAJOR & 0xff;
	hdr[13] = MS_FORMAT_MAJOR >> 8;
	hdr[14] = MS_FORMAT_MINOR & 0xff;
	hdr[15] = MS_FORMAT_MINOR >> 8;
	ms_store_le32(hdr + 16, MS_HEADER_SIZE);
	ms_store_le64(hdr + 20, 0);
	ms_store_le32(hdr + 28, MS_VERSION_NUMBER);
	s = write_bytes(w, hdr, sizeof(hdr));
	if (s) {
		ms_writer_free(w);
		return ms__diag_set(diag, s, -1, -1, "cannot write trace header");
	}
	*out = w;
	return MS_OK;
}

#define PK(call)                             \
	do {                                 \
		if ((call) != 0)             \
			return MS_ERR_NOMEM; \
	} while (0)

static ms_status pk_str(msgpack_packer *pk, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	PK(msgpack_pack_str(pk, n));
	PK(msgpack_pack_str_body(pk, s ? s : "", n));
	return MS_OK;
}

static ms_status pk_key(msgpack_packer *pk, const char *k)
{
	return pk_str(pk, k);
}

/* Pack a META record into w->raw. */
static ms_status pack_meta(struct ms_writer *w, const struct ms_meta *m)
{
	msgpack_packer *pk = &w->pk;
	const struct ms_settings *st = &m->settings;

	PK(msgpack_pack_array(pk, 2));
	PK(msgpack_pack_uint8(pk, MS_REC_META));
	PK(msgpack_pack_map(pk, 10 + (st->present || st->expandable_seen)));
	MS_TRY(pk_key(pk, "producer"));
	MS_TRY(pk_str(pk, m->producer ? m->producer : w->o.producer));
	MS_TRY(pk_key(pk, "producer_version"));
	MS_TRY(pk_str(pk, m->producer_version ? m->producer_version : MS_VERSION_STRING));
	MS_TRY(pk_key(pk, "source"));
	MS_TRY(pk_str(pk, w->o.source));
	MS_TRY(pk_key(pk, "torch_version"));
	MS_TRY(pk_str(pk, m->torch_version));
	MS_TRY(pk_key(pk, "hostname"));
	MS_TRY(pk_str(pk, m->hostname));
	MS_TRY(pk_key(pk, "start_time_ns"));
	PK(msgpack_pack_int64(pk, m->start_t_ns));
	MS_TRY(pk_key(pk, "time_unit_ns"));
	PK(msgpack_pack_uint32(pk, w->o.time_unit_ns));
	MS_TRY(pk_key(pk, "limit_bytes"));
	PK(msgpack_pack_int64(pk, m->limit_bytes));
	MS_TRY(pk_key(pk, "format"));
	PK(msgpack_pack_uint16(pk, MS_FORMAT_MAJOR * 100 + MS_FORMAT_MINOR));
	MS_TRY(pk_key(pk, "devices"));
	PK(msgpack_pack_array(pk, m->n_devices));
	for (uint32_t i = 0; i < m->n_devices; i++) {
		PK(msgpack_pack_map(pk, 3));
		MS_TRY(pk_key(pk, "index"));
		PK(msgpack_pack_uint32(pk, m->devices[i].index));
		MS_TRY(pk_key(pk, "name"));
		MS_TRY(pk_str(pk, m->devices[i].name));
		MS_TRY(pk_key(pk, "total_memory"));
		PK(msgpack_pack_uint64(pk, m->devices[i].total_memory));
	}
	if (st->present) {
		MS_TRY(pk_key(pk, "settings"));
		PK(msgpack_pack_map(pk, 9));
		MS_TRY(pk_key(pk, "alloc_conf"));
		MS_TRY(pk_str(pk, st->alloc_conf));
		MS_TRY(pk_key(pk, "max_split_size"));
		PK(msgpack_pack_int64(pk, st->max_split_size));
		MS_TRY(pk_key(pk, "garbage_collection_threshold"));
		PK(msgpack_pack_double(pk, st->garbage_collection_threshold));
		MS_TRY(pk_key(pk, "expandable_segments"));
		PK(st->expandable_segments ? msgpack_pack_true(pk) : msgpack_pack_false(pk));
		MS_TRY(pk_key(pk, "release_lock_on_cudamalloc"));
		PK(st->release_lock_on_cudamalloc ? msgpack_pack_true(pk) : msgpack_pack_false(pk));
		MS_TRY(pk_key(pk, "pinned_use_cuda_host_register"));
		PK(st->pinned_use_cuda_host_register ? msgpack_pack_true(pk)
		                                     : msgpack_pack_false(pk));
		MS_TRY(pk_key(pk, "graph_capture_record_stream_reuse"));
		PK(st->graph_capture_record_stream_reuse ? msgpack_pack_true(pk)
		                                         : msgpack_pack_false(pk));
		MS_TRY(pk_key(pk, "pinned_num_register_threads"));
		PK(msgpack_pack_int64(pk, st->pinned_num_register_threads));
		MS_TRY(pk_key(pk, "roundup_power2_divisions"));
		PK(msgpack_pack_array(pk, 16));
		for (int i = 0; i < 16; i++)
			PK(msgpack_pack_uint32(pk, st->roundup_power2_divisions[i]));
	} else if (st->expandable_seen) {
		MS_TRY(pk_key(pk, "expandable_segments_seen"));
		PK(msgpack_pack_true(pk));
	}
	return MS_OK;
}

/* Compress the buffered records into one frame and write it. */
static ms_status emit_frame(struct ms_writer *w)
{
	size_t bound, n;

	if (!w->frame_open)
		return MS_OK;
	bound = ZSTD_compressBound(w->raw.len);
	if (ms_buf_reserve(&w->comp, bound))
		return MS_ERR_NOMEM;
	n = ZSTD_compress2(w->cctx, w->comp.data, bound, w->raw.data, w->raw.len);
	if (ZSTD_isError(n))
		return MS_ERR_COMPRESSION;
	MS_TRY(write_bytes(w, w->comp.data, n));
	w->raw.len = 0;
	w->frame_open = 0;
	return MS_OK;
}

/* Make sure a frame is open: starting one writes its FRAME record and an index entry. */
static ms_status open_frame(struct ms_writer *w)
{
	if (w->frame_open) {
		if (w->raw.len < w->o.frame_bytes)
			return MS_OK;
		MS_TRY(emit_frame(w));
	}
	if (ms_grow(&w->index, &w->cap_index, w->n_index + 2, sizeof(uint64_t)))
		return MS_ERR_NOMEM;
	w->index[w->n_index++] = w->n_events;
	w->index[w->n_index++] = w->offset;
	w->frame_open = 1;
	w->stream_idx = 0;
	w->device = 0;
	w->pool = MS_POOL_UNKNOWN;
	w->size = 0;
	w->frame_seq = 0;
	ms_u64map_clear(&w->blocks);
	ms_u64map_clear(&w->seen);
	PK(msgpack_pack_array(&w->pk, 4));
	PK(msgpack_pack_uint8(&w->pk, MS_REC_FRAME));
	PK(msgpack_pack_uint64(&w->pk, w->n_events));
	PK(msgpack_pack_int64(&w->pk, w->t));
	PK(msgpack_pack_uint64(&w->pk, w->addr));
	return MS_OK;
}

static ms_status pack_str_def(struct ms_writer *w, uint32_t id)
{
	const struct ms_str *s = ms_symtab_get_str(w->syms, id);

	PK(msgpack_pack_array(&w->pk, 3));
	PK(msgpack_pack_uint8(&w->pk, MS_REC_STRING));
	PK(msgpack_pack_uint32(&w->pk, id));
	PK(msgpack_pack_str(&w->pk, s->len));
	PK(msgpack_pack_str_body(&w->pk, s->s, s->len));
	return MS_OK;
}

static ms_status pack_frame_def(struct ms_writer *w, uint32_t id)
{
	const struct ms_frame *f = &w->syms->frames[id];

	PK(msgpack_pack_array(&w->pk, 5));
	PK(msgpack_pack_uint8(&w->pk, MS_REC_FRAMEDEF));
	PK(msgpack_pack_uint32(&w->pk, id));
	PK(msgpack_pack_uint32(&w->pk, f->name));
	PK(msgpack_pack_uint32(&w->pk, f->file));
	PK(msgpack_pack_uint32(&w->pk, f->line));
	return MS_OK;
}

static ms_status pack_stack_def(struct ms_writer *w, uint32_t id)
{
	size_t n;
	const uint32_t *fr = ms_symtab_get_stack(w->syms, id, &n);

	PK(msgpack_pack_array(&w->pk, 3));
	PK(msgpack_pack_uint8(&w->pk, MS_REC_STACK));
	PK(msgpack_pack_uint32(&w->pk, id));
	PK(msgpack_pack_array(&w->pk, n));
	for (size_t i = 0; i < n; i++)
		PK(msgpack_pack_uint32(&w->pk, fr[i]));
	return MS_OK;
}

static ms_status pack_stream_def(struct ms_writer *w, uint64_t idx)
{
	PK(msgpack_pack_array(&w->pk, 3));
	PK(msgpack_pack_uint8(&w->pk, MS_REC_STREAM));
	PK(msgpack_pack_uint64(&w->pk, idx));
	PK(msgpack_pack_uint64(&w->pk, w->stream_handles[idx]));
	return MS_OK;
}

static ms_status check_open(struct ms_writer *w);

/* Write the definitions created in the symtab since the last call. */
static ms_status sync_defs(struct ms_writer *w)
{
	if (w->o.manual_defs)
		return MS_OK;
	return ms_writer_sync_defs(w);
}

ms_status ms_writer_sync_defs(struct ms_writer *w)
{
	MS_TRY(check_open(w));
	for (; w->strs_out < ms_symtab_nstrs(w->syms); w->strs_out++)
		MS_TRY(pack_str_def(w, w->strs_out));
	for (; w->frames_out < ms_symtab_nframes(w->syms); w->frames_out++)
		MS_TRY(pack_frame_def(w, w->frames_out));
	for (; w->stacks_out < ms_symtab_nstacks(w->syms); w->stacks_out++)
		MS_TRY(pack_stack_def(w, w->stacks_out));
	return MS_OK;
}

static ms_status stream_index(struct ms_writer *w, uint64_t handle, uint64_t *idx)
{
	uint64_t *v = ms_u64map_get(&w->streams, handle);

	if (v) {
		*idx = *v;
		return MS_OK;
	}
	if (handle == UINT64_MAX)
		return MS_ERR_INVALID_ARG;
	if (ms_grow(&w->stream_handles, &w->cap_streams, w->n_streams + 1, sizeof(uint64_t)) ||
	    ms_u64map_put(&w->streams, handle, w->n_streams))
		return MS_ERR_NOMEM;
	w->stream_handles[w->n_streams] = handle;
	*idx = w->n_streams++;
	return pack_stream_def(w, *idx);
}

ms_status ms_writer_meta(struct ms_writer *w, const struct ms_meta *m)
{
	size_t start;

	if (!w->ok)
		return MS_ERR_IO;
	if (w->meta_rec.len)
		return MS_ERR_INVALID_ARG; /* one META per trace */
	if (w->o.time_unit_ns == 0)
		w->o.time_unit_ns = m->time_unit_ns ? m->time_unit_ns : 1;
	MS_TRY(open_frame(w));
	start = w->raw.len;
	MS_TRY(pack_meta(w, m));
	w->meta_rec.len = 0;
	return ms_buf_append(&w->meta_rec, w->raw.data + start, w->raw.len - start);
}

static ms_status check_open(struct ms_writer *w)
{
	if (!w->ok)
		return MS_ERR_IO;
	if (!w->meta_rec.len)
		return MS_ERR_INVALID_ARG; /* META first */
	return open_frame(w);
}

ms_status ms_writer_event(struct ms_writer *w, const struct ms_event *e)
{
	msgpack_packer *pk = &w->pk;
	uint64_t sidx, *sp;
	int64_t tk;
	int nf;

	if (e->action >= MS_ACT_COUNT)
		return MS_ERR_INVALID_ARG;
	MS_TRY(check_open(w));
	MS_TRY(sync_defs(w));
	MS_TRY(stream_index(w, e->stream, &sidx));
	/* trailing fields equal to their defaults are left out */
	if (e->fwd_stack)
		nf = 12;
	else if (e->pool != w->pool)
		nf = 11;
	else if (e->source)
		nf = 10;
	else if (e->compile_context)
		nf = 9;
	else if (e->user_metadata)
		nf = 8;
	else if (e->device != w->device)
		nf = 7;
	else if (e->stack)
		nf = 6;
	else if (sidx != w->stream_idx)
		nf = 5;
	else
		nf = 4;
	tk = e->t_ns / (int64_t)w->o.time_unit_ns;
	PK(msgpack_pack_array(pk, nf));
	PK(msgpack_pack_uint8(pk, MS_REC_EVENT + e->action));
	PK(msgpack_pack_int64(pk, tk - w->t));
	/* an address seen in the last MS_ADDR_RING events of this frame: its age, [k] */
	sp = e->addr != UINT64_MAX ? ms_u64map_get(&w->seen, e->addr) : NULL;
	if (sp && w->frame_seq - *sp - 1 < MS_ADDR_RING && e->addr != w->addr) {
		PK(msgpack_pack_array(pk, 1));
		PK(msgpack_pack_uint64(pk, w->frame_seq - *sp - 1));
	} else {
		PK(msgpack_pack_int64(pk, (int64_t)(e->addr - w->addr)));
	}
	if (e->addr != UINT64_MAX && ms_u64map_put(&w->seen, e->addr, w->frame_seq))
		return MS_ERR_NOMEM;
	w->frame_seq++;
	if (e->size == w->size) {
		PK(msgpack_pack_nil(pk));
	} else if (e->action == MS_ACT_FREE_REQUESTED || e->action == MS_ACT_FREE_COMPLETED) {
		/* a free usually names the size its block was allocated with in this frame */
		uint64_t *bs = ms_u64map_get(&w->blocks, e->addr);
		if (bs && *bs == e->size)
			PK(msgpack_pack_true(pk));
		else
			PK(msgpack_pack_uint64(pk, e->size));
	} else {
		PK(msgpack_pack_uint64(pk, e->size));
	}
	if (e->action == MS_ACT_ALLOC && e->addr != UINT64_MAX &&
	    ms_u64map_put(&w->blocks, e->addr, e->size))
		return MS_ERR_NOMEM;
	if (nf > 4)
		PK(msgpack_pack_uint64(pk, sidx));
	if (nf > 5)
		PK(msgpack_pack_uint32(pk, e->stack));
	if (nf > 6)
		PK(msgpack_pack_uint16(pk, e->device));
	if (nf > 7)
		PK(msgpack_pack_uint32(pk, e->user_metadata));
	if (nf > 8)
		PK(msgpack_pack_uint32(pk, e->compile_context));
	if (nf > 9)
		PK(msgpack_pack_uint8(pk, e->source));
	if (nf > 10)
		PK(msgpack_pack_uint16(pk, e->pool));
	if (nf > 11)
		PK(msgpack_pack_uint32(pk, e->fwd_stack));
	w->t = tk;
	w->addr = e->addr;
	w->size = e->size;
	w->stream_idx = sidx;
	w->device = e->device;
	w->pool = e->pool;
	w->n_events++;
	w->by_action[e->action]++;
	if ((size_t)e->device * 2 + 2 > w->cap_by_device) {
		size_t old = w->cap_by_device;
		if (ms_grow(&w->by_device, &w->cap_by_device, (size_t)e->device * 2 + 2,
		            sizeof(uint64_t)))
			return MS_ERR_NOMEM;
		memset(w->by_device + old, 0, (w->cap_by_device - old) * sizeof(uint64_t));
	}
	w->by_device[2 * e->device + (e->source != MS_SRC_TORCH)]++;
	return MS_OK;
}

ms_status ms_writer_annotation(struct ms_writer *w, const struct ms_annotation *a)
{
	int64_t tk = a->t_ns / (int64_t)w->o.time_unit_ns;

	MS_TRY(check_open(w));
	MS_TRY(sync_defs(w));
	PK(msgpack_pack_array(&w->pk, 6));
	PK(msgpack_pack_uint8(&w->pk, MS_REC_ANNOTATION));
	PK(msgpack_pack_int64(&w->pk, tk - w->t));
	PK(msgpack_pack_uint8(&w->pk, a->stage));
	PK(msgpack_pack_uint8(&w->pk, a->kind));
	PK(msgpack_pack_uint32(&w->pk, a->name));
	PK(msgpack_pack_uint16(&w->pk, a->device));
	w->t = tk;
	return MS_OK;
}

ms_status ms_writer_dropped(struct ms_writer *w, int64_t t_ns, uint64_t n)
{
	int64_t tk = t_ns / (int64_t)w->o.time_unit_ns;

	MS_TRY(check_open(w));
	MS_TRY(sync_defs(w));
	PK(msgpack_pack_array(&w->pk, 3));
	PK(msgpack_pack_uint8(&w->pk, MS_REC_DROPPED));
	PK(msgpack_pack_int64(&w->pk, tk - w->t));
	PK(msgpack_pack_uint64(&w->pk, n));
	w->t = tk;
	return MS_OK;
}

ms_status ms_writer_segment(struct ms_writer *w, const struct ms_segment *s,
                            const struct ms_block *blocks)
{
	msgpack_packer *pk = &w->pk;
	unsigned flags =
	        (s->is_small ? MS_SEGF_SMALL : 0) | (s->is_expandable ? MS_SEGF_EXPANDABLE : 0);

	MS_TRY(check_open(w));
	if (w->frame_open && w->n_index >= 2 && w->index[w->n_index - 2] < w->n_events) {
		/*
		 * The end state starts a frame of its own, which the index points at: a reader
		 * that wants only the end state (from = UINT64_MAX) decodes no event.
		 */
		MS_TRY(emit_frame(w));
		MS_TRY(check_open(w));
	}
	MS_TRY(sync_defs(w));
	PK(msgpack_pack_array(pk, 13));
	PK(msgpack_pack_uint8(pk, MS_REC_SEGMENT));
	PK(msgpack_pack_uint32(pk, s->n_blocks));
	PK(msgpack_pack_uint64(pk, s->addr));
	PK(msgpack_pack_uint64(pk, s->total_size));
	PK(msgpack_pack_uint64(pk, s->stream));
	PK(msgpack_pack_unsigned_int(pk, flags));
	PK(msgpack_pack_uint16(pk, s->device));
	PK(msgpack_pack_uint32(pk, s->stack));
	PK(msgpack_pack_uint64(pk, s->pool_id[0]));
	PK(msgpack_pack_uint64(pk, s->pool_id[1]));
	PK(msgpack_pack_uint64(pk, s->allocated_size));
	PK(msgpack_pack_uint64(pk, s->active_size));
	PK(msgpack_pack_uint64(pk, s->requested_size));
	for (uint32_t i = 0; i < s->n_blocks; i++) {
		const struct ms_block *b = &blocks[i];
		PK(msgpack_pack_array(pk, 5));
		PK(msgpack_pack_uint8(pk, MS_REC_BLOCK));
		PK(msgpack_pack_uint64(pk, b->size));
		PK(msgpack_pack_uint64(pk, b->requested_size));
		PK(msgpack_pack_uint8(pk, b->state));
		PK(msgpack_pack_uint32(pk, b->stack));
	}
	return MS_OK;
}

ms_status ms_writer_flush(struct ms_writer *w)
{
	ms_status s;

	if (!w->ok)
		return MS_ERR_IO;
	s = emit_frame(w);
	if (s == MS_OK && fflush(w->f) != 0)
		s = MS_ERR_IO;
	if (s)
		w->ok = 0;
	return s;
}

ms_status ms_writer_close(struct ms_writer *w, struct ms_diag *diag)
{
	uint64_t trailer_off;
	unsigned char foot[8 + MS_FOOTER_SIZE];
	ms_status s;
	uint32_t i;

	if (!w->ok)
		return ms__diag_set(diag, MS_ERR_IO, -1, -1, "earlier write failed");
	if (!w->meta_rec.len)
		return ms__diag_set(diag, MS_ERR_INVALID_ARG, -1, -1, "trace has no META record");
	s = emit_frame(w);
	if (s)
		goto fail;
	trailer_off = w->offset;
	/* the trailer: one frame with every definition, the index and END */
	w->raw.len = 0;
	if (msgpack_pack_array(&w->pk, 1) || msgpack_pack_uint8(&w->pk, MS_REC_TRAILER)) {
		s = MS_ERR_NOMEM;
		goto fail;
	}
	if ((s = ms_buf_append(&w->raw, w->meta_rec.data, w->meta_rec.len)))
		goto fail;
	for (i = 1; i < ms_symtab_nstrs(w->syms) && !s; i++)
		s = pack_str_def(w, i);
	for (i = 1; i < ms_symtab_nframes(w->syms) && !s; i++)
		s = pack_frame_def(w, i);
	for (i = 1; i < ms_symtab_nstacks(w->syms) && !s; i++)
		s = pack_stack_def(w, i);
	for (i = 1; i < w->n_streams && !s; i++)
		s = pack_stream_def(w, i);
	if (s)
		goto fail;
	if (msgpack_pack_array(&w->pk, 2) || msgpack_pack_uint8(&w->pk, MS_REC_INDEX) ||
	    msgpack_pack_array(&w->pk, w->n_index)) {
		s = MS_ERR_NOMEM;
		goto fail;
	}
	for (size_t k = 0; k < w->n_index; k++)
		if (msgpack_pack_uint64(&w->pk, w->index[k])) {
			s = MS_ERR_NOMEM;
			goto fail;
		}
	if (msgpack_pack_array(&w->pk, w->source_cut_short ? 5 : 4) ||
	    msgpack_pack_uint8(&w->pk, MS_REC_END) || msgpack_pack_uint64(&w->pk, w->n_events) ||
	    msgpack_pack_array(&w->pk, MS_ACT_COUNT)) {
		s = MS_ERR_NOMEM;
		goto fail;
	}
	for (i = 0; i < MS_ACT_COUNT; i++)
		if (msgpack_pack_uint64(&w->pk, w->by_action[i])) {
			s = MS_ERR_NOMEM;
			goto fail;
		}
	/* by_device (1.2): device, allocator events, raw CUDA events, for each device with any */
	{
		size_t n = 0;
		for (size_t k = 0; k + 1 < w->cap_by_device; k += 2)
			n += w->by_device[k] || w->by_device[k + 1];
		if (msgpack_pack_array(&w->pk, 3 * n)) {
			s = MS_ERR_NOMEM;
			goto fail;
		}
		for (size_t k = 0; k + 1 < w->cap_by_device; k += 2)
			if ((w->by_device[k] || w->by_device[k + 1]) &&
			    (msgpack_pack_uint32(&w->pk, (uint32_t)(k / 2)) ||
			     msgpack_pack_uint64(&w->pk, w->by_device[k]) ||
			     msgpack_pack_uint64(&w->pk, w->by_device[k + 1]))) {
				s = MS_ERR_NOMEM;
				goto fail;
			}
	}
	if (w->source_cut_short && msgpack_pack_uint8(&w->pk, 1)) {
		s = MS_ERR_NOMEM;
		goto fail;
	}
	w->frame_open = 1;
	if ((s = emit_frame(w)))
		goto fail;
	ms_store_le32(foot, MS_FOOTER_FRAME_MAGIC);
	ms_store_le32(foot + 4, MS_FOOTER_SIZE);
	memcpy(foot + 8, MS_FOOTER_MAGIC, 4);
	ms_store_le64(foot + 12, trailer_off);
	ms_store_le64(foot + 20, w->n_events);
	if ((s = write_bytes(w, foot, sizeof(foot))))
		goto fail;
	if (fflush(w->f) != 0) {
		s = MS_ERR_IO;
		goto fail;
	}
	return MS_OK;
fail:
	w->ok = 0;
	return ms__diag_set(diag, s, (int64_t)w->offset, -1, "cannot finish trace: %s",
	                    ms_strerror(s));
}

void ms_writer_free(struct ms_writer *w)
{
	if (!w)
		return;
	ZSTD_freeCCtx(w->cctx);
	ms_buf_release(&w->raw);
	ms_buf_release(&w->comp);
	ms_buf_release(&w->meta_rec);
	ms_u64map_release(&w->streams);
	ms_u64map_release(&w->blocks);
	ms_u64map_release(&w->seen);
	ms_free(w->stream_handles);
	ms_free(w->index);
	ms_free(w->by_device);
	ms_free(w);
}

uint64_t ms_writer_bytes(const struct ms_writer *w)
{
	return w->offset;
}

uint64_t ms_writer_events(const struct ms_writer *w)
{
	return w->n_events;
}

static ms_status sink_begin(void *ctx, const struct ms_meta *m, const struct ms_symtab *syms)
{
	(void)syms;
	return ms_writer_meta(ctx, m);
}

static ms_status sink_event(void *ctx, const struct ms_event *e)
{
	return ms_writer_event(ctx, e);
}

static ms_status sink_ann(void *ctx, const struct ms_annotation *a)
{
	return ms_writer_annotation(ctx, a);
}

static ms_status sink_seg(void *ctx, const struct ms_segment *s, const struct ms_block *b)
{
	return ms_writer_segment(ctx, s, b);
}

void ms_writer_sink(struct ms_writer *w, struct ms_sink *sink)
{
	memset(sink, 0, sizeof(*sink));
	sink->ctx = w;
	sink->begin = sink_begin;
	sink->event = sink_event;
	sink->annotation = sink_ann;
	sink->segment = sink_seg;
}

void ms_writer_source_cut_short(struct ms_writer *w)
{
	w->source_cut_short = 1;
}
