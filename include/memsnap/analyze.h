/*
 * memsnap's analyses as a library (libmemsnap): an input opened once, questions asked of it, each
 * answer the JSON that the command's --json prints. Nothing here prints, exits or installs a
 * signal handler; an input may be asked questions from several threads at once.
 *
 *     ms_file *in;
 *     char msg[512], *json;
 *     const char *opts[] = {"device=1", "limit=12GiB"};
 *     if (ms_file_open("snap.pickle", &in, msg, sizeof msg) == 0) {
 *             int rc = ms_ask(in, "explain", opts, 2, &json, msg, sizeof msg);
 *             ...
 *             ms_json_free(json);
 *             ms_file_close(in);
 *     }
 */
#ifndef MEMSNAP_ANALYZE_H
#define MEMSNAP_ANALYZE_H

#include <stddef.h>

#include "memsnap/memsnap.h"

typedef struct ms_file ms_file;

/*
 * Read path whole: a memsnap trace, or a PyTorch snapshot (pickle or JSON; plain, .zst or
 * .gz), without running any code a pickle carries. Returns 0, or 1 with msg: one line, the
 * file, where and what is wrong (as the command's error says it).
 */
MS_API int ms_file_open(const char *path, ms_file **in, char *msg, size_t cap);
MS_API void ms_file_close(ms_file *in);

/*
 * Ask in a question: "info" (no option), "replay", "explain", "whatif" or "verify". Options
 * are "name=value" strings named as the command's flags: device=D, limit=SIZE,
 * memory_fraction=F, device_memory=SIZE, alloc_conf=CONF (not whatif's). explain and whatif
 * also take jobs=N; explain site_depth=N; whatif config=CONF, once for each setting to try
 * ("recorded": the trace's own; none: whatif's default matrix). *json (free it with
 * ms_json_free) is what `memsnap QUESTION --json FILE` prints: a device's object or, for
 * several devices, {"trace", "devices": {...}}.
 *
 * Returns the command's exit code. 0, 3 where a replay ran out of memory where the recorded run
 * did not, and 4 where verify found the replay different from the recording, are answers:
 * *json is set. 1 (the input cannot answer: a snapshot without a
 * trace, no events on the device asked) and 2 (a question or option memsnap does not take)
 * leave *json NULL and say why in msg. The notes the command prints on stderr are not returned.
 */
MS_API int ms_ask(ms_file *in, const char *question, const char *const *options, size_t n_options,
                  char **json, char *msg, size_t cap);
MS_API void ms_json_free(char *json);

#endif
