/* The report's timeline as CSV (render.h): a row per bucket, for people who plot it themselves. */
#include "render/render.h"

#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "render/report.h"

/* s as one CSV field: quoted where it holds a comma, a quote or a line break. */
static ms_status field(struct ms_buf *out, const char *s)
{
	if (!strpbrk(s, ",\"\r\n"))
		return ms_buf_append(out, s, strlen(s));
	MS_TRY(ms_buf_append(out, "\"", 1));
	for (const char *p = s; *p; p++) {
		MS_TRY(ms_buf_append(out, p, 1));
		if (*p == '"')
			MS_TRY(ms_buf_append(out, "\"", 1)); /* a quote doubled */
	}
	return ms_buf_append(out, "\"", 1);
}

ms_status ms_render_csv(const struct ms_report *rep, struct ms_buf *out)
{
	static const char header[] =
	        "first_event,last_event,time_s,allocated,allocated_min,allocated_max,reserved,"
	        "reserved_min,reserved_max,active_max,inactive_split,outside_pytorch,"
	        "private_pools_allocated,private_pools_reserved,free_in_reserved,largest_free_"
	        "block,"
	        "annotation,largest_allocation,largest_allocation_event,largest_allocation_site\n";
	int64_t t0 = rep->n_buckets ? rep->buckets[0].s.t_ns : 0;
	/* a trace without times (a snapshot of PyTorch 2.0, some producers): time_s left empty */
	int timed = rep->n_buckets && rep->buckets[rep->n_buckets - 1].s.t_ns != t0;

	MS_TRY(ms_buf_append(out, header, sizeof(header) - 1));
	for (size_t i = 0; i < rep->n_buckets; i++) {
		const struct ms_report_bucket *b = &rep->buckets[i];
		char line[512], when[32] = "";
		int n;
		if (timed)
			snprintf(when, sizeof(when), "%.6f", (double)(b->s.t_ns - t0) / 1e9);
		char outside[24] = ""; /* empty where nothing measured it: never a 0 made up */
		if (rep->outside_is != MS_OUTSIDE_NOT_MEASURED && b->ext_known)
			snprintf(outside, sizeof(outside), "%llu", (unsigned long long)b->ext_max);
		n = snprintf(line, sizeof(line),
		             "%llu,%llu,%s,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%s,%llu,%llu,"
		             "%llu,%llu,",
		             (unsigned long long)b->s.first, (unsigned long long)b->last, when,
		             (unsigned long long)b->alloc, (unsigned long long)b->s.amin,
		             (unsigned long long)b->s.amax, (unsigned long long)b->reserved,
		             (unsigned long long)b->s.rmin, (unsigned long long)b->s.rmax,
		             (unsigned long long)b->active_max,
		             (unsigned long long)b->inactive_split, outside,
		             (unsigned long long)b->private_allocated,
		             (unsigned long long)b->private_reserved,
		             (unsigned long long)b->free_in_reserved,
		             (unsigned long long)b->largest_free);
		MS_TRY(ms_buf_append(out, line, (size_t)n));
		if (b->ann >= 0 && rep->syms)
			MS_TRY(field(out, ms_symtab_get_str(rep->syms, (uint32_t)b->ann)->s));
		if (b->big_size) {
			n = snprintf(line, sizeof(line), ",%llu,%llu,",
			             (unsigned long long)b->big_size,
			             (unsigned long long)b->big_index);
			MS_TRY(ms_buf_append(out, line, (size_t)n));
			if (b->big_site >= 0)
				MS_TRY(field(out, ms_symtab_get_str(&rep->site_labels,
				                                    (uint32_t)b->big_site + 1)
				                          ->s));
		} else {
			MS_TRY(ms_buf_append(out, ",,,", 3));
		}
		MS_TRY(ms_buf_append(out, "\n", 1));
	}
	return MS_OK;
}
