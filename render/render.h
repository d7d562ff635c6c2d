/*
 * Drawing the allocator's state at one moment (a replay's snapshot, replay.h) for people:
 * a text map for terminals, Graphviz DOT, and SVG laid out in-process by libgvc.
 */
#ifndef MEMSNAP_RENDER_RENDER_H
#define MEMSNAP_RENDER_RENDER_H

#include "common/buf.h"
#include "common/symtab.h"
#include "replay/replay.h"

struct ms_trace;

struct ms_render_input {
	const char *source; /* the trace's name, for titles */
	/* how the moment was chosen: "peak", "oom", "end", "event", or "snapshot" (no trace: the
	 * end state the snapshot recorded, replay/end_state.h) */
	const char *moment;
	const struct ms_replay_result *r; /* r->snap.taken; r->first_oom when snap.at_oom */
	const struct ms_symtab *syms;     /* for stack labels; NULL: none */
	uint32_t frames; /* frames shown with a site (replay/site.h: MS_FRAMES_*); 0: the site */
};

/* Width of the text map's bars in characters. */
#define MS_RENDER_TEXT_WIDTH 48
/* The most cells a segment gets in DOT; beyond, neighbouring blocks share one (see dot.c). */
#define MS_RENDER_DOT_CELLS 64

/* Blocks [from, to) of a segment drawn as one cell, and the bytes in each state. */
struct ms_render_cell {
	size_t from, to;
	uint64_t bytes[4]; /* allocated (its requested part), rounding slack, pending free, free */
};
/*
 * A segment's n blocks as at most MS_RENDER_DOT_CELLS cells (dot.c says how they merge);
 * cells has room for that many. Returns how many.
 */
size_t ms_render_cells(const struct ms_block *b, size_t n, struct ms_render_cell *cells);
/* The state a cell is drawn in: 0 allocated, 2 pending free, 3 free (the most bytes). */
int ms_render_cell_state(const struct ms_render_cell *c);

/* Each appends to out; MS_ERR_NOMEM is the only failure. */
ms_status ms_render_text(const struct ms_render_input *in, struct ms_buf *out);
ms_status ms_render_dot(const struct ms_render_input *in, struct ms_buf *out);

/* 1 when this build lays out SVG itself (libgvc), else 0. */
int ms_render_have_svg(void);
/* DOT laid out by libgvc's dot engine; MS_ERR_UNSUPPORTED without libgvc. */
ms_status ms_render_svg(const struct ms_render_input *in, struct ms_buf *out, struct ms_diag *d);

/*
 * What the HTML report needs: the trace (in memory, or streamed from path: only the what-if
 * table at an OOM loads it whole), the replay's options and its first pass.
 */
struct ms_render_html_input {
	const char *source;
	const char *path;
	const struct ms_trace *trace;         /* or NULL */
	const struct ms_replay_opts *opts;    /* as the first pass ran (limit, mid-run state) */
	const struct ms_replay_result *first; /* the first pass: events, peak, OOM */
	size_t buckets;                       /* timeline detail; 0: 2000 */
	size_t moments;                       /* segment maps besides peak and OOM; 0: 48 */
	int no_whatif;     /* leave out the what-if table (it replays the trace many times) */
	uint32_t frames;   /* frames the segment map's tooltips show with a site; 0: the site */
	uint64_t from, to; /* the window of events drawn; to = 0: to the end */
	/* the limit was inferred from the recorded OOMs, between limit_lo and limit_hi: the page
	 * says so wherever a verdict rests on it */
	int limit_inferred;
	uint64_t limit_lo, limit_hi;
	/* append the page's data (JSON) alone, for ms_render_html_devices, not the page */
	int data_only;
};
/*
 * The event in [from, to) after which allocated bytes were highest (the first such), from a
 * replay with opts of t, or (t NULL) of the file path, that stops at to.
 */
ms_status ms_render_window_peak(const struct ms_trace *t, const char *path,
                                const struct ms_replay_opts *opts, uint64_t from, uint64_t to,
                                uint64_t *index, struct ms_diag *d);
/*
 * One page for several devices: datas[i] (ms_render_html with data_only) is device devices[i];
 * the page opens on devices[first] and has a switch to the others.
 */
ms_status ms_render_html_devices(struct ms_buf *out, const char *source, const struct ms_buf *datas,
                                 const uint32_t *devices, size_t n, size_t first);
/* 1 when this build embeds dygraphs and writes HTML, else 0. */
int ms_render_have_html(void);
/* The self-contained HTML report (html.c); replays the trace once more. */
ms_status ms_render_html(const struct ms_render_html_input *in, struct ms_buf *out,
                         struct ms_diag *d);

/*
 * The page of a snapshot without a trace (in->moment "snapshot", replay/end_state.h): the
 * segment map of the end state as recorded, its top sites and stacks; no timeline.
 */
ms_status ms_render_html_snapshot(const struct ms_render_input *in, struct ms_buf *out,
                                  struct ms_diag *d);

/* s as text inside HTML (or a DOT HTML-like label or attribute): &, <, >, " escaped, control
 * characters dropped. */
ms_status ms_render_escape(struct ms_buf *out, const char *s);

/* The heading both formats share: "<source>: <moment> (event N): ..." into buf. */
void ms_render_title(const struct ms_render_input *in, char *buf, size_t cap);

#endif
