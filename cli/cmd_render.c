/* memsnap render TRACE: the allocator's state at one moment, drawn (render/render.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmds.h"
#include "cli/opts.h"
#include "cli/messages.h"
#include "cli/output_file.h"
#include "cli/render_cmd.h"
#include "cli/replay_opts.h"
#include "cli/sites.h"
#include "common/alloc.h"
#include "render/render.h"

static const char *const usage[] = {
        "memsnap render [--format html|csv|txt|dot|svg] [--at peak|oom|end|EVENT|alloc:ADDR] [-o "
        "FILE]",
        "               [--alloc-conf S] [--limit N | --memory-fraction F] [--device-memory N]",
        "               [--device D] [--from N] [--to N] [--detail N] [--frames user|all|N]",
        "               [--site-depth N] [--category NAME=REGEX]... [--categories FILE] <trace>",
        "",
        "Replay a trace with memsnap's allocator model and draw what happened. --format html",
        "(the default for -o FILE.html) writes one self-contained page for postmortems: memory",
        "over the trace (zoom, pan, hover), the segment map at the peak, the OOM, the end or",
        "any moment clicked, fragmentation over time, the OOM's story and the top allocation",
        "sites at the peak. It loads nothing from the network. --detail N sets how many",
        "buckets of events the timeline has (default 2000; each keeps its least and most).",
        "At an OOM the page also says which allocator settings would have avoided it (as",
        "`memsnap whatif` does; --no-whatif leaves that out). --from/--to draw a window of",
        "events (the replay still starts at the first event, so the state is exact); peak,",
        "end and the OOM are then the window's.",
        "",
        "--format csv (the default for -o FILE.csv) writes the page's timeline for people who",
        "plot it themselves: a row per bucket of events (--detail, --from/--to as for html)",
        "with its events, time, allocated and reserved bytes (last, least, most), active,",
        "inactive split, outside PyTorch, private pools, free and the largest free block, the",
        "annotation, and the bucket's largest allocation with its site.",
        "",
        "The other formats draw the segments and their blocks at one moment: --at oom (the",
        "first OOM), peak (when allocated memory first reached its peak), end, or after trace",
        "event EVENT (the numbers replay and stats print); without --at, the OOM if the replay",
        "has one, else the peak. txt is a map of segments for terminals; dot, Graphviz DOT",
        "(segments as table nodes, blocks in address order coloured by state, the failed",
        "request as a node of its own); svg, that DOT laid out in-process by libgvc.",
        "",
        "Without --format the extension of -o picks it (.html, .csv, .txt, .dot, .gv, .svg;",
        "another name needs --format), and without -o txt goes to standard output. The",
        "output file appears whole or not at all.",
        "",
        "Allocation sites (the first frame of the user's code: `memsnap help stats`) label",
        "blocks in the DOT and SVG tooltips and in the page, whose tables also show a site's",
        "whole stack when clicked or hovered. --frames all or N adds the whole stack or the",
        "site's N-1 callers to the tooltips.",
        NULL,
};

/*
 * A drawing is of one device: --device, the only one with events, else the one where the replay
 * runs out of memory (the first), else the one with the highest reserved peak; said on stderr.
 * A page of several devices replays each of them for itself and chooses there.
 */
static int choose_device(struct ms_replay_cli *c, const char *path, uint32_t **devs_out,
                         size_t *nd_out)
{
	uint32_t *devs, best = 0;
	size_t nd;
	uint64_t best_peak = 0;
	int best_oom = 0;
	struct ms_replay_opts base = c->o;

	if (ms_replay_cli_devices(c, path, "render", &devs, &nd))
		return -1;
	*devs_out = devs;
	*nd_out = nd;
	if (nd == 1) {
		c->o.device = devs[0];
		return 0;
	}
	if (c->html)
		return 0;
	for (size_t i = 0; i < nd; i++) {
		struct ms_replay_result r;
		struct ms_limit_range lim;
		struct ms_diag d = MS_DIAG_INIT;
		ms_status s;
		c->o = base;
		c->o.device = devs[i];
		c->quiet_notes = 1;
		s = ms_replay_cli_run(c, path, &r, &lim, &d);
		c->quiet_notes = 0;
		ms_replay_cli_release(c);
		if (s) {
			ms_report(path, s, &d);
			ms_free(devs);
			*devs_out = NULL;
			return -1;
		}
		if (!i || ms_render_device_better(&r, best_oom, best_peak)) {
			best = devs[i];
			best_peak = (uint64_t)r.stats.reserved_bytes[0].peak;
			best_oom = r.has_oom;
		}
		ms_replay_result_release(&r);
	}
	c->o = base;
	c->o.device = best;
	ms_render_say_device(path, nd, 0, best, best_oom);
	return 0;
}

/* The flags into c and *a; usage errors exit 2. Returns the trace's path. */
static const char *render_args(int argc, const char **argv, struct ms_replay_cli *c,
                               struct ms_render_ask *a)
{
	struct ms_opt opts[MS_REPLAY_OPTS_MAX + 12];
	struct ms_frames_opt frames = {0};
	const char *format = NULL, *at = NULL, *out = NULL, *moment;
	uint64_t event = 0, detail = 2000, from = 0, to = UINT64_MAX; /* UINT64_MAX: the end */
	int n, json = 0, no_whatif = 0, site_depth = 1;
	struct ms_user_cats_args ucats = {0};

	ms_replay_cli_init(c, opts, &json);
	ms_opts_drop(opts, "backend");
	ms_opts_help(opts, "device",
	             "draw this device (default: the one that runs out of memory, else the one "
	             "with the highest peak)");
	/* no --json here: the replay's JSON is `memsnap replay --json` */
	for (n = 0; opts[n].type != MS_OPT_T_END; n++)
		if (opts[n].long_name && !strcmp(opts[n].long_name, "json"))
			break;
	opts[n++] = (struct ms_opt)MS_OPT_STRING(0, "format", &format, "F",
	                                         "html, csv, txt, dot or svg");
	opts[n++] = (struct ms_opt)MS_OPT_U64(0, "detail", &detail, "N",
	                                      "html: buckets of events in the timeline (2000)");
	opts[n++] = (struct ms_opt)MS_OPT_U64(
	        0, "from", &from, "N", "draw the window from event N (the replay starts at 0)");
	opts[n++] = (struct ms_opt)MS_OPT_U64(0, "to", &to, "N", "... up to event N, exclusive");
	opts[n++] = (struct ms_opt)MS_OPT_BOOL(0, "no-whatif", &no_whatif,
	                                       "html: no what-if table at an OOM (faster)");
	opts[n++] = (struct ms_opt)MS_OPT_STRING(
	        0, "at", &at, "WHEN",
	        "peak, oom, end, an event number, or right after alloc:ADDRESS[#N] or "
	        "free:ADDRESS[#N] (the Nth allocation or completed free there)");
	opts[n++] = (struct ms_opt)MS_OPT_STRING('o', "output", &out, "FILE",
	                                         "write here (default: standard output)");
	opts[n++] = (struct ms_opt)MS_OPT_FRAMES(&frames);
	opts[n++] = (struct ms_opt)MS_OPT_SITE_DEPTH(&site_depth);
	{
		struct ms_opt uc[] = {MS_USER_CATS_OPTS(&ucats)};
		opts[n++] = uc[0];
		opts[n++] = uc[1];
	}
	opts[n] = (struct ms_opt)MS_OPT_END();
	n = ms_parse_options(argc, argv, opts, usage);
	if (n != 1)
		ms_usage_error(opts, usage, n ? "one trace at a time" : "no trace given");
	ms_replay_cli_check(c, opts, usage);
	ms_output_refuse_inputs(out, "-o", argv, 1);
	ms_frames_opt_check(&frames, opts, usage);
	ms_site_depth_set(site_depth, opts, usage);
	ms_user_cats_set(&ucats, opts, usage);
	if (!format) {
		format = !out || !strcmp(out, "-")                               ? "txt"
		         : ms_ends_with(out, ".dot") || ms_ends_with(out, ".gv") ? "dot"
		         : ms_ends_with(out, ".svg")                             ? "svg"
		         : ms_ends_with(out, ".html")                            ? "html"
		         : ms_ends_with(out, ".csv")                             ? "csv"
		         : ms_ends_with(out, ".txt")                             ? "txt"
		                                                                 : NULL;
		if (!format)
			ms_usage_error(
			        opts, usage,
			        "-o %s: the name does not say which format (.html, .csv, .txt, "
			        ".dot, .gv, .svg); give --format",
			        out);
	}
	if (strcmp(format, "html") && strcmp(format, "csv") && strcmp(format, "txt") &&
	    strcmp(format, "dot") && strcmp(format, "svg"))
		ms_usage_error(opts, usage, "--format must be html, csv, txt, dot or svg");
	if (detail < 10 || detail > 1000000)
		ms_usage_error(opts, usage, "--detail must be 10 to 1000000");
	if (to <= from)
		ms_usage_error(opts, usage, "--to must be past --from: the window holds no event");
	if (to == UINT64_MAX)
		to = 0; /* to the end */
	if ((!strcmp(format, "html") || !strcmp(format, "csv")) && at)
		ms_usage_error(opts, usage,
		               "--at is for txt, dot and svg: the page and the CSV timeline cover "
		               "every moment");
	if (!strcmp(format, "html") && !ms_render_have_html())
		ms_die(MS_EXIT_ERROR,
		       "this memsnap was built without dygraphs (libjs-dygraphs): no "
		       "HTML report; use --format txt, dot or svg");
	if (!strcmp(format, "svg") && !ms_render_have_svg())
		ms_die(MS_EXIT_ERROR, "this memsnap was built without Graphviz (libgvc): use "
		                      "--format dot and run `dot -Tsvg`");
	moment = at;
	if (at && (!strncmp(at, "alloc:", 6) || !strncmp(at, "free:", 5))) {
		/* the moment after an allocation (or a completed free): found by the first pass */
		const char *why = ms_window_end_parse(at, &c->windows.from);
		if (why)
			ms_usage_error(opts, usage, "--at '%s': %s", at, why);
		c->windows.one = c->windows.at = 1;
		c->win_at = at;
		moment = "event";
	} else if (at && strcmp(at, "peak") && strcmp(at, "oom") && strcmp(at, "end")) {
		char *end;
		errno = 0;
		event = strtoull(at, &end, 10);
		if (!*at || *end || errno || *at == '-')
			ms_usage_error(
			        opts, usage,
			        "--at must be peak, oom, end, an event number, alloc:ADDRESS[#N] "
			        "or free:ADDRESS[#N], not '%s'",
			        at);
		moment = "event";
	}

	*a = (struct ms_render_ask){
	        format,
	        at,
	        moment,
	        out,
	        event,
	        {(size_t)detail, no_whatif, from, to, frames.n, ms_site_depth(), ms_user_cats_opt()}};
	return argv[0];
}

int cmd_render(int argc, const char **argv)
{
	struct ms_replay_cli c;
	struct ms_render_ask a;
	const char *path = render_args(argc, argv, &c, &a);
	uint32_t *devs = NULL;
	size_t nd = 0;
	int rc = MS_EXIT_OK;

	c.o.no_segment_log = 1;
	if (ms_render_no_trace(&c, path, &a, &rc))
		return rc;
	c.html = !strcmp(a.format, "html");
	if (choose_device(&c, path, &devs, &nd))
		return MS_EXIT_ERROR;
	rc = c.html || !strcmp(a.format, "csv") ? ms_render_page(&c, path, &a, devs, nd)
	                                        : ms_render_moment(&c, path, &a);
	ms_free(devs);
	return rc;
}
