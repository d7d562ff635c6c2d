/* The largest allocations of a window and of its parts (alloc_bands.h). */
#include "render/alloc_bands.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

static const size_t parts_of[MS_BANDS_LEVELS] = {1, 8, 64};
static const size_t keep_of[MS_BANDS_LEVELS] = {1000, 300, 60};

size_t ms_bands_parts(unsigned level)
{
	return level < MS_BANDS_LEVELS ? parts_of[level] : 0;
}

size_t ms_bands_keep(unsigned level)
{
	return level < MS_BANDS_LEVELS ? keep_of[level] : 0;
}

static size_t total_parts(void)
{
	size_t n = 0;

	for (unsigned l = 0; l < MS_BANDS_LEVELS; l++)
		n += parts_of[l];
	return n;
}

/* Events a part of level l spans: the window cut into parts of equal width, the last shorter. */
static uint64_t part_width(const struct ms_bands *b, unsigned l)
{
	uint64_t n = b->to - b->from;

	return n / parts_of[l] + (n % parts_of[l] != 0);
}

/*
 * 1 if x matters less than y in a heap: by size, or by area (bytes times the events it is
 * alive in [lo, hi): what it covers of a chart of that range); ties by the other measure,
 * then the later allocated.
 */
static int less(const struct ms_bands_heap *h, const struct ms_band *x, const struct ms_band *y)
{
	uint64_t xs = x->first > h->lo ? x->first : h->lo, xe = x->last < h->hi ? x->last : h->hi;
	uint64_t ys = y->first > h->lo ? y->first : h->lo, ye = y->last < h->hi ? y->last : h->hi;
	double ax = (double)x->size * (double)(xe > xs ? xe - xs : 0);
	double ay = (double)y->size * (double)(ye > ys ? ye - ys : 0);

	if (h->by_area && ax != ay)
		return ax < ay;
	if (x->size != y->size)
		return x->size < y->size;
	if (ax != ay)
		return ax < ay;
	return x->first > y->first;
}

static void sift_down(struct ms_bands_heap *h, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct ms_band t;
		if (l < h->n && less(h, &h->v[l], &h->v[m]))
			m = l;
		if (r < h->n && less(h, &h->v[r], &h->v[m]))
			m = r;
		if (m == i)
			return;
		t = h->v[i];
		h->v[i] = h->v[m];
		h->v[m] = t;
		i = m;
	}
}

/* x's area in the heap's part, as less() weighs it. */
static double area_of(const struct ms_bands_heap *h, const struct ms_band *x)
{
	uint64_t s = x->first > h->lo ? x->first : h->lo, e = x->last < h->hi ? x->last : h->hi;

	return (double)x->size * (double)(e > s ? e - s : 0);
}

static void offer(struct ms_bands_heap *h, const struct ms_band *x, double area)
{
	if (h->n < h->keep) {
		size_t i = h->n++;
		h->v[i] = *x;
		while (i && less(h, &h->v[i], &h->v[(i - 1) / 2])) {
			struct ms_band t = h->v[i];
			h->v[i] = h->v[(i - 1) / 2];
			h->v[(i - 1) / 2] = t;
			i = (i - 1) / 2;
		}
	} else {
		/* most allocations lose to the top on the heap's own measure alone */
		if (!h->keep || (h->by_area ? area < h->top_area : x->size < h->top_size) ||
		    !less(h, &h->v[0], x))
			return;
		h->v[0] = *x;
		sift_down(h, 0);
	}
	if (h->n == h->keep) {
		h->top_size = h->v[0].size;
		h->top_area = area_of(h, &h->v[0]);
	}
}

/* A band: to the two heaps of every part it is alive in. */
static void weigh(struct ms_bands *b, const struct ms_band *x)
{
	uint64_t s = x->first > b->from ? x->first : b->from;
	uint64_t e = x->last < b->to ? x->last : b->to; /* first event after it */
	size_t base = 0;

	if (e <= s)
		return;
	for (unsigned l = 0; l < MS_BANDS_LEVELS; l++) {
		uint64_t w = part_width(b, l);
		size_t p0 = (size_t)((s - b->from) / w), p1 = (size_t)((e - 1 - b->from) / w);
		for (size_t p = p0; p <= p1 && p < parts_of[l]; p++) {
			struct ms_bands_heap *h = &b->heaps[2 * (base + p)];
			double area = area_of(h, x);
			offer(h, x, area);
			offer(h + 1, x, area);
		}
		base += parts_of[l];
	}
}

ms_status ms_bands_init(struct ms_bands *b, uint64_t from, uint64_t to)
{
	size_t room = 0, np = total_parts(), k = 0;

	memset(b, 0, sizeof(*b));
	b->from = from;
	b->to = to > from ? to : from + 1;
	for (unsigned l = 0; l < MS_BANDS_LEVELS; l++)
		room += parts_of[l] * keep_of[l];
	if (!(b->heaps = ms_calloc(2 * np, sizeof(*b->heaps))) ||
	    !(b->heap_room = ms_malloc(room * sizeof(*b->heap_room))))
		return MS_ERR_NOMEM;
	room = 0;
	for (unsigned l = 0; l < MS_BANDS_LEVELS; l++) {
		uint64_t w = part_width(b, l);
		for (size_t p = 0; p < parts_of[l]; p++)
			for (int by_area = 0; by_area < 2; by_area++, k++) {
				struct ms_bands_heap *h = &b->heaps[k];
				h->v = b->heap_room + room;
				h->keep = keep_of[l] / 2; /* half the largest, half the most area */
				h->by_area = by_area;
				h->lo = from + w * p;
				h->hi = h->lo + w;
				room += h->keep;
			}
	}
	return MS_OK;
}

void ms_bands_add(struct ms_bands *b, uint64_t first, uint64_t last, uint64_t size, uint64_t addr,
                  uint32_t stack)
{
	struct ms_band x = {first, last, size, addr, stack};

	weigh(b, &x);
}

static int by_first(const void *x, const void *y)
{
	const struct ms_band *a = x, *c = y;

	return a->first < c->first ? -1 : a->first > c->first;
}

static int u32_cmp(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, c = *(const uint32_t *)y;

	return a < c ? -1 : a > c;
}

/* The index in b->bands of the band allocated at event first (there is one). */
static uint32_t band_at(const struct ms_bands *b, uint64_t first)
{
	size_t lo = 0, hi = b->n_bands;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (b->bands[mid].first <= first)
			lo = mid;
		else
			hi = mid;
	}
	return (uint32_t)lo;
}

ms_status ms_bands_finish(struct ms_bands *b)
{
	size_t np = total_parts(), n = 0, k = 0;

	for (size_t p = 0; p < 2 * np; p++)
		n += b->heaps[p].n;
	if (!(b->bands = ms_malloc((n ? n : 1) * sizeof(*b->bands))) ||
	    !(b->part_idx = ms_malloc((n ? n : 1) * sizeof(*b->part_idx))) ||
	    !(b->part_start = ms_malloc((np + 1) * sizeof(*b->part_start))))
		return MS_ERR_NOMEM;
	for (size_t p = 0; p < 2 * np; p++)
		for (size_t i = 0; i < b->heaps[p].n; i++)
			b->bands[k++] = b->heaps[p].v[i];
	qsort(b->bands, n, sizeof(*b->bands), by_first);
	/* one band per allocation: an alloc event allocates one block */
	b->n_bands = 0;
	for (size_t i = 0; i < n; i++)
		if (!b->n_bands || b->bands[b->n_bands - 1].first != b->bands[i].first)
			b->bands[b->n_bands++] = b->bands[i];
	/* a part's bands: its two heaps', each once */
	k = 0;
	for (size_t p = 0; p < np; p++) {
		size_t from = k;
		b->part_start[p] = k;
		for (size_t h = 2 * p; h < 2 * p + 2; h++)
			for (size_t i = 0; i < b->heaps[h].n; i++)
				b->part_idx[k++] = band_at(b, b->heaps[h].v[i].first);
		qsort(b->part_idx + from, k - from, sizeof(*b->part_idx), u32_cmp);
		{
			size_t u = from;
			for (size_t i = from; i < k; i++)
				if (u == from || b->part_idx[u - 1] != b->part_idx[i])
					b->part_idx[u++] = b->part_idx[i];
			k = u;
		}
	}
	b->part_start[np] = k;
	return MS_OK;
}

void ms_bands_release(struct ms_bands *b)
{
	if (!b)
		return;
	ms_free(b->heaps);
	ms_free(b->heap_room);
	ms_free(b->bands);
	ms_free(b->part_idx);
	ms_free(b->part_start);
	memset(b, 0, sizeof(*b));
}
