/* What a file holds (file_info.h): a sink over its events, annotations and segments. */
#include "analysis/file_info.h"

#include <string.h>

#include "common/alloc.h"

static void saw_pool(struct ms_file_info *x, uint16_t code)
{
	if (!(x->pool_seen[code / 8] & (1u << (code % 8)))) {
		x->pool_seen[code / 8] |= (uint8_t)(1u << (code % 8));
		x->n_pools++;
	}
}

static ms_status i_begin(void *ctx, const struct ms_meta *m, const struct ms_symtab *syms)
{
	struct ms_file_info *x = ctx;

	x->meta = *m;
	x->syms = syms;
	/* copy what outlives the callback */
	x->meta.producer = ms_arena_strndup(&x->arena, m->producer, strlen(m->producer));
	x->meta.producer_version =
	        ms_arena_strndup(&x->arena, m->producer_version, strlen(m->producer_version));
	x->meta.torch_version =
	        ms_arena_strndup(&x->arena, m->torch_version, strlen(m->torch_version));
	x->meta.layout_release =
	        ms_arena_strndup(&x->arena, m->layout_release ? m->layout_release : "",
	                         m->layout_release ? strlen(m->layout_release) : 0);
	x->meta.settings.alloc_conf =
	        ms_arena_strndup(&x->arena, m->settings.alloc_conf, strlen(m->settings.alloc_conf));
	if (m->n_devices) {
		struct ms_device *d = ms_arena_alloc(&x->arena, sizeof(*d) * m->n_devices);
		if (!d)
			return MS_ERR_NOMEM;
		for (uint32_t i = 0; i < m->n_devices; i++) {
			d[i] = m->devices[i];
			d[i].name = ms_arena_strndup(&x->arena, m->devices[i].name,
			                             strlen(m->devices[i].name));
		}
		x->meta.devices = d;
	}
	if (!x->meta.producer || !x->meta.producer_version || !x->meta.torch_version ||
	    !x->meta.layout_release || !x->meta.settings.alloc_conf)
		return MS_ERR_NOMEM;
	return MS_OK;
}

static ms_status i_event(void *ctx, const struct ms_event *e)
{
	struct ms_file_info *x = ctx;

	/* the earliest and the latest: a snapshot lists each device's events apart */
	if (e->t_ns && (!x->t_first || e->t_ns < x->t_first))
		x->t_first = e->t_ns;
	if (e->t_ns > x->t_last)
		x->t_last = e->t_ns;
	x->n++;
	x->by_action[e->action]++;
	x->dev_events[e->device < 64 ? e->device : 63]++;
	x->dev_marks[e->device < 64 ? e->device : 63] += ms_event_is_snapshot_mark(e);
	if (e->stack)
		x->with_stack++;
	x->raw_cuda += e->source == MS_SRC_CUDA;
	x->raw_by_action[e->action] += e->source == MS_SRC_CUDA;
	if (e->pool != MS_POOL_DEFAULT && e->pool != MS_POOL_UNKNOWN) {
		x->pool_events++;
		saw_pool(x, e->pool);
	}
	/* events come in runs of one stream: the table only where the stream changes */
	if (x->any_stream && e->stream == x->last_stream)
		return MS_OK;
	x->any_stream = 1;
	x->last_stream = e->stream;
	if (!ms_u64map_get(&x->streams, e->stream)) {
		if (ms_u64map_put(&x->streams, e->stream, 1) ||
		    ms_grow(&x->stream_list, &x->cap_streams, x->n_streams + 1, sizeof(uint64_t)))
			return MS_ERR_NOMEM;
		x->stream_list[x->n_streams++] = e->stream;
	}
	return MS_OK;
}

static ms_status i_ann(void *ctx, const struct ms_annotation *a)
{
	struct ms_file_info *x = ctx;
	struct ms_file_mark *m;
	uint64_t *k;

	x->anns++;
	if (!(k = ms_u64map_get(&x->mark_of, a->name))) {
		if (ms_grow(&x->marks, &x->cap_marks, x->n_marks + 1, sizeof(*x->marks)) ||
		    ms_u64map_put(&x->mark_of, a->name, x->n_marks + 1))
			return MS_ERR_NOMEM;
		memset(&x->marks[x->n_marks], 0, sizeof(*x->marks));
		x->marks[x->n_marks++].name = a->name;
		k = ms_u64map_get(&x->mark_of, a->name);
	}
	m = &x->marks[*k - 1];
	if (a->stage == MS_ANN_START)
		m->starts++;
	else if (a->stage == MS_ANN_END)
		m->ends++;
	else
		m->points++;
	return MS_OK;
}

static ms_status i_seg(void *ctx, const struct ms_segment *s, const struct ms_block *b)
{
	struct ms_file_info *x = ctx;

	(void)b;
	x->segs++;
	x->dev_segs[s->device < 64 ? s->device : 63]++;
	x->dev_reserved[s->device < 64 ? s->device : 63] += s->total_size;
	x->reserved += s->total_size;
	if (s->pool_id[0] || s->pool_id[1]) {
		uint16_t code;
		x->pool_segs++;
		x->pool_reserved += s->total_size;
		if (ms_pool_code(s->pool_id[0], s->pool_id[1], &code) == 0)
			saw_pool(x, code);
	}
	return MS_OK;
}

void ms_file_info_sink(struct ms_file_info *x, struct ms_sink *sink)
{
	memset(sink, 0, sizeof(*sink));
	sink->ctx = x;
	sink->begin = i_begin;
	sink->event = i_event;
	sink->annotation = i_ann;
	sink->segment = i_seg;
}

void ms_file_info_release(struct ms_file_info *x)
{
	ms_u64map_release(&x->streams);
	ms_u64map_release(&x->mark_of);
	ms_free(x->marks);
	ms_free(x->stream_list);
	ms_arena_release(&x->arena);
	memset(x, 0, sizeof(*x));
}
