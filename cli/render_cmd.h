/*
 * memsnap render's parts (cmd_render.c: flags and the device drawn): the page and the CSV
 * timeline (render_page.c), the drawings at one moment and of a snapshot without a trace
 * (render_draw.c).
 */
#ifndef MEMSNAP_CLI_RENDER_CMD_H
#define MEMSNAP_CLI_RENDER_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "cli/replay_opts.h"
#include "common/buf.h"
#include "render/page.h"

/* What render was asked: --format, --at (moment "peak", "oom", "end" or "event" with event),
 * -o, and the page's options (--from and --to are pg's). */
struct ms_render_ask {
	const char *format, *at, *moment, *out;
	uint64_t event;
	struct ms_page_opts pg;
};

/* buf to out (standard output where NULL or "-"), whole or not at all; "wrote ..." said, with
 * the segments and the event drawn where n_segs is not SIZE_MAX. */
int ms_render_emit(const char *out, const struct ms_buf *buf, const char *what, size_t n_segs,
                   uint64_t index);
/* The window [from, *to) of a trace of total events (*to 0 or past the end: to the end). An
 * empty window is an error, said here: returns -1. */
int ms_render_window_check(const char *path, uint64_t from, uint64_t *to, uint64_t total);
/* A first pass that replayed nothing of the device: said, r and c's replay released. */
int ms_render_no_events(struct ms_replay_cli *c, const char *path, struct ms_replay_result *r);

/* Whether replay r's device is the one to draw over the best so far (its OOM, its peak): one
 * whose replay runs out of memory, else the highest reserved peak. */
int ms_render_device_better(const struct ms_replay_result *r, int best_oom, uint64_t best_peak);
/* The device drawn (or opened on, html) of nd, and why: said on stderr. */
void ms_render_say_device(const char *path, size_t nd, int html, uint32_t device, int oom);

/* --format html or csv of c's device (devs[0..nd): the devices a page switches between). */
int ms_render_page(struct ms_replay_cli *c, const char *path, const struct ms_render_ask *a,
                   const uint32_t *devs, size_t nd);
/* --format txt, dot or svg: c's device at the moment asked. */
int ms_render_moment(struct ms_replay_cli *c, const char *path, const struct ms_render_ask *a);
/*
 * A snapshot without a trace: its end state drawn as it was recorded. Returns 0 when path has
 * allocator events (the caller replays them), else 1 with *rc set.
 */
int ms_render_no_trace(struct ms_replay_cli *c, const char *path, const struct ms_render_ask *a,
                       int *rc);

#endif
