/* Bump allocator over a list of chunks; objects are never freed one by one. */
#include "common/arena.h"

#include <stdint.h>
#include <string.h>

#include "common/alloc.h"

struct ms_arena_chunk {
	struct ms_arena_chunk *next;
	size_t size;
	_Alignas(16) char data[];
};

#define CHUNK_MIN (64 * 1024)

void *ms_arena_alloc(struct ms_arena *a, size_t n)
{
	char *p;

	n = (n + 15) & ~(size_t)15;
	if (n == 0 || (size_t)(a->end - a->cur) < n || !a->cur) {
		size_t sz = n > CHUNK_MIN ? n : CHUNK_MIN;
		struct ms_arena_chunk *c;

		if (n == 0)
			n = 16, sz = CHUNK_MIN;
		if (sz > SIZE_MAX - sizeof(*c))
			return NULL;
		c = ms_malloc(sizeof(*c) + sz);
		if (!c)
			return NULL;
		c->size = sz;
		c->next = a->head;
		a->head = c;
		a->total += sz;
		a->cur = c->data;
		a->end = c->data + sz;
	}
	p = a->cur;
	a->cur += n;
	return p;
}

char *ms_arena_strndup(struct ms_arena *a, const char *s, size_t n)
{
	char *d;

	if (n == SIZE_MAX)
		return NULL;
	d = ms_arena_alloc(a, n + 1);
	if (!d)
		return NULL;
	if (n)
		memcpy(d, s, n);
	d[n] = 0;
	return d;
}

void ms_arena_release(struct ms_arena *a)
{
	struct ms_arena_chunk *c = a->head;

	while (c) {
		struct ms_arena_chunk *n = c->next;
		ms_free(c);
		c = n;
	}
	a->head = NULL;
	a->cur = a->end = NULL;
	a->total = 0;
}
