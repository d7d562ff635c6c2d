// libmemsnap_torch_replay: PyTorch's real CUDACachingAllocator behind a C ABI
// (torch_backend.h), for `memsnap replay --backend torch`. The allocations are raw
// (raw_alloc_with_stream / raw_delete), one CUDA stream per recorded stream; the
// allocator's own trace tracker reports the segment events it makes.
#include <c10/core/Allocator.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>
#include <torch/version.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "torch_backend.h"

namespace CCA = c10::cuda::CUDACachingAllocator;

namespace {

int g_device = 0;
bool g_open = false, g_tracker = false;
std::vector<mst_seg> g_segs;                           // not yet taken
std::unordered_map<uint64_t, cudaStream_t> g_streams;  // recorded handle -> our stream
std::unordered_set<uint64_t> g_live;                   // pointers handed out

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
	// the allocator reads its settings when it is first initialised: set them before
	if (alloc_conf)
		setenv("PYTORCH_CUDA_ALLOC_CONF", alloc_conf, 1);
	try {
		cudaSetDevice(device);
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

int do_malloc(uint64_t size, uint64_t stream, uint64_t *ptr, char *err, size_t n)
{
	try {
		void *p = CCA::raw_alloc_with_stream(size, stream_for(stream));
		*ptr = reinterpret_cast<uint64_t>(p);
		if (p)
			g_live.insert(*ptr);
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
	if (g_live.erase(ptr))
		CCA::raw_delete(reinterpret_cast<void *>(ptr));
}

void empty_cache()
{
	CCA::emptyCache();
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

void close_backend()
{
	for (uint64_t p : g_live)
		CCA::raw_delete(reinterpret_cast<void *>(p));
	g_live.clear();
	CCA::emptyCache();
	for (auto &kv : g_streams)
		cudaStreamDestroy(kv.second);
	g_streams.clear();
	g_segs.clear();
	g_open = false;
}

const mst_api g_api = {MST_ABI,     torch_version, open_backend,  mem_info, do_malloc,
                       do_free,     empty_cache,   take_segments, stats,    close_backend};

} // namespace

extern "C" __attribute__((visibility("default"))) const mst_api *memsnap_torch_replay_api(void)
{
	return &g_api;
}
