/*
 * The recorder's cost per event on the recording thread, its writer's throughput and the
 * bytes per event, on the event stream of a real PyTorch trace (no GPU needed).
 *
 *   bench_record TRACE [THREADS] [REPEAT]
 *
 * Each thread records the trace's events REPEAT times (addresses offset per thread, times
 * taken by the recorder, as in a real run). Reported: ns per msr_record() call on the
 * recording threads, the time msr_close() takes to write what is left, events dropped, and
 * the file's bytes per event. Rings are sized so that nothing is dropped unless the writer
 * cannot keep up.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "memsnap/recorder.h"
#include "parse/trace.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct job {
	struct msr *r;
	const struct ms_trace *t;
	unsigned id, repeat;
	double secs;
	uint64_t n;
};

static void *work(void *arg)
{
	struct job *j = arg;
	double t0 = now();

	for (unsigned k = 0; k < j->repeat; k++)
		for (size_t i = 0; i < j->t->n_events; i++) {
			const struct ms_event *e = &j->t->events[i];
			struct msr_event m = {0};
			m.action = e->action;
			m.device = e->device;
			m.addr = e->addr + ((uint64_t)j->id << 44);
			m.size = e->size;
			m.stream = e->stream;
			msr_record(j->r, &m);
			j->n++;
		}
	j->secs = now() - t0;
	return NULL;
}

int main(int argc, char **argv)
{
	struct ms_trace *t;
	struct ms_diag d = MS_DIAG_INIT;
	unsigned threads = argc > 2 ? (unsigned)atoi(argv[2]) : 1;
	unsigned repeat = argc > 3 ? (unsigned)atoi(argv[3]) : 20;
	char path[] = "/tmp/bench_record.XXXXXX";
	struct msr_options o;
	struct msr *r;
	pthread_t th[64];
	struct job jobs[64];
	struct stat st;
	uint64_t n = 0;
	double busy = 0, t0, t_close;
	int fd;

	if (argc < 2 || threads < 1 || threads > 64) {
		fprintf(stderr, "usage: bench_record TRACE [THREADS] [REPEAT]\n");
		return 2;
	}
	if (ms_trace_load(argv[1], NULL, &t, NULL, &d)) {
		fprintf(stderr, "bench_record: %s: %s\n", argv[1], d.msg);
		return 1;
	}
	fd = mkstemp(path);
	msr_options_init(&o);
	o.ring_events = 1u << 20;
	if (fd < 0 || msr_open_fd(fd, &o, &r)) {
		fprintf(stderr, "bench_record: cannot open a trace\n");
		return 1;
	}
	t0 = now();
	for (unsigned i = 0; i < threads; i++) {
		jobs[i] = (struct job){r, t, i, repeat, 0, 0};
		pthread_create(&th[i], NULL, work, &jobs[i]);
	}
	for (unsigned i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		busy += jobs[i].secs;
		n += jobs[i].n;
	}
	uint64_t dropped = msr_dropped(r);
	t_close = now();
	msr_close(r);
	t_close = now() - t_close;
	double total = now() - t0;
	fstat(fd, &st);
	printf("%s: %u thread(s), %llu events: %.1f ns per msr_record on the recording threads; "
	       "all written in %.3f s (%.1f M events/s, close %.3f s); %llu dropped; "
	       "%.2f bytes/event\n",
	       argv[1], threads, (unsigned long long)n, busy * 1e9 / (double)n, total,
	       (double)n / total / 1e6, t_close, (unsigned long long)dropped,
	       (double)st.st_size / (double)(n - dropped));
	close(fd);
	unlink(path);
	ms_trace_free(t);
	return 0;
}
