/*
 * libFuzzer target and property test: the allocator model under arbitrary sequences of
 * malloc, free_requested, free_completed and empty_cache, on random settings, with every
 * invariant checked after every step (ms_model_check): blocks tile their segments, no overlap,
 * pools hold exactly the free blocks, statistics equal the sums over the blocks, a block is
 * never handed to another stream, the limit is never exceeded.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_HELD 512

static void fail(const char *what)
{
	fprintf(stderr, "model invariant broken: %s\n", what);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ms_model_conf c;
	struct ms_model *m;
	struct ms_model_block *held[MAX_HELD];
	uint64_t held_stream[MAX_HELD];
	size_t n_held = 0;
	char why[256], conf[128];
	struct ms_diag d = MS_DIAG_INIT;
	uint8_t cfg;
	static const char *const divs[] = {"", ",roundup_power2_divisions:2",
	                                   ",roundup_power2_divisions:4",
	                                   ",roundup_power2_divisions:[1:1,64:8,>:4]"};

	if (size < 2)
		return 0;
	cfg = data[0];
	memset(&c, 0, sizeof(c));
	ms_alloc_conf_init(&c.ac);
	snprintf(conf, sizeof(conf), "expandable_segments:%s%s%s%s", cfg & 1 ? "True" : "False",
	         (cfg >> 1) & 1 ? ",max_split_size_mb:64" : "", divs[(cfg >> 2) & 3],
	         (cfg >> 4) & 1 ? ",garbage_collection_threshold:0.6" : "");
	if (ms_alloc_conf_parse(&c.ac, conf, &d))
		fail(d.msg);
	c.limit = (cfg >> 5) & 1 ? (uint64_t)(64 + data[1]) << 22 : 0; /* 256 MiB .. 1.25 GiB */
	c.device_memory = (cfg >> 6) & 1 ? 2ull << 30 : 0;
	if (ms_model_new(&c, &m))
		return 0;
	for (size_t i = 2; i + 4 <= size; i += 4) {
		const uint8_t *o = data + i;
		unsigned op = o[0] % 8;
		uint64_t stream = o[3] % 3;
		/* the default pool mostly; else (1, 0), (0, 1) or (2, 0) (common/event.h) */
		uint16_t pool = (o[3] >> 2) & 3 ? 0 : (uint16_t)(2 + (o[3] >> 4) % 3);
		if (op < 4) {
			/* sizes from 1 byte to ~200 MiB, most of them small */
			uint64_t n = (uint64_t)(o[1] | o[2] << 8);
			struct ms_model_block *b;
			if (op == 1)
				n <<= 6;
			else if (op == 2)
				n <<= 12;
			else if (op == 3)
				n = (n % 200 + 1) << 20;
			n += 1;
			if (ms_model_malloc_pool(m, n, stream, pool, &b, NULL))
				break; /* out of memory in the test itself */
			if (b) {
				if (ms_model_block_size(b) < ms_model_round_size(m, n))
					fail("block smaller than the rounded request");
				if (n_held == MAX_HELD) {
					ms_model_free_requested(m, held[0]);
					if (ms_model_free_completed(m, held[0]))
						break;
					held[0] = held[--n_held];
					held_stream[0] = held_stream[n_held];
				}
				held_stream[n_held] = stream;
				held[n_held++] = b;
			}
		} else if (op == 4 && n_held) {
			ms_model_free_requested(m, held[o[1] % n_held]);
		} else if (op == 5 && n_held) {
			size_t k = o[1] % n_held;
			if (ms_model_free_completed(m, held[k]))
				break;
			held[k] = held[--n_held];
			held_stream[k] = held_stream[n_held];
		} else if (op == 6) {
			ms_model_empty_cache(m);
		} else if (op == 7 && pool) {
			if (ms_model_release_pool(m, pool))
				break;
		}
		if (ms_model_check(m, held, n_held, why, sizeof(why)))
			fail(why);
	}
	(void)held_stream;
	ms_model_free(m);
	return 0;
}
