/*
 * The only allocation entry points of library code. A test build can make the
 * Nth allocation fail (MS_TEST_FAIL_ALLOC_AT=N) to exercise out-of-memory paths.
 */
#ifndef MEMSNAP_COMMON_ALLOC_H
#define MEMSNAP_COMMON_ALLOC_H

#include <stddef.h>

void *ms_malloc(size_t n);
void *ms_calloc(size_t count, size_t size);
/*
 * Zeroed, on cache lines of its own (64-byte aligned, rounded up to 64 bytes): for state that
 * one thread writes while another runs, so that neither drags the other's lines (ms_free).
 */
void *ms_calloc_lines(size_t size);
void *ms_realloc(void *p, size_t n);
void ms_free(void *p);
char *ms_strndup(const char *s, size_t n);

/*
 * Large blocks that fill as a parse goes (memo, value pools, packed events): n bytes of zeroed
 * pages straight from the kernel, on 2 MiB huge pages where the system allows them, so that
 * filling them costs one page fault per 2 MiB instead of one per 4 KiB. Freed with
 * ms_pages_free(p, n), n as given. Sanitizer builds use ms_malloc, which they can check.
 */
#define MS_PAGES_HUGE ((size_t)2 << 20)
void *ms_pages_alloc(size_t n);
void ms_pages_free(void *p, size_t n);
/*
 * While a parse that will fill many huge pages runs: a thread of its own keeps up to n of them
 * (at most 8) faulted in ahead, so that the kernel clears them on another core, and
 * ms_pages_alloc(MS_PAGES_HUGE) takes those first. Each start is paired with a stop, which
 * gives back the pages not taken; calls may nest and come from several threads.
 */
void ms_pages_ahead_start(size_t n);
void ms_pages_ahead_stop(void);

/* Tests: make the nth allocation from now on fail (0 = never), as MS_TEST_FAIL_ALLOC_AT does. */
void ms__alloc_fail_at(long n);
/* Tests: blocks allocated through ms_malloc and friends and not yet freed. */
long ms__alloc_live(void);

/*
 * Grow *arr (element size elem) so that it holds at least need elements;
 * *cap is updated. Returns 0 on success, -1 on overflow or out of memory
 * (then *arr is unchanged).
 */
int ms_grow(void *arr, size_t *cap, size_t need, size_t elem);

#endif
