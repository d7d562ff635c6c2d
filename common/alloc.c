/* ms_malloc and friends: every library allocation goes through here, so OOM paths are testable. */
#define _DEFAULT_SOURCE
#include "common/alloc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define PAGES_FROM_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define PAGES_FROM_MALLOC 1
#endif
#endif

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

#ifdef PAGES_FROM_MALLOC
void *ms_pages_alloc(size_t n)
{
	return ms_calloc(1, n); /* fresh pages where it maps them: no clearing */
}

void ms_pages_free(void *p, size_t n)
{
	(void)n;
	ms_free(p);
}

void ms_pages_ahead_start(size_t n)
{
	(void)n;
}

void ms_pages_ahead_stop(void)
{
}
#else
/*
 * A huge page needs a 2 MiB-aligned range: a block of 2 MiB or more is mapped with 2 MiB to
 * spare and trimmed to start on such a boundary (the kernel need not align it itself).
 */
static void *map_pages(size_t len)
{
	size_t map = len >= MS_PAGES_HUGE ? len + MS_PAGES_HUGE : len;
	uintptr_t at, start;
	void *p = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	at = start = (uintptr_t)p;
	if (map > len) {
		start = (at + MS_PAGES_HUGE - 1) & ~(uintptr_t)(MS_PAGES_HUGE - 1);
		if (start > at)
			munmap(p, start - at);
		if (at + map > start + len)
			munmap((void *)(start + len), at + map - (start + len));
#ifdef MADV_HUGEPAGE
		madvise((void *)start, len, MADV_HUGEPAGE); /* advice: no harm where refused */
#endif
	}
	return (void *)start;
}

/*
 * Huge pages faulted in ahead of use: while a large parse runs (ms_pages_ahead_start), a thread
 * of its own keeps up to `target` blocks of MS_PAGES_HUGE mapped and written to, so that the
 * kernel clears them on that thread's core; ms_pages_alloc of exactly that size takes one.
 */
#define AHEAD_MAX 8
static struct {
	pthread_mutex_t mu;
	pthread_cond_t wake;
	void *ready[AHEAD_MAX];
	int n_ready, target, users, running;
	pthread_t thread;
} ahead = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};
static atomic_int ahead_on; /* users, read without the lock by ms_pages_alloc */

static void *fault_ahead(void *arg)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	(void)arg;
	pthread_mutex_lock(&ahead.mu);
	while (ahead.users > 0) {
		if (ahead.n_ready >= ahead.target) {
			pthread_cond_wait(&ahead.wake, &ahead.mu);
			continue;
		}
		pthread_mutex_unlock(&ahead.mu);
		volatile char *p = map_pages(MS_PAGES_HUGE);
		if (p)
			for (size_t i = 0; i < MS_PAGES_HUGE; i += page)
				p[i] = 0; /* one write faults the page in; it stays zero */
		pthread_mutex_lock(&ahead.mu);
		if (!p)
			break;
		if (ahead.users == 0 || ahead.n_ready >= AHEAD_MAX) {
			munmap((void *)p, MS_PAGES_HUGE);
			break;
		}
		ahead.ready[ahead.n_ready++] = (void *)p;
	}
	ahead.running = 0;
	pthread_mutex_unlock(&ahead.mu);
	return NULL;
}

void ms_pages_ahead_start(size_t n)
{
	pthread_mutex_lock(&ahead.mu);
	if (n > AHEAD_MAX)
		n = AHEAD_MAX;
	if ((int)n > ahead.target)
		ahead.target = (int)n;
	ahead.users++;
	atomic_store(&ahead_on, ahead.users);
	if (!ahead.running && ahead.target > 0) {
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&ahead.thread, &attr, fault_ahead, NULL) == 0)
			ahead.running = 1;
		pthread_attr_destroy(&attr);
	}
	pthread_mutex_unlock(&ahead.mu);
}

void ms_pages_ahead_stop(void)
{
	void *left[AHEAD_MAX];
	int n = 0;

	pthread_mutex_lock(&ahead.mu);
	if (ahead.users > 0 && --ahead.users == 0) {
		n = ahead.n_ready;
		memcpy(left, ahead.ready, (size_t)n * sizeof(left[0]));
		ahead.n_ready = 0;
		ahead.target = 0;
		pthread_cond_signal(&ahead.wake);
	}
	atomic_store(&ahead_on, ahead.users);
	pthread_mutex_unlock(&ahead.mu);
	for (int i = 0; i < n; i++)
		munmap(left[i], MS_PAGES_HUGE);
}

static void *take_ahead(void)
{
	void *p = NULL;

	pthread_mutex_lock(&ahead.mu);
	if (ahead.n_ready > 0) {
		p = ahead.ready[--ahead.n_ready];
		pthread_cond_signal(&ahead.wake);
	}
	pthread_mutex_unlock(&ahead.mu);
	return p;
}

void *ms_pages_alloc(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len;
	void *p = NULL;

	if (should_fail() || n > SIZE_MAX - 2 * MS_PAGES_HUGE)
		return NULL;
	len = ((n ? n : 1) + page - 1) & ~(page - 1);
	if (len == MS_PAGES_HUGE && atomic_load_explicit(&ahead_on, memory_order_relaxed))
		p = take_ahead();
	if (!p && !(p = map_pages(len)))
		return NULL;
	atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
	return p;
}

void ms_pages_free(void *p, size_t n)
{
	if (!p)
		return;
	atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
	munmap(p, n ? n : 1);
}
#endif

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
