/*
 * Graphviz DOT: each segment one node with an HTML-like table (a header row, then its blocks
 * in address order as cells coloured by state), segments stacked in address order, and at an
 * OOM the failed request as a node of its own pointing at the largest free block of its pool.
 *
 * A segment can hold thousands of blocks (a 2 MiB small segment up to 4096), more than a
 * drawing shows: past MS_RENDER_DOT_CELLS, neighbouring blocks of one state merge into a run,
 * and if the runs are still too many, consecutive runs share a cell coloured by the state
 * holding most of its bytes. Cells say so in their labels and tooltips.
 */
#include "render/render.h"

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/status.h"
#include "replay/site.h"

#define COLOR_ALLOC   "#4e79a7"
#define COLOR_SLACK   "#a0cbe8"
#define COLOR_PENDING "#f28e2b"
#define COLOR_FREE    "#e8e8e8"
#define COLOR_OOM     "#e15759"

ms_status ms_render_escape(struct ms_buf *o, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&':
			MS_TRY(ms_buf_append(o, "&amp;", 5));
			break;
		case '<':
			MS_TRY(ms_buf_append(o, "&lt;", 4));
			break;
		case '>':
			MS_TRY(ms_buf_append(o, "&gt;", 4));
			break;
		case '"':
			MS_TRY(ms_buf_append(o, "&quot;", 6));
			break;
		default:
			if ((unsigned char)*s >= 0x20)
				MS_TRY(ms_buf_append(o, s, 1));
		}
	}
	return MS_OK;
}

#define cell ms_render_cell

int ms_render_cell_state(const struct cell *c)
{
	int best = 3;
	for (int k = 0; k < 4; k++)
		if (c->bytes[k] > c->bytes[best])
			best = k;
	return best == 1 ? 0 : best; /* slack is drawn inside an allocated cell */
}

static void cell_add(struct cell *c, const struct ms_block *b)
{
	if (b->state == MS_BLOCK_ACTIVE_ALLOCATED) {
		uint64_t used = b->requested_size < b->size ? b->requested_size : b->size;
		c->bytes[0] += used;
		c->bytes[1] += b->size - used;
	} else {
		c->bytes[b->state == MS_BLOCK_ACTIVE_PENDING_FREE ? 2 : 3] += b->size;
	}
}

static int block_kind(const struct ms_block *b)
{
	return b->state == MS_BLOCK_ACTIVE_ALLOCATED      ? 0
	       : b->state == MS_BLOCK_ACTIVE_PENDING_FREE ? 2
	                                                  : 3;
}

size_t ms_render_cells(const struct ms_block *b, size_t n, struct cell *cells)
{
	size_t nc = 0, runs = 0, per;

	if (n <= MS_RENDER_DOT_CELLS) {
		for (size_t i = 0; i < n; i++) {
			memset(&cells[nc], 0, sizeof(cells[nc]));
			cells[nc].from = i;
			cells[nc].to = i + 1;
			cell_add(&cells[nc++], &b[i]);
		}
		return nc;
	}
	for (size_t i = 0; i < n; i++)
		if (i == 0 || block_kind(&b[i]) != block_kind(&b[i - 1]))
			runs++;
	per = (runs + MS_RENDER_DOT_CELLS - 1) / MS_RENDER_DOT_CELLS;
	for (size_t i = 0, r = 0; i < n; i++) {
		if (i == 0 || block_kind(&b[i]) != block_kind(&b[i - 1])) {
			if (r % per == 0) {
				memset(&cells[nc], 0, sizeof(cells[nc]));
				cells[nc++].from = i;
			}
			r++;
		}
		cells[nc - 1].to = i + 1;
		cell_add(&cells[nc - 1], &b[i]);
	}
	return nc;
}

static const char *const state_word[4] = {"allocated", "slack", "pending free", "free"};
static const char *const state_color[4] = {COLOR_ALLOC, COLOR_SLACK, COLOR_PENDING, COLOR_FREE};

/* The frames --frames adds to a site in a tooltip, a line each (replay/site.h). */
static ms_status frame_lines(struct ms_buf *o, const struct ms_symtab *y, uint32_t stack,
                             uint32_t frames)
{
	size_t n, site = 0, depth, *pos;
	const uint32_t *fr;
	ms_status s = MS_OK;

	if (frames <= MS_FRAMES_USER)
		return MS_OK;
	fr = ms_symtab_get_stack(y, stack, &depth);
	if (!(pos = ms_malloc(sizeof(*pos) * (depth ? depth : 1))))
		return MS_ERR_NOMEM;
	n = ms_site_frames(y, stack, frames, pos, depth, &site);
	for (size_t i = frames == MS_FRAMES_ALL ? 0 : 1; i < n && !s; i++) {
		char label[512];
		ms_frame_label(y, fr[pos[i]], label, sizeof(label));
		s = ms_buf_printf(o, "&#10;%s",
		                  frames == MS_FRAMES_ALL && i == site ? "&gt; " : "  ");
		if (!s)
			s = ms_render_escape(o, label);
	}
	ms_free(pos);
	return s;
}

static ms_status cell_td(struct ms_buf *o, const struct ms_render_input *in,
                         const struct ms_block *b, const struct cell *c, uint64_t seg_size)
{
	uint64_t total = c->bytes[0] + c->bytes[1] + c->bytes[2] + c->bytes[3];
	int k = ms_render_cell_state(c);
	/* width grows with the share of the segment; every cell stays readable */
	unsigned w = (unsigned)(seg_size ? 560.0 * (double)total / (double)seg_size : 0);
	char sz[32], rq[32], site[200];

	if (w < 16)
		w = 16;
	MS_TRY(ms_buf_printf(o, "<TD BGCOLOR=\"%s\" WIDTH=\"%u\" TOOLTIP=\"", state_color[k], w));
	if (c->to - c->from == 1) {
		const struct ms_block *x = &b[c->from];
		MS_TRY(ms_buf_printf(o, "0x%llx: %s %s", (unsigned long long)x->addr, state_word[k],
		                     ms_format_size(sz, sizeof(sz), x->size)));
		if (k == 0 && c->bytes[1])
			MS_TRY(ms_buf_printf(o, " (requested %s)",
			                     ms_format_size(rq, sizeof(rq), c->bytes[0])));
		if (k != 3 && in->syms && x->stack && x->stack < ms_symtab_nstacks(in->syms)) {
			ms_stack_label(in->syms, x->stack, site, sizeof(site));
			MS_TRY(ms_buf_append(o, " at ", 4));
			MS_TRY(ms_render_escape(o, site));
			MS_TRY(frame_lines(o, in->syms, x->stack, in->frames));
		}
	} else {
		MS_TRY(ms_buf_printf(o, "0x%llx: %zu blocks, %s",
		                     (unsigned long long)b[c->from].addr, c->to - c->from,
		                     ms_format_size(sz, sizeof(sz), total)));
		for (int s = 0; s < 4; s++)
			if (c->bytes[s])
				MS_TRY(ms_buf_printf(o, "; %s %s", state_word[s],
				                     ms_format_size(rq, sizeof(rq), c->bytes[s])));
	}
	MS_TRY(ms_buf_printf(o, "\">%s%s</TD>", c->to - c->from > 1 ? "&#215;" : "",
	                     ms_format_size(sz, sizeof(sz), total)));
	/* rounding slack of a single allocated block, when large enough to see */
	if (c->to - c->from == 1 && k == 0 && c->bytes[1] && w * c->bytes[1] >= 8 * total)
		MS_TRY(ms_buf_printf(o,
		                     "<TD BGCOLOR=\"" COLOR_SLACK
		                     "\" WIDTH=\"8\" TOOLTIP=\"rounding "
		                     "slack %s\"> </TD>",
		                     ms_format_size(sz, sizeof(sz), c->bytes[1])));
	return MS_OK;
}

/* The segment (by index) holding addr, or SIZE_MAX. */
static size_t seg_of(const struct ms_replay_snap *sn, uint64_t addr)
{
	size_t lo = 0, hi = sn->n_segs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (sn->segs[mid].addr + sn->segs[mid].total_size <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sn->n_segs && sn->segs[lo].addr <= addr ? lo : SIZE_MAX;
}

/* " · pool (a, b)" for a private pool's segment, else "". */
static const char *pool_label(const struct ms_segment *g, char *buf, size_t cap)
{
	if (!(g->pool_id[0] | g->pool_id[1]))
		return "";
	char id[48];

	snprintf(buf, cap, " &#183; pool %s", ms_pool_id_text(g->pool_id, id, sizeof(id)));
	return buf;
}

ms_status ms_render_dot(const struct ms_render_input *in, struct ms_buf *o)
{
	const struct ms_replay_snap *sn = &in->r->snap;
	const struct ms_model_stats *st = &sn->stats;
	struct cell *cells;
	char t[512], a[32], b[32], c[32], pl[48];
	size_t k = 0;
	ms_status s = MS_OK;

	ms_render_title(in, t, sizeof(t));
	MS_TRY(ms_buf_printf(o, "digraph memsnap {\n\tgraph [label=\""));
	MS_TRY(ms_render_escape(o, t));
	MS_TRY(ms_buf_printf(
	        o,
	        "\\nallocated %s, reserved %s, inactive split %s; %zu segments\", labelloc=t, "
	        "fontname=\"Helvetica\", rankdir=TB, nodesep=0.2, ranksep=0.15];\n"
	        "\tnode [shape=plaintext, fontname=\"Helvetica\", fontsize=10];\n",
	        ms_format_size(a, sizeof(a), (uint64_t)st->allocated_bytes[0].current),
	        ms_format_size(b, sizeof(b), (uint64_t)st->reserved_bytes[0].current),
	        ms_format_size(c, sizeof(c), (uint64_t)st->inactive_split_bytes[0].current),
	        sn->n_segs));
	MS_TRY(ms_buf_printf(o, "\tlegend [label=<<TABLE BORDER=\"0\" CELLSPACING=\"4\"><TR>"));
	for (int i = 0; i < 4; i++)
		MS_TRY(ms_buf_printf(o, "<TD BGCOLOR=\"%s\">%s</TD>", state_color[i],
		                     i == 1 ? "rounding slack" : state_word[i]));
	size_t n_private = 0;
	for (size_t i = 0; i < sn->n_segs; i++)
		n_private += (sn->segs[i].pool_id[0] | sn->segs[i].pool_id[1]) != 0;
	if (n_private)
		MS_TRY(ms_buf_printf(o,
		                     "<TD>%zu segment%s in private pools (CUDA graphs, MemPools): "
		                     "&#183; pool (a, b)</TD>",
		                     n_private, n_private == 1 ? "" : "s"));
	MS_TRY(ms_buf_printf(o, "</TR></TABLE>>];\n"));
	if (!(cells = ms_malloc(sizeof(*cells) * MS_RENDER_DOT_CELLS)))
		return MS_ERR_NOMEM;
	for (size_t i = 0; i < sn->n_segs && !s; i++) {
		const struct ms_segment *g = &sn->segs[i];
		const struct ms_block *bl = sn->blocks + k;
		size_t nc = ms_render_cells(bl, g->n_blocks, cells);

		s = ms_buf_printf(o,
		                  "\ts%zu [label=<<TABLE BORDER=\"0\" CELLBORDER=\"1\" "
		                  "CELLSPACING=\"0\" CELLPADDING=\"0\"><TR><TD ALIGN=\"LEFT\" "
		                  "BORDER=\"0\">0x%llx &#183; %s &#183; stream %llu &#183; %s%s "
		                  "&#183; %u blocks%s</TD></TR><TR><TD BORDER=\"0\"><TABLE "
		                  "BORDER=\"0\" CELLBORDER=\"1\" CELLSPACING=\"0\" "
		                  "CELLPADDING=\"3\"><TR>",
		                  i, (unsigned long long)g->addr,
		                  ms_format_size(a, sizeof(a), g->total_size),
		                  (unsigned long long)g->stream, g->is_small ? "small" : "large",
		                  g->is_expandable ? " &#183; expandable" : "", g->n_blocks,
		                  pool_label(g, pl, sizeof(pl)));
		for (size_t j = 0; j < nc && !s; j++)
			s = cell_td(o, in, bl, &cells[j], g->total_size);
		if (!s && !nc)
			s = ms_buf_printf(o, "<TD> </TD>");
		if (!s)
			s = ms_buf_printf(o, "</TR></TABLE></TD></TR></TABLE>>];\n");
		k += g->n_blocks;
	}
	ms_free(cells);
	MS_TRY(s);
	/* segments top to bottom in address order */
	MS_TRY(ms_buf_printf(o, "\tlegend"));
	for (size_t i = 0; i < sn->n_segs; i++)
		MS_TRY(ms_buf_printf(o, " -> s%zu", i));
	MS_TRY(ms_buf_printf(o, " [style=invis];\n"));
	if (sn->at_oom) {
		const struct ms_replay_oom *x = &in->r->first_oom;
		MS_TRY(ms_buf_printf(o,
		                     "\toom [shape=box, style=filled, fillcolor=\"" COLOR_OOM
		                     "\", fontcolor=white, "
		                     "label=\"failed request: %s (segment %s) on stream %llu\\n%s "
		                     "free in reserved "
		                     "segments, the largest free block %s\"];\n",
		                     ms_format_size(a, sizeof(a), x->o.requested),
		                     ms_format_size(b, sizeof(b), x->o.alloc_size),
		                     (unsigned long long)x->o.stream,
		                     ms_format_size(c, sizeof(c), x->o.free_in_reserved),
		                     ms_format_size(t, 32, x->o.largest_free)));
		if (x->n_holes) {
			size_t gi = seg_of(sn, x->holes[0].addr);
			if (gi != SIZE_MAX)
				MS_TRY(ms_buf_printf(
				        o,
				        "\toom -> s%zu [label=\"largest free block %s\", "
				        "color=\"" COLOR_OOM "\", constraint=false];\n",
				        gi, ms_format_size(a, sizeof(a), x->holes[0].size)));
		}
		MS_TRY(ms_buf_printf(o, "\tlegend -> oom [style=invis];\n"));
	}
	return ms_buf_printf(o, "}\n");
}
