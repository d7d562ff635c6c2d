/* memsnap render's page and CSV timeline, made by render/page.h from the command's replays. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/messages.h"
#include "cli/render_cmd.h"
#include "common/alloc.h"
#include "parse/trace.h"
#include "render/page.h"
#include "render/render.h"

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
	struct ms_source *src;
	ms_status s;

	/* a snapshot is in memory already; a .zst trace streams from its file */
	if (!(s = ms_replay_cli_source(path, &src, &d)) && !(s = ms_replay_cli_trace(path, &t, &d)))
		s = ms_page_write(src, t, &c->o, r, lim, pg, what, out, &d);
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
		rc = ms_render_emit(out, &buf, "html", SIZE_MAX, 0);
	ms_buf_release(&buf);
	ms_replay_result_release(r);
	ms_replay_cli_release(c);
	return rc;
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
	struct ms_source *src;
	struct ms_diag d = MS_DIAG_INIT;
	struct first_pass f = {c, path};
	struct ms_page_together res;
	struct ms_buf buf = MS_BUF_INIT;

	/* read (or found in the command's cache) before the threads share it */
	if (ms_replay_cli_source(path, &src, &d) || ms_replay_cli_trace(path, &t, &d))
		return -1;
	ms_page_together_write(src, t, &c->o, first_pass, &f, pg, &buf, &res, &d);
	switch (res.how) {
	case MS_PAGE_NOT_TOGETHER:
		return -1;
	case MS_PAGE_FIRST_FAILED:
		*rc = res.first_rc;
		break;
	case MS_PAGE_SEPARATELY:
		*rc = !res.r.events_replayed ? ms_render_no_events(c, path, &res.r)
		                             : render_html(c, path, out, &res.r, &res.lim, pg);
		break;
	case MS_PAGE_WROTE:
		if (res.status)
			ms_report(path, res.status, &d);
		*rc = res.status ? MS_EXIT_ERROR : ms_render_emit(out, &buf, "html", SIZE_MAX, 0);
		ms_replay_cli_release(c);
		break;
	}
	ms_buf_release(&buf);
	return 0;
}

int ms_render_device_better(const struct ms_replay_result *r, int best_oom, uint64_t best_peak)
{
	return (r->has_oom && !best_oom) ||
	       (r->has_oom == best_oom && (uint64_t)r->stats.reserved_bytes[0].peak > best_peak);
}

void ms_render_say_device(const char *path, size_t nd, int html, uint32_t device, int oom)
{
	ms_note("%s has events on %zu devices: %s device %u (%s); --device draws another", path, nd,
	        html ? "the page opens on" : "drawing", device,
	        oom ? "its replay runs out of memory" : "the highest peak");
}

/*
 * The page of a trace with several devices: each device's first pass and data, one page with
 * a switch, opening on the device whose replay runs out of memory (the first), else on the one
 * with the highest reserved peak.
 */
static int render_html_devices(struct ms_replay_cli *c, const char *path, const char *out,
                               const uint32_t *devs, size_t nd, const struct ms_page_opts *pg)
{
	struct ms_buf *datas = ms_calloc(nd, sizeof(*datas));
	struct ms_buf page = MS_BUF_INIT;
	struct ms_replay_opts base = c->o;
	size_t first = 0, i;
	uint64_t best_peak = 0;
	int rc = MS_EXIT_OK, best_oom = 0;

	if (!datas)
		ms_die(MS_EXIT_ERROR, "out of memory");
	for (i = 0; i < nd && rc == MS_EXIT_OK; i++) {
		struct ms_replay_result r;
		struct ms_limit_range lim;
		struct ms_page_opts one = *pg;
		c->o = base;
		c->o.device = devs[i];
		if (ms_replay_cli_run_reported(c, path, &r, &lim)) {
			rc = MS_EXIT_ERROR;
			break;
		}
		if (!i || ms_render_device_better(&r, best_oom, best_peak)) {
			first = i;
			best_peak = (uint64_t)r.stats.reserved_bytes[0].peak;
			best_oom = r.has_oom;
		}
		if (ms_render_window_check(path, one.from, &one.to, r.events_total))
			rc = MS_EXIT_ERROR;
		else
			rc = page_data(c, path, &r, &lim, &one, MS_PAGE_DATA, &datas[i]);
		ms_replay_result_release(&r);
		ms_replay_cli_release(c);
	}
	if (rc == MS_EXIT_OK) {
		ms_render_say_device(path, nd, 1, devs[first], best_oom);
		if (ms_render_html_devices(&page, path, datas, devs, nd, first))
			ms_die(MS_EXIT_ERROR, "out of memory");
		rc = ms_render_emit(out, &page, "html", SIZE_MAX, 0);
	}
	for (i = 0; i < nd; i++)
		ms_buf_release(&datas[i]);
	ms_free(datas);
	ms_buf_release(&page);
	return rc;
}

/* --format html or csv (render_cmd.h). */
int ms_render_page(struct ms_replay_cli *c, const char *path, const struct ms_render_ask *a,
                   const uint32_t *devs, size_t nd)
{
	struct ms_page_opts pg = a->pg;
	struct ms_replay_result r;
	struct ms_limit_range lim;
	struct ms_buf csv = MS_BUF_INIT;
	int rc = MS_EXIT_OK;

	if (c->html && nd > 1)
		return render_html_devices(c, path, a->out, devs, nd, &pg);
	if (c->html && !pg.from && !pg.to && render_html_together(c, path, a->out, &pg, &rc) == 0)
		return rc;
	/* pass 1: the whole replay (the limit inference and a mid-run rebuild happen here) */
	if (ms_replay_cli_run_reported(c, path, &r, &lim))
		return MS_EXIT_ERROR;
	if (!r.events_replayed)
		return ms_render_no_events(c, path, &r);
	/* the window: events [from, to) */
	if (ms_render_window_check(path, pg.from, &pg.to, r.events_total)) {
		ms_replay_result_release(&r);
		ms_replay_cli_release(c);
		return MS_EXIT_ERROR;
	}
	if (c->html)
		return render_html(c, path, a->out, &r, &lim, &pg);
	rc = page_data(c, path, &r, &lim, &pg, MS_PAGE_CSV, &csv);
	if (rc == MS_EXIT_OK)
		rc = ms_render_emit(a->out, &csv, "csv", SIZE_MAX, 0);
	ms_buf_release(&csv);
	ms_replay_result_release(&r);
	ms_replay_cli_release(c);
	return rc;
}
