/* The text map: one line per segment, its blocks drawn as a bar of characters. */
#include "render/render.h"

#include <stdio.h>
#include <string.h>

#include "analysis/trace_stats.h"
#include "common/status.h"

void ms_render_title(const struct ms_render_input *in, char *buf, size_t cap)
{
	const struct ms_replay_snap *sn = &in->r->snap;
	const char *what = !strcmp(in->moment, "peak")  ? "at the peak of allocated memory"
	                   : !strcmp(in->moment, "end") ? "at the end"
	                                                : "after";

	if (!strcmp(in->moment, "snapshot"))
		snprintf(buf, cap, "%s: as the snapshot recorded it (no trace), device %u",
		         in->source, (unsigned)in->r->device);
	else if (sn->at_oom)
		snprintf(buf, cap, "%s: at the OOM (event %llu), device %u", in->source,
		         (unsigned long long)sn->index, (unsigned)in->r->device);
	else
		snprintf(buf, cap, "%s: %s (event %llu), device %u", in->source, what,
		         (unsigned long long)sn->index, (unsigned)in->r->device);
}

/* The character for a cell: the state holding most of its bytes. */
enum { C_ALLOC, C_SLACK, C_PENDING, C_FREE, C_N };
static const char cell_char[C_N] = {'#', 's', '+', '.'};

static void add_bytes(uint64_t (*cells)[C_N], uint64_t seg_addr, uint64_t seg_size, uint64_t addr,
                      uint64_t size, int kind)
{
	uint64_t lo = addr - seg_addr, hi = lo + size;

	/*
	 * cell i covers [i * seg_size / W, (i + 1) * seg_size / W); segments are far below
	 * 2^58 bytes, so the products fit
	 */
	while (lo < hi) {
		size_t i = (size_t)(lo * MS_RENDER_TEXT_WIDTH / seg_size);
		uint64_t end =
		        ((i + 1) * seg_size + MS_RENDER_TEXT_WIDTH - 1) / MS_RENDER_TEXT_WIDTH;
		if (i >= MS_RENDER_TEXT_WIDTH)
			break;
		if (end > hi || end <= lo)
			end = hi;
		cells[i][kind] += end - lo;
		lo = end;
	}
}

static ms_status segment_line(struct ms_buf *out, const struct ms_segment *g,
                              const struct ms_block *b)
{
	uint64_t cells[MS_RENDER_TEXT_WIDTH][C_N];
	char bar[MS_RENDER_TEXT_WIDTH + 1], sz[32], pool[64], id[48];
	unsigned pct;

	memset(cells, 0, sizeof(cells));
	for (uint32_t k = 0; k < g->n_blocks && g->total_size; k++) {
		const struct ms_block *x = &b[k];
		uint64_t used = x->requested_size < x->size ? x->requested_size : x->size;
		if (x->state == MS_BLOCK_ACTIVE_ALLOCATED) {
			add_bytes(cells, g->addr, g->total_size, x->addr, used, C_ALLOC);
			add_bytes(cells, g->addr, g->total_size, x->addr + used, x->size - used,
			          C_SLACK);
		} else {
			add_bytes(cells, g->addr, g->total_size, x->addr, x->size,
			          x->state == MS_BLOCK_ACTIVE_PENDING_FREE ? C_PENDING : C_FREE);
		}
	}
	for (size_t i = 0; i < MS_RENDER_TEXT_WIDTH; i++) {
		int best = C_FREE;
		for (int k = 0; k < C_N; k++)
			if (cells[i][k] > cells[i][best])
				best = k;
		bar[i] = cell_char[best];
	}
	bar[MS_RENDER_TEXT_WIDTH] = 0;
	pct = g->total_size ? (unsigned)(g->allocated_size * 100 / g->total_size) : 0;
	if (g->pool_id[0] | g->pool_id[1])
		snprintf(pool, sizeof(pool), " pool %s",
		         ms_pool_id_text(g->pool_id, id, sizeof(id)));
	else
		pool[0] = 0;
	return ms_buf_printf(out, "0x%012llx %11s %6llu %-5s%s %3u%% [%s] %u%s\n",
	                     (unsigned long long)g->addr,
	                     ms_format_size(sz, sizeof(sz), g->total_size),
	                     (unsigned long long)g->stream, g->is_small ? "small" : "large",
	                     g->is_expandable ? "*" : " ", pct, bar, g->n_blocks, pool);
}

ms_status ms_render_text(const struct ms_render_input *in, struct ms_buf *out)
{
	const struct ms_replay_snap *sn = &in->r->snap;
	const struct ms_model_stats *st = &sn->stats;
	char t[512], a[32], b[32], c[32], e[32], f[32];
	size_t k = 0;
	uint64_t pools = 0;

	ms_render_title(in, t, sizeof(t));
	MS_TRY(ms_buf_printf(out, "%s\n", t));
	MS_TRY(ms_buf_printf(
	        out, "allocated %s, reserved %s, inactive split %s; %zu segments, %zu blocks\n",
	        ms_format_size(a, sizeof(a), (uint64_t)st->allocated_bytes[0].current),
	        ms_format_size(b, sizeof(b), (uint64_t)st->reserved_bytes[0].current),
	        ms_format_size(c, sizeof(c), (uint64_t)st->inactive_split_bytes[0].current),
	        sn->n_segs, sn->n_blocks));
	if (sn->at_oom) {
		const struct ms_replay_oom *x = &in->r->first_oom;
		MS_TRY(ms_buf_printf(
		        out,
		        "failed request: %s (rounded %s, segment %s) on stream %llu; %s free in "
		        "reserved segments, the largest free block %s\n",
		        ms_format_size(a, sizeof(a), x->o.requested),
		        ms_format_size(b, sizeof(b), x->o.rounded),
		        ms_format_size(c, sizeof(c), x->o.alloc_size),
		        (unsigned long long)x->o.stream,
		        ms_format_size(e, sizeof(e), x->o.free_in_reserved),
		        ms_format_size(f, sizeof(f), x->o.largest_free)));
	}
	MS_TRY(ms_buf_printf(out, "\n%-14s %11s %6s %-6s %4s %-*s %s\n", "address", "size",
	                     "stream", "class", "used", MS_RENDER_TEXT_WIDTH + 2, "map", "blocks"));
	for (size_t i = 0; i < sn->n_segs; i++) {
		MS_TRY(segment_line(out, &sn->segs[i], sn->blocks + k));
		k += sn->segs[i].n_blocks;
		pools |= sn->segs[i].pool_id[0] | sn->segs[i].pool_id[1];
	}
	return ms_buf_printf(
	        out,
	        "\nclass: the allocator's small (blocks to 1 MiB) or large pool; map: %d "
	        "characters per segment; # allocated, s rounding slack "
	        "(allocated, not requested), + freed but pending (stream uses), . "
	        "free; * an expandable segment's mapped range%s\n",
	        MS_RENDER_TEXT_WIDTH,
	        pools ? "; pool (a, b): a private pool's segment (a CUDA graph's, a "
	                "MemPool's)"
	              : "");
}
