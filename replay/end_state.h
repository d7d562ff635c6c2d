/*
 * The allocator's state as a snapshot recorded it: the end-state segments of one device, as a
 * replay's snapshot (replay.h), for drawing and for statistics when there is no trace to replay
 * (a snapshot taken with history off, enabled="state", or the bare segment list).
 */
#ifndef MEMSNAP_REPLAY_END_STATE_H
#define MEMSNAP_REPLAY_END_STATE_H

#include "replay/replay.h"

struct ms_trace;

/*
 * r (zeroed here; ms_replay_result_release) gets t's end-state segments of device dev in
 * r->snap, in address order, with r->snap.stats' current and peak values of allocated,
 * reserved, active, requested and inactive split bytes and segments from them (peaks are the
 * end values: nothing earlier is known). r->events_total is t's; no event is replayed.
 * MS_ERR_NOMEM, or MS_ERR_INVALID_ARG when dev has no segments.
 */
ms_status ms_end_state_snap(const struct ms_trace *t, uint32_t dev, struct ms_replay_result *r,
                            struct ms_diag *d);

#endif
