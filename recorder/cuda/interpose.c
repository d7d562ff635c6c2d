/*
 * libmemsnap_cuda: an LD_PRELOAD interposer that records raw CUDA allocations
 * into the process's memsnap trace, marked MSR_SRC_CUDA: memory that PyTorch's
 * allocator does not see (NCCL, cuDNN, cuBLAS workspaces, other libraries,
 * programs without PyTorch).
 *
 * Runtime calls (cudaMalloc, cudaFree, cudaMallocAsync, cudaFreeAsync) are
 * interposed by symbol. Driver calls are interposed by symbol too (programs
 * linked with -lcuda) and, since libraries like PyTorch fetch driver entry
 * points at run time, through cudaGetDriverEntryPoint[ByVersion] and
 * cuGetProcAddress, which hand out our wrappers for the calls recorded here.
 * The runtime's own calls into the driver do not pass through them, so a
 * cudaMalloc is recorded once.
 *
 * Events: an allocation is a segment_alloc (address, size, stream), a free a
 * segment_free with the size of its allocation; cuMemCreate is remembered
 * (its handle's size) and the memory appears at cuMemMap (segment_map) and
 * leaves at cuMemUnmap (segment_unmap).
 *
 * The trace: the process-wide recorder (msr_global()) when there is one.
 * Otherwise the first event opens MEMSNAP_RECORD itself, unless a Python
 * module said it will open it once PyTorch has initialised CUDA
 * (memsnap_cuda_defer): events before that wait in a bounded buffer.
 *
 * No CUDA headers: the few types are declared here with their ABI (64-bit).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memsnap/recorder.h"

typedef int cudaError_t;
typedef void *cudaStream_t;
typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef int CUdevice;
typedef void *CUstream;

#define EXPORT __attribute__((visibility("default")))

/* ---- live allocations: address -> size, and handle -> size ---- */

/* Open addressing with linear probing and backward-shift deletion; mapped once, bounded. */
#define TABLE_BITS 18
#define TABLE_SIZE (1u << TABLE_BITS)

struct slot {
	uint64_t key; /* 0 = empty */
	uint64_t size;
};

struct table {
	struct slot *s;
	unsigned n;
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct table g_addrs, g_handles;
static uint64_t g_untracked; /* entries that did not fit */

static unsigned hash(uint64_t k)
{
	return (unsigned)((k * 0x9E3779B97F4A7C15ULL) >> (64 - TABLE_BITS));
}

static int table_init(struct table *t)
{
	if (t->s)
		return 0;
	void *p = mmap(NULL, sizeof(struct slot) * TABLE_SIZE, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	t->s = p;
	return 0;
}

static void table_put(struct table *t, uint64_t k, uint64_t size)
{
	if (!k || table_init(t) || t->n >= TABLE_SIZE * 3 / 4) {
		g_untracked++;
		return;
	}
	for (unsigned i = hash(k);; i = (i + 1) & (TABLE_SIZE - 1)) {
		if (t->s[i].key == k || !t->s[i].key) {
			if (!t->s[i].key)
				t->n++;
			t->s[i].key = k;
			t->s[i].size = size;
			return;
		}
	}
}

/* Remove k; its size, or 0 when it is not there. */
static uint64_t table_take(struct table *t, uint64_t k)
{
	unsigned i, j;
	uint64_t size;

	if (!k || !t->s)
		return 0;
	for (i = hash(k); t->s[i].key != k; i = (i + 1) & (TABLE_SIZE - 1))
		if (!t->s[i].key)
			return 0;
	size = t->s[i].size;
	/* backward shift: later entries of the run move up so that lookups never stop early */
	for (j = (i + 1) & (TABLE_SIZE - 1); t->s[j].key; j = (j + 1) & (TABLE_SIZE - 1)) {
		unsigned h = hash(t->s[j].key);
		if (((j - h) & (TABLE_SIZE - 1)) >= ((j - i) & (TABLE_SIZE - 1))) {
			t->s[i] = t->s[j];
			i = j;
		}
	}
	t->s[i].key = 0;
	t->n--;
	return size;
}

/* ---- the recorder ---- */

#define PENDING_MAX 4096
static struct msr_event g_pending[PENDING_MAX];
static unsigned g_n_pending;
static uint64_t g_pending_dropped;
static int g_defer;       /* a Python module will open the recorder */
static int g_open_failed; /* do not try again */
static struct msr *g_own; /* a recorder this library opened */

/* Called by the memsnap Python module: the recorder comes once PyTorch initialised CUDA. */
EXPORT void memsnap_cuda_defer(int on)
{
	pthread_mutex_lock(&g_mu);
	g_defer = on;
	pthread_mutex_unlock(&g_mu);
}

static void *driver_sym(const char *name)
{
	void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);

	return h ? dlsym(h, name) : NULL;
}

/* Open MEMSNAP_RECORD with what the driver says about the devices. Under g_mu. */
static struct msr *open_own(void)
{
	const char *path = getenv("MEMSNAP_RECORD");
	CUresult (*count)(int *) = (CUresult(*)(int *))driver_sym("cuDeviceGetCount");
	CUresult (*name)(char *, int, CUdevice) =
	        (CUresult(*)(char *, int, CUdevice))driver_sym("cuDeviceGetName");
	CUresult (*total)(size_t *, CUdevice) =
	        (CUresult(*)(size_t *, CUdevice))driver_sym("cuDeviceTotalMem_v2");
	struct msr_device devs[16];
	char names[16][96];
	struct msr_options o;
	struct msr *r = NULL;
	int n = 0, rc;

	const char *root = getenv("MEMSNAP_RECORD_ROOT_PID");
	char own_path[4096];

	if (g_open_failed || !path || !*path)
		return NULL;
	/* a process that memsnap record's program started records beside it: TRACE.PID.zst */
	if (root && atol(root) != (long)getpid()) {
		size_t len = strlen(path);
		if (len > 4 && strcmp(path + len - 4, ".zst") == 0)
			len -= 4;
		snprintf(own_path, sizeof(own_path), "%.*s.%ld.zst", (int)len, path,
		         (long)getpid());
		path = own_path;
	}
	msr_options_init(&o);
	o.flags |= MSR_F_ATEXIT;
	o.producer = "memsnap-recorder (cuda interposer)";
	if (count && count(&n) != 0)
		n = 0;
	if (n > 16)
		n = 16;
	for (int i = 0; i < n; i++) {
		size_t t = 0;
		names[i][0] = 0;
		if (name)
			name(names[i], (int)sizeof(names[i]), i);
		if (total)
			total(&t, i);
		devs[i] = (struct msr_device){(uint32_t)i, names[i], t};
	}
	o.devices = devs;
	o.n_devices = (unsigned)n;
	rc = msr_open(path, &o, &r);
	if (rc) {
		fprintf(stderr, "memsnap: cannot record to %s: %s\n", path, strerror(-rc));
		g_open_failed = 1;
		return NULL;
	}
	g_own = r;
	msr_set_global(r);
	return r;
}

/* The recorder to write to, opening it or emptying the pending buffer into it as due. */
static struct msr *recorder_locked(void)
{
	struct msr *r = msr_global();

	if (!r && !g_defer)
		r = open_own();
	if (r && g_n_pending) {
		for (unsigned i = 0; i < g_n_pending; i++)
			msr_record(r, &g_pending[i]);
		g_n_pending = 0;
	}
	return r;
}

static void emit(uint8_t action, uint64_t addr, uint64_t size, uint64_t stream, int device)
{
	struct msr_event e = {0};
	struct msr *r;

	e.action = action;
	e.source = MSR_SRC_CUDA;
	e.device = (uint16_t)(device < 0 ? 0 : device);
	e.addr = addr;
	e.size = size;
	e.stream = stream;
	r = recorder_locked();
	if (r) {
		msr_record(r, &e);
		return;
	}
	if (!g_defer)
		return;
	if (g_n_pending == PENDING_MAX) {
		/* PyTorch never came (a program without it): record ourselves after all */
		g_defer = 0;
		r = recorder_locked();
		if (r) {
			msr_record(r, &e);
			return;
		}
		g_pending_dropped++;
		return;
	}
	e.t_ns = 0;
	g_pending[g_n_pending++] = e;
}

/* At exit, events still waiting for a recorder that never came get one. */
__attribute__((destructor)) static void flush_pending(void)
{
	pthread_mutex_lock(&g_mu);
	if (g_n_pending && !msr_global()) {
		g_defer = 0;
		struct msr *r = recorder_locked();
		if (r == g_own && r)
			msr_finish(r);
	}
	pthread_mutex_unlock(&g_mu);
}

/* ---- the real functions ---- */

#define REAL(type, name, args)                                               \
	static type(*real_##name) args;                                      \
	static type(*get_##name(void)) args                                  \
	{                                                                    \
		if (!real_##name)                                            \
			real_##name = (type(*) args)dlsym(RTLD_NEXT, #name); \
		if (!real_##name)                                            \
			real_##name = (type(*) args)driver_sym(#name);       \
		return real_##name;                                          \
	}

REAL(cudaError_t, cudaMalloc, (void **, size_t))
REAL(cudaError_t, cudaFree, (void *))
REAL(cudaError_t, cudaMallocAsync, (void **, size_t, cudaStream_t))
REAL(cudaError_t, cudaFreeAsync, (void *, cudaStream_t))
REAL(cudaError_t, cudaGetDevice, (int *))
REAL(cudaError_t, cudaGetDriverEntryPoint, (const char *, void **, unsigned long long, int *))
REAL(cudaError_t, cudaGetDriverEntryPointByVersion,
     (const char *, void **, unsigned int, unsigned long long, int *))
REAL(CUresult, cuMemAlloc_v2, (CUdeviceptr *, size_t))
REAL(CUresult, cuMemFree_v2, (CUdeviceptr))
REAL(CUresult, cuMemAllocAsync, (CUdeviceptr *, size_t, CUstream))
REAL(CUresult, cuMemFreeAsync, (CUdeviceptr, CUstream))
REAL(CUresult, cuMemCreate,
     (CUmemGenericAllocationHandle *, size_t, const void *, unsigned long long))
REAL(CUresult, cuMemRelease, (CUmemGenericAllocationHandle))
REAL(CUresult, cuMemMap,
     (CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long))
REAL(CUresult, cuMemUnmap, (CUdeviceptr, size_t))
REAL(CUresult, cuCtxGetDevice, (CUdevice *))
REAL(CUresult, cuGetProcAddress_v2, (const char *, void **, int, uint64_t, int *))

#define CUDA_ERR_NOT_FOUND 500 /* cudaErrorSymbolNotFound / CUDA_ERROR_NOT_FOUND */

static int runtime_device(void)
{
	int d = 0;

	if (get_cudaGetDevice() && real_cudaGetDevice(&d) != 0)
		d = 0;
	return d;
}

static int driver_device(void)
{
	CUdevice d = 0;

	if (get_cuCtxGetDevice() && real_cuCtxGetDevice(&d) != 0)
		d = 0;
	return d;
}

static void on_alloc(uint64_t addr, uint64_t size, uint64_t stream, int device)
{
	pthread_mutex_lock(&g_mu);
	table_put(&g_addrs, addr, size);
	emit(MSR_SEGMENT_ALLOC, addr, size, stream, device);
	pthread_mutex_unlock(&g_mu);
}

static void on_free(uint64_t addr, uint64_t stream, int device)
{
	pthread_mutex_lock(&g_mu);
	uint64_t size = table_take(&g_addrs, addr);
	/* memory allocated before recording began is not known: its free is left out */
	if (size)
		emit(MSR_SEGMENT_FREE, addr, size, stream, device);
	pthread_mutex_unlock(&g_mu);
}

/* ---- the wrappers ---- */

EXPORT cudaError_t cudaMalloc(void **p, size_t size)
{
	if (!get_cudaMalloc())
		return CUDA_ERR_NOT_FOUND;
	cudaError_t rc = real_cudaMalloc(p, size);
	if (rc == 0 && p && *p)
		on_alloc((uint64_t)(uintptr_t)*p, size, 0, runtime_device());
	return rc;
}

EXPORT cudaError_t cudaFree(void *p)
{
	if (!get_cudaFree())
		return CUDA_ERR_NOT_FOUND;
	int dev = p ? runtime_device() : 0;
	cudaError_t rc = real_cudaFree(p);
	if (rc == 0 && p)
		on_free((uint64_t)(uintptr_t)p, 0, dev);
	return rc;
}

EXPORT cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t s)
{
	if (!get_cudaMallocAsync())
		return CUDA_ERR_NOT_FOUND;
	cudaError_t rc = real_cudaMallocAsync(p, size, s);
	if (rc == 0 && p && *p)
		on_alloc((uint64_t)(uintptr_t)*p, size, (uint64_t)(uintptr_t)s, runtime_device());
	return rc;
}

EXPORT cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
	if (!get_cudaFreeAsync())
		return CUDA_ERR_NOT_FOUND;
	int dev = p ? runtime_device() : 0;
	cudaError_t rc = real_cudaFreeAsync(p, s);
	if (rc == 0 && p)
		on_free((uint64_t)(uintptr_t)p, (uint64_t)(uintptr_t)s, dev);
	return rc;
}

/* Driver wrappers, reached by symbol or through the entry-point lookups below. */
static CUresult w_cuMemAlloc_v2(CUdeviceptr *p, size_t size)
{
	if (!get_cuMemAlloc_v2())
		return CUDA_ERR_NOT_FOUND;
	CUresult rc = real_cuMemAlloc_v2(p, size);
	if (rc == 0 && p && *p)
		on_alloc(*p, size, 0, driver_device());
	return rc;
}

static CUresult w_cuMemFree_v2(CUdeviceptr p)
{
	if (!get_cuMemFree_v2())
		return CUDA_ERR_NOT_FOUND;
	int dev = p ? driver_device() : 0;
	CUresult rc = real_cuMemFree_v2(p);
	if (rc == 0 && p)
		on_free(p, 0, dev);
	return rc;
}

static CUresult w_cuMemAllocAsync(CUdeviceptr *p, size_t size, CUstream s)
{
	if (!get_cuMemAllocAsync())
		return CUDA_ERR_NOT_FOUND;
	CUresult rc = real_cuMemAllocAsync(p, size, s);
	if (rc == 0 && p && *p)
		on_alloc(*p, size, (uint64_t)(uintptr_t)s, driver_device());
	return rc;
}

static CUresult w_cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
	if (!get_cuMemFreeAsync())
		return CUDA_ERR_NOT_FOUND;
	int dev = p ? driver_device() : 0;
	CUresult rc = real_cuMemFreeAsync(p, s);
	if (rc == 0 && p)
		on_free(p, (uint64_t)(uintptr_t)s, dev);
	return rc;
}

static CUresult w_cuMemCreate(CUmemGenericAllocationHandle *h, size_t size, const void *prop,
                              unsigned long long flags)
{
	if (!get_cuMemCreate())
		return CUDA_ERR_NOT_FOUND;
	CUresult rc = real_cuMemCreate(h, size, prop, flags);
	if (rc == 0 && h) {
		pthread_mutex_lock(&g_mu);
		table_put(&g_handles, *h, size);
		pthread_mutex_unlock(&g_mu);
	}
	return rc;
}

static CUresult w_cuMemRelease(CUmemGenericAllocationHandle h)
{
	if (!get_cuMemRelease())
		return CUDA_ERR_NOT_FOUND;
	CUresult rc = real_cuMemRelease(h);
	if (rc == 0) {
		pthread_mutex_lock(&g_mu);
		table_take(&g_handles, h);
		pthread_mutex_unlock(&g_mu);
	}
	return rc;
}

static CUresult w_cuMemMap(CUdeviceptr p, size_t size, size_t offset,
                           CUmemGenericAllocationHandle h, unsigned long long flags)
{
	if (!get_cuMemMap())
		return CUDA_ERR_NOT_FOUND;
	CUresult rc = real_cuMemMap(p, size, offset, h, flags);
	if (rc == 0) {
		pthread_mutex_lock(&g_mu);
		emit(MSR_SEGMENT_MAP, p, size, 0, driver_device());
		pthread_mutex_unlock(&g_mu);
	}
	return rc;
}

static CUresult w_cuMemUnmap(CUdeviceptr p, size_t size)
{
	if (!get_cuMemUnmap())
		return CUDA_ERR_NOT_FOUND;
	CUresult rc = real_cuMemUnmap(p, size);
	if (rc == 0) {
		pthread_mutex_lock(&g_mu);
		emit(MSR_SEGMENT_UNMAP, p, size, 0, driver_device());
		pthread_mutex_unlock(&g_mu);
	}
	return rc;
}

/* The exported driver names (programs linked with -lcuda call these). */
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size)
{
	return w_cuMemAlloc_v2(p, size);
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	return w_cuMemFree_v2(p);
}
EXPORT CUresult cuMemAllocAsync(CUdeviceptr *p, size_t size, CUstream s)
{
	return w_cuMemAllocAsync(p, size, s);
}
EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
	return w_cuMemFreeAsync(p, s);
}
EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t size, const void *prop,
                            unsigned long long flags)
{
	return w_cuMemCreate(h, size, prop, flags);
}
EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
	return w_cuMemRelease(h);
}
EXPORT CUresult cuMemMap(CUdeviceptr p, size_t size, size_t offset, CUmemGenericAllocationHandle h,
                         unsigned long long flags)
{
	return w_cuMemMap(p, size, offset, h, flags);
}
EXPORT CUresult cuMemUnmap(CUdeviceptr p, size_t size)
{
	return w_cuMemUnmap(p, size);
}

/* The wrapper that stands for a driver function fetched at run time, or NULL. */
static void *wrapper_for(const char *name, void *real)
{
	static const struct {
		const char *name;
		void *wrapper;
		void **real;
	} map[] = {
	        {"cuMemAlloc", (void *)w_cuMemAlloc_v2, (void **)&real_cuMemAlloc_v2},
	        {"cuMemFree", (void *)w_cuMemFree_v2, (void **)&real_cuMemFree_v2},
	        {"cuMemAllocAsync", (void *)w_cuMemAllocAsync, (void **)&real_cuMemAllocAsync},
	        {"cuMemFreeAsync", (void *)w_cuMemFreeAsync, (void **)&real_cuMemFreeAsync},
	        {"cuMemCreate", (void *)w_cuMemCreate, (void **)&real_cuMemCreate},
	        {"cuMemRelease", (void *)w_cuMemRelease, (void **)&real_cuMemRelease},
	        {"cuMemMap", (void *)w_cuMemMap, (void **)&real_cuMemMap},
	        {"cuMemUnmap", (void *)w_cuMemUnmap, (void **)&real_cuMemUnmap},
	};
	size_t n = strlen(name);

	/* "cuMemAlloc_v2" and "cuMemAlloc" are the same call */
	if (n > 3 && strcmp(name + n - 3, "_v2") == 0)
		n -= 3;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strlen(map[i].name) == n && strncmp(map[i].name, name, n) == 0) {
			pthread_mutex_lock(&g_mu);
			*map[i].real = real;
			pthread_mutex_unlock(&g_mu);
			return map[i].wrapper;
		}
	return NULL;
}

/* A function pointer just looked up by name: ours instead, where we wrap that function. */
static void resolve_to_wrapper(const char *sym, void **fn)
{
	void *w;

	if (fn && *fn && sym && (w = wrapper_for(sym, *fn)))
		*fn = w;
}

EXPORT cudaError_t cudaGetDriverEntryPoint(const char *sym, void **fn, unsigned long long flags,
                                           int *status)
{
	if (!get_cudaGetDriverEntryPoint())
		return CUDA_ERR_NOT_FOUND;
	cudaError_t rc = real_cudaGetDriverEntryPoint(sym, fn, flags, status);
	if (rc == 0)
		resolve_to_wrapper(sym, fn);
	return rc;
}

EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char *sym, void **fn, unsigned int ver,
                                                    unsigned long long flags, int *status)
{
	if (!get_cudaGetDriverEntryPointByVersion())
		return CUDA_ERR_NOT_FOUND;
	cudaError_t rc = real_cudaGetDriverEntryPointByVersion(sym, fn, ver, flags, status);
	if (rc == 0)
		resolve_to_wrapper(sym, fn);
	return rc;
}

EXPORT CUresult cuGetProcAddress_v2(const char *sym, void **fn, int ver, uint64_t flags,
                                    int *status)
{
	if (!get_cuGetProcAddress_v2())
		return CUDA_ERR_NOT_FOUND;
	CUresult rc = real_cuGetProcAddress_v2(sym, fn, ver, flags, status);
	if (rc == 0)
		resolve_to_wrapper(sym, fn);
	return rc;
}
