/* A window's figures as the results write them (window.h). */
#include "json/window.h"

#include <cjson/cJSON.h>

#include "common/json.h"

void ms_window_json_head(cJSON *x, const struct ms_window_figures *w)
{
	if (w->name)
		cJSON_AddStringToObject(x, "name", w->name);
	else
		cJSON_AddNullToObject(x, "name");
	cJSON_AddBoolToObject(x, "reached", w->opened);
	ms_json_u64(x, "from_event", w->from);
	ms_json_u64(x, "to_event", w->to);
	/* open at the end: the trace, or the replay, ended inside it */
	cJSON_AddBoolToObject(x, "closed", w->closed);
}

void ms_window_json_span(cJSON *x, const struct ms_window_figures *w)
{
	ms_json_u64(x, "events", w->events);
	/* its events' times after the trace's first event (null: the trace has none) */
	if (w->timed_events) {
		cJSON_AddNumberToObject(x, "first_event_time_s", (double)w->first_t_ns / 1e9);
		cJSON_AddNumberToObject(x, "last_event_time_s", (double)w->last_t_ns / 1e9);
	} else {
		cJSON_AddNullToObject(x, "first_event_time_s");
		cJSON_AddNullToObject(x, "last_event_time_s");
	}
}

void ms_window_json_brief(cJSON *o, const struct ms_window_figures *w)
{
	cJSON *x;

	if (!w) {
		cJSON_AddNullToObject(o, "window");
		return;
	}
	x = cJSON_AddObjectToObject(o, "window");
	ms_json_u64(x, "from_event", w->from);
	ms_json_u64(x, "to_event", w->to);
	cJSON_AddBoolToObject(x, "closed", w->closed);
	ms_json_u64(x, "reserved_bytes_at_start", w->reserved_at_start);
	ms_json_u64(x, "allocated_bytes_at_start", w->allocated_at_start);
	ms_json_u64(x, "reserved_rise_bytes", w->peak_reserved - w->reserved_at_start);
	ms_json_u64(x, "allocated_rise_bytes", w->peak_allocated - w->allocated_at_start);
}
