/*
 * The allocations the report's per-allocation timeline draws one by one: for a window of
 * events, those alive in it that matter most (half of them the largest, half those covering
 * the most of a chart of it: bytes times events alive), and at finer levels the same of each
 * part of it (the window cut into 8, then 64 equal parts), so that a view zoomed into a part still
 * has its own largest drawn while the page's data stays bounded whatever the trace's length. The
 * rest of the allocated bytes the page draws as one band, from the timeline's totals.
 *
 * Fed each allocation once its life is known, in any order (a replay's on_release: as it is
 * freed, or at the end alive); an allocation made before the window and alive in it counts.
 */
#ifndef MEMSNAP_RENDER_ALLOC_BANDS_H
#define MEMSNAP_RENDER_ALLOC_BANDS_H

#include <stddef.h>
#include <stdint.h>

#include "memsnap/memsnap.h"

#define MS_BANDS_LEVELS 3
#define MS_BANDS_NONE   UINT64_MAX /* an allocation's last: alive at the window's end */

/* One allocation drawn. */
struct ms_band {
	uint64_t first; /* its alloc event */
	uint64_t last;  /* the event that freed it, or MS_BANDS_NONE */
	uint64_t size, addr;
	uint32_t stack;
};

/* The bands a part keeps by one measure: a min-heap, the one that matters least on top. */
struct ms_bands_heap {
	struct ms_band *v;
	size_t n, keep;
	int by_area;     /* 0: by size; 1: by bytes times events alive in [lo, hi) */
	uint64_t lo, hi; /* the part's events */
	/* full (n == keep): the top's size and area, a quick first test of what is offered */
	uint64_t top_size;
	double top_area;
};

struct ms_bands {
	uint64_t from, to;           /* the window, [from, to) */
	struct ms_bands_heap *heaps; /* two per part (by size, by area): level 0's, 1's, 2's */
	struct ms_band *heap_room;
	/* the result (ms_bands_finish): the bands drawn, by first; per part, the indices of its
	 * bands in part_idx[part_start[p] .. part_start[p + 1]) (parts: level 0's, 1's, 2's) */
	struct ms_band *bands;
	size_t n_bands;
	uint32_t *part_idx;
	size_t *part_start;
};

/* Parts of level l (1, 8, 64), and the bands each keeps at most (1000, 300, 60: half by size,
 * half by area). */
size_t ms_bands_parts(unsigned level);
size_t ms_bands_keep(unsigned level);

/* @return MS_OK or MS_ERR_NOMEM; release with ms_bands_release whatever it returns. */
ms_status ms_bands_init(struct ms_bands *b, uint64_t from, uint64_t to);
/* An allocation made at event first and freed at event last (MS_BANDS_NONE: not freed). */
void ms_bands_add(struct ms_bands *b, uint64_t first, uint64_t last, uint64_t size, uint64_t addr,
                  uint32_t stack);
/* The result, from the allocations added. @return MS_OK or MS_ERR_NOMEM. */
ms_status ms_bands_finish(struct ms_bands *b);
void ms_bands_release(struct ms_bands *b);

#endif
