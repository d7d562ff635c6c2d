/* whatif's answer for one device (whatif_report.h): the settings replayed and judged. */
#include "explain/whatif_report.h"

#include <string.h>

#include "common/alloc.h"
#include "explain/explain.h"

ms_status ms_whatif_report_run(const struct ms_trace *t, const struct ms_replay_opts *o,
                               const struct ms_replay_result *first,
                               const struct ms_limit_range *lim, const char *const *configs,
                               size_t n, unsigned jobs, struct ms_whatif_report *r,
                               struct ms_diag *d)
{
	struct ms_replay_opts wo = *o;
	struct ms_explain ex;
	struct ms_explain_in in;
	ms_status s;

	memset(r, 0, sizeof(*r));
	r->device = (uint32_t)o->device;
	r->lim = *lim;
	/* the limit: given, recorded, or inferred from recorded OOMs (as replay does) */
	if (!wo.limit && first->limit)
		wo.limit = first->limit;
	r->limit = wo.limit;
	r->ended_by_oom = first->ended_by_oom;
	r->device_memory_source = first->device_memory_source;
	r->device_memory = first->device_memory;
	r->mid_run = first->rebuilt;
	r->cut_short = first->cut_short;
	/* the steps, how the job ended and what it could use: what the verdicts rest on */
	ms_explain_in_at_peak(&in, t, r->device, first);
	if ((s = ms_explain_run(&in, &ex)))
		return ms__diag_set(d, s, -1, -1, "out of memory");
	if ((s = ms_verdict_begin(t, &ex, &wo, first, lim, &r->v)))
		goto out;
	if (!(r->rows = ms_calloc(n ? n : 1, sizeof(*r->rows)))) {
		s = MS_ERR_NOMEM;
		goto out;
	}
	r->n_rows = n;
	for (size_t k = 0; k < n; k++)
		r->rows[k].conf = configs ? configs[k] : ms_whatif_default_configs[k];
	if ((s = ms_whatif_run(t, &wo, r->rows, n, jobs)))
		goto out;
	s = ms_verdict_judge_rows(t, &ex, &wo, r->rows, n, &r->v);
out:
	ms_explain_release(&ex);
	if (s)
		ms__diag_set(d, s, -1, -1, "%s",
		             s == MS_ERR_NOMEM ? "out of memory" : "cannot start a thread");
	return s;
}

void ms_whatif_report_release(struct ms_whatif_report *r)
{
	if (r->rows)
		ms_whatif_release(r->rows, r->n_rows);
	ms_free(r->rows);
	ms_verdict_release(&r->v);
	memset(r, 0, sizeof(*r));
}
