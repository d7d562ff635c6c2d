/*
 * Reading a trace on a thread of its own while the caller consumes it: ms_source_read() with the
 * decoding of the next events overlapping the sink's work on the last ones.
 */
#ifndef MEMSNAP_PARSE_READ_AHEAD_H
#define MEMSNAP_PARSE_READ_AHEAD_H

#include "parse/trace.h"

/*
 * As ms_source_read(), and the sink's callbacks are made on the calling thread in the same
 * order; the reader interns into syms on its own thread, so the sink must not read syms before
 * the call returns (its ids are valid; their strings and frames come after). Falls back to
 * reading on the calling thread where no thread can be started.
 */
ms_status ms_source_read_ahead(const char *path, const struct ms_read_opts *opts,
                               struct ms_symtab *syms, const struct ms_sink *sink,
                               struct ms_source_info *info, struct ms_diag *diag);
/* The same of an input opened once (source.h), counted as pass. */
ms_status ms_source_stream_ahead(const struct ms_source *src, unsigned pass,
                                 const struct ms_read_opts *opts, struct ms_symtab *syms,
                                 const struct ms_sink *sink, struct ms_source_info *info,
                                 struct ms_diag *diag);

#endif
