/*
 * The allocator model: each rule of torch-allocator.md with the examples observed on PyTorch
 * 2.11 (§1.2, §1.3, §1.6, §2.3, §3.5), and the real traces against PyTorch's own numbers
 * (*.truth.json), never against the model's earlier output.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "analysis/outside.h"
#include "analysis/trace_stats.h"
#include "helpers.h"
#include "parse/trace.h"
#include "replay/rebuild.h"
#include "replay/replay.h"
#include "replay/run.h"

#define MiB (1024ull * 1024ull)

static struct ms_model *model(const char *conf, uint64_t limit, struct th_segs *segs)
{
	struct ms_model_conf c;
	struct ms_model *m;
	struct ms_diag d = MS_DIAG_INIT;

	memset(&c, 0, sizeof(c));
	ms_alloc_conf_init(&c.ac);
	if (conf)
		cr_assert_eq(ms_alloc_conf_parse(&c.ac, conf, &d), MS_OK, "%s", d.msg);
	c.limit = limit;
	c.device_memory = 0;
	c.on_segment = segs ? th_on_seg : NULL;
	c.ctx = segs;
	cr_assert_eq(ms_model_new(&c, &m), MS_OK);
	return m;
}

Test(model, round_size_default_and_power2_divisions)
{
	struct ms_model *m = model(NULL, 0, NULL);
	cr_assert_eq(ms_model_round_size(m, 1), 512);
	cr_assert_eq(ms_model_round_size(m, 513), 1024);
	cr_assert_eq(ms_model_round_size(m, 1048577), 1049088);
	ms_model_free(m);

	/* §1.2, observed with roundup_power2_divisions:4 */
	m = model("roundup_power2_divisions:4", 0, NULL);
	static const uint64_t in[] = {1200,    2048,    2049,    5000,    70000,
	                              1048577, 1500000, 3000000, 12000000};
	static const uint64_t out[] = {1536,    2048,    2560,    5120,    81920,
	                               1310720, 1572864, 3145728, 12582912};
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		cr_assert_eq(ms_model_round_size(m, in[i]), out[i], "%llu",
		             (unsigned long long)in[i]);
	ms_model_free(m);

	/* §1.3, observed with [1:1,2:2,4:4,>:8] */
	m = model("roundup_power2_divisions:[1:1,2:2,4:4,>:8]", 0, NULL);
	cr_assert_eq(ms_model_round_size(m, 1500000), 1500160);
	cr_assert_eq(ms_model_round_size(m, 3 * MiB + 1), 4 * MiB);
	cr_assert_eq(ms_model_round_size(m, 5 * MiB + 1), 6 * MiB);
	cr_assert_eq(ms_model_round_size(m, 9 * MiB + 1), 10 * MiB);
	cr_assert_eq(ms_model_round_size(m, 17 * MiB + 1), 18 * MiB);
	cr_assert_eq(ms_model_round_size(m, 33 * MiB + 1), 36 * MiB);
	ms_model_free(m);
}

Test(model, alloc_conf_grammar)
{
	struct ms_alloc_conf c;
	struct ms_diag d = MS_DIAG_INIT;

	ms_alloc_conf_init(&c);
	cr_assert_eq(
	        ms_alloc_conf_parse(&c, "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", &d),
	        MS_OK);
	/* §1.3: key K covers [K, 2K) MiB; the first value fills below; > fills after */
	cr_assert_eq(c.roundup_power2_divisions[0], 1);
	cr_assert_eq(c.roundup_power2_divisions[8], 1);
	cr_assert_eq(c.roundup_power2_divisions[9], 2);
	cr_assert_eq(c.roundup_power2_divisions[10], 4);
	cr_assert_eq(c.roundup_power2_divisions[11], 8);
	cr_assert_eq(c.roundup_power2_divisions[15], 8);
	cr_assert_eq(
	        ms_alloc_conf_parse(&c, " expandable_segments : True , max_split_size_mb:128", &d),
	        MS_OK);
	cr_assert_eq(c.expandable_segments, 1);
	cr_assert_eq(c.max_split_size, 128 * MiB);
	cr_assert_eq(c.roundup_power2_divisions[11], 0); /* reset by the new parse */
	cr_assert_eq(ms_alloc_conf_parse(&c, "garbage_collection_threshold:0.6", &d), MS_OK);
	cr_assert_eq(c.max_split_size, UINT64_MAX); /* reset too */
	cr_assert_eq(c.expandable_segments, 1);     /* kept */
	cr_assert_eq(ms_alloc_conf_parse(&c, "bogus:1", &d), MS_ERR_INVALID_ARG);
	cr_assert(strstr(d.msg, "Unrecognized key 'bogus'"), "%s", d.msg);
	cr_assert_eq(ms_alloc_conf_parse(&c, "expandable_segments:true", &d), MS_ERR_INVALID_ARG);
	cr_assert_eq(ms_alloc_conf_parse(&c, "max_split_size_mb:10", &d), MS_ERR_INVALID_ARG);
	cr_assert_eq(ms_alloc_conf_parse(&c, "garbage_collection_threshold:1.5", &d),
	             MS_ERR_INVALID_ARG);
	cr_assert_eq(ms_alloc_conf_parse(&c, "roundup_power2_divisions:3", &d), MS_ERR_INVALID_ARG);
}

/*
 * §1.6: placement of a sequence of requests on an empty allocator, default settings. The
 * spec's table omits one request that its own §7 statistics imply: allocated and requested
 * bytes exceed the table's sums by 10490368 and 10490367, i.e. a 10490367-byte request. Placed
 * before the 10 MiB request, it takes the 14 MiB free tail of the 20 MiB segment, which is why
 * the 10 MiB request then needs a segment of its own (docs/torch-allocator.md §1.6).
 */
Test(model, placement_table)
{
	struct th_segs s = {{0}, {0}, 0};
	struct ms_model *m = model(NULL, 0, &s);
	static const struct {
		uint64_t req, block, new_seg;
	} t[] = {
	        {1, 512, 2 * MiB},
	        {513, 1024, 0},
	        {1048576, 1048576, 0},
	        {1048577, 1049088, 20 * MiB},
	        {5242880, 5242880, 0},
	        {10490367, 10490368, 0}, /* the row the table omits */
	        {10485760, 10485760, 10 * MiB},
	        {10485761, 10486272, 12 * MiB},
	        {26214403, 27262976,
	         26 * MiB}, /* remainder 1 MiB - 512 is not > 1 MiB: not split */
	        {104857607, 104858112, 102 * MiB},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct ms_model_block *b;
		int before = s.n;
		cr_assert_eq(ms_model_malloc(m, t[i].req, 0, &b, NULL), MS_OK);
		cr_assert(b);
		cr_assert_eq(ms_model_block_size(b), t[i].block, "request %llu",
		             (unsigned long long)t[i].req);
		if (t[i].new_seg) {
			cr_assert_eq(s.n, before + 1, "request %llu: a new segment",
			             (unsigned long long)t[i].req);
			cr_assert_eq(s.size[before], t[i].new_seg);
		} else {
			cr_assert_eq(s.n, before, "request %llu: no new segment",
			             (unsigned long long)t[i].req);
		}
	}
	/* §7: the same sequence's statistics on PyTorch 2.11 */
	cr_assert_eq(ms_model_stats(m)->allocated_bytes[0].current, 170925568);
	cr_assert_eq(ms_model_stats(m)->requested_bytes[0].current, 169874445);
	cr_assert_eq(ms_model_stats(m)->segment[0].current, 6);
	cr_assert_eq(ms_model_stats(m)->reserved_bytes[0].current, 180355072);
	ms_model_free(m);
}

/* §2.6: a free block is reused only by its own stream. */
Test(model, streams_do_not_share_free_blocks)
{
	struct th_segs s = {{0}, {0}, 0};
	struct ms_model *m = model(NULL, 0, &s);
	struct ms_model_block *a, *b, *c;

	cr_assert_eq(ms_model_malloc(m, 4 * MiB, 0, &a, NULL), MS_OK);
	ms_model_free_requested(m, a);
	cr_assert_eq(ms_model_free_completed(m, a), MS_OK);
	cr_assert_eq(ms_model_malloc(m, 4 * MiB, 7, &b, NULL),
	             MS_OK); /* side stream: new segment */
	cr_assert_eq(s.n, 2);
	cr_assert_eq(ms_model_malloc(m, 4 * MiB, 0, &c, NULL), MS_OK); /* default stream: reused */
	cr_assert_eq(s.n, 2);
	ms_model_free(m);
}

/* §2.5/§7: a pending free keeps the block active and unusable; allocated drops at the request. */
Test(model, pending_free)
{
	struct ms_model *m = model(NULL, 0, NULL);
	struct ms_model_block *a, *b;

	cr_assert_eq(ms_model_malloc(m, 4 * MiB, 0, &a, NULL), MS_OK);
	ms_model_free_requested(m, a);
	cr_assert_eq(ms_model_stats(m)->allocated_bytes[0].current, 0);
	cr_assert_eq(ms_model_stats(m)->active_bytes[0].current, 4 * MiB);
	cr_assert_eq(ms_model_malloc(m, 16 * MiB, 0, &b, NULL),
	             MS_OK); /* the 16 MiB tail of the segment */
	cr_assert_eq(ms_model_block_addr(b), ms_model_block_addr(a) + 4 * MiB);
	cr_assert_eq(ms_model_free_completed(m, a), MS_OK);
	cr_assert_eq(ms_model_stats(m)->active_bytes[0].current, 16 * MiB);
	cr_assert_eq(ms_model_stats(m)->requested_bytes[0].current, 16 * MiB);
	ms_model_free(m);
}

/* §3.1/§3.4/§3.5: under a limit, the retry frees whole cached segments; split ones stay. */
Test(model, limit_retry_and_oom)
{
	struct th_segs s = {{0}, {0}, 0};
	struct ms_model *m = model(NULL, 60 * MiB, &s);
	struct ms_model_block *a, *b, *c, *x;
	struct ms_model_oom o;

	cr_assert_eq(ms_model_malloc(m, 20 * MiB, 0, &a, NULL), MS_OK); /* own 20 MiB segment */
	cr_assert_eq(ms_model_malloc(m, 3 * MiB, 0, &b, NULL), MS_OK);  /* 20 MiB segment, split */
	cr_assert_eq(ms_model_malloc(m, 18 * MiB, 0, &c, NULL), MS_OK); /* 18 MiB segment */
	ms_model_free_requested(m, a);
	cr_assert_eq(ms_model_free_completed(m, a), MS_OK);
	/* 58 MiB reserved: 30 MiB more only fits after the cached 20 MiB segment goes */
	cr_assert_eq(ms_model_malloc(m, 22 * MiB, 0, &x, NULL), MS_OK);
	cr_assert(x);
	cr_assert_eq(ms_model_stats(m)->num_alloc_retries, 1);
	cr_assert_eq(s.action[3], MS_ACT_SEGMENT_FREE);
	cr_assert_eq(s.size[3], 20 * MiB);
	/* nothing left to free: an OOM, with PyTorch's numbers */
	cr_assert_eq(ms_model_malloc(m, 30 * MiB, 0, &x, &o), MS_OK);
	cr_assert_null(x);
	cr_assert_eq(o.alloc_size, 30 * MiB);
	cr_assert_eq(o.reserved, 60 * MiB);
	cr_assert_eq(ms_model_stats(m)->num_ooms, 1);
	cr_assert_eq(ms_model_stats(m)->num_alloc_retries, 2);
	ms_model_free(m);
}

/* §2.2/§2.3: with max_split_size, small requests never take oversize blocks, which are never split.
 */
Test(model, max_split_size)
{
	struct th_segs s = {{0}, {0}, 0};
	struct ms_model *m = model("max_split_size_mb:64", 0, &s);
	struct ms_model_block *a, *b, *c;

	cr_assert_eq(ms_model_malloc(m, 100 * MiB, 0, &a, NULL), MS_OK);
	ms_model_free_requested(m, a);
	cr_assert_eq(ms_model_free_completed(m, a), MS_OK);
	cr_assert_eq(ms_model_malloc(m, 30 * MiB, 0, &b, NULL),
	             MS_OK); /* not from the 100 MiB block */
	cr_assert_eq(s.n, 2);
	cr_assert_eq(ms_model_malloc(m, 90 * MiB, 0, &c, NULL),
	             MS_OK); /* whole, 10 MiB < 20 MiB waste */
	cr_assert_eq(s.n, 2);
	cr_assert_eq(ms_model_block_size(c), 100 * MiB);
	cr_assert_eq(ms_model_stats(m)->oversize_allocations.current, 1);
	ms_model_free(m);
}

/* §4, observed on PyTorch 2.11: one stream, requests 3 MiB, 30 MiB, 1 MiB+1, 100 MiB+3. */
Test(model, expandable_segments)
{
	struct th_segs s = {{0}, {0}, 0};
	struct ms_model *m = model("expandable_segments:True", 0, &s);
	struct ms_model_block *a, *b, *c, *d;
	uint64_t base;

	cr_assert_eq(ms_model_malloc(m, 3 * MiB, 0, &a, NULL), MS_OK);
	base = ms_model_block_addr(a);
	cr_assert_eq(s.n, 1);
	cr_assert_eq(s.action[0], MS_ACT_SEGMENT_MAP);
	cr_assert_eq(s.size[0], 20 * MiB);
	cr_assert_eq(ms_model_malloc(m, 30 * MiB, 0, &b, NULL), MS_OK);
	cr_assert_eq(s.n, 2);
	cr_assert_eq(s.size[1], 20 * MiB);
	cr_assert_eq(ms_model_block_addr(b), base + 3 * MiB);
	cr_assert_eq(ms_model_malloc(m, MiB + 1, 0, &c, NULL), MS_OK);
	cr_assert_eq(ms_model_block_addr(c), base + 33 * MiB);
	cr_assert_eq(ms_model_malloc(m, 100 * MiB + 3, 0, &d, NULL), MS_OK);
	cr_assert_eq(s.n, 3);
	cr_assert_eq(s.size[2], 100 * MiB);
	cr_assert_eq(ms_model_block_addr(d), base + 34 * MiB + 512); /* merged with the free tail */
	cr_assert_eq(ms_model_stats(m)->reserved_bytes[0].current, 140 * MiB);
	cr_assert_eq(ms_model_stats(m)->segment[0].current, 0); /* mappings are no segments */
	/* the 30 MiB block spans [3, 33) MiB: no 20 MiB page lies inside it, nothing is unmapped */
	ms_model_free_requested(m, b);
	cr_assert_eq(ms_model_free_completed(m, b), MS_OK);
	ms_model_empty_cache(m);
	cr_assert_eq(s.n, 3);
	/* everything freed: all of it is unmapped */
	ms_model_free_requested(m, a);
	cr_assert_eq(ms_model_free_completed(m, a), MS_OK);
	ms_model_free_requested(m, c);
	cr_assert_eq(ms_model_free_completed(m, c), MS_OK);
	ms_model_free_requested(m, d);
	cr_assert_eq(ms_model_free_completed(m, d), MS_OK);
	ms_model_empty_cache(m);
	cr_assert_eq(s.action[s.n - 1], MS_ACT_SEGMENT_UNMAP);
	cr_assert_eq(ms_model_stats(m)->reserved_bytes[0].current, 0);
	ms_model_free(m);
}

Test(model, oom_message_format)
{
	struct ms_replay_result r;
	char msg[1024];

	memset(&r, 0, sizeof(r));
	r.device_memory = 150109880320ull;
	r.limit = 13061062656ull;
	r.first_oom.o.alloc_size = 3145728000ull;
	r.first_oom.o.reserved = 11104419840ull;
	r.first_oom.o.allocated = 9683379200ull;
	ms_replay_oom_message(&r, msg, sizeof(msg));
	cr_assert(strstr(msg, "CUDA out of memory. Tried to allocate 2.93 GiB. GPU 0 has a total "
	                      "capacity of 139.80 GiB"),
	          "%s", msg);
	cr_assert(strstr(msg, "12.16 GiB allowed; Of the allocated memory 9.02 GiB is allocated by "
	                      "PyTorch, and 1.32 GiB is reserved by PyTorch but unallocated."),
	          "%s", msg);
}

/* The real traces: the replay's peaks and counters equal what PyTorch reported. */
static uint64_t tnum(const cJSON *t, const char *k)
{
	const cJSON *v =
	        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "stats"), k);
	cr_assert(cJSON_IsNumber(v), "%s", k);
	return (uint64_t)v->valuedouble;
}

static void check_trace(const char *name)
{
	const char *path = th_snapshot_path(name);
	cJSON *t, *v;
	struct ms_replay_opts o;
	struct ms_replay_result r;
	struct ms_diag d = MS_DIAG_INIT;
	size_t i;

	cr_assert(path, "%s: not in testdata/snapshots (bundled data is never skipped)", name);
	t = th_truth(name);
	cr_assert(t);
	memset(&o, 0, sizeof(o));
	v = cJSON_GetObjectItemCaseSensitive(t, "limit_bytes");
	if (cJSON_IsNumber(v))
		o.limit = (uint64_t)v->valuedouble;
	cr_assert_eq(ms_replay_run(path, &o, &r, &d), MS_OK, "%s", d.msg);
	cr_assert_eq(r.ended_by_oom, 0);
	cr_assert_eq((uint64_t)r.stats.reserved_bytes[0].peak, tnum(t, "reserved_bytes.all.peak"));
	cr_assert_eq((uint64_t)r.stats.allocated_bytes[0].peak,
	             tnum(t, "allocated_bytes.all.peak"));
	cr_assert_eq((uint64_t)r.stats.requested_bytes[0].peak,
	             tnum(t, "requested_bytes.all.peak"));
	cr_assert_eq((uint64_t)r.stats.reserved_bytes[0].current,
	             tnum(t, "reserved_bytes.all.current"));
	cr_assert_eq((uint64_t)r.stats.allocated_bytes[0].current,
	             tnum(t, "allocated_bytes.all.current"));
	cr_assert_eq((uint64_t)r.stats.segment[0].peak, tnum(t, "segment.all.peak"));
	cr_assert_eq((uint64_t)r.stats.segment[0].current, tnum(t, "segment.all.current"));
	cr_assert_eq((uint64_t)r.stats.inactive_split_bytes[0].current,
	             tnum(t, "inactive_split_bytes.all.current"));
	cr_assert_eq(r.stats.num_alloc_retries, tnum(t, "num_alloc_retries"));
	cr_assert_eq(r.stats.num_ooms, tnum(t, "num_ooms"));
	cr_assert_eq(r.stats.num_device_alloc, tnum(t, "num_device_alloc"));
	cr_assert_eq(r.stats.num_device_free, tnum(t, "num_device_free"));
	cr_assert_eq(r.stats.num_sync_all_streams, tnum(t, "num_sync_all_streams"));
	/* the segment events equal the recorded ones, in order */
	cr_assert_eq(r.n_produced, r.n_recorded);
	for (i = 0; i < r.n_produced; i++)
		cr_assert(r.produced[i].action == r.recorded[i].action &&
		                  r.produced[i].size == r.recorded[i].size,
		          "%s: segment event %zu differs", name, i);
	v = cJSON_GetObjectItemCaseSensitive(t, "oom_entry_index");
	if (cJSON_IsNumber(v)) {
		char msg[1024];
		const char *want = cJSON_GetObjectItemCaseSensitive(t, "oom")->valuestring;
		cr_assert(r.has_oom);
		cr_assert_eq(r.first_oom.index, (uint64_t)v->valuedouble);
		cr_assert(r.first_oom.recorded);
		ms_replay_oom_message(&r, msg, sizeof(msg));
		/* PyTorch's text from "Tried to allocate" to the total, and from "allowed;" on */
		cr_assert(strncmp(strstr(msg, "Tried to allocate"),
		                  strstr(want, "Tried to allocate"), 30) == 0,
		          "%s", msg);
		cr_assert(strstr(want, strstr(msg, "allowed; Of the allocated memory")), "%s\n%s",
		          msg, want);
	}
	ms_replay_result_release(&r);
	cJSON_Delete(t);
}

Test(replay, gpt_train)
{
	check_trace("gpt_train");
}
Test(replay, resnet50)
{
	check_trace("resnet50");
}
Test(replay, multistream)
{
	check_trace("multistream");
}
Test(replay, dynamic_oom)
{
	check_trace("dynamic_oom");
}
Test(replay, dynamic_seq)
{
	check_trace("dynamic_seq");
}
Test(replay, dynamic_empty_cache)
{
	check_trace("dynamic_empty_cache");
}
Test(replay, dynamic_expandable)
{
	check_trace("dynamic_expandable");
}

/* A peak gate that counts the highs it is asked about and takes every one. */
static int take_every_high(void *ctx, uint64_t index)
{
	(void)index;
	(*(unsigned *)ctx)++;
	return 1;
}

/*
 * The state a peak gate takes at the run's peak is the one more_snaps takes at that event in
 * another replay: the same segments and blocks, byte for byte, on real traces.
 */
Test(replay, peak_gate_takes_the_state_more_snaps_takes)
{
	const char *names[] = {"gpt_train", "dynamic_seq", "multistream"};

	for (size_t k = 0; k < 3; k++) {
		struct ms_trace *t;
		struct ms_replay_opts o;
		struct ms_replay_result a, b;
		struct ms_diag d = MS_DIAG_INIT;
		unsigned asked = 0;
		uint64_t at;
		cr_assert_eq(ms_trace_load(th_snapshot_path(names[k]), NULL, &t, NULL, &d), MS_OK);
		memset(&o, 0, sizeof(o));
		o.peak_gate = take_every_high;
		o.peak_gate_ctx = &asked;
		cr_assert_eq(ms_replay_trace(t, &o, &a, &d), MS_OK, "%s", d.msg);
		cr_assert_gt(asked, 1, "%s", names[k]);
		cr_assert(a.peak_snap.taken, "%s", names[k]);
		cr_assert_eq(a.peak_snap.index, a.peak_allocated_index, "%s", names[k]);
		at = a.peak_allocated_index;
		memset(&o, 0, sizeof(o));
		o.more_snaps = &at;
		o.n_more_snaps = 1;
		cr_assert_eq(ms_replay_trace(t, &o, &b, &d), MS_OK, "%s", d.msg);
		cr_assert_eq(b.n_snaps, 1);
		cr_assert_eq(a.peak_snap.n_segs, b.snaps[0].n_segs, "%s", names[k]);
		cr_assert_eq(a.peak_snap.n_blocks, b.snaps[0].n_blocks, "%s", names[k]);
		for (size_t i = 0; i < a.peak_snap.n_segs; i++) {
			const struct ms_segment *x = &a.peak_snap.segs[i], *y = &b.snaps[0].segs[i];
			cr_assert(x->addr == y->addr && x->total_size == y->total_size &&
			                  x->allocated_size == y->allocated_size &&
			                  x->active_size == y->active_size &&
			                  x->requested_size == y->requested_size &&
			                  x->stream == y->stream && x->n_blocks == y->n_blocks &&
			                  x->is_small == y->is_small,
			          "%s: segment %zu", names[k], i);
		}
		for (size_t i = 0; i < a.peak_snap.n_blocks; i++) {
			const struct ms_block *x = &a.peak_snap.blocks[i],
			                      *y = &b.snaps[0].blocks[i];
			cr_assert(x->addr == y->addr && x->size == y->size &&
			                  x->requested_size == y->requested_size &&
			                  x->stack == y->stack && x->state == y->state,
			          "%s: block %zu", names[k], i);
		}
		cr_assert_eq(a.peak_snap.stats.allocated_bytes[0].current,
		             b.snaps[0].stats.allocated_bytes[0].current);
		ms_replay_result_release(&a);
		ms_replay_result_release(&b);
		ms_trace_free(t);
	}
}

/* A recorded OOM with room on the device: the limit it ran under is inferred, as a range. */
Test(replay, infers_the_limit_of_dynamic_oom)
{
	const char *path = th_snapshot_path("dynamic_oom");
	struct ms_trace *t;
	struct ms_replay_opts o;
	struct ms_diag d = MS_DIAG_INIT;
	uint64_t lo, hi, truth_limit = 13061062656ull; /* dynamic_oom.truth.json: limit_bytes */

	cr_assert(path);
	cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK);
	memset(&o, 0, sizeof(o));
	cr_assert_eq(ms_replay_infer_limit(t, &o, &lo, &hi, &d), MS_OK, "%s", d.msg);
	cr_assert(lo <= truth_limit && truth_limit <= hi, "[%llu, %llu]", (unsigned long long)lo,
	          (unsigned long long)hi);
	cr_assert_lt(lo, hi);
	ms_trace_free(t);
}

/* The request's decisions come back as data: the inferred limit, its note, the options. */
Test(replay, request_infers_the_limit_as_a_note)
{
	struct ms_replay_request q;
	struct ms_replay_outcome out;
	struct ms_replay_result r;
	struct ms_diag d = MS_DIAG_INIT;

	memset(&q, 0, sizeof(q));
	q.path = th_snapshot_path("dynamic_oom");
	cr_assert(q.path);
	cr_assert_eq(ms_replay_request_run(&q, &out, &r, &d), MS_OK, "%s", d.msg);
	cr_assert(out.lim.inferred);
	cr_assert_eq(out.o.limit, out.lim.used);
	cr_assert(out.lim.lo <= out.lim.used && out.lim.used <= out.lim.hi);
	cr_assert(r.limit_inferred);
	cr_assert_eq(r.limit, out.lim.used);
	cr_assert_eq(out.n_notes, 1);
	cr_assert_eq(out.notes[0].kind, MS_REPLAY_NOTE_LIMIT_INFERRED);
	cr_assert_eq(out.notes[0].n, r.recorded_ooms);
	cr_assert_eq(out.notes[0].lim.used, out.lim.used);
	cr_assert_null(out.init);
	ms_replay_result_release(&r);
	ms_replay_outcome_release(&out);
}

/* A request to replay the real trace whose history was turned on late (it starts mid-run). */
static void late_history_request(struct ms_replay_request *q, char *path, size_t cap)
{
	snprintf(path, cap, "%s/snapshots/real/late_history.pickle.zst", MS_TESTDATA);
	memset(q, 0, sizeof(*q));
	q->path = path;
}

/* A trace that starts mid-run: replayed from its rebuilt state, which the options carry on. */
Test(replay, request_rebuilds_a_mid_run_trace)
{
	char path[4096];
	struct ms_replay_request q;
	struct ms_replay_outcome out;
	struct ms_replay_result r;
	struct ms_diag d = MS_DIAG_INIT;

	late_history_request(&q, path, sizeof(path));
	cr_assert_eq(ms_replay_request_run(&q, &out, &r, &d), MS_OK, "%s", d.msg);
	cr_assert(r.rebuilt);
	cr_assert_not_null(out.init);
	cr_assert_eq(out.o.init, out.init);
	cr_assert_eq(out.n_notes, 1);
	cr_assert_eq(out.notes[0].kind, MS_REPLAY_NOTE_REBUILT);
	cr_assert_eq(out.notes[0].segments, out.init->n_segs);
	cr_assert_eq(out.notes[0].blocks, out.init->live_blocks);
	ms_replay_result_release(&r);
	ms_replay_outcome_release(&out);
	cr_assert_null(out.init);
}

/* A GPU backend refuses a mid-run trace after the model's replay, whose note stays. */
Test(replay, request_refuses_a_mid_run_trace_on_a_gpu)
{
	char path[4096];
	struct ms_replay_request q;
	struct ms_replay_outcome out;
	struct ms_replay_result r;
	struct ms_diag d = MS_DIAG_INIT;

	late_history_request(&q, path, sizeof(path));
	q.backend = MS_REPLAY_TORCH;
	cr_assert_eq(ms_replay_request_run(&q, &out, &r, &d), MS_ERR_UNSUPPORTED);
	cr_assert(strstr(d.msg, "starts mid-run"), "%s", d.msg);
	cr_assert_eq(out.n_notes, 1);
	cr_assert_eq(out.notes[0].kind, MS_REPLAY_NOTE_REBUILT);
	cr_assert(out.model.rebuilt);
	cr_assert_null(out.init);
	cr_assert_null(out.o.init);
	ms_replay_outcome_release(&out);
}

/* Annotation peaks (diff): requested bytes at their highest while each one is innermost. */
Test(stats, annotation_peaks)
{
	struct ms_stats_builder *b;
	struct ms_sink k;
	const struct ms_trace_stats *r;
	struct ms_event e;
	struct ms_annotation a;

	cr_assert_eq(ms_stats_builder_new(5, &b), MS_OK);
	ms_stats_builder_sink(b, &k);
	memset(&e, 0, sizeof(e));
	memset(&a, 0, sizeof(a));
	e.action = MS_ACT_ALLOC, e.addr = 0x1000, e.size = 100;
	cr_assert_eq(k.event(k.ctx, &e), MS_OK);
	a.stage = MS_ANN_START, a.name = 7;
	cr_assert_eq(k.annotation(k.ctx, &a), MS_OK);
	e.addr = 0x2000, e.size = 50;
	cr_assert_eq(k.event(k.ctx, &e), MS_OK);
	e.action = MS_ACT_FREE_COMPLETED, e.addr = 0x1000, e.size = 100;
	cr_assert_eq(k.event(k.ctx, &e), MS_OK);
	a.stage = MS_ANN_END;
	cr_assert_eq(k.annotation(k.ctx, &a), MS_OK);
	e.action = MS_ACT_ALLOC, e.addr = 0x3000, e.size = 500;
	cr_assert_eq(k.event(k.ctx, &e), MS_OK);
	r = ms_stats_builder_result(b);
	cr_assert_eq(r->n_anns, 1);
	cr_assert_eq(r->anns[0].name, 7);
	cr_assert_eq(r->anns[0].peak_requested, 150);
	cr_assert_eq(r->anns[0].allocs, 1);
	cr_assert_eq(r->anns[0].alloc_bytes, 50);
	cr_assert_eq(r->peak_requested, 550);
	ms_stats_builder_free(b);
}

/*
 * A trace that starts mid-run (the window from event 20000 of dynamic_empty_cache, with its
 * end-state segments): the state at its first event is rebuilt by undoing the events, and the
 * replay from there makes exactly the recorded segment events and ends with PyTorch's reserved
 * and allocated bytes.
 */
static void check_mid_run(const char *name, uint64_t from)
{
	const char *path = th_snapshot_path(name);
	struct ms_trace *t;
	struct ms_read_opts win = {from, UINT64_MAX};
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_model_conf mc;
	struct ms_model *m;
	struct ms_initial_state st;
	struct ms_replay_opts o;
	struct ms_replay_result r;
	cJSON *tr;

	cr_assert(path, "%s: not in testdata/snapshots (bundled data is never skipped)", name);
	cr_assert_eq(ms_trace_load(path, &win, &t, NULL, &d), MS_OK, "%s", d.msg);
	memset(&mc, 0, sizeof(mc));
	ms_alloc_conf_from_settings(&mc.ac, &t->meta.settings);
	cr_assert_eq(ms_model_new(&mc, &m), MS_OK);
	cr_assert_eq(ms_rebuild_initial_state(t, 0, m, &st, &d), MS_OK, "%s", d.msg);
	cr_assert_eq(st.inconsistent, 0);
	memset(&o, 0, sizeof(o));
	o.init = &st;
	cr_assert_eq(ms_replay_trace(t, &o, &r, &d), MS_OK, "%s", d.msg);
	cr_assert(r.rebuilt);
	cr_assert_eq(r.unmatched_frees, 0);
	cr_assert_gt(r.n_recorded, 5);
	cr_assert_eq(r.n_produced, r.n_recorded);
	for (size_t i = 0; i < r.n_produced; i++)
		cr_assert(r.produced[i].action == r.recorded[i].action &&
		                  r.produced[i].size == r.recorded[i].size,
		          "segment event %zu differs", i);
	tr = th_truth(name);
	cr_assert_eq((uint64_t)r.stats.reserved_bytes[0].current,
	             tnum(tr, "reserved_bytes.all.current"));
	cr_assert_eq((uint64_t)r.stats.allocated_bytes[0].current,
	             tnum(tr, "allocated_bytes.all.current"));
	cr_assert_eq((uint64_t)r.stats.segment[0].current, tnum(tr, "segment.all.current"));
	cr_assert_eq((uint64_t)r.stats.reserved_bytes[0].peak, tnum(tr, "reserved_bytes.all.peak"));
	cJSON_Delete(tr);
	ms_replay_result_release(&r);
	ms_initial_state_release(&st);
	ms_model_free(m);
	ms_trace_free(t);
}

Test(replay, mid_run_trace_is_rebuilt)
{
	check_mid_run("dynamic_empty_cache", 20000);
}

Test(replay, mid_run_expandable_trace_is_rebuilt)
{
	check_mid_run("dynamic_expandable", 1000);
}

/* The OOM report: the largest free blocks where the request failed, and who holds the memory. */
Test(replay, oom_report_details)
{
	const char *path = th_snapshot_path("gpt_train");
	struct ms_replay_opts o;
	struct ms_replay_result r;
	struct ms_diag d = MS_DIAG_INIT;
	uint64_t held = 0;

	cr_assert(path);
	memset(&o, 0, sizeof(o));
	o.limit = 7ull << 30;
	cr_assert_eq(ms_replay_run(path, &o, &r, &d), MS_OK, "%s", d.msg);
	cr_assert(r.ended_by_oom && r.has_oom);
	cr_assert_gt(r.first_oom.n_holes, 0);
	cr_assert_eq(r.first_oom.holes[0].size, r.first_oom.o.largest_free);
	for (size_t i = 1; i < r.first_oom.n_holes; i++)
		cr_assert_geq(r.first_oom.holes[i - 1].size, r.first_oom.holes[i].size);
	for (size_t i = 0; i < r.first_oom.n_holes; i++) {
		const struct ms_model_hole *h = &r.first_oom.holes[i];
		cr_assert_lt(h->size, r.first_oom.o.alloc_size); /* else it would have fit */
		cr_assert(!h->before.present || h->before.addr + h->before.size == h->addr);
		cr_assert(!h->after.present || h->addr + h->size == h->after.addr);
		cr_assert(!h->before.present ||
		          h->before.state != MS_BLOCK_INACTIVE); /* merged otherwise */
	}
	cr_assert_eq(r.first_oom.n_holders, MS_OOM_HOLDERS);
	for (size_t i = 0; i < r.first_oom.n_holders; i++) {
		if (i)
			cr_assert_geq(r.first_oom.holders[i - 1].size, r.first_oom.holders[i].size);
		cr_assert_lt(r.first_oom.holders[i].index, r.first_oom.index);
		held += r.first_oom.holders[i].size;
	}
	cr_assert_leq(held, r.first_oom.o.allocated);
	cr_assert_str_eq(r.first_oom.holders[0].site, "train_steps (workloads/gen_traces.py:38)");
	ms_replay_result_release(&r);
}

/*
 * §3.3, observed on PyTorch 2.11 with a memory fraction of 0.5 and a threshold of 0.3: six cached
 * 4 GiB blocks freed at different GC ages, then a 30 GiB request: 4 of the 6 were released in one
 * pass, num_device_free went to 4, num_alloc_retries stayed 0.
 */
Test(model, garbage_collection)
{
	struct th_segs s = {{0}, {0}, 0};
	struct ms_model *m = model("garbage_collection_threshold:0.3", 75054940160ull, &s);
	struct ms_model_block *b[6], *x;

	/* a small cached segment: mallocs that hit it move the pool's GC clock (every lookup
	 * does), and being hits they run no collection themselves */
	cr_assert_eq(ms_model_malloc(m, MiB + 1, 0, &x, NULL), MS_OK);
	ms_model_free_requested(m, x);
	cr_assert_eq(ms_model_free_completed(m, x), MS_OK);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(ms_model_malloc(m, 4ull << 30, 0, &b[i], NULL), MS_OK);
	for (int i = 0; i < 4; i++) {
		ms_model_free_requested(m, b[i]);
		cr_assert_eq(ms_model_free_completed(m, b[i]), MS_OK);
	}
	for (int i = 0; i < 6; i++) {
		if (i == 5) {
			ms_model_free_requested(m, b[4]);
			cr_assert_eq(ms_model_free_completed(m, b[4]), MS_OK);
		}
		cr_assert_eq(ms_model_malloc(m, MiB + 1, 0, &x, NULL), MS_OK);
		ms_model_free_requested(m, x);
		cr_assert_eq(ms_model_free_completed(m, x), MS_OK);
	}
	ms_model_free_requested(m, b[5]);
	cr_assert_eq(ms_model_free_completed(m, b[5]), MS_OK);
	cr_assert_eq(ms_model_stats(m)->num_device_free, 0);
	/* ages: the four first-freed blocks 7, the others 2 and 1, the small segment 1: average 4
	 */
	cr_assert_eq(ms_model_malloc(m, 30ull << 30, 0, &x, NULL), MS_OK);
	cr_assert(x);
	cr_assert_eq(ms_model_stats(m)->num_device_free, 4);
	cr_assert_eq(ms_model_stats(m)->num_alloc_retries, 0);
	ms_model_free(m);
}

/*
 * §3.3: the average age is a double. Ages 2, 1 and 1 average 1.33: only the block of age 2 is
 * released, where an average rounded down to 1 would release all three.
 */
Test(model, garbage_collection_average_is_not_rounded)
{
	struct ms_model *m = model("garbage_collection_threshold:0.5", 10ull << 30, NULL);
	struct ms_model_block *a, *b, *x;

	/* a 20 MiB segment cached whole (GC clock 1) */
	cr_assert_eq(ms_model_malloc(m, MiB + 1, 0, &x, NULL), MS_OK);
	ms_model_free_requested(m, x);
	cr_assert_eq(ms_model_free_completed(m, x), MS_OK);
	cr_assert_eq(ms_model_malloc(m, 4ull << 30, 0, &a, NULL), MS_OK); /* clock 2 */
	cr_assert_eq(ms_model_malloc(m, 4ull << 30, 0, &b, NULL), MS_OK); /* clock 3 */
	ms_model_free_requested(m, a);
	cr_assert_eq(ms_model_free_completed(m, a), MS_OK);            /* a cached at 3 */
	cr_assert_eq(ms_model_malloc(m, MiB + 1, 0, &x, NULL), MS_OK); /* a hit, clock 4 */
	ms_model_free_requested(m, x);
	cr_assert_eq(ms_model_free_completed(m, x), MS_OK); /* the 20 MiB block cached at 4 */
	ms_model_free_requested(m, b);
	cr_assert_eq(ms_model_free_completed(m, b), MS_OK); /* b cached at 4 */
	/* 5 GiB fits no cached block (clock 5): ages a 2, b 1, the small one 1; reserved 8 GiB +
	 * 20 MiB is over half the limit by about 3 GiB, which a alone covers */
	cr_assert_eq(ms_model_malloc(m, 5ull << 30, 0, &x, NULL), MS_OK);
	cr_assert(x);
	cr_assert_eq(ms_model_stats(m)->num_device_free, 1);
	cr_assert_eq(ms_model_stats(m)->reserved_bytes[0].current, (9ull << 30) + 20 * MiB);
	ms_model_free(m);
}

/* §3.2: with max_split_size and a limit, a cached oversize block is released before a retry. */
Test(model, release_available_cached_blocks)
{
	struct th_segs s = {{0}, {0}, 0};
	struct ms_model *m = model("max_split_size_mb:64", 150 * MiB, &s);
	struct ms_model_block *a, *b;

	cr_assert_eq(ms_model_malloc(m, 100 * MiB, 0, &a, NULL), MS_OK);
	ms_model_free_requested(m, a);
	cr_assert_eq(ms_model_free_completed(m, a), MS_OK);
	/* 80 MiB may not take the 100 MiB block (20 MiB or more would be wasted), and 100 + 80
	 * exceeds the limit: the oversize block goes back, without a full flush */
	cr_assert_eq(ms_model_malloc(m, 80 * MiB, 0, &b, NULL), MS_OK);
	cr_assert(b);
	cr_assert_eq(ms_model_stats(m)->num_device_free, 1);
	cr_assert_eq(ms_model_stats(m)->num_alloc_retries, 0);
	cr_assert_eq(ms_model_stats(m)->reserved_bytes[0].current, 80 * MiB);
	ms_model_free(m);
}

/* Memory outside PyTorch: raw CUDA events minus PyTorch's own segment calls (external.h). */
Test(replay, external_memory_claimed_and_counted)
{
	struct ms_outside x;
	struct ms_event e;
	uint64_t i = 0;

	memset(&x, 0, sizeof(x));
#define EV(act, src, a, s)                                          \
	do {                                                        \
		memset(&e, 0, sizeof(e));                           \
		e.action = (act);                                   \
		e.source = (src);                                   \
		e.addr = (a);                                       \
		e.size = (s);                                       \
		cr_assert_eq(ms_outside_event(&x, i++, &e), MS_OK); \
	} while (0)
	/* PyTorch's cudaMalloc seen by the interposer, then by PyTorch: claimed */
	EV(MS_ACT_SEGMENT_ALLOC, MS_SRC_CUDA, 0x1000000, 20 << 20);
	EV(MS_ACT_SEGMENT_ALLOC, MS_SRC_TORCH, 0x1000000, 20 << 20);
	/* NCCL's buffer: nobody claims it */
	EV(MS_ACT_SEGMENT_ALLOC, MS_SRC_CUDA, 0x9000000, 8 << 20);
	/* an expandable segment's growth: two raw 20 MiB pages, one PyTorch map of 40 MiB */
	EV(MS_ACT_SEGMENT_MAP, MS_SRC_CUDA, 0x40000000, 20 << 20);
	EV(MS_ACT_SEGMENT_MAP, MS_SRC_CUDA, 0x41400000, 20 << 20);
	EV(MS_ACT_SEGMENT_MAP, MS_SRC_TORCH, 0x40000000, 40 << 20);
	/* a cuBLAS workspace mapped and unmapped by hand */
	EV(MS_ACT_SEGMENT_MAP, MS_SRC_CUDA, 0x80000000, 4 << 20);
	EV(MS_ACT_SEGMENT_UNMAP, MS_SRC_CUDA, 0x80000000, 4 << 20);
	/* PyTorch frees its segment: the raw free takes nothing off */
	EV(MS_ACT_SEGMENT_FREE, MS_SRC_CUDA, 0x1000000, 20 << 20);
	EV(MS_ACT_SEGMENT_FREE, MS_SRC_TORCH, 0x1000000, 20 << 20);
	/* past the window, a raw allocation at an address PyTorch used later: not claimed */
	EV(MS_ACT_SEGMENT_ALLOC, MS_SRC_CUDA, 0x2000000, 2 << 20);
	for (int k = 0; k < MS_EXT_WINDOW + 1; k++)
		EV(MS_ACT_ALLOC, MS_SRC_TORCH, 0x100 + (uint64_t)k, 512);
	EV(MS_ACT_SEGMENT_ALLOC, MS_SRC_TORCH, 0x2000000, 2 << 20);
#undef EV
	cr_assert_eq(ms_outside_finish(&x), MS_OK);
	cr_assert_eq(x.events, 8);
	cr_assert_eq(x.claimed, 3);
	cr_assert_eq(x.peak, 12 << 20, "peak %llu", (unsigned long long)x.peak); /* NCCL + cuBLAS */
	cr_assert_eq(x.peak_index, 6);
	cr_assert_eq(x.cur, 10 << 20); /* NCCL's buffer and the late 2 MiB */
	ms_outside_release(&x);
}

/*
 * The recordings of testdata/snapshots/real (scripts/record_snapshots.py on an H100, PyTorch
 * 2.11) replayed against what PyTorch reported for the whole run (their truth files). A trace
 * recorded from the start gives PyTorch's peaks and counters exactly; one that starts mid-run
 * (history turned on late, a wrapped ring buffer) is replayed from the state rebuilt before its
 * first event, and its peaks are lower bounds of PyTorch's, equal where the peak fell inside
 * the trace.
 */
static uint64_t truth_stat(const cJSON *truth, const char *key)
{
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(truth, "stats");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(st, key);
	cr_assert(cJSON_IsNumber(v), "truth without %s", key);
	return (uint64_t)v->valuedouble;
}

Test(replay, real_recordings_against_their_truth)
{
	static const struct {
		const char *name;
		int mid_run;     /* starts after the job did */
		int peak_inside; /* ... but every peak of the run falls inside the trace */
	} cases[] = {
	        {"ddp_gloo_rank0", 0, 0},
	        {"ddp_gloo_rank1", 0, 0},
	        {"hf_gpt2", 0, 0},
	        {"lightning", 0, 0},
	        {"lightning_teardown", 0, 0},
	        {"timm", 0, 0},
	        {"stacks_all", 0, 0},
	        {"fsdp2", 0, 0},
	        {"oom_outside", 0, 0},
	        {"oom_fraction", 0, 0},
	        {"late_history", 1, 1},
	        {"late_after_empty_cache", 1, 1},
	        {"ring_wrap", 1, 0},
	};
	char path[4096];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ms_trace *t;
		struct ms_diag d = MS_DIAG_INIT;
		struct ms_replay_opts o;
		struct ms_replay_result r;
		struct ms_initial_state init;
		enum ms_mid_run what;
		cJSON *truth;
		const cJSON *lim;
		size_t n;
		char *js;
		const char *nm = cases[i].name;

		snprintf(path, sizeof(path), "%s/snapshots/real/%s.truth.json", MS_TESTDATA, nm);
		js = th_read_file(path, &n);
		cr_assert(js, "%s: missing", path);
		truth = cJSON_Parse(js);
		free(js);
		cr_assert(truth, "%s: not JSON", path);
		snprintf(path, sizeof(path), "%s/snapshots/real/%s.pickle.zst", MS_TESTDATA, nm);
		cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK, "%s: %s", nm, d.msg);
		memset(&o, 0, sizeof(o));
		lim = cJSON_GetObjectItemCaseSensitive(truth, "limit_bytes");
		if (cJSON_IsNumber(lim)) /* the job's memory fraction, as PyTorch enforced it */
			o.limit = (uint64_t)lim->valuedouble;
		cr_assert_eq(ms_replay_trace(t, &o, &r, &d), MS_OK, "%s: %s", nm, d.msg);
		cr_assert_eq(ms_replay_from_rebuilt(t, &o, &init, &r, &what, &d), MS_OK, "%s: %s",
		             nm, d.msg);
		cr_expect_eq(what, cases[i].mid_run ? MS_MID_RUN_REBUILT : MS_MID_RUN_NO,
		             "%s: mid-run %d", nm, (int)what);
		cr_expect_eq(r.rebuilt, cases[i].mid_run, "%s", nm);
		cr_expect(!r.ended_by_oom, "%s: the replay ran out of memory at event %llu", nm,
		          (unsigned long long)r.first_oom.index);
		{
			static const char *const keys[] = {"reserved_bytes.all.peak",
			                                   "allocated_bytes.all.peak",
			                                   "requested_bytes.all.peak"};
			int64_t got[3] = {r.stats.reserved_bytes[0].peak,
			                  r.stats.allocated_bytes[0].peak,
			                  r.stats.requested_bytes[0].peak};
			for (int k = 0; k < 3; k++) {
				uint64_t want = truth_stat(truth, keys[k]);
				if (!cases[i].mid_run || cases[i].peak_inside)
					cr_expect_eq((uint64_t)got[k], want,
					             "%s: %s %lld, PyTorch %llu", nm, keys[k],
					             (long long)got[k], (unsigned long long)want);
				else
					cr_expect_leq((uint64_t)got[k], want,
					              "%s: %s %lld above PyTorch's %llu", nm,
					              keys[k], (long long)got[k],
					              (unsigned long long)want);
			}
		}
		{
			/* stats, from the trace alone, counts blocks from before it the same way */
			struct ms_stats_builder *b;
			struct ms_sink sink;
			const struct ms_trace_stats *st;
			uint64_t want = truth_stat(truth, "requested_bytes.all.peak"), got;
			cr_assert_eq(ms_stats_builder_new(10, &b), MS_OK);
			ms_stats_builder_sink(b, &sink);
			cr_assert_eq(ms_trace_emit(t, &sink), MS_OK);
			st = ms_stats_builder_result(b);
			got = cases[i].mid_run ? st->mid_peak_requested : st->peak_requested;
			if (!cases[i].mid_run || cases[i].peak_inside)
				cr_expect_eq(got, want,
				             "%s: stats' requested peak %llu, PyTorch %llu", nm,
				             (unsigned long long)got, (unsigned long long)want);
			else
				cr_expect_leq(got, want,
				              "%s: stats' requested peak %llu above %llu", nm,
				              (unsigned long long)got, (unsigned long long)want);
			if (!st->unmatched_frees) {
				/* the sites at the peak hold every byte live then, those from
				   before the trace too */
				uint64_t sum = 0;
				for (size_t k = 0; k < st->n_sites; k++)
					sum += st->sites[k].bytes;
				cr_expect_eq(sum, got, "%s: sites at the peak hold %llu of %llu",
				             nm, (unsigned long long)sum, (unsigned long long)got);
			}
			ms_stats_builder_free(b);
		}
		if (!cases[i].mid_run) {
			cr_expect_eq(r.stats.num_alloc_retries,
			             truth_stat(truth, "num_alloc_retries"), "%s: retries %llu", nm,
			             (unsigned long long)r.stats.num_alloc_retries);
			cr_expect_eq(r.stats.num_device_alloc,
			             truth_stat(truth, "num_device_alloc"), "%s", nm);
			cr_expect_eq(r.stats.num_device_free, truth_stat(truth, "num_device_free"),
			             "%s", nm);
			cr_expect_eq(r.recorded_ooms, r.reproduced_ooms, "%s", nm);
			cr_expect_eq(r.recorded_ooms, truth_stat(truth, "num_ooms"), "%s", nm);
		}
		ms_replay_result_release(&r);
		ms_initial_state_release(&init);
		ms_trace_free(t);
		cJSON_Delete(truth);
	}
}

/*
 * Every snapshot of ../shared/testdata/wild (third-party; skipped where absent), on every device
 * with events: replayed from the state before its first event (rebuilt where it starts mid-run),
 * the model makes the segment events the snapshot recorded, in order, and its reserved peak is
 * the recorded one; never a divergence. Snapshots of other allocators (torch_npu) and files
 * whose fields fit no PyTorch release are left out: there is nothing to compare them with.
 */
static void wild_agree(const char *name, struct ms_trace *t, void *ctx)
{
	int *compared = ctx;
	struct ms_diag d = MS_DIAG_INIT;
	uint32_t devs[8];
	size_t nd = 0;

	if (!strcmp(t->meta.producer, "torch_npu") ||
	    !strncmp(t->meta.layout_release, "no PyTorch", 10))
		return;
	for (size_t i = 0; i < t->n_events; i++) {
		size_t k;
		for (k = 0; k < nd && devs[k] != t->events[i].device; k++)
			;
		if (k == nd && nd < 8)
			devs[nd++] = t->events[i].device;
	}
	for (size_t k = 0; k < nd; k++) {
		struct ms_replay_opts o;
		struct ms_replay_result r;
		struct ms_initial_state init;
		enum ms_mid_run what;
		int64_t cur, peak;
		memset(&o, 0, sizeof(o));
		o.device = devs[k];
		cr_assert_eq(ms_replay_trace(t, &o, &r, &d), MS_OK, "%s: %s", name, d.msg);
		cr_assert_eq(ms_replay_from_rebuilt(t, &o, &init, &r, &what, &d), MS_OK, "%s: %s",
		             name, d.msg);
		cr_expect(what == MS_MID_RUN_NO || what == MS_MID_RUN_REBUILT, "%s: %d", name,
		          (int)what);
		cr_expect_eq(r.n_produced, r.n_recorded, "%s: %zu segment events, %zu recorded",
		             name, r.n_produced, r.n_recorded);
		for (size_t i = 0; i < r.n_produced && i < r.n_recorded; i++)
			cr_expect(r.produced[i].action == r.recorded[i].action &&
			                  r.produced[i].size == r.recorded[i].size,
			          "%s: segment event %zu differs", name, i);
		cur = peak = (int64_t)r.initial_reserved;
		for (size_t i = 0; i < r.n_recorded; i++) {
			int grow = r.recorded[i].action == MS_ACT_SEGMENT_ALLOC ||
			           r.recorded[i].action == MS_ACT_SEGMENT_MAP;
			cur += grow ? (int64_t)r.recorded[i].size : -(int64_t)r.recorded[i].size;
			peak = cur > peak ? cur : peak;
		}
		cr_expect_eq(r.stats.reserved_bytes[0].peak, peak,
		             "%s: reserved peak %lld, "
		             "recorded %lld",
		             name, (long long)r.stats.reserved_bytes[0].peak, (long long)peak);
		cr_expect(!r.ended_by_oom, "%s", name);
		ms_replay_result_release(&r);
		ms_initial_state_release(&init);
		(*compared)++;
	}
}

Test(replay, wild_snapshots_agree)
{
	int compared = 0;

	if (th_each_wild(wild_agree, &compared) < 0) {
		cr_skip_test("%s: absent (third-party snapshots, not bundled)", MS_SHARED_WILD);
		return;
	}
	cr_expect_geq(compared, 9, "only %d devices compared", compared);
}
