/*
 * A stand-in for libcudart and libcuda, so that the CUDA interposer can be tested without a
 * GPU: allocations hand out addresses from a counter, driver entry points are fakes too.
 */
#include <stdint.h>
#include <string.h>

#define API __attribute__((visibility("default")))

static uint64_t g_next = 0x7f0000000000ULL;
static uint64_t g_handles;

static uint64_t take(size_t size)
{
	uint64_t a = g_next;
	g_next += (size + 0xfffff) & ~(uint64_t)0xfffff;
	return a;
}

/* like libcudart, the calls do not go through each other's exported symbols */
static int do_malloc(void **p, size_t size)
{
	if (size > (1ULL << 40))
		return 2; /* cudaErrorMemoryAllocation */
	*p = (void *)(uintptr_t)take(size);
	return 0;
}

API int cudaMalloc(void **p, size_t size)
{
	return do_malloc(p, size);
}
API int cudaFree(void *p)
{
	(void)p;
	return 0;
}
API int cudaMallocAsync(void **p, size_t size, void *stream)
{
	(void)stream;
	return do_malloc(p, size);
}
API int cudaFreeAsync(void *p, void *stream)
{
	(void)p;
	(void)stream;
	return 0;
}
API int cudaGetDevice(int *d)
{
	*d = 0;
	return 0;
}
/* the driver's own allocation calls, for programs linked with -lcuda */
API int cuMemAlloc_v2(uint64_t *p, size_t size)
{
	return do_malloc((void **)p, size);
}
API int cuMemFree_v2(uint64_t p)
{
	(void)p;
	return 0;
}
API int cuCtxGetDevice(int *d)
{
	*d = 1;
	return 0;
}

static int fake_create(uint64_t *h, size_t size, const void *prop, unsigned long long flags)
{
	(void)size;
	(void)prop;
	(void)flags;
	*h = ++g_handles;
	return 0;
}
static int fake_release(uint64_t h)
{
	(void)h;
	return 0;
}
static int fake_map(uint64_t p, size_t size, size_t off, uint64_t h, unsigned long long flags)
{
	(void)p;
	(void)size;
	(void)off;
	(void)h;
	(void)flags;
	return 0;
}
static int fake_unmap(uint64_t p, size_t size)
{
	(void)p;
	(void)size;
	return 0;
}
static int fake_other(void)
{
	return 0;
}

API int cudaGetDriverEntryPointByVersion(const char *sym, void **fn, unsigned ver,
                                         unsigned long long flags, int *status)
{
	(void)ver;
	(void)flags;
	if (!strcmp(sym, "cuMemCreate"))
		*fn = (void *)fake_create;
	else if (!strcmp(sym, "cuMemRelease"))
		*fn = (void *)fake_release;
	else if (!strcmp(sym, "cuMemMap"))
		*fn = (void *)fake_map;
	else if (!strcmp(sym, "cuMemUnmap"))
		*fn = (void *)fake_unmap;
	else
		*fn = (void *)fake_other;
	*status = 0;
	return 0;
}
