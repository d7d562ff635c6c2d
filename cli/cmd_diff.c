/* memsnap diff A B: what changed between two runs: peaks, sites and annotations. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/trace_stats.h"
#include "cli/cmds.h"
#include "cli/diff_text.h"
#include "cli/opts.h"
#include "cli/messages.h"
#include "cli/output_file.h"
#include "cli/replay_opts.h"
#include "cli/sites.h"
#include "explain/diff.h"
#include "json/diff.h"
#include "common/json.h"
#include "common/alloc.h"
#include "parse/trace.h"

static const char *const usage[] = {
        "memsnap diff [--top N] [--json] [--frames user|all|N] [--site-depth N] [replay options] "
        "<a> <b>",
        "             [--at WHERE] [--category NAME=REGEX]... [--categories FILE]",
        "",
        "What changed from run A to run B: the peaks of the allocator replay (reserved,",
        "allocated, requested, segments, retries), what each peak is made of (memsnap",
        "explain's categories), each step's peak step by step, the bytes live at each run's",
        "peak by allocation site, and the peak requested bytes inside each annotation (PyTorch's",
        "record_function scopes, phases and steps). Sites and annotations are matched by name;",
        "with --frames all or N, sites by all the frames printed (see `memsnap help stats`).",
        NULL,
};

/* Replay run w's device into in (its notes said; a reading's warning once a file). */
static int replay_side(struct ms_replay_cli *c, struct ms_diff_input *in,
                       struct ms_replay_result *r)
{
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_replay_cli keep = *c;
	ms_status st;

	c->o.device = in->device;
	st = ms_replay_cli_run(c, in->path, r, &in->lim, &d);
	ms_replay_cli_release(c);
	*c = keep;
	in->r = r;
	if (!st)
		st = ms_replay_cli_trace_held(in->path, &in->t, &d);
	if (st) {
		ms_report(in->path, st, &d);
		return -1;
	}
	if (ms_replay_cli_window_found(c, in->path, r)) /* --at: the event is in this run */
		return -1;
	/* a cut trace is compared as far as it goes: said, once a file */
	if (c->warned_path != in->path)
		ms_report_warnings(in->path, &d);
	if (d.warnings)
		c->warned_path = in->path;
	return 0;
}

/* One pair of devices: text, or its object into *out. */
static int diff_pair(struct ms_replay_cli *c, const char *const path[2], uint32_t da, uint32_t db,
                     size_t named, size_t top, uint32_t frames, cJSON **out)
{
	struct ms_replay_result r[2];
	struct ms_diff_input in[2];
	struct ms_diff d;
	char la[MS_LABEL_MAX], lb[MS_LABEL_MAX];
	ms_status st;

	memset(r, 0, sizeof(r));
	memset(in, 0, sizeof(in));
	in[0].path = path[0];
	in[0].device = da;
	in[1].path = path[1];
	in[1].device = db;
	in[0].user_cats = in[1].user_cats = ms_user_cats_opt();
	if (replay_side(c, &in[0], &r[0]) || replay_side(c, &in[1], &r[1])) {
		ms_replay_result_release(&r[0]);
		ms_replay_result_release(&r[1]);
		return -1;
	}
	if ((st = ms_diff_run(in, frames, ms_site_depth(), &d)))
		ms_die(MS_EXIT_ERROR, "%s", ms_strerror(st));
	if (out) {
		if (!(*out = ms_diff_json(&d, top, frames)))
			ms_die(MS_EXIT_ERROR, "out of memory");
	} else {
		ms_diff_print(&d, ms_replay_cli_label(path[0], da, named, la, sizeof(la)),
		              ms_replay_cli_label(path[1], db, named, lb, sizeof(lb)), top, frames);
	}
	ms_diff_release(&d);
	return 0;
}

/* The devices of each run not compared, said. */
static void say_unpaired(const char *const path[2], const uint32_t *da, size_t na,
                         const uint32_t *db, size_t nb)
{
	for (int w = 0; w < 2; w++) {
		const uint32_t *x = w ? db : da, *y = w ? da : db;
		size_t nx = w ? nb : na, ny = w ? na : nb;
		for (size_t i = 0; i < nx; i++) {
			size_t j;
			for (j = 0; j < ny && y[j] != x[i]; j++)
				;
			if (j == ny)
				ms_warning(
				        "%s: device %u has events, %s has none there: not compared",
				        path[w], x[i], path[!w]);
		}
	}
}

int cmd_diff(int argc, const char **argv)
{
	struct ms_replay_cli c;
	struct ms_opt opts[MS_REPLAY_OPTS_MAX + 7];
	const char *at = NULL;
	struct ms_user_cats_args ucats = {0};
	struct ms_frames_opt frames = {0};
	const char *path[2];
	int site_depth = 1, n, json = 0, rc = MS_EXIT_OK;
	uint64_t top = 10;
	uint32_t *da = NULL, *db = NULL, *pa, *pb;
	size_t na, nb, k, pairs;
	cJSON *all = NULL, *arr = NULL;

	ms_replay_cli_init(&c, opts, &json);
	ms_opts_drop(opts, "backend");
	for (k = 0; opts[k].type != MS_OPT_T_END; k++)
		;
	opts[k++] = (struct ms_opt)MS_OPT_U64(0, "top", &top, "N", "rows per table (default 10)");
	opts[k++] = (struct ms_opt)MS_OPT_FRAMES(&frames);
	opts[k++] = (struct ms_opt)MS_OPT_SITE_DEPTH(&site_depth);
	opts[k++] = (struct ms_opt)MS_OPT_STRING(
	        0, "at", &at, "WHERE",
	        "compare what each run held right after one event (in each run its own): an "
	        "event's number, a time, mark:NAME[#N], alloc:ADDRESS[#N] or free:ADDRESS[#N]");
	{
		struct ms_opt uc[] = {MS_USER_CATS_OPTS(&ucats)};
		opts[k++] = uc[0];
		opts[k++] = uc[1];
	}
	opts[k] = (struct ms_opt)MS_OPT_END();
	n = ms_parse_options(argc, argv, opts, usage);
	if (n != 2)
		ms_usage_error(opts, usage, "two traces are compared");
	ms_replay_cli_check(&c, opts, usage);
	if (top < 1 || top > 100000)
		ms_usage_error(opts, usage, "--top must be 1 to 100000");
	ms_frames_opt_check(&frames, opts, usage);
	ms_site_depth_set(site_depth, opts, usage);
	ms_user_cats_set(&ucats, opts, usage);
	if (at) {
		const char *why = ms_window_end_parse(at, &c.windows.from);
		if (why)
			ms_usage_error(opts, usage, "--at '%s': %s", at, why);
		c.windows.one = c.windows.at = 1;
		c.win_at = at;
		c.o.windows = &c.windows;
	}
	path[0] = argv[0];
	path[1] = argv[1];
	if (ms_same_file(path[0], path[1]))
		ms_note("%s and %s are the same file: each device is compared with itself, and "
		        "nothing differs",
		        path[0], path[1]);
	/* each run is read whole once: its devices, replays and categories come from it */
	for (int w = 0; w < 2; w++) {
		const struct ms_trace *t;
		struct ms_diag d = MS_DIAG_INIT;
		ms_status s = ms_replay_cli_trace_held(path[w], &t, &d);
		if (s) {
			ms_report(path[w], s, &d);
			return MS_EXIT_ERROR;
		}
	}
	if (ms_replay_cli_devices(&c, path[0], "diff", &da, &na) ||
	    ms_replay_cli_devices(&c, path[1], "diff", &db, &nb)) {
		ms_free(da);
		return MS_EXIT_ERROR;
	}
	pa = ms_calloc(na, sizeof(*pa));
	pb = ms_calloc(na, sizeof(*pb));
	if (!pa || !pb)
		ms_die(MS_EXIT_ERROR, "out of memory");
	pairs = ms_diff_pairs(da, na, db, nb, pa, pb);
	if (na > 1 || nb > 1)
		say_unpaired(path, da, na, db, nb);
	if (!pairs) {
		ms_error("%s and %s have events on no common device", path[0], path[1]);
		rc = MS_EXIT_ERROR;
	}
	if (json && pairs > 1) {
		all = cJSON_CreateObject();
		ms_json_schema(all);
		arr = cJSON_AddArrayToObject(all, "devices");
	}
	for (k = 0; k < pairs && rc == MS_EXIT_OK; k++) {
		cJSON *o = NULL;
		if (k && !json)
			putchar('\n');
		/* name the devices where it matters */
		if (diff_pair(&c, path, pa[k], pb[k], pairs > 1 || pa[k] != pb[k] ? 2 : 1,
		              (size_t)top, frames.n, json ? &o : NULL)) {
			rc = MS_EXIT_ERROR;
			break;
		}
		if (arr)
			cJSON_AddItemToArray(arr, o);
		else if (o)
			all = o;
	}
	if (all && rc == MS_EXIT_OK) {
		char *str = cJSON_Print(all);
		if (str)
			puts(str);
		cJSON_free(str);
	}
	cJSON_Delete(all);
	ms_free(pa);
	ms_free(pb);
	ms_free(da);
	ms_free(db);
	return rc;
}
