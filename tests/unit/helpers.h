/* Shared helpers of the unit tests. */
#ifndef MEMSNAP_TESTS_HELPERS_H
#define MEMSNAP_TESTS_HELPERS_H

#include <stddef.h>
#include <stdint.h>

#include "parse/trace.h"

/* Path of a test snapshot NAME: testdata/snapshots/NAME.pickle[.zst|.gz], else the shared
 * set; NULL if absent. Returns a static buffer. */
const char *th_snapshot_path(const char *name);
/* Read a whole file; caller frees. NULL if it cannot. */
char *th_read_file(const char *path, size_t *len);
/* Writes data to a new file under /tmp, removed when the process exits; returns its path
 * (valid until the next call) or NULL. */
const char *th_write_temp(const void *data, size_t len, const char *suffix);
/* The truth file of a real trace NAME (what PyTorch reported), bundled or shared; NULL if
 * absent. Free with cJSON_Delete. */
struct cJSON;
struct cJSON *th_truth(const char *name);
/* Deterministic pseudo-random numbers. */
uint64_t th_rand(uint64_t *state);
/* Compare two traces' events and annotations; returns the first differing index or -1. */
long th_events_diff(const struct ms_trace *a, const struct ms_trace *b);

/* A pickle read callback over bytes in memory, at most chunk bytes a call (refills land
 * inside opcodes). */
struct th_mem {
	const unsigned char *p;
	size_t n, pos, chunk;
};
ms_status th_mem_read(void *ctx, void *buf, size_t cap, size_t *got, struct ms_diag *d);
/*
 * Read a pickle snapshot (bytes in memory, already decompressed) into a new trace with the
 * pickle machine's fast path for trace entries on or off, the input handed out at most
 * chunk bytes at a time. *n_fast (if not NULL) gets the number of entries the fast path read.
 */
ms_status th_pickle_load(const void *data, size_t n, int fast, size_t chunk, struct ms_trace **out,
                         uint64_t *n_fast, struct ms_diag *d);
/*
 * Each snapshot of the third-party corpus (MS_SHARED_WILD: *.pickle and *.pkl files) in name
 * order, loaded: fn gets the file's name and its trace, freed when fn returns; a file that does
 * not load fails the test. Returns how many there were, or -1 where the directory is absent
 * (the caller skips: the corpus is not bundled).
 */
int th_each_wild(void (*fn)(const char *name, struct ms_trace *t, void *ctx), void *ctx);
/* t written as a new .zst trace (frame_bytes, level: 0 the writer's defaults); its path. */
const char *th_write_trace(const struct ms_trace *t, size_t frame_bytes, int level);

/* The segment events an allocator model makes (its on_segment callback, ctx a struct th_segs). */
struct th_segs {
	unsigned action[64];
	uint64_t size[64];
	int n;
};
void th_on_seg(void *ctx, unsigned action, uint64_t addr, uint64_t size, uint64_t stream);

/* The whole decompressed content of a snapshot file; caller frees. NULL if it cannot. */
char *th_read_decompressed(const char *path, size_t *len);

#endif
