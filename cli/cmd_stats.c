/* memsnap stats FILE... [--json]: statistics from the trace alone; files read in parallel. */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/stats_read.h"
#include "analysis/stats_view.h"
#include "cli/stats_text.h"
#include "analysis/trace_stats.h"
#include "json/stats.h"
#include "cli/cmds.h"
#include "cli/opts.h"
#include "cli/output_file.h"
#include "cli/messages.h"
#include "cli/replay_opts.h"
#include "cli/sites.h"
#include "common/alloc.h"
#include "common/size.h"
#include "common/cpus.h"
#include "parse/trace.h"

static const char *const usage[] = {
        "memsnap stats [--json] [--top N] [--device D] <file>...",
        "              [--jobs N] [--frames user|all|N] [--site-depth N]",
        "              [--category NAME=REGEX]... [--categories FILE]",
        "              [--from WHERE] [--to WHERE] [--windows PREFIX] [--at WHERE]",
        "",
        "From the trace alone: peak requested bytes (PyTorch's requested_bytes.all.peak)",
        "with the event, time and annotation where it happened; allocations still live",
        "at the end (the model's state, caches, leaks: explain tells them apart); the",
        "largest allocations; the top allocation sites by bytes live at the peak; and,",
        "from the end-state segments when present,",
        "reserved, allocated, internal (rounding) and external free bytes, the largest",
        "free block and the number of segments. Several files (one per rank) give one",
        "table with a row per file, read in parallel.",
        "",
        "A site is the first frame of the user's own code in the allocation's stack (else a",
        "library's, torch's, then the C++ that says what ran); --frames all prints the whole",
        "stack below it, --frames N its N-1 callers, and sites are then grouped by all that",
        "is printed.",
        NULL,
};

/* The results as JSON on stdout: one object, or an array of rows against their median. */
static void print_json(const struct ms_stats_read *all, size_t nall)
{
	cJSON *root = nall == 1 ? NULL : cJSON_CreateArray();
	uint64_t median = nall > 1 ? ms_stats_median_peak(all, nall) : 0;
	char *s;
	for (size_t i = 0; i < nall; i++) {
		cJSON *o;
		if (all[i].s && all[i].empty && root) {
			o = cJSON_CreateObject();
			ms_json_schema(o);
			cJSON_AddStringToObject(o, "trace", all[i].path);
			cJSON_AddNullToObject(o, "device");
			cJSON_AddNumberToObject(o, "allocations", 0);
			cJSON_AddBoolToObject(o, "no_allocations_recorded", 1);
			cJSON_AddItemToArray(root, o);
			continue;
		}
		if (all[i].s)
			continue;
		{
			struct ms_stats_view v = ms_stats_view_of(&all[i]);
			if (!(o = ms_stats_json(&v)))
				ms_die(MS_EXIT_ERROR, "out of memory");
		}
		if (root) {
			/* several files: each peak against the median of them */
			if (median && all[i].r->n_allocs)
				cJSON_AddNumberToObject(
				        o, "peak_against_median",
				        (double)ms_stats_peak(all[i].r) / (double)median - 1);
			else
				cJSON_AddNullToObject(o, "peak_against_median");
			cJSON_AddItemToArray(root, o);
		} else {
			root = o;
		}
	}
	if (root) {
		s = cJSON_Print(root);
		if (s)
			puts(s);
		cJSON_free(s);
		cJSON_Delete(root);
	}
}

/* The windows j measured, a line each. */
static void print_windows(const struct ms_stats_read *j)
{
	const struct ms_trace_stats *r = j->r;
	char b1[32], b2[32], b3[32], b4[32];

	if (!r->windows_asked)
		return;
	if (!r->n_windows)
		printf("windows: no phase whose name starts with that prefix\n");
	for (size_t i = 0; i < r->n_windows; i++) {
		const struct ms_window_figures *w = &r->windows[i];
		if (w->at) { /* --at: the moment, not a stretch */
			printf("right after event %llu (--at): requested %s",
			       (unsigned long long)w->from,
			       ms_format_size(b1, sizeof(b1), w->requested_at_end));
			if (r->windows_reserved_known)
				printf(", reserved %s",
				       ms_format_size(b2, sizeof(b2), w->reserved_at_end));
			printf(" (before it: requested %s)\n",
			       ms_format_size(b3, sizeof(b3), w->requested_at_start));
			continue;
		}
		printf("window %s%s%sevents %llu to %llu%s: requested %s at its start, peak %s "
		       "(+%s)",
		       w->name ? "'" : "", w->name ? w->name : "", w->name ? "' " : "",
		       (unsigned long long)w->from, (unsigned long long)w->to,
		       w->closed ? "" : " (still open at the trace's end)",
		       ms_format_size(b1, sizeof(b1), w->requested_at_start),
		       ms_format_size(b2, sizeof(b2), w->peak_requested),
		       ms_format_size(b3, sizeof(b3), w->peak_requested - w->requested_at_start));
		if (r->windows_reserved_known)
			printf("; reserved %s at its start, peak %s",
			       ms_format_size(b1, sizeof(b1), w->reserved_at_start),
			       ms_format_size(b4, sizeof(b4), w->peak_reserved));
		if (w->recorded_ooms)
			printf("; %llu recorded OOM%s", (unsigned long long)w->recorded_ooms,
			       w->recorded_ooms == 1 ? "" : "s");
		printf("\n");
	}
}

/* --from, --to, --windows into *a (usage errors where they are not windows). */
static void windows_asked(const struct ms_opt *opts, const char *from, const char *to,
                          const char *prefix, const char *at, struct ms_windows_asked *a)
{
	const char *why;

	memset(a, 0, sizeof(*a));
	if (at && (from || to || prefix))
		ms_usage_error(opts, usage,
		               "--at is one moment: it takes no --from, --to or --windows");
	if (at) {
		a->one = a->at = 1;
		if ((why = ms_window_end_parse(at, &a->from)))
			ms_usage_error(opts, usage, "--at '%s': %s", at, why);
		return;
	}
	if (prefix && (from || to))
		ms_usage_error(opts, usage, "--windows takes no --from or --to");
	if (prefix && !*prefix)
		ms_usage_error(opts, usage, "--windows: an empty prefix");
	a->prefix = prefix;
	a->one = from || to;
	if (from && (why = ms_window_end_parse(from, &a->from)))
		ms_usage_error(opts, usage, "--from '%s': %s", from, why);
	if (to && (why = ms_window_end_parse(to, &a->to)))
		ms_usage_error(opts, usage, "--to '%s': %s", to, why);
	if (ms_window_ends_cross(&a->from, &a->to))
		ms_usage_error(opts, usage, "--to %s comes before --from %s", to, from);
}

/* The window asked is not in j's file: said, 1. */
static int window_missing(const struct ms_stats_read *j, const struct ms_windows_asked *a,
                          const char *from, const char *to)
{
	char msg[512];

	if (!a->one ||
	    !ms_window_missing(a, from, to, j->r->window_events, UINT64_MAX, j->r->windows,
	                       j->r->n_windows, j->r->window_marks_seen, msg, sizeof(msg)))
		return 0;
	ms_error("%s: %s", j->path, msg);
	return 1;
}

int cmd_stats(int argc, const char **argv)
{
	int json = 0, n, rc = MS_EXIT_OK;
	uint64_t top = 10, jobs = 0, device = UINT64_MAX;
	struct ms_frames_opt frames = {0};
	int site_depth = 1;
	const char *from = NULL, *to = NULL, *prefix = NULL, *at = NULL;
	struct ms_windows_asked wa;
	struct ms_user_cats_args ucats = {0};
	const struct ms_opt opts[] = {
	        MS_OPT_BOOL(0, "json", &json,
	                    "print JSON (an object; an array for several files or devices)"),
	        MS_OPT_U64(0, "top", &top, "N",
	                   "length of the top lists, 1 to 100000 (default 10)"),
	        MS_OPT_U64('j', "jobs", &jobs, "N",
	                   "files read at once (default: the number of CPUs)"),
	        MS_OPT_U64(0, "device", &device, "D",
	                   "only device D of each file (default: each device with events)"),
	        MS_OPT_FRAMES(&frames),
	        MS_OPT_SITE_DEPTH(&site_depth),
	        MS_USER_CATS_OPTS(&ucats),
	        MS_OPT_STRING(0, "from", &from, "WHERE",
	                      "a window from here: an event's number, a time (1.5s, 200ms), "
	                      "mark:NAME[#N], or alloc:ADDRESS[#N] / free:ADDRESS[#N] (an "
	                      "allocation, a completed free)"),
	        MS_OPT_STRING(
	                0, "to", &to, "WHERE",
	                "the window up to here (not included): an event, a time, mark:NAME[#N], "
	                "alloc:ADDRESS[#N] or free:ADDRESS[#N]"),
	        MS_OPT_STRING(0, "windows", &prefix, "PREFIX",
	                      "a window for each phase whose name starts with PREFIX"),
	        MS_OPT_STRING(0, "at", &at, "WHERE",
	                      "the moment right after one event: an event's number, a time, "
	                      "mark:NAME[#N], alloc:ADDRESS[#N] or free:ADDRESS[#N]"),
	        MS_OPT_END(),
	};
	struct ms_stats_read *reads, *all;
	size_t nth, nall, nfiles;

	n = ms_parse_options(argc, argv, opts, usage);
	if (n < 1)
		ms_usage_error(opts, usage, "no file given");
	if (top == 0 || top > 100000)
		ms_usage_error(opts, usage, "--top must be 1 to 100000");
	if (device != UINT64_MAX && device > UINT16_MAX)
		ms_usage_error(opts, usage, "--device must be 0 to 65535");
	ms_frames_opt_check(&frames, opts, usage);
	ms_site_depth_set(site_depth, opts, usage);
	ms_user_cats_set(&ucats, opts, usage);
	windows_asked(opts, from, to, prefix, at, &wa);
	if (!(reads = ms_calloc((size_t)n, sizeof(*reads))))
		ms_die(MS_EXIT_ERROR, "out of memory");
	nfiles = 0;
	for (int f = 0; f < n; f++) {
		int dup = 0;
		for (int g = 0; g < f && !dup; g++)
			dup = ms_same_file(argv[g], argv[f]) ? g + 1 : 0;
		if (dup && !strcmp(argv[dup - 1], argv[f]))
			ms_note("%s is given more than once: read once", argv[f]);
		else if (dup)
			ms_note("%s is %s, given before: read once", argv[f], argv[dup - 1]);
		else
			reads[nfiles++].path = argv[f];
	}
	for (size_t i = 0; i < nfiles; i++) {
		reads[i].top = (size_t)top;
		reads[i].only = device == UINT64_MAX ? -1 : (int64_t)device;
		reads[i].frames = frames.n;
		reads[i].windows = from || to || prefix || at ? &wa : NULL;
	}
	nth = jobs ? (size_t)jobs : (size_t)ms_cpus_usable();
	if (nth < 1)
		nth = 1;
	if (ms_stats_read_files(reads, nfiles, (size_t)top, nth, &all, &nall))
		ms_die(MS_EXIT_ERROR, "out of memory");
	ms_free(reads);
	for (size_t i = 0; i < nall; i++) {
		if (device != UINT64_MAX &&
		    (all[i].s ? all[i].empty : all[i].device != (int64_t)device)) {
			ms_error("%s: nothing on device %llu (memsnap info lists the file's "
			         "devices)",
			         all[i].path, (unsigned long long)device);
			rc = MS_EXIT_ERROR;
		} else if (all[i].s && all[i].empty && nfiles > 1) {
			continue; /* a row of the table: no allocations recorded */
		} else if (all[i].s) {
			ms_report(all[i].path, all[i].s, &all[i].d);
			rc = MS_EXIT_ERROR;
		} else if (window_missing(&all[i], &wa, at ? at : from, to)) {
			rc = MS_EXIT_ERROR;
		} else if (i == 0 || all[i].path != all[i - 1].path) {
			ms_report_warnings(all[i].path, &all[i].d);
		}
	}
	/* an output is whole or none: no table or JSON without the files that failed */
	if (rc)
		goto out;
	if (json) {
		print_json(all, nall);
	} else if (nall == 1) {
		if (!all[0].s)
			ms_stats_print_one(&all[0]);
		if (!all[0].s)
			print_windows(&all[0]);
	} else if (nfiles == 1) {
		for (size_t i = 0; i < nall; i++) {
			if (i)
				putchar('\n');
			if (!all[i].s)
				ms_stats_print_one(&all[i]);
			if (!all[i].s)
				print_windows(&all[i]);
		}
	} else {
		ms_stats_print_table(all, nall);
		for (size_t i = 0; i < nall; i++)
			if (!all[i].s && all[i].r->windows_asked) {
				printf("%s:\n", all[i].path);
				print_windows(&all[i]);
			}
	}
out:
	for (size_t i = 0; i < nall; i++) {
		if (all[i].own_src)
			ms_replay_cli_say_passes(all[i].src);
		ms_stats_read_release(&all[i]);
	}
	ms_free(all);
	return rc;
}
