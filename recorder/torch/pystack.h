/*
 * The calling thread's Python stack, read without the GIL.
 *
 * PyTorch's allocator calls its trace trackers under its own mutex, usually from
 * an operator that released the GIL: taking the GIL there could deadlock
 * against a thread that holds it and waits for the allocator. A thread that
 * released the GIL is not running Python, so its frame chain stands still and
 * its frames keep their code objects alive: this walks that chain directly
 * (CPython 3.11 to 3.13 layouts), allocating no Python objects.
 */
#ifndef MEMSNAP_RECORDER_TORCH_PYSTACK_H
#define MEMSNAP_RECORDER_TORCH_PYSTACK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct msr;

/* 1 if this build can read stacks of the running interpreter (its version is supported). */
int ms_pystack_supported(void);

/*
 * Intern this thread's Python stack (innermost first, at most max_frames)
 * into r; return its stack id, 0 when the thread has no Python frames.
 * Thread-safe.
 */
uint32_t ms_pystack_capture(struct msr *r, size_t max_frames);

#ifdef __cplusplus
}
#endif

#endif
