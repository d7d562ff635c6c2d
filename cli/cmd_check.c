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
#include "explain/explain.h"
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

struct figures {
	uint64_t reserved, allocated;
	double frag;
	int oom;
	uint64_t oom_index;
	int mid_run;                 /* peaks from the first event on: lower bounds */
	unsigned devsrc;             /* where the device's size came from (enum ms_devmem_source) */
	uint64_t recorded_ooms;      /* the recorded run's */
	uint64_t recorded_oom_index; /* the first of them */
	int cut_short; /* a memsnap trace whose recording was killed: a prefix of the run */
	struct ms_limit_range lim;
	/* growth per step (explain's growing sites' bytes a step, summed), where asked for:
	 * growth_steps 0 where it was not looked for (fewer than three steps) */
	uint64_t growth_per_step;
	size_t growth_steps, growth_sites;
	size_t steps, optimizer_steps; /* what the trace has of them, to say why not */
	int growth_by_repetition;      /* the only steps found repeat in the trace: maybe layers */
	/* why it died, where it did (explain/verdict.h's headline; "" where not told) */
	char verdict[768];
};

/* explain's growth over the trace's steps (explain/explain.h) */
static ms_status growth_of(const char *path, uint32_t device, const struct ms_replay_result *r,
                           struct figures *f)
{
	const struct ms_trace *t;
	struct ms_trace *owned = NULL;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_explain x;
	struct ms_explain_in in;
	ms_status s;

	if ((s = ms_replay_cli_trace_whole(path, &t, &owned, &d))) {
		ms_report(path, s, &d);
		return s;
	}
	ms_explain_in_at_peak(&in, t, device, r);
	if (!(s = ms_explain_run(&in, &x))) {
		/* steps told only by repetition may be a model's layers in one pass: no gate */
		f->growth_by_repetition = x.steps_by_repetition;
		f->growth_steps = x.steps_by_repetition ? 0 : x.growth_steps;
		f->growth_sites = x.n_growth;
		f->steps = x.n_steps;
		f->optimizer_steps = x.n_optimizer_steps;
		for (size_t k = 0; k < x.n_growth; k++)
			f->growth_per_step += x.growth[k].bytes_per_step;
		ms_explain_release(&x);
	}
	ms_trace_free(owned);
	return s;
}

static ms_status figures_of(struct ms_replay_cli *c, const char *path, int growth,
                            struct figures *f)
{
	struct ms_replay_result r;
	struct ms_limit_range lim;
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
	f->reserved = (uint64_t)r.stats.reserved_bytes[0].peak;
	f->allocated = (uint64_t)r.stats.allocated_bytes[0].peak;
	f->frag = f->reserved ? (double)(f->reserved - r.allocated_at_peak_reserved) /
	                                (double)f->reserved
	                      : 0.0;
	f->oom = r.ended_by_oom;
	f->oom_index = r.first_oom.index;
	f->mid_run = r.rebuilt;
	f->devsrc = r.device_memory_source;
	f->recorded_ooms = r.recorded_ooms;
	f->recorded_oom_index = r.has_oom && r.first_oom.recorded ? r.first_oom.index : UINT64_MAX;
	f->cut_short = r.cut_short;
	f->lim = lim;
	f->growth_per_step = 0;
	f->growth_steps = f->growth_sites = f->steps = f->optimizer_steps = 0;
	f->growth_by_repetition = 0;
	f->verdict[0] = 0;
	if (r.has_oom || r.recorded_ooms) {
		struct ms_verdict v;
		struct ms_diag d = MS_DIAG_INIT;
		int has = 0;
		if (!ms_cli_verdict(c, path, NULL, &r, &lim, NULL, 0, &v, &has, &d) && has)
			snprintf(f->verdict, sizeof(f->verdict), "%s", v.headline);
		ms_verdict_release(&v);
	}
	if (growth && (s = growth_of(path, (uint32_t)c->o.device, &r, f))) {
		ms_replay_result_release(&r);
		ms_replay_cli_release(c);
		return s;
	}
	ms_replay_result_release(&r);
	ms_replay_cli_release(c);
	return MS_OK;
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
	struct figures f, b;
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
	ms_json_devices_begin(&jd, argv[0], json ? nd : 0);
	base = c.o;
	for (size_t i = 0; i < nd; i++) {
		char label[MS_LABEL_MAX];
		const char *lbl = ms_replay_cli_label(argv[0], devs[i], nd, label, sizeof(label));
		cJSON *out = NULL, *fails = NULL;
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
		if (json) {
			out = cJSON_CreateObject();
			cJSON_AddStringToObject(out, "trace", argv[0]);
			cJSON_AddNumberToObject(out, "device", devs[i]);
			ms_json_u64(out, "peak_reserved_bytes", f.reserved);
			ms_json_u64(out, "peak_allocated_bytes", f.allocated);
			cJSON_AddNumberToObject(out, "waste_at_peak", f.frag);
			cJSON_AddBoolToObject(out, "starts_mid_run", f.mid_run);
			cJSON_AddBoolToObject(out, "peaks_are_lower_bounds", f.mid_run);
			cJSON_AddStringToObject(out, "device_memory_source",
			                        ms_devmem_source_name(f.devsrc));
			ms_json_u64(out, "recorded_ooms", f.recorded_ooms);
			cJSON_AddBoolToObject(out, "oom_allowed", allow_oom);
			cJSON_AddBoolToObject(out, "trace_cut_short", f.cut_short);
			cJSON_AddBoolToObject(out, "cut_short_allowed", allow_cut);
			if (gps_given && f.growth_steps)
				ms_json_u64(out, "growth_per_step_bytes", f.growth_per_step);
			else
				cJSON_AddNullToObject(out, "growth_per_step_bytes");
			if (f.verdict[0])
				cJSON_AddStringToObject(out, "verdict", f.verdict);
			else
				cJSON_AddNullToObject(out, "verdict");
			if (f.lim.inferred) {
				cJSON *x = cJSON_AddObjectToObject(out, "limit_inferred");
				ms_json_u64(x, "low_bytes", f.lim.lo);
				ms_json_u64(x, "high_bytes", f.lim.hi);
			} else {
				cJSON_AddNullToObject(out, "limit_inferred");
			}
			fails = cJSON_AddArrayToObject(out, "exceeded");
		}
#define FAIL(...)                                                               \
	do {                                                                    \
		char line_[256];                                                \
		snprintf(line_, sizeof(line_), __VA_ARGS__);                    \
		failed++;                                                       \
		if (json)                                                       \
			cJSON_AddItemToArray(fails, cJSON_CreateString(line_)); \
		else                                                            \
			printf("%s: %s\n", lbl, line_);                         \
	} while (0)
		if (f.recorded_ooms && !allow_oom) {
			if (f.recorded_oom_index != UINT64_MAX)
				FAIL("the run ran out of memory (%llu recorded OOM%s, the first at "
				     "event %llu; --allow-oom passes it)",
				     (unsigned long long)f.recorded_ooms,
				     f.recorded_ooms == 1 ? "" : "s",
				     (unsigned long long)f.recorded_oom_index);
			else
				FAIL("the run ran out of memory (%llu recorded OOM%s; --allow-oom "
				     "passes it)",
				     (unsigned long long)f.recorded_ooms,
				     f.recorded_ooms == 1 ? "" : "s");
		}
		if (f.cut_short && !allow_cut)
			FAIL("the trace is cut short: its recording was killed (the job may have "
			     "died), and the peaks are of the part it holds (--allow-cut-short "
			     "passes it)");
		if (f.oom)
			FAIL("the replay runs out of memory at event %llu",
			     (unsigned long long)f.oom_index);
		if (max_res && f.reserved > max_res)
			FAIL("peak reserved %s exceeds the budget of %s",
			     ms_format_size(b1, sizeof(b1), f.reserved),
			     ms_format_size(b2, sizeof(b2), max_res));
		if (max_alloc && f.allocated > max_alloc)
			FAIL("peak allocated %s exceeds the budget of %s",
			     ms_format_size(b1, sizeof(b1), f.allocated),
			     ms_format_size(b2, sizeof(b2), max_alloc));
		if (gps_given && !f.growth_steps && f.growth_by_repetition)
			FAIL("growth per step cannot be checked: the trace's steps are found only "
			     "by "
			     "repetition, which may be a model's layers (mark them: "
			     "memsnap.step(), "
			     "torch.profiler)");
		else if (gps_given && !f.growth_steps)
			FAIL("growth per step cannot be checked: it takes 4 steps, or 3 optimizer "
			     "steps, and the trace has %zu step%s (%zu optimizer step%s)",
			     f.steps, f.steps == 1 ? "" : "s", f.optimizer_steps,
			     f.optimizer_steps == 1 ? "" : "s");
		else if (gps_given && f.growth_per_step > max_gps)
			FAIL("growth %s a step (%zu growing site%s) exceeds the budget of %s a "
			     "step",
			     ms_format_size(b1, sizeof(b1), f.growth_per_step), f.growth_sites,
			     f.growth_sites == 1 ? "" : "s",
			     ms_format_size(b2, sizeof(b2), max_gps));
		if (frag_budget >= 0 && f.frag > frag_budget)
			FAIL("waste at the peak %.3f exceeds the --max-fragmentation budget of "
			     "%.3f",
			     f.frag, frag_budget);
		if (baseline) {
			double gr = b.reserved ? 100.0 * ((double)f.reserved - (double)b.reserved) /
			                                 (double)b.reserved
			                       : 0;
			double ga = b.allocated
			                    ? 100.0 * ((double)f.allocated - (double)b.allocated) /
			                              (double)b.allocated
			                    : 0;
			if (gr > growth_budget)
				FAIL("peak reserved grew %.1f%% over %s (%s to %s), more than "
				     "%.1f%%",
				     gr, baseline, ms_format_size(b1, sizeof(b1), b.reserved),
				     ms_format_size(b2, sizeof(b2), f.reserved), growth_budget);
			if (ga > growth_budget)
				FAIL("peak allocated grew %.1f%% over %s (%s to %s), more than "
				     "%.1f%%",
				     ga, baseline, ms_format_size(b1, sizeof(b1), b.allocated),
				     ms_format_size(b2, sizeof(b2), f.allocated), growth_budget);
		}
#undef FAIL
		if (json) {
			cJSON_AddBoolToObject(out, "passed", !failed);
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
			       ms_format_size(b2, sizeof(b2), f.allocated), f.frag);
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
