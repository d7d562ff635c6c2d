/* One stats result as the command shows it (stats_view.h). */
#include "analysis/stats_view.h"

#include <stdlib.h>

uint64_t ms_stats_view_events(const struct ms_stats_view *v)
{
	uint64_t n = v->r->n_events;
	for (uint32_t d = 0; v->only < 0 && v->device >= 0 && d < v->r->n_devices; d++)
		if ((int64_t)d != v->device && v->r->devices[d].snapshot_marks <= n)
			n -= v->r->devices[d].snapshot_marks;
	return n;
}

int ms_stats_mid_run(const struct ms_trace_stats *r)
{
	return r->pre_trace_blocks || r->unmatched_frees;
}

uint64_t ms_stats_peak(const struct ms_trace_stats *r)
{
	return ms_stats_mid_run(r) ? r->mid_peak_requested : r->peak_requested;
}

uint64_t ms_stats_peak_index(const struct ms_trace_stats *r)
{
	return ms_stats_mid_run(r) ? r->mid_peak_index : r->peak_index;
}

int64_t ms_stats_peak_t_ns(const struct ms_trace_stats *r)
{
	return ms_stats_mid_run(r) ? r->mid_peak_t_ns : r->peak_t_ns;
}

uint32_t ms_stats_peak_annotation(const struct ms_trace_stats *r)
{
	return ms_stats_mid_run(r) ? r->mid_peak_annotation : r->peak_annotation;
}

double ms_stats_fragmentation(const struct ms_trace_stats *r)
{
	return r->external_free ? 1.0 - (double)r->largest_free / (double)r->external_free : 0.0;
}

const struct ms_stats_outside *ms_stats_view_measured(const struct ms_stats_view *v)
{
	const struct ms_trace_stats *r = v->r;

	if (v->device < 0 || (uint64_t)v->device >= r->n_devices ||
	    !r->devices[v->device].outside.marks)
		return NULL;
	return &r->devices[v->device].outside;
}

int ms_stats_view_measured_at_most(const struct ms_stats_view *v)
{
	return ms_stats_mid_run(v->r) || v->r->devices[v->device].reserved_unknown;
}

int ms_stats_raw_outside(const struct ms_trace_stats *r)
{
	return r->external_peak > 0;
}

enum ms_stats_outside_is ms_stats_view_outside_is(const struct ms_stats_view *v)
{
	return ms_stats_view_measured(v)    ? MS_STATS_OUTSIDE_MEASURED
	       : ms_stats_raw_outside(v->r) ? MS_STATS_OUTSIDE_RAW_CALLS_ONLY
	                                    : MS_STATS_OUTSIDE_NOT_MEASURED;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

uint64_t ms_median_u64(uint64_t *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), u64_cmp);
	return n % 2 ? v[n / 2] : v[n / 2 - 1] / 2 + v[n / 2] / 2;
}
