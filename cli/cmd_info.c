/* memsnap info FILE [--json]: what a trace or snapshot holds. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cmds.h"
#include "cli/opts.h"
#include "cli/messages.h"
#include "common/alloc.h"
#include "common/hash.h"
#include "parse/trace.h"

static const char *const usage[] = {
        "memsnap info [--json] [--from N] [--to N] <file>",
        "",
        "Describe a memsnap trace (.zst) or a PyTorch memory snapshot (.pickle,",
        ".pickle.zst, .pickle.gz, .json): format and version, producer, devices,",
        "event counts by action, streams, time span, stacks, bytes per event.",
        "The text lists the first 16 devices and streams and counts the rest;",
        "--json lists them all.",
        NULL,
};

struct info {
	struct ms_meta meta;
	const struct ms_symtab *syms;
	uint64_t n, by_action[MS_ACT_COUNT], with_stack, anns, segs, reserved;
	uint64_t raw_cuda; /* events of raw CUDA calls (the recorder's interposer) */
	uint64_t raw_by_action[MS_ACT_COUNT]; /* of them, by action */
	int64_t t_first, t_last;
	struct ms_u64map streams;
	uint64_t last_stream; /* the stream of the event before (streams holds it) */
	int any_stream;
	uint64_t *stream_list;
	size_t n_streams, cap_streams;
	int oom;
	struct ms_arena arena;
	/* events and segments per device (devices past the array are counted in the last) */
	uint64_t dev_events[64], dev_segs[64], dev_reserved[64];
	uint64_t dev_marks[64]; /* of dev_events, snapshot marks: PyTorch writes them for every
	                           device, so marks alone are no use of it */
	/* private pools (CUDA graphs, MemPools): those seen, by ms_pool_code; the events the
	 * trace puts in one (memsnap's recordings, PyTorch 2.12+), the end-state segments */
	uint8_t pool_seen[65536 / 8];
	uint64_t n_pools, pool_events, pool_segs, pool_reserved;
};

static void saw_pool(struct info *x, uint16_t code)
{
	if (!(x->pool_seen[code / 8] & (1u << (code % 8)))) {
		x->pool_seen[code / 8] |= (uint8_t)(1u << (code % 8));
		x->n_pools++;
	}
}

static ms_status i_begin(void *ctx, const struct ms_meta *m, const struct ms_symtab *syms)
{
	struct info *x = ctx;

	x->meta = *m;
	x->syms = syms;
	/* copy what outlives the callback */
	x->meta.producer = ms_arena_strndup(&x->arena, m->producer, strlen(m->producer));
	x->meta.producer_version =
	        ms_arena_strndup(&x->arena, m->producer_version, strlen(m->producer_version));
	x->meta.torch_version =
	        ms_arena_strndup(&x->arena, m->torch_version, strlen(m->torch_version));
	x->meta.layout_release =
	        ms_arena_strndup(&x->arena, m->layout_release ? m->layout_release : "",
	                         m->layout_release ? strlen(m->layout_release) : 0);
	x->meta.settings.alloc_conf =
	        ms_arena_strndup(&x->arena, m->settings.alloc_conf, strlen(m->settings.alloc_conf));
	if (m->n_devices) {
		struct ms_device *d = ms_arena_alloc(&x->arena, sizeof(*d) * m->n_devices);
		if (!d)
			return MS_ERR_NOMEM;
		for (uint32_t i = 0; i < m->n_devices; i++) {
			d[i] = m->devices[i];
			d[i].name = ms_arena_strndup(&x->arena, m->devices[i].name,
			                             strlen(m->devices[i].name));
		}
		x->meta.devices = d;
	}
	if (!x->meta.producer || !x->meta.producer_version || !x->meta.torch_version ||
	    !x->meta.layout_release || !x->meta.settings.alloc_conf)
		return MS_ERR_NOMEM;
	return MS_OK;
}

static ms_status i_event(void *ctx, const struct ms_event *e)
{
	struct info *x = ctx;

	/* the earliest and the latest: a snapshot lists each device's events apart */
	if (e->t_ns && (!x->t_first || e->t_ns < x->t_first))
		x->t_first = e->t_ns;
	if (e->t_ns > x->t_last)
		x->t_last = e->t_ns;
	x->n++;
	x->by_action[e->action]++;
	x->dev_events[e->device < 64 ? e->device : 63]++;
	x->dev_marks[e->device < 64 ? e->device : 63] += ms_event_is_snapshot_mark(e);
	if (e->stack)
		x->with_stack++;
	x->raw_cuda += e->source == MS_SRC_CUDA;
	x->raw_by_action[e->action] += e->source == MS_SRC_CUDA;
	if (e->pool != MS_POOL_DEFAULT && e->pool != MS_POOL_UNKNOWN) {
		x->pool_events++;
		saw_pool(x, e->pool);
	}
	/* events come in runs of one stream: the table only where the stream changes */
	if (x->any_stream && e->stream == x->last_stream)
		return MS_OK;
	x->any_stream = 1;
	x->last_stream = e->stream;
	if (!ms_u64map_get(&x->streams, e->stream)) {
		if (ms_u64map_put(&x->streams, e->stream, 1) ||
		    ms_grow(&x->stream_list, &x->cap_streams, x->n_streams + 1, sizeof(uint64_t)))
			return MS_ERR_NOMEM;
		x->stream_list[x->n_streams++] = e->stream;
	}
	return MS_OK;
}

static ms_status i_ann(void *ctx, const struct ms_annotation *a)
{
	(void)a;
	((struct info *)ctx)->anns++;
	return MS_OK;
}

static ms_status i_seg(void *ctx, const struct ms_segment *s, const struct ms_block *b)
{
	struct info *x = ctx;

	(void)b;
	x->segs++;
	x->dev_segs[s->device < 64 ? s->device : 63]++;
	x->dev_reserved[s->device < 64 ? s->device : 63] += s->total_size;
	x->reserved += s->total_size;
	if (s->pool_id[0] || s->pool_id[1]) {
		uint16_t code;
		x->pool_segs++;
		x->pool_reserved += s->total_size;
		if (ms_pool_code(s->pool_id[0], s->pool_id[1], &code) == 0)
			saw_pool(x, code);
	}
	return MS_OK;
}

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

static void print_json(const char *path, const struct info *x, const struct ms_source_info *si,
                       const struct ms_diag *d)
{
	cJSON *o = cJSON_CreateObject(), *a, *dev;
	char *s;

	cJSON_AddStringToObject(o, "file", path);
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
	s = cJSON_Print(o);
	if (s)
		puts(s);
	cJSON_free(s);
	cJSON_Delete(o);
}

/* Devices and streams listed in the text form (all of them in --json). */
#define LIST_MAX 16

static void print_text(const char *path, const struct info *x, const struct ms_source_info *si)
{
	char b1[32];

	if (!si->file_regular)
		printf("file:         %s (a pipe or device: its size is not known)\n", path);
	else
		printf("file:         %s (%s)\n", path,
		       ms_format_size(b1, sizeof(b1), si->file_bytes));
	if (si->kind == MS_FILE_TRACE)
		printf("format:       memsnap trace %u.%u, %llu frames%s%s\n", si->zst.major,
		       si->zst.minor, (unsigned long long)si->zst.n_frames,
		       si->zst.has_footer ? ", seekable" : "",
		       si->zst.has_end || si->zst.stopped ? "" : ", no END record");
	else
		printf("format:       PyTorch snapshot, %s%s%s%s\n",
		       si->kind == MS_FILE_JSON ? "JSON" : "pickle",
		       si->kind == MS_FILE_PICKLE ? " protocol " : "",
		       si->kind == MS_FILE_PICKLE
		               ? (char[]){(char)('0' + si->snap.pickle_protocol), 0}
		               : "",
		       si->compression == MS_COMP_NONE   ? ""
		       : si->compression == MS_COMP_ZSTD ? ", zstd-compressed"
		                                         : ", gzip-compressed");
	if (ms_source_cut_short(si))
		printf("cut short:    the events end before the run did (%s): what it did after "
		       "them is not in the file\n",
		       si->kind == MS_FILE_TRACE && si->zst.has_end
		               ? "converted from a trace cut short"
		       : si->kind == MS_FILE_TRACE ? "a recording killed, or a file cut"
		                                   : "converted from a trace cut short");
	printf("producer:     %s%s%s\n", x->meta.producer, x->meta.producer_version[0] ? " " : "",
	       x->meta.producer_version);
	if (x->meta.torch_version[0])
		printf("torch:        %s\n", x->meta.torch_version);
	else if (x->meta.layout_release[0])
		printf("torch:        %s (from the snapshot's fields)\n", x->meta.layout_release);
	else
		printf("torch:        unknown (nothing in the file tells the release)\n");
	if (!strcmp(x->meta.producer, "torch_npu"))
		printf("              another allocator: memsnap reads and draws it; its replay "
		       "models "
		       "PyTorch's CUDA allocator only\n");
	{
		int any = 0;
		printf("used:         ");
		for (int i = 0; i < 64; i++) {
			if (x->dev_events[i] == x->dev_marks[i] &&
			    !x->dev_segs[i]) /* or marks alone */
				continue;
			if (any++ == LIST_MAX / 4) {
				printf(", and more");
				break;
			}
			printf("%sdevice %d%s (%llu events, %llu end-state segments%s%s%s)",
			       any > 1 ? ", " : "", i, i == 63 ? " and up" : "",
			       (unsigned long long)x->dev_events[i],
			       (unsigned long long)x->dev_segs[i], x->dev_segs[i] ? ", " : "",
			       x->dev_segs[i] ? ms_format_size(b1, sizeof(b1), x->dev_reserved[i])
			                      : "",
			       x->dev_segs[i] ? " reserved" : "");
		}
		printf("%s\n", any ? "" : "nothing: no events, no segments");
	}
	if (si->kind != MS_FILE_TRACE &&
	    (si->snap.n_host_segments >= 0 || si->snap.n_host_traces >= 0))
		printf("host memory:  %lld pinned host segments, %lld host trace entries "
		       "(PyTorch's "
		       "pinned host allocator: shown, not replayed)\n",
		       (long long)(si->snap.n_host_segments > 0 ? si->snap.n_host_segments : 0),
		       (long long)(si->snap.n_host_traces > 0 ? si->snap.n_host_traces : 0));
	printf("devices:      %u", x->meta.n_devices);
	for (uint32_t i = 0; i < x->meta.n_devices && i < LIST_MAX; i++) {
		const struct ms_device *d = &x->meta.devices[i];
		printf("%s%u", i ? ", " : " (", d->index);
		if (d->name[0])
			printf(" %s", d->name);
		if (d->total_memory)
			printf(" %s", ms_format_size(b1, sizeof(b1), d->total_memory));
	}
	if (x->meta.n_devices > LIST_MAX)
		printf(", and %u more", x->meta.n_devices - LIST_MAX);
	if (x->meta.n_devices)
		printf(")");
	printf("\nevents:       %llu\n", (unsigned long long)x->n);
	for (int i = 0; i < MS_ACT_COUNT; i++) {
		if (!x->by_action[i])
			continue;
		printf("  %-15s %llu", ms_action_name((unsigned)i),
		       (unsigned long long)(x->by_action[i] - x->raw_by_action[i]));
		if (x->raw_by_action[i])
			printf(" from PyTorch's allocator, %llu raw CUDA calls",
			       (unsigned long long)x->raw_by_action[i]);
		printf("\n");
	}
	printf("streams:      %zu", x->n_streams);
	for (size_t i = 0; i < x->n_streams && i < LIST_MAX; i++)
		printf("%s0x%" PRIx64, i ? ", " : " (", x->stream_list[i]);
	if (x->n_streams > LIST_MAX)
		printf(", and %zu more", x->n_streams - LIST_MAX);
	printf("%s\n", x->n_streams ? ")" : "");
	if (x->n && !x->t_first && !x->t_last)
		printf("time span:    unknown (no times recorded)\n");
	else if (x->n)
		printf("time span:    %.3f s\n", (double)(x->t_last - x->t_first) / 1e9);
	if (x->raw_cuda)
		printf("sources:      %llu from PyTorch's allocator, %llu from raw CUDA calls\n",
		       (unsigned long long)(x->n - x->raw_cuda), (unsigned long long)x->raw_cuda);
	if (si->kind == MS_FILE_TRACE && si->zst.dropped_events)
		printf("dropped:      %llu events (the recorder shed load; first before event "
		       "%llu)\n",
		       (unsigned long long)si->zst.dropped_events,
		       (unsigned long long)si->zst.first_drop_event);
	printf("stacks:       %llu events with a stack, %u distinct stacks\n",
	       (unsigned long long)x->with_stack, x->syms ? ms_symtab_nstacks(x->syms) - 1 : 0);
	printf("annotations:  %llu\n", (unsigned long long)x->anns);
	if (x->segs || !x->meta.producer || strncmp(x->meta.producer, "memsnap-recorder", 16))
		printf("segments:     %llu at the end (%s reserved)\n", (unsigned long long)x->segs,
		       ms_format_size(b1, sizeof(b1), x->reserved));
	else
		printf("segments:     none in the file (a recording holds no state at its end)\n");
	if (x->n_pools) {
		printf("pools:        %llu private (CUDA graphs, MemPools)",
		       (unsigned long long)x->n_pools);
		if (x->pool_events)
			printf("; %llu events in them", (unsigned long long)x->pool_events);
		if (x->pool_segs)
			printf("; %llu of the segments at the end (%s)",
			       (unsigned long long)x->pool_segs,
			       ms_format_size(b1, sizeof(b1), x->pool_reserved));
		printf("\n");
	}
	if (x->meta.settings.present)
		printf("alloc conf:   \"%s\"\n", x->meta.settings.alloc_conf);
	else if (x->meta.settings.expandable_seen)
		printf("alloc conf:   not recorded; expandable segments, as the trace's segments "
		       "show\n");
	else if (x->n || x->segs) /* PyTorch 2.2 and older, torch_npu, a list of segments */
		printf("alloc conf:   not recorded (replays use the defaults unless --alloc-conf "
		       "says otherwise)\n");
	if (x->n && si->file_regular)
		printf("bytes/event:  %.2f\n", (double)si->file_bytes / (double)x->n);
}

int cmd_info(int argc, const char **argv)
{
	int json = 0, n;
	struct ms_read_opts ro = MS_READ_OPTS_INIT;
	const struct ms_opt opts[] = {
	        MS_OPT_BOOL(0, "json", &json, "print one JSON object"),
	        MS_OPT_U64(0, "from", &ro.from, "N", "first event index to count"),
	        MS_OPT_U64(0, "to", &ro.to, "N", "stop before this event index"),
	        MS_OPT_END(),
	};
	struct info x;
	struct ms_sink sink = {0};
	struct ms_symtab syms;
	struct ms_source_info si;
	struct ms_diag d = MS_DIAG_INIT;
	ms_status s;

	n = ms_parse_options(argc, argv, opts, usage);
	if (n != 1)
		ms_usage_error(opts, usage, n ? "one file at a time" : "no file given");
	if (ro.to <= ro.from)
		ms_usage_error(opts, usage, "--to must be past --from: the window holds no event");
	memset(&x, 0, sizeof(x));
	sink.ctx = &x;
	sink.begin = i_begin;
	sink.event = i_event;
	sink.annotation = i_ann;
	sink.segment = i_seg;
	if (ms_symtab_init(&syms))
		ms_die(MS_EXIT_ERROR, "out of memory");
	s = ms_source_read(argv[0], &ro, &syms, &sink, &si, &d);
	if (s) {
		ms_report(argv[0], s, &d);
	} else {
		ms_report_warnings(argv[0], &d);
		if (json)
			print_json(argv[0], &x, &si, &d);
		else
			print_text(argv[0], &x, &si);
	}
	ms_symtab_release(&syms);
	ms_u64map_release(&x.streams);
	ms_free(x.stream_list);
	ms_arena_release(&x.arena);
	return s ? MS_EXIT_ERROR : MS_EXIT_OK;
}
