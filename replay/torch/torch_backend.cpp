// libmemsnap_torch_replay: PyTorch's real CUDACachingAllocator behind a C ABI
// (torch_backend.h), for `memsnap replay --backend torch`. Allocations are the
// allocator's DataPtrs, made on one CUDA stream per recorded stream; the allocator's
// own trace tracker reports the segment events it makes.
//
// Deferred frees (record_stream): the block is recordStream'ed on a "blocker" stream
// that waits (cuStreamWaitValue32) on a word of pinned host memory, then freed: the
// allocator lowers allocated bytes and keeps the block until an event after the wait
// completes, which free_complete() allows by writing the word. A watchdog releases
// every blocker if a call into the allocator waits on one (empty_cache and the OOM
// retry synchronise with all pending events), so the replay cannot hang.
#include <c10/core/Allocator.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda.h>
#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>
#include <torch/csrc/cuda/CUDAPluggableAllocator.h>
#include <torch/version.h>

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <set>
#include <thread>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

#include "torch_backend.h"

namespace CCA = c10::cuda::CUDACachingAllocator;

// Exported by libc10_cuda for libtorch_cuda's CUDAHooks, declared in no header.
namespace c10::cuda::_internal {
void setHasPrimaryContext(bool (*func)(c10::DeviceIndex));
}

namespace {

int g_device = 0;
bool g_open = false, g_tracker = false;
std::vector<mst_seg> g_segs;                           // not yet taken
std::unordered_map<uint64_t, cudaStream_t> g_streams;  // recorded handle -> our stream
std::unordered_map<uint64_t, c10::DataPtr> g_live;     // pointers handed out
std::set<std::pair<uint64_t, uint64_t>> g_pools;       // private pools made, not released

struct blocker {
	cudaStream_t stream;
	volatile uint32_t *word; // pinned, mapped host memory the stream waits on
	CUdeviceptr dword;
};
std::vector<blocker> g_idle;                        // blockers not in use
std::unordered_map<uint64_t, blocker> g_pending;    // deferred frees not yet completed
std::mutex g_pending_mu;                            // g_pending against the watchdog
std::atomic<int64_t> g_busy_since{0};               // ms; 0 = not inside the allocator
std::atomic<bool> g_stop{false};
std::thread g_watchdog;
uint64_t g_forced = 0; // deferred frees the watchdog released early

int64_t now_ms()
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(
	               std::chrono::steady_clock::now().time_since_epoch())
	        .count();
}

// Marks a call into the allocator for the watchdog.
struct busy {
	busy() { g_busy_since.store(now_ms()); }
	~busy() { g_busy_since.store(0); }
};

void release_all_locked()
{
	for (auto &kv : g_pending)
		*kv.second.word = 1;
}

void watchdog()
{
	while (!g_stop.load()) {
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
		int64_t t = g_busy_since.load();
		if (t && now_ms() - t > 200) {
			std::lock_guard<std::mutex> g(g_pending_mu);
			if (!g_pending.empty()) {
				g_forced += g_pending.size();
				release_all_locked();
			}
		}
	}
}

// What libtorch_cuda registers and this process lacks: device guards (the allocator
// takes one to record a deferred free's events) ask whether a primary context exists.
bool has_primary_context(c10::DeviceIndex d)
{
	unsigned flags = 0;
	int active = 0;
	return cuDevicePrimaryCtxGetState(static_cast<CUdevice>(d), &flags, &active) ==
	               CUDA_SUCCESS &&
	       active;
}

// ---- placement: PyTorch's cudaMalloc at the recorded segments' offsets ----
//
// The plugin exports cudaMalloc/cudaFree: libc10_cuda, loaded with the plugin, finds them
// before libcudart's (a dlopen'ed object's own symbols come first in its lookup scope).
CUdeviceptr g_base = 0;                          // the reserved range, 0 = not placing
uint64_t g_span = 0, g_rec_min = 0;
std::deque<std::pair<uint64_t, uint64_t>> g_hints; // recorded (address, size), in order
std::unordered_map<uint64_t, CUmemGenericAllocationHandle> g_placed; // placed ptr -> handle
std::unordered_map<uint64_t, uint64_t> g_placed_size;
uint64_t g_fallbacks = 0; // segments that could not be placed (plain cudaMalloc)

using malloc_fn = cudaError_t (*)(void **, size_t);
using free_fn = cudaError_t (*)(void *);

malloc_fn real_malloc()
{
	static malloc_fn f = reinterpret_cast<malloc_fn>(dlsym(RTLD_NEXT, "cudaMalloc"));
	return f;
}

free_fn real_free()
{
	static free_fn f = reinterpret_cast<free_fn>(dlsym(RTLD_NEXT, "cudaFree"));
	return f;
}

int place(const uint64_t *addr_size, size_t n)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < n; i++) {
		lo = std::min(lo, addr_size[2 * i]);
		hi = std::max(hi, addr_size[2 * i] + addr_size[2 * i + 1]);
	}
	if (!n || hi - lo > (1ULL << 42)) // more than 4 TiB of address space: do not
		return -1;
	const uint64_t gran = 2ULL << 20;
	lo &= ~(gran - 1);
	uint64_t span = (hi - lo + gran - 1) / gran * gran;
	CUdeviceptr base = 0;
	if (cuMemAddressReserve(&base, span, 0, 0, 0) != CUDA_SUCCESS)
		return -1;
	g_base = base;
	g_span = span;
	g_rec_min = lo;
	for (size_t i = 0; i < n; i++)
		g_hints.emplace_back(addr_size[2 * i], addr_size[2 * i + 1]);
	return 0;
}

// Map size bytes at the recorded address of the next recorded segment of this size.
bool placed_malloc(void **p, size_t size)
{
	auto it = g_hints.begin();
	for (; it != g_hints.end(); ++it)
		if (it->second == size)
			break;
	if (it == g_hints.end() || size % (2ULL << 20))
		return false;
	CUdeviceptr at = g_base + (it->first - g_rec_min);
	if (g_placed.count(at))
		return false; // the recorded address is still in use here: the orders differ
	CUmemAllocationProp prop = {};
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = g_device;
	CUmemGenericAllocationHandle h = 0;
	if (cuMemCreate(&h, size, &prop, 0) != CUDA_SUCCESS)
		return false;
	CUmemAccessDesc acc = {};
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	if (cuMemMap(at, size, 0, h, 0) != CUDA_SUCCESS) {
		cuMemRelease(h);
		return false;
	}
	if (cuMemSetAccess(at, size, &acc, 1) != CUDA_SUCCESS) {
		cuMemUnmap(at, size);
		cuMemRelease(h);
		return false;
	}
	g_hints.erase(it);
	g_placed[at] = h;
	g_placed_size[at] = size;
	*p = reinterpret_cast<void *>(at);
	return true;
}

c10::cuda::CUDAStream torch_stream(cudaStream_t s)
{
	if (!s)
		return c10::cuda::getDefaultCUDAStream(static_cast<c10::DeviceIndex>(g_device));
	return c10::cuda::getStreamFromExternal(s, static_cast<c10::DeviceIndex>(g_device));
}

void say(char *err, size_t n, const char *what)
{
	if (err && n)
		snprintf(err, n, "%s", what);
}

const char *torch_version()
{
	return TORCH_VERSION;
}

int open_backend(int device, const char *alloc_conf, uint64_t limit, char *err, size_t n)
{
	int count = 0;

	if (g_open) {
		say(err, n, "the torch backend is already open");
		return -1;
	}
	g_fallbacks = g_forced = 0;
	if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
		say(err, n, "no CUDA device");
		return -1;
	}
	if (device < 0 || device >= count) {
		char m[96];
		snprintf(m, sizeof(m), "device %d does not exist (%d device%s)", device, count,
		         count == 1 ? "" : "s");
		say(err, n, m);
		return -1;
	}
	g_device = device;
	// the allocator reads its settings when it is first initialised: set them before
	if (alloc_conf)
		setenv("PYTORCH_CUDA_ALLOC_CONF", alloc_conf, 1);
	try {
		cudaSetDevice(device);
		c10::cuda::_internal::setHasPrimaryContext(has_primary_context);
		CCA::init(count);
		if (!g_tracker) {
			CCA::attachAllocatorTraceTracker([](const auto &te) {
				auto a = static_cast<unsigned>(te.action_);
				if (a >= 3 && a <= 6 && te.device_ == g_device)
					g_segs.push_back({static_cast<uint8_t>(a),
					                  static_cast<uint64_t>(te.addr_),
					                  static_cast<uint64_t>(te.size_)});
			});
			g_tracker = true;
		}
		if (limit) {
			size_t fr = 0, total = 0;
			cudaMemGetInfo(&fr, &total);
			CCA::setMemoryFraction(static_cast<double>(limit) / static_cast<double>(total),
			                       static_cast<c10::DeviceIndex>(device));
		}
		CCA::resetPeakStats(static_cast<c10::DeviceIndex>(device));
		g_stop.store(false);
		g_watchdog = std::thread(watchdog);
		CCA::resetAccumulatedStats(static_cast<c10::DeviceIndex>(device));
	} catch (const std::exception &e) {
		say(err, n, e.what());
		return -1;
	}
	g_device = device;
	g_open = true;
	return 0;
}

void mem_info(uint64_t *total, uint64_t *free_bytes)
{
	size_t f = 0, t = 0;
	cudaMemGetInfo(&f, &t);
	*total = t;
	*free_bytes = f;
}

cudaStream_t stream_for(uint64_t handle)
{
	if (handle == 0)
		return nullptr;
	auto it = g_streams.find(handle);
	if (it != g_streams.end())
		return it->second;
	cudaStream_t s = nullptr;
	cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	g_streams[handle] = s;
	return s;
}

/*
 * Route the next allocation to a private pool, as a capture or use_mem_pool does: begin and end
 * allocating to it around the one call. The pool's first use makes it and keeps the use count
 * that begin takes (its owner's, dropped by release_pool); later ones give theirs back.
 */
struct pool_scope {
	c10::cuda::MempoolId_t id;
	bool on = false, made = false;
	pool_scope(uint64_t first, uint64_t second) : id{first, second}
	{
		if (!first && !second)
			return;
		auto dev = static_cast<c10::DeviceIndex>(g_device);
		made = g_pools.insert({first, second}).second;
		CCA::beginAllocateToPool(dev, id, [](cudaStream_t) { return true; });
		on = true;
	}
	~pool_scope()
	{
		if (!on)
			return;
		auto dev = static_cast<c10::DeviceIndex>(g_device);
		CCA::endAllocateToPool(dev, id);
		if (!made)
			CCA::releasePool(dev, id);
	}
};

int do_malloc(uint64_t size, uint64_t stream, uint64_t pool_first, uint64_t pool_second,
              uint64_t *ptr, char *err, size_t n)
{
	try {
		busy b;
		// the stream as the current one (a stream guard would need libtorch_cuda's hooks)
		c10::cuda::setCurrentCUDAStream(torch_stream(stream_for(stream)));
		pool_scope in_pool(pool_first, pool_second);
		c10::DataPtr dp = CCA::get()->allocate(size);
		*ptr = reinterpret_cast<uint64_t>(dp.get());
		if (dp.get())
			g_live.emplace(*ptr, std::move(dp));
		return 0;
	} catch (const c10::OutOfMemoryError &e) {
		say(err, n, e.what_without_backtrace());
		return 1;
	} catch (const std::exception &e) {
		say(err, n, e.what());
		return -1;
	}
}

void do_free(uint64_t ptr)
{
	busy b;
	g_live.erase(ptr); // the DataPtr's deleter frees the block
}

bool new_blocker(blocker *out)
{
	void *host = nullptr;
	if (cudaHostAlloc(&host, sizeof(uint32_t), cudaHostAllocMapped) != cudaSuccess)
		return false;
	void *dev = nullptr;
	if (cudaHostGetDevicePointer(&dev, host, 0) != cudaSuccess ||
	    cudaStreamCreateWithFlags(&out->stream, cudaStreamNonBlocking) != cudaSuccess) {
		cudaFreeHost(host);
		return false;
	}
	out->word = static_cast<volatile uint32_t *>(host);
	out->dword = reinterpret_cast<CUdeviceptr>(dev);
	return true;
}

void free_request(uint64_t ptr)
{
	auto it = g_live.find(ptr);
	if (it == g_live.end())
		return;
	blocker bl;
	if (!g_idle.empty()) {
		bl = g_idle.back();
		g_idle.pop_back();
	} else if (!new_blocker(&bl)) {
		do_free(ptr); // no blocker: freed at once (allocated bytes as PyTorch counts them)
		return;
	}
	*bl.word = 0;
	if (cuStreamWaitValue32(bl.stream, bl.dword, 1, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS) {
		g_idle.push_back(bl);
		do_free(ptr);
		return;
	}
	{
		std::lock_guard<std::mutex> g(g_pending_mu);
		g_pending[ptr] = bl;
	}
	busy b;
	CCA::recordStream(it->second, torch_stream(bl.stream));
	g_live.erase(it); // free requested: the block waits for the blocker's event
}

// Waits until the blocker's stream has passed its event. A stream whose word is written can
// still wait behind another blocker's wait where the two share one of the device's hardware
// queues (CUDA_DEVICE_MAX_CONNECTIONS, 8 by default): past 100 ms every pending blocker is
// released (counted as forced, as the watchdog's are), so the wait cannot hang.
void wait_blocker(const blocker &bl)
{
	int64_t t0 = now_ms();
	while (cudaStreamQuery(bl.stream) == cudaErrorNotReady) {
		if (now_ms() - t0 > 100) {
			std::lock_guard<std::mutex> g(g_pending_mu);
			if (!g_pending.empty()) {
				g_forced += g_pending.size();
				release_all_locked();
			}
			break;
		}
		std::this_thread::yield();
	}
	cudaStreamSynchronize(bl.stream);
}

void free_complete(uint64_t ptr)
{
	blocker bl;
	{
		std::lock_guard<std::mutex> g(g_pending_mu);
		auto it = g_pending.find(ptr);
		if (it == g_pending.end())
			return;
		bl = it->second;
		g_pending.erase(it);
		*bl.word = 1;
	}
	wait_blocker(bl); // its event is complete: the next malloc frees the block
	g_idle.push_back(bl);
}

// empty_cache waits for every pending event: as in the recorded run, they complete first.
// Every word is written before any stream is waited on: a stream may sit in a hardware queue
// behind another's wait.
void complete_all()
{
	std::vector<blocker> done;
	{
		std::lock_guard<std::mutex> g(g_pending_mu);
		for (auto &kv : g_pending) {
			*kv.second.word = 1;
			done.push_back(kv.second);
		}
		g_pending.clear();
	}
	for (const blocker &bl : done) {
		cudaStreamSynchronize(bl.stream);
		g_idle.push_back(bl);
	}
}

// refuse_free: the plugin's cudaFree answers as the driver does during a stream capture
bool g_refuse_free = false;

void refuse_free(int on)
{
	g_refuse_free = on != 0;
}

/*
 * f, as the recorded program's call during a capture: its cudaFree refused (the plugin's, see
 * cudaFree below), after PyTorch recorded the segment freed; PyTorch raises, the segment stays.
 */
template <typename F> void maybe_refused(F f)
{
	try {
		f();
	} catch (const std::exception &) {
		if (!g_refuse_free)
			throw;
	}
}

void empty_cache()
{
	complete_all();
	busy b;
	maybe_refused([] { CCA::emptyCache(); });
}

size_t take_segments(mst_seg *out, size_t max)
{
	size_t k = g_segs.size() < max ? g_segs.size() : max;
	std::memcpy(out, g_segs.data(), k * sizeof(mst_seg));
	g_segs.erase(g_segs.begin(), g_segs.begin() + static_cast<std::ptrdiff_t>(k));
	return k;
}

void stats(mst_stats *o)
{
	auto s = CCA::getDeviceStats(static_cast<c10::DeviceIndex>(g_device));
	const size_t all = 0; // StatType::AGGREGATE: all pools
	o->allocated_current = s.allocated_bytes[all].current;
	o->allocated_peak = s.allocated_bytes[all].peak;
	o->reserved_current = s.reserved_bytes[all].current;
	o->reserved_peak = s.reserved_bytes[all].peak;
	o->requested_current = s.requested_bytes[all].current;
	o->requested_peak = s.requested_bytes[all].peak;
	o->active_current = s.active_bytes[all].current;
	o->active_peak = s.active_bytes[all].peak;
	o->segment_current = s.segment[all].current;
	o->segment_peak = s.segment[all].peak;
	o->inactive_split_bytes_current = s.inactive_split_bytes[all].current;
	o->num_alloc_retries = static_cast<uint64_t>(s.num_alloc_retries);
	o->num_ooms = static_cast<uint64_t>(s.num_ooms);
	o->num_device_alloc = static_cast<uint64_t>(s.num_device_alloc);
	o->num_device_free = static_cast<uint64_t>(s.num_device_free);
}

void release_pool(uint64_t first, uint64_t second)
{
	if (!g_pools.erase({first, second}))
		return;
	try {
		CCA::releasePool(static_cast<c10::DeviceIndex>(g_device), {first, second});
	} catch (const std::exception &) {
		// an unknown pool: nothing to give back
	}
}

/*
 * The MemPool settings, where this PyTorch's allocator has them (setNoSplit from 2.11,
 * setUseOnOOM from 2.8, with a third argument in later versions): found at compile time, so
 * that the plugin builds against any version and says which it lacks.
 */
template <typename A>
auto set_no_split(A *a, c10::DeviceIndex dev, c10::cuda::MempoolId_t id, int)
        -> decltype(a->setNoSplit(dev, id), bool())
{
	a->setNoSplit(dev, id);
	return true;
}
template <typename A> bool set_no_split(A *, c10::DeviceIndex, c10::cuda::MempoolId_t, long)
{
	return false;
}
template <typename A>
auto set_use_on_oom(A *a, c10::DeviceIndex dev, c10::cuda::MempoolId_t id, int)
        -> decltype(a->setUseOnOOM(dev, id, true), bool())
{
	a->setUseOnOOM(dev, id, true);
	return true;
}
template <typename A>
auto set_use_on_oom(A *a, c10::DeviceIndex dev, c10::cuda::MempoolId_t id, long)
        -> decltype(a->setUseOnOOM(dev, id), bool())
{
	a->setUseOnOOM(dev, id);
	return true;
}
template <typename A> bool set_use_on_oom(A *, c10::DeviceIndex, c10::cuda::MempoolId_t, ...)
{
	return false;
}

int no_split(uint64_t first, uint64_t second)
{
	try {
		return set_no_split(CCA::get(), static_cast<c10::DeviceIndex>(g_device),
		                    {first, second}, 0)
		               ? 0
		               : -1;
	} catch (const std::exception &) {
		return -1;
	}
}

template <typename A>
auto empty_cache_of(A *a, c10::cuda::MempoolId_t id, int) -> decltype(a->emptyCache(id), void())
{
	a->emptyCache(id);
}
template <typename A> void empty_cache_of(A *a, c10::cuda::MempoolId_t, long)
{
	a->emptyCache(); // an allocator without per-pool emptying: every cache
}

void empty_pool_cache(uint64_t first, uint64_t second)
{
	try {
		complete_all();
		busy b;
		empty_cache_of(CCA::get(), {first, second}, 0);
	} catch (const std::exception &) {
		// nothing to give back, or a refused cudaFree (refuse_free)
	}
}

/*
 * While the recorded program had a use_mem_pool open: allocating to a pool of our own whose
 * filter takes no stream, so that the allocator's captures_underway is not empty (nothing is
 * routed there). Its id is far above the ids PyTorch gives MemPools, and new for each scope:
 * a released pool stays known to the allocator, which refuses to begin allocating to it again.
 */
c10::cuda::MempoolId_t g_hold_id{0, 1ull << 62};
bool g_holding = false;

void captures_underway(int on)
{
	auto dev = static_cast<c10::DeviceIndex>(g_device);
	try {
		if (on && !g_holding) {
			g_hold_id.second++;
			CCA::beginAllocateToPool(dev, g_hold_id, [](cudaStream_t) { return false; });
			g_holding = true;
		} else if (!on && g_holding) {
			CCA::endAllocateToPool(dev, g_hold_id);
			CCA::releasePool(dev, g_hold_id);
			g_holding = false;
		}
	} catch (const std::exception &) {
		// the allocator refused: the replay may differ where the recorded run had no retry
	}
}

int use_on_oom(uint64_t first, uint64_t second)
{
	auto dev = static_cast<c10::DeviceIndex>(g_device);
	try {
		// made now and kept, as the MemPool that owns it keeps it, until release_pool
		if (g_pools.insert({first, second}).second)
			CCA::get()->createOrIncrefPool(dev, {first, second});
		return set_use_on_oom(CCA::get(), dev, {first, second}, 0) ? 0 : -1;
	} catch (const std::exception &) {
		return -1;
	}
}

int custom_allocator(uint64_t first, uint64_t second)
{
	auto dev = static_cast<c10::DeviceIndex>(g_device);
	try {
		// one allocator for every such pool: cudaMalloc and cudaFree, as the interposer
		// places them
		static auto alloc = torch::cuda::CUDAPluggableAllocator::createCustomAllocator(
		        [](size_t n, int, cudaStream_t) -> void * {
			        void *p = nullptr;
			        return cudaMalloc(&p, n) == cudaSuccess ? p : nullptr;
		        },
		        [](void *p, size_t, int, cudaStream_t) { cudaFree(p); });
		if (!g_pools.insert({first, second}).second)
			return -1; // made already, without it
		CCA::get()->createOrIncrefPool(dev, {first, second}, alloc);
		return 0;
	} catch (const std::exception &) {
		return -1;
	}
}

size_t segments(mst_segment *out, size_t max)
{
	auto snap = CCA::snapshot();
	size_t n = 0;
	for (const auto &s : snap.segments) {
		if (s.device != g_device)
			continue;
		if (n < max) {
			mst_segment &o = out[n];
			o.address = static_cast<uint64_t>(s.address);
			o.total_size = static_cast<uint64_t>(s.total_size);
			o.allocated_size = static_cast<uint64_t>(s.allocated_size);
			o.active_size = static_cast<uint64_t>(s.active_size);
			o.n_blocks = static_cast<uint32_t>(s.blocks.size());
			o.n_allocated_blocks = 0;
			for (const auto &b : s.blocks)
				o.n_allocated_blocks += b.allocated ? 1 : 0;
			o.is_large = s.is_large ? 1 : 0;
			o.is_expandable = s.is_expandable ? 1 : 0;
		}
		n++;
	}
	return n;
}

void close_backend()
{
	complete_all();
	captures_underway(0);
	g_live.clear();
	for (const auto &id : std::set<std::pair<uint64_t, uint64_t>>(g_pools))
		release_pool(id.first, id.second);
	CCA::emptyCache();
	for (auto &bl : g_idle) {
		cudaStreamDestroy(bl.stream);
		cudaFreeHost(const_cast<uint32_t *>(bl.word));
	}
	g_idle.clear();
	g_stop.store(true);
	if (g_watchdog.joinable())
		g_watchdog.join();
	if (g_base) {
		cuMemAddressFree(g_base, g_span);
		g_base = 0;
		g_hints.clear();
	}
	for (auto &kv : g_streams)
		cudaStreamDestroy(kv.second);
	g_streams.clear();
	g_segs.clear();
	g_open = false;
}

} // namespace

extern "C" __attribute__((visibility("default"))) cudaError_t cudaMalloc(void **p, size_t size)
{
	if (g_base && placed_malloc(p, size))
		return cudaSuccess;
	if (g_base)
		g_fallbacks++;
	return real_malloc()(p, size);
}

extern "C" __attribute__((visibility("default"))) cudaError_t cudaFree(void *p)
{
	if (g_refuse_free) // as during the recorded program's capture: nothing is freed
		return cudaErrorStreamCaptureUnsupported;
	auto it = g_placed.find(reinterpret_cast<uint64_t>(p));
	if (it == g_placed.end())
		return real_free()(p);
	uint64_t size = g_placed_size[it->first];
	cudaDeviceSynchronize(); // as cudaFree does
	cuMemUnmap(it->first, size);
	cuMemRelease(it->second);
	g_placed_size.erase(it->first);
	g_placed.erase(it);
	return cudaSuccess;
}

namespace {

void deviations(uint64_t *misplaced, uint64_t *forced)
{
	*misplaced = g_fallbacks;
	*forced = g_forced;
}

const mst_api g_api = {MST_ABI,      torch_version, open_backend, place,
                       mem_info,     do_malloc,     release_pool, do_free,
                       free_request, free_complete, empty_cache,  take_segments,
                       stats,        segments,      deviations,   close_backend,
                       no_split,     use_on_oom,    empty_pool_cache, captures_underway,
                       custom_allocator, refuse_free};

} // namespace

extern "C" __attribute__((visibility("default"))) const mst_api *memsnap_torch_replay_api(void)
{
	return &g_api;
}
