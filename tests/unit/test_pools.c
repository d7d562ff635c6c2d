/*
 * Private memory pools (torch-allocator.md §14): the model keeps each pool's blocks apart, gives a
 * pool's segments back only once it is released, and never flushes other caches for a private
 * pool's request; the pools of a PyTorch 2.11 trace are told from its end state, checked against
 * the blocks of that end state (read by the snapshot's own segments, not by the inference); a
 * 2.12 trace's entries carry theirs, through .zst and JSON alike.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "parse/trace.h"
#include "parse/torch_json_write.h"
#include "common/alloc.h"
#include "replay/model.h"
#include "replay/replay.h"

#define MiB (1024ull * 1024ull)

/* (1, 0): a CUDA graph's own pool; (0, 1): a MemPool's */
#define GRAPH1   2
#define MEMPOOL1 3

static struct ms_model *model(uint64_t limit, struct th_segs *segs)
{
	struct ms_model_conf c;
	struct ms_model *m;

	memset(&c, 0, sizeof(c));
	ms_alloc_conf_init(&c.ac);
	c.limit = limit;
	c.on_segment = segs ? th_on_seg : NULL;
	c.ctx = segs;
	cr_assert_eq(ms_model_new(&c, &m), MS_OK);
	return m;
}

static void check(struct ms_model *m, struct ms_model_block *const *held, size_t n)
{
	char why[256];
	cr_assert_eq(ms_model_check(m, held, n, why, sizeof(why)), 0, "%s", why);
}

static void release(struct ms_model *m, struct ms_model_block *b)
{
	ms_model_free_requested(m, b);
	cr_assert_eq(ms_model_free_completed(m, b), MS_OK);
}

static const struct ms_model_pool *pool(struct ms_model *m, uint16_t code)
{
	size_t n;
	const struct ms_model_pool *p = ms_model_pools(m, &n);
	for (size_t i = 0; i < n; i++)
		if (p[i].code == code)
			return &p[i];
	cr_assert_fail("no pool %u", code);
	return NULL;
}

Test(pools, blocks_stay_in_their_pool)
{
	struct th_segs s = {{0}, {0}, 0};
	struct ms_model *m = model(0, &s);
	struct ms_model_block *a, *b, *c, *d;
	uint64_t at_a, at_b;

	/* a free 20 MiB segment cached in the default pool does not serve the graph's request */
	cr_assert_eq(ms_model_malloc(m, 4 * MiB, 0, &a, NULL), MS_OK);
	at_a = ms_model_block_addr(a);
	release(m, a);
	cr_assert_eq(ms_model_malloc_pool(m, 4 * MiB, 0, GRAPH1, &b, NULL), MS_OK);
	at_b = ms_model_block_addr(b);
	cr_assert_eq(s.n, 2);
	cr_assert_eq(s.action[1], MS_ACT_SEGMENT_ALLOC);
	cr_assert_eq(s.size[1], 20 * MiB);
	check(m, &b, 1);
	/* freed, the graph's block goes back to the graph's pool: the default pool's request
	 * takes the default segment, the graph's the graph's, and no segment is made */
	release(m, b);
	cr_assert_eq(ms_model_malloc(m, 18 * MiB, 0, &c, NULL), MS_OK);
	cr_assert_eq(ms_model_malloc_pool(m, 18 * MiB, 0, GRAPH1, &d, NULL), MS_OK);
	cr_assert_eq(s.n, 2);
	cr_assert_eq(ms_model_block_addr(c), at_a);
	cr_assert_eq(ms_model_block_addr(d), at_b);
	{
		struct ms_model_block *held[2] = {c, d};
		check(m, held, 2);
	}
	cr_assert_eq(pool(m, MS_POOL_DEFAULT)->reserved_bytes.current, 20 * MiB);
	cr_assert_eq(pool(m, GRAPH1)->reserved_bytes.current, 20 * MiB);
	cr_assert_eq(pool(m, GRAPH1)->allocated_bytes.current, 18 * MiB);
	cr_assert_eq(pool(m, GRAPH1)->allocated_bytes.peak, 18 * MiB);
	cr_assert_eq(ms_model_stats(m)->reserved_bytes[0].current, 40 * MiB);
	/* a third 18 MiB request in the graph's pool: a new segment, the default's stays apart */
	{
		struct ms_model_block *e;
		cr_assert_eq(ms_model_malloc_pool(m, 18 * MiB, 0, GRAPH1, &e, NULL), MS_OK);
		cr_assert_eq(s.n, 3);
		release(m, e);
	}
	release(m, c);
	release(m, d);
	ms_model_free(m);
}

/* §14.5: empty_cache gives back a private pool's free segments only once nothing uses it. */
Test(pools, empty_cache_spares_a_pool_in_use)
{
	struct th_segs s = {{0}, {0}, 0};
	struct ms_model *m = model(0, &s);
	struct ms_model_block *a, *b;

	cr_assert_eq(ms_model_malloc(m, 4 * MiB, 0, &a, NULL), MS_OK);
	cr_assert_eq(ms_model_malloc_pool(m, 4 * MiB, 0, MEMPOOL1, &b, NULL), MS_OK);
	release(m, a);
	release(m, b);
	ms_model_empty_cache(m);
	cr_assert_eq(s.n, 3);
	cr_assert_eq(pool(m, MEMPOOL1)->reserved_bytes.current, 20 * MiB);
	cr_assert_eq(ms_model_release_pool(m, MEMPOOL1), MS_OK);
	ms_model_empty_cache(m);
	cr_assert_eq(s.n, 4);
	cr_assert_eq(s.action[3], MS_ACT_SEGMENT_FREE);
	cr_assert_eq(pool(m, MEMPOOL1)->reserved_bytes.current, 0);
	cr_assert_eq(pool(m, MEMPOOL1)->segment.current, 0);
	check(m, NULL, 0);
	ms_model_free(m);
}

/* §14.2: a private pool's request that does not fit fails without emptying the default cache. */
Test(pools, private_request_does_not_flush_the_default_cache)
{
	struct th_segs s = {{0}, {0}, 0};
	struct ms_model *m = model(40 * MiB, &s);
	struct ms_model_block *a, *b;

	cr_assert_eq(ms_model_malloc(m, 20 * MiB, 0, &a, NULL), MS_OK);
	release(m, a); /* 20 MiB cached in the default pool */
	cr_assert_eq(ms_model_malloc_pool(m, 25 * MiB, 0, GRAPH1, &b, NULL), MS_OK);
	cr_assert_null(b);
	cr_assert_eq(s.n, 1);
	/* the same request in the default pool flushes and retries */
	cr_assert_eq(ms_model_malloc(m, 25 * MiB, 0, &b, NULL), MS_OK);
	cr_assert_not_null(b);
	cr_assert_eq(s.action[1], MS_ACT_SEGMENT_FREE);
	check(m, &b, 1);
	release(m, b);
	ms_model_free(m);
}

/*
 * §14.6: a request of the default pool that no new segment can serve takes a free block of a
 * use_on_oom MemPool (split there, and the pool's), before any cached segment is given back;
 * without the mark, or once the pool is released, it flushes the default cache and retries.
 */
Test(pools, use_on_oom_pool_serves_the_full_default_pool)
{
	for (int marked = 0; marked < 3; marked++) {
		struct th_segs s = {{0}, {0}, 0};
		struct ms_model *m = model(100 * MiB, &s);
		struct ms_model_block *a, *held[3], *b;
		int64_t pool_before;

		cr_assert_eq(ms_model_malloc_pool(m, 40 * MiB, 0, MEMPOOL1, &a, NULL), MS_OK);
		release(m, a); /* 40 MiB cached in the MemPool */
		if (marked)
			cr_assert_eq(ms_model_pool_use_on_oom(m, MEMPOOL1), MS_OK);
		if (marked == 2)
			cr_assert_eq(ms_model_release_pool(m, MEMPOOL1), MS_OK);
		cr_assert_eq(ms_model_malloc(m, 20 * MiB, 0, &held[0], NULL), MS_OK);
		cr_assert_eq(ms_model_malloc(m, 20 * MiB, 0, &held[1], NULL), MS_OK);
		release(m, held[1]); /* 20 MiB cached in the default pool: 80 MiB reserved */
		cr_assert_eq(s.n, 3);
		cr_assert_eq(ms_model_fits_without_release(m, 30 * MiB, 0), marked == 1);
		pool_before = pool(m, MEMPOOL1)->allocated_bytes.current;
		cr_assert_eq(ms_model_malloc(m, 30 * MiB, 0, &b, NULL), MS_OK);
		cr_assert_not_null(b);
		if (marked == 1) {
			/* from the MemPool's cached block, split: no segment event at all */
			cr_assert_eq(s.n, 3);
			cr_assert_eq(pool(m, MEMPOOL1)->allocated_bytes.current - pool_before,
			             (int64_t)(30 * MiB));
			held[1] = b;
			check(m, held, 2);
		} else {
			/* the default pool's flush and retry: the cached segments go, a new one
			   comes (the released MemPool's too) */
			cr_assert_gt(s.n, 3);
			cr_assert_eq(s.action[3], MS_ACT_SEGMENT_FREE);
			cr_assert_eq(s.action[s.n - 1], MS_ACT_SEGMENT_ALLOC);
			cr_assert_eq(pool(m, MEMPOOL1)->allocated_bytes.current, pool_before);
		}
		ms_model_free(m);
	}
}

/* The model's snapshot names each segment's pool, as PyTorch's segment_pool_id. */
Test(pools, snapshot_carries_pool_ids)
{
	struct ms_model *m = model(0, NULL);
	struct ms_model_block *held[3];
	struct ms_segment *segs;
	struct ms_block *blocks;
	size_t ns, nb;
	int seen[2] = {0, 0};

	cr_assert_eq(ms_model_malloc(m, 4 * MiB, 0, &held[0], NULL), MS_OK);
	cr_assert_eq(ms_model_malloc_pool(m, 512, 0, MEMPOOL1, &held[1], NULL), MS_OK);
	cr_assert_eq(ms_model_malloc_pool(m, 30 * MiB, 0, GRAPH1, &held[2], NULL), MS_OK);
	cr_assert_eq(ms_model_snapshot(m, held, 3, &segs, &ns, &blocks, &nb), MS_OK);
	cr_assert_eq(ns, 3);
	for (size_t i = 0; i < ns; i++) {
		if (segs[i].is_small) {
			cr_assert_eq(segs[i].pool_id[0], 0);
			cr_assert_eq(segs[i].pool_id[1], 1);
			seen[0] = 1;
		} else if (segs[i].total_size == 30 * MiB) {
			cr_assert_eq(segs[i].pool_id[0], 1);
			cr_assert_eq(segs[i].pool_id[1], 0);
			seen[1] = 1;
		} else {
			cr_assert_eq(segs[i].pool_id[0] | segs[i].pool_id[1], 0);
		}
	}
	cr_assert(seen[0] && seen[1]);
	ms_free(segs);
	ms_free(blocks);
	for (int i = 0; i < 3; i++)
		release(m, held[i]);
	ms_model_free(m);
}

/*
 * graph_pools (a training step captured as a CUDA graph): every block alive at the end in a
 * private-pool segment was allocated by an event that the inference put in that pool, and
 * every one in a default segment by one it put in the default pool. The blocks come from the
 * snapshot; the inference never reads them.
 */
Test(pools, inferred_from_the_end_state_of_graph_pools)
{
	struct ms_trace *t;
	struct ms_diag d = MS_DIAG_INIT;
	const char *path = th_snapshot_path("pools/graph_pools");
	size_t checked = 0, private = 0;

	cr_assert_not_null(path, "testdata/snapshots/pools/graph_pools is bundled");
	cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK, "%s", d.msg);
	cr_assert_eq(t->pools.private_segments, 9);
	cr_assert_gt(t->pools.private_allocs, 0);
	for (size_t g = 0; g < t->n_segs; g++) {
		const struct ms_segment *s = &t->segs[g];
		uint16_t code;
		cr_assert_eq(ms_pool_code(s->pool_id[0], s->pool_id[1], &code), 0);
		for (size_t k = t->seg_block0[g]; k < t->seg_block0[g] + s->n_blocks; k++) {
			const struct ms_block *b = &t->blocks[k];
			long last = -1;
			if (b->state != MS_BLOCK_ACTIVE_ALLOCATED)
				continue;
			for (size_t i = 0; i < t->n_events; i++)
				if (t->events[i].action == MS_ACT_ALLOC &&
				    t->events[i].addr == b->addr)
					last = (long)i;
			if (last < 0)
				continue; /* allocated before the trace */
			cr_assert_eq(t->events[last].pool, code,
			             "block 0x%llx: pool %u, segment %u",
			             (unsigned long long)b->addr, t->events[last].pool, code);
			checked++;
			private += code != MS_POOL_DEFAULT;
		}
	}
	cr_assert_gt(private, 0);
	cr_assert_gt(checked, private);
	ms_trace_free(t);
}

/* A 2.12 snapshot's entries carry pool_id: kept through .zst and JSON. */
Test(pools, entry_pool_ids_survive_conversion)
{
	struct ms_trace *t, *u, *v;
	struct ms_diag d = MS_DIAG_INIT;
	const char *path = th_snapshot_path("versions/v2_12_pool_id");
	char zpath[512], jpath[520];
	FILE *f;
	size_t in_pool = 0;

	cr_assert_not_null(path);
	cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK, "%s", d.msg);
	for (size_t i = 0; i < t->n_events; i++) {
		cr_assert_neq(t->events[i].pool, MS_POOL_UNKNOWN);
		in_pool += t->events[i].pool == MEMPOOL1;
	}
	cr_assert_eq(in_pool, 4); /* segment_alloc, alloc, free_requested, free_completed */
	snprintf(zpath, sizeof(zpath), "%s", th_write_trace(t, 0, 0));
	cr_assert_eq(ms_trace_load(zpath, NULL, &u, NULL, &d), MS_OK, "%s", d.msg);
	cr_assert_eq(th_events_diff(t, u), -1);
	snprintf(jpath, sizeof(jpath), "%s.json", zpath);
	cr_assert_not_null(f = fopen(jpath, "w"));
	cr_assert_eq(ms_torch_json_write(t, f, 0), MS_OK);
	fclose(f);
	cr_assert_eq(ms_trace_load(jpath, NULL, &v, NULL, &d), MS_OK, "%s", d.msg);
	cr_assert_eq(th_events_diff(t, v), -1);
	remove(zpath);
	remove(jpath);
	ms_trace_free(t);
	ms_trace_free(u);
	ms_trace_free(v);
}

/*
 * The same runs recorded twice, by PyTorch's snapshot and by memsnap record (whose events carry
 * the pool PyTorch's trace tracker reported): every pool the inference tells from the snapshot
 * is the one PyTorch reported, and the recording tells the rest.
 */
Test(pools, inference_agrees_with_the_recorded_pools)
{
	static const char *const cases[] = {"graph_pools",
	                                    "compile_reduce_overhead",
	                                    "mempool",
	                                    "graph_step_adam",
	                                    "graphed_callables",
	                                    "decode_graphs",
	                                    "mempool_on_oom",
	                                    "graph_pools_expandable",
	                                    "mempool_expandable",
	                                    "compile_reduce_overhead_expandable",
	                                    "decode_graphs_expandable",
	                                    "graph_step_adam_expandable"};
	uint64_t told_private = 0, unknown = 0;

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		char name[128], zpath[1024];
		struct ms_trace *t, *u;
		struct ms_diag d = MS_DIAG_INIT;
		const char *path;
		size_t j = 0;
		snprintf(name, sizeof(name), "pools/%s", cases[c]);
		cr_assert_not_null(path = th_snapshot_path(name), "%s is bundled", name);
		cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK, "%s", d.msg);
		snprintf(zpath, sizeof(zpath), "%s/snapshots/%s.zst", MS_TESTDATA, name);
		cr_assert_eq(ms_trace_load(zpath, NULL, &u, NULL, &d), MS_OK, "%s", d.msg);
		for (size_t i = 0; i < t->n_events; i++, j++) {
			const struct ms_event *e = &t->events[i], *f;
			while (j < u->n_events && u->events[j].source != MS_SRC_TORCH)
				j++;
			cr_assert_lt(j, u->n_events, "%s: the recording ends early", cases[c]);
			f = &u->events[j];
			cr_assert(f->action == e->action && f->addr == e->addr &&
			                  f->size == e->size,
			          "%s: event %zu is not the recording's", cases[c], i);
			cr_assert_neq(f->pool, MS_POOL_UNKNOWN, "%s: event %zu unrecorded",
			              cases[c], j);
			if (e->pool == MS_POOL_UNKNOWN) {
				unknown++;
				continue;
			}
			cr_assert_eq(e->pool, f->pool, "%s: event %zu told %u, PyTorch said %u",
			             cases[c], i, e->pool, f->pool);
			told_private += e->pool != MS_POOL_DEFAULT;
		}
		ms_trace_free(t);
		ms_trace_free(u);
	}
	cr_assert_gt(told_private, 500);
	cr_assert_gt(unknown, 0); /* mempool's pool is gone before its snapshot */
}

/* A trace built from events (device 0, stream 0): action, address, size, pool. */
static struct ms_trace *events_trace(const uint64_t (*ev)[4], size_t n)
{
	struct ms_trace *t;
	struct ms_sink sink;
	struct ms_meta meta;

	cr_assert_eq(ms_trace_new(&t), MS_OK);
	ms_trace_sink(t, &sink);
	memset(&meta, 0, sizeof(meta));
	meta.producer = meta.producer_version = meta.torch_version = meta.layout_release = "";
	meta.hostname = meta.settings.alloc_conf = "";
	meta.limit_bytes = -1;
	cr_assert_eq(sink.begin(sink.ctx, &meta, &t->syms), MS_OK);
	for (size_t i = 0; i < n; i++) {
		struct ms_event e;
		memset(&e, 0, sizeof(e));
		e.action = (uint8_t)ev[i][0];
		e.addr = ev[i][1];
		e.size = ev[i][2];
		e.pool = (uint16_t)ev[i][3];
		cr_assert_eq(sink.event(sink.ctx, &e), MS_OK);
	}
	return t;
}

/*
 * Under a limit, the program's empty_cache() (recorded segment frees) before a private pool's
 * request that needs the room is replayed as such: the request itself never empties the caches,
 * so taking the frees for its own would run out of memory where PyTorch did not.
 */
Test(pools, empty_cache_before_a_private_request)
{
	const uint64_t A = 0x7f0000000000ull, B = 0x7f0010000000ull;
	const uint64_t ev[][4] = {{MS_ACT_SEGMENT_ALLOC, A, 20 * MiB, 0},
	                          {MS_ACT_ALLOC, A, 20 * MiB, 0},
	                          {MS_ACT_FREE_REQUESTED, A, 20 * MiB, 0},
	                          {MS_ACT_FREE_COMPLETED, A, 20 * MiB, 0},
	                          {MS_ACT_SEGMENT_FREE, A, 20 * MiB, 0},
	                          {MS_ACT_SEGMENT_ALLOC, B, 30 * MiB, GRAPH1},
	                          {MS_ACT_ALLOC, B, 30 * MiB, GRAPH1}};
	struct ms_trace *t = events_trace(ev, sizeof(ev) / sizeof(ev[0]));
	struct ms_replay_opts o;
	struct ms_replay_result r;
	struct ms_diag d = MS_DIAG_INIT;

	memset(&o, 0, sizeof(o));
	o.limit = 40 * MiB;
	cr_assert_eq(ms_replay_trace(t, &o, &r, &d), MS_OK, "%s", d.msg);
	cr_assert_eq(r.ended_by_oom, 0);
	cr_assert_eq(r.empty_cache_calls, 1);
	cr_assert_eq((uint64_t)r.stats.reserved_bytes[0].peak, 30 * MiB);
	ms_replay_result_release(&r);
	ms_trace_free(t);
}

/*
 * A torch.cuda.empty_cache() that memsnap's recorder marked (a phase of that name) is replayed
 * where it was made, also where the recorded run had nothing to give back: under expandable
 * segments the model unmaps the freed pages there, as PyTorch would; replayed as recorded it
 * makes exactly the recorded segment events. The marks go through a .zst file: the reader
 * tells the call from the name. A phase of another name is no call.
 */
static const char *marked_trace(const char *phase)
{
	const uint64_t A = 0x7f0000000000ull;
	/* the 40 MiB block split by a 20 MiB one: the segment stays, half free, at the call */
	const uint64_t ev[][4] = {
	        {MS_ACT_SEGMENT_ALLOC, A, 40 * MiB, 0},  {MS_ACT_ALLOC, A, 40 * MiB, 0},
	        {MS_ACT_FREE_REQUESTED, A, 40 * MiB, 0}, {MS_ACT_FREE_COMPLETED, A, 40 * MiB, 0},
	        {MS_ACT_ALLOC, A, 20 * MiB, 0},          {MS_ACT_ALLOC, A + 20 * MiB, 20 * MiB, 0}};
	struct ms_trace *t = events_trace(ev, sizeof(ev) / sizeof(ev[0]));
	struct ms_annotation a;
	const char *path;

	memset(&a, 0, sizeof(a));
	a.kind = MS_ANN_PHASE;
	a.event_index = 5; /* before the last allocation */
	cr_assert_eq(ms_symtab_str(&t->syms, phase, strlen(phase), &a.name), MS_OK);
	t->anns = calloc(2, sizeof(a));
	t->n_anns = t->cap_anns = 2;
	a.stage = MS_ANN_START;
	t->anns[0] = a;
	a.stage = MS_ANN_END;
	t->anns[1] = a;
	path = th_write_trace(t, 0, 0);
	ms_trace_free(t);
	return path;
}

Test(pools, marked_empty_cache_is_replayed_where_made)
{
	struct ms_replay_opts o;
	struct ms_replay_result r;
	struct ms_diag d = MS_DIAG_INIT;
	char path[512];

	snprintf(path, sizeof(path), "%s", marked_trace(MS_EMPTY_CACHE_PHASE));
	memset(&o, 0, sizeof(o));
	cr_assert_eq(ms_replay_run(path, &o, &r, &d), MS_OK, "%s", d.msg);
	cr_assert_eq(r.empty_cache_calls, 1);
	cr_assert_eq(r.empty_cache_marked, 1);
	cr_assert_eq(r.n_produced, r.n_recorded); /* nothing to give back: no segment event */
	cr_assert_eq(r.n_produced, 1);
	ms_replay_result_release(&r);

	o.alloc_conf = "expandable_segments:True";
	cr_assert_eq(ms_replay_run(path, &o, &r, &d), MS_OK, "%s", d.msg);
	cr_assert_eq(r.empty_cache_calls, 1);
	/* 40 MiB mapped, the free half unmapped at the call, mapped again by the last allocation */
	cr_assert_eq(r.n_produced, 3);
	cr_assert_eq(r.produced[1].action, MS_ACT_SEGMENT_UNMAP);
	cr_assert_eq(r.produced[1].size, 20 * MiB);
	cr_assert_eq(r.produced[1].index, 5);
	cr_assert_eq(r.produced[2].action, MS_ACT_SEGMENT_MAP);
	cr_assert_eq(r.produced[2].size, 20 * MiB);
	ms_replay_result_release(&r);
	unlink(path);

	snprintf(path, sizeof(path), "%s", marked_trace("optimizer"));
	cr_assert_eq(ms_replay_run(path, &o, &r, &d), MS_OK, "%s", d.msg);
	cr_assert_eq(r.empty_cache_calls, 0);
	cr_assert_eq(r.n_produced, 1);
	ms_replay_result_release(&r);
	unlink(path);
}

/*
 * A .zst trace read with a window that ends before its end is not told its pools from its end
 * state (which would put early events in the pools of segments made later at their place): they
 * stay unknown; read whole, graph_pools' recording carries them.
 */
Test(pools, window_cut_early_tells_no_pool)
{
	struct ms_trace *t;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_read_opts ro = MS_READ_OPTS_INIT;
	char zpath[512];
	struct ms_trace *whole;

	cr_assert_eq(ms_trace_load(th_snapshot_path("pools/graph_pools"), NULL, &whole, NULL, &d),
	             MS_OK);
	/* the snapshot's events with no pool, so that only the end state could tell */
	for (size_t i = 0; i < whole->n_events; i++)
		whole->events[i].pool = MS_POOL_UNKNOWN;
	snprintf(zpath, sizeof(zpath), "%s", th_write_trace(whole, 0, 0));
	ro.from = 10;
	ro.to = 50;
	cr_assert_eq(ms_trace_load(zpath, &ro, &t, NULL, &d), MS_OK, "%s", d.msg);
	cr_assert_eq(t->n_events, 40);
	for (size_t i = 0; i < t->n_events; i++)
		cr_assert_eq(t->events[i].pool, MS_POOL_UNKNOWN, "event %zu", i);
	ms_trace_free(t);
	ms_trace_free(whole);
	remove(zpath);
}

/*
 * The job's torch.cuda.set_per_process_memory_fraction, as the recorder marks it (the limit in
 * bytes): the model's limit from there on, so that a second 20 MiB segment does not fit under
 * 30 MiB; a limit the user gives stands instead; a mark of another device changes nothing.
 */
Test(pools, marked_memory_fraction_sets_the_limit)
{
	const uint64_t A = 0x7f0000000000ull;
	const uint64_t ev[][4] = {{MS_ACT_SEGMENT_ALLOC, A, 20 * MiB, 0},
	                          {MS_ACT_ALLOC, A, 20 * MiB, 0},
	                          {MS_ACT_SEGMENT_ALLOC, A + 20 * MiB, 20 * MiB, 0},
	                          {MS_ACT_ALLOC, A + 20 * MiB, 20 * MiB, 0}};
	const char *name = MS_MEMORY_FRACTION_MARK "31457280";

	for (int k = 0; k < 3; k++) {
		struct ms_trace *t = events_trace(ev, sizeof(ev) / sizeof(ev[0]));
		struct ms_annotation a;
		struct ms_replay_opts o;
		struct ms_replay_result r;
		struct ms_diag d = MS_DIAG_INIT;
		struct ms_trace *u;
		const char *path;

		memset(&a, 0, sizeof(a));
		a.kind = MS_ANN_PHASE;
		a.stage = MS_ANN_MARK;
		a.event_index = 2;
		a.device = k == 2 ? 1 : 0;
		cr_assert_eq(ms_symtab_str(&t->syms, name, strlen(name), &a.name), MS_OK);
		t->anns = calloc(1, sizeof(a));
		t->n_anns = t->cap_anns = 1;
		t->anns[0] = a;
		path = th_write_trace(t, 0, 0); /* through a file: the reader tells the mark */
		ms_trace_free(t);
		cr_assert_eq(ms_trace_load(path, NULL, &u, NULL, &d), MS_OK, "%s", d.msg);
		cr_assert_eq(u->anns[0].call, MS_CALL_MEMORY_FRACTION);
		memset(&o, 0, sizeof(o));
		if (k == 1) {
			o.limit = 100 * MiB;
			o.limit_given = 1;
		}
		cr_assert_eq(ms_replay_trace(u, &o, &r, &d), MS_OK, "%s", d.msg);
		cr_assert_eq(r.ended_by_oom, k == 0, "case %d", k);
		cr_assert_eq(r.limit_marks, k == 0, "case %d", k);
		cr_assert_eq(r.limit, k == 0 ? 30 * MiB : k == 1 ? 100 * MiB : 0, "case %d", k);
		ms_replay_result_release(&r);
		ms_trace_free(u);
	}
}

/* §14.1: while a use_mem_pool (or a capture) is underway, a default-pool request that needs the
 * cached segments given back fails instead; once it ends, the same request flushes and fits. */
Test(pools, open_use_mem_pool_blocks_the_last_retry)
{
	struct th_segs s = {{0}, {0}, 0};
	struct ms_model *m = model(1024 * MiB, &s);
	struct ms_model_block *a, *b;

	cr_assert_eq(ms_model_malloc(m, 600 * MiB, 0, &a, NULL), MS_OK);
	release(m, a); /* 600 MiB cached in the default pool */
	ms_model_set_captures_underway(m, 1);
	cr_assert_eq(ms_model_fits_without_release(m, 700 * MiB, 0), 1);
	cr_assert_eq(ms_model_malloc(m, 700 * MiB, 0, &b, NULL), MS_OK);
	cr_assert_null(b);
	cr_assert_eq(s.n, 1, "nothing given back while underway");
	ms_model_set_captures_underway(m, 0);
	cr_assert_eq(ms_model_fits_without_release(m, 700 * MiB, 0), 0);
	cr_assert_eq(ms_model_malloc(m, 700 * MiB, 0, &b, NULL), MS_OK);
	cr_assert_not_null(b);
	cr_assert_eq(s.action[1], MS_ACT_SEGMENT_FREE);
	release(m, b);
	ms_model_free(m);
}
