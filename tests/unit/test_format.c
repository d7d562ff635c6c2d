/* The .zst writer and reader: round trips of random traces, versions, record classes, seeking. */
#include <criterion/criterion.h>
#include <msgpack.h>
#include <stdio.h>
#include <string.h>
#include <zstd.h>

#include "common/alloc.h"
#include "common/bytes.h"
#include "format/trace_read.h"
#include "format/trace_write.h"
#include "helpers.h"
#include "memsnap/format.h"
#include "parse/pool_infer.h"
#include "parse/read_ahead.h"
#include "parse/trace.h"

/* A random trace exercising every field: several devices, streams, stacks, strings. */
static struct ms_trace *random_trace(uint64_t seed, size_t n)
{
	struct ms_trace *t;
	uint64_t rs = seed;
	uint32_t stacks[8] = {0}, strs[4] = {0};
	static struct ms_device devs[2] = {{0, 150109880320ULL, "NVIDIA H200"},
	                                   {1, 80ULL << 30, ""}};

	cr_assert_eq(ms_trace_new(&t), MS_OK);
	t->meta.producer = "test";
	t->meta.producer_version = "1";
	t->meta.torch_version = "2.11.0";
	t->meta.hostname = "host";
	t->meta.settings.present = 1;
	t->meta.settings.alloc_conf = "expandable_segments:True";
	t->meta.settings.max_split_size = 128 << 20;
	t->meta.settings.garbage_collection_threshold = 0.6;
	t->meta.settings.roundup_power2_divisions[3] = 4;
	t->meta.n_devices = 2;
	t->meta.devices = devs;
	t->meta.limit_bytes = 12345678;
	for (int i = 0; i < 4; i++) {
		char b[32];
		snprintf(b, sizeof(b), "str-%d", i);
		cr_assert_eq(ms_symtab_str(&t->syms, b, strlen(b), &strs[i]), MS_OK);
	}
	for (int i = 1; i < 8; i++) {
		uint32_t fr[3];
		for (int k = 0; k < 3; k++) {
			struct ms_frame f = {strs[k], strs[(k + i) % 4], (uint32_t)(i * 10 + k)};
			cr_assert_eq(ms_symtab_frame(&t->syms, &f, &fr[k]), MS_OK);
		}
		cr_assert_eq(ms_symtab_stack(&t->syms, fr, (size_t)(i % 3) + 1, &stacks[i]), MS_OK);
	}
	t->events = calloc(n, sizeof(*t->events));
	t->cap_events = n;
	int64_t tm = 1795311094380239000LL;
	for (size_t i = 0; i < n; i++) {
		struct ms_event *e = &t->events[i];
		uint64_t r = th_rand(&rs);
		e->action = (uint8_t)(r % MS_ACT_COUNT);
		e->addr = (r & 7) == 0 ? th_rand(&rs)
		                       : 0x7f0000000000ULL + (th_rand(&rs) % (1u << 30)) * 512;
		e->size = (r >> 8) & 1 ? (th_rand(&rs) % (1ULL << 34))
		                       : (i ? t->events[i - 1].size : 0);
		e->stream = (r >> 9) & 3 ? 0 : 0x7f3a00000000ULL + ((r >> 11) & 3);
		tm += (int64_t)(th_rand(&rs) % 100000) - ((r >> 13) & 1 ? 50 : 0);
		e->t_ns = tm;
		e->stack = stacks[(r >> 14) & 7];
		e->device = (uint16_t)((r >> 17) & 1);
		e->user_metadata = (r >> 18) & 1 ? strs[1] : 0;
		e->compile_context = (r >> 19) & 1 ? strs[2] : 0;
		e->source = (uint8_t)((r >> 20) & 1);
		/* mostly the previous event's pool, sometimes unknown, default or a private one */
		e->pool = (r >> 21) & 7   ? (i ? t->events[i - 1].pool : MS_POOL_UNKNOWN)
		          : (r >> 24) & 1 ? MS_POOL_UNKNOWN
		                          : (uint16_t)((r >> 25) % 6);
		if (i % 97 == 0) {
			struct ms_annotation a = {tm,
			                          i,
			                          strs[3],
			                          e->device,
			                          (uint8_t)(i % 3),
			                          (uint8_t)(i % 2),
			                          MS_CALL_NONE};
			cr_assert_eq(ms_grow(&t->anns, &t->cap_anns, t->n_anns + 1, sizeof(a)), 0);
			t->anns[t->n_anns++] = a;
		}
	}
	t->n_events = n;
	return t;
}

Test(format, random_round_trips)
{
	static const size_t frames[] = {256, 4096, 1 << 20};
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct ms_trace *t = random_trace(seed, 5000), *u;
		const char *path = th_write_trace(t, frames[seed % 3], (int)(seed % 4) + 1);
		struct ms_diag d = MS_DIAG_INIT;
		struct ms_source_info si;
		cr_assert_eq(ms_trace_load(path, NULL, &u, &si, &d), MS_OK, "%s", d.msg);
		cr_assert_eq(d.warnings, 0, "%s", d.warning);
		cr_assert(si.zst.has_end && si.zst.has_footer);
		cr_assert_eq(th_events_diff(t, u), -1, "seed %llu differs at %ld",
		             (unsigned long long)seed, th_events_diff(t, u));
		cr_assert_str_eq(u->meta.torch_version, "2.11.0");
		cr_assert_str_eq(u->meta.devices[0].name, "NVIDIA H200");
		cr_assert_eq(u->meta.devices[0].total_memory, 150109880320ULL);
		cr_assert_eq(u->meta.limit_bytes, 12345678);
		cr_assert_eq(u->meta.settings.max_split_size, 128 << 20);
		cr_assert(u->meta.settings.garbage_collection_threshold == 0.6);
		cr_assert_eq(u->meta.settings.roundup_power2_divisions[3], 4);
		cr_assert_str_eq(u->meta.settings.alloc_conf, "expandable_segments:True");
		for (int a = 0; a < MS_ACT_COUNT; a++) {
			uint64_t c = 0;
			for (size_t i = 0; i < t->n_events; i++)
				c += t->events[i].action == a;
			cr_assert_eq(si.zst.end_by_action[a], c);
		}
		remove(path);
		ms_trace_free(t);
		ms_trace_free(u);
	}
}

/* A window decodes only the frames it needs, through the index, and gives exactly its events. */
Test(format, seek_window)
{
	struct ms_trace *t = random_trace(42, 20000), *u;
	const char *path = th_write_trace(t, 1024, 3);
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_source_info si;
	static const uint64_t win[][2] = {
	        {0, 10},         {7777, 7800},        {19990, 20000},
	        {5, UINT64_MAX}, {19999, UINT64_MAX}, {20000, UINT64_MAX}};

	for (size_t k = 0; k < sizeof(win) / sizeof(win[0]); k++) {
		struct ms_read_opts o = {win[k][0], win[k][1]};
		uint64_t to = win[k][1] > 20000 ? 20000 : win[k][1];
		cr_assert_eq(ms_trace_load(path, &o, &u, &si, &d), MS_OK, "%s", d.msg);
		cr_assert_eq(u->n_events, to - win[k][0], "window %zu", k);
		for (size_t i = 0; i < u->n_events; i++)
			cr_assert_eq(memcmp(&u->events[i], &t->events[win[k][0] + i], 32), 0);
		if (win[k][0] > 2000)
			cr_assert(si.zst.used_index && si.zst.n_frames < 40,
			          "window %zu read %llu frames", k,
			          (unsigned long long)si.zst.n_frames);
		cr_assert_eq(d.warnings, 0, "%s", d.warning);
		ms_trace_free(u);
	}
	remove(path);
	ms_trace_free(t);
}

/* Build a file by hand: header with the given version/flags, then one frame of raw records. */
static const char *handmade(uint16_t major, uint64_t flags, const char *records, size_t rn)
{
	static unsigned char buf[4096];
	size_t n = 0, c;
	unsigned char h[32] = {0x5d, 0x2a, 0x4d, 0x18, 24, 0, 0, 0, 'M', 'S', 'N', 'P'};

	h[12] = (unsigned char)major;
	h[13] = (unsigned char)(major >> 8);
	h[16] = 24;
	for (int i = 0; i < 8; i++)
		h[20 + i] = (unsigned char)(flags >> (8 * i));
	memcpy(buf, h, 32);
	n = 32;
	c = ZSTD_compress(buf + n, sizeof(buf) - n, records, rn, 3);
	cr_assert(!ZSTD_isError(c));
	n += c;
	return th_write_temp(buf, n, ".zst");
}

/* FRAME [1,0,0,0], META [0,{}] */
#define PRE                    \
	"\x94\x01\x00\x00\x00" \
	"\x92\x00\x80"

Test(format, version_gates_and_record_classes)
{
	struct ms_trace *t;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_source_info si;
	const char *p;

	p = handmade(2, 0, PRE, sizeof(PRE) - 1);
	cr_assert_eq(ms_trace_load(p, NULL, &t, NULL, &d), MS_ERR_VERSION);
	cr_assert(strstr(d.msg, "2.0 needs a newer memsnap"), "%s", d.msg);

	d = (struct ms_diag)MS_DIAG_INIT;
	p = handmade(1, 1, PRE, sizeof(PRE) - 1); /* an unknown must-understand flag */
	cr_assert_eq(ms_trace_load(p, NULL, &t, NULL, &d), MS_ERR_VERSION);

	d = (struct ms_diag)MS_DIAG_INIT;
	p = handmade(1, 1ULL << 40, PRE, sizeof(PRE) - 1); /* may-ignore flag: fine */
	cr_assert_eq(ms_trace_load(p, NULL, &t, NULL, &d), MS_OK, "%s", d.msg);
	cr_assert_eq(d.warnings, 1); /* no END */
	ms_trace_free(t);

	d = (struct ms_diag)MS_DIAG_INIT;
	p = handmade(1, 0, PRE "\x91\x32", sizeof(PRE) + 1); /* unknown mandatory type 50 */
	cr_assert_eq(ms_trace_load(p, NULL, &t, NULL, &d), MS_ERR_VERSION);
	cr_assert(strstr(d.msg, "record type 50"), "%s", d.msg);

	/* unknown optional type 100 with extra fields, then an alloc event with extra trailing
	 * fields (past the 1.5 forward stack, 0 here) */
	d = (struct ms_diag)MS_DIAG_INIT;
	p = handmade(1, 0,
	             PRE "\x93\x64\x01\x02"
	                 "\x9d\x10\x00\x05\x07\x00\x00\x00\x00\x00\x00\x09\x00\x09",
	             sizeof(PRE) - 1 + 4 + 14);
	cr_assert_eq(ms_trace_load(p, NULL, &t, &si, &d), MS_OK, "%s", d.msg);
	cr_assert_eq(si.zst.skipped_optional, 1);
	cr_assert_eq(t->n_events, 1);
	cr_assert_eq(t->events[0].addr, 5);
	cr_assert_eq(t->events[0].size, 7);
	ms_trace_free(t);

	/* a record declaring 2^30 elements in 5 bytes: refused before msgpack-c allocates 24 GiB */
	d = (struct ms_diag)MS_DIAG_INIT;
	p = handmade(1, 0, PRE "\xdd\x40\x00\x00\x00\x01", sizeof(PRE) + 5);
	cr_assert_eq(ms_trace_load(p, NULL, &t, NULL, &d), MS_ERR_FORMAT);
	d = (struct ms_diag)MS_DIAG_INIT;
	p = handmade(1, 0, PRE "\x92\x40\xdf\x7f\xff\xff\xff", sizeof(PRE) + 6); /* map32 */
	cr_assert_eq(ms_trace_load(p, NULL, &t, NULL, &d), MS_ERR_FORMAT);

	d = (struct ms_diag)MS_DIAG_INIT;
	p = handmade(1, 0, "\x92\x00\x80", 3); /* a frame must start with FRAME */
	cr_assert_eq(ms_trace_load(p, NULL, &t, NULL, &d), MS_ERR_FORMAT);

	d = (struct ms_diag)MS_DIAG_INIT;
	p = handmade(1, 0, PRE "\x95\x10\x00\x00\x00\x05",
	             sizeof(PRE) + 5); /* unknown stream index 5 */
	cr_assert_eq(ms_trace_load(p, NULL, &t, NULL, &d), MS_ERR_FORMAT);
	cr_assert(strstr(d.msg, "EVENT"), "%s", d.msg);
}

/* Every released version stays readable: testdata/traces/v<M>.<m>/ */
Test(format, released_versions_load)
{
	if (getenv("MEMSNAP_UPDATE_GOLDEN")) { /* written once per format version, then kept */
		struct ms_trace *t = random_trace(1, 2000);
		const char *tmp = th_write_trace(t, 4096, 3);
		char cmd[512];
		snprintf(cmd, sizeof(cmd), "cp %s %s/traces/v1.0/random.zst", tmp, MS_TESTDATA);
		cr_assert_eq(system(cmd), 0);
		ms_trace_free(t);
	}
	if (getenv("MEMSNAP_UPDATE_GOLDEN")) { /* 1.1: a DROPPED record between events */
		struct ms_trace *t = random_trace(2, 300);
		const char *tmp = th_write_temp("", 0, ".zst");
		FILE *f = fopen(tmp, "wb");
		struct ms_writer *w;
		struct ms_diag d = MS_DIAG_INIT;
		char cmd[512];
		cr_assert_eq(ms_writer_open(f, NULL, &t->syms, &w, &d), MS_OK);
		cr_assert_eq(ms_writer_meta(w, &t->meta), MS_OK);
		for (size_t i = 0; i < t->n_events; i++) {
			if (i == 100)
				cr_assert_eq(ms_writer_dropped(w, t->events[i].t_ns, 7), MS_OK);
			cr_assert_eq(ms_writer_event(w, &t->events[i]), MS_OK);
		}
		cr_assert_eq(ms_writer_close(w, &d), MS_OK);
		ms_writer_free(w);
		fclose(f);
		snprintf(cmd, sizeof(cmd), "cp %s %s/traces/v1.1/dropped.zst", tmp, MS_TESTDATA);
		cr_assert_eq(system(cmd), 0);
		ms_trace_free(t);
	}
	static const char *const files[] = {"v1.0/dynamic_oom.zst",
	                                    "v1.0/random.zst",
	                                    "v1.1/recorded_h100_expandable.zst",
	                                    "v1.2/two_devices.zst",
	                                    "v1.3/recorded_graph_pools.zst",
	                                    "v1.4/expandable_not_recorded.zst",
	                                    "v1.5/forward_frames.zst"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[512];
		struct ms_trace *t;
		struct ms_diag d = MS_DIAG_INIT;
		struct ms_source_info si;
		snprintf(path, sizeof(path), "%s/traces/%s", MS_TESTDATA, files[i]);
		cr_assert_eq(ms_trace_load(path, NULL, &t, &si, &d), MS_OK, "%s: %s", path, d.msg);
		cr_assert(si.zst.has_end && t->n_events > 0);
		cr_assert_eq(d.warnings, 0);
		ms_trace_free(t);
	}
}

/* The golden v1.0 file still decodes to the same events as its source snapshot. */
Test(format, golden_matches_source)
{
	struct ms_trace *a, *b;
	struct ms_diag d = MS_DIAG_INIT;

	cr_assert_eq(ms_trace_load(MS_TESTDATA "/traces/v1.0/dynamic_oom.zst", NULL, &a, NULL, &d),
	             MS_OK);
	cr_assert_eq(ms_trace_load(MS_TESTDATA "/snapshots/dynamic_oom.pickle", NULL, &b, NULL, &d),
	             MS_OK);
	cr_assert_eq(th_events_diff(a, b), -1);
	ms_trace_free(a);
	ms_trace_free(b);
}

/* 1.1's DROPPED record: counted, reported, and the events around it intact. */
Test(format, dropped_record)
{
	struct ms_trace *t, *ref = random_trace(2, 300);
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_source_info si;

	cr_assert_eq(ms_trace_load(MS_TESTDATA "/traces/v1.1/dropped.zst", NULL, &t, &si, &d),
	             MS_OK, "%s", d.msg);
	cr_assert_eq(si.zst.minor, 1);
	cr_assert_eq(si.zst.dropped_events, 7);
	cr_assert_eq(si.zst.first_drop_event, 100);
	cr_assert(strstr(d.warning, "dropped 7 events (first before event 100)"), "%s", d.warning);
	cr_assert_eq(t->n_events, ref->n_events);
	for (size_t i = 0; i < t->n_events; i++) {
		const struct ms_event *a = &t->events[i], *b = &ref->events[i];
		cr_assert(a->action == b->action && a->addr == b->addr && a->size == b->size &&
		                  a->stream == b->stream && a->device == b->device,
		          "event %zu", i);
	}
	ms_trace_free(t);
	ms_trace_free(ref);
}

/* A real recording (memsnap record on an H100, expandable segments, both sources) replays. */
Test(format, recorded_trace_has_both_sources)
{
	struct ms_trace *t;
	struct ms_diag d = MS_DIAG_INIT;
	size_t by_src[2] = {0, 0}, maps[2] = {0, 0};

	cr_assert_eq(ms_trace_load(MS_TESTDATA "/traces/v1.1/recorded_h100_expandable.zst", NULL,
	                           &t, NULL, &d),
	             MS_OK, "%s", d.msg);
	cr_assert_str_eq(t->meta.torch_version, "2.11.0+cu130");
	cr_assert(t->meta.settings.present && t->meta.settings.expandable_segments);
	for (size_t i = 0; i < t->n_events; i++) {
		by_src[t->events[i].source != 0]++;
		maps[t->events[i].source != 0] += t->events[i].action == MS_ACT_SEGMENT_MAP;
	}
	cr_assert(by_src[0] > 1000 && by_src[1] > 0);
	cr_assert(maps[0] > 0 && maps[1] > 0, "segment_map from PyTorch and from cuMemMap");
	ms_trace_free(t);
}

/*
 * END's by_device (1.2): the events of each device, counted by the writer, read from the
 * trailer alone, equal to a count over every decoded event; a 1.1 file has none.
 */
Test(format, end_counts_events_by_device)
{
	struct ms_trace *t;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_source_info si;
	struct ms_read_opts end_only = {UINT64_MAX, UINT64_MAX};
	struct ms_symtab syms;
	struct ms_sink none = {0};
	uint64_t want[2][2] = {{0, 0}, {0, 0}};

	cr_assert_eq(ms_trace_load(MS_TESTDATA "/traces/v1.2/two_devices.zst", NULL, &t, &si, &d),
	             MS_OK, "%s", d.msg);
	for (size_t i = 0; i < t->n_events; i++) {
		cr_assert_lt(t->events[i].device, 2);
		want[t->events[i].device][t->events[i].source != MS_SRC_TORCH]++;
	}
	cr_assert(si.zst.has_end_devices);
	cr_assert_eq(si.zst.n_end_devices, 2);
	for (uint32_t k = 0; k < 2; k++) {
		cr_expect_eq(si.zst.end_devices[k].device, k);
		cr_expect_eq(si.zst.end_devices[k].events, want[k][0], "device %u", k);
		cr_expect_eq(si.zst.end_devices[k].raw_events, want[k][1], "device %u", k);
	}
	ms_trace_free(t);
	/* from the trailer alone */
	cr_assert_eq(ms_symtab_init(&syms), MS_OK);
	cr_assert_eq(ms_source_read(MS_TESTDATA "/traces/v1.2/two_devices.zst", &end_only, &syms,
	                            &none, &si, &d),
	             MS_OK, "%s", d.msg);
	cr_expect(si.zst.has_footer && si.zst.has_end_devices);
	cr_expect_eq(si.zst.end_devices[1].events, want[1][0]);
	ms_symtab_release(&syms);
	cr_assert_eq(ms_trace_load(MS_TESTDATA "/traces/v1.1/dropped.zst", NULL, &t, &si, &d),
	             MS_OK);
	cr_expect(!si.zst.has_end_devices);
	ms_trace_free(t);
}

static ms_status count_segment(void *ctx, const struct ms_segment *g, const struct ms_block *b)
{
	(void)g;
	(void)b;
	++*(size_t *)ctx;
	return MS_OK;
}

/* The end state starts a frame of its own, at the event count in the index: a read of the end
 * state alone (from = UINT64_MAX) seeks to it and decodes no frame of events. */
Test(format, end_state_in_a_frame_of_its_own)
{
	struct ms_trace *t;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_source_info si;
	struct ms_read_opts end_only = {UINT64_MAX, UINT64_MAX};
	struct ms_symtab syms;
	size_t n_segs = 0, len, off, frames[4096], n_frames = 0;
	struct ms_sink segs = {.ctx = &n_segs, .segment = count_segment};
	const char *path;
	unsigned char *file, *raw;
	msgpack_unpacked u;
	size_t raw_len, pos = 0;

	cr_assert_eq(ms_trace_load(th_snapshot_path("gpt_train"), NULL, &t, &si, &d), MS_OK, "%s",
	             d.msg);
	cr_assert_gt(t->n_events, 10000);
	cr_assert_gt(t->n_segs, 0);
	path = th_write_trace(t, 16 << 10, 1);
	/* the zstd frames after the header: ..., the end state's, the trailer, (the footer) */
	file = (unsigned char *)th_read_file(path, &len);
	cr_assert_not_null(file);
	off = 8 + ms_load_le32(file + 4);
	while (off < len && n_frames < 4096) {
		uint32_t magic = ms_load_le32(file + off);
		if ((magic & 0xFFFFFFF0U) == 0x184D2A50U) {
			off += 8 + ms_load_le32(file + off + 4);
			continue;
		}
		frames[n_frames++] = off;
		off += ZSTD_findFrameCompressedSize(file + off, len - off);
	}
	cr_assert_gt(n_frames, 3);
	raw_len = ZSTD_getFrameContentSize(file + frames[n_frames - 2], len - frames[n_frames - 2]);
	cr_assert_lt(raw_len, (size_t)64 << 20);
	raw = malloc(raw_len);
	cr_assert_eq(ZSTD_decompress(raw, raw_len, file + frames[n_frames - 2],
	                             frames[n_frames - 1] - frames[n_frames - 2]),
	             raw_len);
	msgpack_unpacked_init(&u);
	cr_assert_eq(msgpack_unpack_next(&u, (const char *)raw, raw_len, &pos),
	             MSGPACK_UNPACK_SUCCESS);
	cr_assert_eq(u.data.type, MSGPACK_OBJECT_ARRAY);
	cr_expect_eq(u.data.via.array.ptr[0].via.u64, MS_REC_FRAME);
	cr_expect_eq(u.data.via.array.ptr[1].via.u64, t->n_events,
	             "the end state's frame starts at event %llu, not after the last event",
	             (unsigned long long)u.data.via.array.ptr[1].via.u64);
	msgpack_unpacked_destroy(&u);
	free(raw);
	free(file);
	/* and the end state alone comes whole from it */
	cr_assert_eq(ms_symtab_init(&syms), MS_OK);
	cr_assert_eq(ms_source_read(path, &end_only, &syms, &segs, &si, &d), MS_OK, "%s", d.msg);
	cr_expect_eq(n_segs, t->n_segs);
	cr_expect(si.zst.used_index && si.zst.has_end && si.zst.n_frames == 1);
	ms_symtab_release(&syms);
	ms_trace_free(t);
}

/* 1.3's pool field: a recording of CUDA graphs (testdata/snapshots/pools/graph_pools) names the
 * graph pool (0, 1) on the events PyTorch's tracker put there, and every other event's pool. */
Test(format, pool_field)
{
	struct ms_trace *t;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_source_info si;
	size_t in_graph = 0, unknown = 0;

	cr_assert_eq(ms_trace_load(MS_TESTDATA "/traces/v1.3/recorded_graph_pools.zst", NULL, &t,
	                           &si, &d),
	             MS_OK, "%s", d.msg);
	cr_assert_eq(si.zst.minor, 3);
	for (size_t i = 0; i < t->n_events; i++) {
		if (t->events[i].source != MS_SRC_TORCH)
			continue;
		in_graph += t->events[i].pool == 3; /* (0, 1) */
		unknown += t->events[i].pool == MS_POOL_UNKNOWN;
	}
	cr_assert_gt(in_graph, 0);
	cr_assert_eq(unknown, 0);
	ms_trace_free(t);
}

/* 1.4's expandable_segments_seen: a snapshot that recorded no settings but whose trace maps
 * expandable segments (testdata/snapshots/pools/decode_graphs_expandable in PyTorch 2.2's
 * layout, scripts/as_2_2_layout.py) keeps that through convert; a trace with settings has none. */
Test(format, expandable_segments_seen)
{
	struct ms_trace *t;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_source_info si;
	size_t mapped = 0;

	cr_assert_eq(ms_trace_load(MS_TESTDATA "/traces/v1.4/expandable_not_recorded.zst", NULL, &t,
	                           &si, &d),
	             MS_OK, "%s", d.msg);
	cr_assert_eq(si.zst.minor, 4);
	cr_assert_eq(t->meta.settings.present, 0);
	cr_assert_eq(t->meta.settings.expandable_seen, 1);
	for (size_t i = 0; i < t->n_events; i++)
		mapped += t->events[i].action == MS_ACT_SEGMENT_MAP;
	cr_assert_gt(mapped, 0);
	ms_trace_free(t);
	cr_assert_eq(ms_trace_load(MS_TESTDATA "/traces/v1.3/recorded_graph_pools.zst", NULL, &t,
	                           &si, &d),
	             MS_OK, "%s", d.msg);
	cr_assert_eq(t->meta.settings.present, 1);
	cr_assert_eq(t->meta.settings.expandable_seen, 0);
	ms_trace_free(t);
}

struct stop_at {
	uint64_t n, at;
};

static ms_status stop_event(void *ctx, const struct ms_event *e)
{
	struct stop_at *x = ctx;
	(void)e;
	return ++x->n == x->at ? MS_ERR_INVALID_ARG : MS_OK;
}

/*
 * Reading ahead on a second thread hands the sink what reading on the caller's thread does, in
 * the same order (three real traces); a sink that fails
 * stops it at once, with the sink's status.
 */
Test(format, read_ahead_is_read)
{
	static const char *const files[] = {"/traces/gpt_train_with_nccl.zst",
	                                    "/traces/v1.3/recorded_graph_pools.zst",
	                                    "/traces/dynamic_oom_from2000.zst"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[512];
		struct ms_trace *a, *b;
		struct ms_sink sink;
		struct ms_diag d = MS_DIAG_INIT;
		snprintf(path, sizeof(path), "%s%s", MS_TESTDATA, files[i]);
		cr_assert_eq(ms_trace_load(path, NULL, &a, NULL, &d), MS_OK, "%s", d.msg);
		cr_assert_eq(ms_trace_new(&b), MS_OK);
		ms_trace_sink(b, &sink);
		cr_assert_eq(ms_source_read_ahead(path, NULL, &b->syms, &sink, NULL, &d), MS_OK,
		             "%s", d.msg);
		cr_assert_gt(a->n_events, 0);
		{
			/* loading tells the pools a trace without them leaves out */
			struct ms_pool_inference pi;
			cr_assert_eq(ms_trace_infer_pools(b, &pi), MS_OK);
		}
		cr_assert_eq(th_events_diff(a, b), -1, "%s", path);
		cr_assert_eq(a->n_segs, b->n_segs);
		ms_trace_free(a);
		ms_trace_free(b);
	}
	for (uint64_t at = 1; at < 20000; at = at * 7 + 3) {
		struct stop_at x = {0, at};
		struct ms_sink k = {.ctx = &x, .event = stop_event};
		struct ms_symtab y;
		cr_assert_eq(ms_symtab_init(&y), 0);
		cr_assert_eq(ms_source_read_ahead(MS_TESTDATA "/traces/gpt_train_with_nccl.zst",
		                                  NULL, &y, &k, NULL, NULL),
		             MS_ERR_INVALID_ARG);
		cr_assert_eq(x.n, at, "the sink was called after it failed");
		ms_symtab_release(&y);
	}
}
