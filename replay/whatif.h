/*
 * What-if: one trace replayed under several allocator settings, in parallel threads, each
 * with the least memory limit under which the whole trace completes (a search over replays).
 */
#ifndef MEMSNAP_REPLAY_WHATIF_H
#define MEMSNAP_REPLAY_WHATIF_H

#include "replay/replay.h"

struct ms_trace;
struct ms_alloc_conf;

struct ms_whatif_row {
	const char *conf; /* PYTORCH_CUDA_ALLOC_CONF; NULL: the trace's own */
	ms_status s;      /* MS_OK, or why this setting could not be replayed (err) */
	char err[512];
	struct ms_replay_result r; /* the replay under the base limit */
	uint64_t min_memory;       /* the least limit that completes; 0: none found */
	int no_min_memory;         /* set by the caller: no search for min_memory (left 0) */
	/* set by the caller: this setting's replay under the base options, made already (r is
	 * left empty): only min_memory is searched */
	const struct ms_replay_result *given;
	/* set by the caller: r is another replay's, borrowed (the settings cannot make this one
	 * differ from it): not replayed, not released; min_memory is searched where asked */
	int borrowed;
	/* set by the caller: r is this setting's replay under the base options, made already:
	 * not replayed, released with the rows; min_memory is searched where asked */
	int made;
	/* set by the caller: search min_memory only where helps(helps_ctx, its replay) says so,
	 * right after the replay (no_min_memory left 0) */
	int (*helps)(const void *helps_ctx, const struct ms_replay_result *r);
	const void *helps_ctx;
};

/* The settings tried when the user names none: the recorded one first (NULL). */
extern const char *const ms_whatif_default_configs[];
extern const size_t ms_whatif_n_default_configs;

/*
 * Fill rows[i].r and .min_memory for each rows[i].conf, replaying t with base (its limit and
 * device memory) in up to threads threads (0: one per CPU). A row whose replay cannot differ
 * from an earlier row's (ms_whatif_same_replay) borrows it. Per-row failures land in
 * rows[i].s; the return is MS_ERR_NOMEM or MS_ERR_BACKEND (no thread could start) only.
 * Release with ms_whatif_release().
 */
ms_status ms_whatif_run(const struct ms_trace *t, const struct ms_replay_opts *base,
                        struct ms_whatif_row *rows, size_t n, unsigned threads);
void ms_whatif_release(struct ms_whatif_row *rows, size_t n);

/*
 * Whether replaying under conf cannot differ from the replay ref: the same settings but for
 * the collector's threshold where no limit binds (it acts only under one) and max_split_size
 * where no segment of ref reached it (it acts only on blocks as large). Not for a replay from
 * a rebuilt state or with expandable segments, whose segments the count does not cover.
 * *ac gets conf's settings.
 */
int ms_whatif_same_replay(const struct ms_replay_result *ref, const char *conf,
                          struct ms_alloc_conf *ac);

/* w's replay borrowed from `from` (w->borrowed): as replaying under w->conf, whose settings are
 * *ac, would have written it (replay.c's r_begin for settings given). */
void ms_whatif_borrow(const struct ms_trace *t, struct ms_whatif_row *w,
                      const struct ms_replay_result *from, const struct ms_alloc_conf *ac);

#endif
