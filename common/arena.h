/*
 * Bump allocator: many small objects with one owner, freed together by
 * ms_arena_release(). Memory is 16-byte aligned.
 */
#ifndef MEMSNAP_COMMON_ARENA_H
#define MEMSNAP_COMMON_ARENA_H

#include <stddef.h>

struct ms_arena_chunk;
struct ms_arena {
	struct ms_arena_chunk *head;
	char *cur, *end;
	size_t total; /* bytes obtained from ms_malloc */
};
#define MS_ARENA_INIT               \
	{                           \
		NULL, NULL, NULL, 0 \
	}

/* n bytes, or NULL when out of memory. */
void *ms_arena_alloc(struct ms_arena *a, size_t n);
/* A NUL-terminated copy of s[0..n), or NULL when out of memory. */
char *ms_arena_strndup(struct ms_arena *a, const char *s, size_t n);
/* Free every chunk; the arena is empty and reusable afterwards. */
void ms_arena_release(struct ms_arena *a);

#endif
