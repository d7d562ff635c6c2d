// libmemsnap_torch: PyTorch's caching allocator -> the process's memsnap recorder.
//
// The only C++ of the recorder: attachAllocatorTraceTracker takes a C++
// std::function. The tracker runs on the allocating thread under the
// allocator's mutex (torch-allocator.md 9.1): it copies the event's plain
// fields into msr_record() (no malloc, no lock, no GIL) and, when stacks are
// on, reads the thread's Python stack in place (pystack.c).
#include <c10/cuda/CUDACachingAllocator.h>

#include <atomic>
#include <cstdint>
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

template <class Entry> void on_trace(const Entry &te)
{
	struct msr *r = msr_global();
	if (!r)
		return;
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
