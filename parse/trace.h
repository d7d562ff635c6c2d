/*
 * struct ms_trace: a whole trace in memory (events, annotations, end-state
 * segments, symbols), and ms_source_read(): any supported file to a sink.
 * Loading a whole trace is for small traces and tests; commands that can
 * stream use ms_source_read() with a sink of their own.
 */
#ifndef MEMSNAP_PARSE_TRACE_H
#define MEMSNAP_PARSE_TRACE_H

#include "common/arena.h"
#include "common/event.h"
#include "format/trace_read.h"
#include "parse/input.h"
#include "parse/pool_infer.h"
#include "parse/torch_snapshot.h"

struct ms_trace {
	struct ms_meta meta; /* strings owned by arena */
	struct ms_symtab syms;
	struct ms_arena arena;
	struct ms_event *events;
	size_t n_events, cap_events;
	struct ms_annotation *anns;
	size_t n_anns, cap_anns;
	struct ms_segment *segs;
	size_t n_segs, cap_segs;
	struct ms_block *blocks; /* segment i's blocks: blocks[seg_block0[i] ..] */
	size_t n_blocks, cap_blocks;
	size_t *seg_block0;
	size_t cap_seg_block0;
	/* ms_trace_load: the events' pools told from the end state (pool_infer.h), where the trace
	 * does not record them and has private-pool segments at the end; else all zero */
	struct ms_pool_inference pools;
	/* ms_trace_load of a memsnap trace: its file ends early (cut off in a frame, or no END
	 * record): what it holds is a prefix of the run */
	int cut_short;
};

/* What ms_source_read() found besides the records. */
struct ms_source_info {
	enum ms_file_kind kind;
	enum ms_compression compression;
	uint64_t file_bytes;
	int file_regular; /* a regular file: file_bytes is its size (else a pipe or device's) */
	struct ms_zst_info zst;       /* kind == MS_FILE_TRACE */
	struct ms_snapshot_info snap; /* pickle or JSON */
};
/* Whether the events of what was read end before its run did: a memsnap trace without its END
 * (a recording killed, a file cut), or the JSON or trace convert made of one. */
int ms_source_cut_short(const struct ms_source_info *si);

/*
 * Read path ("-" = stdin) whatever its kind into sink; ids refer to syms
 * (initialised and owned by the caller). opts (may be NULL) selects a window
 * of events for .zst traces. info may be NULL. Warnings are left in diag.
 */
ms_status ms_source_read(const char *path, const struct ms_read_opts *opts, struct ms_symtab *syms,
                         const struct ms_sink *sink, struct ms_source_info *info,
                         struct ms_diag *diag);
struct ms_source;
/* As ms_source_read, of an input opened once (source.h), counted as a pass (enum ms_pass). */
ms_status ms_source_stream(const struct ms_source *src, unsigned pass,
                           const struct ms_read_opts *opts, struct ms_symtab *syms,
                           const struct ms_sink *sink, struct ms_source_info *info,
                           struct ms_diag *diag);

/*
 * Load a whole trace. On success *out is a new trace the caller frees with
 * ms_trace_free(). Events whose pool the trace does not record get the pool its end state
 * tells, where it has private-pool segments (t->pools).
 */
ms_status ms_trace_load(const char *path, const struct ms_read_opts *opts, struct ms_trace **out,
                        struct ms_source_info *info, struct ms_diag *diag);
/* As ms_trace_load, of an input opened once: a new trace the caller frees (ms_source_whole
 * keeps one in the source instead). */
ms_status ms_trace_load_source(const struct ms_source *src, const struct ms_read_opts *opts,
                               struct ms_trace **out, struct ms_source_info *info,
                               struct ms_diag *diag);
void ms_trace_free(struct ms_trace *t);

/* 1 if path is a regular file holding a PyTorch snapshot (pickle or JSON, plain or compressed);
 * 0 for a memsnap trace, for a pipe or standard input (read once only: not probed), and where it
 * cannot be opened (reading it says why). */
int ms_file_is_snapshot(const char *path);
/*
 * The earliest event time of t (0: it records none), from which times into the trace are
 * counted: a snapshot lists each device's events apart, so the first event need not be it.
 */
int64_t ms_trace_first_time(const struct ms_trace *t);
/* A snapshot without a trace: end-state segments, and no allocation of PyTorch's allocator. */
int ms_trace_no_allocations(const struct ms_trace *t);

/* A sink that appends to t (created with ms_trace_new()). */
ms_status ms_trace_new(struct ms_trace **out);
void ms_trace_sink(struct ms_trace *t, struct ms_sink *sink);

/* Replay t into sink in the order ms_source_read() would have. */
ms_status ms_trace_emit(const struct ms_trace *t, const struct ms_sink *sink);

#endif
