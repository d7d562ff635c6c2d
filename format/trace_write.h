/*
 * Writer of .zst traces (docs/FORMAT.md). Records are packed with msgpack-c
 * into a frame buffer; each full buffer becomes one zstd frame.
 * Ownership: ms_writer_open() returns a writer the caller frees with
 * ms_writer_free() (which does not finish the file: call ms_writer_close()
 * first). Not thread-safe: one writer, one thread at a time.
 */
#ifndef MEMSNAP_FORMAT_TRACE_WRITE_H
#define MEMSNAP_FORMAT_TRACE_WRITE_H

#include <stdio.h>

#include "common/event.h"

struct ms_writer_opts {
	int level;             /* zstd level; 0 = 3 */
	size_t frame_bytes;    /* uncompressed bytes per frame; 0 = 1 MiB */
	uint32_t time_unit_ns; /* tick length; 0 = the META's time_unit_ns, else 1 */
	const char *producer;  /* NULL = "memsnap" */
	const char *source;    /* NULL = "" */
	/*
	 * 0: every record first writes the symtab's new definitions. 1: only
	 * ms_writer_sync_defs() does, so that another thread may intern into the
	 * symtab while records are written (the recorder, under its lock).
	 */
	int manual_defs;
};
#define MS_WRITER_OPTS_INIT            \
	{                              \
		0, 0, 0, NULL, NULL, 0 \
	}

struct ms_writer;

/*
 * Start a trace on f (borrowed: the caller closes it after ms_writer_close).
 * syms: the table that event/segment ids refer to; borrowed, must outlive the writer.
 * @return MS_OK, MS_ERR_NOMEM, MS_ERR_IO, MS_ERR_COMPRESSION
 */
ms_status ms_writer_open(FILE *f, const struct ms_writer_opts *o, const struct ms_symtab *syms,
                         struct ms_writer **out, struct ms_diag *diag);
/* Write META; required once before the first event. */
ms_status ms_writer_meta(struct ms_writer *w, const struct ms_meta *m);
ms_status ms_writer_event(struct ms_writer *w, const struct ms_event *e);
ms_status ms_writer_annotation(struct ms_writer *w, const struct ms_annotation *a);
ms_status ms_writer_segment(struct ms_writer *w, const struct ms_segment *s,
                            const struct ms_block *blocks);
/* Write the definitions interned in the symtab since the last call (manual_defs). */
ms_status ms_writer_sync_defs(struct ms_writer *w);
/* A DROPPED record: n events were lost at about time t_ns (the recorder shed load). */
ms_status ms_writer_dropped(struct ms_writer *w, int64_t t_ns, uint64_t n);
/* Compress what is buffered into a frame and write it (the recorder's periodic flush). */
ms_status ms_writer_flush(struct ms_writer *w);
/* Flush, then write the trailer (META, definitions, INDEX, END) and the footer. */
ms_status ms_writer_close(struct ms_writer *w, struct ms_diag *diag);
/* Say in the END record that the events came from a trace cut short (its run went on). */
void ms_writer_source_cut_short(struct ms_writer *w);
void ms_writer_free(struct ms_writer *w);

/* Bytes written so far and events written so far. */
uint64_t ms_writer_bytes(const struct ms_writer *w);
uint64_t ms_writer_events(const struct ms_writer *w);

/* A sink that writes everything it receives to w (convert). */
void ms_writer_sink(struct ms_writer *w, struct ms_sink *sink);

#endif
