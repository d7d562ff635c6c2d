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
#include "analysis/file_info.h"
#include "json/info.h"
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

/* Devices and streams listed in the text form (all of them in --json). */
#define LIST_MAX 16

static void print_counts(const struct ms_file_info *x, const struct ms_source_info *si);

static void print_text(const char *path, const struct ms_file_info *x,
                       const struct ms_source_info *si)
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
	print_counts(x, si);
}

/* The marks by name (the windows' mark:NAME), the first few, with how many of each. */
static void print_marks(const struct ms_file_info *x)
{
	size_t shown = x->n_marks < 6 ? x->n_marks : 6;

	for (size_t i = 0; i < shown && x->syms; i++) {
		const struct ms_file_mark *m = &x->marks[i];
		printf("%s%s (",
		       i ? ", " : "marks:        ", ms_symtab_get_str(x->syms, m->name)->s);
		uint64_t phases = m->starts > m->ends ? m->starts : m->ends;
		if (phases)
			printf("%llu phase%s", (unsigned long long)phases, phases == 1 ? "" : "s");
		if (m->points)
			printf("%s%llu mark%s", phases ? ", " : "", (unsigned long long)m->points,
			       m->points == 1 ? "" : "s");
		printf(")");
	}
	if (shown && x->syms)
		printf(x->n_marks > shown ? ", and %zu more names\n" : "\n", x->n_marks - shown);
}

/* The devices, events, streams, time, stacks, annotations, segments, pools and settings. */
static void print_counts(const struct ms_file_info *x, const struct ms_source_info *si)
{
	char b1[32];

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
	print_marks(x);
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
	struct ms_file_info x;
	struct ms_sink sink;
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
	ms_file_info_sink(&x, &sink);
	if (ms_symtab_init(&syms))
		ms_die(MS_EXIT_ERROR, "out of memory");
	s = ms_source_read(argv[0], &ro, &syms, &sink, &si, &d);
	if (s) {
		ms_report(argv[0], s, &d);
	} else {
		ms_report_warnings(argv[0], &d);
		if (json) {
			cJSON *o = ms_file_info_json(argv[0], &x, &si, &d);
			char *js = o ? cJSON_Print(o) : NULL;
			if (!js)
				ms_die(MS_EXIT_ERROR, "out of memory");
			puts(js);
			cJSON_free(js);
			cJSON_Delete(o);
		} else
			print_text(argv[0], &x, &si);
	}
	ms_symtab_release(&syms);
	ms_file_info_release(&x);
	return s ? MS_EXIT_ERROR : MS_EXIT_OK;
}
