/*
 * A "CUDA program" run against fake_cuda.c: the allocations test_interpose expects to find
 * in its trace. Exits with argv[1] (default 0).
 */
#include <stdint.h>
#include <stdlib.h>

int cudaMalloc(void **p, size_t size);
int cudaFree(void *p);
int cudaMallocAsync(void **p, size_t size, void *stream);
int cudaFreeAsync(void *p, void *stream);
int cuMemAlloc_v2(uint64_t *p, size_t size);
int cuMemFree_v2(uint64_t p);
int cudaGetDriverEntryPointByVersion(const char *sym, void **fn, unsigned ver,
                                     unsigned long long flags, int *status);

typedef int (*create_fn)(uint64_t *, size_t, const void *, unsigned long long);
typedef int (*release_fn)(uint64_t);
typedef int (*map_fn)(uint64_t, size_t, size_t, uint64_t, unsigned long long);
typedef int (*unmap_fn)(uint64_t, size_t);

int main(int argc, char **argv)
{
	void *a, *b, *c, *fn;
	int st;
	uint64_t h;

	cudaMalloc(&a, 1000);
	cudaMalloc(&b, 2 << 20);
	cudaFree(a);
	cudaFree((void *)0x1234); /* never allocated here: not recorded */
	cudaMallocAsync(&c, 4096, (void *)0x77);
	cudaFreeAsync(c, (void *)0x77);
	if (cudaMalloc(&a, 1ULL << 41) == 0) /* fails: not recorded */
		return 9;
	/* the driver's virtual memory calls, fetched at run time as PyTorch does */
	cudaGetDriverEntryPointByVersion("cuMemCreate", &fn, 13000, 0, &st);
	create_fn create = (create_fn)fn;
	cudaGetDriverEntryPointByVersion("cuMemMap", &fn, 13000, 0, &st);
	map_fn map = (map_fn)fn;
	cudaGetDriverEntryPointByVersion("cuMemUnmap", &fn, 13000, 0, &st);
	unmap_fn unmap = (unmap_fn)fn;
	cudaGetDriverEntryPointByVersion("cuMemRelease", &fn, 13000, 0, &st);
	release_fn release = (release_fn)fn;
	create(&h, 20 << 20, NULL, 0);
	map(0x7e0000000000ULL, 20 << 20, 0, h, 0);
	unmap(0x7e0000000000ULL, 20 << 20);
	release(h);
	/* the driver API called by name, as a program linked with -lcuda does */
	uint64_t d;
	cuMemAlloc_v2(&d, 3 << 20);
	cuMemFree_v2(d);
	cudaFree(b);
	return argc > 1 ? atoi(argv[1]) : 0;
}
