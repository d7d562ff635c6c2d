/* The only code that writes diagnostics to stderr or picks exit codes. */
#ifndef MEMSNAP_CLI_MESSAGES_H
#define MEMSNAP_CLI_MESSAGES_H

#include <stdio.h>

#include "memsnap/memsnap.h"

/* Exit codes (README: Exit codes). */
enum {
	MS_EXIT_OK = 0,
	MS_EXIT_ERROR = 1,
	MS_EXIT_USAGE = 2,
	MS_EXIT_OOM = 3,      /* replay ended in an OOM */
	MS_EXIT_DIVERGED = 4, /* verify found a difference */
	MS_EXIT_BUDGET = 5,   /* check: a budget was exceeded */
};

extern int ms_quiet;

void ms_error(const char *fmt, ...) MS_PRINTF(1, 2);
/* Lines that follow an error (its usage line, a suggestion), as they are: not silenced by -q. */
void ms_error_more(const char *fmt, ...) MS_PRINTF(1, 2);
void ms_warning(const char *fmt, ...) MS_PRINTF(1, 2);
/* "note: what": something the reader should know about the result; silenced by -q. */
void ms_note(const char *fmt, ...) MS_PRINTF(1, 2);
/* "what" after "memsnap: ", such as "wrote FILE"; silenced by -q. */
void ms_said(const char *fmt, ...) MS_PRINTF(1, 2);
/* Print "error: what" and exit with code. */
_Noreturn void ms_die(int code, const char *fmt, ...) MS_PRINTF(2, 3);
/* One line for a failed library call on file path: "error: path: detail". */
void ms_report(const char *path, ms_status s, const struct ms_diag *d);
/* Print the warnings a successful call left in d. */
void ms_report_warnings(const char *path, const struct ms_diag *d);

/* Human-readable bytes: ms_format_size (common/buf.h), PyTorch's format_size. */
#include "common/buf.h"

/* Exact integers in cJSON output, and figures not told (null) */
#include "common/json.h"
struct cJSON;
/*
 * JSON of a command run on each device of a trace: one device's object alone, or with more than
 * one device {"trace": path, "devices": {"N": object, ...}} (and a verdict, see _end).
 */
struct ms_json_devices {
	struct cJSON *all, *by_dev;
};
void ms_json_devices_begin(struct ms_json_devices *j, const char *trace, size_t n_devices);
/* Device's object o (owned from here; NULL: nothing to add). */
void ms_json_devices_add(struct ms_json_devices *j, uint32_t device, struct cJSON *o);
/* Print it to stdout when print is set, with verdict: value when there are several devices
   (verdict NULL: none); then free it. */
void ms_json_devices_end(struct ms_json_devices *j, int print, const char *verdict, int value);
/* ms_median_u64: analysis/stats_view.h */
#include "analysis/stats_view.h"
/* Does file name s end with suffix (".json", ".html")? */
int ms_ends_with(const char *s, const char *suffix);
/* "a/b" into out[cap] (b alone when a is NULL); 0, or -1 when out is too small. */
int ms_path_join(char *out, size_t cap, const char *a, const char *b);
/*
 * Where the recorder's and the backends' pieces are (libmemsnap_cuda.so, the PyTorch plugins,
 * python/): $MEMSNAP_LIBDIR, else next to this executable (installed or in the build tree).
 * Returns 0, or -1 when not found.
 */
int ms_find_libdir(char *out, size_t cap);

#endif
