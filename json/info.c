/* What a file holds as info --json writes it (info.h). */
#include "json/info.h"

#include <cjson/cJSON.h>
#include <stdio.h>

#include "common/json.h"

static const char *kind_name(const struct ms_source_info *si)
{
	switch (si->kind) {
	case MS_FILE_TRACE:
		return "memsnap-trace";
	case MS_FILE_PICKLE:
		return "torch-snapshot-pickle";
	case MS_FILE_JSON:
		return "torch-snapshot-json";
	default:
		return "unknown";
	}
}

static const char *comp_name(enum ms_compression c)
{
	return c == MS_COMP_ZSTD ? "zstd" : c == MS_COMP_GZIP ? "gzip" : "none";
}

/* The marks by name, as the windows' mark:NAME takes them (at most 1000: marks_truncated). */
static void marks_json(cJSON *o, const struct ms_file_info *x)
{
	cJSON *a = cJSON_AddArrayToObject(o, "marks");

	for (size_t i = 0; a && i < x->n_marks && i < 1000; i++) {
		const struct ms_file_mark *m = &x->marks[i];
		cJSON *e = cJSON_CreateObject();
		if (!e)
			return;
		cJSON_AddStringToObject(e, "name",
		                        x->syms ? ms_symtab_get_str(x->syms, m->name)->s : "");
		ms_json_u64(e, "starts", m->starts);
		ms_json_u64(e, "ends", m->ends);
		ms_json_u64(e, "points", m->points);
		cJSON_AddItemToArray(a, e);
	}
	cJSON_AddBoolToObject(o, "marks_truncated", x->n_marks > 1000);
}

cJSON *ms_file_info_json(const char *path, const struct ms_file_info *x,
                         const struct ms_source_info *si, const struct ms_diag *d)
{
	cJSON *o = cJSON_CreateObject(), *a, *dev;

	if (!o)
		return NULL;
	ms_json_schema(o);
	cJSON_AddStringToObject(o, "trace", path);
	cJSON_AddStringToObject(o, "kind", kind_name(si));
	cJSON_AddStringToObject(o, "compression", comp_name(si->compression));
	if (si->kind == MS_FILE_TRACE) {
		char v[16];
		snprintf(v, sizeof(v), "%u.%u", si->zst.major, si->zst.minor);
		cJSON_AddStringToObject(o, "format_version", v);
		cJSON_AddBoolToObject(o, "has_end", si->zst.has_end);
		cJSON_AddBoolToObject(o, "seekable", si->zst.has_footer);
		ms_json_u64(o, "frames", (uint64_t)(si->zst.n_frames));
		ms_json_u64(o, "dropped_events", si->zst.dropped_events);
	} else {
		cJSON_AddNumberToObject(o, "pickle_protocol", si->snap.pickle_protocol);
	}
	/* the events end before the run did (a recording killed, a file cut, or convert of one) */
	cJSON_AddBoolToObject(o, "cut_short", ms_source_cut_short(si));
	cJSON_AddStringToObject(o, "producer", x->meta.producer ? x->meta.producer : "");
	cJSON_AddStringToObject(o, "producer_version",
	                        x->meta.producer_version ? x->meta.producer_version : "");
	cJSON_AddStringToObject(o, "torch_version",
	                        x->meta.torch_version ? x->meta.torch_version : "");
	cJSON_AddStringToObject(o, "torch_release_from_fields", x->meta.layout_release);
	/* the devices the file has events or segments of, each with its own */
	a = cJSON_AddArrayToObject(o, "used_devices");
	for (int i = 0; i < 64; i++) {
		cJSON *u;
		if (x->dev_events[i] == x->dev_marks[i] && !x->dev_segs[i]) /* or marks alone */
			continue;
		u = cJSON_CreateObject();
		cJSON_AddItemToArray(a, u);
		cJSON_AddNumberToObject(u, "device", i);
		cJSON_AddBoolToObject(u, "and_up", i == 63);
		ms_json_u64(u, "events", x->dev_events[i]);
		ms_json_u64(u, "segments", x->dev_segs[i]);
		ms_json_u64(u, "segments_reserved_bytes", x->dev_reserved[i]);
	}
	a = cJSON_AddArrayToObject(o, "devices");
	for (uint32_t i = 0; i < x->meta.n_devices; i++) {
		dev = cJSON_CreateObject();
		cJSON_AddNumberToObject(dev, "index", x->meta.devices[i].index);
		cJSON_AddStringToObject(dev, "name", x->meta.devices[i].name);
		ms_json_u64(dev, "total_memory", (uint64_t)(x->meta.devices[i].total_memory));
		cJSON_AddItemToArray(a, dev);
	}
	ms_json_u64(o, "events_total", (uint64_t)(x->n));
	ms_json_u64(o, "events_raw_cuda", x->raw_cuda);
	a = cJSON_AddObjectToObject(o, "events_by_action");
	for (int i = 0; i < MS_ACT_COUNT; i++)
		ms_json_u64(a, ms_action_name((unsigned)i), x->by_action[i]);
	/* of them, the raw CUDA calls the recorder saw (the rest are PyTorch's allocator's) */
	a = cJSON_AddObjectToObject(o, "events_raw_cuda_by_action");
	for (int i = 0; i < MS_ACT_COUNT; i++)
		ms_json_u64(a, ms_action_name((unsigned)i), x->raw_by_action[i]);
	a = cJSON_AddArrayToObject(o, "streams");
	for (size_t i = 0; i < x->n_streams; i++)
		cJSON_AddItemToArray(
		        a, cJSON_CreateNumber((double)x->stream_list[i])); /* < 2^53 in practice */
	ms_json_i64(o, "time_first_ns", x->t_first);
	ms_json_i64(o, "time_last_ns", x->t_last);
	if (!x->t_first && !x->t_last)
		cJSON_AddNullToObject(o,
		                      "duration_s"); /* no times recorded (PyTorch 2.1 and older) */
	else
		cJSON_AddNumberToObject(o, "duration_s", (double)(x->t_last - x->t_first) / 1e9);
	ms_json_u64(o, "events_with_stack", (uint64_t)(x->with_stack));
	cJSON_AddNumberToObject(o, "distinct_stacks", x->syms ? ms_symtab_nstacks(x->syms) - 1 : 0);
	ms_json_u64(o, "annotations", (uint64_t)(x->anns));
	marks_json(o, x);
	ms_json_u64(o, "segments", (uint64_t)(x->segs));
	ms_json_u64(o, "segments_reserved_bytes", (uint64_t)(x->reserved));
	cJSON_AddStringToObject(o, "alloc_conf",
	                        x->meta.settings.alloc_conf ? x->meta.settings.alloc_conf : "");
	cJSON_AddBoolToObject(o, "settings_recorded", x->meta.settings.present);
	cJSON_AddBoolToObject(o, "expandable_segments_seen", x->meta.settings.expandable_seen);
	ms_json_u64(o, "private_pools", x->n_pools);
	ms_json_u64(o, "private_pool_events", x->pool_events);
	ms_json_u64(o, "private_pool_segments", x->pool_segs);
	ms_json_u64(o, "private_pool_reserved_bytes", x->pool_reserved);
	/* a pipe's size is not known (null) */
	if (si->file_regular) {
		ms_json_u64(o, "file_bytes", (uint64_t)(si->file_bytes));
		cJSON_AddNumberToObject(o, "bytes_per_event",
		                        x->n ? (double)si->file_bytes / (double)x->n : 0);
	} else {
		cJSON_AddNullToObject(o, "file_bytes");
		cJSON_AddNullToObject(o, "bytes_per_event");
	}
	a = cJSON_AddArrayToObject(o, "warnings");
	if (d->warnings)
		cJSON_AddItemToArray(a, cJSON_CreateString(d->warning));
	return o;
}
