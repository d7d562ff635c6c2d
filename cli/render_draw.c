/* memsnap render's drawings: c's device at one moment, or a snapshot's end state. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/messages.h"
#include "cli/output_file.h"
#include "cli/render_cmd.h"
#include "common/alloc.h"
#include "parse/devices.h"
#include "parse/source.h"
#include "parse/trace.h"
#include "render/render.h"
#include "render/report.h"
#include "replay/end_state.h"

/* buf to out, whole or not at all (render_cmd.h). */
int ms_render_emit(const char *out, const struct ms_buf *buf, const char *what, size_t n_segs,
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
int ms_render_window_check(const char *path, uint64_t from, uint64_t *to, uint64_t total)
{
	if (!*to || *to > total)
		*to = total;
	if (from < *to)
		return 0;
	ms_error("%s: --from %llu: the window holds none of the trace's %llu events", path,
	         (unsigned long long)from, (unsigned long long)total);
	return -1;
}

/* A first pass that replayed nothing of the device: said, r released. */
int ms_render_no_events(struct ms_replay_cli *c, const char *path, struct ms_replay_result *r)
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

/*
 * A snapshot without a trace (history off, enabled="state", the bare segment list): its end
 * state drawn as it was recorded, for --device or the device holding the most. Returns 0 when
 * path has allocator events (the caller replays them), else 1 with *rc set.
 */
int ms_render_no_trace(struct ms_replay_cli *c, const char *path, const struct ms_render_ask *a,
                       int *rc)
{
	const char *format = a->format, *at = a->at, *out = a->out;
	uint32_t frames = a->pg.frames;
	struct ms_devices ds;
	struct ms_diag d = MS_DIAG_INIT;
	const struct ms_trace *t;
	struct ms_source *src;
	struct ms_trace *owned;
	struct ms_replay_result r;
	struct ms_render_input in;
	struct ms_buf buf = MS_BUF_INIT;
	const struct ms_device_use *pick = NULL;
	size_t with_segs = 0;
	ms_status s;

	*rc = MS_EXIT_ERROR;
	if ((s = ms_replay_cli_source(path, &src, &d)) || (s = ms_replay_cli_trace(path, &t, &d)) ||
	    (s = ms_devices_read_source(src, &ds, &d))) {
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
			*rc = ms_render_emit(out, &buf, format, SIZE_MAX, 0);
		ms_replay_result_release(&r);
	}
	ms_buf_release(&buf);
	ms_trace_free(owned);
	ms_devices_release(&ds);
	return 1;
}

/* --format txt, dot or svg (render_cmd.h): pass 1, the whole replay; pass 2, to the moment. */
int ms_render_moment(struct ms_replay_cli *c, const char *path, const struct ms_render_ask *a)
{
	const char *format = a->format, *moment = a->moment, *out = a->out;
	uint64_t event = a->event, from = a->pg.from, to = a->pg.to;
	struct ms_replay_result r;
	struct ms_limit_range lim;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_render_input in;
	struct ms_symtab syms;
	const struct ms_trace *t = NULL;
	struct ms_source *src;
	struct ms_buf buf = MS_BUF_INIT;
	int windowed, oom_in, rc;
	ms_status s;

	/* pass 1: the whole replay (the limit inference and a mid-run rebuild happen here); an
	   allocation's moment (--at alloc:ADDRESS) is found in it */
	if (c->win_at)
		c->o.windows = &c->windows;
	if (ms_replay_cli_run_reported(c, path, &r, &lim))
		return MS_EXIT_ERROR;
	if (c->win_at) {
		if (ms_replay_cli_window_found(c, path, &r)) {
			ms_replay_result_release(&r);
			ms_replay_cli_release(c);
			return MS_EXIT_ERROR;
		}
		event = r.windows[0].from;
		c->o.windows = NULL;
	}
	if (!r.events_replayed)
		return ms_render_no_events(c, path, &r);
	/* the window: events [from, to) */
	if (ms_render_window_check(path, from, &to, r.events_total)) {
		ms_replay_result_release(&r);
		ms_replay_cli_release(c);
		return MS_EXIT_ERROR;
	}
	windowed = from > 0 || to < r.events_total;
	oom_in = r.has_oom && r.first_oom.index >= from && r.first_oom.index < to;
	if (!moment)
		moment = oom_in ? "oom" : "peak";
	if (!strcmp(moment, "oom") && !oom_in) {
		ms_error("%s: the replay has no OOM%s (--at peak, end or an event number)", path,
		         windowed ? " in the window" : "");
		ms_replay_result_release(&r);
		ms_replay_cli_release(c);
		return MS_EXIT_ERROR;
	}
	if (!strcmp(moment, "event") && (event < from || event >= to)) {
		ms_error("%s: --at %llu: the %s has events %llu to %llu", path,
		         (unsigned long long)event, windowed ? "window" : "trace",
		         (unsigned long long)from, (unsigned long long)to - 1);
		ms_replay_result_release(&r);
		ms_replay_cli_release(c);
		return MS_EXIT_ERROR;
	}
	c->o.snap = 1;
	c->o.snap_at_oom = !strcmp(moment, "oom");
	c->o.snap_index = !strcmp(moment, "peak")    ? r.peak_allocated_index
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
	if ((s = ms_replay_cli_source(path, &src, &d)) || (s = ms_replay_cli_trace(path, &t, &d))) {
		ms_report(path, s, &d);
		ms_symtab_release(&syms);
		ms_replay_cli_release(c);
		return MS_EXIT_ERROR;
	}
	c->o.syms = t ? NULL : &syms;
	memset(&r, 0, sizeof(r)); /* released below also where the window fails first */
	if ((windowed && !strcmp(moment, "peak") &&
	     (s = ms_report_window_peak(t, src, &c->o, from, to, &c->o.snap_index, &d))) ||
	    (s = t ? ms_replay_trace(t, &c->o, &r, &d)
	           : ms_replay_source(src, MS_PASS_REPORT, &c->o, &r, &d))) {
		ms_report(path, s, &d);
		ms_replay_result_release(&r);
		ms_symtab_release(&syms);
		ms_replay_cli_release(c);
		return MS_EXIT_ERROR;
	}
	if (r.snap.at_oom && strcmp(moment, "oom"))
		ms_warning(
		        "%s: the replay ran out of memory at event %llu, before the moment asked "
		        "for: drawing the state at the OOM",
		        path, (unsigned long long)r.snap.index);
	in.source = path;
	in.moment = moment;
	in.r = &r;
	in.syms = t ? &t->syms : &syms;
	in.frames = a->pg.frames;
	s = !strcmp(format, "txt")   ? ms_render_text(&in, &buf)
	    : !strcmp(format, "dot") ? ms_render_dot(&in, &buf)
	                             : ms_render_svg(&in, &buf, &d);
	if (s) {
		ms_report(path, s, &d);
		rc = MS_EXIT_ERROR;
	} else {
		rc = ms_render_emit(out, &buf, format, r.snap.n_segs, r.snap.index);
	}
	ms_buf_release(&buf);
	ms_replay_result_release(&r);
	ms_symtab_release(&syms);
	ms_replay_cli_release(c);
	return rc;
}
