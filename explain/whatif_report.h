/*
 * whatif's answer for one device of a trace: every setting asked replayed on it (the peak, the
 * least memory that completes), each judged (would the job have survived under it?), and what
 * the verdicts rest on (the limit, the device's size, a mid-run start). Computed here; written
 * out by its serializer (json/whatif.h) or the command's text.
 */
#ifndef MEMSNAP_EXPLAIN_WHATIF_REPORT_H
#define MEMSNAP_EXPLAIN_WHATIF_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "explain/verdict.h"
#include "memsnap/memsnap.h"
#include "replay/replay.h"
#include "replay/run.h"
#include "replay/whatif.h"

struct ms_trace;

struct ms_whatif_report {
	uint32_t device;
	uint64_t limit;                /* the limit replayed under: given, recorded, or inferred */
	struct ms_limit_range lim;     /* lim.inferred: the range the recorded OOMs allow */
	unsigned device_memory_source; /* enum ms_devmem_source */
	uint64_t device_memory;        /* UINT64_MAX: not known */
	int mid_run;      /* the trace starts mid-run: replays from its rebuilt state */
	int cut_short;    /* the trace ends before the run did */
	int ended_by_oom; /* the replay under the first settings ran out where the job did not */
	struct ms_whatif_row *rows; /* each setting's replay */
	size_t n_rows;
	struct ms_verdict v; /* v.sv[k]: would the job have survived under rows[k]'s setting */
};

/*
 * The report of o->device of t (held whole): configs[0..n) the settings (NULL entries: the
 * trace's own; configs NULL: ms_whatif_default_configs), first the replay of t under o (read,
 * not kept) and lim its inferred limit. Replays run on up to jobs threads (0: one per CPU).
 * MS_ERR_NOMEM, or MS_ERR_BACKEND where no thread could start (d says which). Release *r with
 * ms_whatif_report_release() whatever the return.
 */
ms_status ms_whatif_report_run(const struct ms_trace *t, const struct ms_replay_opts *o,
                               const struct ms_replay_result *first,
                               const struct ms_limit_range *lim, const char *const *configs,
                               size_t n, unsigned jobs, struct ms_whatif_report *r,
                               struct ms_diag *d);
void ms_whatif_report_release(struct ms_whatif_report *r);

#endif
