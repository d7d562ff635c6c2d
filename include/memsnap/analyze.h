/*
 * memsnap's analyses as a library (libmemsnap, docs/LIBRARY.md): a file opened once, questions
 * asked of it, each answer the JSON that the command's --json prints. Nothing here prints, exits
 * or installs a signal handler; a file may be asked questions from several threads at once.
 */
#ifndef MEMSNAP_ANALYZE_H
#define MEMSNAP_ANALYZE_H

#include <stddef.h>

#include "memsnap/memsnap.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ms_file ms_file;

/*
 * Read path whole: a memsnap trace, or a PyTorch snapshot (pickle or JSON; plain, .zst or
 * .gz), without running any code a pickle carries. Returns 0, or 1 with msg: one line, the
 * file, where and what is wrong (as the command's error says it).
 */
MS_API int ms_file_open(const char *path, ms_file **in, char *msg, size_t cap);
MS_API void ms_file_close(ms_file *in);
/*
 * What reading the file warned of (a recording killed before its end, a compressed file cut
 * off), or NULL where nothing: one line, the text the commands print on stderr after the file's
 * name, valid until ms_file_close. The answers hold the same as fields (trace_cut_short, ...).
 */
MS_API const char *ms_file_warning(const ms_file *in);

/*
 * Ask in a question: "info", "stats", "replay", "verify", "explain", "whatif" or "check".
 * options[0..n)
 * are "name=value" strings named as the command's flags; a question refuses the options its
 * command does not take (docs/LIBRARY.md lists them): device=D, limit=SIZE, memory_fraction=F,
 * device_memory=SIZE, alloc_conf=CONF, jobs=N, site_depth=N, and whatif's config=CONF, once for
 * each setting to try. *json (free it with ms_json_free) is what `memsnap QUESTION --json FILE`
 * prints.
 *
 * Returns the command's exit code. 0, 3 (a replay ran out of memory where the recorded run did
 * not), 4 (verify found the replay different) and 5 (check found a budget exceeded) are
 * answers: *json is set. 1 (the file cannot
 * answer) and 2 (a question or option memsnap does not take) leave *json NULL and say why in
 * msg, one line. in, question and json are required; options may be NULL when n_options is 0;
 * msg may be NULL. The notes the command prints on stderr (a limit inferred, a trace started
 * mid-run) are fields of the answer, not text.
 */
MS_API int ms_ask(ms_file *in, const char *question, const char *const *options, size_t n_options,
                  char **json, char *msg, size_t cap);
MS_API void ms_json_free(char *json);

/*
 * diff: what changed from a to b, as `memsnap diff --json A B` prints it: one device each (two
 * ranks) compared with each other, else each device with events in both with itself. Options as
 * ms_ask's, those diff takes: device, limit, memory_fraction, device_memory, alloc_conf,
 * site_depth and top=N (rows a table, default 10). Returns 0 with *json set, or 1 or 2 as
 * ms_ask does.
 */
MS_API int ms_compare(ms_file *a, ms_file *b, const char *const *options, size_t n_options,
                      char **json, char *msg, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
