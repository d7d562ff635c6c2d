/*
 * Drawing for people: the allocator's state at one moment (a replay's snapshot, replay.h) as a
 * text map for terminals, Graphviz DOT, or SVG laid out in-process by libgvc; and the HTML
 * report of a whole replay (gathered in report.h).
 */
#ifndef MEMSNAP_RENDER_RENDER_H
#define MEMSNAP_RENDER_RENDER_H

#include "common/buf.h"
#include "common/symtab.h"
#include "replay/replay.h"

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
 * The HTML report. Its data is gathered first into a struct ms_report (render/report.h); the
 * page is written from it, with the what-if table the caller computed (replay/whatif.h's
 * default matrix under the same limit: rows[0 .. n_whatif)), drawn where the report has an OOM
 * (NULL: none). Each appends to out.
 */
struct ms_report;
struct ms_whatif_row;
/* 1 when this build embeds dygraphs and writes the page, else 0. */
int ms_render_have_html(void);
/* The self-contained page; MS_ERR_NOMEM, or MS_ERR_UNSUPPORTED without dygraphs. */
ms_status ms_render_html(const struct ms_report *rep, const struct ms_whatif_row *whatif,
                         size_t n_whatif, struct ms_buf *out);
/* The page's data (JSON) alone, for ms_render_html_devices; MS_ERR_NOMEM only. */
ms_status ms_render_html_data(const struct ms_report *rep, const struct ms_whatif_row *whatif,
                              size_t n_whatif, struct ms_buf *out);
/*
 * One page for several devices: datas[i] (ms_render_html_data) is device devices[i]; the page
 * opens on devices[first] and has a switch to the others. MS_ERR_NOMEM, or MS_ERR_UNSUPPORTED
 * without dygraphs.
 */
ms_status ms_render_html_devices(struct ms_buf *out, const char *source, const struct ms_buf *datas,
                                 const uint32_t *devices, size_t n, size_t first);

/*
 * The report's timeline as CSV: a header, then a row per bucket (docs/RENDER.md). MS_ERR_NOMEM
 * only.
 */
ms_status ms_render_csv(const struct ms_report *rep, struct ms_buf *out);

/* s as text inside HTML (or a DOT HTML-like label or attribute): &, <, >, " escaped, control
 * characters dropped. */
ms_status ms_render_escape(struct ms_buf *out, const char *s);

/* The heading both formats share: "<source>: <moment> (event N): ..." into buf. */
void ms_render_title(const struct ms_render_input *in, char *buf, size_t cap);

#endif
