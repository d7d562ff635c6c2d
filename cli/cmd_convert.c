/* memsnap convert IN -o OUT: PyTorch snapshot (pickle/JSON) or trace to .zst, or to JSON. */
#include <stdio.h>
#include <string.h>

#include "cli/cmds.h"
#include "cli/opts.h"
#include "cli/messages.h"
#include "cli/output_file.h"
#include "format/trace_write.h"
#include "parse/torch_json_write.h"
#include "parse/trace.h"

static const char *const usage[] = {
        "memsnap convert [--format zst|json] [--level N] [--frame-kib N] [--from N] [--to N] <in> "
        "-o <out>",
        "",
        "Convert a PyTorch memory snapshot (.pickle, .pickle.zst, .pickle.gz, .json)",
        "or a memsnap trace into a memsnap trace (.zst), or into PyTorch's snapshot",
        "layout as JSON. The output format follows --format, else the extension of",
        "<out> (.json or .zst; another name needs --format). '-o -' writes a .zst to",
        "standard output (--format json for JSON).",
        NULL,
};

/* in (the window ro) as PyTorch's snapshot layout in JSON to f; errors said. */
static ms_status to_json(const char *in, const struct ms_read_opts *ro, const char *out, FILE *f)
{
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_trace *t;
	ms_status s = ms_trace_load(in, ro, &t, NULL, &d);

	if (s) {
		ms_report(in, s, &d);
		return s;
	}
	ms_report_warnings(in, &d);
	if ((s = ms_torch_json_write(t, f, 0)))
		ms_error("%s: write error", out);
	ms_trace_free(t);
	return s;
}

/* in (the window ro) as a memsnap trace to f; errors said. */
static ms_status to_zst(const char *in, const struct ms_read_opts *ro, const char *out, FILE *f,
                        int level, uint64_t frame_kib)
{
	struct ms_writer_opts wo = MS_WRITER_OPTS_INIT;
	struct ms_writer *w = NULL;
	struct ms_symtab syms;
	struct ms_sink sink;
	struct ms_source_info si;
	struct ms_diag d = MS_DIAG_INIT, wd = MS_DIAG_INIT;
	struct ms_trace *t = NULL;
	ms_status s;

	wo.level = level;
	wo.frame_bytes = (size_t)frame_kib * 1024;
	wo.producer = "memsnap";
	if (ms_symtab_init(&syms))
		ms_die(MS_EXIT_ERROR, "out of memory");
	/*
	 * A snapshot is read whole, so that its events get the pools its end state tells
	 * (parse/pool_infer.h); a memsnap trace streams in bounded memory.
	 */
	if (ms_file_is_snapshot(in) && (s = ms_trace_load(in, ro, &t, NULL, &d))) {
		ms_report(in, s, &d);
	} else if ((s = ms_writer_open(f, &wo, t ? &t->syms : &syms, &w, &wd))) {
		ms_report(out, s, &wd);
	} else {
		ms_writer_sink(w, &sink);
		s = t ? ms_trace_emit(t, &sink) : ms_source_read(in, ro, &syms, &sink, &si, &d);
		/* a run cut short stays so: the END written here is not the run's end */
		if (!s && (t ? t->cut_short : ms_source_cut_short(&si)))
			ms_writer_source_cut_short(w);
		if (s == MS_ERR_IO && !d.msg[0])
			ms_error("%s: write error", out);
		else if (s)
			ms_report(in, s, &d);
		else {
			ms_report_warnings(in, &d);
			if ((s = ms_writer_close(w, &wd)))
				ms_report(out, s, &wd);
		}
	}
	ms_writer_free(w);
	ms_trace_free(t);
	ms_symtab_release(&syms);
	return s;
}

int cmd_convert(int argc, const char **argv)
{
	const char *out = NULL, *format = NULL;
	int level = 3, n, json;
	uint64_t frame_kib = 0;
	struct ms_read_opts ro = MS_READ_OPTS_INIT;
	const struct ms_opt opts[] = {
	        MS_OPT_STRING('o', "output", &out, "file", "where to write ('-' for stdout)"),
	        MS_OPT_STRING('f', "format", &format, "zst|json", "output format"),
	        MS_OPT_INT(0, "level", &level, "N", "zstd level for .zst output (default 3)"),
	        MS_OPT_U64(0, "frame-kib", &frame_kib, "N",
	                   "uncompressed KiB per zstd frame (default 1024): the seek granularity"),
	        MS_OPT_U64(0, "from", &ro.from, "N", "first event index to keep"),
	        MS_OPT_U64(0, "to", &ro.to, "N", "stop before this event index"),
	        MS_OPT_END(),
	};
	struct ms_output o;
	FILE *f;
	ms_status s;

	n = ms_parse_options(argc, argv, opts, usage);
	if (n != 1)
		ms_usage_error(opts, usage, n ? "one input at a time" : "no input given");
	if (!out)
		ms_usage_error(opts, usage, "no output given (-o <out>)");
	if (format && strcmp(format, "zst") != 0 && strcmp(format, "json") != 0)
		ms_usage_error(opts, usage, "--format must be zst or json");
	if (level < 1 || level > 22)
		ms_usage_error(opts, usage, "--level must be 1 to 22");
	if (ro.to <= ro.from)
		ms_usage_error(opts, usage, "--to must be past --from: the window holds no event");
	ms_output_refuse_inputs(out, "-o", argv, 1);
	if (!format && strcmp(out, "-") && !ms_ends_with(out, ".json") &&
	    !ms_ends_with(out, ".zst"))
		ms_usage_error(opts, usage,
		               "-o %s: the name does not say which format (.zst or .json); give "
		               "--format",
		               out);
	if (format && strcmp(out, "-") &&
	    (ms_ends_with(out, ".json") || ms_ends_with(out, ".zst")) &&
	    !ms_ends_with(out, strcmp(format, "json") ? ".zst" : ".json"))
		ms_usage_error(opts, usage, "-o %s: the name says another format than --format %s",
		               out, format);
	json = format ? strcmp(format, "json") == 0 : ms_ends_with(out, ".json");
	if (ms_output_open(&o, out))
		return MS_EXIT_ERROR;
	f = o.f;
	s = json ? to_json(argv[0], &ro, out, f) : to_zst(argv[0], &ro, out, f, level, frame_kib);
	if (s) {
		ms_output_abort(&o); /* no half-written output */
		return MS_EXIT_ERROR;
	}
	if (ms_output_commit(&o))
		return MS_EXIT_ERROR;
	if (strcmp(out, "-"))
		ms_said("wrote %s (%s)", out,
		        json ? "PyTorch's snapshot layout, JSON" : "memsnap trace");
	return MS_EXIT_OK;
}
