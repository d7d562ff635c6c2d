/*
 * Real PyTorch 2.11 snapshots against what PyTorch reported (*.truth.json) and against values
 * computed by Python's own pickle module (testdata/snapshots/expected.json, made by
 * scripts/gen_expected.py), never against memsnap's own output. Also the round trips
 * pickle -> .zst -> JSON -> .zst.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/trace_stats.h"
#include "format/trace_write.h"
#include "helpers.h"
#include "parse/event_pack.h"
#include "parse/pool_infer.h"
#include "parse/torch_json_write.h"
#include "parse/trace.h"

static cJSON *load_json(const char *path)
{
	size_t n;
	char *s = th_read_file(path, &n);
	cJSON *j;

	if (!s)
		return NULL;
	j = cJSON_Parse(s);
	free(s);
	return j;
}

static uint64_t jnum(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	cr_assert(cJSON_IsNumber(v), "missing key %s", k);
	return (uint64_t)v->valuedouble;
}

static const struct ms_trace_stats *stats_of(struct ms_trace *t, struct ms_stats_builder **b)
{
	struct ms_sink sink;

	cr_assert_eq(ms_stats_builder_new(10, b), MS_OK);
	ms_stats_builder_sink(*b, &sink);
	cr_assert_eq(ms_trace_emit(t, &sink), MS_OK);
	return ms_stats_builder_result(*b);
}

static struct ms_trace *convert_and_load(const struct ms_trace *t, const char *suffix)
{
	char path[256];
	FILE *f;
	struct ms_trace *u = NULL;
	struct ms_diag d = MS_DIAG_INIT;
	ms_status s;

	snprintf(path, sizeof(path), "/tmp/memsnap-rt-%d%s", (int)getpid(), suffix);
	f = fopen(path, "wb");
	cr_assert(f);
	if (strcmp(suffix, ".json") == 0) {
		cr_assert_eq(ms_torch_json_write(t, f, 0), MS_OK);
	} else {
		struct ms_writer *w;
		struct ms_sink sink;
		struct ms_writer_opts o = MS_WRITER_OPTS_INIT;
		o.frame_bytes = 64 * 1024; /* several frames even for small traces */
		cr_assert_eq(ms_writer_open(f, &o, &t->syms, &w, &d), MS_OK);
		ms_writer_sink(w, &sink);
		cr_assert_eq(ms_trace_emit(t, &sink), MS_OK);
		cr_assert_eq(ms_writer_close(w, &d), MS_OK);
		ms_writer_free(w);
	}
	fclose(f);
	s = ms_trace_load(path, NULL, &u, NULL, &d);
	cr_assert_eq(s, MS_OK, "reload %s: %s", suffix, d.msg);
	cr_assert_eq(d.warnings, 0, "reload %s warned: %s", suffix, d.warning);
	remove(path);
	return u;
}

static void same_segments(const struct ms_trace *a, const struct ms_trace *b)
{
	cr_assert_eq(a->n_segs, b->n_segs);
	cr_assert_eq(a->n_blocks, b->n_blocks);
	for (size_t i = 0; i < a->n_segs; i++) {
		const struct ms_segment *x = &a->segs[i], *y = &b->segs[i];
		cr_assert(x->addr == y->addr && x->total_size == y->total_size &&
		                  x->allocated_size == y->allocated_size &&
		                  x->active_size == y->active_size &&
		                  x->requested_size == y->requested_size &&
		                  x->stream == y->stream && x->is_small == y->is_small &&
		                  x->is_expandable == y->is_expandable &&
		                  x->n_blocks == y->n_blocks && x->device == y->device &&
		                  x->pool_id[0] == y->pool_id[0] && x->pool_id[1] == y->pool_id[1],
		          "segment %zu differs", i);
	}
	for (size_t i = 0; i < a->n_blocks; i++)
		cr_assert(a->blocks[i].addr == b->blocks[i].addr &&
		                  a->blocks[i].size == b->blocks[i].size &&
		                  a->blocks[i].requested_size == b->blocks[i].requested_size &&
		                  a->blocks[i].state == b->blocks[i].state,
		          "block %zu differs", i);
	cr_assert_str_eq(a->meta.settings.alloc_conf, b->meta.settings.alloc_conf);
	cr_assert_eq(a->meta.settings.expandable_segments, b->meta.settings.expandable_segments);
	cr_assert_eq(a->meta.settings.max_split_size, b->meta.settings.max_split_size);
}

static void check(const char *name)
{
	const char *path = th_snapshot_path(name);
	char tpath[1024];
	cJSON *expected, *e, *truth, *ts, *v;
	struct ms_trace *t = NULL, *z, *j, *z2;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_stats_builder *b;
	const struct ms_trace_stats *st;
	uint64_t by[MS_ACT_COUNT] = {0}, sum[MS_ACT_COUNT] = {0};

	cr_assert(path, "%s: not in testdata/snapshots (bundled data is never skipped)", name);
	expected = load_json(MS_TESTDATA "/snapshots/expected.json");
	cr_assert(expected);
	e = cJSON_GetObjectItemCaseSensitive(expected, name);
	cr_assert(e, "no expectations for %s", name);
	snprintf(tpath, sizeof(tpath), "%s/snapshots/%s.truth.json", MS_TESTDATA, name);
	truth = load_json(tpath);
	cr_assert(truth, "no truth file for %s", name);
	ts = cJSON_GetObjectItemCaseSensitive(truth, "stats");

	cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK, "%s: %s", path, d.msg);
	/* what PyTorch reported */
	cr_assert_eq(t->n_events, jnum(truth, "trace_entries"));
	st = stats_of(t, &b);
	cr_assert_eq(st->peak_requested, jnum(ts, "requested_bytes.all.peak"));
	cr_assert_eq(st->reserved, jnum(ts, "reserved_bytes.all.current"));
	cr_assert_eq(st->allocated, jnum(ts, "allocated_bytes.all.current"));
	v = cJSON_GetObjectItemCaseSensitive(truth, "oom_entry_index");
	if (cJSON_IsNumber(v))
		cr_assert_eq(t->events[(size_t)v->valuedouble].action, MS_ACT_OOM);
	/* what Python's pickle module read */
	cr_assert_eq(t->n_events, jnum(e, "entries"));
	cr_assert_eq(st->peak_index, jnum(e, "peak_requested_index"));
	cr_assert_eq(st->internal, jnum(e, "internal_free"));
	cr_assert_eq(st->external_free, jnum(e, "external_free"));
	cr_assert_eq(st->largest_free, jnum(e, "largest_free"));
	cr_assert_eq(t->n_segs, jnum(e, "segments"));
	cr_assert_eq(t->n_blocks, jnum(e, "blocks"));
	cr_assert_eq(t->n_anns, jnum(e, "annotations"));
	cr_assert_eq(ms_symtab_nstacks(&t->syms) - 1, jnum(e, "distinct_stacks"));
	for (size_t i = 0; i < t->n_events; i++) {
		by[t->events[i].action]++;
		sum[t->events[i].action] += t->events[i].size;
	}
	for (int a = 0; a < MS_ACT_COUNT; a++) {
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(
		        cJSON_GetObjectItemCaseSensitive(e, "by_action"),
		        ms_action_name((unsigned)a));
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(
		        cJSON_GetObjectItemCaseSensitive(e, "size_sum_by_action"),
		        ms_action_name((unsigned)a));
		cr_assert_eq(by[a], c ? (uint64_t)c->valuedouble : 0, "count of %s",
		             ms_action_name((unsigned)a));
		cr_assert_eq(sum[a], s ? (uint64_t)s->valuedouble : 0, "sizes of %s",
		             ms_action_name((unsigned)a));
	}
	v = cJSON_GetObjectItemCaseSensitive(e, "first");
	cr_assert_eq(t->events[0].addr, jnum(v, "addr"));
	cr_assert_eq(t->events[0].t_ns, (int64_t)jnum(v, "time_us") * 1000);
	v = cJSON_GetObjectItemCaseSensitive(e, "last");
	cr_assert_eq(t->events[t->n_events - 1].addr, jnum(v, "addr"));
	cr_assert_str_eq(t->meta.settings.alloc_conf,
	                 cJSON_GetObjectItemCaseSensitive(e, "alloc_conf")->valuestring);

	/* sites at the peak: recomputed here by walking the events up to the peak */
	{
		uint64_t *live_size = calloc(t->n_events, sizeof(uint64_t)), total = 0, sites = 0;
		for (size_t i = 0; i <= st->peak_index; i++) {
			const struct ms_event *x = &t->events[i];
			if (x->action == MS_ACT_ALLOC)
				live_size[i] = x->size;
			else if (x->action == MS_ACT_FREE_COMPLETED)
				for (size_t k = i;
				     k-- > 0;) /* the latest live alloc at this address */
					if (live_size[k] && t->events[k].addr == x->addr) {
						live_size[k] = 0;
						break;
					}
		}
		for (size_t i = 0; i <= st->peak_index; i++)
			total += live_size[i];
		for (size_t i = 0; i < st->n_sites; i++) {
			uint64_t want = 0;
			for (size_t k = 0; k <= st->peak_index; k++)
				if (live_size[k] && t->events[k].stack == st->sites[i].stack)
					want += live_size[k];
			cr_assert_eq(st->sites[i].bytes, want, "site %zu", i);
			sites += st->sites[i].bytes;
		}
		cr_assert_eq(total, st->peak_requested);
		cr_assert_eq(sites, st->peak_requested);
		free(live_size);
	}

	/* round trips keep every event, annotation and segment */
	z = convert_and_load(t, ".zst");
	cr_assert_eq(th_events_diff(t, z), -1, "pickle -> zst differs at %ld",
	             th_events_diff(t, z));
	same_segments(t, z);
	j = convert_and_load(z, ".json");
	cr_assert_eq(th_events_diff(z, j), -1, "zst -> json differs at %ld", th_events_diff(z, j));
	same_segments(z, j);
	z2 = convert_and_load(j, ".zst");
	cr_assert_eq(th_events_diff(j, z2), -1, "json -> zst differs at %ld",
	             th_events_diff(j, z2));
	same_segments(j, z2);

	ms_stats_builder_free(b);
	ms_trace_free(t);
	ms_trace_free(z);
	ms_trace_free(j);
	ms_trace_free(z2);
	cJSON_Delete(expected);
	cJSON_Delete(truth);
}

Test(snapshots, dynamic_oom)
{
	check("dynamic_oom");
}
Test(snapshots, gpt_train)
{
	check("gpt_train");
}
Test(snapshots, multistream)
{
	check("multistream");
}
Test(snapshots, resnet50)
{
	check("resnet50");
}
Test(snapshots, dynamic_seq)
{
	check("dynamic_seq");
}
Test(snapshots, dynamic_expandable)
{
	check("dynamic_expandable");
}
Test(snapshots, dynamic_empty_cache)
{
	check("dynamic_empty_cache");
}

/* A window of events: --from/--to select exactly those events, from a pickle and from a .zst. */
Test(snapshots, window)
{
	const char *path = th_snapshot_path("gpt_train");
	struct ms_trace *all, *w, *z;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_read_opts o = {1000, 1500};
	const char *zpath;
	FILE *f;
	struct ms_writer *wr;
	struct ms_sink sink;
	struct ms_writer_opts wo = MS_WRITER_OPTS_INIT;

	cr_assert(path);
	cr_assert_eq(ms_trace_load(path, NULL, &all, NULL, &d), MS_OK);
	cr_assert_eq(ms_trace_load(path, &o, &w, NULL, &d), MS_OK);
	cr_assert_eq(w->n_events, 500);
	for (size_t i = 0; i < 500; i++)
		cr_assert_eq(memcmp(&w->events[i].addr, &all->events[1000 + i].addr, 32), 0);
	zpath = th_write_temp("", 0, ".zst");
	f = fopen(zpath, "wb");
	wo.frame_bytes = 4096;
	cr_assert_eq(ms_writer_open(f, &wo, &all->syms, &wr, &d), MS_OK);
	ms_writer_sink(wr, &sink);
	cr_assert_eq(ms_trace_emit(all, &sink), MS_OK);
	cr_assert_eq(ms_writer_close(wr, &d), MS_OK);
	ms_writer_free(wr);
	fclose(f);
	cr_assert_eq(ms_trace_load(zpath, &o, &z, NULL, &d), MS_OK);
	cr_assert_eq(z->n_events, 500);
	for (size_t i = 0; i < 500; i++)
		cr_assert_eq(memcmp(&z->events[i].addr, &all->events[1000 + i].addr, 32), 0);
	remove(zpath);
	ms_trace_free(all);
	ms_trace_free(w);
	ms_trace_free(z);
}

/*
 * What a sink sees, in order: events by their number, annotations by the events before them.
 * Readers hand events over in runs where the sink takes them (ms_sink_events), one by one
 * where it does not: both must give the same sequence.
 */
struct seen {
	uint64_t from; /* the window's first event: event numbers are the whole trace's */
	uint64_t n_events, n_seq, cap;
	int64_t *seq; /* >= 0: event; < 0: an annotation, -1 - events before it */
	uint64_t t_sum;
};

static void seen_add(struct seen *s, int64_t v)
{
	if (s->n_seq == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->seq = realloc(s->seq, s->cap * sizeof(*s->seq));
		cr_assert(s->seq);
	}
	s->seq[s->n_seq++] = v;
}

static ms_status seen_event(void *ctx, const struct ms_event *e)
{
	struct seen *s = ctx;
	s->t_sum += (uint64_t)e->t_ns;
	seen_add(s, (int64_t)s->n_events++);
	return MS_OK;
}

static ms_status seen_events(void *ctx, const struct ms_event *e, size_t n)
{
	cr_assert_gt(n, 0, "an empty run");
	for (size_t i = 0; i < n; i++)
		seen_event(ctx, &e[i]);
	return MS_OK;
}

static ms_status seen_ann(void *ctx, const struct ms_annotation *a)
{
	struct seen *s = ctx;
	cr_assert_eq(a->event_index, s->from + s->n_events, "an annotation out of place");
	seen_add(s, -1 - (int64_t)s->n_events);
	return MS_OK;
}

static struct seen read_seen(const char *path, const struct ms_trace *emit, int runs,
                             const struct ms_read_opts *o)
{
	struct seen s = {0};
	struct ms_sink sink = {0};
	struct ms_symtab syms;
	struct ms_diag d = MS_DIAG_INIT;

	s.from = o ? o->from : 0;
	sink.ctx = &s;
	sink.event = runs ? NULL : seen_event;
	sink.events = runs ? seen_events : NULL;
	sink.annotation = seen_ann;
	if (emit) {
		cr_assert_eq(ms_trace_emit(emit, &sink), MS_OK);
		return s;
	}
	ms_symtab_init(&syms);
	cr_assert_eq(ms_source_read(path, o, &syms, &sink, NULL, &d), MS_OK, "%s", d.msg);
	ms_symtab_release(&syms);
	return s;
}

static void same_seen(const struct seen *a, const struct seen *b, const char *what)
{
	cr_assert_eq(a->n_seq, b->n_seq, "%s: %llu against %llu calls", what,
	             (unsigned long long)a->n_seq, (unsigned long long)b->n_seq);
	cr_assert_eq(memcmp(a->seq, b->seq, a->n_seq * sizeof(*a->seq)), 0, "%s", what);
	cr_assert_eq(a->t_sum, b->t_sum, "%s", what);
}

Test(snapshots, event_runs)
{
	static const char *names[] = {"dynamic_oom",        "gpt_train",   "multistream",
	                              "resnet50",           "dynamic_seq", "dynamic_expandable",
	                              "dynamic_empty_cache"};
	int tested = 0;

	for (size_t f = 0; f < sizeof(names) / sizeof(names[0]); f++) {
		const char *path = th_snapshot_path(names[f]);
		struct ms_trace *t;
		struct ms_diag d = MS_DIAG_INIT;
		struct seen one, runs, e1, er;
		size_t at = 0;

		if (!path)
			continue;
		tested++;
		cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK, "%s", d.msg);
		cr_assert_gt(t->n_anns, 0, "%s: no annotations to place", names[f]);
		/*
		 * Where each annotation belongs, worked out here: before the first event from
		 * the last one's place on that is on a later device, or on the same at the same
		 * time or later (PyTorch records them apart from the trace).
		 */
		for (size_t a = 0; a < t->n_anns; a++) {
			const struct ms_annotation *x = &t->anns[a];
			if (a)
				cr_assert(t->anns[a - 1].device < x->device ||
				          (t->anns[a - 1].device == x->device &&
				           t->anns[a - 1].t_ns <= x->t_ns));
			while (at < t->n_events && !(x->device < t->events[at].device ||
			                             (x->device == t->events[at].device &&
			                              x->t_ns <= t->events[at].t_ns)))
				at++;
			cr_assert_eq(x->event_index, at, "%s: annotation %zu", names[f], a);
		}
		one = read_seen(path, NULL, 0, NULL);
		runs = read_seen(path, NULL, 1, NULL);
		e1 = read_seen(NULL, t, 0, NULL);
		er = read_seen(NULL, t, 1, NULL);
		cr_assert_eq(one.n_events, t->n_events);
		cr_assert_eq(one.n_seq, t->n_events + t->n_anns);
		same_seen(&one, &runs, names[f]);
		same_seen(&one, &e1, names[f]);
		same_seen(&one, &er, names[f]);
		/* windows, one by one and in runs: the whole sequence's slice */
		for (uint64_t from = 0; from < t->n_events; from += t->n_events / 5 + 1) {
			struct ms_read_opts o = {from, from + t->n_events / 3 + 7};
			struct seen w1 = read_seen(path, NULL, 0, &o),
			            wr = read_seen(path, NULL, 1, &o);
			uint64_t lo = 0, hi;
			same_seen(&w1, &wr, names[f]);
			while (lo < one.n_seq &&
			       (one.seq[lo] >= 0 ? one.seq[lo] : -1 - one.seq[lo]) < (int64_t)from)
				lo++;
			for (hi = lo;
			     hi < one.n_seq &&
			     (one.seq[hi] >= 0 ? one.seq[hi] : -1 - one.seq[hi]) < (int64_t)o.to;
			     hi++)
				;
			cr_assert_eq(w1.n_seq, hi - lo, "%s: window from %llu", names[f],
			             (unsigned long long)from);
			for (uint64_t i = 0; i < w1.n_seq; i++)
				cr_assert_eq(w1.seq[i] >= 0 ? w1.seq[i] + (int64_t)from
				                            : w1.seq[i] - (int64_t)from,
				             one.seq[lo + i]);
			free(w1.seq);
			free(wr.seq);
		}
		free(one.seq);
		free(runs.seq);
		free(e1.seq);
		free(er.seq);
		ms_trace_free(t);
	}
	cr_assert(tested, "no real snapshot in testdata/snapshots");
}

/*
 * The segments' string values, each way PyTorch writes them or might: segment_type "small"
 * (anything else, or none, is large) and the block states (none, or a value that is not a
 * string, is inactive; an unknown string is an error naming the segment and block).
 */
Test(snapshots, segment_strings)
{
	static const char *const json =
	        "{\"segments\": ["
	        "{\"address\": 4096, \"total_size\": 8192, \"segment_type\": \"small\", "
	        "\"blocks\": ["
	        "{\"size\": 1024, \"state\": \"active_allocated\"},"
	        "{\"size\": 1024, \"state\": \"active_pending_free\"},"
	        "{\"size\": 1024, \"state\": \"active_awaiting_free\"},"
	        "{\"size\": 1024, \"state\": \"inactive\"},"
	        "{\"size\": 1024},"
	        "{\"size\": 1024, \"state\": 7}]},"
	        "{\"address\": 65536, \"total_size\": 4096, \"segment_type\": \"large\", "
	        "\"blocks\": []},"
	        "{\"address\": 131072, \"total_size\": 4096, \"blocks\": []},"
	        "{\"address\": 262144, \"total_size\": 4096, \"segment_type\": \"smal\", "
	        "\"blocks\": []}"
	        "], \"device_traces\": [[]]}";
	static const uint8_t want_state[] = {MS_BLOCK_ACTIVE_ALLOCATED,
	                                     MS_BLOCK_ACTIVE_PENDING_FREE,
	                                     MS_BLOCK_ACTIVE_PENDING_FREE,
	                                     MS_BLOCK_INACTIVE,
	                                     MS_BLOCK_INACTIVE,
	                                     MS_BLOCK_INACTIVE};
	const char *bad = "{\"segments\": [{\"address\": 4096, \"total_size\": 4096, \"blocks\": ["
	                  "{\"size\": 4096, \"state\": \"active\"}]}], \"device_traces\": [[]]}";
	struct ms_trace *t;
	struct ms_diag d = MS_DIAG_INIT;
	const char *path = th_write_temp(json, strlen(json), ".json");

	cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK, "%s", d.msg);
	cr_assert_eq(t->n_segs, 4);
	cr_assert(t->segs[0].is_small);
	cr_assert(!t->segs[1].is_small && !t->segs[2].is_small && !t->segs[3].is_small);
	cr_assert_eq(t->segs[0].n_blocks, 6);
	for (size_t i = 0; i < 6; i++)
		cr_assert_eq(t->blocks[t->seg_block0[0] + i].state, want_state[i], "block %zu", i);
	ms_trace_free(t);
	remove(path);

	path = th_write_temp(bad, strlen(bad), ".json");
	cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_ERR_FORMAT);
	cr_assert(strstr(d.msg, "segment 0 block 0: malformed field"), "%s", d.msg);
	remove(path);
}

/*
 * Every snapshot layout from PyTorch 2.0 to 2.15 (testdata/snapshots/versions, written by
 * scripts/gen_version_cases.py with the expectations it computed from its own dicts): each
 * device's events by action, segments, reserved and allocated bytes as written. Entries that
 * are no allocator event ("annotate", "user_defined") or unknown are skipped with a warning.
 */
Test(snapshots, versions_read_as_written)
{
	char path[4096];
	cJSON *exp, *f;
	int n_files = 0;

	snprintf(path, sizeof(path), "%s/snapshots/versions/expected.json", MS_TESTDATA);
	exp = load_json(path);
	cr_assert(exp, "%s: missing or not JSON", path);
	cJSON_ArrayForEach(f, exp)
	{
		struct ms_trace *t;
		struct ms_diag d = MS_DIAG_INIT;
		const cJSON *ev = cJSON_GetObjectItemCaseSensitive(f, "n_events"), *dev, *a;
		const cJSON *segs = cJSON_GetObjectItemCaseSensitive(f, "segments_by_device");
		uint64_t skipped = 0, want_total = 0;
		ms_status s;

		snprintf(path, sizeof(path), "%s/snapshots/versions/%s.pickle", MS_TESTDATA,
		         f->string);
		s = ms_trace_load(path, NULL, &t, NULL, &d);
		cr_assert_eq(s, MS_OK, "%s: %s", f->string, d.msg);
		n_files++;
		cJSON_ArrayForEach(dev, ev)
		{
			unsigned device = (unsigned)atoi(dev->string);
			cJSON_ArrayForEach(a, dev)
			{
				int act = ms_action_parse(a->string, strlen(a->string));
				uint64_t got = 0;
				if (act < 0) { /* skipped, not replayed */
					skipped += (uint64_t)a->valuedouble;
					continue;
				}
				want_total += (uint64_t)a->valuedouble;
				for (size_t i = 0; i < t->n_events; i++)
					got += t->events[i].device == device &&
					       t->events[i].action == act;
				cr_expect_eq(got, (uint64_t)a->valuedouble,
				             "%s: device %u, %s: %llu, want %d", f->string, device,
				             a->string, (unsigned long long)got,
				             (int)a->valuedouble);
			}
		}
		cr_expect_eq(t->n_events, want_total, "%s: %zu events, want %llu", f->string,
		             t->n_events, (unsigned long long)want_total);
		{
			/* the release its fields tell, as the generator worked it out */
			const char *lo =
			        cJSON_GetObjectItemCaseSensitive(f, "version_min")->valuestring;
			const char *hi =
			        cJSON_GetObjectItemCaseSensitive(f, "version_max")->valuestring;
			char want[96];
			if (!strncmp(f->string, "npu_", 4))
				snprintf(want, sizeof(want), "torch_npu (Ascend)");
			else if (!strncmp(f->string, "nightly_2024", 12))
				snprintf(want, sizeof(want), "a nightly build between 2.4 and 2.5");
			else if (!strcmp(lo, hi))
				snprintf(want, sizeof(want), "%s", lo);
			else if (!strcmp(hi, "main"))
				snprintf(want, sizeof(want), "%s or later", lo);
			else if (atoi(hi + 2) == atoi(lo + 2) + 1)
				snprintf(want, sizeof(want), "%s or %s", lo, hi);
			else
				snprintf(want, sizeof(want), "%s to %s", lo, hi);
			cr_expect_str_eq(t->meta.layout_release, want, "%s", f->string);
		}
		cr_expect_eq(skipped > 0, d.warnings > 0, "%s: %llu entries skipped, warnings %d",
		             f->string, (unsigned long long)skipped, (int)d.warnings);
		cJSON_ArrayForEach(dev, segs)
		{
			unsigned device = (unsigned)atoi(dev->string);
			uint64_t n = 0, reserved = 0, allocated = 0;
			const cJSON *r = cJSON_GetObjectItemCaseSensitive(
			        cJSON_GetObjectItemCaseSensitive(f, "reserved_bytes"), dev->string);
			const cJSON *al = cJSON_GetObjectItemCaseSensitive(
			        cJSON_GetObjectItemCaseSensitive(f, "allocated_bytes"),
			        dev->string);
			for (size_t i = 0; i < t->n_segs; i++)
				if (t->segs[i].device == device) {
					n++;
					reserved += t->segs[i].total_size;
					allocated += t->segs[i].allocated_size;
				}
			cr_expect_eq(n, (uint64_t)dev->valuedouble, "%s: device %u: %llu segments",
			             f->string, device, (unsigned long long)n);
			cr_expect(r && (uint64_t)r->valuedouble == reserved,
			          "%s: device %u reserved %llu", f->string, device,
			          (unsigned long long)reserved);
			cr_expect(al && (uint64_t)al->valuedouble == allocated,
			          "%s: device %u allocated %llu", f->string, device,
			          (unsigned long long)allocated);
		}
		ms_trace_free(t);
	}
	cr_expect_geq(n_files, 18, "only %d layouts", n_files);
	cJSON_Delete(exp);
}

/* The frames of event i of t: n and the frame ids, innermost first. */
static const uint32_t *frames_of(const struct ms_trace *t, size_t i, size_t *n)
{
	return ms_symtab_get_stack(&t->syms, t->events[i].stack, n);
}

static const char *frame_str(const struct ms_trace *t, uint32_t id)
{
	return ms_symtab_get_str(&t->syms, id)->s;
}

/*
 * A snapshot as _record_memory_history(stacks="all") writes it (scripts/gen_stack_cases.py):
 * C++ and Python frames in one list, a line of 2^64 - 1, keys PyTorch does not write, a stack
 * 3000 frames deep. Read whole, by the general path in small pieces, and as events.
 */
Test(snapshots, stacks_all)
{
	static const size_t depth[] = {41, 41, 21, 3000, 30, 20, 41, 0, 18, 18, 41, 41};
	const char *path = MS_TESTDATA "/snapshots/edge/stacks_all.pickle";
	struct ms_trace *t = NULL, *g = NULL;
	struct ms_diag d = MS_DIAG_INIT;
	size_t n, len;
	const uint32_t *fr;
	char *data;
	int saw_max_line = 0;

	cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK, "%s", d.msg);
	cr_assert_eq(t->n_events, 12);
	for (size_t i = 0; i < t->n_events; i++) {
		frames_of(t, i, &n);
		cr_expect_eq(n, depth[i], "event %zu: %zu frames", i, n);
	}
	fr = frames_of(t, 3, &n);
	cr_assert_eq(n, 3000);
	cr_expect_str_eq(frame_str(t, t->syms.frames[fr[0]].name), "torch::unwind::unwind()");
	cr_expect_str_eq(frame_str(t, t->syms.frames[fr[0]].file), "??");
	for (size_t i = 0; i < n; i++) {
		const struct ms_frame *f = &t->syms.frames[fr[i]];
		if (!strcmp(frame_str(t, f->name), "init_ctx")) {
			cr_expect_eq(f->line, 0, "a line of 2^64 - 1 is read as none");
			saw_max_line = 1;
		}
	}
	cr_expect(saw_max_line);
	/* the frames with keys PyTorch does not write ('column', 'end_line') */
	cr_expect_str_eq(frame_str(t, t->syms.frames[fr[14]].file), "/home/ada/proj/deep.py");
	cr_expect_eq(t->syms.frames[fr[14]].line, 7);
	cr_expect_str_eq(frame_str(t, t->syms.frames[fr[2993]].name), "run");
	cr_expect_eq(t->syms.frames[fr[2993]].line, 15);
	cr_assert_eq(t->n_segs, 1);
	cr_assert_eq(t->segs[0].n_blocks, 5);
	ms_symtab_get_stack(&t->syms, t->blocks[t->seg_block0[0] + 2].stack, &n);
	cr_expect_eq(n, 3000, "the deep block's frames");

	cr_assert(data = th_read_file(path, &len));
	cr_assert_eq(th_pickle_load(data, len, 0, 7, &g, NULL, &d), MS_OK, "%s", d.msg);
	{
		struct ms_pool_inference pi; /* as loading the file tells them */
		cr_assert_eq(ms_trace_infer_pools(g, &pi), MS_OK);
	}
	cr_expect_eq(th_events_diff(t, g), -1, "the general path differs at event %ld",
	             th_events_diff(t, g));
	ms_trace_free(g);
	free(data);
	ms_trace_free(t);
}

/*
 * What a frame's values may be: extra keys, a line that is None, a float or past uint32 (no
 * line), a name that is None; and what is malformed: a line that is a string or a list, a
 * frame that is not a dict, frames that are not a list.
 */
Test(snapshots, frame_values)
{
#define SNAP(frames)                                                                       \
	"{\"segments\": [], \"device_traces\": [[{\"action\": \"alloc\", \"addr\": 4096, " \
	"\"size\": "                                                                       \
	"512, \"frames\": " frames "}]]}"
	static const char *const good[] = {
	        SNAP("[{\"name\": \"f\", \"filename\": \"a.py\", \"line\": 3, \"col\": 1, "
	             "\"extra\": {\"x\": [1, 2]}}]"),
	        SNAP("[{\"name\": \"f\", \"filename\": \"a.py\", \"line\": null}]"),
	        SNAP("[{\"name\": \"f\", \"filename\": \"a.py\", \"line\": 18446744073709551615}]"),
	        SNAP("[{\"name\": \"f\", \"filename\": \"a.py\", \"line\": -1}]"),
	        SNAP("[{\"name\": null, \"filename\": \"a.py\"}]"),
	        SNAP("null"),
	};
	static const char *const bad[] = {
	        SNAP("[{\"name\": \"f\", \"filename\": \"a.py\", \"line\": \"3\"}]"),
	        SNAP("[{\"name\": \"f\", \"filename\": \"a.py\", \"line\": [3]}]"),
	        SNAP("[{\"name\": 5, \"filename\": \"a.py\", \"line\": 3}]"),
	        SNAP("[\"f (a.py:3)\"]"),
	        SNAP("7"),
	};
#undef SNAP
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct ms_trace *t = NULL;
		struct ms_diag d = MS_DIAG_INIT;
		const char *path = th_write_temp(good[i], strlen(good[i]), ".json");
		size_t n;
		const uint32_t *fr;
		cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK, "good %zu: %s", i,
		             d.msg);
		cr_assert_eq(t->n_events, 1);
		fr = frames_of(t, 0, &n);
		cr_expect_eq(n, i == 5 ? 0 : 1, "good %zu", i);
		if (n)
			cr_expect_eq(t->syms.frames[fr[0]].line, i == 0 ? 3 : 0, "good %zu", i);
		ms_trace_free(t);
		remove(path);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ms_trace *t = NULL;
		struct ms_diag d = MS_DIAG_INIT;
		const char *path = th_write_temp(bad[i], strlen(bad[i]), ".json");
		cr_expect_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_ERR_FORMAT, "bad %zu", i);
		cr_expect(strstr(d.msg, "bad 'frames'"), "bad %zu: %s", i, d.msg);
		remove(path);
	}
}

/*
 * Every snapshot of ../shared/testdata/wild (third-party, recorded by others with PyTorch 2.0 to
 * 2.10+, some with stacks="all") reads; skipped where that directory is absent.
 */
static void wild_read(const char *name, struct ms_trace *t, void *ctx)
{
	(void)name, (void)t;
	(*(int *)ctx)++;
}

Test(snapshots, wild_snapshots_read)
{
	int n = 0;

	if (th_each_wild(wild_read, &n) < 0) {
		cr_skip_test("%s: absent (third-party snapshots, not bundled)", MS_SHARED_WILD);
		return;
	}
	cr_expect_gt(n, 0, "%s holds no snapshot", MS_SHARED_WILD);
}

/*
 * The packed form the snapshot reader keeps its events in gives back exactly what went in:
 * extreme values, differences of both signs, rare fields changing and not, across chunks.
 */
Test(snapshots, event_pack_round_trip)
{
	enum { N = 200000 };
	struct ms_event_pack pack = {0};
	struct ms_event_pack_reader rd;
	struct ms_event *in = calloc(N, sizeof(*in)), out[97];
	uint64_t x = 88172645463325252ull;
	size_t got = 0, n;

	cr_assert(in);
	for (size_t i = 0; i < N; i++) {
		struct ms_event *e = &in[i];
		uint64_t r[6];
		for (int k = 0; k < 6; k++) { /* xorshift64 */
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			r[k] = x;
		}
		e->action = (uint8_t)(r[0] % MS_ACT_COUNT);
		/* mostly near the last one, at times anywhere (0 and all ones included) */
		e->addr = i % 97 == 0 ? (i & 1 ? UINT64_MAX : 0)
		          : r[1] % 4  ? (i ? in[i - 1].addr : 0) + (r[2] % 4096) * 512 - (1u << 20)
		                      : r[2];
		e->t_ns = i % 101 == 0 ? (i & 1 ? INT64_MIN : INT64_MAX)
		                       : (int64_t)((uint64_t)(i ? in[i - 1].t_ns : 0) +
		                                   r[3] % 100000 - 1000);
		e->size = r[4] % 5 ? r[4] % (1u << 26) : r[4];
		e->stack = r[5] % 7 ? (uint32_t)(r[5] >> 40) : (uint32_t)r[5];
		if (r[0] % 13 == 0 || i == 0) {
			e->stream = r[0] % 3 ? r[1] >> 20 : UINT64_MAX;
			e->device = (uint16_t)(r[2] >> 48);
			e->pool = r[3] % 2 ? MS_POOL_UNKNOWN : (uint16_t)(r[3] >> 50);
			e->source = (uint8_t)(r[4] >> 56);
			e->user_metadata = (uint32_t)(r[5] >> 32);
			e->compile_context = r[5] % 3 ? 0 : UINT32_MAX;
		} else {
			e->stream = in[i - 1].stream;
			e->device = in[i - 1].device;
			e->pool = in[i - 1].pool;
			e->source = in[i - 1].source;
			e->user_metadata = in[i - 1].user_metadata;
			e->compile_context = r[0] % 17 ? in[i - 1].compile_context : 7;
		}
		cr_assert_eq(ms_event_pack_add(&pack, e), MS_OK);
	}
	cr_assert_eq(pack.n, N);
	ms_event_pack_read_begin(&rd, &pack);
	while ((n = ms_event_pack_read(&rd, out, sizeof(out) / sizeof(out[0])))) {
		for (size_t j = 0; j < n; j++) {
			const struct ms_event *a = &in[got + j], *b = &out[j];
			cr_assert(a->addr == b->addr && a->size == b->size &&
			                  a->stream == b->stream && a->t_ns == b->t_ns &&
			                  a->stack == b->stack &&
			                  a->user_metadata == b->user_metadata &&
			                  a->compile_context == b->compile_context &&
			                  a->device == b->device && a->pool == b->pool &&
			                  a->action == b->action && a->source == b->source,
			          "event %zu differs", got + j);
		}
		got += n;
	}
	cr_assert_eq(got, N);
	ms_event_pack_free(&pack);
	ms_event_pack_free(&pack); /* empty: again is harmless */
	free(in);
}
