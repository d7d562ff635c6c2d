/* A window's figures (analysis/window.h) as the results write them: the parts they share. */
#ifndef MEMSNAP_JSON_WINDOW_H
#define MEMSNAP_JSON_WINDOW_H

#include "analysis/window.h"

struct cJSON;

/* Into x: name (null for --from/--to), reached, from_event, to_event, closed. */
void ms_window_json_head(struct cJSON *x, const struct ms_window_figures *w);
/* Into x: events, first_event_time_s and last_event_time_s (null: the trace has no times). */
void ms_window_json_span(struct cJSON *x, const struct ms_window_figures *w);
/*
 * o["window"]: the window a result's figures are of (check, explain), {from_event, to_event,
 * closed, reserved_bytes_at_start, allocated_bytes_at_start, reserved_rise_bytes,
 * allocated_rise_bytes}, or null where w is NULL (the run whole).
 */
void ms_window_json_brief(struct cJSON *o, const struct ms_window_figures *w);

#endif
