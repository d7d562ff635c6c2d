/*
 * The HTML report: one self-contained page (dygraphs and the page's own script and styles
 * inline, a Content-Security-Policy that forbids every request) drawing data that one replay
 * of the trace collects:
 *   - the timeline in buckets of consecutive events, each with the minimum and maximum of
 *     allocated and reserved bytes (so no peak is lost however long the trace), the most
 *     active bytes, and the fragmentation figures;
 *   - the state (segments and blocks) at evenly spaced moments, at the peak and at the OOM,
 *     which the page draws as the segment map for the moment nearest a click;
 *   - the OOM, the largest allocations and the top sites at the peak.
 * The page's size depends on the number of buckets and moments, not on the trace's length.
 */
#include "render/render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/hash.h"
#include "common/jsonw.h"
#include "common/status.h"
#include "parse/trace.h"
#include "replay/site.h"
#include "replay/whatif.h"

/* The window's peak: needed by render's other formats too, so outside MS_HAVE_HTML. */
struct wpeak {
	uint64_t from, to, best, index;
	int found;
};

static void on_event_peak(void *ctx, uint64_t index, const struct ms_event *e,
                          const struct ms_model *m)
{
	struct wpeak *w = ctx;
	uint64_t a = (uint64_t)ms_model_stats(m)->allocated_bytes[MS_POOL_ALL].current;

	(void)e;
	if (index >= w->from && index < w->to && (!w->found || a > w->best)) {
		w->found = 1;
		w->best = a;
		w->index = index;
	}
}

ms_status ms_render_window_peak(const struct ms_trace *t, const char *path,
                                const struct ms_replay_opts *opts, uint64_t from, uint64_t to,
                                uint64_t *index, struct ms_diag *d)
{
	struct ms_replay_opts o = *opts;
	struct ms_replay_result r;
	struct wpeak w = {from, to, 0, from, 0};
	ms_status s;

	o.on_event = on_event_peak;
	o.ctx = &w;
	o.snap = 1; /* stops the replay at the window's end */
	o.snap_index = to ? to - 1 : 0;
	o.more_snaps = NULL;
	o.n_more_snaps = 0;
	o.on_annotation = NULL;
	o.syms = NULL;
	s = t ? ms_replay_trace(t, &o, &r, d) : ms_replay_run(path, &o, &r, d);
	ms_replay_result_release(&r);
	*index = w.index;
	return s;
}

#if MS_HAVE_HTML
extern const unsigned char ms_asset_report_css[], ms_asset_report_js[], ms_asset_report_body[],
        ms_asset_dygraphs_js[], ms_asset_dygraphs_css[];
extern const size_t ms_asset_report_css_len, ms_asset_report_js_len, ms_asset_report_body_len,
        ms_asset_dygraphs_js_len, ms_asset_dygraphs_css_len;

int ms_render_have_html(void)
{
	return 1;
}

/* Streams drawn apart in the timeline; later ones are summed as "other streams". */
#define MAX_STREAMS 8

/*
 * The finer level the page switches to when zoomed in: FINE times the buckets, with only the
 * extremes of allocated and reserved bytes (they are what zooming in is for).
 */
#define FINE 8

/* Events [first, ...) of one bucket: when the first began, and the extremes of allocated and
 * reserved bytes after each. */
struct span {
	uint64_t first;
	int64_t t_ns;
	uint64_t amin, amax, rmin, rmax;
};

static void span_start(struct span *s, uint64_t index, int64_t t_ns, uint64_t a, uint64_t r)
{
	*s = (struct span){index, t_ns, a, a, r, r};
}

static void span_extend(struct span *s, uint64_t a, uint64_t r)
{
	s->amin = a < s->amin ? a : s->amin;
	s->amax = a > s->amax ? a : s->amax;
	s->rmin = r < s->rmin ? r : s->rmin;
	s->rmax = r > s->rmax ? r : s->rmax;
}

/* One bucket of the timeline. */
struct bucket {
	struct span s;
	int64_t stream_alloc[MAX_STREAMS + 1]; /* allocated bytes per stream, at the last event */
	int64_t ann;                           /* innermost open annotation (string id), or -1 */
	uint64_t big_size, big_index;          /* the largest allocation requested in the bucket */
	uint32_t big_stack;
	uint64_t last; /* trace event */
	uint64_t active_max;
	uint64_t ext_max; /* bytes outside PyTorch's allocator, the most in the bucket */
	/* at the last event */
	uint64_t alloc, reserved, inactive_split, small_reserved, large_reserved;
	uint64_t free_in_reserved, largest_free; /* at the first event */
};

struct lod {
	uint64_t width, from, total; /* buckets cover events [from, total) */
	uint64_t fine_width;
	struct span *f;
	size_t n_fine, cap_fine;
	struct ms_annotation *anns; /* the trace's, collected as the replay reads them */
	size_t n_anns, cap_anns;
	uint64_t stream_id[MAX_STREAMS];
	int n_streams;
	int64_t stream_cur[MAX_STREAMS + 1], prev_alloc;
	struct bucket *b;
	size_t n, cap;
	int nomem;
	const struct ms_replay_result *res; /* the replay's result as it runs: external_now */
};

static void on_event(void *ctx, uint64_t index, const struct ms_event *e, const struct ms_model *m)
{
	struct lod *l = ctx;
	const struct ms_model_stats *st = ms_model_stats(m);
	uint64_t a = (uint64_t)st->allocated_bytes[MS_POOL_ALL].current;
	uint64_t r = (uint64_t)st->reserved_bytes[MS_POOL_ALL].current;
	uint64_t act = (uint64_t)st->active_bytes[MS_POOL_ALL].current;
	struct bucket *b;

	int si;

	if (l->nomem)
		return;
	/* allocated bytes change only through allocs and frees, of blocks of the event's stream */
	for (si = 0; si < l->n_streams && l->stream_id[si] != e->stream; si++)
		;
	if (si == l->n_streams && si < MAX_STREAMS && (int64_t)a != l->prev_alloc)
		l->stream_id[l->n_streams++] = e->stream;
	l->stream_cur[si] += (int64_t)a - l->prev_alloc;
	l->prev_alloc = (int64_t)a;
	if (index < l->from || index >= l->total)
		return;
	if (!l->n_fine || (index - l->from) / l->fine_width !=
	                          (l->f[l->n_fine - 1].first - l->from) / l->fine_width) {
		if (ms_grow(&l->f, &l->cap_fine, l->n_fine + 1, sizeof(*l->f))) {
			l->nomem = 1;
			return;
		}
		span_start(&l->f[l->n_fine++], index, e->t_ns, a, r);
	} else {
		span_extend(&l->f[l->n_fine - 1], a, r);
	}
	if (!l->n ||
	    (index - l->from) / l->width != (l->b[l->n - 1].s.first - l->from) / l->width) {
		if (ms_grow(&l->b, &l->cap, l->n + 1, sizeof(*l->b))) {
			l->nomem = 1;
			return;
		}
		b = &l->b[l->n++];
		memset(b, 0, sizeof(*b));
		span_start(&b->s, index, e->t_ns, a, r);
	}
	b = &l->b[l->n - 1];
	b->last = index;
	if (e->action == MS_ACT_ALLOC && e->size > b->big_size) {
		b->big_size = e->size;
		b->big_index = index;
		b->big_stack = e->stack;
	}
	span_extend(&b->s, a, r);
	b->active_max = act > b->active_max ? act : b->active_max;
	if (l->res && l->res->external_now > b->ext_max)
		b->ext_max = l->res->external_now;
	b->alloc = a;
	b->reserved = r;
	memcpy(b->stream_alloc, l->stream_cur, sizeof(b->stream_alloc));
	b->inactive_split = (uint64_t)st->inactive_split_bytes[MS_POOL_ALL].current;
	b->small_reserved = (uint64_t)st->reserved_bytes[MS_POOL_SMALL].current;
	b->large_reserved = (uint64_t)st->reserved_bytes[MS_POOL_LARGE].current;
	/*
	 * The free space walks the pools: once per bucket, at its first event (its last is not
	 * known in time: the trace may go on with other devices' events)
	 */
	if (b->s.first == index)
		ms_model_free_space(m, &b->free_in_reserved, &b->largest_free);
}

/*
 * Each bucket's innermost open annotation (record_function ranges and phases) at its first
 * event: a stack of open names, an end closing the latest open one of its name.
 */
static ms_status collect_annotation(void *ctx, const struct ms_annotation *a)
{
	struct lod *l = ctx;

	if (ms_grow(&l->anns, &l->cap_anns, l->n_anns + 1, sizeof(*l->anns)))
		return MS_ERR_NOMEM;
	l->anns[l->n_anns++] = *a;
	return MS_OK;
}

static void annotate(struct lod *l, uint32_t device)
{
	enum { DEPTH = 64 };
	uint32_t open[DEPTH];
	size_t depth = 0, k = 0;

	for (size_t i = 0; i < l->n; i++) {
		for (; k < l->n_anns && l->anns[k].event_index <= l->b[i].s.first; k++) {
			const struct ms_annotation *a = &l->anns[k];
			if (a->device != device && a->device != UINT16_MAX)
				continue;
			if (a->stage == MS_ANN_START) {
				if (depth < DEPTH)
					open[depth] = a->name;
				depth++;
			} else if (a->stage == MS_ANN_END && depth) {
				size_t j = depth < DEPTH ? depth : DEPTH;
				while (j > 0 && open[j - 1] != a->name)
					j--;
				/* an end without its start closes nothing */
				if (j > 0)
					depth = j - 1;
			}
		}
		l->b[i].ann = depth && depth <= DEPTH ? (int64_t)open[depth - 1] : -1;
	}
}

static int u64_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/*
 * Sites: the label of a stack (ms_stack_label, replay/site.h), each label once; stacks that
 * differ deeper down share their site, and the page shows the first one's frames. Labels are
 * interned in a symtab of their own: site i is its string id i + 1 (labels are never empty).
 * The frames the page shows, of site stacks and OOM holders, are interned by content in
 * frames (ids 1, 2, ...; written as the table `frames`, id - 1 each).
 */
struct sites {
	const struct ms_symtab *syms;
	struct ms_u64map ids; /* stack -> site */
	struct ms_symtab labels;
	uint32_t *first; /* site -> the first stack seen with it */
	size_t cap_first;
	struct ms_symtab frames;
	uint32_t shown; /* --frames */
	int nomem;
};

static size_t sites_n(const struct sites *s)
{
	return ms_symtab_nstrs(&s->labels) ? ms_symtab_nstrs(&s->labels) - 1u : 0;
}

static int64_t site_of(struct sites *s, uint32_t stack)
{
	const uint64_t *v;
	char label[256];
	uint32_t id;
	size_t before;

	if (!stack || !s->syms || stack >= ms_symtab_nstacks(s->syms))
		return -1;
	if ((v = ms_u64map_get(&s->ids, stack)))
		return (int64_t)*v;
	ms_stack_label(s->syms, stack, label, sizeof(label));
	before = sites_n(s);
	if (ms_symtab_str(&s->labels, label, strlen(label), &id) || id == 0 ||
	    ms_u64map_put(&s->ids, stack, id - 1) ||
	    ms_grow(&s->first, &s->cap_first, id, sizeof(*s->first))) {
		s->nomem = 1;
		return -1;
	}
	if (sites_n(s) > before) /* a new label */
		s->first[id - 1] = stack;
	return (int64_t)id - 1;
}

/*
 * A stack of y as the page has it: [frames (indexes into `frames`), the site's position, the
 * positions --frames shows or null for all].
 */
static void stack_json(struct ms_jsonw *w, struct sites *s, const struct ms_symtab *y,
                       uint32_t stack)
{
	size_t n, site = 0, *pos;
	const uint32_t *fr = ms_symtab_get_stack(y, stack, &n);

	if (!(pos = ms_malloc(sizeof(*pos) * (n ? n : 1)))) {
		s->nomem = 1;
		ms_jsonw_null(w);
		return;
	}
	ms_jsonw_arr_begin(w);
	ms_jsonw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		const struct ms_frame *f = &y->frames[fr[i]];
		const struct ms_str *name = ms_symtab_get_str(y, f->name);
		const struct ms_str *file = ms_symtab_get_str(y, f->file);
		struct ms_frame g = {0, 0, f->line};
		uint32_t id = 0;
		if (ms_symtab_str(&s->frames, name->s, name->len, &g.name) ||
		    ms_symtab_str(&s->frames, file->s, file->len, &g.file) ||
		    ms_symtab_frame(&s->frames, &g, &id))
			s->nomem = 1;
		ms_jsonw_u64(w, id ? id - 1 : 0);
	}
	ms_jsonw_arr_end(w);
	ms_site_frames(y, stack, MS_FRAMES_ALL, pos, n, &site);
	ms_jsonw_u64(w, site);
	if (s->shown == MS_FRAMES_ALL) {
		ms_jsonw_null(w);
	} else {
		size_t k = ms_site_frames(y, stack, s->shown, pos, n, NULL);
		ms_jsonw_arr_begin(w);
		for (size_t i = 0; i < k && i < n; i++)
			ms_jsonw_u64(w, pos[i]);
		ms_jsonw_arr_end(w);
	}
	ms_jsonw_arr_end(w);
	ms_free(pos);
}

/* The table of the frames the stacks above refer to: [name, file, line] each. */
static void frames_json(struct ms_jsonw *w, const struct sites *s)
{
	ms_jsonw_arr_begin(w);
	for (uint32_t i = 1; i < ms_symtab_nframes(&s->frames); i++) {
		const struct ms_frame *f = &s->frames.frames[i];
		const struct ms_str *name = ms_symtab_get_str(&s->frames, f->name);
		const struct ms_str *file = ms_symtab_get_str(&s->frames, f->file);
		ms_jsonw_arr_begin(w);
		ms_jsonw_str(w, name->s, name->len);
		ms_jsonw_str(w, file->s, file->len);
		ms_jsonw_u64(w, f->line);
		ms_jsonw_arr_end(w);
	}
	ms_jsonw_arr_end(w);
}

static void snap_json(struct ms_jsonw *w, const struct ms_replay_snap *sn, const char *label,
                      struct sites *sites, struct ms_render_cell *cells)
{
	size_t k = 0;
	char hex[24];

	ms_jsonw_obj_begin(w);
	ms_jsonw_key(w, "index");
	ms_jsonw_u64(w, sn->index);
	ms_jsonw_key(w, "label");
	ms_jsonw_cstr(w, label);
	ms_jsonw_key(w, "allocated");
	ms_jsonw_i64(w, sn->stats.allocated_bytes[0].current);
	ms_jsonw_key(w, "reserved");
	ms_jsonw_i64(w, sn->stats.reserved_bytes[0].current);
	/* [address, size, stream, small, expandable, [cells: size, state, requested, site, n]] */
	ms_jsonw_key(w, "segments");
	ms_jsonw_arr_begin(w);
	for (size_t i = 0; i < sn->n_segs; i++) {
		const struct ms_segment *g = &sn->segs[i];
		const struct ms_block *b = sn->blocks + k;
		size_t nc = ms_render_cells(b, g->n_blocks, cells);
		ms_jsonw_arr_begin(w);
		snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)g->addr);
		ms_jsonw_cstr(w, hex);
		ms_jsonw_u64(w, g->total_size);
		snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)g->stream);
		ms_jsonw_cstr(
		        w, hex); /* pointers can pass 2^53, where JSON numbers stop being exact */
		ms_jsonw_bool(w, g->is_small);
		ms_jsonw_bool(w, g->is_expandable);
		ms_jsonw_arr_begin(w);
		for (size_t j = 0; j < nc; j++) {
			const struct ms_render_cell *c = &cells[j];
			uint64_t total = c->bytes[0] + c->bytes[1] + c->bytes[2] + c->bytes[3];
			int st = ms_render_cell_state(c);
			ms_jsonw_u64(w, total);
			ms_jsonw_i64(w, st);
			ms_jsonw_u64(w, st == 0 ? c->bytes[0] : 0);
			ms_jsonw_i64(w, c->to - c->from == 1 && st != 3
			                        ? site_of(sites, b[c->from].stack)
			                        : -1);
			ms_jsonw_u64(w, c->to - c->from);
		}
		ms_jsonw_arr_end(w);
		ms_jsonw_arr_end(w);
		k += g->n_blocks;
	}
	ms_jsonw_arr_end(w);
	ms_jsonw_obj_end(w);
}

struct site_bytes {
	int64_t site; /* -1: no stack */
	uint64_t bytes, count;
};

static int site_bytes_cmp(const void *x, const void *y)
{
	const struct site_bytes *a = x, *b = y;
	return a->bytes > b->bytes ? -1 : a->bytes < b->bytes;
}

/* The top allocation sites among the allocated blocks of sn, by bytes. */
static ms_status top_sites(struct ms_jsonw *w, const struct ms_replay_snap *sn, struct sites *sites)
{
	struct ms_u64map at = MS_U64MAP_INIT;
	struct site_bytes *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t i64;

	for (size_t i = 0; i < sn->n_blocks; i++) {
		const struct ms_block *b = &sn->blocks[i];
		const uint64_t *hit;
		int64_t site;
		if (b->state != MS_BLOCK_ACTIVE_ALLOCATED)
			continue;
		site = site_of(sites, b->stack);
		if ((hit = ms_u64map_get(&at, (uint64_t)(site + 1)))) {
			i64 = *hit;
		} else {
			if (ms_grow(&v, &cap, n + 1, sizeof(*v)) ||
			    ms_u64map_put(&at, (uint64_t)(site + 1), n)) {
				ms_free(v);
				ms_u64map_release(&at);
				return MS_ERR_NOMEM;
			}
			v[n] = (struct site_bytes){site, 0, 0};
			i64 = n++;
		}
		v[i64].bytes += b->size;
		v[i64].count++;
	}
	if (n)
		qsort(v, n, sizeof(*v), site_bytes_cmp);
	ms_jsonw_arr_begin(w);
	for (size_t i = 0; i < n && i < 25; i++) {
		ms_jsonw_arr_begin(w);
		ms_jsonw_u64(w, v[i].bytes);
		ms_jsonw_u64(w, v[i].count);
		ms_jsonw_i64(w, v[i].site);
		ms_jsonw_arr_end(w);
	}
	ms_jsonw_arr_end(w);
	ms_free(v);
	ms_u64map_release(&at);
	return MS_OK;
}

/*
 * The flame graph of the allocated blocks at the peak: a tree of frames from the outermost in,
 * each node with the bytes allocated below it. Written as nested [label, bytes, [children]];
 * nodes under 0.1% of the total are left out (their bytes still count in their parent).
 */
struct fnode {
	uint32_t frame;
	uint64_t bytes;
	size_t child, next; /* first child and next sibling, 0 = none (node 0 is the root) */
};

struct flame {
	const struct ms_symtab *y;
	struct fnode *n;
	size_t len, cap;
	struct ms_u64map at; /* (parent << 32 | frame) -> node */
	int nomem;
};

static size_t flame_child(struct flame *f, size_t parent, uint32_t frame)
{
	uint64_t key = (uint64_t)parent << 32 | frame;
	const uint64_t *v = ms_u64map_get(&f->at, key);
	size_t k;

	if (v)
		return (size_t)*v;
	if (f->len >= UINT32_MAX || ms_grow(&f->n, &f->cap, f->len + 1, sizeof(*f->n)) ||
	    ms_u64map_put(&f->at, key, f->len)) {
		f->nomem = 1;
		return 0;
	}
	k = f->len++;
	f->n[k] = (struct fnode){frame, 0, 0, f->n[parent].child};
	f->n[parent].child = k;
	return k;
}

static void flame_write(struct ms_jsonw *w, const struct flame *f, size_t k, uint64_t min,
                        int depth)
{
	const struct fnode *n = &f->n[k];
	char label[300];

	ms_jsonw_arr_begin(w);
	if (k == 0) {
		ms_jsonw_cstr(w, "all");
	} else {
		const struct ms_frame *fr = &f->y->frames[n->frame];
		snprintf(label, sizeof(label), "%s (%s:%u)", ms_symtab_get_str(f->y, fr->name)->s,
		         ms_symtab_get_str(f->y, fr->file)->s, fr->line);
		ms_jsonw_cstr(w, label);
	}
	ms_jsonw_u64(w, n->bytes);
	ms_jsonw_arr_begin(w);
	for (size_t c = n->child; c && depth < 128; c = f->n[c].next)
		if (f->n[c].bytes >= min)
			flame_write(w, f, c, min, depth + 1);
	ms_jsonw_arr_end(w);
	ms_jsonw_arr_end(w);
}

static ms_status flame_json(struct ms_jsonw *w, const struct ms_replay_snap *sn,
                            const struct ms_symtab *y)
{
	struct flame f;

	memset(&f, 0, sizeof(f));
	f.y = y;
	if (!y || ms_grow(&f.n, &f.cap, 1, sizeof(*f.n)))
		return y ? MS_ERR_NOMEM : MS_OK;
	f.n[0] = (struct fnode){0, 0, 0, 0};
	f.len = 1;
	for (size_t i = 0; i < sn->n_blocks && !f.nomem; i++) {
		const struct ms_block *b = &sn->blocks[i];
		const uint32_t *fr;
		size_t nf, at = 0;
		if (b->state != MS_BLOCK_ACTIVE_ALLOCATED || !b->stack ||
		    b->stack >= ms_symtab_nstacks(y))
			continue;
		f.n[0].bytes += b->size;
		fr = ms_symtab_get_stack(y, b->stack, &nf);
		for (size_t j = nf; j-- > 0 && !f.nomem;) { /* outermost first */
			at = flame_child(&f, at, fr[j]);
			f.n[at].bytes += b->size;
		}
	}
	if (!f.nomem) {
		if (f.n[0].bytes)
			flame_write(w, &f, 0, f.n[0].bytes / 1000, 0);
		else
			ms_jsonw_null(w);
	}
	ms_free(f.n);
	ms_u64map_release(&f.at);
	return f.nomem ? MS_ERR_NOMEM : MS_OK;
}

static void oom_json(struct ms_jsonw *w, const struct ms_replay_result *r, struct sites *sites)
{
	const struct ms_replay_oom *x = &r->first_oom;
	char msg[1024];

	if (!r->has_oom) {
		ms_jsonw_null(w);
		return;
	}
	ms_replay_oom_message(r, msg, sizeof(msg));
	ms_jsonw_obj_begin(w);
	ms_jsonw_key(w, "index");
	ms_jsonw_u64(w, x->index);
	ms_jsonw_key(w, "recorded");
	ms_jsonw_bool(w, x->recorded);
	ms_jsonw_key(w, "message");
	ms_jsonw_cstr(w, msg);
	ms_jsonw_key(w, "requested");
	ms_jsonw_u64(w, x->o.requested);
	ms_jsonw_key(w, "alloc_size");
	ms_jsonw_u64(w, x->o.alloc_size);
	ms_jsonw_key(w, "stream");
	ms_jsonw_u64(w, x->o.stream);
	ms_jsonw_key(w, "allocated");
	ms_jsonw_u64(w, x->o.allocated);
	ms_jsonw_key(w, "reserved");
	ms_jsonw_u64(w, x->o.reserved);
	ms_jsonw_key(w, "free_in_reserved");
	ms_jsonw_u64(w, x->o.free_in_reserved);
	ms_jsonw_key(w, "largest_free");
	ms_jsonw_u64(w, x->o.largest_free);
	ms_jsonw_key(w, "holes");
	ms_jsonw_arr_begin(w);
	for (size_t i = 0; i < x->n_holes; i++) {
		char hex[24];
		snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)x->holes[i].addr);
		ms_jsonw_arr_begin(w);
		ms_jsonw_cstr(w, hex);
		ms_jsonw_u64(w, x->holes[i].size);
		ms_jsonw_arr_end(w);
	}
	ms_jsonw_arr_end(w);
	ms_jsonw_key(w, "holders");
	ms_jsonw_arr_begin(w);
	for (size_t i = 0; i < x->n_holders; i++) {
		ms_jsonw_arr_begin(w);
		ms_jsonw_u64(w, x->holders[i].size);
		ms_jsonw_u64(w, x->holders[i].index);
		ms_jsonw_cstr(w, x->holders[i].site);
		if (r->holder_syms && x->holders[i].stack)
			stack_json(w, sites, r->holder_syms, x->holders[i].stack);
		else
			ms_jsonw_null(w);
		ms_jsonw_arr_end(w);
	}
	ms_jsonw_arr_end(w);
	ms_jsonw_obj_end(w);
}

/* Which settings would have avoided the OOM: whatif.h's default matrix under the same limit. */
static ms_status whatif_json(struct ms_jsonw *w, const struct ms_render_html_input *in,
                             struct ms_diag *d)
{
	size_t n = ms_whatif_n_default_configs;
	struct ms_whatif_row *rows;
	const struct ms_trace *t = in->trace;
	struct ms_trace *loaded = NULL;
	ms_status s;

	if (!in->first->has_oom || in->no_whatif) {
		ms_jsonw_null(w);
		return MS_OK;
	}
	/* the searches replay the trace dozens of times: from memory */
	if (!t && (s = ms_trace_load(in->path, NULL, &loaded, NULL, d)))
		return s;
	if (!t)
		t = loaded;
	if (!(rows = ms_calloc(n, sizeof(*rows)))) {
		ms_trace_free(loaded);
		return MS_ERR_NOMEM;
	}
	for (size_t i = 0; i < n; i++)
		rows[i].conf = ms_whatif_default_configs[i];
	s = ms_whatif_run(t, in->opts, rows, n, 0);
	ms_trace_free(loaded);
	if (s) {
		ms_free(rows);
		return s;
	}
	/* [setting, recorded, peak reserved, first OOM event or null, least memory or null, error]
	 */
	ms_jsonw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		const struct ms_whatif_row *j = &rows[i];
		ms_jsonw_arr_begin(w);
		ms_jsonw_cstr(w, j->conf ? j->conf : j->r.alloc_conf);
		ms_jsonw_bool(w, !j->conf);
		if (j->s) {
			ms_jsonw_null(w);
			ms_jsonw_null(w);
			ms_jsonw_null(w);
			ms_jsonw_cstr(w, j->err);
		} else {
			ms_jsonw_i64(w, j->r.stats.reserved_bytes[0].peak);
			if (j->r.has_oom)
				ms_jsonw_u64(w, j->r.first_oom.index);
			else
				ms_jsonw_null(w);
			if (j->min_memory)
				ms_jsonw_u64(w, j->min_memory);
			else
				ms_jsonw_null(w);
			ms_jsonw_null(w);
		}
		ms_jsonw_arr_end(w);
	}
	ms_jsonw_arr_end(w);
	ms_whatif_release(rows, n);
	ms_free(rows);
	return MS_OK;
}

/* Append data to out with "</" written "<\/", so that no string ends the script element. */
static ms_status append_script_safe(struct ms_buf *out, const char *data, size_t len)
{
	size_t from = 0;

	for (size_t i = 0; i + 1 < len; i++)
		if (data[i] == '<' && data[i + 1] == '/') {
			MS_TRY(ms_buf_append(out, data + from, i + 1 - from));
			MS_TRY(ms_buf_append(out, "\\", 1));
			from = i + 1;
		}
	return ms_buf_append(out, data + from, len - from);
}

/* The page: the template, the data as JSON, dygraphs and report.js, all inline. */
/* One device's data block: <script id="memsnap-data-N" ...> (the first: "memsnap-data"). */
static ms_status data_block(struct ms_buf *out, const char *json, size_t json_len, uint32_t device,
                            int first)
{
	char id[24];
	ms_status s;

	snprintf(id, sizeof(id), "-%u", device);
	if ((s = ms_buf_printf(out,
	                       "<script id=\"memsnap-data%s\" type=\"application/json\" "
	                       "class=\"memsnap-data\" data-device=\"%u\"%s>",
	                       first ? "" : id, device, first ? " data-first=\"1\"" : "")) ||
	    (s = append_script_safe(out, json, json_len)))
		return s;
	return ms_buf_printf(out, "</script>\n");
}

/* The page: the template, the data blocks (one per device) as JSON, dygraphs and report.js. */
static ms_status write_pages(struct ms_buf *out, const char *source, const struct ms_buf *datas,
                             const uint32_t *devices, size_t n, size_t first)
{
	ms_status s;

	if ((s = ms_buf_printf(out,
	                       "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	                       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
	                       "'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
	                       "img-src data:\">\n<title>memsnap: ")) ||
	    (s = ms_render_escape(out, source)) ||
	    (s = ms_buf_printf(out, "</title>\n<style>\n")) ||
	    (s = ms_buf_append(out, ms_asset_dygraphs_css, ms_asset_dygraphs_css_len)) ||
	    (s = ms_buf_append(out, ms_asset_report_css, ms_asset_report_css_len)) ||
	    (s = ms_buf_printf(out, "</style>\n</head>\n<body>\n")) ||
	    (s = ms_buf_append(out, ms_asset_report_body, ms_asset_report_body_len)))
		return s;
	for (size_t i = 0; i < n; i++)
		if ((s = data_block(out, datas[i].data, datas[i].len, devices[i], i == first)))
			return s;
	if ((s = ms_buf_printf(out, "<script>\n")) ||
	    (s = ms_buf_append(out, ms_asset_dygraphs_js, ms_asset_dygraphs_js_len)) ||
	    (s = ms_buf_printf(out, "\n</script>\n<script>\n")) ||
	    (s = ms_buf_append(out, ms_asset_report_js, ms_asset_report_js_len)) ||
	    (s = ms_buf_printf(out, "</script>\n</body>\n</html>\n")))
		return s;
	return MS_OK;
}

static ms_status write_page(struct ms_buf *out, const char *source, const char *json,
                            size_t json_len, uint32_t device)
{
	struct ms_buf one = {(char *)json, json_len, json_len};

	return write_pages(out, source, &one, &device, 1, 0);
}

ms_status ms_render_html_devices(struct ms_buf *out, const char *source, const struct ms_buf *datas,
                                 const uint32_t *devices, size_t n, size_t first)
{
	return write_pages(out, source, datas, devices, n, first);
}

/*
 * The page of a snapshot without a trace: no timeline, one moment (the end state as recorded),
 * its top sites and flame graph; the same template and script (D.no_trace).
 */
ms_status ms_render_html_snapshot(const struct ms_render_input *in, struct ms_buf *out,
                                  struct ms_diag *d)
{
	static const char *const columns[] = {"first",
	                                      "last",
	                                      "t_ms",
	                                      "alloc_min",
	                                      "alloc_max",
	                                      "alloc",
	                                      "res_min",
	                                      "res_max",
	                                      "res",
	                                      "active_max",
	                                      "ext",
	                                      "inactive_split",
	                                      "free_in_reserved",
	                                      "largest_free",
	                                      "small_res",
	                                      "large_res",
	                                      "ann",
	                                      "big_size",
	                                      "big_index",
	                                      "big_site",
	                                      "stream_alloc"};
	const struct ms_replay_snap *sn = &in->r->snap;
	struct sites sites;
	struct ms_render_cell *cells;
	struct ms_jsonw w;
	char *json = NULL;
	size_t json_len = 0;
	FILE *f;
	ms_status s = MS_OK;

	(void)d;
	memset(&sites, 0, sizeof(sites));
	sites.syms = in->syms;
	sites.shown = in->frames ? in->frames : MS_FRAMES_USER;
	if (ms_symtab_init(&sites.labels))
		return MS_ERR_NOMEM;
	if (ms_symtab_init(&sites.frames)) {
		ms_symtab_release(&sites.labels);
		return MS_ERR_NOMEM;
	}
	if (!(cells = ms_malloc(sizeof(*cells) * MS_RENDER_DOT_CELLS)) ||
	    !(f = open_memstream(&json, &json_len))) {
		s = MS_ERR_NOMEM;
		goto out;
	}
	ms_jsonw_init(&w, f, 0);
	ms_jsonw_obj_begin(&w);
	ms_jsonw_key(&w, "source");
	ms_jsonw_cstr(&w, in->source);
	ms_jsonw_key(&w, "no_trace");
	ms_jsonw_bool(&w, 1);
	ms_jsonw_key(&w, "device");
	ms_jsonw_u64(&w, in->r->device);
	ms_jsonw_key(&w, "alloc_conf");
	ms_jsonw_cstr(&w, in->r->alloc_conf);
	ms_jsonw_key(&w, "device_memory");
	ms_jsonw_null(&w);
	ms_jsonw_key(&w, "limit");
	ms_jsonw_u64(&w, 0);
	ms_jsonw_key(&w, "events");
	ms_jsonw_u64(&w, in->r->events_total);
	ms_jsonw_key(&w, "replayed");
	ms_jsonw_u64(&w, 0);
	ms_jsonw_key(&w, "ended_by_oom");
	ms_jsonw_bool(&w, 0);
	ms_jsonw_key(&w, "window");
	ms_jsonw_arr_begin(&w);
	ms_jsonw_u64(&w, 0);
	ms_jsonw_u64(&w, 0);
	ms_jsonw_arr_end(&w);
	ms_jsonw_key(&w, "peak");
	ms_jsonw_obj_begin(&w);
	ms_jsonw_key(&w, "index");
	ms_jsonw_u64(&w, sn->index);
	ms_jsonw_key(&w, "allocated");
	ms_jsonw_i64(&w, sn->stats.allocated_bytes[0].current);
	ms_jsonw_key(&w, "reserved");
	ms_jsonw_i64(&w, sn->stats.reserved_bytes[0].current);
	ms_jsonw_obj_end(&w);
	ms_jsonw_key(&w, "bucket_events");
	ms_jsonw_u64(&w, 0);
	ms_jsonw_key(&w, "timeline");
	ms_jsonw_obj_begin(&w);
	for (size_t i = 0; i < sizeof(columns) / sizeof(columns[0]); i++) {
		ms_jsonw_key(&w, columns[i]);
		ms_jsonw_arr_begin(&w);
		ms_jsonw_arr_end(&w);
	}
	ms_jsonw_obj_end(&w);
	ms_jsonw_key(&w, "fine");
	ms_jsonw_obj_begin(&w);
	ms_jsonw_key(&w, "bucket_events");
	ms_jsonw_u64(&w, 0);
	for (size_t i = 0; i < 6; i++) {
		static const char *const fine[] = {"first",     "t_ms",    "alloc_min",
		                                   "alloc_max", "res_min", "res_max"};
		ms_jsonw_key(&w, fine[i]);
		ms_jsonw_arr_begin(&w);
		ms_jsonw_arr_end(&w);
	}
	ms_jsonw_obj_end(&w);
	ms_jsonw_key(&w, "streams");
	ms_jsonw_arr_begin(&w);
	ms_jsonw_arr_end(&w);
	ms_jsonw_key(&w, "strings");
	ms_jsonw_obj_begin(&w);
	ms_jsonw_obj_end(&w);
	ms_jsonw_key(&w, "moments");
	ms_jsonw_arr_begin(&w);
	snap_json(&w, sn, "snapshot", &sites, cells);
	ms_jsonw_arr_end(&w);
	ms_jsonw_key(&w, "oom");
	ms_jsonw_null(&w);
	ms_jsonw_key(&w, "whatif");
	ms_jsonw_null(&w);
	ms_jsonw_key(&w, "top_sites_at_peak");
	s = top_sites(&w, sn, &sites);
	ms_jsonw_key(&w, "flame_at_peak");
	if (!s)
		s = flame_json(&w, sn, in->syms);
	ms_jsonw_key(&w, "sites");
	ms_jsonw_arr_begin(&w);
	for (size_t i = 0; i < sites_n(&sites); i++)
		ms_jsonw_cstr(&w, ms_symtab_get_str(&sites.labels, (uint32_t)i + 1)->s);
	ms_jsonw_arr_end(&w);
	ms_jsonw_key(&w, "site_stacks");
	ms_jsonw_arr_begin(&w);
	for (size_t i = 0; i < sites_n(&sites); i++)
		stack_json(&w, &sites, in->syms, sites.first[i]);
	ms_jsonw_arr_end(&w);
	ms_jsonw_key(&w, "frames");
	frames_json(&w, &sites);
	ms_jsonw_obj_end(&w);
	if (fclose(f) != 0 && !s)
		s = MS_ERR_NOMEM;
	if (!s && (sites.nomem || !json))
		s = MS_ERR_NOMEM;
	if (!s)
		s = write_page(out, in->source, json, json_len, in->r->device);
out:
	free(json); /* open_memstream's buffer belongs to libc */
	ms_free(cells);
	ms_symtab_release(&sites.labels);
	ms_symtab_release(&sites.frames);
	ms_free(sites.first);
	ms_u64map_release(&sites.ids);
	return s;
}

ms_status ms_render_html(const struct ms_render_html_input *in, struct ms_buf *out,
                         struct ms_diag *d)
{
	struct ms_replay_opts o = *in->opts;
	struct ms_replay_result r;
	struct lod lod;
	struct sites sites;
	uint64_t *at = NULL;
	size_t n_at = 0, moments = in->moments ? in->moments : 48;
	struct ms_render_cell *cells = NULL;
	struct ms_jsonw w;
	struct ms_u64map named = MS_U64MAP_INIT;
	struct ms_symtab own_syms;
	const struct ms_symtab *syms;
	char *json = NULL;
	size_t json_len = 0;
	FILE *f;
	ms_status s;
	uint64_t total = in->first->events_total, lo = in->from, hi = total, peak_index;
	int oom_shown;

	memset(&lod, 0, sizeof(lod));
	memset(&sites, 0, sizeof(sites));
	memset(&r, 0, sizeof(r));
	if (ms_symtab_init(&own_syms))
		return MS_ERR_NOMEM;
	/* a trace in memory has its table; one streamed from its file fills ours */
	syms = in->trace ? &in->trace->syms : &own_syms;
	if (in->to && in->to < hi)
		hi = in->to;
	if (lo >= hi) {
		ms_symtab_release(&own_syms);
		return ms__diag_set(d, MS_ERR_INVALID_ARG, -1, -1,
		                    "the window [%llu, %llu) holds none of the trace's %llu events",
		                    (unsigned long long)lo, (unsigned long long)hi,
		                    (unsigned long long)total);
	}
	/* the peak and the OOM shown are the window's */
	peak_index = in->first->peak_allocated_index;
	if ((lo > 0 || hi < total) &&
	    (s = ms_render_window_peak(in->trace, in->path, in->opts, lo, hi, &peak_index, d))) {
		ms_symtab_release(&own_syms);
		return s;
	}
	oom_shown = in->first->has_oom && in->first->first_oom.index >= lo &&
	            in->first->first_oom.index < hi;
	sites.syms = syms;
	sites.shown = in->frames ? in->frames : MS_FRAMES_USER;
	if (ms_symtab_init(&sites.frames)) {
		s = MS_ERR_NOMEM;
		goto out;
	}
	if (ms_symtab_init(&sites.labels)) {
		s = MS_ERR_NOMEM;
		goto out;
	}
	lod.from = lo;
	lod.total = hi;
	lod.width = (hi - lo) / (in->buckets ? in->buckets : 2000) + 1;
	lod.fine_width = (hi - lo) / ((in->buckets ? in->buckets : 2000) * FINE) + 1;
	/* the moments the segment map can show: evenly spaced, the peak, the OOM */
	if (!(at = ms_malloc(sizeof(*at) * (moments + 2))) ||
	    !(cells = ms_malloc(sizeof(*cells) * MS_RENDER_DOT_CELLS))) {
		s = MS_ERR_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < moments; i++)
		at[n_at++] = lo + (hi - lo - 1) * (i + 1) / moments;
	at[n_at++] = peak_index;
	if (oom_shown)
		at[n_at++] = in->first->first_oom.index;
	qsort(at, n_at, sizeof(*at), u64_cmp);
	{
		size_t k = 0;
		for (size_t i = 0; i < n_at; i++)
			if (!k || at[k - 1] != at[i])
				at[k++] = at[i];
		n_at = k;
	}
	o.snap = hi < total; /* stop at the window's end */
	o.snap_index = hi - 1;
	o.more_snaps = at;
	o.n_more_snaps = n_at;
	o.on_event = on_event;
	o.on_annotation = collect_annotation;
	o.ctx = &lod;
	lod.res = &r;
	o.syms = &own_syms;
	if ((s = in->trace ? ms_replay_trace(in->trace, &o, &r, d)
	                   : ms_replay_run(in->path, &o, &r, d)))
		goto out;
	if (lod.nomem) {
		s = MS_ERR_NOMEM;
		goto out;
	}
	annotate(&lod, r.device);
	if (!lod.n) {
		s = ms__diag_set(d, MS_ERR_INVALID_ARG, -1, -1,
		                 "no events of device %u in events [%llu, %llu): nothing to draw",
		                 (unsigned)r.device, (unsigned long long)lo,
		                 (unsigned long long)hi);
		goto out;
	}

	if (!(f = open_memstream(&json, &json_len))) {
		s = MS_ERR_NOMEM;
		goto out;
	}
	ms_jsonw_init(&w, f, 0);
	ms_jsonw_obj_begin(&w);
	ms_jsonw_key(&w, "source");
	ms_jsonw_cstr(&w, in->source);
	ms_jsonw_key(&w, "device");
	ms_jsonw_u64(&w, r.device);
	ms_jsonw_key(&w, "alloc_conf");
	ms_jsonw_cstr(&w, r.alloc_conf);
	ms_jsonw_key(&w, "device_memory");
	if (r.device_memory == UINT64_MAX)
		ms_jsonw_null(&w);
	else
		ms_jsonw_u64(&w, r.device_memory);
	ms_jsonw_key(&w, "limit");
	ms_jsonw_u64(&w, r.limit);
	/* what the verdicts rest on: a guessed size or limit is said to be one */
	ms_jsonw_key(&w, "device_memory_source");
	ms_jsonw_cstr(&w, ms_devmem_source_name(in->first->device_memory_source));
	ms_jsonw_key(&w, "mid_run");
	if (r.rebuilt) {
		ms_jsonw_obj_begin(&w);
		ms_jsonw_key(&w, "reserved");
		ms_jsonw_u64(&w, r.initial_reserved);
		ms_jsonw_key(&w, "segments");
		ms_jsonw_u64(&w, r.initial_segments);
		ms_jsonw_key(&w, "live_blocks");
		ms_jsonw_u64(&w, r.initial_live_blocks);
		ms_jsonw_obj_end(&w);
	} else {
		ms_jsonw_null(&w);
	}
	ms_jsonw_key(&w, "limit_inferred");
	if (in->limit_inferred) {
		ms_jsonw_arr_begin(&w);
		ms_jsonw_u64(&w, in->limit_lo);
		ms_jsonw_u64(&w, in->limit_hi);
		ms_jsonw_arr_end(&w);
	} else {
		ms_jsonw_null(&w);
	}
	ms_jsonw_key(&w, "events");
	ms_jsonw_u64(&w, r.events_total);
	ms_jsonw_key(&w, "replayed");
	ms_jsonw_u64(&w, r.events_replayed);
	ms_jsonw_key(&w, "ended_by_oom");
	ms_jsonw_bool(&w, r.ended_by_oom);
	ms_jsonw_key(&w, "window");
	ms_jsonw_arr_begin(&w);
	ms_jsonw_u64(&w, lo);
	ms_jsonw_u64(&w, hi);
	ms_jsonw_arr_end(&w);
	{
		uint64_t pa = 0, pr = 0;
		for (size_t i = 0; i < lod.n; i++) {
			pa = lod.b[i].s.amax > pa ? lod.b[i].s.amax : pa;
			pr = lod.b[i].s.rmax > pr ? lod.b[i].s.rmax : pr;
		}
		ms_jsonw_key(&w, "peak");
		ms_jsonw_obj_begin(&w);
		ms_jsonw_key(&w, "index");
		ms_jsonw_u64(&w, peak_index);
		ms_jsonw_key(&w, "allocated");
		ms_jsonw_u64(&w, pa);
		ms_jsonw_key(&w, "reserved");
		ms_jsonw_u64(&w, pr);
		ms_jsonw_obj_end(&w);
	}
	ms_jsonw_key(&w, "bucket_events");
	ms_jsonw_u64(&w, lod.width);
	/* columns of the timeline, one entry per bucket */
	ms_jsonw_key(&w, "timeline");
	ms_jsonw_obj_begin(&w);
/* one column of a level: rows[0 .. count) of type T, each row x giving expr */
#define COLUMN(name, rows, count, T, expr)                 \
	do {                                               \
		ms_jsonw_key(&w, name);                    \
		ms_jsonw_arr_begin(&w);                    \
		for (size_t i = 0; i < (count); i++) {     \
			const T *x = &(rows)[i];           \
			ms_jsonw_i64(&w, (int64_t)(expr)); \
		}                                          \
		ms_jsonw_arr_end(&w);                      \
	} while (0)
	COLUMN("first", lod.b, lod.n, struct bucket, x->s.first);
	COLUMN("last", lod.b, lod.n, struct bucket, x->last);
	COLUMN("t_ms", lod.b, lod.n, struct bucket, x->s.t_ns / 1000000);
	COLUMN("alloc_min", lod.b, lod.n, struct bucket, x->s.amin);
	COLUMN("alloc_max", lod.b, lod.n, struct bucket, x->s.amax);
	COLUMN("alloc", lod.b, lod.n, struct bucket, x->alloc);
	COLUMN("res_min", lod.b, lod.n, struct bucket, x->s.rmin);
	COLUMN("res_max", lod.b, lod.n, struct bucket, x->s.rmax);
	COLUMN("res", lod.b, lod.n, struct bucket, x->reserved);
	COLUMN("active_max", lod.b, lod.n, struct bucket, x->active_max);
	COLUMN("ext", lod.b, lod.n, struct bucket, x->ext_max);
	COLUMN("inactive_split", lod.b, lod.n, struct bucket, x->inactive_split);
	COLUMN("free_in_reserved", lod.b, lod.n, struct bucket, x->free_in_reserved);
	COLUMN("largest_free", lod.b, lod.n, struct bucket, x->largest_free);
	COLUMN("small_res", lod.b, lod.n, struct bucket, x->small_reserved);
	COLUMN("large_res", lod.b, lod.n, struct bucket, x->large_reserved);
	COLUMN("ann", lod.b, lod.n, struct bucket, x->ann);
	COLUMN("big_size", lod.b, lod.n, struct bucket, x->big_size);
	COLUMN("big_index", lod.b, lod.n, struct bucket, x->big_index);
	COLUMN("big_site", lod.b, lod.n, struct bucket, site_of(&sites, x->big_stack));
	ms_jsonw_key(&w, "stream_alloc");
	ms_jsonw_arr_begin(&w);
	for (int k = 0; k <= lod.n_streams && lod.n_streams > 1; k++) {
		ms_jsonw_arr_begin(&w);
		for (size_t i = 0; i < lod.n; i++)
			ms_jsonw_i64(&w, lod.b[i].stream_alloc[k]);
		ms_jsonw_arr_end(&w);
	}
	ms_jsonw_arr_end(&w);
	ms_jsonw_obj_end(&w);
	/* the finer level, for zooming in */
	ms_jsonw_key(&w, "fine");
	ms_jsonw_obj_begin(&w);
	ms_jsonw_key(&w, "bucket_events");
	ms_jsonw_u64(&w, lod.fine_width);
	COLUMN("first", lod.f, lod.n_fine, struct span, x->first);
	COLUMN("t_ms", lod.f, lod.n_fine, struct span, x->t_ns / 1000000);
	COLUMN("alloc_min", lod.f, lod.n_fine, struct span, x->amin);
	COLUMN("alloc_max", lod.f, lod.n_fine, struct span, x->amax);
	COLUMN("res_min", lod.f, lod.n_fine, struct span, x->rmin);
	COLUMN("res_max", lod.f, lod.n_fine, struct span, x->rmax);
#undef COLUMN
	ms_jsonw_obj_end(&w);
	ms_jsonw_key(&w, "streams");
	ms_jsonw_arr_begin(&w);
	for (int k = 0; k < lod.n_streams && lod.n_streams > 1; k++) {
		char hex[24];
		snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)lod.stream_id[k]);
		ms_jsonw_cstr(&w, hex);
	}
	ms_jsonw_arr_end(&w);
	/* the annotation names the timeline uses, by string id */
	ms_jsonw_key(&w, "strings");
	ms_jsonw_obj_begin(&w);
	for (size_t i = 0; i < lod.n; i++) {
		char key[16];
		const struct ms_str *str;
		if (lod.b[i].ann < 0 || (uint64_t)lod.b[i].ann >= ms_symtab_nstrs(syms) ||
		    ms_u64map_get(&named, (uint64_t)lod.b[i].ann))
			continue;
		if (ms_u64map_put(&named, (uint64_t)lod.b[i].ann, 1))
			sites.nomem = 1;
		snprintf(key, sizeof(key), "%lld", (long long)lod.b[i].ann);
		str = ms_symtab_get_str(syms, (uint32_t)lod.b[i].ann);
		ms_jsonw_key(&w, key);
		ms_jsonw_str(&w, str->s, str->len);
	}
	ms_jsonw_obj_end(&w);
	ms_jsonw_key(&w, "moments");
	ms_jsonw_arr_begin(&w);
	for (size_t i = 0; i < r.n_snaps; i++) {
		const struct ms_replay_snap *sn = &r.snaps[i];
		const char *label = sn->index == peak_index                                ? "peak"
		                    : oom_shown && sn->index == in->first->first_oom.index ? "oom"
		                                                                           : "";
		snap_json(&w, sn, label, &sites, cells);
	}
	ms_jsonw_arr_end(&w);
	ms_jsonw_key(&w, "oom");
	if (oom_shown)
		oom_json(&w, in->first, &sites);
	else
		ms_jsonw_null(&w);
	ms_jsonw_key(&w, "whatif");
	if (oom_shown)
		s = whatif_json(&w, in, d);
	else
		ms_jsonw_null(&w);
	ms_jsonw_key(&w, "top_sites_at_peak");
	{
		const struct ms_replay_snap *peak = NULL;
		for (size_t i = 0; i < r.n_snaps; i++)
			if (r.snaps[i].index == peak_index)
				peak = &r.snaps[i];
		if (peak && !s)
			s = top_sites(&w, peak, &sites);
		else
			ms_jsonw_null(&w);
		ms_jsonw_key(&w, "flame_at_peak");
		if (peak && !s)
			s = flame_json(&w, peak, syms);
		else
			ms_jsonw_null(&w);
	}
	ms_jsonw_key(&w, "sites");
	ms_jsonw_arr_begin(&w);
	for (size_t i = 0; i < sites_n(&sites); i++)
		ms_jsonw_cstr(&w, ms_symtab_get_str(&sites.labels, (uint32_t)i + 1)->s);
	ms_jsonw_arr_end(&w);
	ms_jsonw_key(&w, "site_stacks");
	ms_jsonw_arr_begin(&w);
	for (size_t i = 0; i < sites_n(&sites); i++)
		stack_json(&w, &sites, syms, sites.first[i]);
	ms_jsonw_arr_end(&w);
	ms_jsonw_key(&w, "frames");
	frames_json(&w, &sites);
	ms_jsonw_obj_end(&w);
	if (fclose(f) != 0 && !s)
		s = MS_ERR_NOMEM;
	if (!s && (sites.nomem || !json))
		s = MS_ERR_NOMEM;
	if (s)
		goto out;

	s = in->data_only ? ms_buf_append(out, json, json_len)
	                  : write_page(out, in->source, json, json_len, r.device);
out:
	free(json); /* open_memstream's buffer belongs to libc */
	ms_free(at);
	ms_free(cells);
	ms_free(lod.b);
	ms_free(lod.f);
	ms_free(lod.anns);
	ms_symtab_release(&sites.labels);
	ms_symtab_release(&sites.frames);
	ms_free(sites.first);
	ms_u64map_release(&sites.ids);
	ms_u64map_release(&named);
	ms_replay_result_release(&r);
	ms_symtab_release(&own_syms);
	return s;
}

#else

int ms_render_have_html(void)
{
	return 0;
}

ms_status ms_render_html(const struct ms_render_html_input *in, struct ms_buf *out,
                         struct ms_diag *d)
{
	(void)in;
	(void)out;
	return ms__diag_set(d, MS_ERR_UNSUPPORTED, -1, -1,
	                    "this memsnap was built without dygraphs (libjs-dygraphs): no HTML "
	                    "report; use --format txt, dot or svg");
}

ms_status ms_render_html_snapshot(const struct ms_render_input *in, struct ms_buf *out,
                                  struct ms_diag *d)
{
	(void)in;
	(void)out;
	return ms__diag_set(d, MS_ERR_UNSUPPORTED, -1, -1,
	                    "this memsnap was built without dygraphs (libjs-dygraphs): no HTML "
	                    "report; use --format txt, dot or svg");
}

ms_status ms_render_html_devices(struct ms_buf *out, const char *source, const struct ms_buf *datas,
                                 const uint32_t *devices, size_t n, size_t first)
{
	(void)out;
	(void)source;
	(void)datas;
	(void)devices;
	(void)n;
	(void)first;
	return MS_ERR_UNSUPPORTED;
}
#endif
