/*
 * Allocation sites as people read them: which frame of a stack names it, and which frames are
 * shown with it. The rule, innermost frame first (docs/REPLAY.md, "Sites"):
 *   1. the first frame of the user's own Python code;
 *   2. else the first frame of a library torch was called through (site-packages, dist-packages);
 *   3. else the first Python frame of any kind (torch's own, the standard library);
 *   4. else (no Python at all) the first C++ frame that says what ran, past the stack capture,
 *      the allocator, the dispatcher and the runtime's own frames;
 *   5. else the innermost frame.
 * Pure functions of the frames' names and files; thread-safe.
 */
#ifndef MEMSNAP_REPLAY_SITE_H
#define MEMSNAP_REPLAY_SITE_H

#include <stddef.h>
#include <stdint.h>

#include "common/symtab.h"

enum ms_frame_kind {
	MS_FRAME_USER,     /* Python: the program's own code (and <stdin>, <string>, notebooks) */
	MS_FRAME_LIBRARY,  /* Python: a package in site-packages or dist-packages, torch aside */
	MS_FRAME_PYTHON,   /* Python: torch's own, the standard library, other <...> pseudo-files */
	MS_FRAME_NATIVE,   /* C++ that says what ran: an operator, an autograd node, an extension */
	MS_FRAME_PLUMBING, /* native frames between those and the allocator: the stack capture, c10,
	                      dispatch, TensorIterator, std::, C functions (CPython, libc), "??" */
};

/* The kind of a frame from its function name and file name (either may be ""). */
enum ms_frame_kind ms_frame_kind(const char *name, const char *file);

/*
 * The site of a stack of n >= 1 frames (ids, innermost first): the position of its frame.
 * *kind (may be NULL) gets the kind the rule chose it by: MS_FRAME_USER to MS_FRAME_NATIVE,
 * or MS_FRAME_PLUMBING when it fell back to the innermost frame.
 */
size_t ms_site_pos(const struct ms_symtab *y, const uint32_t *frames, size_t n,
                   enum ms_frame_kind *kind);

/* How many frames are shown with a site (--frames): the site alone (user), all, or N. */
#define MS_FRAMES_USER 1u
#define MS_FRAMES_ALL  UINT32_MAX

/*
 * The frames shown for stack under --frames `frames`: MS_FRAMES_ALL, the whole stack; N, the
 * site and the N - 1 frames of its kind further out (its callers among the user's code when
 * the site is user code; any frames when the site is the innermost by default); 0 counts as 1.
 * Writes up to cap positions (innermost first) into pos and returns how many there are (0 for
 * stack 0); *site (may be NULL) gets the index in pos of the site's frame.
 */
size_t ms_site_frames(const struct ms_symtab *y, uint32_t stack, uint32_t frames, size_t *pos,
                      size_t cap, size_t *site);

/* "name (file:line)"; "name (file)" without a line; "name" without a file ("" or "??"). */
void ms_frame_label(const struct ms_symtab *y, uint32_t frame, char *buf, size_t cap);

/* The label of a stack's site; "(no stack recorded)" for stack 0. */
void ms_stack_label(const struct ms_symtab *y, uint32_t stack, char *buf, size_t cap);

/*
 * Sites at depth d (--site-depth): the site's frame, then up to d - 1 frames further in,
 * towards the allocation, that are the user's code or a library's (torch's own Python, C++ and
 * the rest are passed over): where a model's whole forward is one line of the user's, depth 2
 * splits it by the library's forward called there, 3 by what that called, and so on. The
 * positions of a stack of n frames (innermost first) into pos, outermost first, at most cap;
 * returns how many (depth 0 counts as 1; 0 for n == 0).
 */
size_t ms_site_chain(const struct ms_symtab *y, const uint32_t *frames, size_t n, uint32_t depth,
                     size_t *pos, size_t cap);
/* The label of a stack's site at depth d: its frames' labels joined by " > ". */
void ms_stack_label_depth(const struct ms_symtab *y, uint32_t stack, uint32_t depth, char *buf,
                          size_t cap);

#endif
