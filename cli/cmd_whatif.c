/* memsnap whatif TRACE: replay under a matrix of allocator settings, in parallel threads. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmds.h"
#include "cli/opts.h"
#include "cli/out.h"
#include "cli/replay_opts.h"
#include "common/alloc.h"
#include "parse/trace.h"
#include "replay/replay.h"

static const char *const usage[] = {
        "memsnap whatif [--limit N | --memory-fraction F] [--device-memory N] [--configs FILE]",
        "               [--jobs N] [--json] <trace>",
        "",
        "Replay a trace under a matrix of PYTORCH_CUDA_ALLOC_CONF settings (the recorded one,",
        "expandable segments, max_split_size_mb, garbage_collection_threshold,",
        "roundup_power2_divisions and combinations users try, or one setting per line of",
        "--configs FILE) and print, for each: the peak reserved bytes, the memory wasted at that",
        "peak (reserved but not allocated), retries, the first OOM under the limit, and the least",
        "memory with which the whole trace completes (a search over the limit). It answers",
        "'which setting avoids this OOM, and by how much'.",
        NULL,
};

static const char *const default_configs[] = {
        NULL, /* the recorded setting */
        "expandable_segments:True",
        "max_split_size_mb:64",
        "max_split_size_mb:128",
        "max_split_size_mb:512",
        "garbage_collection_threshold:0.6",
        "garbage_collection_threshold:0.8",
        "roundup_power2_divisions:4",
        "roundup_power2_divisions:8",
        "expandable_segments:True,roundup_power2_divisions:4",
        "max_split_size_mb:128,garbage_collection_threshold:0.8",
};

struct job {
	const char *conf; /* NULL: recorded */
	struct ms_replay_result r;
	uint64_t min_memory; /* 0: the trace never completes */
	ms_status s;
	char err[256];
};

struct pool {
	const struct ms_trace *t;
	struct ms_replay_opts base;
	struct job *jobs;
	size_t n;
	atomic_size_t next;
};

/* Does the whole trace (recorded OOMs included) complete with this limit and setting? */
static int completes(const struct pool *p, const struct job *j, uint64_t limit)
{
	struct ms_replay_opts o = p->base;
	struct ms_replay_result r;
	struct ms_diag d = MS_DIAG_INIT;
	int ok;

	o.alloc_conf = j->conf;
	o.limit = limit;
	o.fraction = 0;
	o.device_memory = UINT64_MAX - 1; /* only the limit binds */
	if (ms_replay_trace(p->t, &o, &r, &d))
		return 0;
	ok = !r.ended_by_oom && !r.reproduced_ooms;
	ms_replay_result_release(&r);
	return ok;
}

static void run_job(struct pool *p, struct job *j)
{
	struct ms_replay_opts o = p->base;
	struct ms_replay_result unl;
	struct ms_diag d = MS_DIAG_INIT;
	uint64_t lo, hi;

	o.alloc_conf = j->conf;
	j->s = ms_replay_trace(p->t, &o, &j->r, &d);
	if (j->s) {
		snprintf(j->err, sizeof(j->err), "%s", d.msg[0] ? d.msg : ms_strerror(j->s));
		return;
	}
	/* the least limit that lets everything through lies between the peak allocated and the
	 * peak reserved of a replay without any limit; 2 MiB is the segment granularity */
	o.limit = 0;
	o.fraction = 0;
	o.device_memory = UINT64_MAX - 1;
	if (ms_replay_trace(p->t, &o, &unl, &d) || unl.ended_by_oom) {
		ms_replay_result_release(&unl);
		return;
	}
	lo = (uint64_t)unl.stats.allocated_bytes[0].peak;
	hi = (uint64_t)unl.stats.reserved_bytes[0].peak;
	ms_replay_result_release(&unl);
	/* a limit at the unlimited peak can still fail: PyTorch checks the limit against whole
	 * segment sizes (expandable segments: alloc_size, not the pages mapped); widen a little */
	for (int tries = 0; !completes(p, j, hi); tries++) {
		if (tries == 4)
			return; /* no answer: reported as "never" */
		hi += hi / 8 + (20u << 20);
	}
	lo = lo / (2u << 20) * (2u << 20);
	/* to 2 MiB, or 0.5% of the answer when that is coarser: each step is a whole replay */
	while (hi - lo > (2u << 20) && hi - lo > hi / 200) {
		uint64_t mid = lo + (hi - lo) / 2 / (2u << 20) * (2u << 20);
		if (mid <= lo)
			break;
		if (completes(p, j, mid))
			hi = mid;
		else
			lo = mid;
	}
	j->min_memory = hi;
}

static void *worker(void *arg)
{
	struct pool *p = arg;
	size_t i;

	while ((i = atomic_fetch_add(&p->next, 1)) < p->n)
		run_job(p, &p->jobs[i]);
	return NULL;
}

static char **read_configs(const char *path, size_t *n)
{
	FILE *f = fopen(path, "r");
	char line[1024], **out = NULL;
	size_t cap = 0;

	*n = 0;
	if (!f)
		ms_die(MS_EXIT_ERROR, "cannot open '%s': %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		size_t l = strcspn(line, "\r\n");
		line[l] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		if (ms_grow(&out, &cap, *n + 1, sizeof(*out)))
			ms_die(MS_EXIT_ERROR, "out of memory");
		/* "recorded" stands for the trace's own setting */
		out[(*n)++] = strcmp(line, "recorded") == 0 ? NULL : ms_strndup(line, l);
	}
	fclose(f);
	return out;
}

int cmd_whatif(int argc, const char **argv)
{
	struct ms_replay_cli c;
	int n, json = 0;
	const char *configs = NULL;
	uint64_t jobs = 0;
	struct ms_opt opts[MS_REPLAY_OPTS_MAX + 2];
	struct pool p;
	struct ms_trace *t;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_replay_result first;
	struct ms_limit_range lim;
	char **user = NULL;
	size_t nuser = 0, nth, k;
	pthread_t *th;
	ms_status s;

	ms_replay_cli_init(&c, opts, &json);
	for (k = 0; opts[k].type != MS_OPT_T_END; k++)
		;
	opts[k++] = (struct ms_opt)MS_OPT_STRING(
	        0, "configs", &configs, "FILE",
	        "settings to try, one per line ('recorded' for the trace's)");
	opts[k++] = (struct ms_opt)MS_OPT_U64('j', "jobs", &jobs, "N", "threads (default: CPUs)");
	opts[k] = (struct ms_opt)MS_OPT_END();
	n = ms_parse_options(argc, argv, opts, usage);
	if (n != 1)
		ms_usage_error(opts, usage, n ? "one trace at a time" : "no trace given");
	ms_replay_cli_check(&c, opts, usage);
	if (c.o.alloc_conf)
		ms_usage_error(opts, usage,
		               "whatif tries settings itself: give them with --configs");
	/* the limit: given, recorded, or inferred from recorded OOMs (as replay does) */
	s = ms_replay_cli_run(&c, argv[0], &first, &lim, &d);
	if (s) {
		ms_report(argv[0], s, &d);
		return MS_EXIT_ERROR;
	}
	if (!c.o.limit && first.limit)
		c.o.limit = first.limit;
	ms_replay_result_release(&first);
	if ((s = ms_trace_load(argv[0], NULL, &t, NULL, &d))) {
		ms_report(argv[0], s, &d);
		return MS_EXIT_ERROR;
	}
	memset(&p, 0, sizeof(p));
	p.t = t;
	p.base = c.o;
	if (configs)
		user = read_configs(configs, &nuser);
	p.n = configs ? nuser : sizeof(default_configs) / sizeof(default_configs[0]);
	p.jobs = ms_calloc(p.n ? p.n : 1, sizeof(*p.jobs));
	if (!p.jobs)
		ms_die(MS_EXIT_ERROR, "out of memory");
	for (k = 0; k < p.n; k++)
		p.jobs[k].conf = configs ? user[k] : default_configs[k];
	nth = jobs ? (size_t)jobs : (size_t)sysconf(_SC_NPROCESSORS_ONLN);
	if (nth < 1)
		nth = 1;
	if (nth > p.n)
		nth = p.n ? p.n : 1;
	th = ms_calloc(nth, sizeof(*th));
	if (!th)
		ms_die(MS_EXIT_ERROR, "out of memory");
	for (k = 0; k < nth; k++)
		if (pthread_create(&th[k], NULL, worker, &p))
			ms_die(MS_EXIT_ERROR, "cannot start a thread");
	for (k = 0; k < nth; k++)
		pthread_join(th[k], NULL);

	if (json) {
		cJSON *root = cJSON_CreateObject(), *a;
		char *str;
		cJSON_AddStringToObject(root, "trace", argv[0]);
		ms_json_u64(root, "limit_bytes", c.o.limit);
		a = cJSON_AddArrayToObject(root, "settings");
		for (k = 0; k < p.n; k++) {
			struct job *j = &p.jobs[k];
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "alloc_conf",
			                        j->conf ? j->conf : j->r.alloc_conf);
			cJSON_AddBoolToObject(o, "recorded", !j->conf);
			if (j->s) {
				cJSON_AddStringToObject(o, "error", j->err);
			} else {
				ms_json_u64(o, "peak_reserved_bytes",
				            (uint64_t)j->r.stats.reserved_bytes[0].peak);
				ms_json_u64(o, "peak_allocated_bytes",
				            (uint64_t)j->r.stats.allocated_bytes[0].peak);
				ms_json_u64(o, "waste_at_peak_bytes",
				            (uint64_t)j->r.stats.reserved_bytes[0].peak -
				                    j->r.allocated_at_peak_reserved);
				ms_json_u64(o, "rounding_at_peak_bytes",
				            j->r.allocated_at_peak_reserved -
				                    j->r.requested_at_peak_reserved);
				ms_json_u64(o, "num_alloc_retries", j->r.stats.num_alloc_retries);
				if (j->r.has_oom)
					ms_json_u64(o, "first_oom_index", j->r.first_oom.index);
				else
					cJSON_AddNullToObject(o, "first_oom_index");
				if (j->min_memory)
					ms_json_u64(o, "min_memory_bytes", j->min_memory);
				else
					cJSON_AddNullToObject(o, "min_memory_bytes");
			}
			cJSON_AddItemToArray(a, o);
		}
		str = cJSON_Print(root);
		if (str)
			puts(str);
		cJSON_free(str);
		cJSON_Delete(root);
	} else {
		char b1[32], b2[32], b3[32], b4[32];
		printf("%s: %zu settings%s%s\n\n", argv[0], p.n, c.o.limit ? ", limit " : "",
		       c.o.limit ? ms_format_size(b1, sizeof(b1), c.o.limit) : "");
		int w = 10;
		for (k = 0; k < p.n; k++) {
			int l = (int)strlen(p.jobs[k].conf ? p.jobs[k].conf
			                                   : p.jobs[k].r.alloc_conf) +
			        (p.jobs[k].conf ? 0 : 11);
			if (l > w)
				w = l < 80 ? l : 80;
		}
		printf("%-*s %13s %13s %12s %7s %11s %13s\n", w, "setting", "peak reserved",
		       "waste at peak", "rounding", "retries", "first OOM", "min memory");
		for (k = 0; k < p.n; k++) {
			struct job *j = &p.jobs[k];
			char name[600], oom[24];
			if (!j->conf)
				snprintf(name, sizeof(name), "(recorded) %s", j->r.alloc_conf);
			else
				snprintf(name, sizeof(name), "%s", j->conf);
			if (j->s) {
				printf("%-*s error: %s\n", w, name, j->err);
				continue;
			}
			if (j->r.has_oom)
				snprintf(oom, sizeof(oom), "event %llu",
				         (unsigned long long)j->r.first_oom.index);
			else
				snprintf(oom, sizeof(oom), "-");
			printf("%-*s %13s %13s %12s %7llu %11s %13s\n", w, name,
			       ms_format_size(b1, sizeof(b1),
			                      (uint64_t)j->r.stats.reserved_bytes[0].peak),
			       ms_format_size(b2, sizeof(b2),
			                      (uint64_t)j->r.stats.reserved_bytes[0].peak -
			                              j->r.allocated_at_peak_reserved),
			       ms_format_size(b4, sizeof(b4),
			                      j->r.allocated_at_peak_reserved -
			                              j->r.requested_at_peak_reserved),
			       (unsigned long long)j->r.stats.num_alloc_retries, oom,
			       j->min_memory ? ms_format_size(b3, sizeof(b3), j->min_memory)
			                     : "never");
		}
		printf("\nwaste at peak: the peak of reserved memory minus the most allocated "
		       "while it\n"
		       "stood there (reserved but never in use at once); rounding: allocated "
		       "minus\n"
		       "requested bytes at that moment (block rounding and unsplit remainders);\n"
		       "min memory: the least limit with which every allocation succeeds, the "
		       "recorded\n"
		       "OOMs included (to 2 MiB or 0.5%%, whichever is coarser).\n");
	}
	for (k = 0; k < p.n; k++)
		ms_replay_result_release(&p.jobs[k].r);
	for (k = 0; k < nuser; k++)
		ms_free(user[k]);
	ms_free(user);
	ms_free(p.jobs);
	ms_free(th);
	ms_trace_free(t);
	ms_replay_cli_release(&c);
	return MS_EXIT_OK;
}
