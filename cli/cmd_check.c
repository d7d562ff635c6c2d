/* memsnap check TRACE --max-...: a CI gate on peaks and fragmentation, from a replay. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/check_report.h"
#include "cli/cmds.h"
#include "cli/opts.h"
#include "cli/messages.h"
#include "cli/replay_opts.h"
#include "cli/verdict_out.h"
#include "common/alloc.h"
#include "explain/check.h"
#include "explain/explain.h"
#include "json/check.h"
#include "parse/trace.h"
#include "replay/replay.h"

static const char *const usage[] = {
        "memsnap check [--max-peak-reserved N] [--max-peak-allocated N] [--max-fragmentation R]",
        "              [--baseline OTHER --max-growth P%] [--max-growth-per-step SIZE]",
        "              [--allow-oom] [--allow-cut-short] [replay options]",
        "              [--format text|json|markdown] [--junit FILE] <trace>",
        "",
        "A CI gate: replay the trace (with its recorded settings unless --alloc-conf) and compare",
        "the peaks with budgets. Exit 0 when every budget holds, 5 with one line per budget",
        "exceeded or that the trace cannot measure, 1 on error; with no budget given, only that",
        "the run did not die. A dead run never passes: a recorded OOM fails the gate (unless",
        "--allow-oom), so does a trace cut short (its recording was killed: unless",
        "--allow-cut-short), and so does a replay that runs out of memory where the recorded run",
        "did not. --max-fragmentation gates the waste at the peak: reserved memory never in use at",
        "once, over the peak of reserved memory (0 to 1); not stats' fragmentation of the free",
        "space at the end. --max-growth is growth of the peaks over a baseline run;",
        "--max-growth-per-step is growth within this run: what its own steps keep more of each",
        "step (the sum of explain's growing sites' bytes a step; four steps or more, or three",
        "optimizer steps: with fewer the gate fails as not measurable).",
        "--format markdown writes a summary for a CI job's page (each gate against its value,",
        "reserved memory over the run); --json is --format json. --junit FILE writes JUnit XML",
        "besides, whole or not at all: a test case per gate and device, a failure per gate",
        "that fails.",
        NULL,
};

/* One device's figures (explain/check.h): the trace is read whole where the verdict of a run
 * that ran out of memory (a trace small enough) or growth per step needs it. */
static ms_status figures_of(struct ms_replay_cli *c, const char *path, int growth,
                            struct ms_check_figures *f)
{
	struct ms_replay_result r;
	struct ms_limit_range lim;
	const struct ms_trace *t = NULL;
	struct ms_trace *owned = NULL;
	struct ms_diag d = MS_DIAG_INIT;
	ms_status s;

	/* its error, warnings and notes said as every replay command says them */
	if (ms_replay_cli_run_reported(c, path, &r, &lim) != MS_EXIT_OK)
		return MS_ERR_INVALID_ARG;
	if (ms_replay_cli_window_found(c, path, &r)) {
		ms_replay_result_release(&r);
		ms_replay_cli_release(c);
		return MS_ERR_INVALID_ARG;
	}
	if (!r.events_replayed) {
		ms_error("%s: no allocator events on device %u to compare with", path,
		         (unsigned)c->o.device);
		ms_replay_result_release(&r);
		ms_replay_cli_release(c);
		return MS_ERR_INVALID_ARG;
	}
	if ((growth ||
	     ((r.has_oom || r.recorded_ooms) && r.events_total <= MS_CLI_VERDICT_EVENTS)) &&
	    (s = ms_replay_cli_trace_whole(path, &t, &owned, &d))) {
		ms_report(path, s, &d);
	} else if ((s = ms_check_figures_of(t, &c->o, &r, &lim, growth, f))) {
		ms_report(path, s, &d);
	}
	ms_trace_free(owned);
	ms_replay_result_release(&r);
	ms_replay_cli_release(c);
	return s;
}

/* The gate of one device as text: each budget exceeded, or what passed, then what the verdict
 * rests on and does not say. */
static void print_gate(const char *lbl, const struct ms_check_budgets *b,
                       const struct ms_check_figures *f, const struct ms_check_result *res)
{
	char b1[32], b2[32];
	int any_budget = b->max_reserved || b->max_allocated || b->max_waste >= 0 || b->baseline ||
	                 b->growth_per_step_given;

	if (f->windowed)
		printf("%s: the window of events %llu to %llu%s\n", lbl,
		       (unsigned long long)f->window.from, (unsigned long long)f->window.to,
		       f->window.closed ? "" : " (open at the end)");
	for (size_t e = 0; e < res->n_exceeded; e++)
		printf("%s: %s\n", lbl, res->exceeded[e]);
	if (!res->n_exceeded) {
		printf("%s: %s: peak reserved %s%s, peak allocated %s%s, waste at the peak %.3f of "
		       "the reserved peak",
		       lbl,
		       any_budget ? "within budget"
		                  : "passed, the run did not die (no budget given)",
		       f->mid_run ? "at least " : "", ms_format_size(b1, sizeof(b1), f->reserved),
		       f->mid_run ? "at least " : "", ms_format_size(b2, sizeof(b2), f->allocated),
		       f->waste);
		if (b->growth_per_step_given)
			printf(", growth %s a step",
			       ms_format_size(b1, sizeof(b1), f->growth_per_step));
		printf("\n");
	}
	if (f->mid_run)
		printf("%s: note: the trace starts mid-run: its peaks are from its first event on, "
		       "and the job's may have been higher before\n",
		       lbl);
	if (f->recorded_ooms && b->allow_oom)
		printf("%s: note: the recorded run ran out of memory %llu time%s%s\n", lbl,
		       (unsigned long long)f->recorded_ooms, f->recorded_ooms == 1 ? "" : "s",
		       f->lim.inferred ? " (under a per-process limit inferred from it)" : "");
	/* a run that died: why, as explain says it */
	if (f->verdict[0])
		printf("%s: %s\n", lbl, f->verdict);
	if (f->cut_short && b->allow_cut_short)
		printf("%s: note: the trace is cut short: its peaks are of the part it holds\n",
		       lbl);
}

enum check_format { FORMAT_TEXT, FORMAT_JSON, FORMAT_MARKDOWN };

struct check_out {
	enum check_format format;
	const char *junit; /* JUnit XML to this file, or NULL */
};

/* --format and --json into *out: one of them, or the same. */
static void parse_format(const struct ms_opt *opts, const char *format, int json,
                         struct check_out *out)
{
	out->format = json ? FORMAT_JSON : FORMAT_TEXT;
	if (!format)
		return;
	if (!strcmp(format, "text"))
		out->format = FORMAT_TEXT;
	else if (!strcmp(format, "json"))
		out->format = FORMAT_JSON;
	else if (!strcmp(format, "markdown"))
		out->format = FORMAT_MARKDOWN;
	else
		ms_usage_error(opts, usage, "--format takes text, json or markdown");
	if (json && out->format != FORMAT_JSON)
		ms_usage_error(opts, usage, "--json is --format json: not with --format %s",
		               format);
}

/* The flags: the replay's, the budgets into *bud, the outputs into *out; the trace in *trace. */
static void parse_flags(int argc, const char **argv, struct ms_replay_cli *c, struct check_out *out,
                        struct ms_check_budgets *bud, const char **trace)
{
	struct ms_opt opts[MS_REPLAY_OPTS_MAX + 11 + MS_REPLAY_WINDOW_OPTS];
	const char *format = NULL;
	int json = 0;
	int n, allow_oom = 0, allow_cut = 0;
	uint64_t max_res = 0, max_alloc = 0, max_gps = UINT64_MAX; /* UINT64_MAX: not given */
	const char *max_frag = NULL, *baseline = NULL, *growth = NULL;
	size_t k;

	ms_replay_cli_init(c, opts, &json);
	ms_opts_drop(opts, "backend");
	for (k = 0; opts[k].type != MS_OPT_T_END; k++)
		;
	opts[k++] = (struct ms_opt)MS_OPT_SIZE(0, "max-peak-reserved", &max_res, "N",
	                                       "budget for peak reserved bytes");
	opts[k++] = (struct ms_opt)MS_OPT_SIZE(0, "max-peak-allocated", &max_alloc, "N",
	                                       "budget for peak allocated bytes");
	opts[k++] = (struct ms_opt)MS_OPT_STRING(0, "max-fragmentation", &max_frag, "R",
	                                         "budget for fragmentation (0 to 1)");
	opts[k++] = (struct ms_opt)MS_OPT_STRING(0, "baseline", &baseline, "OTHER",
	                                         "trace to compare with");
	opts[k++] = (struct ms_opt)MS_OPT_STRING(0, "max-growth", &growth, "P%",
	                                         "allowed growth of the peaks over the baseline");
	opts[k++] = (struct ms_opt)MS_OPT_SIZE(0, "max-growth-per-step", &max_gps, "SIZE",
	                                       "budget for what the trace's own steps keep more "
	                                       "of each step (explain's growth)");
	opts[k++] = (struct ms_opt)MS_OPT_BOOL(0, "allow-oom", &allow_oom,
	                                       "pass a run that recorded an OOM");
	opts[k++] = (struct ms_opt)MS_OPT_BOOL(0, "allow-cut-short", &allow_cut,
	                                       "pass a trace whose recording was cut short");
	opts[k++] = (struct ms_opt)MS_OPT_STRING(0, "format", &format, "F",
	                                         "text (default), json or markdown");
	opts[k++] = (struct ms_opt)MS_OPT_STRING(0, "junit", &out->junit, "FILE",
	                                         "also write JUnit XML to FILE");
	ms_replay_cli_window_opts(c, opts, &k);
	opts[k] = (struct ms_opt)MS_OPT_END();
	ms_opts_drop(opts, "windows"); /* one window: the budgets are of one stretch */
	out->junit = NULL;
	n = ms_parse_options(argc, argv, opts, usage);
	if (n != 1)
		ms_usage_error(opts, usage, n ? "one trace at a time" : "no trace given");
	ms_replay_cli_check(c, opts, usage);
	c->o.reserved_log = 1; /* the timeline of the markdown summary */
	parse_format(opts, format, json, out);
	if (out->junit && !out->junit[0])
		ms_usage_error(opts, usage, "--junit takes a file");
	memset(bud, 0, sizeof(*bud));
	bud->max_waste = -1;
	bud->max_growth = -1;
	if (max_frag) {
		char *end;
		bud->max_waste = strtod(max_frag, &end);
		if (*end || bud->max_waste < 0 || bud->max_waste > 1)
			ms_usage_error(opts, usage, "--max-fragmentation must be between 0 and 1");
	}
	if (!!baseline != !!growth)
		ms_usage_error(opts, usage, "--baseline and --max-growth go together");
	if (growth) {
		char *end;
		bud->max_growth = strtod(growth, &end);
		if ((*end && strcmp(end, "%") != 0) || bud->max_growth < 0)
			ms_usage_error(opts, usage, "--max-growth takes a percentage, e.g. 5%%");
	}
	/* the budgets are on top of the gate's own: the run did not die */
	bud->max_reserved = max_res;
	bud->max_allocated = max_alloc;
	bud->growth_per_step_given = max_gps != UINT64_MAX;
	bud->max_growth_per_step = max_gps;
	bud->baseline = baseline;
	bud->allow_oom = allow_oom;
	bud->allow_cut_short = allow_cut;
	*trace = argv[0];
}

/* The rows in the format asked, and the JUnit XML where asked: MS_EXIT_ERROR where it could
 * not be written (nothing of it left). */
static int emit(const char *trace, const struct check_out *out, const struct ms_check_row *rows,
                size_t n)
{
	struct ms_buf x = MS_BUF_INIT;
	int rc = MS_EXIT_OK;

	if (out->format == FORMAT_MARKDOWN)
		ms_check_markdown(trace, rows, n);
	if (!out->junit)
		return rc;
	if (ms_check_junit(trace, rows, n, &x))
		ms_die(MS_EXIT_ERROR, "out of memory");
	if (ms_output_write_whole(out->junit, x.data, x.len))
		rc = MS_EXIT_ERROR;
	ms_buf_release(&x);
	return rc;
}

int cmd_check(int argc, const char **argv)
{
	struct ms_replay_cli c;
	struct check_out out;
	int rc = MS_EXIT_OK;
	struct ms_replay_opts base;
	uint32_t *devs, *bdevs = NULL;
	size_t nd, nb = 0, nrows = 0;
	struct ms_json_devices jd;
	const char *trace, *baseline;
	int gps_given, json;
	struct ms_check_figures b;
	struct ms_check_budgets bud;
	struct ms_check_row *rows;

	parse_flags(argc, argv, &c, &out, &bud, &trace);
	json = out.format == FORMAT_JSON;
	baseline = bud.baseline;
	gps_given = bud.growth_per_step_given;
	if (out.junit) {
		const char *in[2] = {trace, baseline};
		ms_output_refuse_inputs(out.junit, "--junit", in, baseline ? 2 : 1);
	}
	if (ms_replay_cli_devices(&c, trace, "check", &devs, &nd))
		return MS_EXIT_ERROR;
	if (baseline) {
		struct ms_replay_cli any = c;
		any.device = UINT64_MAX;
		if (ms_replay_cli_devices(&any, baseline, "check", &bdevs, &nb))
			return MS_EXIT_ERROR;
	}
	if (!(rows = ms_calloc(nd, sizeof(*rows))))
		ms_die(MS_EXIT_ERROR, "out of memory");
	ms_json_devices_begin(&jd, trace, json ? nd : 0);
	base = c.o;
	for (size_t i = 0; i < nd; i++) {
		char label[MS_LABEL_MAX];
		const char *lbl = ms_replay_cli_label(trace, devs[i], nd, label, sizeof(label));
		struct ms_check_row *row = &rows[nrows];
		c.o = base; /* an inferred limit belongs to one trace and device */
		c.o.device = devs[i];
		if (figures_of(&c, trace, gps_given, &row->f)) {
			rc = MS_EXIT_ERROR;
			break;
		}
		c.o = base;
		/* a baseline of one device is compared with each device; else device with device */
		c.o.device = nb == 1 ? bdevs[0] : devs[i];
		if (baseline && figures_of(&c, baseline, 0, &b)) {
			rc = MS_EXIT_ERROR;
			break;
		}
		row->device = devs[i];
		ms_check_judge(&bud, &row->f, baseline ? &b : NULL, &row->res);
		nrows++;
		if (json) {
			cJSON *o = ms_check_json(trace, devs[i], &bud, &row->f, &row->res);
			if (!o)
				ms_die(MS_EXIT_ERROR, "out of memory");
			ms_json_devices_add(&jd, devs[i], o);
		} else if (out.format == FORMAT_TEXT) {
			print_gate(lbl, &bud, &row->f, &row->res);
		}
		if (row->res.n_exceeded)
			rc = MS_EXIT_BUDGET;
	}
	ms_json_devices_end(&jd, rc != MS_EXIT_ERROR, "passed", rc == MS_EXIT_OK);
	/* a gate that could not judge every device is no report */
	if (rc != MS_EXIT_ERROR && emit(trace, &out, rows, nrows))
		rc = MS_EXIT_ERROR;
	ms_free(rows);
	ms_free(devs);
	ms_free(bdevs);
	return rc;
}
