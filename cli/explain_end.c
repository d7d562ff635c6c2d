/* explain of a snapshot without a trace: what its end state tells (explain_text.h). */
#include <cjson/cJSON.h>
#include <stdio.h>

#include "cli/explain_text.h"
#include "cli/messages.h"
#include "cli/verdict_out.h"
#include "explain/verdict.h"
#include "replay/end_state.h"

/*
 * A snapshot without a trace (history off, enabled="state"), of one device: what its end state
 * tells, and a failed request's verdict where --request gives one (explain/verdict.h).
 */
int ms_explain_end_state(const struct ms_replay_cli *c, const char *path, const struct ms_trace *t,
                         uint32_t dev, const char *label, uint64_t request, int json, cJSON **jout)
{
	struct ms_replay_result r;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_end_state_verdict v;
	struct ms_end_site sites[64];
	size_t ns;
	char b1[32], b2[32], b3[32], headline[1024];
	ms_status s;

	if ((s = ms_end_state_snap(t, dev, &r, &d))) {
		ms_report(path, s, &d);
		ms_replay_result_release(&r);
		return MS_EXIT_ERROR;
	}
	ms_end_state_judge(&r.snap, request, c->o.limit,
	                   c->o.device_memory ? c->o.device_memory : UINT64_MAX, &v);
	ns = ms_end_state_sites(t, &r.snap, sites, sizeof(sites) / sizeof(sites[0]));
	ms_end_state_headline(&v, headline, sizeof(headline));
	if (json) {
		cJSON *o = cJSON_CreateObject(), *a;
		ms_json_schema(o);
		cJSON_AddStringToObject(o, "trace", path);
		cJSON_AddStringToObject(o, "verdict", headline);
		cJSON_AddNumberToObject(o, "device", dev);
		cJSON_AddBoolToObject(o, "no_trace", 1);
		ms_json_u64(o, "segments", v.segments);
		ms_json_u64(o, "reserved_bytes", v.reserved);
		ms_json_u64(o, "allocated_bytes", v.allocated);
		ms_json_u64(o, "requested_bytes", v.requested);
		ms_json_u64(o, "free_in_reserved_bytes", v.free_in_reserved);
		ms_json_u64(o, "largest_free_bytes", v.largest_free);
		ms_json_u64(o, "allocations", v.blocks_allocated);
		a = cJSON_AddArrayToObject(o, "sites");
		for (size_t k = 0; k < ns && k < 10; k++) {
			cJSON *x = cJSON_CreateObject();
			cJSON_AddStringToObject(x, "label", sites[k].label);
			ms_json_u64(x, "bytes", sites[k].bytes);
			ms_json_u64(x, "allocations", sites[k].blocks);
			cJSON_AddItemToArray(a, x);
		}
		if (v.has_request) {
			cJSON *q = cJSON_AddObjectToObject(o, "request");
			ms_json_u64(q, "bytes", v.request);
			ms_json_u64(q, "rounded_bytes", v.rounded);
			ms_json_u64(q, "new_segment_bytes", v.segment_needed);
			cJSON_AddBoolToObject(q, "fits_free_block", v.fits_free_block);
			if (v.oom.capacity_hi)
				ms_json_u64(q, "capacity_bytes", v.oom.capacity_hi);
			else
				cJSON_AddNullToObject(q, "capacity_bytes");
			ms_verdict_json_oom_cause(q, &v.oom);
		} else {
			cJSON_AddNullToObject(o, "request");
		}
		*jout = o;
	} else {
		printf("%s: %s\n", label, headline);
		printf("%s: no trace (taken with history off or enabled=\"state\"): the end state "
		       "as "
		       "the snapshot recorded it\n",
		       label);
		printf("  %s allocated in %llu block%s, %s reserved in %llu segment%s, %s of it "
		       "free; "
		       "the largest free block %s\n",
		       ms_format_size(b1, sizeof(b1), v.allocated),
		       (unsigned long long)v.blocks_allocated, v.blocks_allocated == 1 ? "" : "s",
		       ms_format_size(b2, sizeof(b2), v.reserved), (unsigned long long)v.segments,
		       v.segments == 1 ? "" : "s",
		       ms_format_size(b3, sizeof(b3), v.free_in_reserved),
		       ms_format_size((char[32]){0}, 32, v.largest_free));
		printf("  held by, the largest sites of what was allocated:\n");
		for (size_t k = 0; k < ns && k < 5; k++)
			printf("    %10s in %llu allocation%s: %s\n",
			       ms_format_size(b1, sizeof(b1), sites[k].bytes),
			       (unsigned long long)sites[k].blocks, sites[k].blocks == 1 ? "" : "s",
			       sites[k].label);
		if (v.has_request) {
			printf("  a request of %s (%s rounded; a new segment of %s): ",
			       ms_format_size(b1, sizeof(b1), v.request),
			       ms_format_size(b2, sizeof(b2), v.rounded),
			       ms_format_size(b3, sizeof(b3), v.segment_needed));
			if (v.oom.cause)
				printf("%s, against %s\n", ms_oom_cause_name(v.oom.cause),
				       ms_format_size(b1, sizeof(b1), v.oom.capacity_hi));
			else
				printf("undecided: %s\n", v.oom.undecided_because);
		} else {
			printf("  the request that failed is not recorded in such a file: "
			       "--request SIZE "
			       "judges it against this state\n");
		}
		printf("  (no events: peaks, steps, growth and what each setting would have done "
		       "need "
		       "a trace: torch.cuda.memory._record_memory_history or memsnap record)\n");
	}
	ms_replay_result_release(&r);
	return MS_EXIT_OK;
}
