/*
 * Drawing the allocator's state at one moment (a replay's snapshot, replay.h) for people:
 * a text map for terminals, Graphviz DOT, and SVG laid out in-process by libgvc.
 */
#ifndef MEMSNAP_RENDER_RENDER_H
#define MEMSNAP_RENDER_RENDER_H

#include "common/buf.h"
#include "common/symtab.h"
#include "replay/replay.h"

struct ms_render_input {
	const char *source; /* the trace's name, for titles */
	const char *moment; /* how the moment was chosen: "peak", "oom", "end" or "event" */
	const struct ms_replay_result *r; /* r->snap.taken; r->first_oom when snap.at_oom */
	const struct ms_symtab *syms;     /* for stack labels; NULL: none */
};

/* Width of the text map's bars in characters. */
#define MS_RENDER_TEXT_WIDTH 48
/* The most cells a segment gets in DOT; beyond, neighbouring blocks share one (see dot.c). */
#define MS_RENDER_DOT_CELLS 64

/* Each appends to out; MS_ERR_NOMEM is the only failure. */
ms_status ms_render_text(const struct ms_render_input *in, struct ms_buf *out);
ms_status ms_render_dot(const struct ms_render_input *in, struct ms_buf *out);

/* 1 when this build lays out SVG itself (libgvc), else 0. */
int ms_render_have_svg(void);
/* DOT laid out by libgvc's dot engine; MS_ERR_UNSUPPORTED without libgvc. */
ms_status ms_render_svg(const struct ms_render_input *in, struct ms_buf *out, struct ms_diag *d);

/* The heading both formats share: "<source>: <moment> (event N): ..." into buf. */
void ms_render_title(const struct ms_render_input *in, char *buf, size_t cap);

#endif
