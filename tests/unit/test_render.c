/*
 * The state render draws (ms_model_snapshot through the replay) and the formats drawing it.
 * The judge of the state is PyTorch itself: a snapshot's `segments` are the allocator's state
 * when it was dumped, so the replay's state at the end must equal them block for block.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "parse/trace.h"
#include "render/render.h"
#include "render/report.h"
#include "replay/site.h"
#include "replay/replay.h"
#include "replay/whatif.h"
#include "helpers.h"

/* Replay name to the end (or to event `at`) as the CLI does: a mid-run rebuild, an inferred
 * limit when recorded OOMs had room. */
static struct ms_trace *replay_to(const char *name, uint64_t at, int at_oom,
                                  struct ms_replay_result *r, struct ms_initial_state *init)
{
	const char *path = th_snapshot_path(name);
	struct ms_trace *t;
	struct ms_replay_opts o;
	struct ms_diag d = MS_DIAG_INIT;
	uint64_t lo, hi;

	if (!path)
		return NULL;
	cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK, "%s", d.msg);
	memset(&o, 0, sizeof(o));
	memset(init, 0, sizeof(*init));
	cr_assert_eq(ms_replay_trace(t, &o, r, &d), MS_OK, "%s", d.msg);
	if (r->unmatched_frees) {
		struct ms_model_conf mc;
		struct ms_model *m;
		memset(&mc, 0, sizeof(mc));
		ms_alloc_conf_from_settings(&mc.ac, &t->meta.settings);
		cr_assert_eq(ms_model_new(&mc, &m), MS_OK);
		cr_assert_eq(ms_rebuild_initial_state(t, 0, m, init, &d), MS_OK, "%s", d.msg);
		ms_model_free(m);
		o.init = init;
	}
	if (r->missed_ooms) {
		cr_assert_eq(ms_replay_infer_limit(t, &o, &lo, &hi, &d), MS_OK, "%s", d.msg);
		o.limit = lo + (hi - lo) / 2;
	}
	ms_replay_result_release(r);
	o.snap = 1;
	o.snap_index = at;
	o.snap_at_oom = at_oom;
	cr_assert_eq(ms_replay_trace(t, &o, r, &d), MS_OK, "%s", d.msg);
	cr_assert(r->snap.taken);
	return t;
}

static void end_state_equals_recorded(const char *name)
{
	struct ms_replay_result r;
	struct ms_initial_state init;
	struct ms_trace *t = replay_to(name, UINT64_MAX, 0, &r, &init);
	size_t n = 0, kb = 0;

	cr_assert(t, "%s: not in testdata/snapshots (bundled data is never skipped)", name);
	cr_assert_eq(r.snap.index, r.events_total - 1);
	for (size_t i = 0; i < t->n_segs; i++)
		n += t->segs[i].device == 0;
	cr_assert_eq(r.snap.n_segs, n, "%s: %zu segments, PyTorch had %zu", name, r.snap.n_segs, n);
	for (size_t i = 0, j = 0; i < t->n_segs; i++) {
		const struct ms_segment *want = &t->segs[i], *got;
		const struct ms_block *wb = t->blocks + t->seg_block0[i];
		if (want->device != 0)
			continue;
		got = &r.snap.segs[j++];
		cr_assert_eq(got->addr, want->addr, "%s: segment %zu at 0x%llx, PyTorch 0x%llx",
		             name, i, (unsigned long long)got->addr,
		             (unsigned long long)want->addr);
		cr_assert_eq(got->total_size, want->total_size, "%s: segment 0x%llx", name,
		             (unsigned long long)want->addr);
		cr_assert_eq(got->allocated_size, want->allocated_size, "%s: segment 0x%llx", name,
		             (unsigned long long)want->addr);
		cr_assert_eq(got->active_size, want->active_size);
		cr_assert_eq(got->stream, want->stream);
		cr_assert_eq(got->is_small, want->is_small);
		cr_assert_eq(got->is_expandable, want->is_expandable);
		cr_assert_eq(got->n_blocks, want->n_blocks,
		             "%s: segment 0x%llx: %u blocks, PyTorch %u", name,
		             (unsigned long long)want->addr, got->n_blocks, want->n_blocks);
		for (uint32_t k = 0; k < want->n_blocks; k++) {
			const struct ms_block *g = &r.snap.blocks[kb + k];
			cr_assert_eq(g->addr, wb[k].addr);
			cr_assert_eq(g->size, wb[k].size);
			cr_assert_eq(g->state, wb[k].state, "%s: block 0x%llx", name,
			             (unsigned long long)wb[k].addr);
			if (g->state != MS_BLOCK_INACTIVE)
				cr_assert_eq(g->requested_size, wb[k].requested_size);
		}
		kb += want->n_blocks;
	}
	ms_replay_result_release(&r);
	ms_initial_state_release(&init);
	ms_trace_free(t);
}

Test(snapshot, gpt_train_end_state)
{
	end_state_equals_recorded("gpt_train");
}
Test(snapshot, resnet50_end_state)
{
	end_state_equals_recorded("resnet50");
}
Test(snapshot, multistream_end_state)
{
	end_state_equals_recorded("multistream");
}
Test(snapshot, dynamic_oom_end_state)
{
	end_state_equals_recorded("dynamic_oom");
}
Test(snapshot, dynamic_seq_end_state)
{
	end_state_equals_recorded("dynamic_seq");
}
Test(snapshot, dynamic_empty_cache_end_state)
{
	end_state_equals_recorded("dynamic_empty_cache");
}
Test(snapshot, dynamic_expandable_end_state)
{
	end_state_equals_recorded("dynamic_expandable");
}

/* A state built by hand: one 48 MiB segment, so each character of the text map is 1 MiB. */
static void hand_state(struct ms_replay_result *r, struct ms_segment *g, struct ms_block *b)
{
	const uint64_t MiB = 1 << 20, base = 0x7f0000000000ull;

	memset(r, 0, sizeof(*r));
	memset(g, 0, sizeof(*g));
	memset(b, 0, 3 * sizeof(*b));
	b[0] = (struct ms_block){base, 12 * MiB, 6 * MiB, 0, MS_BLOCK_ACTIVE_ALLOCATED};
	b[1] = (struct ms_block){base + 12 * MiB, 12 * MiB, 12 * MiB, 0,
	                         MS_BLOCK_ACTIVE_PENDING_FREE};
	b[2] = (struct ms_block){base + 24 * MiB, 24 * MiB, 0, 0, MS_BLOCK_INACTIVE};
	g->addr = base;
	g->total_size = 48 * MiB;
	g->allocated_size = 12 * MiB;
	g->n_blocks = 3;
	r->snap.taken = 1;
	r->snap.index = 7;
	r->snap.segs = g;
	r->snap.n_segs = 1;
	r->snap.blocks = b;
	r->snap.n_blocks = 3;
}

Test(render, text_map_draws_each_mebibyte)
{
	struct ms_replay_result r;
	struct ms_segment g;
	struct ms_block b[3];
	struct ms_render_input in = {"hand", "event", &r, NULL, MS_FRAMES_USER};
	struct ms_buf out = MS_BUF_INIT;
	const char *want = "[######ssssss++++++++++++........................]";

	hand_state(&r, &g, b);
	cr_assert_eq(ms_render_text(&in, &out), MS_OK);
	cr_assert_eq(ms_buf_append(&out, "", 1), MS_OK);
	/* 6 MiB requested, 6 MiB slack, 12 MiB pending, 24 MiB free */
	cr_assert(strstr(out.data, want), "%s", out.data);
	cr_assert(strstr(out.data, "0x7f0000000000   48.00 MiB"), "%s", out.data);
	cr_assert(strstr(out.data, " 25% ["), "%s", out.data);
	cr_assert(strstr(out.data, "hand: after (event 7)"), "%s", out.data);
	ms_buf_release(&out);
}

/* Count non-overlapping occurrences of needle. */
static size_t count(const char *s, const char *needle)
{
	size_t n = 0;
	for (; (s = strstr(s, needle)); s += strlen(needle))
		n++;
	return n;
}

Test(render, dot_merges_blocks_past_the_cell_limit)
{
	enum { N = 1000 };
	struct ms_replay_result r;
	struct ms_segment g;
	struct ms_block *b = calloc(N, sizeof(*b));
	struct ms_render_input in = {"many", "end", &r, NULL, MS_FRAMES_USER};
	struct ms_buf out = MS_BUF_INIT;
	uint64_t alloc = 0;

	cr_assert(b);
	hand_state(&r, &g, b);
	/* 1000 blocks of 512 bytes, allocated and free in turn: 1000 runs */
	for (size_t i = 0; i < N; i++) {
		b[i] = (struct ms_block){g.addr + 512 * i, 512, 512, 0,
		                         i % 2 ? MS_BLOCK_INACTIVE : MS_BLOCK_ACTIVE_ALLOCATED};
		alloc += i % 2 ? 0 : 512;
	}
	g.total_size = 512 * N;
	g.allocated_size = alloc;
	g.n_blocks = N;
	r.snap.n_blocks = N;
	r.snap.blocks = b;
	cr_assert_eq(ms_render_dot(&in, &out), MS_OK);
	cr_assert_eq(ms_buf_append(&out, "", 1), MS_OK);
	/* 4 legend cells, then at most MS_RENDER_DOT_CELLS cells, each holding its share */
	cr_assert_leq(count(out.data, "<TD BGCOLOR") - 4, MS_RENDER_DOT_CELLS);
	cr_assert_geq(count(out.data, "<TD BGCOLOR") - 4, MS_RENDER_DOT_CELLS / 2);
	cr_assert(strstr(out.data, "0x7f0000000000: 16 blocks, 8.00 KiB; allocated 4.00 KiB; "
	                           "free 4.00 KiB"),
	          "%.2000s", out.data);
	ms_buf_release(&out);
	free(b);
}

Test(render, dot_escapes_labels)
{
	struct ms_replay_result r;
	struct ms_segment g;
	struct ms_block b[3];
	struct ms_render_input in = {"a<b>&\"c\".pickle", "end", &r, NULL, MS_FRAMES_USER};
	struct ms_buf out = MS_BUF_INIT;

	hand_state(&r, &g, b);
	cr_assert_eq(ms_render_dot(&in, &out), MS_OK);
	cr_assert_eq(ms_buf_append(&out, "", 1), MS_OK);
	cr_assert(strstr(out.data, "a&lt;b&gt;&amp;&quot;c&quot;.pickle"), "%s", out.data);
	cr_assert_null(strstr(out.data, "a<b>"));
	ms_buf_release(&out);
}

/*
 * The HTML report's timeline keeps every peak however coarse its buckets: the most of its
 * per-bucket maxima equals what PyTorch reported (truth files), at 4000 buckets and at 10.
 */
static uint64_t truth_stat(const char *name, const char *key)
{
	cJSON *j = th_truth(name), *v;
	uint64_t out = 0;

	if (!j)
		return 0;
	v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "stats"), key);
	if (cJSON_IsNumber(v))
		out = (uint64_t)v->valuedouble;
	cJSON_Delete(j);
	return out;
}

/* The page of in's report, without a what-if table. */
static void render_page(const struct ms_report_input *in, struct ms_buf *out)
{
	struct ms_report rep;
	struct ms_diag d = MS_DIAG_INIT;

	cr_assert_eq(ms_report_collect(in, &rep, &d), MS_OK, "%s", d.msg);
	cr_assert_eq(ms_render_html(&rep, NULL, 0, out), MS_OK);
	ms_report_release(&rep);
}

/* The data block the report page carries (parsed; the caller frees it). */
static cJSON *page_data(struct ms_buf *out)
{
	char *start, *end;
	cJSON *data;

	cr_assert_eq(ms_buf_append(out, "", 1), MS_OK);
	start = strstr(out->data, "<script id=\"memsnap-data\" type=\"application/json\"");
	cr_assert(start);
	start = strchr(start, '>') + 1;
	end = strstr(start, "</script>");
	cr_assert(end);
	*end = 0;
	data = cJSON_Parse(start);
	cr_assert(data);
	*end = '<';
	return data;
}

static uint64_t column_max(const cJSON *timeline, const char *key)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(timeline, key), *x;
	uint64_t m = 0;

	cr_assert(cJSON_IsArray(a), "%s", key);
	cJSON_ArrayForEach(x, a)
	{
		if ((uint64_t)x->valuedouble > m)
			m = (uint64_t)x->valuedouble;
	}
	return m;
}

static void timeline_keeps_peaks(const char *name, size_t buckets)
{
	const char *path = th_snapshot_path(name);
	struct ms_replay_opts o;
	struct ms_replay_result first;
	struct ms_report_input in;
	struct ms_buf out = MS_BUF_INIT;
	struct ms_diag d = MS_DIAG_INIT;
	uint64_t want_alloc = truth_stat(name, "allocated_bytes.all.peak");
	uint64_t want_res = truth_stat(name, "reserved_bytes.all.peak");
	cJSON *data, *timeline;

	cr_assert(path && want_alloc, "%s: not in testdata/snapshots with its truth", name);
	memset(&o, 0, sizeof(o));
	cr_assert_eq(ms_replay_run(path, &o, &first, &d), MS_OK, "%s", d.msg);
	cr_assert_eq(first.unmatched_frees, 0, "%s starts mid-run: not for this test", name);
	memset(&in, 0, sizeof(in));
	in.source = name;
	in.path = path;
	in.opts = &o;
	in.first = &first;
	in.buckets = buckets;
	render_page(&in, &out);
	data = page_data(&out);
	timeline = cJSON_GetObjectItemCaseSensitive(data, "timeline");
	cr_assert_leq(
	        (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(timeline, "first")),
	        buckets);
	cr_assert_eq(column_max(timeline, "alloc_max"), want_alloc, "%s: %zu buckets", name,
	             buckets);
	cr_assert_eq(column_max(timeline, "res_max"), want_res, "%s: %zu buckets", name, buckets);
	cJSON_Delete(data);
	ms_buf_release(&out);
	ms_replay_result_release(&first);
}

Test(render, timeline_keeps_the_peaks_of_resnet50)
{
	timeline_keeps_peaks("resnet50", 4000);
	timeline_keeps_peaks("resnet50", 10);
}
Test(render, timeline_keeps_the_peaks_of_multistream)
{
	timeline_keeps_peaks("multistream", 4000);
	timeline_keeps_peaks("multistream", 10);
}
Test(render, timeline_keeps_the_peaks_of_dynamic_seq)
{
	timeline_keeps_peaks("dynamic_seq", 4000);
	timeline_keeps_peaks("dynamic_seq", 10);
}

/* The timeline's "ext" column: memory outside PyTorch's allocator (raw CUDA events nobody
 * claims), here a 64 MiB buffer allocated by another library between PyTorch's allocations. */
Test(render, timeline_shows_memory_outside_pytorch)
{
	struct ms_trace *t;
	struct ms_sink sink;
	struct ms_meta m;
	struct ms_event e;
	struct ms_replay_opts o;
	struct ms_replay_result first;
	struct ms_report_input in;
	struct ms_buf out = MS_BUF_INIT;
	struct ms_diag d = MS_DIAG_INIT;
	cJSON *data;

	if (!ms_render_have_html())
		cr_skip_test("built without dygraphs");
	cr_assert_eq(ms_trace_new(&t), MS_OK);
	ms_trace_sink(t, &sink);
	memset(&m, 0, sizeof(m));
	m.producer = m.producer_version = m.torch_version = m.hostname = "";
	m.settings.alloc_conf = "";
	m.limit_bytes = -1;
	m.time_unit_ns = 1;
	cr_assert_eq(sink.begin(sink.ctx, &m, &t->syms), MS_OK);
	for (int i = 0; i < 300; i++) {
		memset(&e, 0, sizeof(e));
		e.t_ns = 1000 * i;
		e.addr = 0x7f0000000000ULL + (uint64_t)(i % 100) * (1 << 20);
		e.size = 1 << 20;
		e.action = i < 100 ? MS_ACT_ALLOC : i < 200 ? MS_ACT_FREE_REQUESTED : MS_ACT_ALLOC;
		if (i >= 100 && i < 200) {
			cr_assert_eq(sink.event(sink.ctx, &e), MS_OK);
			e.action = MS_ACT_FREE_COMPLETED;
		}
		if (i == 50 || i == 250) { /* another library's buffer, then its free */
			struct ms_event x = e;
			x.action = i == 50 ? MS_ACT_SEGMENT_ALLOC : MS_ACT_SEGMENT_FREE;
			x.source = MS_SRC_CUDA;
			x.addr = 0x7e0000000000ULL;
			x.size = 64 << 20;
			cr_assert_eq(sink.event(sink.ctx, &x), MS_OK);
		}
		cr_assert_eq(sink.event(sink.ctx, &e), MS_OK);
	}
	memset(&o, 0, sizeof(o));
	cr_assert_eq(ms_replay_trace(t, &o, &first, &d), MS_OK, "%s", d.msg);
	cr_assert_eq(first.external_peak, 64 << 20);
	memset(&in, 0, sizeof(in));
	in.source = "synthetic";
	in.trace = t;
	in.opts = &o;
	in.first = &first;
	in.buckets = 40;
	render_page(&in, &out);
	data = page_data(&out);
	cr_assert_eq(column_max(cJSON_GetObjectItemCaseSensitive(data, "timeline"), "ext"),
	             64 << 20);
	cJSON_Delete(data);
	ms_buf_release(&out);
	ms_replay_result_release(&first);
	ms_trace_free(t);
}

/* Frame f of the page's table as "name|file|line". */
static void page_frame(const cJSON *data, int f, char *buf, size_t cap)
{
	const cJSON *x = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(data, "frames"), f);

	cr_assert(cJSON_IsArray(x), "frame %d", f);
	snprintf(buf, cap, "%s|%s|%d", cJSON_GetArrayItem(x, 0)->valuestring,
	         cJSON_GetArrayItem(x, 1)->valuestring, cJSON_GetArrayItem(x, 2)->valueint);
}

/*
 * The page's stacks (stacks="all" snapshot, --frames 3): each site's whole stack and the site's
 * place in it, the frames --frames shows, the OOM holders' stacks, one table of frames.
 */
Test(render, page_carries_site_stacks)
{
	const char *path = MS_TESTDATA "/snapshots/edge/stacks_all.pickle";
	struct ms_replay_opts o;
	struct ms_replay_result first;
	struct ms_report_input in;
	struct ms_buf out = MS_BUF_INIT;
	struct ms_diag d = MS_DIAG_INIT;
	const cJSON *sites, *stacks, *holders, *st;
	cJSON *data;
	char buf[256];

	if (!ms_render_have_html())
		cr_skip_test("built without dygraphs");
	memset(&o, 0, sizeof(o));
	cr_assert_eq(ms_replay_run(path, &o, &first, &d), MS_OK, "%s", d.msg);
	memset(&in, 0, sizeof(in));
	in.source = in.path = path;
	in.opts = &o;
	in.first = &first;
	in.frames = 3;
	render_page(&in, &out);
	data = page_data(&out);
	sites = cJSON_GetObjectItemCaseSensitive(data, "sites");
	stacks = cJSON_GetObjectItemCaseSensitive(data, "site_stacks");
	cr_assert_eq(cJSON_GetArraySize(sites), 5);
	cr_assert_eq(cJSON_GetArraySize(stacks), 5);
	for (int i = 0; i < 5; i++) {
		const char *label = cJSON_GetArrayItem(sites, i)->valuestring;
		st = cJSON_GetArrayItem(stacks, i);
		if (strcmp(label, "forward (/home/ada/proj/model.py:42)") != 0)
			continue;
		/* [frames, site position, shown positions] */
		cr_assert_eq(cJSON_GetArraySize(cJSON_GetArrayItem(st, 0)), 41);
		cr_assert_eq(cJSON_GetArrayItem(st, 1)->valueint, 31);
		page_frame(data, cJSON_GetArrayItem(cJSON_GetArrayItem(st, 0), 31)->valueint, buf,
		           sizeof(buf));
		cr_expect_str_eq(buf, "forward|/home/ada/proj/model.py|42");
		page_frame(data, cJSON_GetArrayItem(cJSON_GetArrayItem(st, 0), 0)->valueint, buf,
		           sizeof(buf));
		cr_expect_str_eq(buf, "torch::unwind::unwind()|??|0");
		cr_assert_eq(cJSON_GetArraySize(cJSON_GetArrayItem(st, 2)), 3);
		cr_expect_eq(cJSON_GetArrayItem(cJSON_GetArrayItem(st, 2), 1)->valueint, 39);
	}
	holders = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(data, "oom"),
	                                           "holders");
	cr_assert_eq(cJSON_GetArraySize(holders), 5);
	st = cJSON_GetArrayItem(cJSON_GetArrayItem(holders, 2), 3);
	cr_assert(cJSON_IsArray(st));
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetArrayItem(st, 0)), 3000);
	cr_expect_eq(cJSON_GetArrayItem(st, 1)->valueint, 14);
	cJSON_Delete(data);
	ms_buf_release(&out);
	ms_replay_result_release(&first);
}

/*
 * The report of a trace in memory and the what-if table its caller computed: the page's data
 * draws the rows given where the report has an OOM, and null without them.
 */
Test(render, page_draws_the_whatif_rows_given)
{
	const char *path = MS_TESTDATA "/snapshots/edge/stacks_all.pickle";
	struct ms_trace *t;
	struct ms_replay_opts o;
	struct ms_replay_result first;
	struct ms_report_input in;
	struct ms_report rep;
	struct ms_whatif_row rows[2];
	struct ms_buf with = MS_BUF_INIT, without = MS_BUF_INIT;
	struct ms_diag d = MS_DIAG_INIT;
	const cJSON *table, *moments, *m;
	cJSON *data;
	int peak = 0, oom = 0;

	cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK, "%s", d.msg);
	memset(&o, 0, sizeof(o));
	cr_assert_eq(ms_replay_trace(t, &o, &first, &d), MS_OK, "%s", d.msg);
	cr_assert(first.has_oom);
	memset(&in, 0, sizeof(in));
	in.source = path;
	in.trace = t;
	in.opts = &o;
	in.first = &first;
	cr_assert_eq(ms_report_collect(&in, &rep, &d), MS_OK, "%s", d.msg);
	cr_assert(rep.has_oom);
	memset(rows, 0, sizeof(rows));
	rows[0].conf = NULL; /* the recorded setting */
	rows[1].conf = "expandable_segments:True";
	cr_assert_eq(ms_whatif_run(t, &o, rows, 2, 1), MS_OK);
	cr_assert_eq(ms_render_html_data(&rep, rows, 2, &with), MS_OK);
	cr_assert_eq(ms_render_html_data(&rep, NULL, 0, &without), MS_OK);
	cr_assert_eq(ms_buf_append(&with, "", 1), MS_OK);
	cr_assert_eq(ms_buf_append(&without, "", 1), MS_OK);

	data = cJSON_Parse(with.data);
	cr_assert(data);
	table = cJSON_GetObjectItemCaseSensitive(data, "whatif");
	cr_assert_eq(cJSON_GetArraySize(table), 2);
	/* the rows as whatif --json writes them (json/whatif.h) */
	cr_expect(cJSON_IsTrue(
	        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(table, 0), "recorded")));
	cr_expect_str_eq(
	        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(table, 1), "alloc_conf")
	                ->valuestring,
	        "expandable_segments:True");
	cr_expect(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(table, 1),
	                                                          "peak_reserved_bytes")));
	moments = cJSON_GetObjectItemCaseSensitive(data, "moments");
	cJSON_ArrayForEach(m, moments)
	{
		const char *label = cJSON_GetObjectItemCaseSensitive(m, "label")->valuestring;
		peak += !strcmp(label, "peak");
		oom += !strcmp(label, "oom");
	}
	cr_expect_eq(peak, 1);
	cr_expect_eq(oom, 1);
	cJSON_Delete(data);

	data = cJSON_Parse(without.data);
	cr_assert(data);
	cr_expect(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(data, "whatif")));
	cJSON_Delete(data);

	ms_buf_release(&with);
	ms_buf_release(&without);
	ms_whatif_release(rows, 2);
	ms_report_release(&rep);
	ms_replay_result_release(&first);
	ms_trace_free(t);
}

/* ---- the per-allocation timeline's bands ------------------------------------------------- */

struct band_truth {
	uint64_t first, end, size; /* end: the free's event, or the window's end */
};

static double area_in(const struct band_truth *x, uint64_t lo, uint64_t hi)
{
	uint64_t s = x->first > lo ? x->first : lo, e = x->end < hi ? x->end : hi;
	return e > s ? (double)x->size * (double)(e - s) : 0;
}

static uint64_t g_lo, g_hi;

static int g_by_area;

/* descending: what matters most first (the order ms_bands keeps the most of) */
static int truth_cmp(const void *a, const void *b)
{
	const struct band_truth *x = a, *y = b;
	double ax = area_in(x, g_lo, g_hi), ay = area_in(y, g_lo, g_hi);

	if (g_by_area && ax != ay)
		return ax < ay ? 1 : -1;
	if (x->size != y->size)
		return x->size < y->size ? 1 : -1;
	if (ax != ay)
		return ax < ay ? 1 : -1;
	return x->first > y->first ? 1 : x->first < y->first ? -1 : 0;
}

/*
 * Each part of each level keeps, of the allocations alive in it, the ms_bands_keep/2 largest and
 * the ms_bands_keep/2 covering the most of it: checked against a sort of them all, the
 * allocations added in an order of their own (as a replay's live table hands the last ones over).
 */
Test(render, bands_keep_the_largest_and_the_widest)
{
	enum { N = 6000, WINDOW_FROM = 5000, WINDOW_TO = 90000 };
	static struct band_truth all[N], in[N];
	static size_t order[N];
	struct ms_bands b;
	uint64_t rs = 11;
	size_t n = 0, part = 0;

	/* allocation i made at event 16 i, freed at a random later event or never */
	for (size_t i = 0; i < N; i++) {
		uint64_t r = th_rand(&rs);
		all[i].first = 16 * i;
		all[i].size = 512 * (1 + r % 5000);
		all[i].end = r % 7 == 0 ? UINT64_MAX : all[i].first + 1 + (r >> 20) % 20000;
		order[i] = i;
	}
	for (size_t i = N - 1; i > 0; i--) {
		size_t j = th_rand(&rs) % (i + 1), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	cr_assert_eq(ms_bands_init(&b, WINDOW_FROM, WINDOW_TO), MS_OK);
	for (size_t k = 0; k < N; k++) {
		const struct band_truth *x = &all[order[k]];
		ms_bands_add(&b, x->first, x->end == UINT64_MAX ? MS_BANDS_NONE : x->end, x->size,
		             order[k] % 4000, 0);
	}
	cr_assert_eq(ms_bands_finish(&b), MS_OK);
	for (size_t i = 0; i < N; i++)
		if (all[i].end > WINDOW_FROM && all[i].first < WINDOW_TO) {
			in[n] = all[i];
			if (in[n].end > WINDOW_TO)
				in[n].end = WINDOW_TO;
			n++;
		}
	/* every band is one of the allocations, as made */
	for (size_t k = 0; k < b.n_bands; k++) {
		const struct ms_band *x = &b.bands[k];
		size_t i = x->first / 16;
		cr_assert_eq(x->first, all[i].first);
		cr_assert_eq(x->size, all[i].size);
		cr_assert_eq(x->addr, i % 4000);
		cr_assert_eq(x->last, all[i].end, "band %zu", k);
		cr_assert(k == 0 || b.bands[k - 1].first < x->first);
	}
	for (unsigned l = 0; l < MS_BANDS_LEVELS; l++) {
		uint64_t w = (WINDOW_TO - WINDOW_FROM + ms_bands_parts(l) - 1) / ms_bands_parts(l);
		for (size_t p = 0; p < ms_bands_parts(l); p++, part++) {
			static struct band_truth alive[N];
			static uint8_t want[N];
			size_t m = 0, keep = ms_bands_keep(l) / 2, got = 0;
			g_lo = WINDOW_FROM + w * p;
			g_hi = g_lo + w;
			for (size_t i = 0; i < n; i++)
				if (in[i].first < g_hi && in[i].end > g_lo)
					alive[m++] = in[i];
			memset(want, 0, sizeof(want));
			for (g_by_area = 0; g_by_area < 2; g_by_area++) {
				qsort(alive, m, sizeof(*alive), truth_cmp);
				for (size_t i = 0; i < m && i < keep; i++)
					want[alive[i].first / 16] = 1;
			}
			for (size_t i = 0; i < N; i++)
				got += want[i];
			cr_assert_eq(b.part_start[part + 1] - b.part_start[part], got,
			             "level %u part %zu: %zu bands, want %zu", l, p,
			             b.part_start[part + 1] - b.part_start[part], got);
			for (size_t k = b.part_start[part]; k < b.part_start[part + 1]; k++)
				cr_assert(want[b.bands[b.part_idx[k]].first / 16],
				          "level %u part %zu", l, p);
		}
	}
	ms_bands_release(&b);
}

/*
 * The bands of a real trace's page are its allocations: each band's first event allocates its
 * address and size, and its last is the first free of that address after it (or there is none
 * in the trace).
 */
Test(render, page_bands_are_the_trace_s_allocations)
{
	const char *path = th_snapshot_path("gpt_train");
	struct ms_trace *t;
	struct ms_replay_opts o;
	struct ms_replay_result first;
	struct ms_report_input in;
	struct ms_buf out = MS_BUF_INIT;
	struct ms_diag d = MS_DIAG_INIT;
	cJSON *data, *bands, *fa, *la, *sa, *aa;
	int n;

	cr_assert(path);
	cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK, "%s", d.msg);
	memset(&o, 0, sizeof(o));
	cr_assert_eq(ms_replay_run(path, &o, &first, &d), MS_OK, "%s", d.msg);
	memset(&in, 0, sizeof(in));
	in.source = "gpt_train";
	in.path = path;
	in.opts = &o;
	in.first = &first;
	render_page(&in, &out);
	data = page_data(&out);
	bands = cJSON_GetObjectItemCaseSensitive(data, "bands");
	fa = cJSON_GetObjectItemCaseSensitive(bands, "first");
	la = cJSON_GetObjectItemCaseSensitive(bands, "last");
	sa = cJSON_GetObjectItemCaseSensitive(bands, "size");
	aa = cJSON_GetObjectItemCaseSensitive(bands, "addr");
	n = cJSON_GetArraySize(fa);
	cr_assert_gt(n, 100);
	for (int k = 0; k < n; k++) {
		uint64_t f = (uint64_t)cJSON_GetArrayItem(fa, k)->valuedouble;
		double l = cJSON_GetArrayItem(la, k)->valuedouble;
		uint64_t addr = (uint64_t)cJSON_GetArrayItem(aa, k)->valuedouble;
		const struct ms_event *e = &t->events[f];
		uint64_t j;
		cr_assert_eq(e->action, MS_ACT_ALLOC, "band %d", k);
		cr_assert_eq(e->addr, addr, "band %d", k);
		cr_assert_eq(e->size, (uint64_t)cJSON_GetArrayItem(sa, k)->valuedouble, "band %d",
		             k);
		for (j = f + 1; j < t->n_events; j++) {
			const struct ms_event *x = &t->events[j];
			if (x->addr == addr && x->device == e->device &&
			    (x->action == MS_ACT_FREE_REQUESTED ||
			     x->action == MS_ACT_FREE_COMPLETED || x->action == MS_ACT_ALLOC))
				break;
		}
		if (l < 0)
			cr_assert_eq(j, t->n_events, "band %d: freed at %llu", k,
			             (unsigned long long)j);
		else
			cr_assert_eq(j, (uint64_t)l, "band %d", k);
	}
	cJSON_Delete(data);
	ms_buf_release(&out);
	ms_replay_result_release(&first);
	ms_trace_free(t);
}
