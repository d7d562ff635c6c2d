/*
 * Which devices a trace is about: for each device, its allocator events, raw CUDA events, OOMs
 * and end-state segments. A rank's snapshot has its events on the rank's device; a process
 * that used several devices has events on each; a snapshot taken without a trace has segments
 * and no events. Commands use this to cover every device that has something, not device 0.
 */
#ifndef MEMSNAP_PARSE_DEVICES_H
#define MEMSNAP_PARSE_DEVICES_H

#include <stddef.h>
#include <stdint.h>

#include "memsnap/memsnap.h"

struct ms_device_use {
	uint32_t device;
	uint64_t events;     /* events of PyTorch's allocator (what a replay replays) */
	uint64_t allocs;     /* of them, allocations (a trace without any has nothing to replay) */
	uint64_t raw_events; /* raw CUDA calls (the interposer's) */
	uint64_t ooms;       /* recorded oom entries */
	uint64_t snapshot_marks; /* of events, memory_snapshot() marks (not a use of the device) */
	uint64_t segments;       /* end-state segments */
	uint64_t reserved;       /* their bytes */
};

struct ms_devices {
	size_t n;
	struct ms_device_use *d; /* in device order, only devices with something */
};

struct ms_trace;

/* Read path once; *out is released with ms_devices_release. */
ms_status ms_devices_read(const char *path, struct ms_devices *out, struct ms_diag *diag);
struct ms_source;
/* As ms_devices_read, of an input opened once (source.h): from its trace in memory where it was
 * read whole. */
ms_status ms_devices_read_source(const struct ms_source *src, struct ms_devices *out,
                                 struct ms_diag *diag);
/* The same from a trace in memory. */
ms_status ms_devices_of(const struct ms_trace *t, struct ms_devices *out);
/* Is path a memsnap .zst trace (not a snapshot, not unreadable)? */
int ms_devices_is_trace(const char *path);
/* The entry of device dev, or NULL. */
const struct ms_device_use *ms_devices_find(const struct ms_devices *ds, uint32_t dev);
/* "devices 0 (4742 events) and 1 (21722 events)": those with events, else with segments. */
void ms_devices_describe(const struct ms_devices *ds, char *buf, size_t cap);
void ms_devices_release(struct ms_devices *ds);

#endif
