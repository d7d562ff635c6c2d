/*
 * The HTML report's data (report.h): one replay of the trace collects the timeline in buckets
 * of consecutive events (the minimum and maximum of allocated and reserved bytes, so that no
 * peak is lost however long the trace, the most active bytes, the fragmentation figures), the
 * state at evenly spaced moments, at the peak and at the OOM, and then the sites, top sites,
 * flame graph and stacks that the page shows. Its size depends on the number of buckets and
 * moments, not on the trace's length.
 */
#include "render/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/hash.h"
#include "common/status.h"
#include "explain/explain.h"
#include "parse/source.h"
#include "parse/trace.h"
#include "replay/site.h"

/* The window's peak (also for render's other formats). */
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

ms_status ms_report_window_peak(const struct ms_trace *t, const struct ms_source *src,
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
	s = t ? ms_replay_trace(t, &o, &r, d) : ms_replay_source(src, MS_PASS_REPORT, &o, &r, d);
	ms_replay_result_release(&r);
	*index = w.index;
	return s;
}

/*
 * What the report is built with besides the report itself: the growth of its arrays, the
 * replay's annotations, the stack -> site map and the cells of one segment.
 */
struct builder {
	struct ms_report *rep;
	uint64_t width, fine_width; /* events per bucket, per fine bucket */
	size_t cap_buckets, cap_fine, cap_moments, cap_segs, cap_cells;
	struct ms_annotation *anns; /* the trace's, collected as the replay reads them */
	size_t n_anns, cap_anns;
	int64_t stream_cur[MS_REPORT_STREAMS + 1], prev_alloc;
	const struct ms_replay_result *res; /* the replay's result as it runs: external_now */
	/* sites, of the stacks of rep->syms */
	struct ms_u64map site_ids; /* stack -> site */
	uint32_t *site_first;      /* site -> the first stack seen with it */
	size_t cap_first;
	uint32_t shown; /* --frames */
	struct ms_render_cell *cells;
	int nomem;
};

static void span_start(struct ms_report_span *s, uint64_t index, int64_t t_ns, uint64_t a,
                       uint64_t r)
{
	*s = (struct ms_report_span){index, t_ns, a, a, r, r, a};
}

static void span_extend(struct ms_report_span *s, uint64_t a, uint64_t r)
{
	s->amin = a < s->amin ? a : s->amin;
	s->amax = a > s->amax ? a : s->amax;
	s->rmin = r < s->rmin ? r : s->rmin;
	s->rmax = r > s->rmax ? r : s->rmax;
	s->alast = a;
}

static void on_event(void *ctx, uint64_t index, const struct ms_event *e, const struct ms_model *m)
{
	struct builder *l = ctx;
	struct ms_report *rep = l->rep;
	const struct ms_model_stats *st = ms_model_stats(m);
	uint64_t a = (uint64_t)st->allocated_bytes[MS_POOL_ALL].current;
	uint64_t r = (uint64_t)st->reserved_bytes[MS_POOL_ALL].current;
	uint64_t act = (uint64_t)st->active_bytes[MS_POOL_ALL].current;
	struct ms_report_bucket *b;
	size_t si;

	if (l->nomem)
		return;
	/* allocated bytes change only through allocs and frees, of blocks of the event's stream */
	for (si = 0; si < rep->n_streams && rep->streams[si] != e->stream; si++)
		;
	if (si == rep->n_streams && si < MS_REPORT_STREAMS && (int64_t)a != l->prev_alloc)
		rep->streams[rep->n_streams++] = e->stream;
	l->stream_cur[si] += (int64_t)a - l->prev_alloc;
	l->prev_alloc = (int64_t)a;
	if (index < rep->from || index >= rep->to)
		return;
	if (!rep->n_fine ||
	    (index - rep->from) / l->fine_width !=
	            (rep->fine[rep->n_fine - 1].first - rep->from) / l->fine_width) {
		if (ms_grow(&rep->fine, &l->cap_fine, rep->n_fine + 1, sizeof(*rep->fine))) {
			l->nomem = 1;
			return;
		}
		span_start(&rep->fine[rep->n_fine++], index, e->t_ns, a, r);
	} else {
		span_extend(&rep->fine[rep->n_fine - 1], a, r);
	}
	if (!rep->n_buckets ||
	    (index - rep->from) / l->width !=
	            (rep->buckets[rep->n_buckets - 1].s.first - rep->from) / l->width) {
		if (ms_grow(&rep->buckets, &l->cap_buckets, rep->n_buckets + 1,
		            sizeof(*rep->buckets))) {
			l->nomem = 1;
			return;
		}
		b = &rep->buckets[rep->n_buckets++];
		memset(b, 0, sizeof(*b));
		span_start(&b->s, index, e->t_ns, a, r);
	}
	b = &rep->buckets[rep->n_buckets - 1];
	b->last = index;
	if (e->action == MS_ACT_ALLOC && e->size > b->big_size) {
		b->big_size = e->size;
		b->big_index = index;
		b->big_stack = e->stack;
	}
	span_extend(&b->s, a, r);
	b->active_max = act > b->active_max ? act : b->active_max;
	if (l->res) {
		/* outside PyTorch now: the recorder's last measurement, moved by the raw calls
		   since; else the raw calls alone */
		const struct ms_replay_result *res = l->res;
		uint64_t out = res->external_now, mark;
		if (res->n_outside_points)
			ms_replay_outside_at(res, UINT64_MAX, res->external_now, &out, &mark);
		if (out > b->ext_max)
			b->ext_max = out;
		b->ext_known |= res->n_outside_points || res->events_external;
	}
	b->alloc = a;
	b->reserved = r;
	memcpy(b->stream_alloc, l->stream_cur, sizeof(b->stream_alloc));
	b->inactive_split = (uint64_t)st->inactive_split_bytes[MS_POOL_ALL].current;
	b->small_reserved = (uint64_t)st->reserved_bytes[MS_POOL_SMALL].current;
	b->large_reserved = (uint64_t)st->reserved_bytes[MS_POOL_LARGE].current;
	{
		size_t np;
		const struct ms_model_pool *pools = ms_model_pools(m, &np);
		b->private_allocated = b->private_reserved = 0;
		for (size_t i = 1; i < np; i++) {
			b->private_allocated += (uint64_t)pools[i].allocated_bytes.current;
			b->private_reserved += (uint64_t)pools[i].reserved_bytes.current;
		}
	}
	/*
	 * The free space walks the pools: once per bucket, at its first event (its last is not
	 * known in time: the trace may go on with other devices' events)
	 */
	if (b->s.first == index)
		ms_model_free_space(m, &b->free_in_reserved, &b->largest_free);
}

/* An allocation's life, for the per-allocation timeline (its bands weigh it). */
static void on_release(void *ctx, uint64_t index, uint64_t made, uint32_t stack, uint64_t addr,
                       uint64_t size)
{
	struct builder *l = ctx;

	ms_bands_add(&l->rep->bands, made, index == UINT64_MAX ? MS_BANDS_NONE : index, size, addr,
	             stack);
}

static ms_status collect_annotation(void *ctx, const struct ms_annotation *a)
{
	struct builder *l = ctx;

	if (ms_grow(&l->anns, &l->cap_anns, l->n_anns + 1, sizeof(*l->anns)))
		return MS_ERR_NOMEM;
	l->anns[l->n_anns++] = *a;
	return MS_OK;
}

/*
 * Each bucket's innermost open annotation (record_function ranges and phases) at its first
 * event: a stack of open names, an end closing the latest open one of its name.
 */
static void annotate(struct builder *l, uint32_t device)
{
	enum { DEPTH = 64 };
	struct ms_report *rep = l->rep;
	uint32_t open[DEPTH];
	size_t depth = 0, k = 0;

	for (size_t i = 0; i < rep->n_buckets; i++) {
		for (; k < l->n_anns && l->anns[k].event_index <= rep->buckets[i].s.first; k++) {
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
		rep->buckets[i].ann = depth && depth <= DEPTH ? (int64_t)open[depth - 1] : -1;
	}
}

/* The annotation names the buckets use, each once, in the order they first appear. */
static void ann_names(struct builder *l)
{
	struct ms_report *rep = l->rep;
	struct ms_u64map named = MS_U64MAP_INIT;
	size_t cap = 0;

	for (size_t i = 0; i < rep->n_buckets; i++) {
		int64_t ann = rep->buckets[i].ann;
		if (ann < 0 || (uint64_t)ann >= ms_symtab_nstrs(rep->syms) ||
		    ms_u64map_get(&named, (uint64_t)ann))
			continue;
		if (ms_u64map_put(&named, (uint64_t)ann, 1) ||
		    ms_grow(&rep->ann_names, &cap, rep->n_ann_names + 1, sizeof(*rep->ann_names))) {
			l->nomem = 1;
			break;
		}
		rep->ann_names[rep->n_ann_names++] = (uint32_t)ann;
	}
	ms_u64map_release(&named);
}

/*
 * Sites: the label of a stack (ms_stack_label, replay/site.h), each label once; stacks that
 * differ deeper down share their site, and the page shows the first one's frames. Labels are
 * interned in a symtab of their own: site i is its string id i + 1 (labels are never empty).
 */
static size_t sites_n(const struct ms_report *rep)
{
	return ms_symtab_nstrs(&rep->site_labels) ? ms_symtab_nstrs(&rep->site_labels) - 1u : 0;
}

static int64_t site_of(struct builder *l, uint32_t stack)
{
	struct ms_report *rep = l->rep;
	const uint64_t *v;
	char label[1024];
	uint32_t id;
	size_t before;

	if (!stack || !rep->syms || stack >= ms_symtab_nstacks(rep->syms))
		return -1;
	if ((v = ms_u64map_get(&l->site_ids, stack)))
		return (int64_t)*v;
	ms_stack_label_depth(rep->syms, stack, rep->site_depth ? rep->site_depth : 1, label,
	                     sizeof(label));
	before = sites_n(rep);
	if (ms_symtab_str(&rep->site_labels, label, strlen(label), &id) || id == 0 ||
	    ms_u64map_put(&l->site_ids, stack, id - 1) ||
	    ms_grow(&l->site_first, &l->cap_first, id, sizeof(*l->site_first))) {
		l->nomem = 1;
		return -1;
	}
	if (sites_n(rep) > before) /* a new label */
		l->site_first[id - 1] = stack;
	return (int64_t)id - 1;
}

/*
 * A stack of y as the page has it (struct ms_report_stack); its frames are interned by content
 * in the report's frames (ids 1, 2, ...).
 */
static void stack_of(struct builder *l, const struct ms_symtab *y, uint32_t stack,
                     struct ms_report_stack *out)
{
	struct ms_symtab *frames = &l->rep->frames;
	size_t n, k, *pos;
	const uint32_t *fr = ms_symtab_get_stack(y, stack, &n);

	out->known = 1;
	if (!(out->frames = ms_malloc(sizeof(*out->frames) * (n ? n : 1))) ||
	    !(pos = ms_malloc(sizeof(*pos) * (n ? n : 1)))) {
		l->nomem = 1;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct ms_frame *f = &y->frames[fr[i]];
		const struct ms_str *name = ms_symtab_get_str(y, f->name);
		const struct ms_str *file = ms_symtab_get_str(y, f->file);
		struct ms_frame g = {0, 0, f->line};
		uint32_t id = 0;
		if (ms_symtab_str(frames, name->s, name->len, &g.name) ||
		    ms_symtab_str(frames, file->s, file->len, &g.file) ||
		    ms_symtab_frame(frames, &g, &id))
			l->nomem = 1;
		out->frames[i] = id ? id - 1 : 0;
	}
	out->n = n;
	ms_site_frames(y, stack, MS_FRAMES_ALL, pos, n, &out->site);
	if (l->shown == MS_FRAMES_ALL) {
		out->shown_all = 1;
		ms_free(pos);
		return;
	}
	k = ms_site_frames(y, stack, l->shown, pos, n, NULL);
	out->shown = pos;
	out->n_shown = k < n ? k : n;
}

/* A moment: its segments, each as at most MS_RENDER_DOT_CELLS cells (ms_render_cells). */
static void add_moment(struct builder *l, const struct ms_replay_snap *sn, const char *label)
{
	struct ms_report *rep = l->rep;
	struct ms_report_moment *m;
	size_t k = 0;

	if (ms_grow(&rep->moments, &l->cap_moments, rep->n_moments + 1, sizeof(*rep->moments)) ||
	    ms_grow(&rep->segs, &l->cap_segs, rep->n_segs + sn->n_segs, sizeof(*rep->segs))) {
		l->nomem = 1;
		return;
	}
	m = &rep->moments[rep->n_moments++];
	*m = (struct ms_report_moment){sn->index, label, sn->stats.allocated_bytes[0].current,
	                               sn->stats.reserved_bytes[0].current, sn->n_segs};
	for (size_t i = 0; i < sn->n_segs; i++) {
		const struct ms_segment *g = &sn->segs[i];
		const struct ms_block *b = sn->blocks + k;
		size_t nc = ms_render_cells(b, g->n_blocks, l->cells);
		if (ms_grow(&rep->cells, &l->cap_cells, rep->n_cells + nc, sizeof(*rep->cells))) {
			l->nomem = 1;
			return;
		}
		rep->segs[rep->n_segs++] =
		        (struct ms_report_segment){g->addr,
		                                   g->total_size,
		                                   g->stream,
		                                   g->is_small,
		                                   g->is_expandable,
		                                   nc,
		                                   {g->pool_id[0], g->pool_id[1]}};
		for (size_t j = 0; j < nc; j++) {
			const struct ms_render_cell *c = &l->cells[j];
			struct ms_report_cell *x = &rep->cells[rep->n_cells++];
			x->size = c->bytes[0] + c->bytes[1] + c->bytes[2] + c->bytes[3];
			x->state = ms_render_cell_state(c);
			x->requested = x->state == 0 ? c->bytes[0] : 0;
			x->site = c->to - c->from == 1 && x->state != 3
			                  ? site_of(l, b[c->from].stack)
			                  : -1;
			x->blocks = c->to - c->from;
		}
		k += g->n_blocks;
	}
}

static int site_bytes_cmp(const void *x, const void *y)
{
	const struct ms_report_site_bytes *a = x, *b = y;
	return a->bytes > b->bytes ? -1 : a->bytes < b->bytes;
}

/* The top allocation sites among the allocated blocks of sn, by bytes. */
static void top_sites(struct builder *l, const struct ms_replay_snap *sn)
{
	struct ms_report *rep = l->rep;
	struct ms_u64map at = MS_U64MAP_INIT;
	struct ms_report_site_bytes *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t i64;

	for (size_t i = 0; i < sn->n_blocks; i++) {
		const struct ms_block *b = &sn->blocks[i];
		const uint64_t *hit;
		int64_t site;
		if (b->state != MS_BLOCK_ACTIVE_ALLOCATED)
			continue;
		site = site_of(l, b->stack);
		if ((hit = ms_u64map_get(&at, (uint64_t)(site + 1)))) {
			i64 = *hit;
		} else {
			if (ms_grow(&v, &cap, n + 1, sizeof(*v)) ||
			    ms_u64map_put(&at, (uint64_t)(site + 1), n)) {
				l->nomem = 1;
				break;
			}
			v[n] = (struct ms_report_site_bytes){site, 0, 0};
			i64 = n++;
		}
		v[i64].bytes += b->size;
		v[i64].count++;
	}
	if (n)
		qsort(v, n, sizeof(*v), site_bytes_cmp);
	rep->top_sites = v;
	rep->n_top_sites = n < MS_REPORT_TOP_SITES ? n : MS_REPORT_TOP_SITES;
	ms_u64map_release(&at);
}

/* The flame graph's node for frame under parent, made when new. */
static size_t flame_child(struct builder *l, struct ms_u64map *at, size_t *cap, size_t parent,
                          uint32_t frame)
{
	struct ms_report *rep = l->rep;
	uint64_t key = (uint64_t)parent << 32 | frame;
	const uint64_t *v = ms_u64map_get(at, key);
	size_t k;

	if (v)
		return (size_t)*v;
	if (rep->n_flame >= UINT32_MAX ||
	    ms_grow(&rep->flame, cap, rep->n_flame + 1, sizeof(*rep->flame)) ||
	    ms_u64map_put(at, key, rep->n_flame)) {
		l->nomem = 1;
		return 0;
	}
	k = rep->n_flame++;
	rep->flame[k] = (struct ms_report_flame_node){frame, 0, 0, rep->flame[parent].child};
	rep->flame[parent].child = k;
	return k;
}

static void flame(struct builder *l, const struct ms_replay_snap *sn)
{
	struct ms_report *rep = l->rep;
	const struct ms_symtab *y = rep->syms;
	struct ms_u64map at = MS_U64MAP_INIT; /* (parent << 32 | frame) -> node */
	size_t cap = 0;

	if (!y)
		return;
	if (ms_grow(&rep->flame, &cap, 1, sizeof(*rep->flame))) {
		l->nomem = 1;
		return;
	}
	rep->flame[0] = (struct ms_report_flame_node){0, 0, 0, 0};
	rep->n_flame = 1;
	for (size_t i = 0; i < sn->n_blocks && !l->nomem; i++) {
		const struct ms_block *b = &sn->blocks[i];
		const uint32_t *fr;
		size_t nf, k = 0;
		if (b->state != MS_BLOCK_ACTIVE_ALLOCATED || !b->stack ||
		    b->stack >= ms_symtab_nstacks(y))
			continue;
		rep->flame[0].bytes += b->size;
		fr = ms_symtab_get_stack(y, b->stack, &nf);
		for (size_t j = nf; j-- > 0 && !l->nomem;) { /* outermost first */
			k = flame_child(l, &at, &cap, k, fr[j]);
			rep->flame[k].bytes += b->size;
		}
	}
	ms_u64map_release(&at);
}

static void band_stacks(struct builder *l);

/*
 * What follows the moments, in the order the page's data names sites and frames (so that both
 * are numbered in the order they first appear in it): the top sites and flame graph at the
 * peak (NULL: none), the OOM holders' stacks (of holders, the first pass's table; NULL: none),
 * then each site's stack.
 */
static ms_status finish(struct builder *l, const struct ms_replay_snap *peak,
                        const struct ms_symtab *holders)
{
	struct ms_report *rep = l->rep;

	if (peak) {
		rep->has_peak = 1;
		top_sites(l, peak);
		if (!l->nomem)
			flame(l, peak);
	}
	for (size_t i = 0; rep->has_oom && holders && i < rep->oom.n_holders && !l->nomem; i++)
		if (rep->oom.holders[i].stack)
			stack_of(l, holders, rep->oom.holders[i].stack, &rep->holder_stacks[i]);
	rep->n_sites = sites_n(rep);
	if (!l->nomem && !(rep->site_stacks = ms_calloc(rep->n_sites ? rep->n_sites : 1,
	                                                sizeof(*rep->site_stacks))))
		l->nomem = 1;
	for (size_t i = 0; i < rep->n_sites && !l->nomem; i++)
		stack_of(l, rep->syms, l->site_first[i], &rep->site_stacks[i]);
	if (!l->nomem)
		band_stacks(l);
	return l->nomem ? MS_ERR_NOMEM : MS_OK;
}

/*
 * The bands' sites (numbered after the other sites: finish's stacks include theirs) and their
 * stacks, each distinct one once, for the per-allocation timeline's hover.
 */
static void band_sites(struct builder *l)
{
	struct ms_report *rep = l->rep;
	size_t n = rep->bands.n_bands;

	if (!(rep->band_site = ms_malloc((n ? n : 1) * sizeof(*rep->band_site))) ||
	    !(rep->band_stack = ms_malloc((n ? n : 1) * sizeof(*rep->band_stack))) ||
	    !(rep->band_fwd = ms_malloc((n ? n : 1) * sizeof(*rep->band_fwd))) ||
	    !(rep->band_ctx = ms_malloc((n ? n : 1) * sizeof(*rep->band_ctx))) ||
	    !(rep->band_cat = ms_malloc(n ? n : 1))) {
		l->nomem = 1;
		return;
	}
	memset(rep->band_cat, -1, n ? n : 1);
	for (size_t i = 0; i < n && !l->nomem; i++)
		rep->band_site[i] = site_of(l, rep->bands.bands[i].stack);
}

/* Stack st's index in band_stacks, added where new (seen: stack -> index); -1: none. */
static int32_t band_stack_index(struct builder *l, struct ms_u64map *seen, size_t *cap, uint32_t st)
{
	struct ms_report *rep = l->rep;
	const uint64_t *v;

	if (!st || !rep->syms || st >= ms_symtab_nstacks(rep->syms))
		return -1;
	if ((v = ms_u64map_get(seen, st)))
		return (int32_t)*v;
	if (ms_grow(&rep->band_stacks, cap, rep->n_band_stacks + 1, sizeof(*rep->band_stacks)) ||
	    ms_u64map_put(seen, st, rep->n_band_stacks)) {
		l->nomem = 1;
		return -1;
	}
	memset(&rep->band_stacks[rep->n_band_stacks], 0, sizeof(*rep->band_stacks));
	stack_of(l, rep->syms, st, &rep->band_stacks[rep->n_band_stacks]);
	return (int32_t)rep->n_band_stacks++;
}

static void band_stacks(struct builder *l)
{
	struct ms_report *rep = l->rep;
	struct ms_u64map seen = MS_U64MAP_INIT; /* stack -> index in band_stacks */
	size_t n = rep->bands.n_bands, cap = 0;

	struct ms_u64map ctx_of = MS_U64MAP_INIT; /* compile context -> index in its names */
	size_t cap_ctx = 0;
	int any_ctx = 0;

	for (size_t i = 0; i < n && !l->nomem; i++) {
		uint64_t first = rep->bands.bands[i].first;
		const struct ms_event *e = rep->trace && first < rep->trace->n_events
		                                   ? &rep->trace->events[first]
		                                   : NULL;
		const uint64_t *k;
		rep->band_stack[i] = band_stack_index(l, &seen, &cap, rep->bands.bands[i].stack);
		rep->band_fwd[i] = e ? band_stack_index(l, &seen, &cap, e->fwd_stack) : -1;
		rep->band_ctx[i] = -1;
		if (!e)
			continue;
		any_ctx |= e->compile_context != 0;
		if (!(k = ms_u64map_get(&ctx_of, e->compile_context))) {
			if (ms_grow(&rep->band_ctx_names, &cap_ctx, rep->n_band_ctx_names + 1,
			            sizeof(*rep->band_ctx_names)) ||
			    ms_u64map_put(&ctx_of, e->compile_context, rep->n_band_ctx_names)) {
				l->nomem = 1;
				break;
			}
			rep->band_ctx_names[rep->n_band_ctx_names++] = e->compile_context;
			k = ms_u64map_get(&ctx_of, e->compile_context);
		}
		rep->band_ctx[i] = (int32_t)*k;
	}
	if (!any_ctx) /* no compile context recorded: nothing to colour by */
		rep->n_band_ctx_names = 0;
	ms_u64map_release(&ctx_of);
	ms_u64map_release(&seen);
}

/* rep emptied, its tables made, and l set up to fill it. */
static ms_status start(struct ms_report *rep, struct builder *l, const char *source,
                       uint32_t frames)
{
	memset(rep, 0, sizeof(*rep));
	memset(l, 0, sizeof(*l));
	rep->source = source;
	l->rep = rep;
	l->shown = frames ? frames : MS_FRAMES_USER;
	if (ms_symtab_init(&rep->own_syms) || ms_symtab_init(&rep->site_labels) ||
	    ms_symtab_init(&rep->frames) ||
	    !(l->cells = ms_malloc(sizeof(*l->cells) * MS_RENDER_DOT_CELLS)))
		return MS_ERR_NOMEM;
	return MS_OK;
}

static void builder_release(struct builder *l)
{
	ms_free(l->anns);
	ms_free(l->cells);
	ms_free(l->site_first);
	ms_u64map_release(&l->site_ids);
}

static int u64_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/*
 * The state at the peak r found (in->find_peak), into out->snaps[0]: the one its peak gate took
 * (moved from r), else a replay that stops there, taking it as the moments are taken; none when
 * r has a moment there already.
 */
static ms_status peak_state(const struct ms_report_input *in, struct ms_replay_result *r,
                            struct ms_symtab *syms, struct ms_replay_result *out, struct ms_diag *d)
{
	struct ms_replay_opts o = *in->opts;
	uint64_t at = r->peak_allocated_index;

	for (size_t i = 0; i < r->n_snaps; i++)
		if (r->snaps[i].index == at)
			return MS_OK;
	if (r->peak_snap.taken && r->peak_snap.index == at) {
		if (!(out->snaps = ms_calloc(1, sizeof(*out->snaps))))
			return MS_ERR_NOMEM;
		out->snaps[0] = r->peak_snap;
		out->n_snaps = 1;
		memset(&r->peak_snap, 0, sizeof(r->peak_snap));
		return MS_OK;
	}
	o.peak_gate = NULL;
	o.more_snaps = &at;
	o.n_more_snaps = 1;
	o.snap = 1;
	o.snap_index = at;
	o.no_segment_log = 1;
	o.syms = syms; /* a streamed trace's stacks get the ids the report's replay gave them */
	return in->trace ? ms_replay_trace(in->trace, &o, out, d)
	       : in->src ? ms_replay_source(in->src, MS_PASS_REPORT, &o, out, d)
	                 : ms_replay_run(in->path, &o, out, d);
}

ms_status ms_report_collect(const struct ms_report_input *in, struct ms_report *rep,
                            struct ms_diag *d)
{
	struct ms_replay_opts o = *in->opts;
	struct ms_replay_result r, at_peak;
	struct builder l;
	const struct ms_replay_snap *peak = NULL;
	uint64_t *at = NULL;
	size_t n_at = 0, moments = in->moments ? in->moments : 48;
	size_t buckets = in->buckets ? in->buckets : 2000;
	ms_status s;
	uint64_t total = in->first->events_total, lo = in->from, hi = total;

	memset(&r, 0, sizeof(r));
	memset(&at_peak, 0, sizeof(at_peak));
	if ((s = start(rep, &l, in->source, in->frames)))
		goto out;
	/* a trace in memory has its table; one streamed from its file fills ours */
	rep->syms = in->trace ? &in->trace->syms : &rep->own_syms;
	rep->trace = in->trace;
	rep->site_depth = in->site_depth;
	rep->user_cats = in->user_cats;
	if (in->to && in->to < hi)
		hi = in->to;
	if (lo >= hi) {
		s = ms__diag_set(d, MS_ERR_INVALID_ARG, -1, -1,
		                 "the window [%llu, %llu) holds none of the trace's %llu events",
		                 (unsigned long long)lo, (unsigned long long)hi,
		                 (unsigned long long)total);
		goto out;
	}
	rep->from = lo;
	rep->to = hi;
	if ((s = ms_bands_init(&rep->bands, lo, hi)))
		goto out;
	/* the peak and the OOM shown are the window's */
	rep->peak_index = in->find_peak ? UINT64_MAX : in->first->peak_allocated_index;
	if ((lo > 0 || hi < total) &&
	    (s = ms_report_window_peak(in->trace, in->src, in->opts, lo, hi, &rep->peak_index, d)))
		goto out;
	rep->has_oom = in->first->has_oom && in->first->first_oom.index >= lo &&
	               in->first->first_oom.index < hi;
	rep->bucket_events = l.width = (hi - lo) / buckets + 1;
	rep->fine_events = l.fine_width = (hi - lo) / (buckets * MS_REPORT_FINE) + 1;
	/* the moments the segment map can show: evenly spaced, the peak, the OOM */
	if (!(at = ms_malloc(sizeof(*at) * (moments + 2)))) {
		s = MS_ERR_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < moments; i++)
		at[n_at++] = lo + (hi - lo - 1) * (i + 1) / moments;
	if (!in->find_peak)
		at[n_at++] = rep->peak_index;
	if (rep->has_oom)
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
	o.on_release = on_release;
	o.on_annotation = collect_annotation;
	o.ctx = &l;
	l.res = &r;
	o.syms = &rep->own_syms;
	if ((s = in->trace ? ms_replay_trace(in->trace, &o, &r, d)
	         : in->src ? ms_replay_source(in->src, MS_PASS_REPORT, &o, &r, d)
	                   : ms_replay_run(in->path, &o, &r, d)))
		goto out;
	if (l.nomem) {
		s = MS_ERR_NOMEM;
		goto out;
	}
	annotate(&l, r.device);
	if (!rep->n_buckets) {
		s = ms__diag_set(d, MS_ERR_INVALID_ARG, -1, -1,
		                 "no events of device %u in events [%llu, %llu): nothing to draw",
		                 (unsigned)r.device, (unsigned long long)lo,
		                 (unsigned long long)hi);
		goto out;
	}

	rep->device = r.device;
	/* the outside series is a figure only where the recorder measured it or saw raw calls */
	rep->outside_is = r.n_outside_points  ? MS_OUTSIDE_MEASURED
	                  : r.events_external ? MS_OUTSIDE_RAW_ONLY
	                                      : MS_OUTSIDE_NOT_MEASURED;
	memcpy(rep->alloc_conf, r.alloc_conf, sizeof(rep->alloc_conf));
	rep->settings_recorded = r.settings_recorded;
	rep->expandable_seen = r.expandable_seen;
	rep->device_memory = r.device_memory;
	rep->limit = r.limit;
	/* what the verdicts rest on: a guessed size or limit is said to be one */
	rep->device_memory_source = in->first->device_memory_source;
	rep->rebuilt = r.rebuilt;
	rep->initial_reserved = r.initial_reserved;
	rep->initial_segments = r.initial_segments;
	rep->placed = r.placed;
	rep->cut_short = r.cut_short;
	rep->initial_live_blocks = r.initial_live_blocks;
	rep->limit_inferred = in->limit_inferred;
	rep->limit_lo = in->limit_lo;
	rep->limit_hi = in->limit_hi;
	rep->events = r.events_total;
	rep->replayed = r.events_replayed;
	rep->ended_by_oom = r.ended_by_oom;
	for (size_t i = 0; i < rep->n_buckets; i++) {
		const struct ms_report_span *x = &rep->buckets[i].s;
		rep->peak_allocated = x->amax > rep->peak_allocated ? x->amax : rep->peak_allocated;
		rep->peak_reserved = x->rmax > rep->peak_reserved ? x->rmax : rep->peak_reserved;
	}
	/* sites are numbered as the page's data names them: the buckets' largest allocations,
	 * the moments' blocks, then the top sites (finish) */
	for (size_t i = 0; i < rep->n_buckets; i++)
		rep->buckets[i].big_site = site_of(&l, rep->buckets[i].big_stack);
	if ((s = ms_bands_finish(&rep->bands)))
		goto out;
	band_sites(&l);
	ann_names(&l);
	if (in->find_peak) {
		rep->peak_index = r.peak_allocated_index;
		if ((s = peak_state(in, &r, &rep->own_syms, &at_peak, d)))
			goto out;
	}
	for (size_t i = 0, k = 0; i < r.n_snaps + at_peak.n_snaps && !l.nomem; i++) {
		/* the moments in event order, the peak's taken by its own replay among them */
		const struct ms_replay_snap *sn =
		        k < at_peak.n_snaps && (i - k == r.n_snaps ||
		                                at_peak.snaps[k].index < r.snaps[i - k].index)
		                ? &at_peak.snaps[k++]
		                : &r.snaps[i - k];
		add_moment(&l, sn,
		           sn->index == rep->peak_index                              ? "peak"
		           : rep->has_oom && sn->index == in->first->first_oom.index ? "oom"
		                                                                     : "");
		if (sn->index == rep->peak_index)
			peak = sn;
	}
	if (rep->has_oom) {
		rep->oom = in->first->first_oom;
		ms_replay_oom_message(in->first, rep->oom_message, sizeof(rep->oom_message));
	}
	s = l.nomem ? MS_ERR_NOMEM : finish(&l, peak, in->first->holder_syms);
out:
	ms_free(at);
	builder_release(&l);
	ms_replay_result_release(&at_peak);
	ms_replay_result_release(&r);
	return s;
}

ms_status ms_report_end_state(const struct ms_render_input *in, struct ms_report *rep)
{
	const struct ms_replay_snap *sn = &in->r->snap;
	struct builder l;
	ms_status s;

	if (!(s = start(rep, &l, in->source, in->frames))) {
		rep->no_trace = 1;
		rep->syms = in->syms;
		rep->device = in->r->device;
		memcpy(rep->alloc_conf, in->r->alloc_conf, sizeof(rep->alloc_conf));
		rep->settings_recorded = in->r->settings_recorded;
		rep->expandable_seen = in->r->expandable_seen;
		rep->device_memory = UINT64_MAX;
		rep->events = in->r->events_total;
		rep->peak_index = sn->index;
		rep->peak_allocated = (uint64_t)sn->stats.allocated_bytes[0].current;
		rep->peak_reserved = (uint64_t)sn->stats.reserved_bytes[0].current;
		add_moment(&l, sn, "snapshot");
		s = l.nomem ? MS_ERR_NOMEM : finish(&l, sn, NULL);
	}
	builder_release(&l);
	return s;
}

static void stack_release(struct ms_report_stack *st)
{
	ms_free(st->frames);
	ms_free(st->shown);
}

void ms_report_release(struct ms_report *rep)
{
	ms_free(rep->buckets);
	ms_free(rep->fine);
	ms_free(rep->ann_names);
	ms_free(rep->moments);
	ms_free(rep->segs);
	ms_free(rep->cells);
	ms_free(rep->top_sites);
	ms_free(rep->flame);
	for (size_t i = 0; i < MS_OOM_HOLDERS; i++)
		stack_release(&rep->holder_stacks[i]);
	for (size_t i = 0; rep->site_stacks && i < rep->n_sites; i++)
		stack_release(&rep->site_stacks[i]);
	ms_free(rep->site_stacks);
	for (size_t i = 0; rep->band_stacks && i < rep->n_band_stacks; i++)
		stack_release(&rep->band_stacks[i]);
	ms_free(rep->band_stacks);
	ms_free(rep->band_site);
	ms_free(rep->band_stack);
	ms_free(rep->band_fwd);
	ms_free(rep->band_ctx);
	ms_free(rep->band_ctx_names);
	ms_free(rep->band_cat);
	ms_free(rep->diag.steps);
	ms_free(rep->diag.requests);
	ms_free(rep->diag.eval_loops);
	ms_bands_release(&rep->bands);
	ms_symtab_release(&rep->site_labels);
	ms_symtab_release(&rep->frames);
	ms_symtab_release(&rep->own_syms);
	memset(rep, 0, sizeof(*rep));
}

ms_status ms_report_diagnose(struct ms_report *rep, const struct ms_trace *t,
                             const struct ms_replay_result *first)
{
	struct ms_report_diagnosis *g = &rep->diag;
	struct ms_explain x;
	struct ms_explain_in in;
	uint64_t *query = NULL;
	ms_status s;
	uint32_t depth = rep->site_depth ? rep->site_depth : 1;

	memset(g, 0, sizeof(*g));
	memset(&in, 0, sizeof(in));
	in.t = t;
	in.device = rep->device;
	in.site_depth = depth;
	in.user_cats = rep->user_cats;
	in.peak_index = first->fullest_at_peak_index;
	in.allocated_at_peak =
	        first->allocated_at_peak_reserved - first->served_oom_at_peak_reserved;
	/* the bands' categories, for the per-allocation timeline's colours */
	if (rep->bands.n_bands) {
		if (!(query = ms_malloc(rep->bands.n_bands * sizeof(*query))))
			return MS_ERR_NOMEM;
		for (size_t i = 0; i < rep->bands.n_bands; i++)
			query[i] = rep->bands.bands[i].first;
		in.cat_query = query;
		in.n_cat_query = rep->bands.n_bands;
		in.cat_of = rep->band_cat;
	}
	s = ms_explain_run(&in, &x);
	ms_free(query);
	if (s)
		return s;
	g->has = 1;
	g->event = in.peak_index;
	g->reserved = (uint64_t)first->stats.reserved_bytes[0].peak;
	g->allocated = first->allocated_at_peak_reserved;
	for (unsigned k = 0; k < MS_CAT_COUNT; k++) {
		g->cat_bytes[k] = x.cat_bytes[k];
		g->cat_blocks[k] = x.cat_blocks[k];
	}
	g->n_user = x.n_user;
	for (size_t k = 0; k < x.n_user; k++) {
		g->user_bytes[k] = x.user_bytes[k];
		g->user_blocks[k] = x.user_blocks[k];
	}
	/* a recorded OOM's request the replay served at the peak is no allocation of the trace */
	g->oom_request = first->served_oom_at_peak_reserved;
	g->rounding = (int64_t)(g->allocated - g->oom_request) - (int64_t)ms_explain_requested(&x);
	g->model_found = x.parameter_blocks != 0;
	g->parameter_bytes = x.parameter_bytes;
	g->gradient_bytes = x.gradient_bytes;
	g->optimizer_state_bytes = x.optimizer_state_bytes;
	g->n_optimizer_steps = x.n_optimizer_steps;
	g->growth_steps = x.growth_steps;
	g->growth_by_repetition = x.n_optimizer_steps < 3 && !strcmp(x.steps_from, "repetition");
	g->copies_told = x.copies_told;
	g->copy_bytes = x.copy_bytes;
	g->copy_blocks = x.copy_blocks;
	if (x.n_top_copies)
		ms_stack_label_depth(&t->syms, x.top_copies[0].stack, depth, g->copy_site,
		                     sizeof(g->copy_site));
	snprintf(g->optimizer, sizeof(g->optimizer), "%s", x.optimizer);
	snprintf(g->note, sizeof(g->note), "%s", x.why_uncategorized);
	for (size_t k = 0; k < x.n_growth && k < MS_REPORT_GROWTH; k++) {
		ms_stack_label_depth(&t->syms, x.growth[k].stack, depth, g->growth[k].site,
		                     sizeof(g->growth[k].site));
		g->growth[k].bytes_per_step = x.growth[k].bytes_per_step;
		g->growth[k].steps = x.growth[k].steps;
		g->growth[k].blocks_first = x.growth[k].blocks_at_first_step;
		g->growth[k].blocks_last = x.growth[k].blocks_at_last_step;
		g->n_growth++;
	}
	g->steps_from = x.steps_from ? x.steps_from : "";
	snprintf(g->steps_scope, sizeof(g->steps_scope), "%s", x.steps_scope);
	g->has_stacks = x.has_stacks;
	g->job = x.job;
	g->eager_forwards_only = x.inference.graphs;
	g->steps_before_trace = x.steps_before_trace;
	if (x.n_steps && (g->steps = ms_malloc(x.n_steps * sizeof(*g->steps)))) {
		memcpy(g->steps, x.steps, x.n_steps * sizeof(*g->steps));
		g->n_steps = x.n_steps;
	}
	if (x.inference.n_requests &&
	    (g->requests = ms_malloc(x.inference.n_requests * sizeof(*g->requests)))) {
		memcpy(g->requests, x.inference.requests,
		       x.inference.n_requests * sizeof(*g->requests));
		g->n_requests = x.inference.n_requests;
	}
	if (x.n_eval_loops && (g->eval_loops = ms_calloc(x.n_eval_loops, sizeof(*g->eval_loops)))) {
		for (size_t k = 0; k < x.n_eval_loops; k++) {
			const struct ms_explain_eval_loop *lp = &x.eval_loops[k];
			struct ms_report_eval_loop *o = &g->eval_loops[k];
			o->first_event = lp->first_event;
			o->end_event = lp->end_event;
			o->forwards = lp->forwards.n_forwards;
			o->peak_requested = lp->peak_requested;
			o->n_requests = lp->forwards.n_requests;
			for (size_t q = 0; q < o->n_requests; q++)
				if (lp->forwards.requests[q].kv_peak > o->kv_peak)
					o->kv_peak = lp->forwards.requests[q].kv_peak;
		}
		g->n_eval_loops = x.n_eval_loops;
	}
	s = (x.n_steps && !g->steps) || (x.inference.n_requests && !g->requests) ||
	                    (x.n_eval_loops && !g->eval_loops)
	            ? MS_ERR_NOMEM
	            : MS_OK;
	ms_explain_release(&x);
	return s;
}
