/*
 * An input opened once: a file (or standard input) and what it is, that every pass of a command
 * reads through (trace.h's ms_source_stream, ms_trace_load_source), each pass named and counted.
 * A file is opened once and read from its descriptor; standard input can be read once only: by
 * one pass that streams it, or read whole for every pass. The trace read whole is kept for the
 * passes that need it whole (ms_source_whole), where the caller asks.
 *
 * Ownership: the source owns its descriptor and its whole trace until ms_source_close(). Passes
 * may read one source from several threads at once; ms_source_whole() is made before they
 * start.
 */
#ifndef MEMSNAP_PARSE_SOURCE_H
#define MEMSNAP_PARSE_SOURCE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "parse/devices.h"
#include "parse/input.h"
#include "parse/trace.h"

/* The passes over a source's content a command may make, counted by name. */
enum ms_pass {
	MS_PASS_DEVICES, /* which devices have events (a .zst trace's END record, else every frame)
	                  */
	MS_PASS_WHOLE,   /* read whole into memory */
	MS_PASS_REPLAY,  /* streamed into a replay */
	MS_PASS_REPORT,  /* streamed into render's report */
	MS_PASS_STATS,   /* streamed into stats' figures */
	MS_PASS_OTHER,
	MS_PASS_COUNT
};
/* "devices", "whole", ... */
const char *ms_pass_name(unsigned pass);

struct ms_source {
	char *path;
	int fd; /* open for the source's life (standard input: 0) */
	int regular;
	/* standard input, or a named pipe or a device: read once only, by the first pass (a
	 * stream, or the read whole that every later pass then uses) */
	int is_stdin;
	atomic_int consumed;
	enum ms_file_kind kind; /* from its first bytes; MS_FILE_UNKNOWN: reading says why */
	struct ms_trace *whole; /* the trace read whole, once asked (ms_source_whole) */
	struct ms_source_info whole_info;
	struct ms_diag whole_read; /* the warnings of that reading, given with it every time */
	atomic_uint passes[MS_PASS_COUNT];
	/* the devices with something (devices.h), counted once (under mu) */
	pthread_mutex_t mu;
	int devices_known;
	struct ms_devices devices;
};

/* Open path ("-": standard input) once. MS_ERR_IO where it cannot be opened (diag says why). */
ms_status ms_source_open(const char *path, struct ms_source **out, struct ms_diag *diag);
void ms_source_close(struct ms_source *src);
/* A PyTorch snapshot (pickle or JSON, any compression), or standard input: read whole by the
 * commands; a memsnap trace streams from its file. */
int ms_source_is_snapshot(const struct ms_source *src);
/* The trace whole, read once and kept in src (*t valid until ms_source_close); its reading's
 * warnings into diag each time. */
ms_status ms_source_whole(struct ms_source *src, const struct ms_trace **t, struct ms_diag *diag);
/* The warnings of reading src whole (a file cut short), into diag: given with the trace each
 * time it is used. */
void ms_source_warnings(const struct ms_source *src, struct ms_diag *diag);
/* Count a pass over src's content (the readers of trace.h count theirs; MS_PASS_COUNT: a read
 * that is part of a pass counted by its caller). */
void ms_source_count(const struct ms_source *src, unsigned pass);
/* How many passes src has had (all of them: MS_PASS_COUNT). */
unsigned ms_source_passes(const struct ms_source *src, unsigned pass);

#endif
