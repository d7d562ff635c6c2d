/* memsnap check TRACE --max-...: a CI gate on peaks and fragmentation, from a replay. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        "              [--allow-oom] [--allow-cut-short] [replay options] [--json] <trace>",
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
        "step (the sum of explain's growing sites' bytes a step; three steps or more).",
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

int cmd_check(int argc, const char **argv)
{
	struct ms_replay_cli c;
	struct ms_opt opts[MS_REPLAY_OPTS_MAX + 9];
	int n, json = 0, rc = MS_EXIT_OK, allow_oom = 0, allow_cut = 0;
	struct ms_replay_opts base;
	uint32_t *devs, *bdevs = NULL;
	size_t nd, nb = 0;
	struct ms_json_devices jd;
	uint64_t max_res = 0, max_alloc = 0, max_gps = UINT64_MAX; /* UINT64_MAX: not given */
	int gps_given = 0;
	const char *max_frag = NULL, *baseline = NULL, *growth = NULL;
	double frag_budget = -1, growth_budget = -1;
	struct ms_check_figures f, b;
	struct ms_check_budgets bud;
	struct ms_check_result res;
	char b1[32], b2[32];
	size_t k;

	ms_replay_cli_init(&c, opts, &json);
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
	opts[k] = (struct ms_opt)MS_OPT_END();
	n = ms_parse_options(argc, argv, opts, usage);
	if (n != 1)
		ms_usage_error(opts, usage, n ? "one trace at a time" : "no trace given");
	ms_replay_cli_check(&c, opts, usage);
	if (max_frag) {
		char *end;
		frag_budget = strtod(max_frag, &end);
		if (*end || frag_budget < 0 || frag_budget > 1)
			ms_usage_error(opts, usage, "--max-fragmentation must be between 0 and 1");
	}
	if (!!baseline != !!growth)
		ms_usage_error(opts, usage, "--baseline and --max-growth go together");
	if (growth) {
		char *end;
		growth_budget = strtod(growth, &end);
		if ((*end && strcmp(end, "%") != 0) || growth_budget < 0)
			ms_usage_error(opts, usage, "--max-growth takes a percentage, e.g. 5%%");
	}
	gps_given = max_gps != UINT64_MAX;
	/* with no budget, only the gate's own: the run did not die */
	/* the budgets above are on top of the gate's own: the run did not die */
	if (ms_replay_cli_devices(&c, argv[0], "check", &devs, &nd))
		return MS_EXIT_ERROR;
	if (baseline) {
		struct ms_replay_cli any = c;
		any.device = UINT64_MAX;
		if (ms_replay_cli_devices(&any, baseline, "check", &bdevs, &nb))
			return MS_EXIT_ERROR;
	}
	memset(&bud, 0, sizeof(bud));
	bud.max_reserved = max_res;
	bud.max_allocated = max_alloc;
	bud.max_waste = frag_budget;
	bud.growth_per_step_given = gps_given;
	bud.max_growth_per_step = max_gps;
	bud.baseline = baseline;
	bud.max_growth = growth_budget;
	bud.allow_oom = allow_oom;
	bud.allow_cut_short = allow_cut;
	ms_json_devices_begin(&jd, argv[0], json ? nd : 0);
	base = c.o;
	for (size_t i = 0; i < nd; i++) {
		char label[MS_LABEL_MAX];
		const char *lbl = ms_replay_cli_label(argv[0], devs[i], nd, label, sizeof(label));
		cJSON *out = NULL;
		int failed = 0;
		c.o = base; /* an inferred limit belongs to one trace and device */
		c.o.device = devs[i];
		if (figures_of(&c, argv[0], gps_given, &f)) {
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
		ms_check_judge(&bud, &f, baseline ? &b : NULL, &res);
		failed = (int)res.n_exceeded;
		if (!json)
			for (size_t e = 0; e < res.n_exceeded; e++)
				printf("%s: %s\n", lbl, res.exceeded[e]);
		if (json) {
			if (!(out = ms_check_json(argv[0], devs[i], &bud, &f, &res)))
				ms_die(MS_EXIT_ERROR, "out of memory");
			ms_json_devices_add(&jd, devs[i], out);
		} else if (!failed) {
			printf("%s: %s: peak reserved %s%s, peak allocated %s%s, "
			       "waste at the peak %.3f of the reserved peak",
			       lbl,
			       max_res || max_alloc || max_frag || baseline || gps_given
			               ? "within budget"
			               : "passed, the run did not die (no budget given)",
			       f.mid_run ? "at least " : "",
			       ms_format_size(b1, sizeof(b1), f.reserved),
			       f.mid_run ? "at least " : "",
			       ms_format_size(b2, sizeof(b2), f.allocated), f.waste);
			if (gps_given)
				printf(", growth %s a step",
				       ms_format_size(b1, sizeof(b1), f.growth_per_step));
			printf("\n");
		}
		/* what the verdict rests on, and what it does not say */
		if (!json && f.mid_run)
			printf("%s: note: the trace starts mid-run: its peaks are from its first "
			       "event "
			       "on, and the job's may have been higher before\n",
			       lbl);
		if (!json && f.recorded_ooms && allow_oom)
			printf("%s: note: the recorded run ran out of memory %llu time%s%s\n", lbl,
			       (unsigned long long)f.recorded_ooms, f.recorded_ooms == 1 ? "" : "s",
			       f.lim.inferred ? " (under a per-process limit inferred from it)"
			                      : "");
		/* a run that died: why, as explain says it */
		if (!json && f.verdict[0])
			printf("%s: %s\n", lbl, f.verdict);
		if (!json && f.cut_short && allow_cut)
			printf("%s: note: the trace is cut short: its peaks are of the part it "
			       "holds\n",
			       lbl);
		if (failed)
			rc = MS_EXIT_BUDGET;
	}
	ms_json_devices_end(&jd, rc != MS_EXIT_ERROR, "passed", rc == MS_EXIT_OK);
	ms_free(devs);
	ms_free(bdevs);
	return rc;
}
