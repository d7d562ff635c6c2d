/*
 * stats' reading: each file read once into a result (trace_stats.h), on several threads, then a
 * file with several devices read again once for each, so that every result is about one device
 * (devices are never added together). A snapshot with private pools whose events do not say
 * their pool is read whole, its pools told by its end state.
 */
#ifndef MEMSNAP_ANALYSIS_STATS_READ_H
#define MEMSNAP_ANALYSIS_STATS_READ_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/trace_stats.h"
#include "common/symtab.h"
#include "memsnap/memsnap.h"
#include "parse/trace.h"

/* One read: set path, only (-1: every device), top and frames; the rest is filled. */
struct ms_stats_read {
	const char *path;
	int64_t only;   /* read only this device, -1: every device */
	int64_t device; /* the device the result is about, -1: none has anything */
	struct ms_symtab syms;
	struct ms_stats_builder *b;
	const struct ms_trace_stats *r;
	struct ms_source_info si;
	struct ms_diag d;
	ms_status s;
	int64_t t0;
	size_t top;
	uint32_t frames;                        /* --frames */
	const struct ms_windows_asked *windows; /* windows to measure (trace_stats.h), or NULL */
	int empty; /* valid, with no event and no segment: no allocations recorded */
	/* the table the result's ids refer to where it is not syms: standard input's trace, read
	 * whole once for every read of it (ms_stats_read_syms gives the right one) */
	const struct ms_symtab *ext_syms;
	/* path opened once (parse/source.h): by the read, or the file's read it was split from */
	struct ms_source *src;
	int own_src; /* closed with the read */
};

/* Read j->path into j (j->s: its status, j->d: the message and warnings). */
void ms_stats_read_run(struct ms_stats_read *j, size_t top);
void ms_stats_read_release(struct ms_stats_read *j);
/* The table of the result's ids (strings, frames, stacks). */
const struct ms_symtab *ms_stats_read_syms(const struct ms_stats_read *j);
/* The result has events (else, a snapshot without a trace, only segments). */
int ms_stats_has_events(const struct ms_trace_stats *r);
/* The result is about device dev: allocator events there, or (no trace) segments. */
int ms_stats_about(const struct ms_trace_stats *r, int events, uint32_t dev);
/* How many devices r is about; the first of them in *first. */
size_t ms_stats_devices_of(const struct ms_trace_stats *r, uint32_t *first);
/*
 * Read reads[0..n) on up to nth threads, then split the files with several devices: *out (the
 * caller frees it with ms_free, each read with ms_stats_read_release) gets one read per (file,
 * device), in order: the reads move there, and the caller frees the array reads[] alone.
 * MS_ERR_NOMEM only: each read's own status is its s.
 */
ms_status ms_stats_read_files(struct ms_stats_read *reads, size_t n, size_t top, size_t nth,
                              struct ms_stats_read **out, size_t *n_out);

#endif
