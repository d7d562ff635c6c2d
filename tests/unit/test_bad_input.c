/*
 * Bad input never crashes, hangs or allocates without bound: files truncated at every frame
 * boundary and inside frames, flipped bytes, the malformed files of testdata/bad, and every
 * allocation failing in turn (curl's torture test).
 */
#include <criterion/criterion.h>
#include <msgpack.h>
#include <stdio.h>
#include <string.h>
#include <zstd.h>

#include "common/alloc.h"
#include "format/trace_write.h"
#include "helpers.h"
#include "parse/trace.h"

static const char *status_name_of(ms_status s)
{
	return ms_status_name(s);
}

Test(bad_input, expected_statuses)
{
	size_t n;
	char *list = th_read_file(MS_TESTDATA "/bad/EXPECTED", &n), *line, *save = NULL;
	int count = 0;

	cr_assert(list);
	for (line = strtok_r(list, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char file[256], want[64], path[512];
		struct ms_trace *t = NULL;
		struct ms_diag d = MS_DIAG_INIT;
		ms_status s;
		if (line[0] == '#' || sscanf(line, "%255s %63s", file, want) != 2)
			continue;
		snprintf(path, sizeof(path), "%s/bad/%s", MS_TESTDATA, file);
		s = ms_trace_load(path, NULL, &t, NULL, &d);
		cr_assert_str_eq(status_name_of(s), want, "%s: got %s (%s)", file,
		                 status_name_of(s), d.msg);
		cr_assert(d.msg[0], "%s: no message", file);
		ms_trace_free(t);
		count++;
	}
	cr_assert_gt(count, 10);
	free(list);
}

/* Events per data frame, counted with msgpack-c and zstd directly (not with the reader). */
struct frames {
	size_t off[4096], end[4096];
	uint64_t events[4096];
	size_t n;
};

static void count_frames(const unsigned char *p, size_t len, struct frames *f)
{
	size_t off = 32;

	f->n = 0;
	while (off + 8 <= len) {
		uint32_t magic = (uint32_t)p[off] | (uint32_t)p[off + 1] << 8 |
		                 (uint32_t)p[off + 2] << 16 | (uint32_t)p[off + 3] << 24;
		size_t c, dn, pos = 0;
		unsigned long long cs;
		char *buf;
		msgpack_unpacked up;
		uint64_t ev = 0;
		int trailer = 0;
		if ((magic & 0xfffffff0u) == 0x184d2a50u)
			break; /* the footer */
		c = ZSTD_findFrameCompressedSize(p + off, len - off);
		cr_assert(!ZSTD_isError(c));
		cs = ZSTD_getFrameContentSize(p + off, c);
		buf = malloc(cs + 1);
		dn = ZSTD_decompress(buf, cs + 1, p + off, c);
		cr_assert_eq(dn, cs);
		msgpack_unpacked_init(&up);
		while (msgpack_unpack_next(&up, buf, dn, &pos) == MSGPACK_UNPACK_SUCCESS) {
			uint64_t type = up.data.via.array.ptr[0].via.u64;
			if (type == 10)
				trailer = 1;
			if (type >= 16 && type <= 24)
				ev++;
		}
		msgpack_unpacked_destroy(&up);
		free(buf);
		if (!trailer) {
			f->off[f->n] = off;
			f->end[f->n] = off + c;
			f->events[f->n++] = ev;
		}
		off += c;
	}
}

static const char *make_trace(const char *snapshot, size_t frame_bytes, struct frames *f,
                              unsigned char **data, size_t *len)
{
	struct ms_trace *t;
	struct ms_diag d = MS_DIAG_INIT;
	const char *path = th_write_temp("", 0, ".zst");
	FILE *fp = fopen(path, "wb");
	struct ms_writer *w;
	struct ms_sink sink;
	struct ms_writer_opts o = MS_WRITER_OPTS_INIT;

	cr_assert_eq(ms_trace_load(snapshot, NULL, &t, NULL, &d), MS_OK);
	o.frame_bytes = frame_bytes;
	cr_assert_eq(ms_writer_open(fp, &o, &t->syms, &w, &d), MS_OK);
	ms_writer_sink(w, &sink);
	cr_assert_eq(ms_trace_emit(t, &sink), MS_OK);
	cr_assert_eq(ms_writer_close(w, &d), MS_OK);
	ms_writer_free(w);
	fclose(fp);
	ms_trace_free(t);
	*data = (unsigned char *)th_read_file(path, len);
	count_frames(*data, *len, f);
	cr_assert_gt(f->n, 5);
	return path;
}

/* Cut at every frame boundary and in the middle of every frame: a warning, never an error. */
Test(bad_input, truncated_traces_keep_their_complete_frames, .timeout = 300)
{
	static struct frames f;
	unsigned char *data;
	size_t len;
	const char *src =
	        make_trace(MS_TESTDATA "/snapshots/dynamic_oom.pickle", 2048, &f, &data, &len);
	uint64_t before = 0;

	(void)src;
	for (size_t k = 0; k < f.n; k++) {
		size_t cuts[2] = {f.off[k], f.off[k] + (f.end[k] - f.off[k]) / 2};
		for (int c = 0; c < 2; c++) {
			const char *p = th_write_temp(data, cuts[c], ".zst");
			struct ms_trace *t;
			struct ms_diag d = MS_DIAG_INIT;
			ms_status s = ms_trace_load(p, NULL, &t, NULL, &d);
			cr_assert_eq(s, MS_OK, "cut at %zu: %s", cuts[c], d.msg);
			cr_assert_eq(t->n_events, before,
			             "cut at %zu (frame %zu): %zu events, want %llu", cuts[c], k,
			             t->n_events, (unsigned long long)before);
			cr_assert_eq(d.warnings, 1, "cut at %zu: no warning", cuts[c]);
			cr_assert(strstr(d.warning, "events readable"), "%s", d.warning);
			ms_trace_free(t);
			remove(p);
		}
		before += f.events[k];
	}
	/* inside the header: an error */
	{
		const char *p = th_write_temp(data, 20, ".zst");
		struct ms_trace *t;
		struct ms_diag d = MS_DIAG_INIT;
		cr_assert_neq(ms_trace_load(p, NULL, &t, NULL, &d), MS_OK);
		remove(p);
	}
	free(data);
}

static void flip_all(const unsigned char *data, size_t len, size_t step, const char *suffix)
{
	unsigned char *b = malloc(len);
	size_t errors = 0;

	for (size_t i = 0; i < len; i += step) {
		const char *p;
		struct ms_trace *t = NULL;
		struct ms_diag d = MS_DIAG_INIT;
		ms_status s;
		memcpy(b, data, len);
		b[i] ^= (unsigned char)(0x5a + i);
		p = th_write_temp(b, len, suffix);
		s = ms_trace_load(p, NULL, &t, NULL, &d);
		if (s) {
			errors++;
			cr_assert(d.msg[0], "flip at %zu: %s without a message", i,
			          ms_status_name(s));
		}
		ms_trace_free(t);
		remove(p);
	}
	cr_assert_gt(errors, 0);
	free(b);
}

Test(bad_input, flipped_bytes_in_traces, .timeout = 600)
{
	static struct frames f;
	unsigned char *data;
	size_t len;

	make_trace(MS_TESTDATA "/snapshots/dynamic_oom.pickle", 4096, &f, &data, &len);
	flip_all(data, len, 7, ".zst");
	free(data);
}

Test(bad_input, flipped_and_truncated_pickles, .timeout = 600)
{
	size_t len;
	unsigned char *data =
	        (unsigned char *)th_read_file(MS_TESTDATA "/snapshots/proto/small_p4.pickle", &len);

	cr_assert(data);
	flip_all(data, len, 23, ".pickle");
	for (size_t n = 0; n < len; n += 97) {
		const char *p = th_write_temp(data, n, ".pickle");
		struct ms_trace *t = NULL;
		struct ms_diag d = MS_DIAG_INIT;
		cr_assert_neq(ms_trace_load(p, NULL, &t, NULL, &d), MS_OK, "cut at %zu", n);
		cr_assert(d.msg[0]);
		remove(p);
	}
	free(data);
}

/* Every allocation fails in turn: each run ends with MS_ERR_NOMEM (and no leak under ASan). */
Test(bad_input, every_allocation_failing, .timeout = 600)
{
	static const char *const files[] = {
	        MS_TESTDATA "/snapshots/proto/small_p4.pickle",
	        MS_TESTDATA "/snapshots/proto/small.json",
	        MS_TESTDATA "/traces/v1.0/random.zst",
	        MS_TESTDATA "/corpus/pickle/stacks_p4.pickle",
	};
	for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
		long n;
		for (n = 1;; n++) {
			struct ms_trace *t = NULL;
			struct ms_diag d = MS_DIAG_INIT;
			ms_status s;
			long live = ms__alloc_live();
			ms__alloc_fail_at(n);
			s = ms_trace_load(files[k], NULL, &t, NULL, &d);
			ms__alloc_fail_at(0);
			if (s == MS_OK) {
				ms_trace_free(t);
				cr_assert_eq(ms__alloc_live(), live,
				             "%s: leak after a successful load", files[k]);
				break;
			}
			cr_assert_eq(ms__alloc_live(), live,
			             "%s, allocation %ld failing: %ld blocks leaked", files[k], n,
			             ms__alloc_live() - live);
			cr_assert_eq(s, MS_ERR_NOMEM, "%s, allocation %ld: %s (%s)", files[k], n,
			             ms_status_name(s), d.msg);
			cr_assert(n < 100000);
		}
		cr_assert_gt(n, 5);
	}
}
