/* common/: page blocks, the u64 map against a plain array, interning, arena, buffers, status names.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/hash.h"
#include "common/event.h"
#include "common/size.h"
#include "common/symtab.h"
#include "helpers.h"

/* Page blocks of every size come zeroed, writable to their last byte, and are all given back. */
Test(common, page_blocks)
{
	const size_t sizes[] = {
	        1, 4095, 4096, 70000, MS_PAGES_HUGE - 40, MS_PAGES_HUGE, 3 * MS_PAGES_HUGE + 123};
	void *b[sizeof(sizes) / sizeof(sizes[0])];
	long live = ms__alloc_live();

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		unsigned char *p = ms_pages_alloc(sizes[i]);
		cr_assert_not_null(p);
		for (size_t j = 0; j < sizes[i]; j += 997)
			cr_assert_eq(p[j], 0);
		cr_assert_eq(p[sizes[i] - 1], 0);
		memset(p, 0xa5, sizes[i]);
		b[i] = p;
	}
	cr_assert_eq(ms__alloc_live(), live + (long)(sizeof(sizes) / sizeof(sizes[0])));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		ms_pages_free(b[i], sizes[i]);
	ms_pages_free(NULL, 10);
	cr_assert_eq(ms__alloc_live(), live);
	ms__alloc_fail_at(1);
	cr_assert_null(ms_pages_alloc(100));
	ms__alloc_fail_at(0);
}

/* Blocks taken while pages are faulted in ahead: zeroed, writable, given back; the pages not
 * taken go at the last stop, and it all starts again after. Two threads take at once. */
static void *take_huge_blocks(void *arg)
{
	unsigned char *b[12];

	for (int i = 0; i < 12; i++) {
		b[i] = ms_pages_alloc(MS_PAGES_HUGE);
		if (!b[i])
			return arg;
		for (size_t j = 0; j < MS_PAGES_HUGE; j += 4093)
			if (b[i][j])
				return arg;
		memset(b[i], 0x5a, MS_PAGES_HUGE);
	}
	for (int i = 0; i < 12; i++)
		ms_pages_free(b[i], MS_PAGES_HUGE);
	return NULL;
}

Test(common, page_blocks_faulted_ahead)
{
	long live = ms__alloc_live();
	pthread_t t;
	void *r1, *r2;

	for (int round = 0; round < 2; round++) {
		ms_pages_ahead_start(4);
		ms_pages_ahead_start(8); /* nested */
		cr_assert_eq(pthread_create(&t, NULL, take_huge_blocks, &live), 0);
		r1 = take_huge_blocks(&live);
		cr_assert_eq(pthread_join(t, &r2), 0);
		cr_assert_null(r1, "a block taken ahead was not zero, or none came");
		cr_assert_null(r2, "the other thread's block was not zero, or none came");
		ms_pages_ahead_stop();
		ms_pages_ahead_stop();
		ms_pages_ahead_stop(); /* one stop too many changes nothing */
		cr_assert_eq(ms__alloc_live(), live);
	}
}

Test(common, u64map_matches_a_plain_table)
{
	enum { N = 4096 };
	static uint64_t want[N];
	static int present[N];
	struct ms_u64map m = MS_U64MAP_INIT;
	uint64_t rs = 7;

	for (int step = 0; step < 200000; step++) {
		uint64_t r = th_rand(&rs);
		size_t k = r % N;
		uint64_t key = k * 0x10000ULL +
		               0x7f0000000000ULL; /* address-like keys collide in low bits */
		if (r & 0x100000) {
			if (r & 0x200000) {
				cr_assert_eq(ms_u64map_put(&m, key, r), MS_OK);
			} else { /* the same through swap, which says what was there */
				int had;
				uint64_t old = 0;
				cr_assert_eq(ms_u64map_swap(&m, key, r, &had, &old), MS_OK);
				cr_assert_eq(had, present[k]);
				if (had)
					cr_assert_eq(old, want[k]);
			}
			want[k] = r;
			present[k] = 1;
		} else {
			uint64_t v = 0;
			int had = ms_u64map_del(&m, key, &v);
			cr_assert_eq(had, present[k]);
			if (had)
				cr_assert_eq(v, want[k]);
			present[k] = 0;
		}
		if (step % 1000 == 0) {
			size_t n = 0;
			for (size_t i = 0; i < N; i++) {
				uint64_t *v = ms_u64map_get(&m, i * 0x10000ULL + 0x7f0000000000ULL);
				cr_assert_eq(v != NULL, present[i]);
				if (v)
					cr_assert_eq(*v, want[i]);
				n += present[i];
			}
			cr_assert_eq(m.n, n);
		}
	}
	ms_u64map_release(&m);
}

/* The reference vectors of the SipHash paper (Appendix A) and of its reference code. */
Test(common, siphash_matches_the_reference)
{
	unsigned char msg[15];

	for (int i = 0; i < 15; i++)
		msg[i] = (unsigned char)i;
	/* key 00 01 .. 0f */
	cr_assert_eq(ms__siphash(0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL, 2, 4, msg, 15),
	             0xa129ca6149be45e5ULL);
	cr_assert_eq(ms__siphash(0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL, 2, 4, msg, 0),
	             0x726fdb47dd0e0e31ULL);
	cr_assert_neq(ms_hash_seed(), 0);
	cr_assert_eq(ms_hash_seed(), ms_hash_seed());
}

/*
 * Keys made to collide (a file can hold them) still spread over the tables: strings built
 * for a word-at-a-time FNV-style hash (a flipped top bit in
 * one word and a fixed change in the next leave its state as it was, whatever the seed:
 * 2^13 strings with one hash, a 17 MB pickle of 2^16 of them took 11 s to read), and
 * addresses whose unkeyed mix agrees in its low 20 bits. Unkeyed, every key would sit in
 * one run of the table's slots; keyed, the longest run stays far below an eighth of them.
 */
Test(common, tables_spread_keys_made_to_collide)
{
	enum { BITS = 13, N = 1 << BITS };
	const uint64_t d = (1ULL << 63) | (1ULL << 34);
	struct ms_symtab t;
	struct ms_u64map m = MS_U64MAP_INIT;
	uint64_t pairs[BITS][2], rs = 11, c1 = 0xff51afd7ed558ccdULL, c2 = 0xc4ceb9fe1a85ec53ULL;
	uint64_t i1 = c1, i2 = c2;

	for (int j = 0; j < BITS; j++) {
		pairs[j][0] = th_rand(&rs) & ~(1ULL << 63);
		pairs[j][1] = th_rand(&rs);
	}
	cr_assert_eq(ms_symtab_init(&t), MS_OK);
	for (uint32_t s = 0; s < N; s++) {
		uint64_t w[2 * BITS];
		uint32_t id, again;
		for (int j = 0; j < BITS; j++) {
			int flip = (s >> j) & 1;
			w[2 * j] = pairs[j][0] ^ (flip ? 1ULL << 63 : 0);
			w[2 * j + 1] = pairs[j][1] ^ (flip ? d : 0);
		}
		cr_assert_eq(ms_symtab_str(&t, (const char *)w, sizeof(w), &id), MS_OK);
		cr_assert_eq(id, s + 1);
		cr_assert_eq(ms_symtab_str(&t, (const char *)w, sizeof(w), &again), MS_OK);
		cr_assert_eq(again, id);
	}
	cr_assert_lt(ms__idset_longest_run(&t.str_idx), N / 8, "longest run %zu of %zu slots",
	             ms__idset_longest_run(&t.str_idx), t.str_idx.cap);
	ms_symtab_release(&t);

	/* the inverse of the mix (MurmurHash3's fmix64): multiplications by the inverses */
	for (int k = 0; k < 5; k++)
		i1 *= 2 - c1 * i1, i2 *= 2 - c2 * i2;
	for (uint64_t k = 0; k < N; k++) {
		uint64_t x = k << 20;
		x ^= x >> 33, x *= i2, x ^= x >> 33, x *= i1, x ^= x >> 33;
		cr_assert_eq(ms_hash_u64(x) & 0xfffff, 0); /* unkeyed: one home for all */
		cr_assert_eq(ms_u64map_put(&m, x, k), MS_OK);
	}
	cr_assert_lt(ms__u64map_longest_run(&m), N / 8, "longest run %zu of %zu slots",
	             ms__u64map_longest_run(&m), m.cap);
	ms_u64map_release(&m);
}

Test(common, symtab_interns)
{
	struct ms_symtab t;
	uint32_t a, b, c, f1, f2, s1, s2, s3;
	struct ms_frame fr;
	uint32_t frames[2];
	size_t n;

	cr_assert_eq(ms_symtab_init(&t), MS_OK);
	cr_assert_eq(ms_symtab_str(&t, "", 0, &a), MS_OK);
	cr_assert_eq(a, 0);
	cr_assert_eq(ms_symtab_str(&t, "forward", 7, &a), MS_OK);
	cr_assert_eq(ms_symtab_str(&t, "model.py", 8, &b), MS_OK);
	cr_assert_eq(ms_symtab_str(&t, "forward", 7, &c), MS_OK);
	cr_assert_eq(a, c);
	cr_assert_neq(a, b);
	cr_assert_str_eq(ms_symtab_get_str(&t, b)->s, "model.py");
	fr = (struct ms_frame){a, b, 10};
	cr_assert_eq(ms_symtab_frame(&t, &fr, &f1), MS_OK);
	fr.line = 11;
	cr_assert_eq(ms_symtab_frame(&t, &fr, &f2), MS_OK);
	cr_assert_neq(f1, f2);
	frames[0] = f1;
	frames[1] = f2;
	cr_assert_eq(ms_symtab_stack(&t, frames, 2, &s1), MS_OK);
	cr_assert_eq(ms_symtab_stack(&t, frames, 1, &s2), MS_OK);
	cr_assert_eq(ms_symtab_stack(&t, frames, 2, &s3), MS_OK);
	cr_assert_eq(s1, s3);
	cr_assert_neq(s1, s2);
	cr_assert_eq(ms_symtab_get_stack(&t, s1, &n)[1], f2);
	cr_assert_eq(n, 2);
	/* many strings: ids stay dense and lookups stable across growth */
	for (int i = 0; i < 20000; i++) {
		char buf[32];
		uint32_t id, id2;
		snprintf(buf, sizeof(buf), "s%d", i);
		cr_assert_eq(ms_symtab_str(&t, buf, strlen(buf), &id), MS_OK);
		cr_assert_eq(ms_symtab_str(&t, buf, strlen(buf), &id2), MS_OK);
		cr_assert_eq(id, id2);
		cr_assert_eq(id, ms_symtab_nstrs(&t) - 1);
	}
	ms_symtab_release(&t);
}

/*
 * Stacks as the import interns them: runs of the same one, others of the same length or a
 * prefix in between. Each id is checked against a plain list of the stacks seen, in order
 * of first sight (ids are dense from 1): a shortcut for "same as the last one" that looked
 * only at the length or the first frames gives a wrong id here.
 */
Test(common, symtab_stacks_match_a_plain_list)
{
	enum { KINDS = 6, MAXN = 5, STEPS = 5000 };
	static const uint32_t kinds[KINDS][MAXN] = {
	        {1, 2, 3, 4, 5}, {1, 2, 3, 4, 6}, {1, 2, 3}, {7, 2, 3, 4, 5}, {1}, {5, 4, 3, 2, 1}};
	static const size_t len[KINDS] = {5, 5, 3, 5, 1, 5};
	int first_id[KINDS], seen = 0;
	struct ms_symtab t;
	uint64_t x = 88172645463325252ULL;

	for (int k = 0; k < KINDS; k++)
		first_id[k] = 0;
	cr_assert_eq(ms_symtab_init(&t), MS_OK);
	for (int i = 0, k = 0; i < STEPS; i++) {
		uint32_t id;
		size_t n;
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		if (x % 4 == 0) /* a run of the same stack three times in four */
			k = (int)((x >> 8) % KINDS);
		cr_assert_eq(ms_symtab_stack(&t, kinds[k], len[k], &id), MS_OK);
		if (!first_id[k])
			first_id[k] = ++seen;
		cr_assert_eq(id, (uint32_t)first_id[k], "step %d: stack %d got id %u, want %d", i,
		             k, id, first_id[k]);
		cr_assert_eq(memcmp(ms_symtab_get_stack(&t, id, &n), kinds[k], len[k] * 4), 0);
		cr_assert_eq(n, len[k]);
	}
	cr_assert_eq(seen, KINDS);
	ms_symtab_release(&t);
}

Test(common, arena_and_buf)
{
	struct ms_arena a = MS_ARENA_INIT;
	struct ms_buf b = MS_BUF_INIT;
	char *big;

	for (int i = 0; i < 1000; i++) {
		char *p = ms_arena_alloc(&a, (size_t)i * 7 + 1);
		cr_assert(p);
		cr_assert_eq(((uintptr_t)p) % 16, 0);
		memset(p, 1, (size_t)i * 7 + 1);
	}
	big = ms_arena_alloc(&a, 1 << 20);
	cr_assert(big);
	cr_assert_str_eq(ms_arena_strndup(&a, "abcdef", 3), "abc");
	ms_arena_release(&a);
	cr_assert_eq(ms_buf_printf(&b, "%d-%s", 42, "x"), MS_OK);
	cr_assert_eq(ms_buf_append(&b, "yz", 2), MS_OK);
	cr_assert_str_eq(b.data, "42-xyz");
	ms_buf_release(&b);
}

Test(common, names)
{
	cr_assert_str_eq(ms_action_name(MS_ACT_SEGMENT_UNMAP), "segment_unmap");
	cr_assert_eq(ms_action_parse("oom", 3), MS_ACT_OOM);
	cr_assert_eq(ms_action_parse("nope", 4), -1);
	cr_assert_null(ms_action_name(99));
	cr_assert_str_eq(ms_status_name(MS_ERR_TRUNCATED), "ERR_TRUNCATED");
	cr_assert_str_eq(ms_strerror(MS_ERR_UNSAFE), "refused to execute code in input");
}

/* The recorder's marks: empty_cache's phase, MemPools made with no_split=True or use_on_oom=True,
 * and use_mem_pool's phase, each with its pool's id. */
Test(common, annotation_calls)
{
	uint16_t code = 0, want = 0;

	cr_assert_eq(ms_ann_call_of(MS_ANN_PHASE, "torch.cuda.empty_cache"), MS_CALL_EMPTY_CACHE);
	cr_assert_eq(ms_ann_call_of(MS_ANN_PHASE, "torch.cuda.MemPool(no_split=True) (0, 3)"),
	             MS_CALL_MEMPOOL_NO_SPLIT);
	cr_assert_eq(ms_ann_pool_mark("torch.cuda.MemPool(no_split=True) (0, 3)", &code),
	             MS_CALL_MEMPOOL_NO_SPLIT);
	cr_assert_eq(ms_pool_code(0, 3, &want), 0);
	cr_assert_eq(code, want);
	cr_assert_eq(ms_ann_pool_mark("torch.cuda.MemPool(use_on_oom=True) (0, 1)", &code),
	             MS_CALL_MEMPOOL_USE_ON_OOM);
	cr_assert_eq(ms_pool_code(0, 1, &want), 0);
	cr_assert_eq(code, want);
	cr_assert_eq(ms_ann_call_of(MS_ANN_PHASE, "torch.cuda.use_mem_pool (0, 2)"),
	             MS_CALL_USE_MEM_POOL);
	cr_assert_eq(ms_ann_pool_mark("torch.cuda.use_mem_pool (0, 2)", &code),
	             MS_CALL_USE_MEM_POOL);
	cr_assert_eq(ms_pool_code(0, 2, &want), 0);
	cr_assert_eq(code, want);
	/* anything else is no mark: another id form, trailing text, both halves, a step */
	cr_assert_eq(ms_ann_pool_mark("torch.cuda.MemPool(no_split=True) (0, 3) x", &code),
	             MS_CALL_NONE);
	cr_assert_eq(ms_ann_pool_mark("torch.cuda.MemPool(no_split=True) 3", &code), MS_CALL_NONE);
	cr_assert_eq(ms_ann_pool_mark("torch.cuda.MemPool(no_split=True) (2, 3)", &code),
	             MS_CALL_NONE);
	cr_assert_eq(ms_ann_pool_mark("torch.cuda.use_mem_pool", &code), MS_CALL_NONE);
	cr_assert_eq(ms_ann_call_of(MS_ANN_STEP, "torch.cuda.MemPool(no_split=True) (0, 3)"),
	             MS_CALL_NONE);
	cr_assert_eq(ms_ann_call_of(MS_ANN_PHASE, "forward"), MS_CALL_NONE);
	cr_assert_eq(ms_ann_call_of(MS_ANN_PHASE, "torch.cuda.CUDAGraph capture"),
	             MS_CALL_GRAPH_CAPTURE);
	cr_assert_eq(ms_ann_call_of(MS_ANN_STEP, "torch.cuda.CUDAGraph capture"), MS_CALL_NONE);
	/* set_per_process_memory_fraction's limit, in bytes */
	{
		uint64_t bytes = 0;
		cr_assert_eq(
		        ms_ann_call_of(MS_ANN_PHASE,
		                       "torch.cuda.set_per_process_memory_fraction 2147483647"),
		        MS_CALL_MEMORY_FRACTION);
		cr_assert_eq(
		        ms_ann_limit_mark("torch.cuda.set_per_process_memory_fraction 2147483647",
		                          &bytes),
		        0);
		cr_assert_eq(bytes, 2147483647ull);
		cr_assert_eq(
		        ms_ann_limit_mark("torch.cuda.set_per_process_memory_fraction 0.5", &bytes),
		        -1);
		cr_assert_eq(
		        ms_ann_limit_mark("torch.cuda.set_per_process_memory_fraction -1", &bytes),
		        -1);
		cr_assert_eq(
		        ms_ann_limit_mark("torch.cuda.set_per_process_memory_fraction ", &bytes),
		        -1);
	}
	/* cudaMemGetInfo's free and total bytes */
	{
		uint64_t f = 0, t = 0;
		cr_assert_eq(ms_ann_call_of(MS_ANN_PHASE, "cudaMemGetInfo 1000 150109880320"),
		             MS_CALL_DEVICE_MEMORY);
		cr_assert_eq(ms_ann_device_memory_mark("cudaMemGetInfo 1000 150109880320", &f, &t),
		             0);
		cr_assert_eq(f, 1000ull);
		cr_assert_eq(t, 150109880320ull);
		/* free above total, a sign, one number, extra text, two spaces: not a mark */
		cr_assert_eq(ms_ann_device_memory_mark("cudaMemGetInfo 2000 1000", &f, &t), -1);
		cr_assert_eq(ms_ann_device_memory_mark("cudaMemGetInfo 10 -1", &f, &t), -1);
		cr_assert_eq(ms_ann_device_memory_mark("cudaMemGetInfo 10", &f, &t), -1);
		cr_assert_eq(ms_ann_device_memory_mark("cudaMemGetInfo 10 20 x", &f, &t), -1);
		cr_assert_eq(ms_ann_device_memory_mark("cudaMemGetInfo 10  20", &f, &t), -1);
		cr_assert_eq(ms_ann_call_of(MS_ANN_STEP, "cudaMemGetInfo 10 20"), MS_CALL_NONE);
	}
}

/* The size grammar: every spelling a user types, with values worked out by hand. */
Test(common, sizes_as_people_write_them)
{
	static const struct {
		const char *s;
		uint64_t want;
	} ok[] = {
	        {"13061062656", 13061062656ull},
	        {"10GB", 10000000000ull},
	        {"10gb", 10000000000ull},
	        {"10G", 10737418240ull},
	        {"10g", 10737418240ull},
	        {"10GiB", 10737418240ull},
	        {"10 GiB", 10737418240ull},
	        {"10gib", 10737418240ull},
	        {"512MB", 512000000ull},
	        {"512MiB", 536870912ull},
	        {"512m", 536870912ull},
	        {"1.5GiB", 1610612736ull},
	        {"11.81 GiB", 12680890941ull}, /* 11.81 * 2^30 = 12680890941.44 */
	        {"0.5KiB", 512},
	        {"1.0005KB", 1001}, /* 1000.5 rounds up */
	        {"2TB", 2000000000000ull},
	        {"1T", 1099511627776ull},
	        {"100B", 100},
	        {"100 b", 100},
	        {"7", 7},
	        {"3.0", 3}, /* a whole number of bytes written with a point */
	};
	static const char *const bad[] = {
	        "",
	        "GiB",
	        "12.5",
	        "0x10",
	        "1e3",
	        "-5",
	        "5 GB extra",
	        "10 GiBs",
	        "1.2.3G",
	        "1.1234567G",
	        "99999999999999999999",
	        "20000000TiB",
	        "nan",
	        "inf",
	        "12 XB",
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		uint64_t v = 0;
		const char *why = ms_size_parse(ok[i].s, &v);
		cr_expect(why == NULL, "'%s': %s", ok[i].s, why ? why : "");
		cr_expect_eq(v, ok[i].want, "'%s': %llu, want %llu", ok[i].s, (unsigned long long)v,
		             (unsigned long long)ok[i].want);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t v = 0;
		cr_expect(ms_size_parse(bad[i], &v) != NULL, "'%s' read as %llu", bad[i],
		          (unsigned long long)v);
	}
}
