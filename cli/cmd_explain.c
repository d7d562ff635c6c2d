/*
 * memsnap explain TRACE: what holds the memory at the peak (explain/explain.h), the steps, what
 * grows, the OOM, and the allocator settings that would have helped, each replayed on the trace.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/outside.h"
#include "cli/cmds.h"
#include "cli/explain_text.h"
#include "cli/opts.h"
#include "cli/messages.h"
#include "cli/replay_opts.h"
#include "cli/sites.h"
#include "common/alloc.h"
#include "explain/explain.h"
#include "explain/report.h"
#include "json/explain.h"
#include "explain/verdict.h"
#include "cli/verdict_out.h"
#include "replay/end_state.h"
#include "parse/trace.h"
#include "replay/replay.h"
#include "replay/whatif.h"

static const char *const usage[] = {
        "memsnap explain [--limit N | --memory-fraction F] [--device-memory N] [--device D]",
        "                [--alloc-conf CONF] [--jobs N] [--site-depth N] [--request SIZE]",
        "                [--from WHERE] [--to WHERE] [--at WHERE]",
        "                [--category NAME=REGEX]... [--categories FILE] [--json] <trace>...",
        "",
        "What a trace's memory is made of and what to change. At the peak of reserved memory:",
        "parameters, gradients, optimizer state (a training job), weights and KV cache (a",
        "generation job), your own --category, activations, other memory kept across steps,",
        "memory cached but free, and memory outside PyTorch where the trace records it, each",
        "placed by a rule it names (docs/EXPLAIN.md); the steps and their peaks; the sites whose",
        "memory grows from step to step; the OOM, if the replay runs out, and whether the demand",
        "or the fragmentation caused it; and the allocator settings that lower the peak or avoid",
        "the OOM, each replayed on this trace, with the least memory that completes. Several",
        "traces (the ranks of a job) are each explained, then compared: each peak against the",
        "median, and which of them ran out of memory. Exit code 3 where a replay ran out of",
        "memory where the recorded run did not (a --limit below what the trace needs).",
        NULL,
};

struct rank_row {
	char label[MS_LABEL_MAX];
	const char *path;
	uint32_t device;
	uint64_t reserved, allocated, parameters;
	int parameters_known, oom, lower_bound;
	int ended_by_oom; /* the replay ran out where the recorded run did not */
	uint64_t oom_event;
};

static int explain_one(struct ms_replay_cli *c, const char *path, const struct ms_trace *t,
                       uint32_t device, const char *label, unsigned jobs, int json, cJSON **jout,
                       struct rank_row *row)
{
	struct ms_replay_result first;
	struct ms_limit_range lim;
	struct ms_explain_report r;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_explain_ahead ahead;
	ms_status s;

	/* expandable segments' replay beside the first (where more than one thread is asked) */
	memset(&ahead, 0, sizeof(ahead));
	if (jobs != 1)
		ms_explain_ahead_start(&ahead, t, &c->o);
	if (ms_replay_cli_run_reported(c, path, &first, &lim)) {
		ms_explain_ahead_release(&ahead);
		return MS_EXIT_ERROR;
	}
	if (ms_replay_cli_window_found(c, path, &first)) {
		ms_replay_result_release(&first);
		ms_explain_ahead_release(&ahead);
		return MS_EXIT_ERROR;
	}
	s = ms_explain_report_run(t, &c->o, &first, &lim, jobs, ms_site_depth(), ms_user_cats_opt(),
	                          &ahead, &r, &d);
	ms_explain_ahead_release(&ahead);
	if (s) {
		ms_explain_report_release(&r);
		ms_die(MS_EXIT_ERROR, "%s", d.msg);
	}
	if (json && !(*jout = ms_explain_report_json(&r, path)))
		ms_die(MS_EXIT_ERROR, "out of memory");
	else if (!json)
		ms_explain_print(&r, label);
	snprintf(row->label, sizeof(row->label), "%s", label);
	row->path = path;
	row->device = device;
	row->reserved = r.reserved;
	row->allocated = r.allocated;
	row->parameters = r.x.parameter_bytes;
	row->parameters_known = r.x.parameter_blocks != 0;
	row->oom = r.has_oom;
	row->oom_event = r.has_oom ? r.first.first_oom.index : 0;
	row->lower_bound = r.first.rebuilt || r.first.cut_short;
	row->ended_by_oom = r.first.ended_by_oom;
	ms_explain_report_release(&r);
	return MS_EXIT_OK;
}

/* Several files (the ranks of a job): each one's peak against the median, and who ran out. */
static void compare(const struct rank_row *rows, size_t n, cJSON *jroot)
{
	uint64_t *peaks = ms_calloc(n, sizeof(*peaks)), median;
	char b1[32], b2[32], b3[32];
	size_t k, n_oom = 0;

	if (!peaks)
		ms_die(MS_EXIT_ERROR, "out of memory");
	for (k = 0; k < n; k++)
		peaks[k] = rows[k].reserved;
	median = ms_median_u64(peaks, n);
	ms_free(peaks);
	for (k = 0; k < n; k++)
		n_oom += rows[k].oom;
	if (jroot) {
		cJSON *o = cJSON_AddObjectToObject(jroot, "comparison"), *a;
		ms_json_u64(o, "median_peak_reserved_bytes", median);
		a = cJSON_AddArrayToObject(o, "rows");
		for (k = 0; k < n; k++) {
			cJSON *r = cJSON_CreateObject();
			cJSON_AddStringToObject(r, "trace", rows[k].path);
			cJSON_AddNumberToObject(r, "device", rows[k].device);
			ms_json_u64(r, "peak_reserved_bytes", rows[k].reserved);
			cJSON_AddNumberToObject(
			        r, "against_median",
			        median ? (double)rows[k].reserved / (double)median - 1 : 0);
			ms_json_u64(r, "allocated_bytes", rows[k].allocated);
			if (rows[k].parameters_known)
				ms_json_u64(r, "parameter_bytes", rows[k].parameters);
			else
				cJSON_AddNullToObject(r, "parameter_bytes");
			if (rows[k].oom)
				ms_json_u64(r, "oom_event", rows[k].oom_event);
			else
				cJSON_AddNullToObject(r, "oom_event");
			cJSON_AddBoolToObject(r, "is_lower_bound", rows[k].lower_bound);
			cJSON_AddItemToArray(a, r);
		}
		return;
	}
	{
		size_t files = 0;
		for (k = 0; k < n; k++)
			files += !k || strcmp(rows[k].path, rows[k - 1].path) != 0;
		if (files == n)
			printf("\n%zu traces compared", n);
		else
			printf("\n%zu devices of %zu files compared", n, files);
	}
	printf(": the median peak reserved is %s; ", ms_format_size(b1, sizeof(b1), median));
	if (n_oom)
		printf("%zu of them run%s out of memory\n", n_oom, n_oom == 1 ? "s" : "");
	else
		printf("none runs out of memory\n");
	printf("  %14s %10s %14s %14s  %-12s %s\n", "peak reserved", "vs median", "allocated",
	       "parameters", "OOM", "trace");
	for (k = 0; k < n; k++) {
		char oom[32], vs[32];
		double d = median ? 100.0 * ((double)rows[k].reserved / (double)median - 1) : 0;
		snprintf(vs, sizeof(vs), "%+.1f%%", d);
		if (rows[k].oom)
			snprintf(oom, sizeof(oom), "event %llu",
			         (unsigned long long)rows[k].oom_event);
		else
			snprintf(oom, sizeof(oom), "-");
		printf("  %s%13s %10s %14s %14s  %-12s %s\n", rows[k].lower_bound ? ">" : " ",
		       ms_format_size(b1, sizeof(b1), rows[k].reserved), vs,
		       ms_format_size(b2, sizeof(b2), rows[k].allocated),
		       rows[k].parameters_known ? ms_format_size(b3, sizeof(b3), rows[k].parameters)
		                                : "not found",
		       oom, rows[k].label);
	}
	for (k = 0; k < n; k++)
		if (rows[k].lower_bound) {
			printf("  (>: a trace that starts mid-run or is cut short, whose peak is "
			       "at "
			       "least that)\n");
			break;
		}
}

/* A snapshot without a trace: each device's end state explained (--device: that one). */
static int explain_end_states(struct ms_replay_cli *c, const char *path, const struct ms_trace *t,
                              int json, uint64_t request, cJSON **jout)
{
	cJSON *byd = NULL;
	int rc = MS_EXIT_OK;
	size_t k;

	/* the end state's devices (--device: that one) */
	uint32_t seen[64];
	size_t ns = 0;
	for (size_t i = 0; i < t->n_segs; i++) {
		size_t j;
		for (j = 0; j < ns && seen[j] != t->segs[i].device; j++)
			;
		if (j == ns && ns < 64 &&
		    (c->device == UINT64_MAX || t->segs[i].device == c->device))
			seen[ns++] = t->segs[i].device;
	}
	if (!ns) {
		ms_error("%s: no segments on device %llu", path, (unsigned long long)c->device);
		return MS_EXIT_ERROR;
	}
	if (json && ns > 1) {
		*jout = cJSON_CreateObject();
		ms_json_schema(*jout);
		cJSON_AddStringToObject(*jout, "trace", path);
		byd = cJSON_AddObjectToObject(*jout, "devices");
	}
	for (k = 0; k < ns && rc == MS_EXIT_OK; k++) {
		char label[MS_LABEL_MAX], key[16];
		cJSON *o = NULL;
		if (k && !json)
			putchar('\n');
		rc = ms_explain_end_state(
		        c, path, t, seen[k],
		        ms_replay_cli_label(path, seen[k], ns, label, sizeof(label)), request, json,
		        &o);
		if (o && byd) {
			snprintf(key, sizeof(key), "%u", seen[k]);
			cJSON_AddItemToObject(byd, key, o);
		} else if (o) {
			*jout = o;
		}
	}
	return rc;
}

static int explain_file(struct ms_replay_cli *c, const char *path, unsigned jobs, int json,
                        uint64_t request, cJSON **jout, struct rank_row **rows, size_t *nrows,
                        size_t *caprows)
{
	size_t nd, k;
	const struct ms_trace *t;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_replay_opts base = c->o;
	uint32_t *devs;
	cJSON *byd = NULL;
	int rc = MS_EXIT_OK, oom = 0;
	ms_status s;

	*jout = NULL;
	/* read whole once: its devices and every replay come from it (let go after the file) */
	if ((s = ms_replay_cli_trace_held(path, &t, &d))) {
		ms_report(path, s, &d);
		return MS_EXIT_ERROR;
	}
	if (ms_trace_no_allocations(t)) {
		/* an end state alone: no event to place a window or a moment at, no stack of a
		   trace's allocation to match a category on */
		if (c->o.windows) {
			ms_error("%s: a snapshot without a trace: %s needs its events (it has 0)",
			         path, c->win_at ? "--at" : "--from/--to");
			ms_replay_cli_forget(path);
			return MS_EXIT_ERROR;
		}
		if (ms_user_cats_opt())
			ms_note("%s: a snapshot without a trace: --category is not applied to its "
			        "end "
			        "state",
			        path);
		rc = explain_end_states(c, path, t, json, request, jout);
		ms_replay_cli_forget(path);
		return rc;
	}
	if (request) {
		ms_error("%s: --request is for a snapshot without a trace: this one records its "
		         "requests",
		         path);
		ms_replay_cli_forget(path);
		return MS_EXIT_USAGE; /* a flag that does not apply to this input */
	}
	if (ms_replay_cli_devices(c, path, "explain", &devs, &nd)) {
		ms_replay_cli_forget(path);
		return MS_EXIT_ERROR;
	}
	if (json && nd > 1) {
		*jout = cJSON_CreateObject();
		ms_json_schema(*jout);
		cJSON_AddStringToObject(*jout, "trace", path);
		byd = cJSON_AddObjectToObject(*jout, "devices");
	}
	for (k = 0; k < nd && rc == MS_EXIT_OK; k++) {
		char label[MS_LABEL_MAX], key[16];
		cJSON *o = NULL;
		c->o = base;
		c->o.device = devs[k];
		if (k && !json)
			putchar('\n');
		if (ms_grow(rows, caprows, *nrows + 1, sizeof(**rows)))
			ms_die(MS_EXIT_ERROR, "out of memory");
		rc = explain_one(c, path, t, devs[k],
		                 ms_replay_cli_label(path, devs[k], nd, label, sizeof(label)), jobs,
		                 json, &o, &(*rows)[*nrows]);
		if (rc == MS_EXIT_OK)
			oom |= (*rows)[(*nrows)++].ended_by_oom;
		ms_replay_cli_release(c);
		if (o && byd) {
			snprintf(key, sizeof(key), "%u", devs[k]);
			cJSON_AddItemToObject(byd, key, o);
		} else if (o) {
			*jout = o;
		}
	}
	c->o = base;
	ms_free(devs);
	ms_replay_cli_forget(path);
	return rc == MS_EXIT_OK && oom ? MS_EXIT_OOM : rc;
}

int cmd_explain(int argc, const char **argv)
{
	struct ms_replay_cli c;
	int n, json = 0, rc = MS_EXIT_OK;
	uint64_t jobs = 0, request = 0;
	struct ms_opt opts[MS_REPLAY_OPTS_MAX + 5 + MS_REPLAY_WINDOW_OPTS];
	struct ms_user_cats_args ucats = {0};
	int site_depth = 1;
	struct rank_row *rows = NULL;
	size_t nrows = 0, caprows = 0, k;
	cJSON *files = NULL, *root = NULL;

	ms_replay_cli_init(&c, opts, &json);
	ms_opts_drop(opts, "backend");
	for (k = 0; opts[k].type != MS_OPT_T_END; k++)
		;
	opts[k++] = (struct ms_opt)MS_OPT_U64('j', "jobs", &jobs, "N",
	                                      "threads for the replays (default: CPUs)");
	opts[k++] = (struct ms_opt)MS_OPT_SITE_DEPTH(&site_depth);
	{
		struct ms_opt uc[] = {MS_USER_CATS_OPTS(&ucats)};
		opts[k++] = uc[0];
		opts[k++] = uc[1];
	}
	opts[k++] = (struct ms_opt)MS_OPT_SIZE(0, "request", &request, "SIZE",
	                                       "a snapshot without a trace: the request that "
	                                       "failed, judged against its end state");
	ms_replay_cli_window_opts(&c, opts, &k);
	opts[k] = (struct ms_opt)MS_OPT_END();
	ms_opts_drop(opts, "windows"); /* one window: the state at its peak */
	n = ms_parse_options(argc, argv, opts, usage);
	if (n < 1)
		ms_usage_error(opts, usage, "no trace given");
	ms_replay_cli_check(&c, opts, usage);
	c.o.reserved_log = 1; /* each step's most reserved, from the first replay */
	ms_site_depth_set(site_depth, opts, usage);
	ms_user_cats_set(&ucats, opts, usage);
	if (json && n > 1) {
		root = cJSON_CreateObject();
		ms_json_schema(root);
		files = cJSON_AddArrayToObject(root, "files");
	} /* each file on its own: one that cannot be read is said, and the others go on */
	for (int f = 0; f < n; f++) {
		cJSON *o = NULL;
		int dup = 0, r;
		for (int g = 0; g < f && !dup; g++)
			dup = strcmp(argv[g], argv[f]) == 0;
		if (dup) {
			ms_note("%s is given more than once: explained and compared once", argv[f]);
			continue;
		}
		if (f && !json)
			putchar('\n');
		r = explain_file(&c, argv[f], (unsigned)(jobs > 1024 ? 1024 : jobs), json, request,
		                 &o, &rows, &nrows, &caprows);
		/* an error outranks a replay that ran out of memory */
		if (r != MS_EXIT_OK && rc != MS_EXIT_ERROR)
			rc = r;
		if (o && files)
			cJSON_AddItemToArray(files, o);
		else if (o && (r == MS_EXIT_OK || r == MS_EXIT_OOM))
			root = o;
		else
			cJSON_Delete(o);
	}
	if (n > 1 && nrows > 1)
		compare(rows, nrows, root);
	/* JSON is whole or none: none that leaves out a file that failed (text has gone out file
	   by file, the error line among them) */
	if (json && root && rc != MS_EXIT_ERROR) {
		char *js = cJSON_Print(root);
		if (!js)
			ms_die(MS_EXIT_ERROR, "out of memory");
		puts(js);
		cJSON_free(js);
	}
	cJSON_Delete(root);
	ms_free(rows);
	return rc;
}
