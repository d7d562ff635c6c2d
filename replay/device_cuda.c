/* A real GPU under the allocator model (device_cuda.h): CUDA loaded at run time, every call timed.
 */
#define _GNU_SOURCE /* dlopen */
#include "replay/device_cuda.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/hash.h"
#include "common/status.h"

/* The few CUDA types used, with their ABI (no CUDA headers needed to build memsnap). */
typedef int cuda_err;                 /* cudaError_t; 0 = success, 2 = out of memory */
typedef int cu_res;                   /* CUresult; 0 = success, 2 = out of memory */
typedef unsigned long long cu_ptr;    /* CUdeviceptr */
typedef unsigned long long cu_handle; /* CUmemGenericAllocationHandle */
struct cu_location {
	int type; /* CU_MEM_LOCATION_TYPE_DEVICE = 1 */
	int id;
};
struct cu_alloc_prop {
	int type;                   /* CU_MEM_ALLOCATION_TYPE_PINNED = 1 */
	int requested_handle_types; /* CU_MEM_HANDLE_TYPE_NONE = 0 */
	struct cu_location location;
	void *win32_meta;
	unsigned char compression, rdma;
	unsigned short usage;
	unsigned char reserved[4];
};
struct cu_access {
	struct cu_location location;
	int flags; /* CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3 */
};

volatile int ms_cuda_interrupted;

enum call { C_MALLOC, C_FREE, C_RESERVE, C_CREATE, C_MAP, C_ACCESS, C_UNMAP, C_RELEASE };
static const char *const call_names[MS_CUDA_N_CALLS] = {
        "cudaMalloc", "cudaFree",       "cuMemAddressReserve", "cuMemCreate",
        "cuMemMap",   "cuMemSetAccess", "cuMemUnmap",          "cuMemRelease"};

struct resv {
	uint64_t sim_base, size, page;
	cu_ptr real;
};

struct ms_cuda_dev {
	void *rt, *drv;
	cuda_err (*cudaGetDeviceCount)(int *);
	cuda_err (*cudaSetDevice)(int);
	cuda_err (*cudaMalloc)(void **, size_t);
	cuda_err (*cudaFree)(void *);
	cuda_err (*cudaMemGetInfo)(size_t *, size_t *);
	cuda_err (*cudaGetLastError)(void);
	cu_res (*cuDeviceGetName)(char *, int, int);
	cu_res (*cuMemAddressReserve)(cu_ptr *, size_t, size_t, cu_ptr, unsigned long long);
	cu_res (*cuMemAddressFree)(cu_ptr, size_t);
	cu_res (*cuMemCreate)(cu_handle *, size_t, const struct cu_alloc_prop *,
	                      unsigned long long);
	cu_res (*cuMemRelease)(cu_handle);
	cu_res (*cuMemMap)(cu_ptr, size_t, size_t, cu_handle, unsigned long long);
	cu_res (*cuMemUnmap)(cu_ptr, size_t);
	cu_res (*cuMemSetAccess)(cu_ptr, size_t, const struct cu_access *, size_t);
	int device;
	int oom_seen; /* the device refused memory: cudaMemGetInfo then */
	size_t oom_free, oom_total;
	char name[128];
	uint64_t context_bytes;
	struct ms_model_device md;
	struct ms_u64map segs;  /* model address -> real pointer */
	struct ms_u64map pages; /* real page address -> handle */
	struct resv *resv;
	size_t n_resv, cap_resv;
	double *lat[MS_CUDA_N_CALLS]; /* microseconds of every call */
	size_t n_lat[MS_CUDA_N_CALLS], cap_lat[MS_CUDA_N_CALLS];
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void timed(struct ms_cuda_dev *c, enum call k, double t0)
{
	double us = now_us() - t0;

	if (ms_grow(&c->lat[k], &c->cap_lat[k], c->n_lat[k] + 1, sizeof(double)) == 0)
		c->lat[k][c->n_lat[k]++] = us;
}

static struct resv *resv_of(struct ms_cuda_dev *c, uint64_t addr)
{
	for (size_t i = 0; i < c->n_resv; i++)
		if (addr >= c->resv[i].sim_base && addr < c->resv[i].sim_base + c->resv[i].size)
			return &c->resv[i];
	return NULL;
}

static int d_seg_alloc(void *ctx, uint64_t addr, uint64_t size)
{
	struct ms_cuda_dev *c = ctx;
	void *p = NULL;
	double t0;
	cuda_err e;

	if (ms_cuda_interrupted)
		return -1;
	t0 = now_us();
	e = c->cudaMalloc(&p, size);
	timed(c, C_MALLOC, t0);
	if (e != 0 || !p) {
		c->cudaGetLastError(); /* an out-of-memory error is not sticky: clear it */
		if (!c->oom_seen++)
			c->cudaMemGetInfo(&c->oom_free, &c->oom_total);
		return -1;
	}
	if (ms_u64map_put(&c->segs, addr, (uint64_t)(uintptr_t)p)) {
		c->cudaFree(p);
		return -1;
	}
	return 0;
}

static void d_seg_free(void *ctx, uint64_t addr, uint64_t size)
{
	struct ms_cuda_dev *c = ctx;
	uint64_t p;
	double t0;

	(void)size;
	if (!ms_u64map_del(&c->segs, addr, &p))
		return;
	t0 = now_us();
	c->cudaFree((void *)(uintptr_t)p);
	timed(c, C_FREE, t0);
}

static int d_reserve(void *ctx, uint64_t base, uint64_t size, uint64_t page)
{
	struct ms_cuda_dev *c = ctx;
	cu_ptr real = 0;
	double t0;
	cu_res e;

	if (ms_grow(&c->resv, &c->cap_resv, c->n_resv + 1, sizeof(*c->resv)))
		return -1;
	t0 = now_us();
	(void)page; /* pages of 20 MiB are not a power of two: the default alignment serves */
	e = c->cuMemAddressReserve(&real, size, 0, 0, 0);
	timed(c, C_RESERVE, t0);
	if (e != 0)
		return -1;
	c->resv[c->n_resv++] = (struct resv){base, size, page, real};
	return 0;
}

static void unmap_pages(struct ms_cuda_dev *c, cu_ptr real, uint64_t size, uint64_t page)
{
	for (uint64_t off = 0; off < size; off += page) {
		uint64_t h;
		double t0;
		if (!ms_u64map_del(&c->pages, real + off, &h))
			continue;
		t0 = now_us();
		c->cuMemUnmap(real + off, page);
		timed(c, C_UNMAP, t0);
		t0 = now_us();
		c->cuMemRelease(h);
		timed(c, C_RELEASE, t0);
	}
}

static int d_map(void *ctx, uint64_t addr, uint64_t size)
{
	struct ms_cuda_dev *c = ctx;
	struct resv *r = resv_of(c, addr);
	struct cu_alloc_prop prop;
	struct cu_access acc;
	cu_ptr real;
	uint64_t off;

	if (!r || ms_cuda_interrupted)
		return -1;
	memset(&prop, 0, sizeof(prop));
	prop.type = 1;
	prop.location.type = 1;
	prop.location.id = c->device;
	acc.location = prop.location;
	acc.flags = 3;
	real = r->real + (addr - r->sim_base);
	for (off = 0; off < size; off += r->page) {
		cu_handle h = 0;
		double t0 = now_us();
		cu_res e = c->cuMemCreate(&h, r->page, &prop, 0);
		timed(c, C_CREATE, t0);
		if (e != 0)
			break;
		t0 = now_us();
		e = c->cuMemMap(real + off, r->page, 0, h, 0);
		timed(c, C_MAP, t0);
		if (e == 0) {
			t0 = now_us();
			e = c->cuMemSetAccess(real + off, r->page, &acc, 1);
			timed(c, C_ACCESS, t0);
			if (e != 0)
				c->cuMemUnmap(real + off, r->page);
		}
		if (e != 0 || ms_u64map_put(&c->pages, real + off, h)) {
			c->cuMemRelease(h);
			break;
		}
	}
	if (off < size) { /* out of memory part of the way: undo this mapping */
		unmap_pages(c, real, off, r->page);
		if (!c->oom_seen++)
			c->cudaMemGetInfo(&c->oom_free, &c->oom_total);
		return -1;
	}
	return 0;
}

static void d_unmap(void *ctx, uint64_t addr, uint64_t size)
{
	struct ms_cuda_dev *c = ctx;
	struct resv *r = resv_of(c, addr);

	if (r)
		unmap_pages(c, r->real + (addr - r->sim_base), size, r->page);
}

static void *sym(void *h, const char *name, int *missing)
{
	void *p = h ? dlsym(h, name) : NULL;

	if (!p)
		(*missing)++;
	return p;
}

static void *open_first(const char *const *names)
{
	for (; *names; names++) {
		void *h = dlopen(*names, RTLD_NOW | RTLD_LOCAL);
		if (h)
			return h;
	}
	return NULL;
}

ms_status ms_cuda_open(int device, uint64_t limit, struct ms_cuda_dev **out, struct ms_diag *d)
{
	static const char *const rt_names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
	                                       NULL};
	static const char *const drv_names[] = {"libcuda.so.1", "libcuda.so", NULL};
	struct ms_cuda_dev *c = ms_calloc(1, sizeof(*c));
	int missing = 0, count = 0;
	size_t fr = 0, total = 0;

	if (!c)
		return MS_ERR_NOMEM;
	c->rt = open_first(rt_names);
	c->drv = open_first(drv_names);
	if (!c->rt || !c->drv) {
		int no_drv = !c->drv;
		ms_cuda_close(c);
		return ms__diag_set(d, MS_ERR_BACKEND, -1, -1,
		                    "--backend cuda: %s not found (no CUDA %s on this machine)",
		                    no_drv ? "libcuda.so.1" : "libcudart.so",
		                    no_drv ? "driver" : "runtime");
	}
#define RT(f)     *(void **)&c->f = sym(c->rt, #f, &missing)
#define DRV(f, n) *(void **)&c->f = sym(c->drv, n, &missing)
	RT(cudaGetDeviceCount);
	RT(cudaSetDevice);
	RT(cudaMalloc);
	RT(cudaFree);
	RT(cudaMemGetInfo);
	RT(cudaGetLastError);
	DRV(cuDeviceGetName, "cuDeviceGetName");
	DRV(cuMemAddressReserve, "cuMemAddressReserve");
	DRV(cuMemAddressFree, "cuMemAddressFree");
	DRV(cuMemCreate, "cuMemCreate");
	DRV(cuMemRelease, "cuMemRelease");
	DRV(cuMemMap, "cuMemMap");
	DRV(cuMemUnmap, "cuMemUnmap");
	DRV(cuMemSetAccess, "cuMemSetAccess");
#undef RT
#undef DRV
	if (missing) {
		ms_cuda_close(c);
		return ms__diag_set(d, MS_ERR_BACKEND, -1, -1,
		                    "--backend cuda: the CUDA libraries lack %d of the calls used",
		                    missing);
	}
	if (c->cudaGetDeviceCount(&count) != 0 || count == 0) {
		ms_cuda_close(c);
		return ms__diag_set(d, MS_ERR_BACKEND, -1, -1, "--backend cuda: no CUDA device");
	}
	if (device < 0 || device >= count) {
		ms_cuda_close(c);
		return ms__diag_set(d, MS_ERR_BACKEND, -1, -1,
		                    "--backend cuda: device %d does not exist (%d device%s)",
		                    device, count, count == 1 ? "" : "s");
	}
	c->device = device;
	/* the primary context, current on this thread for the driver calls too */
	if (c->cudaSetDevice(device) != 0 || c->cudaFree(NULL) != 0 ||
	    c->cudaMemGetInfo(&fr, &total) != 0) {
		ms_cuda_close(c);
		return ms__diag_set(d, MS_ERR_BACKEND, -1, -1,
		                    "--backend cuda: cannot start a context on device %d", device);
	}
	c->context_bytes = total - fr;
	if (c->cuDeviceGetName(c->name, (int)sizeof(c->name), device) != 0)
		snprintf(c->name, sizeof(c->name), "device %d", device);
	if (limit > fr) {
		ms_cuda_close(c);
		return ms__diag_set(d, MS_ERR_INVALID_ARG, -1, -1,
		                    "--backend cuda: the limit (%llu bytes) is more than device %d "
		                    "has free (%llu bytes)",
		                    (unsigned long long)limit, device, (unsigned long long)fr);
	}
	c->md = (struct ms_model_device){c, d_seg_alloc, d_seg_free, d_reserve, d_map, d_unmap};
	*out = c;
	return MS_OK;
}

const struct ms_model_device *ms_cuda_model_device(struct ms_cuda_dev *c)
{
	return &c->md;
}

void ms_cuda_mem_info(struct ms_cuda_dev *c, uint64_t *free_bytes, uint64_t *total)
{
	size_t f = 0, t = 0;

	c->cudaMemGetInfo(&f, &t);
	*free_bytes = f;
	*total = t;
}

int ms_cuda_oom_info(const struct ms_cuda_dev *c, uint64_t *free_bytes, uint64_t *total)
{
	*free_bytes = c->oom_free;
	*total = c->oom_total;
	return c->oom_seen;
}

uint64_t ms_cuda_context_bytes(const struct ms_cuda_dev *c)
{
	return c->context_bytes;
}

const char *ms_cuda_name(const struct ms_cuda_dev *c)
{
	return c->name;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

size_t ms_cuda_timings(const struct ms_cuda_dev *c, struct ms_cuda_timing *out, size_t max)
{
	size_t n = 0;

	for (int k = 0; k < MS_CUDA_N_CALLS && n < max; k++) {
		size_t m = c->n_lat[k];
		double total = 0;
		if (!m)
			continue;
		qsort(c->lat[k], m, sizeof(double), cmp_double);
		for (size_t i = 0; i < m; i++)
			total += c->lat[k][i];
		out[n].call = call_names[k];
		out[n].n = m;
		out[n].p50_us = c->lat[k][(m - 1) / 2];
		out[n].p99_us = c->lat[k][(size_t)((double)(m - 1) * 0.99)];
		out[n].max_us = c->lat[k][m - 1];
		out[n].total_ms = total / 1e3;
		n++;
	}
	return n;
}

void ms_cuda_close(struct ms_cuda_dev *c)
{
	if (!c)
		return;
	if (c->cudaFree) {
		/* everything still held: segments, mappings, reservations */
		for (size_t i = 0; i < c->segs.cap; i++)
			if (c->segs.keys && c->segs.keys[i])
				c->cudaFree((void *)(uintptr_t)c->segs.vals[i]);
		for (size_t i = 0; i < c->n_resv; i++)
			unmap_pages(c, c->resv[i].real, c->resv[i].size, c->resv[i].page);
		for (size_t i = 0; i < c->n_resv; i++)
			c->cuMemAddressFree(c->resv[i].real, c->resv[i].size);
	}
	ms_u64map_release(&c->segs);
	ms_u64map_release(&c->pages);
	ms_free(c->resv);
	for (int k = 0; k < MS_CUDA_N_CALLS; k++)
		ms_free(c->lat[k]);
	/* the libraries stay loaded: the runtime tears its context down at exit */
	ms_free(c);
}
