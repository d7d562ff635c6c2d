/* ms_malloc and friends: every library allocation goes through here, so OOM paths are testable. */
#include "common/alloc.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* -1: not read yet; 0: off; N: fail the Nth call (1-based) and every later one. */
static atomic_long fail_at = -1;
static atomic_long count;
static atomic_long live; /* blocks obtained and not yet freed: tests check it returns to zero */

static int should_fail(void)
{
	long f = atomic_load_explicit(&fail_at, memory_order_relaxed);

	if (f < 0) {
		const char *e = getenv("MS_TEST_FAIL_ALLOC_AT");
		f = e ? atol(e) : 0;
		if (f < 0)
			f = 0;
		atomic_store(&fail_at, f);
	}
	if (f == 0)
		return 0;
	return atomic_fetch_add(&count, 1) + 1 >= f;
}

void ms__alloc_fail_at(long n)
{
	atomic_store(&count, 0);
	atomic_store(&fail_at, n < 0 ? 0 : n);
}

long ms__alloc_live(void)
{
	return atomic_load(&live);
}

void *ms_malloc(size_t n)
{
	void *p;

	if (should_fail())
		return NULL;
	p = malloc(n ? n : 1);
	if (p)
		atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
	return p;
}

void *ms_calloc(size_t count_, size_t size)
{
	void *p;

	if (should_fail())
		return NULL;
	p = calloc(count_ ? count_ : 1, size ? size : 1);
	if (p)
		atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
	return p;
}

void *ms_calloc_lines(size_t size)
{
	size_t n = (size + 63) & ~(size_t)63;
	void *p;

	if (should_fail() || n < size)
		return NULL;
	p = aligned_alloc(64, n ? n : 64);
	if (p) {
		memset(p, 0, n);
		atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
	}
	return p;
}

void *ms_realloc(void *p, size_t n)
{
	void *q;

	if (should_fail())
		return NULL;
	q = realloc(p, n ? n : 1);
	if (q && !p)
		atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
	return q;
}

void ms_free(void *p)
{
	if (p)
		atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
	free(p);
}

char *ms_strndup(const char *s, size_t n)
{
	char *d = ms_malloc(n + 1);

	if (!d)
		return NULL;
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

int ms_grow(void *arr, size_t *cap, size_t need, size_t elem)
{
	void **pp = arr;
	size_t ncap = *cap ? *cap : 16;
	void *np;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -1;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elem)
		return -1;
	np = ms_realloc(*pp, ncap * elem);
	if (!np)
		return -1;
	*pp = np;
	*cap = ncap;
	return 0;
}
