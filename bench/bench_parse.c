/*
 * Parse benchmarks, in one process so that only the parsing is timed:
 *   bench_parse import [--runs N] [--general] FILE...
 *                                   snapshot import: entries/s, best of 5+ runs (or of exactly
 *                                   N, for perf stat) and the first; --general: with the
 *                                   unpickler's fast path for trace entries off
 *   bench_parse decode FILE.zst     .zst decode to a counting sink: events/s on one core
 *   bench_parse long SRC OUT.zst N  write a long trace: N copies of SRC's events, times shifted
 * Results are one line each, "key value" pairs, for bench/run.sh to collect.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "common/status.h"
#include "format/trace_write.h"
#include "parse/input.h"
#include "parse/torch_snapshot.h"
#include "parse/trace.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct count {
	uint64_t n, sum;
};

static ms_status c_event(void *ctx, const struct ms_event *e)
{
	struct count *c = ctx;
	c->n++;
	c->sum += e->size ^ e->addr; /* touch the fields so nothing is optimised away */
	return MS_OK;
}

/* The same, for readers that hand over runs of events (ms_sink_events). */
static ms_status c_events(void *ctx, const struct ms_event *e, size_t n)
{
	struct count *c = ctx;
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++)
		sum += e[i].size ^ e[i].addr;
	c->n += n;
	c->sum += sum;
	return MS_OK;
}

static int general_only; /* import --general */

static ms_status in_read(void *ctx, void *buf, size_t cap, size_t *got, struct ms_diag *d)
{
	return ms_input_read(ctx, buf, cap, got, d);
}

/* A pickle snapshot read with the unpickler's fast path for trace entries off: what it buys. */
static ms_status read_general(const char *path, struct ms_symtab *syms, const struct ms_sink *sink,
                              struct ms_source_info *info, struct ms_diag *d)
{
	struct ms_input *in;
	struct ms_mapped whole = {0};
	ms_status s;

	memset(info, 0, sizeof(*info));
	if ((s = ms_input_open(path, &in, d)))
		return s;
	if (ms_input_kind(in) != MS_FILE_PICKLE)
		s = ms__diag_set(d, MS_ERR_INVALID_ARG, -1, -1, "--general needs a pickle");
	else if (!(s = ms_input_map_plain(in, &whole, d))) /* as ms_source_read does */
		s = ms__torch_pickle_read(in_read, in, &whole, NULL, 0, syms, sink, &info->snap, d);
	ms_input_unmap(&whole);
	ms_input_close(in);
	return s;
}

/* Best time of the runs; *first gets the first run's (page faults and cold caches included). */
static double time_read(const char *path, const struct ms_read_opts *o, uint64_t *events, int runs,
                        double *first, uint64_t *fast)
{
	double best = 1e30, total = 0;

	/* at least `runs` runs and half a second in all (exactly -runs, if negative: for perf
	 * stat); the best run counts */
	for (int r = 0; runs < 0 ? r < -runs : (r < runs || total < 0.5); r++) {
		struct ms_symtab syms;
		struct count c = {0, 0};
		struct ms_sink sink = {0};
		struct ms_diag d = MS_DIAG_INIT;
		struct ms_source_info info;
		double t0;
		ms_status s;
		sink.ctx = &c;
		sink.event = c_event;
		sink.events = c_events;
		ms_symtab_init(&syms);
		t0 = now();
		s = general_only ? read_general(path, &syms, &sink, &info, &d)
		                 : ms_source_read(path, o, &syms, &sink, &info, &d);
		t0 = now() - t0;
		ms_symtab_release(&syms);
		if (s) {
			fprintf(stderr, "%s: %s\n", path, d.msg);
			exit(1);
		}
		if (r == 0 && first)
			*first = t0;
		total += t0;
		if (t0 < best)
			best = t0;
		*events = c.n;
		if (fast)
			*fast = info.snap.n_fast_entries;
	}
	return best;
}

static int cmd_long(const char *src, const char *out, int copies)
{
	struct ms_trace *t;
	struct ms_diag d = MS_DIAG_INIT;
	FILE *f = fopen(out, "wb");
	struct ms_writer *w;
	struct ms_writer_opts o = MS_WRITER_OPTS_INIT;
	int64_t span;

	if (!f || ms_trace_load(src, NULL, &t, NULL, &d) || t->n_events < 2)
		return 1;
	if (ms_writer_open(f, &o, &t->syms, &w, &d) || ms_writer_meta(w, &t->meta))
		return 1;
	span = t->events[t->n_events - 1].t_ns - t->events[0].t_ns + 1000;
	for (int c = 0; c < copies; c++)
		for (size_t i = 0; i < t->n_events; i++) {
			struct ms_event e = t->events[i];
			e.t_ns += span * c;
			if (ms_writer_event(w, &e))
				return 1;
		}
	if (ms_writer_close(w, &d))
		return 1;
	printf("events %llu bytes %llu bytes_per_event %.3f\n",
	       (unsigned long long)ms_writer_events(w), (unsigned long long)ms_writer_bytes(w),
	       (double)ms_writer_bytes(w) / (double)ms_writer_events(w));
	ms_writer_free(w);
	fclose(f);
	ms_trace_free(t);
	return 0;
}

int main(int argc, char **argv)
{
	int runs = 5;

#if defined(__GLIBC__)
	/*
	 * Freed memory stays in the process between runs, so that the best run times the parser
	 * and not glibc giving pages back to the kernel and faulting them in again (which it does
	 * or not depending on how the last run's blocks happened to lie). The first run still
	 * pays every page fault: it is reported beside the best.
	 */
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
#endif

	if (argc >= 3 && strcmp(argv[1], "import") == 0) {
		int i = 2;
		for (; i + 1 < argc && argv[i][0] == '-'; i++) {
			if (strcmp(argv[i], "--runs") == 0 && i + 2 < argc) /* exactly N runs */
				runs = -atoi(argv[++i]);
			else if (strcmp(argv[i], "--general") == 0) /* the fast path off */
				general_only = 1;
			else
				break;
		}
		for (; i < argc; i++) {
			uint64_t n, fast = 0;
			double first, t = time_read(argv[i], NULL, &n, runs, &first, &fast);
			printf("file %s entries %llu seconds %.6f entries_per_s %.0f "
			       "first_entries_per_s %.0f fast_path_entries %llu\n",
			       argv[i], (unsigned long long)n, t, (double)n / t, (double)n / first,
			       (unsigned long long)fast);
		}
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "decode") == 0) {
		uint64_t n;
		double t = time_read(argv[2], NULL, &n, 3, NULL, NULL);
		printf("file %s events %llu seconds %.4f events_per_s %.0f\n", argv[2],
		       (unsigned long long)n, t, (double)n / t);
		return 0;
	}
	if (argc == 5 && strcmp(argv[1], "long") == 0)
		return cmd_long(argv[2], argv[3], atoi(argv[4]));
	fprintf(stderr, "usage: bench_parse import [--runs N] [--general] FILE... | decode "
	                "FILE.zst | long SRC "
	                "OUT.zst N\n");
	return 2;
}
