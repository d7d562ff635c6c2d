/*
 * Parse benchmarks, in one process so that only the parsing is timed:
 *   bench_parse import [--runs N] FILE...  snapshot import: entries/s, best of 5+ runs (or of
 *                                   exactly N, for perf stat) and the first
 *   bench_parse walk FILE.pickle    only step over the opcodes: the floor for any importer
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

#include "format/trace_write.h"
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

/* Best time of the runs; *first gets the first run's (page faults and cold caches included). */
static double time_read(const char *path, const struct ms_read_opts *o, uint64_t *events, int runs,
                        double *first)
{
	double best = 1e30, total = 0;

	/* at least `runs` runs and half a second in all (exactly -runs, if negative: for perf
	 * stat); the best run counts */
	for (int r = 0; runs < 0 ? r < -runs : (r < runs || total < 0.5); r++) {
		struct ms_symtab syms;
		struct count c = {0, 0};
		struct ms_sink sink = {0};
		struct ms_diag d = MS_DIAG_INIT;
		double t0;
		ms_status s;
		sink.ctx = &c;
		sink.event = c_event;
		ms_symtab_init(&syms);
		t0 = now();
		s = ms_source_read(path, o, &syms, &sink, NULL, &d);
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

/*
 * A floor for any importer that reads the pickle opcode by opcode: step over every opcode
 * of a plain (uncompressed) pickle already in memory, by its argument's length, touching
 * nothing else. No values, no memo, no mapping: not a parser, only the cost of the walk.
 * Returns the time of the best run, or a negative number if the file is not a plain pickle.
 */
static double time_walk(const char *path, int runs)
{
	FILE *f = fopen(path, "rb");
	unsigned char *b;
	long n;
	double best = 1e30;
	volatile uint64_t sink = 0;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET))
		return -1;
	b = malloc((size_t)n + 16);
	if (!b || fread(b, 1, (size_t)n, f) != (size_t)n)
		return -1;
	memset(b + n, '.', 16);
	fclose(f);
	for (int r = 0; r < runs; r++) {
		const unsigned char *p = b, *e = b + n;
		uint64_t ops = 0;
		double t0 = now();
		while (p < e) {
			unsigned op = *p++;
			uint32_t l;
			ops++;
			switch (op) {
			case 0x80:
			case 'K':
			case 'h':
			case 'q':
			case 'C':
				p += 1;
				break;
			case 'M':
				p += 2;
				break;
			case 'J':
			case 'j':
			case 'r':
				p += 4;
				break;
			case 0x95:
			case 'G':
				p += 8;
				break;
			case 0x8a:
			case 0x8c:
				p += 1 + *p;
				break;
			case 'X':
			case 'B':
			case 0x8b:
				memcpy(&l, p, 4);
				p += 4 + l;
				break;
			case 0x8d:
			case 0x8e:
			case 0x96:
				free(b);
				return -1; /* 8-byte lengths: not in snapshots */
			case '.':
				p = e;
				break;
			default:
				break;
			}
		}
		t0 = now() - t0;
		sink += ops;
		if (t0 < best)
			best = t0;
	}
	free(b);
	return best;
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
		if (argc >= 5 &&
		    strcmp(argv[2], "--runs") == 0) { /* exactly N runs, for perf stat */
			runs = -atoi(argv[3]);
			i = 4;
		}
		for (; i < argc; i++) {
			uint64_t n;
			double first, t = time_read(argv[i], NULL, &n, runs, &first);
			printf("file %s entries %llu seconds %.6f entries_per_s %.0f "
			       "first_entries_per_s "
			       "%.0f\n",
			       argv[i], (unsigned long long)n, t, (double)n / t, (double)n / first);
		}
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "walk") == 0) {
		double t = time_walk(argv[2], 20);
		if (t < 0) {
			fprintf(stderr, "%s: not a plain pickle\n", argv[2]);
			return 1;
		}
		printf("file %s seconds %.6f\n", argv[2], t);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "decode") == 0) {
		uint64_t n;
		double t = time_read(argv[2], NULL, &n, 3, NULL);
		printf("file %s events %llu seconds %.4f events_per_s %.0f\n", argv[2],
		       (unsigned long long)n, t, (double)n / t);
		return 0;
	}
	if (argc == 5 && strcmp(argv[1], "long") == 0)
		return cmd_long(argv[2], argv[3], atoi(argv[4]));
	fprintf(stderr, "usage: bench_parse import [--runs N] FILE... | walk FILE.pickle | decode "
	                "FILE.zst | long SRC "
	                "OUT.zst N\n");
	return 2;
}
