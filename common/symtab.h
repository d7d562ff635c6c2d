/*
 * Interned strings, stack frames and stacks. Ids are dense and start at 1;
 * id 0 means "none" (the empty string, no frame, no stack). Ids only grow, so
 * a writer can emit every definition with an id above the last one it wrote.
 * Ownership: the table owns everything; pointers it returns stay valid until
 * ms_symtab_release(). Not thread-safe.
 */
#ifndef MEMSNAP_COMMON_SYMTAB_H
#define MEMSNAP_COMMON_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/hash.h"
#include "memsnap/memsnap.h"

struct ms_str {
	const char *s; /* NUL-terminated (the bytes may contain NUL too) */
	uint32_t len;
};

struct ms_frame {
	uint32_t name; /* string id: function */
	uint32_t file; /* string id: file name */
	uint32_t line;
};

struct ms_symtab {
	struct ms_arena arena;
	struct ms_str *strs; /* [0] is "" */
	size_t n_strs, cap_strs;
	struct ms_frame *frames; /* [0] unused */
	size_t n_frames, cap_frames;
	uint32_t *stack_frames; /* frame ids of all stacks, innermost first */
	size_t n_stack_frames, cap_stack_frames;
	uint64_t *stack_off;         /* stack i: stack_frames[stack_off[i] .. stack_off[i+1]) */
	size_t n_stacks, cap_stacks; /* n_stacks counts the unused [0] */
	uint32_t last_stack;         /* the last one looked up: the next event's most often */
	struct ms_idset str_idx, frame_idx, stack_idx;
};

ms_status ms_symtab_init(struct ms_symtab *t);
void ms_symtab_release(struct ms_symtab *t);

/* Intern bytes; *id gets the id (0 for the empty string). */
ms_status ms_symtab_str(struct ms_symtab *t, const char *s, size_t len, uint32_t *id);
ms_status ms_symtab_frame(struct ms_symtab *t, const struct ms_frame *f, uint32_t *id);
/* Intern a stack of n frame ids (innermost first); n == 0 gives id 0. */
ms_status ms_symtab_stack(struct ms_symtab *t, const uint32_t *frames, size_t n, uint32_t *id);

/* Number of ids in use plus one (the next id to be handed out). */
static inline uint32_t ms_symtab_nstrs(const struct ms_symtab *t)
{
	return (uint32_t)t->n_strs;
}
static inline uint32_t ms_symtab_nframes(const struct ms_symtab *t)
{
	return (uint32_t)t->n_frames;
}
static inline uint32_t ms_symtab_nstacks(const struct ms_symtab *t)
{
	return (uint32_t)t->n_stacks;
}
/* Lookups; ids must be valid (checked by whoever created them). */
static inline const struct ms_str *ms_symtab_get_str(const struct ms_symtab *t, uint32_t id)
{
	return &t->strs[id];
}
static inline const uint32_t *ms_symtab_get_stack(const struct ms_symtab *t, uint32_t id, size_t *n)
{
	*n = (size_t)(t->stack_off[id + 1] - t->stack_off[id]);
	return t->stack_frames + t->stack_off[id];
}

#endif
