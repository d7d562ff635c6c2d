/*
 * render's page made whole: after the caller's first pass (the replay that infers a limit or
 * rebuilds a mid-run state, whose notes the caller says), one more replay for the report
 * (report.h), the what-if table at an OOM, the diagnosis of the peak and the verdict of the run,
 * and the page, its data alone or its timeline as CSV written into a buffer. Nothing is printed.
 */
#ifndef MEMSNAP_RENDER_PAGE_H
#define MEMSNAP_RENDER_PAGE_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "render/render.h"
#include "replay/replay.h"
#include "replay/run.h"

struct ms_trace;
struct ms_source;

/* What a page is asked with: --detail, --no-whatif, --from/--to, --frames, --site-depth. */
struct ms_page_opts {
	size_t detail;
	int no_whatif;
	uint64_t from, to; /* events [from, to); to is past the first pass's last event or set */
	uint32_t frames, site_depth;
	const struct ms_user_cats *user_cats; /* --category, --categories: or NULL */
};

/* The whole page, its data alone (ms_render_html_devices), or its timeline as CSV. */
enum ms_page_out { MS_PAGE_HTML, MS_PAGE_DATA, MS_PAGE_CSV };

/* Traces up to this many events are read whole for the diagnosis and the verdict (about 56
 * bytes an event); beyond, the page points to memsnap explain. */
#define MS_PAGE_WHOLE_EVENTS 4000000

/*
 * One device's page of the input src (parse/source.h) appended to out: t is the trace in
 * memory, or NULL for a .zst trace that streams from its file (read whole only where it has at most
 * MS_PAGE_WHOLE_EVENTS events, or for the what-if table). o are the options the first pass left
 * (its limit, its rebuilt state), first its result and lim its inferred limit.
 */
ms_status ms_page_write(const struct ms_source *src, const struct ms_trace *t,
                        const struct ms_replay_opts *o, const struct ms_replay_result *first,
                        const struct ms_limit_range *lim, const struct ms_page_opts *pg,
                        enum ms_page_out what, struct ms_buf *out, struct ms_diag *d);

/*
 * The whole page (no window) made while the first pass runs, on two threads: the report's
 * replay runs with the options asked, finds the peak itself and takes the state there with a
 * replay up to it, so that it needs nothing from the first pass. first_pass(ctx, r, lim) is the
 * caller's first pass: a replay with *o (which it leaves as the options that reproduce it), run
 * on a thread of its own with hooks this function puts into *o and takes out again.
 */
struct ms_page_together {
	/* MS_PAGE_WROTE: the page is in out (or status failed, with d);
	 * MS_PAGE_FIRST_FAILED: the first pass returned first_rc (nothing in r);
	 * MS_PAGE_SEPARATELY: the first pass decided otherwise than asked (an OOM, a limit
	 * inferred, a rebuilt state) or replayed no event of the device: r is its result, and the
	 * page is to be made the usual way (ms_page_write) from it;
	 * MS_PAGE_NOT_TOGETHER: nothing was done (the trace's events unknown, no thread) */
	enum { MS_PAGE_WROTE, MS_PAGE_FIRST_FAILED, MS_PAGE_SEPARATELY, MS_PAGE_NOT_TOGETHER } how;
	int first_rc;
	ms_status status;
	struct ms_replay_result r;
	struct ms_limit_range lim;
};
void ms_page_together_write(const struct ms_source *src, const struct ms_trace *t,
                            struct ms_replay_opts *o,
                            int (*first_pass)(void *ctx, struct ms_replay_result *r,
                                              struct ms_limit_range *lim),
                            void *ctx, const struct ms_page_opts *pg, struct ms_buf *out,
                            struct ms_page_together *res, struct ms_diag *d);

/*
 * The page of a snapshot's end state (no timeline): in is the drawing's input (its end state
 * in in->r), opening with explain's end-state verdict under limit and device_memory (0: not
 * known).
 */
ms_status ms_page_end_state(const struct ms_render_input *in, uint64_t limit,
                            uint64_t device_memory, struct ms_buf *out);

#endif
