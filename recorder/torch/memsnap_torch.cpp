// libmemsnap_torch: PyTorch's caching allocator -> the process's memsnap recorder.
//
// The only C++ of the recorder: attachAllocatorTraceTracker takes a C++
// std::function. The tracker runs on the allocating thread under the
// allocator's mutex (torch-allocator.md 9.1): it copies the event's plain
// fields into msr_record() (no malloc, no lock, no GIL) and, when stacks are
// on, reads the thread's Python stack in place (pystack.c).
#include <c10/cuda/CUDACachingAllocator.h>

#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <type_traits>
#include <utility>

#include "memsnap/recorder.h"
#include "pystack.h"

namespace {

std::atomic<bool> g_attached{false};
std::atomic<int> g_stacks{0};
std::atomic<unsigned> g_max_frames{64};

// TraceEntry::mempool_ (PyTorch 2.8 and later): the pool that served the event.
template <class E, class = void> struct has_mempool : std::false_type {};
template <class E>
struct has_mempool<E, std::void_t<decltype(std::declval<const E &>().mempool_)>>
        : std::true_type {};

// The driver's cuMemGetInfo_v2 and cuCtxGetDevice (CUresult and CUdevice are ints), from the
// libcuda.so.1 that PyTorch loaded: no link to a CUDA library of our own.
using mem_get_info_fn = int (*)(size_t *, size_t *);
using ctx_get_device_fn = int (*)(int *);
std::atomic<mem_get_info_fn> g_mem_get_info{nullptr};
std::atomic<ctx_get_device_fn> g_ctx_get_device{nullptr};
std::atomic<uint64_t> g_measured{0}; // devices (bit i: device i < 64) measured once

void find_driver()
{
	void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return;
	g_mem_get_info.store(reinterpret_cast<mem_get_info_fn>(dlsym(h, "cuMemGetInfo_v2")));
	g_ctx_get_device.store(reinterpret_cast<ctx_get_device_fn>(dlsym(h, "cuCtxGetDevice")));
}

// What device dev has free as PyTorch first reserves memory on it, marked after that segment's
// event (common/event.h MS_DEVICE_MEMORY_MARK): beside PyTorch's reserved bytes it measures what
// is held outside PyTorch from the start (the CUDA context, memory allocated before recording,
// other processes). Once per device; only where the current context is the device's (the
// allocator made it current for the cudaMalloc); one driver call, as PyTorch itself makes on an
// OOM under the same lock.
void measure_once(struct msr *r, int dev)
{
	mem_get_info_fn info = g_mem_get_info.load(std::memory_order_relaxed);
	ctx_get_device_fn cur = g_ctx_get_device.load(std::memory_order_relaxed);
	uint64_t bit;
	size_t free_b = 0, total = 0;
	int d = -1;
	char name[80];

	if (dev < 0 || dev >= 64 || !info || !cur)
		return;
	bit = 1ull << dev;
	if (g_measured.load(std::memory_order_relaxed) & bit)
		return;
	if (cur(&d) != 0 || d != dev || info(&free_b, &total) != 0 || free_b > total)
		return;
	if (g_measured.fetch_or(bit) & bit)
		return;
	snprintf(name, sizeof(name), "cudaMemGetInfo %zu %zu", free_b, total);
	msr_annotate(r, MSR_ANN_PHASE, MSR_ANN_MARK, name, static_cast<uint16_t>(dev));
}

std::atomic<uint64_t> g_used{0}; // devices (bit i: device i < 64) with an event other than a mark

template <class Entry> void on_trace(const Entry &te)
{
	struct msr *r = msr_global();
	if (!r)
		return;
	// memory_snapshot() marks every device's allocator, also one this process never used:
	// such a mark says nothing of it, and would make it look used
	int dev = static_cast<int>(te.device_);
	uint64_t bit = dev >= 0 && dev < 64 ? 1ull << dev : 0;
	if (static_cast<uint8_t>(te.action_) == MSR_SNAPSHOT) {
		if (bit && !(g_used.load(std::memory_order_relaxed) & bit))
			return;
	} else if (bit && !(g_used.load(std::memory_order_relaxed) & bit)) {
		g_used.fetch_or(bit);
	}
	struct msr_event e = {};
	e.action = static_cast<uint8_t>(te.action_);
	e.source = MSR_SRC_TORCH;
	e.device = static_cast<uint16_t>(te.device_);
	e.addr = static_cast<uint64_t>(te.addr_);
	e.size = static_cast<uint64_t>(te.size_);
	e.stream = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(te.stream_));
	// stacks say who allocated: the allocation, the segment it caused, the failed request
	if (g_stacks.load(std::memory_order_relaxed) &&
	    (e.action == MSR_ALLOC || e.action == MSR_SEGMENT_ALLOC || e.action == MSR_OOM))
		e.stack = ms_pystack_capture(r, g_max_frames.load(std::memory_order_relaxed));
	if constexpr (has_mempool<Entry>::value)
		msr_record_in_pool(r, &e, static_cast<uint64_t>(te.mempool_.first),
		                   static_cast<uint64_t>(te.mempool_.second));
	else
		msr_record(r, &e);
	if (e.action == MSR_SEGMENT_ALLOC || e.action == MSR_SEGMENT_MAP)
		measure_once(r, static_cast<int>(te.device_));
}

} // namespace

extern "C" {

// 1 if Python stacks can be read in this interpreter.
__attribute__((visibility("default"))) int memsnap_torch_stacks_supported(void)
{
	return ms_pystack_supported();
}

// Attach the tracker (once per process; later calls only change the stack setting). CUDA must
// be initialised: trackers attached before are silently dropped by PyTorch. Returns 0, or -1
// when stacks were asked for and this interpreter's frames cannot be read.
__attribute__((visibility("default"))) int memsnap_torch_attach(int python_stacks,
                                                                unsigned max_frames)
{
	if (python_stacks && !ms_pystack_supported())
		return -1;
	g_stacks.store(python_stacks);
	if (max_frames)
		g_max_frames.store(max_frames);
	if (g_attached.exchange(true))
		return 0;
	find_driver();
	c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker(
	        [](const auto &te) { on_trace(te); });
	return 0;
}

// Stop recording stacks and events: the tracker cannot be detached, it checks msr_global().
__attribute__((visibility("default"))) void memsnap_torch_stacks(int on)
{
	g_stacks.store(on);
}
}
