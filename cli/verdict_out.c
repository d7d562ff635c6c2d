/* The verdict as the commands print it (verdict_out.h). */
#include "cli/verdict_out.h"

#include <stdio.h>

#include "cli/messages.h"
#include "cli/replay_opts.h"
#include "parse/trace.h"
#include <string.h>
#include "common/buf.h"

void ms_verdict_print_oom_cause(const struct ms_oom_verdict *v, const struct ms_death *d,
                                uint64_t reserved, const char *indent)
{
	char b1[32], b2[32], b3[32];
	if (!v->cause) {
		printf("%scause: undecided: %s\n", indent, v->undecided_because);
	} else {
		printf("%scause: %s", indent, ms_oom_cause_name(v->cause));
		for (size_t k = 1; k < v->n_causes; k++)
			printf("%s%s %s", k == 1 ? " (also " : ", ",
			       ms_oom_cause_name(v->causes[k].cause),
			       ms_format_size(b1, sizeof(b1), v->causes[k].bytes));
		printf("%s\n", v->n_causes > 1 ? ")" : "");
	}
	if (v->demand_projected && d)
		printf("%sthe request itself would have fit but for fragmentation; the steps' "
		       "peaks "
		       "rose %s a step over the last %zu, and at that rate step %zu asks for %s, "
		       "more "
		       "than the %s PyTorch could use\n",
		       indent, ms_format_size(b1, sizeof(b1), d->rise_per_step), d->rising_steps,
		       d->dying_step, ms_format_size(b2, sizeof(b2), d->projected_dying),
		       ms_format_size(b3, sizeof(b3), v->capacity_hi));
	if (v->device_full)
		printf("%sthe device was full: %s free at the OOM, below the %s segment the "
		       "request "
		       "needed; no per-process limit is needed to explain it\n",
		       indent, ms_format_size(b1, sizeof(b1), v->device_free),
		       ms_format_size(b2, sizeof(b2), v->segment_needed));
	if (v->outside_known && v->device_full)
		printf("%s%s of the device was held outside PyTorch (other libraries, processes, "
		       "the CUDA context), PyTorch %s: one figure at the OOM, assumed constant\n",
		       indent, ms_format_size(b1, sizeof(b1), v->outside_bytes),
		       ms_format_size(b3, sizeof(b3), reserved));
	else if (v->outside_known)
		printf("%s%s of the device was held outside PyTorch at the OOM (the CUDA context, "
		       "NCCL's buffers, other libraries and processes: the device's size less "
		       "PyTorch's %s reserved and the %s free); the device had room, so not what "
		       "stopped it\n",
		       indent, ms_format_size(b1, sizeof(b1), v->outside_bytes),
		       ms_format_size(b3, sizeof(b3), reserved),
		       ms_format_size(b2, sizeof(b2), v->device_free));
}
