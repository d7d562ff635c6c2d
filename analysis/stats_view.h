/*
 * One stats result as the command shows it: a file's result (trace_stats.h) for one device, with
 * what it cannot tell (a mid-run start, a trace cut short, how the memory outside PyTorch is
 * known). Shared by the text and the JSON (json/stats.h).
 */
#ifndef MEMSNAP_ANALYSIS_STATS_VIEW_H
#define MEMSNAP_ANALYSIS_STATS_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/trace_stats.h"
#include "analysis/user_cats.h"
#include "common/symtab.h"

struct ms_stats_view {
	const char *path;
	int64_t device; /* the device the result is about, -1: none has anything */
	int64_t only;   /* the device read alone, -1: every device */
	const struct ms_symtab *syms;
	const struct ms_trace_stats *r;
	int cut_short;                        /* the events end before the run did */
	size_t top;                           /* the length of the top lists */
	uint32_t frames;                      /* what --frames shows of a site (replay/site.h) */
	uint32_t site_depth;                  /* sites are labelled at it */
	const struct ms_user_cats *user_cats; /* the user's categories at the peak, or NULL */
};

/* How the memory outside PyTorch is known (docs/EXPLAIN.md's outside_pytorch_is). */
enum ms_stats_outside_is {
	MS_STATS_OUTSIDE_NOT_MEASURED = 0, /* no mark, no raw call outside PyTorch's */
	MS_STATS_OUTSIDE_RAW_CALLS_ONLY,   /* the raw calls outside PyTorch's segments: at least */
	MS_STATS_OUTSIDE_MEASURED,         /* the recorder's cudaMemGetInfo marks on the device */
};

/* The events of the device: a file read whole for its one used device also holds the snapshot
 * marks PyTorch writes for every other device, which are none of its events. */
uint64_t ms_stats_view_events(const struct ms_stats_view *v);
/* The trace starts after the job did: blocks live before it, or frees of unknown blocks. */
int ms_stats_mid_run(const struct ms_trace_stats *r);
/* The peak of requested bytes (blocks from before a mid-run trace counted while they lived), its
 * event, its time and the annotation open then. */
uint64_t ms_stats_peak(const struct ms_trace_stats *r);
uint64_t ms_stats_peak_index(const struct ms_trace_stats *r);
int64_t ms_stats_peak_t_ns(const struct ms_trace_stats *r);
uint32_t ms_stats_peak_annotation(const struct ms_trace_stats *r);
/* 1 - largest free block / free bytes in segments: 0 when the free memory is one block. */
double ms_stats_fragmentation(const struct ms_trace_stats *r);
/* The recorder's measurements of the device (its cudaMemGetInfo marks), or NULL. */
const struct ms_stats_outside *ms_stats_view_measured(const struct ms_stats_view *v);
/* PyTorch's reserved bytes at the marks is not known: the figure is at most that. */
int ms_stats_view_measured_at_most(const struct ms_stats_view *v);
/* Raw CUDA calls held memory outside PyTorch's segments at some moment. */
int ms_stats_raw_outside(const struct ms_trace_stats *r);
enum ms_stats_outside_is ms_stats_view_outside_is(const struct ms_stats_view *v);

/* The median of v[0..n) (sorted here, in place); 0 when n is 0. The mean of the middle two
   where n is even. */
uint64_t ms_median_u64(uint64_t *v, size_t n);

#endif
