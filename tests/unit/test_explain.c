/*
 * memsnap explain's categories on real training loops recorded on an H100 (testdata/snapshots/
 * explain: plain PyTorch with AdamW and with SGD keeping its gradients, transformers, Lightning),
 * against what PyTorch itself counted in the same run (truth.json "model": the parameters',
 * gradients' and optimizer state's tensor bytes), both as PyTorch's snapshot and as memsnap's
 * recording; and the growing site of a loop that keeps each step's logits.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "explain/explain.h"
#include "helpers.h"
#include "parse/trace.h"
#include "replay/replay.h"

static void explain_file(const char *path, struct ms_explain *x)
{
	struct ms_trace *t;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_replay_opts o;
	struct ms_replay_result r;
	struct ms_explain_in in;

	cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK, "%s: %s", path, d.msg);
	memset(&o, 0, sizeof(o));
	o.no_segment_log = 1;
	cr_assert_eq(ms_replay_trace(t, &o, &r, &d), MS_OK, "%s", d.msg);
	memset(&in, 0, sizeof(in));
	in.t = t;
	in.peak_index = r.fullest_at_peak_index;
	in.allocated_at_peak = r.allocated_at_peak_reserved;
	cr_assert_eq(ms_explain_run(&in, x), MS_OK);
	/* the categories are the requested bytes the replay had there, allocation for allocation
	 * (PyTorch's trace entries give the bytes asked for; blocks round them up) */
	{
		uint64_t sum = 0;
		for (unsigned k = 0; k < MS_CAT_COUNT; k++)
			sum += x->cat_bytes[k];
		cr_assert_eq(sum, r.requested_at_peak_reserved,
		             "%s: categories %llu, requested %llu", path, (unsigned long long)sum,
		             (unsigned long long)r.requested_at_peak_reserved);
	}
	ms_replay_result_release(&r);
	ms_trace_free(t);
}

static double jnum(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	cr_assert(cJSON_IsNumber(v), "truth: no %s", k);
	return v->valuedouble;
}

/* within 1% of PyTorch's count */
static void near(const char *what, const char *file, uint64_t ours, double theirs)
{
	double err = theirs ? ((double)ours - theirs) / theirs : (double)ours;
	cr_assert(err <= 0.01 && err >= -0.01, "%s: %s %llu, PyTorch %.0f (%+.2f%%)", file, what,
	          (unsigned long long)ours, theirs, 100 * err);
}

static void check_job(const char *name)
{
	char base[128], path[4096];
	const cJSON *m;
	cJSON *truth;

	snprintf(base, sizeof(base), "explain/%s", name);
	truth = th_truth(base);
	cr_assert(truth, "%s: no truth", name);
	m = cJSON_GetObjectItemCaseSensitive(truth, "model");
	cr_assert(m, "%s: truth has no model", name);
	for (int k = 0; k < 2; k++) {
		struct ms_explain x;
		const char *p = th_snapshot_path(base);
		cr_assert(p, "%s: not in testdata", base);
		snprintf(path, sizeof(path), "%s", p);
		if (k == 1) { /* the recording beside the snapshot */
			char *dot = strstr(path, ".pickle");
			cr_assert(dot);
			strcpy(dot, ".zst");
		}
		explain_file(path, &x);
		cr_assert_gt(x.n_optimizer_steps, 0, "%s: no optimizer step", path);
		near("parameters", path, x.parameter_bytes, jnum(m, "parameter_bytes"));
		near("gradients", path, x.gradient_bytes, jnum(m, "gradient_bytes"));
		near("optimizer state", path, x.optimizer_state_bytes,
		     jnum(m, "optimizer_state_bytes"));
		cr_assert_eq(x.n_optimizer_steps, (size_t)jnum(truth, "steps"), "%s", path);
		if (strcmp(name, "leak") == 0) {
			const cJSON *l = cJSON_GetObjectItemCaseSensitive(truth, "leak");
			cr_assert_geq(x.n_growth, 1, "%s: the leak not found", path);
			near("leak per step", path, x.growth[0].bytes_per_step,
			     jnum(l, "bytes_per_step"));
		} else {
			cr_assert_eq(
			        x.n_growth, 0, "%s: growth where there is none (%llu a step)", path,
			        (unsigned long long)(x.n_growth ? x.growth[0].bytes_per_step : 0));
		}
		ms_explain_release(&x);
	}
	cJSON_Delete(truth);
}

Test(explain, adamw)
{
	check_job("adamw");
}
Test(explain, sgd_keeps_gradients)
{
	check_job("sgd");
}
Test(explain, hf_gpt2)
{
	check_job("hf_gpt2");
}
Test(explain, lightning)
{
	check_job("lightning");
}
Test(explain, leak)
{
	check_job("leak");
}

/*
 * Steps from repetition: bundled real training loops with their annotations taken away get
 * as many steps as its optimizer steps (what PyTorch annotated in the same run), each step
 * beginning inside the optimizer-step iteration of the same number.
 */
Test(explain, steps_from_repetition_match_the_optimizer_steps)
{
	static const char *const names[] = {"gpt_train",    "resnet50",       "multistream",
	                                    "real/hf_gpt2", "real/lightning", "real/timm"};
	int tried = 0;

	for (size_t f = 0; f < sizeof(names) / sizeof(names[0]); f++) {
		const char *path = th_snapshot_path(names[f]);
		struct ms_trace *t;
		struct ms_diag d = MS_DIAG_INIT;
		struct ms_explain_in in;
		struct ms_explain opt, rep;
		size_t n_anns;

		cr_assert(path, "%s: not bundled", names[f]);
		cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK, "%s", d.msg);
		memset(&in, 0, sizeof(in));
		in.t = t;
		cr_assert_eq(ms_explain_run(&in, &opt), MS_OK);
		cr_assert_str_eq(opt.steps_from, "optimizer steps", "%s", names[f]);
		n_anns = t->n_anns;
		t->n_anns = 0; /* nothing marks the steps now */
		cr_assert_eq(ms_explain_run(&in, &rep), MS_OK);
		t->n_anns = n_anns;
		cr_expect_str_eq(rep.steps_from, "repetition", "%s", names[f]);
		/* and growth, looked for over them, finds none in these loops (nor do their
		 * optimizer steps) */
		cr_expect_eq(rep.n_growth, opt.n_growth,
		             "%s: %zu growing sites over steps from "
		             "repetition, %zu over optimizer steps",
		             names[f], rep.n_growth, opt.n_growth);
		cr_expect_eq(rep.n_steps, opt.n_steps,
		             "%s: %zu steps from repetition, %zu optimizer "
		             "steps",
		             names[f], rep.n_steps, opt.n_steps);
		for (size_t k = 1; k < rep.n_steps && k < opt.n_steps; k++)
			cr_expect(rep.steps[k].first_event >= opt.steps[k - 1].first_event &&
			                  (k + 1 >= opt.n_steps ||
			                   rep.steps[k].first_event < opt.steps[k + 1].first_event),
			          "%s: step %zu begins at event %llu, the optimizer's iteration at "
			          "%llu",
			          names[f], k + 1, (unsigned long long)rep.steps[k].first_event,
			          (unsigned long long)opt.steps[k].first_event);
		ms_explain_release(&opt);
		ms_explain_release(&rep);
		ms_trace_free(t);
		tried++;
	}
	cr_assert_eq(tried, 6);
}

/* Where no allocation repeats evenly (shapes that change from step to step), none are made up. */
Test(explain, no_steps_where_nothing_repeats_evenly)
{
	const char *path = th_snapshot_path("dynamic_empty_cache");
	struct ms_trace *t;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_explain_in in;
	struct ms_explain x;

	cr_assert(path);
	cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK, "%s", d.msg);
	t->n_anns = 0;
	memset(&in, 0, sizeof(in));
	in.t = t;
	cr_assert_eq(ms_explain_run(&in, &x), MS_OK);
	cr_expect_eq(x.n_steps, 0);
	cr_expect_str_eq(x.steps_from, "");
	ms_explain_release(&x);
	ms_trace_free(t);
}

/*
 * Growth over steps from repetition: the loop that keeps each step's logits, its annotations
 * taken away, still shows the growing site, at what PyTorch's own count says it keeps a step
 * (truth.json "leak").
 */
Test(explain, growth_over_steps_from_repetition)
{
	char path[1024];
	struct ms_trace *t;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_explain_in in;
	struct ms_explain x;
	cJSON *truth = th_truth("explain/leak");
	const cJSON *l;

	cr_assert(truth, "explain/leak: no truth");
	l = cJSON_GetObjectItemCaseSensitive(truth, "leak");
	snprintf(path, sizeof(path), "%s/snapshots/explain/leak.pickle.zst", MS_TESTDATA);
	cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK, "%s", d.msg);
	t->n_anns = 0;
	memset(&in, 0, sizeof(in));
	in.t = t;
	cr_assert_eq(ms_explain_run(&in, &x), MS_OK);
	cr_expect_str_eq(x.steps_from, "repetition");
	cr_assert_geq(x.growth_steps, 3);
	cr_assert_geq(x.n_growth, 1, "the leak not found over %zu steps", x.n_steps);
	near("leak per step", path, x.growth[0].bytes_per_step, jnum(l, "bytes_per_step"));
	ms_explain_release(&x);
	ms_trace_free(t);
	cJSON_Delete(truth);
}
