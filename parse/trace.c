/* struct ms_trace (a trace in memory), its builder sink, and the reader dispatcher. */
#include "parse/trace.h"

#include "parse/source.h"

#include <string.h>
#include <sys/stat.h>

#include "common/alloc.h"
#include "common/status.h"

ms_status ms_trace_new(struct ms_trace **out)
{
	struct ms_trace *t = ms_calloc(1, sizeof(*t));

	if (!t)
		return MS_ERR_NOMEM;
	if (ms_symtab_init(&t->syms)) {
		ms_free(t);
		return MS_ERR_NOMEM;
	}
	t->meta.limit_bytes = -1;
	*out = t;
	return MS_OK;
}

void ms_trace_free(struct ms_trace *t)
{
	if (!t)
		return;
	ms_symtab_release(&t->syms);
	ms_arena_release(&t->arena);
	ms_free(t->events);
	ms_free(t->anns);
	ms_free(t->segs);
	ms_free(t->blocks);
	ms_free(t->seg_block0);
	ms_free(t);
}

static const char *dup(struct ms_trace *t, const char *s)
{
	return ms_arena_strndup(&t->arena, s ? s : "", s ? strlen(s) : 0);
}

static ms_status b_begin(void *ctx, const struct ms_meta *m, const struct ms_symtab *syms)
{
	struct ms_trace *t = ctx;
	struct ms_device *d = NULL;

	(void)syms;
	t->meta = *m;
	if (!(t->meta.producer = dup(t, m->producer)) ||
	    !(t->meta.producer_version = dup(t, m->producer_version)) ||
	    !(t->meta.torch_version = dup(t, m->torch_version)) ||
	    !(t->meta.layout_release = dup(t, m->layout_release)) ||
	    !(t->meta.hostname = dup(t, m->hostname)) ||
	    !(t->meta.settings.alloc_conf = dup(t, m->settings.alloc_conf)))
		return MS_ERR_NOMEM;
	if (m->n_devices) {
		d = ms_arena_alloc(&t->arena, sizeof(*d) * m->n_devices);
		if (!d)
			return MS_ERR_NOMEM;
		for (uint32_t i = 0; i < m->n_devices; i++) {
			d[i] = m->devices[i];
			if (!(d[i].name = dup(t, m->devices[i].name)))
				return MS_ERR_NOMEM;
		}
	}
	t->meta.devices = d;
	return MS_OK;
}

static ms_status b_event(void *ctx, const struct ms_event *e)
{
	struct ms_trace *t = ctx;

	if (t->n_events == t->cap_events &&
	    ms_grow(&t->events, &t->cap_events, t->n_events + 1, sizeof(*e)))
		return MS_ERR_NOMEM;
	t->events[t->n_events++] = *e;
	return MS_OK;
}

static ms_status b_events(void *ctx, const struct ms_event *e, size_t n)
{
	struct ms_trace *t = ctx;

	if (n > t->cap_events - t->n_events &&
	    ms_grow(&t->events, &t->cap_events, t->n_events + n, sizeof(*e)))
		return MS_ERR_NOMEM;
	memcpy(t->events + t->n_events, e, n * sizeof(*e));
	t->n_events += n;
	return MS_OK;
}

static ms_status b_ann(void *ctx, const struct ms_annotation *a)
{
	struct ms_trace *t = ctx;

	if (ms_grow(&t->anns, &t->cap_anns, t->n_anns + 1, sizeof(*a)))
		return MS_ERR_NOMEM;
	t->anns[t->n_anns] = *a;
	/* indexes are relative to the events this trace holds (a window starts at 0) */
	t->anns[t->n_anns++].event_index = t->n_events;
	return MS_OK;
}

static ms_status b_seg(void *ctx, const struct ms_segment *s, const struct ms_block *b)
{
	struct ms_trace *t = ctx;

	if (ms_grow(&t->segs, &t->cap_segs, t->n_segs + 1, sizeof(*s)) ||
	    ms_grow(&t->seg_block0, &t->cap_seg_block0, t->n_segs + 1, sizeof(size_t)) ||
	    ms_grow(&t->blocks, &t->cap_blocks, t->n_blocks + s->n_blocks, sizeof(*b)))
		return MS_ERR_NOMEM;
	t->segs[t->n_segs] = *s;
	t->seg_block0[t->n_segs++] = t->n_blocks;
	if (s->n_blocks)
		memcpy(t->blocks + t->n_blocks, b, s->n_blocks * sizeof(*b));
	t->n_blocks += s->n_blocks;
	return MS_OK;
}

void ms_trace_sink(struct ms_trace *t, struct ms_sink *sink)
{
	memset(sink, 0, sizeof(*sink));
	sink->ctx = t;
	sink->begin = b_begin;
	sink->event = b_event;
	sink->events = b_events;
	sink->annotation = b_ann;
	sink->segment = b_seg;
}

ms_status ms_trace_emit(const struct ms_trace *t, const struct ms_sink *sink)
{
	size_t ai = 0, i = 0;

	if (sink->begin)
		MS_TRY(sink->begin(sink->ctx, &t->meta, &t->syms));
	/* the events between one annotation's place and the next in one run */
	for (;;) {
		size_t next = t->n_events;
		for (; ai < t->n_anns && t->anns[ai].event_index <= i; ai++)
			if (sink->annotation)
				MS_TRY(sink->annotation(sink->ctx, &t->anns[ai]));
		if (i == t->n_events)
			break;
		if (ai < t->n_anns && t->anns[ai].event_index < next)
			next = (size_t)t->anns[ai].event_index;
		MS_TRY(ms_sink_events(sink, t->events + i, next - i));
		i = next;
	}
	for (size_t g = 0; g < t->n_segs; g++)
		if (sink->segment)
			MS_TRY(sink->segment(sink->ctx, &t->segs[g], t->blocks + t->seg_block0[g]));
	if (sink->end)
		MS_TRY(sink->end(sink->ctx, t->n_events));
	return MS_OK;
}

/* Keep only events in [from, to) for sources without an index (snapshots). */
struct window {
	const struct ms_sink *next;
	struct ms_read_opts o;
	uint64_t n;
};

static ms_status w_begin(void *ctx, const struct ms_meta *m, const struct ms_symtab *y)
{
	struct window *w = ctx;
	return w->next->begin ? w->next->begin(w->next->ctx, m, y) : MS_OK;
}

static ms_status w_event(void *ctx, const struct ms_event *e)
{
	struct window *w = ctx;
	uint64_t i = w->n++;
	if (i < w->o.from || i >= w->o.to || !w->next->event)
		return MS_OK;
	return w->next->event(w->next->ctx, e);
}

static ms_status w_events(void *ctx, const struct ms_event *e, size_t n)
{
	struct window *w = ctx;
	uint64_t i = w->n, lo = w->o.from > i ? w->o.from - i : 0, hi = n;

	w->n += n;
	if (w->o.to < i + n)
		hi = w->o.to > i ? w->o.to - i : 0;
	return lo < hi ? ms_sink_events(w->next, e + lo, (size_t)(hi - lo)) : MS_OK;
}

static ms_status w_ann(void *ctx, const struct ms_annotation *a)
{
	struct window *w = ctx;
	if (w->n < w->o.from || w->n >= w->o.to || !w->next->annotation)
		return MS_OK;
	return w->next->annotation(w->next->ctx, a);
}

static ms_status w_seg(void *ctx, const struct ms_segment *s, const struct ms_block *b)
{
	struct window *w = ctx;
	return w->next->segment ? w->next->segment(w->next->ctx, s, b) : MS_OK;
}

/* A sink that passes on to w->next what falls in the window w->o. */
static struct ms_sink window_sink(struct window *w)
{
	return (struct ms_sink){.ctx = w,
	                        .begin = w_begin,
	                        .event = w_event,
	                        .events = w_events,
	                        .annotation = w_ann,
	                        .segment = w_seg};
}

/* The reading of in, opened by the caller, whatever its kind into sink (ms_source_read). */
static ms_status read_input(struct ms_input *in, const struct ms_read_opts *opts,
                            struct ms_symtab *syms, const struct ms_sink *sink,
                            struct ms_source_info *info, struct ms_diag *diag)
{
	ms_status s;

	memset(info, 0, sizeof(*info));
	info->kind = ms_input_kind(in);
	info->compression = ms_input_compression(in);
	info->file_bytes = ms_input_file_size(in);
	info->file_regular = ms_input_is_regular(in);
	switch (info->kind) {
	case MS_FILE_TRACE: {
		struct ms_mapped mp;
		/* mapped, not streamed: a pipe's bytes are gone, and opening it again would wait */
		if (!info->file_regular)
			return ms__diag_set(diag, MS_ERR_IO, -1, -1,
			                    "a memsnap trace is read from its file (mapped), not "
			                    "from a pipe: write it to a file first");
		if ((s = ms_input_map_file(in, &mp, diag)))
			return s;
		info->file_bytes = mp.len;
		s = ms_trace_read_buffer(mp.data, mp.len, opts, syms, sink, &info->zst, diag);
		ms_input_unmap(&mp);
		return s;
	}
	case MS_FILE_PICKLE:
	case MS_FILE_JSON:
		if (opts && (opts->from > 0 || opts->to != UINT64_MAX)) {
			struct window w = {sink, *opts, 0};
			struct ms_sink ws = window_sink(&w);
			s = ms_torch_snapshot_read(in, syms, &ws, &info->snap, diag);
			if (!s && sink->end)
				s = sink->end(sink->ctx, w.n);
		} else {
			s = ms_torch_snapshot_read(in, syms, sink, &info->snap, diag);
		}
		if (!s) /* a pickle ends at its STOP: the compressed stream may go on */
			s = ms_input_drain(in, diag);
		return s;
	default:
		if ((s = ms_input_peek_error(in, diag)))
			return s;
		return ms__diag_set(diag, MS_ERR_FORMAT, 0, -1,
		                    ms_input_empty(in) && info->compression == MS_COMP_NONE
		                            ? "empty file"
		                            : "unknown file type (not a memsnap trace, PyTorch "
		                              "snapshot pickle or JSON)");
	}
}

ms_status ms_source_read(const char *path, const struct ms_read_opts *opts, struct ms_symtab *syms,
                         const struct ms_sink *sink, struct ms_source_info *info,
                         struct ms_diag *diag)
{
	struct ms_input *in = NULL;
	struct ms_source_info tmp;
	ms_status s;

	if ((s = ms_input_open(path, &in, diag)))
		return s;
	s = read_input(in, opts, syms, sink, info ? info : &tmp, diag);
	ms_input_close(in);
	return s;
}

ms_status ms_source_stream(const struct ms_source *src, unsigned pass,
                           const struct ms_read_opts *opts, struct ms_symtab *syms,
                           const struct ms_sink *sink, struct ms_source_info *info,
                           struct ms_diag *diag)
{
	struct ms_input *in = NULL;
	struct ms_source_info tmp;
	ms_status s;

	if (!info)
		info = &tmp;
	ms_source_count(src, pass);
	if (src->is_stdin && !src->whole &&
	    atomic_exchange(&((struct ms_source *)(uintptr_t)src)->consumed, 1))
		return ms__diag_set(diag, MS_ERR_IO, -1, -1,
		                    "standard input was read already: it can be read once only");
	if (src->whole && src->is_stdin) { /* standard input read whole: its trace again */
		*info = src->whole_info;
		ms_source_warnings(src, diag);
		if (opts && (opts->from > 0 || opts->to != UINT64_MAX)) {
			struct window w = {sink, *opts, 0};
			struct ms_sink ws = window_sink(&w);
			s = ms_trace_emit(src->whole, &ws);
			return !s && sink->end ? sink->end(sink->ctx, w.n) : s;
		}
		return ms_trace_emit(src->whole, sink);
	}
	if ((s = ms_input_open_fd(src->fd, &in, diag)))
		return s;
	s = read_input(in, opts, syms, sink, info, diag);
	ms_input_close(in);
	return s;
}

/* Private-pool segments at the end, and events that do not say their pool. */
/*
 * Whether the end state can tell the pool of some event that does not carry it: any segment
 * alive at the end tells the pool of the events made in it (the default pools' as well as a
 * private pool's), so that only the allocations in segments given back before the end are
 * left unknown.
 */
static int needs_pools(const struct ms_trace *t)
{
	if (!t->n_segs)
		return 0;
	for (size_t i = 0; i < t->n_events; i++)
		if (t->events[i].pool == MS_POOL_UNKNOWN && t->events[i].source == MS_SRC_TORCH)
			return 1;
	return 0;
}

int ms_source_cut_short(const struct ms_source_info *si)
{
	if (si->kind == MS_FILE_TRACE)
		return !si->zst.stopped &&
		       (si->zst.truncated || !si->zst.has_end || si->zst.source_cut_short);
	return si->snap.cut_short;
}

int ms_trace_no_allocations(const struct ms_trace *t)
{
	if (!t->n_segs)
		return 0;
	for (size_t i = 0; i < t->n_events; i++)
		if (t->events[i].action == MS_ACT_ALLOC && t->events[i].source == MS_SRC_TORCH)
			return 0;
	return 1;
}

int64_t ms_trace_first_time(const struct ms_trace *t)
{
	int64_t first = 0;

	for (size_t i = 0; i < t->n_events; i++)
		if (t->events[i].t_ns && (!first || t->events[i].t_ns < first))
			first = t->events[i].t_ns;
	return first;
}

int ms_file_is_snapshot(const char *path)
{
	struct ms_input *in = NULL;
	struct ms_diag d = MS_DIAG_INIT;
	enum ms_file_kind k;
	struct stat st;

	/* a pipe or standard input can be read once only */
	if (!strcmp(path, "-") || stat(path, &st) || !S_ISREG(st.st_mode))
		return 0;
	if (ms_input_open(path, &in, &d))
		return 0; /* the read proper says why */
	k = ms_input_kind(in);
	ms_input_close(in);
	return k == MS_FILE_PICKLE || k == MS_FILE_JSON;
}

/* *t cut to the window opts, as ms_source_read() would have cut it while reading. */
static ms_status cut_window(struct ms_trace **t, const struct ms_read_opts *opts)
{
	struct ms_trace *u;
	struct ms_sink sink;
	struct window w;
	struct ms_sink ws = window_sink(&w);
	ms_status s;

	if ((s = ms_trace_new(&u)))
		return s;
	ms_trace_sink(u, &sink);
	w.next = &sink;
	w.o = *opts;
	w.n = 0;
	s = ms_trace_emit(*t, &ws);
	if (!s && sink.end)
		s = sink.end(sink.ctx, w.n);
	if (s) {
		ms_trace_free(u);
		return s;
	}
	{
		/* the ids of the events are the whole trace's: u takes its table */
		struct ms_symtab y = u->syms;
		u->syms = (*t)->syms;
		(*t)->syms = y;
	}
	u->pools = (*t)->pools;
	ms_trace_free(*t);
	*t = u;
	return MS_OK;
}

/* ms_trace_load of path, or of src where path is NULL. */
static ms_status load(const char *path, const struct ms_source *src,
                      const struct ms_read_opts *opts, struct ms_trace **out,
                      struct ms_source_info *info, struct ms_diag *diag)
{
	struct ms_trace *t;
	struct ms_sink sink;
	struct ms_source_info own;
	int windowed, cut_early;
	ms_status s;

	if (!info)
		info = &own;
	if ((s = ms_trace_new(&t)))
		return ms__diag_set(diag, s, -1, -1, "out of memory");
	ms_trace_sink(t, &sink);
	/* a snapshot's window is cut after the pools are told from the whole of it */
	windowed = opts && (opts->from > 0 || opts->to != UINT64_MAX) &&
	           (path ? ms_file_is_snapshot(path)
	                 : !src->is_stdin && ms_source_is_snapshot(src) && src->regular);
	s = path ? ms_source_read(path, windowed ? NULL : opts, &t->syms, &sink, info, diag)
	         : ms_source_stream(src, MS_PASS_WHOLE, windowed ? NULL : opts, &t->syms, &sink,
	                            info, diag);
	/*
	 * The end state tells the pools of the events before it; of a window that ends earlier
	 * (a trace read with --to, or a snapshot from a pipe), it would tell them wrongly.
	 */
	cut_early = opts && opts->to != UINT64_MAX && !windowed;
	if (!s && !cut_early && needs_pools(t) && (s = ms_trace_infer_pools(t, &t->pools)))
		ms__diag_set(diag, s, -1, -1, "out of memory");
	if (!s && windowed && (s = cut_window(&t, opts)))
		ms__diag_set(diag, s, -1, -1, "out of memory");
	if (s) {
		ms_trace_free(t);
		return s;
	}
	t->cut_short = ms_source_cut_short(info);
	*out = t;
	return MS_OK;
}

ms_status ms_trace_load(const char *path, const struct ms_read_opts *opts, struct ms_trace **out,
                        struct ms_source_info *info, struct ms_diag *diag)
{
	return load(path, NULL, opts, out, info, diag);
}

ms_status ms_trace_load_source(const struct ms_source *src, const struct ms_read_opts *opts,
                               struct ms_trace **out, struct ms_source_info *info,
                               struct ms_diag *diag)
{
	return load(NULL, src, opts, out, info, diag);
}
