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
#include "cli/replay_opts.h"
#include "cli/sites.h"
#include "common/alloc.h"
#include "parse/devices.h"
#include "parse/trace.h"
#include "render/render.h"
#include "render/page.h"
#include "render/report.h"
#include "replay/end_state.h"

static const char *const usage[] = {
        "memsnap render [--format html|csv|txt|dot|svg] [--at peak|oom|end|EVENT] [-o FILE]",
        "               [--alloc-conf S] [--limit N | --memory-fraction F] [--device-memory N]",
        "               [--device D] [--from N] [--to N] [--detail N] [--frames user|all|N]",
        "               [--site-depth N] <trace>",
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
        "another",
        "name needs --format), and without -o txt goes to standard output. The output file",
        "appears whole or not at all.",
        "",
        "Allocation sites (the first frame of the user's code: `memsnap help stats`) label",
        "blocks in the DOT and SVG tooltips and in the page, whose tables also show a site's",
        "whole stack when clicked or hovered. --frames all or N adds the whole stack or the",
        "site's N-1 callers to the tooltips.",
        NULL,
};

static int emit(const char *out, const struct ms_buf *buf, const char *what, size_t n_segs,
                uint64_t index)
{
	if (!out || !strcmp(out, "-")) {
		if (fwrite(buf->data, 1, buf->len, stdout) != buf->len || fflush(stdout)) {
			ms_error("write error on standard output");
			return MS_EXIT_ERROR;
		}
		return MS_EXIT_OK;
	}
	if (ms_output_write_whole(out, buf->data, buf->len))
		return MS_EXIT_ERROR;
	if (n_segs == SIZE_MAX)
		ms_said("wrote %s (%s, %.1f MB)", out, what, (double)buf->len / 1e6);
	else
		ms_said("wrote %s (%s, %zu segments, event %llu)", out, what, n_segs,
		        (unsigned long long)index);
	return MS_EXIT_OK;
}

/*
 * The window [from, *to) of a trace of total events (*to 0 or past the end: to the end). An
 * empty window is an error, said here: returns -1.
 */
static int window_check(const char *path, uint64_t from, uint64_t *to, uint64_t total)
{
	if (!*to || *to > total)
		*to = total;
	if (from < *to)
		return 0;
	ms_error("%s: --from %llu: the window holds none of the trace's %llu events", path,
	         (unsigned long long)from, (unsigned long long)total);
	return -1;
}

/*
 * One device's page, its data alone, or its timeline as CSV, appended to out (page.h): r is the
 * first pass, with c's options. MS_EXIT_OK, or MS_EXIT_ERROR with the error said.
 */
static int page_data(const struct ms_replay_cli *c, const char *path,
                     const struct ms_replay_result *r, const struct ms_limit_range *lim,
                     const struct ms_page_opts *pg, enum ms_page_out what, struct ms_buf *out)
{
	struct ms_diag d = MS_DIAG_INIT;
	const struct ms_trace *t;
	ms_status s;

	/* a snapshot is in memory already; a .zst trace streams from its file */
	if (!(s = ms_replay_cli_trace(path, &t, &d)))
		s = ms_page_write(path, t, &c->o, r, lim, pg, what, out, &d);
	if (s)
		ms_report(path, s, &d);
	return s ? MS_EXIT_ERROR : MS_EXIT_OK;
}

/* The HTML report: r is the first pass (released here). */
static int render_html(struct ms_replay_cli *c, const char *path, const char *out,
                       struct ms_replay_result *r, const struct ms_limit_range *lim,
                       const struct ms_page_opts *pg)
{
	struct ms_buf buf = MS_BUF_INIT;
	int rc = page_data(c, path, r, lim, pg, MS_PAGE_HTML, &buf);

	if (rc == MS_EXIT_OK)
		rc = emit(out, &buf, "html", SIZE_MAX, 0);
	ms_buf_release(&buf);
	ms_replay_result_release(r);
	ms_replay_cli_release(c);
	return rc;
}

/* A first pass that replayed nothing of the device: said, r released. */
static int no_events(struct ms_replay_cli *c, const char *path, struct ms_replay_result *r)
{
	if (r->events_other_devices)
		ms_error("%s: no events of device %u to draw; %llu events are on other devices "
		         "(`memsnap info` lists them; choose one with --device)",
		         path, (unsigned)c->o.device, (unsigned long long)r->events_other_devices);
	else
		ms_error("%s: the trace has no events to draw", path);
	ms_replay_result_release(r);
	ms_replay_cli_release(c);
	return MS_EXIT_ERROR;
}

/* The first pass of the page made on two threads: the command's replay, its notes said. */
struct first_pass {
	struct ms_replay_cli *c;
	const char *path;
};

static int first_pass(void *ctx, struct ms_replay_result *r, struct ms_limit_range *lim)
{
	struct first_pass *f = ctx;
	return ms_replay_cli_run_reported(f->c, f->path, r, lim);
}

/*
 * The whole page (no window) with the first pass and the report's replay at the same time
 * (page.h). Returns 0 when it wrote the page or failed (said), -1 when the caller is to go on
 * alone.
 */
static int render_html_together(struct ms_replay_cli *c, const char *path, const char *out,
                                const struct ms_page_opts *pg, int *rc)
{
	const struct ms_trace *t;
	struct ms_diag d = MS_DIAG_INIT;
	struct first_pass f = {c, path};
	struct ms_page_together res;
	struct ms_buf buf = MS_BUF_INIT;

	/* read (or found in the command's cache) before the threads share it */
	if (ms_replay_cli_trace(path, &t, &d))
		return -1;
	ms_page_together_write(path, t, &c->o, first_pass, &f, pg, &buf, &res, &d);
	switch (res.how) {
	case MS_PAGE_NOT_TOGETHER:
		return -1;
	case MS_PAGE_FIRST_FAILED:
		*rc = res.first_rc;
		break;
	case MS_PAGE_SEPARATELY:
		*rc = !res.r.events_replayed ? no_events(c, path, &res.r)
		                             : render_html(c, path, out, &res.r, &res.lim, pg);
		break;
	case MS_PAGE_WROTE:
		if (res.status)
			ms_report(path, res.status, &d);
		*rc = res.status ? MS_EXIT_ERROR : emit(out, &buf, "html", SIZE_MAX, 0);
		ms_replay_cli_release(c);
		break;
	}
	ms_buf_release(&buf);
	return 0;
}

/*
 * A drawing is of one device: --device, the only one with events, else the one where the replay
 * runs out of memory (the first), else the one with the highest reserved peak; said on stderr.
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
	for (size_t i = 0; i < nd; i++) {
		struct ms_replay_result r;
		struct ms_limit_range lim;
		struct ms_diag d = MS_DIAG_INIT;
		ms_status s;
		uint64_t peak;
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
		peak = (uint64_t)r.stats.reserved_bytes[0].peak;
		if (!i || (r.has_oom && !best_oom) || (r.has_oom == best_oom && peak > best_peak)) {
			best = devs[i];
			best_peak = peak;
			best_oom = r.has_oom;
		}
		ms_replay_result_release(&r);
	}
	c->o = base;
	c->o.device = best;
	ms_note("%s has events on %zu devices: %s device %u (%s); --device "
	        "draws another",
	        path, nd, c->html ? "the page opens on" : "drawing", best,
	        best_oom ? "its replay runs out of memory" : "the highest peak");
	return 0;
}

/*
 * A snapshot without a trace (history off, enabled="state", the bare segment list): its end
 * state drawn as it was recorded, for --device or the device holding the most. Returns 0 when
 * path has allocator events (the caller replays them), else 1 with *rc set.
 */
static int render_no_trace(struct ms_replay_cli *c, const char *path, const char *format,
                           const char *at, const char *out, uint32_t frames, int *rc)
{
	struct ms_devices ds;
	struct ms_diag d = MS_DIAG_INIT;
	const struct ms_trace *t;
	struct ms_trace *owned;
	struct ms_replay_result r;
	struct ms_render_input in;
	struct ms_buf buf = MS_BUF_INIT;
	const struct ms_device_use *pick = NULL;
	size_t with_segs = 0;
	ms_status s;

	*rc = MS_EXIT_ERROR;
	if ((s = ms_replay_cli_trace(path, &t, &d)) ||
	    (s = t ? ms_devices_of(t, &ds) : ms_devices_read(path, &ds, &d))) {
		ms_report(path, s, &d);
		return 1;
	}
	for (size_t i = 0; i < ds.n; i++) {
		if (ds.d[i].allocs) {
			ms_devices_release(&ds);
			return 0;
		}
		if (!ds.d[i].segments)
			continue;
		with_segs++;
		if (c->device == UINT64_MAX ? !pick || ds.d[i].reserved > pick->reserved
		                            : ds.d[i].device == c->device)
			pick = &ds.d[i];
	}
	if (!pick) {
		ms_devices_release(&ds);
		return 0; /* nothing at all, or not on --device: the replay path says so */
	}
	if (at && strcmp(at, "end") != 0) {
		ms_error(
		        "%s: no trace: only the end state the snapshot recorded can be drawn (--at "
		        "end)",
		        path);
		ms_devices_release(&ds);
		return 1;
	}
	if (!strcmp(format, "csv")) {
		ms_error("%s: no trace: the snapshot recorded its end state only, there is no "
		         "timeline "
		         "to write as CSV (--format txt, dot, svg or html draw the end state)",
		         path);
		ms_devices_release(&ds);
		return 1;
	}
	if (with_segs > 1 && c->device == UINT64_MAX)
		ms_note("%s has segments on %zu devices: drawing device %u (the "
		        "most "
		        "reserved); --device draws another",
		        path, with_segs, pick->device);
	if ((s = ms_replay_cli_trace_whole(path, &t, &owned, &d))) {
		ms_report(path, s, &d);
		ms_devices_release(&ds);
		return 1;
	}
	if ((s = ms_end_state_snap(t, pick->device, &r, &d))) {
		ms_report(path, s, &d);
	} else {
		memset(&in, 0, sizeof(in));
		in.source = path;
		in.moment = "snapshot";
		in.r = &r;
		in.syms = &t->syms;
		in.frames = frames;
		s = !strcmp(format, "txt")   ? ms_render_text(&in, &buf)
		    : !strcmp(format, "dot") ? ms_render_dot(&in, &buf)
		    : !strcmp(format, "svg")
		            ? ms_render_svg(&in, &buf, &d)
		            : ms_page_end_state(&in, c->o.limit, c->o.device_memory, &buf);
		if (s)
			ms_report(path, s, &d);
		else
			*rc = emit(out, &buf, format, SIZE_MAX, 0);
		ms_replay_result_release(&r);
	}
	ms_buf_release(&buf);
	ms_trace_free(owned);
	ms_devices_release(&ds);
	return 1;
}

/*
 * The page of a trace with several devices: each device's first pass and data, one page with
 * a switch, opening on the device choose_device picked (c->o.device).
 */
static int render_html_devices(struct ms_replay_cli *c, const char *path, const char *out,
                               const uint32_t *devs, size_t nd, const struct ms_page_opts *pg)
{
	struct ms_buf *datas = ms_calloc(nd, sizeof(*datas));
	struct ms_buf page = MS_BUF_INIT;
	struct ms_replay_opts base = c->o;
	size_t first = 0, i;
	int rc = MS_EXIT_OK;

	if (!datas)
		ms_die(MS_EXIT_ERROR, "out of memory");
	for (i = 0; i < nd && rc == MS_EXIT_OK; i++) {
		struct ms_replay_result r;
		struct ms_limit_range lim;
		struct ms_page_opts one = *pg;
		c->o = base;
		c->o.device = devs[i];
		if (devs[i] == base.device)
			first = i;
		if (ms_replay_cli_run_reported(c, path, &r, &lim)) {
			rc = MS_EXIT_ERROR;
			break;
		}
		if (window_check(path, one.from, &one.to, r.events_total))
			rc = MS_EXIT_ERROR;
		else
			rc = page_data(c, path, &r, &lim, &one, MS_PAGE_DATA, &datas[i]);
		ms_replay_result_release(&r);
		ms_replay_cli_release(c);
	}
	if (rc == MS_EXIT_OK) {
		if (ms_render_html_devices(&page, path, datas, devs, nd, first))
			ms_die(MS_EXIT_ERROR, "out of memory");
		rc = emit(out, &page, "html", SIZE_MAX, 0);
	}
	for (i = 0; i < nd; i++)
		ms_buf_release(&datas[i]);
	ms_free(datas);
	ms_buf_release(&page);
	return rc;
}

int cmd_render(int argc, const char **argv)
{
	struct ms_replay_cli c;
	struct ms_opt opts[MS_REPLAY_OPTS_MAX + 10];
	struct ms_frames_opt frames = {0};
	const char *format = NULL, *at = NULL, *out = NULL, *moment;
	struct ms_replay_result r;
	struct ms_limit_range lim;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_render_input in;
	struct ms_symtab syms;
	const struct ms_trace *t = NULL;
	struct ms_buf buf = MS_BUF_INIT;
	struct ms_page_opts pg;
	uint32_t *devs = NULL;
	size_t nd = 0;
	uint64_t event = 0, detail = 2000, from = 0, to = UINT64_MAX; /* UINT64_MAX: the end */
	int windowed, oom_in;
	int n, json = 0, no_whatif = 0, rc = MS_EXIT_OK, site_depth = 1;
	ms_status s;

	ms_replay_cli_init(&c, opts, &json);
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
	opts[n++] = (struct ms_opt)MS_OPT_STRING(0, "at", &at, "WHEN",
	                                         "peak, oom, end or an event number");
	opts[n++] = (struct ms_opt)MS_OPT_STRING('o', "output", &out, "FILE",
	                                         "write here (default: standard output)");
	opts[n++] = (struct ms_opt)MS_OPT_FRAMES(&frames);
	opts[n++] = (struct ms_opt)MS_OPT_SITE_DEPTH(&site_depth);
	opts[n] = (struct ms_opt)MS_OPT_END();
	n = ms_parse_options(argc, argv, opts, usage);
	if (n != 1)
		ms_usage_error(opts, usage, n ? "one trace at a time" : "no trace given");
	ms_replay_cli_check(&c, opts, usage);
	ms_output_refuse_inputs(out, argv, 1);
	ms_frames_opt_check(&frames, opts, usage);
	ms_site_depth_set(site_depth, opts, usage);
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
	if (at && strcmp(at, "peak") && strcmp(at, "oom") && strcmp(at, "end")) {
		char *end;
		errno = 0;
		event = strtoull(at, &end, 10);
		if (!*at || *end || errno || *at == '-')
			ms_usage_error(opts, usage,
			               "--at must be peak, oom, end or an event number, not '%s'",
			               at);
		moment = "event";
	}

	c.o.no_segment_log = 1;
	{
		int no_trace = render_no_trace(&c, argv[0], format, at, out, frames.n, &rc);
		if (no_trace)
			return rc;
	}
	c.html = !strcmp(format, "html");
	if (choose_device(&c, argv[0], &devs, &nd))
		return MS_EXIT_ERROR;
	pg = (struct ms_page_opts){(size_t)detail, no_whatif, from, to, frames.n, ms_site_depth()};
	if (c.html && nd > 1) {
		rc = render_html_devices(&c, argv[0], out, devs, nd, &pg);
		ms_free(devs);
		return rc;
	}
	ms_free(devs);
	if (c.html && !from && !to && render_html_together(&c, argv[0], out, &pg, &rc) == 0)
		return rc;
	/* pass 1: the whole replay (the limit inference and a mid-run rebuild happen here) */
	if (ms_replay_cli_run_reported(&c, argv[0], &r, &lim))
		return MS_EXIT_ERROR;
	if (!r.events_replayed)
		return no_events(&c, argv[0], &r);
	/* the window: events [from, to) */
	if (window_check(argv[0], from, &to, r.events_total)) {
		ms_replay_result_release(&r);
		ms_replay_cli_release(&c);
		return MS_EXIT_ERROR;
	}
	if (!strcmp(format, "html")) {
		pg.to = to;
		return render_html(&c, argv[0], out, &r, &lim, &pg);
	}
	if (!strcmp(format, "csv")) {
		struct ms_buf csv = MS_BUF_INIT;
		pg.to = to;
		rc = page_data(&c, argv[0], &r, &lim, &pg, MS_PAGE_CSV, &csv);
		if (rc == MS_EXIT_OK)
			rc = emit(out, &csv, "csv", SIZE_MAX, 0);
		ms_buf_release(&csv);
		ms_replay_result_release(&r);
		ms_replay_cli_release(&c);
		return rc;
	}
	windowed = from > 0 || to < r.events_total;
	oom_in = r.has_oom && r.first_oom.index >= from && r.first_oom.index < to;
	if (!moment)
		moment = oom_in ? "oom" : "peak";
	if (!strcmp(moment, "oom") && !oom_in) {
		ms_error("%s: the replay has no OOM%s (--at peak, end or an event number)", argv[0],
		         windowed ? " in the window" : "");
		ms_replay_result_release(&r);
		ms_replay_cli_release(&c);
		return MS_EXIT_ERROR;
	}
	if (!strcmp(moment, "event") && (event < from || event >= to)) {
		ms_error("%s: --at %llu: the %s has events %llu to %llu", argv[0],
		         (unsigned long long)event, windowed ? "window" : "trace",
		         (unsigned long long)from, (unsigned long long)to - 1);
		ms_replay_result_release(&r);
		ms_replay_cli_release(&c);
		return MS_EXIT_ERROR;
	}
	c.o.snap = 1;
	c.o.snap_at_oom = !strcmp(moment, "oom");
	c.o.snap_index = !strcmp(moment, "peak")    ? r.peak_allocated_index
	                 : !strcmp(moment, "event") ? event
	                 : windowed                 ? to - 1
	                                            : UINT64_MAX;
	ms_replay_result_release(&r);

	/*
	 * pass 2: to the moment; a snapshot from memory (its events carry the pools told from its
	 * end state), a .zst trace streamed again, keeping the stacks that label the blocks
	 */
	if (ms_symtab_init(&syms))
		ms_die(MS_EXIT_ERROR, "out of memory");
	if (ms_replay_cli_trace(argv[0], &t, &d))
		t = NULL; /* said again, and stopped on, by the streamed replay */
	c.o.syms = t ? NULL : &syms;
	memset(&r, 0, sizeof(r)); /* released below also where the window fails first */
	if ((windowed && !strcmp(moment, "peak") &&
	     (s = ms_report_window_peak(t, argv[0], &c.o, from, to, &c.o.snap_index, &d))) ||
	    (s = t ? ms_replay_trace(t, &c.o, &r, &d) : ms_replay_run(argv[0], &c.o, &r, &d))) {
		ms_report(argv[0], s, &d);
		ms_replay_result_release(&r);
		ms_symtab_release(&syms);
		ms_replay_cli_release(&c);
		return MS_EXIT_ERROR;
	}
	if (r.snap.at_oom && strcmp(moment, "oom"))
		ms_warning(
		        "%s: the replay ran out of memory at event %llu, before the moment asked "
		        "for: drawing the state at the OOM",
		        argv[0], (unsigned long long)r.snap.index);
	in.source = argv[0];
	in.moment = moment;
	in.r = &r;
	in.syms = t ? &t->syms : &syms;
	in.frames = frames.n;
	s = !strcmp(format, "txt")   ? ms_render_text(&in, &buf)
	    : !strcmp(format, "dot") ? ms_render_dot(&in, &buf)
	                             : ms_render_svg(&in, &buf, &d);
	if (s) {
		ms_report(argv[0], s, &d);
		rc = MS_EXIT_ERROR;
	} else {
		rc = emit(out, &buf, format, r.snap.n_segs, r.snap.index);
	}
	ms_buf_release(&buf);
	ms_replay_result_release(&r);
	ms_symtab_release(&syms);
	ms_replay_cli_release(&c);
	return rc;
}
