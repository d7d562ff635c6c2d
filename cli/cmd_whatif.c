/* memsnap whatif TRACE: replay under a matrix of allocator settings, in parallel threads. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cmds.h"
#include "cli/opts.h"
#include "cli/messages.h"
#include "cli/replay_opts.h"
#include "explain/explain.h"
#include "explain/verdict.h"
#include "explain/whatif_report.h"
#include "json/whatif.h"
#include "cli/verdict_out.h"
#include "common/alloc.h"
#include "parse/trace.h"
#include "replay/replay.h"
#include "replay/alloc_conf.h"
#include "replay/whatif.h"

static const char *const usage[] = {
        "memsnap whatif [--limit N | --memory-fraction F] [--device-memory N] [--configs FILE]",
        "               [--device D] [--no-split-pools IDS] [--use-on-oom-pools IDS]",
        "               [--jobs N] [--json] <trace>",
        "",
        "Replay a trace under a matrix of PYTORCH_CUDA_ALLOC_CONF settings (the recorded one,",
        "expandable segments, max_split_size_mb, garbage_collection_threshold,",
        "roundup_power2_divisions and combinations users try, or one setting per line of",
        "--configs FILE) and print, for each: the peak reserved bytes, the memory wasted at that",
        "peak (reserved but not allocated), retries, the first OOM under the limit, and the least",
        "memory with which the whole trace completes (a search over the limit). It answers",
        "'which setting avoids this OOM, and by how much'.",
        NULL,
};

static char **read_configs(const char *path, size_t *n)
{
	FILE *f = fopen(path, "r");
	char line[1024], **out = NULL;
	size_t cap = 0;

	size_t lineno = 0;

	struct stat st;

	*n = 0;
	if (!f)
		ms_die(MS_EXIT_ERROR, "%s: cannot open: %s", path, strerror(errno));
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode))
		ms_die(MS_EXIT_ERROR, "%s: is a directory", path);
	for (int c = 0; c != EOF;) {
		size_t l = 0;
		struct ms_alloc_conf conf;
		struct ms_diag d = MS_DIAG_INIT;
		lineno++;
		/* one line: printable ASCII (a PYTORCH_CUDA_ALLOC_CONF is), tabs, a CR before LF */
		while ((c = getc(f)) != EOF && c != '\n') {
			if (c == '\r')
				continue;
			if ((c < 0x20 && c != '\t') || c > 0x7e)
				ms_die(MS_EXIT_USAGE, "%s, line %zu: not text (byte 0x%02x)", path,
				       lineno, (unsigned)c);
			if (l + 1 == sizeof(line))
				ms_die(MS_EXIT_USAGE, "%s, line %zu: longer than %zu characters",
				       path, lineno, sizeof(line) - 1);
			line[l++] = (char)c;
		}
		line[l] = 0;
		/* a comment runs from '#' to the end of the line (no setting has one); then the
		 * blanks around the setting go */
		if (strchr(line, '#'))
			l = (size_t)(strchr(line, '#') - line);
		while (l && (line[l - 1] == ' ' || line[l - 1] == '\t'))
			l--;
		line[l] = 0;
		size_t lead = strspn(line, " \t");
		memmove(line, line + lead, l - lead + 1);
		l -= lead;
		if (!l)
			continue; /* blank, or a comment */
		/* a setting the model cannot read is the user's mistake, found before any replay */
		ms_alloc_conf_init(&conf);
		if (strcmp(line, "recorded") && ms_alloc_conf_parse(&conf, line, &d))
			ms_die(MS_EXIT_USAGE, "%s, line %zu: %s", path, lineno,
			       d.msg[0] ? d.msg : "not a PYTORCH_CUDA_ALLOC_CONF");
		if (ms_grow(&out, &cap, *n + 1, sizeof(*out)))
			ms_die(MS_EXIT_ERROR, "out of memory");
		/* "recorded" stands for the trace's own setting */
		out[(*n)++] = strcmp(line, "recorded") == 0 ? NULL : ms_strndup(line, l);
	}
	if (ferror(f))
		ms_die(MS_EXIT_ERROR, "%s: cannot read: %s", path, strerror(errno));
	fclose(f);
	if (!*n)
		ms_die(MS_EXIT_USAGE,
		       "%s: no setting in it (one PYTORCH_CUDA_ALLOC_CONF a line, or "
		       "'recorded')",
		       path);
	return out;
}

/*
 * a - b as a size, "-" before it where b is larger: requested bytes exceed allocated ones while
 * frees wait for their streams (PyTorch counts a block's requested bytes until it is reused).
 */
static const char *signed_size(char *buf, size_t cap, uint64_t a, uint64_t b)
{
	if (a >= b)
		return ms_format_size(buf, cap, a - b);
	buf[0] = '-';
	ms_format_size(buf + 1, cap - 1, b - a);
	return buf;
}

static int went_on(const struct ms_replay_result *r)
{
	return r->missed_ooms_went_on != 0;
}

static int reuse_as_recorded(const struct ms_replay_result *r)
{
	return ms_replay_reuse_as_recorded(r);
}

/* The settings whose replay is so (pred), named after head, then why, once, in brackets. */
static void name_rows(const struct ms_whatif_row *rows, size_t n,
                      int (*pred)(const struct ms_replay_result *), const char *head,
                      const char *why)
{
	int said = 0;

	for (size_t k = 0; k < n; k++) {
		if (rows[k].s || !pred(&rows[k].r))
			continue;
		if (said++)
			printf(", ");
		else
			printf("\n%s: ", head);
		printf("%s", rows[k].conf ? rows[k].conf : "(recorded)");
	}
	if (said)
		printf("\n(%s)\n", why);
}

/* A row's setting as the table names it: the recorded row says where its setting came from. */
static const char *row_name(const struct ms_whatif_row *j, char *buf, size_t cap)
{
	if (j->conf)
		snprintf(buf, cap, "%s", j->conf);
	else if (j->r.settings_recorded)
		snprintf(buf, cap, "(recorded)%s%s", j->r.alloc_conf[0] ? " " : "",
		         j->r.alloc_conf);
	else if (j->r.expandable_seen)
		snprintf(buf, cap, "(not recorded; seen in the trace) %s", j->r.alloc_conf);
	else
		snprintf(buf, cap, "(not recorded: the defaults)");
	return buf;
}

/* Why each setting would or would not have saved the job: the rows of one answer and reason
 * together, in the table's order */
static void print_survival(const struct ms_whatif_row *rows, const struct ms_survival *sv, size_t n)
{
	char *done = ms_calloc(n ? n : 1, 1), name[600];
	if (!done)
		ms_die(MS_EXIT_ERROR, "out of memory");
	printf("\nsurvives: would the job have finished under it?\n");
	for (size_t k = 0; k < n; k++) {
		if (done[k] || rows[k].s)
			continue;
		printf("  %s: %s\n    ", ms_survives_name(sv[k].survives), sv[k].why);
		for (size_t i = k, said = 0; i < n; i++) {
			if (done[i] || rows[i].s || sv[i].survives != sv[k].survives ||
			    strcmp(sv[i].why, sv[k].why))
				continue;
			done[i] = 1;
			printf("%s%s", said++ ? ", " : "", row_name(&rows[i], name, sizeof(name)));
		}
		printf("\n");
	}
	ms_free(done);
}

/* The matrix as text, under label. */
static void print_report(const struct ms_whatif_report *r, const char *label)
{
	char b1[32], b2[32], b3[32], b4[32];
	size_t k;
	printf("%s: %zu settings%s%s\n", label, r->n_rows, r->limit ? ", limit " : "",
	       r->limit ? ms_format_size(b1, sizeof(b1), r->limit) : "");
	if (r->v.has_oom || r->v.death.died)
		printf("  %s\n", r->v.headline);
	if (r->lim.inferred)
		printf("  the limit is inferred (the recorded OOM had room on the device): "
		       "between %s and %s; --limit sets it\n",
		       ms_format_size(b1, sizeof(b1), r->lim.lo),
		       ms_format_size(b2, sizeof(b2), r->lim.hi));
	if (r->device_memory_source == MS_DEVMEM_FROM_OOM)
		printf("  the device's size is not recorded: %s is what PyTorch could use "
		       "at the "
		       "recorded OOM (memory outside PyTorch took the rest); "
		       "--device-memory "
		       "sets it\n",
		       ms_format_size(b1, sizeof(b1), r->device_memory));
	if (r->mid_run)
		printf("  the trace starts mid-run: every setting is replayed from the "
		       "state "
		       "rebuilt before its first event, kept as it was; peaks are from "
		       "there on\n");
	if (r->device_memory_source == MS_DEVMEM_UNKNOWN)
		printf("  the device's size is not recorded and no OOM bounds it: replays "
		       "are "
		       "on an unbounded device (--device-memory sets it)\n");
	putchar('\n');
	int w = 10;
	for (k = 0; k < r->n_rows; k++) {
		char name[600];
		int l = (int)strlen(row_name(&r->rows[k], name, sizeof(name)));
		if (l > w)
			w = l < 80 ? l : 80;
	}
	printf("%-*s %13s %13s %12s %7s %11s %13s %9s\n", w, "setting", "peak reserved",
	       "waste at peak", "rounding", "retries", "first OOM", "min memory", "survives");
	for (k = 0; k < r->n_rows; k++) {
		struct ms_whatif_row *j = &r->rows[k];
		char name[600], oom[24], pk[40], mm[40];
		row_name(j, name, sizeof(name));
		if (j->s) {
			printf("%-*s error: %s\n", w, name, j->err);
			continue;
		}
		if (j->r.has_oom)
			snprintf(oom, sizeof(oom), "event %llu",
			         (unsigned long long)j->r.first_oom.index);
		else
			snprintf(oom, sizeof(oom), "-");
		/* a mid-run trace: from its first event on, at least */
		snprintf(pk, sizeof(pk), "%s%s", r->mid_run ? ">=" : "",
		         ms_format_size(b1, sizeof(b1),
		                        (uint64_t)j->r.stats.reserved_bytes[0].peak));
		if (j->min_memory)
			snprintf(mm, sizeof(mm), "%s%s", r->mid_run ? ">=" : "",
			         ms_format_size(b3, sizeof(b3), j->min_memory));
		printf("%-*s %13s %13s %12s %7llu %11s %13s %9s\n", w, name, pk,
		       ms_format_size(b2, sizeof(b2),
		                      (uint64_t)j->r.stats.reserved_bytes[0].peak -
		                              j->r.allocated_at_peak_reserved),
		       signed_size(b4, sizeof(b4), j->r.allocated_at_peak_reserved,
		                   j->r.requested_at_peak_reserved),
		       (unsigned long long)j->r.stats.num_alloc_retries, oom,
		       j->min_memory ? mm : "never", ms_survives_name(r->v.sv[k].survives));
	}
	print_survival(r->rows, r->v.sv, r->n_rows);
	name_rows(r->rows, r->n_rows, went_on, "served a recorded OOM the job went on from",
	          "the job caught the error and went on without the memory: past it the "
	          "replay\nfollows what the job did then, not what it would have done with "
	          "the memory;\nits later requests may not fit");
	name_rows(r->rows, r->n_rows, reuse_as_recorded, "replayed as recorded",
	          "graph_capture_record_stream_reuse: a free that waits on other "
	          "streams\n(record_stream) during a CUDA graph capture completes where the "
	          "trace has it;\nwhen the other setting would complete it depends on the "
	          "graph's dependencies\nand the record_stream calls, which no trace holds");
	printf("\nwaste at peak: the peak of reserved memory minus the most allocated "
	       "while it\n"
	       "stood there (reserved but never in use at once); rounding: allocated "
	       "minus\n"
	       "requested bytes at that moment (block rounding and unsplit remainders; "
	       "below\n"
	       "0 while frees wait for their streams);\n"
	       "min memory: the least limit with which every allocation succeeds, the "
	       "recorded\n"
	       "OOMs included (to 2 MiB or 0.5%%, whichever is coarser).\n");
	if (r->mid_run)
		printf(">=: the trace starts mid-run: the peak from its first event on, "
		       "and "
		       "the least\nmemory for that part of the run; the job's own may have "
		       "been higher before.\n");
}

/* The matrix for one device of t; text on stdout or *jout. MS_EXIT_OK or MS_EXIT_ERROR. */
static int whatif_one(struct ms_replay_cli *c, const char *path, const struct ms_trace *t,
                      const char *label, char **user, size_t nrows, unsigned jobs, int json,
                      cJSON **jout, int *ended_by_oom)
{
	struct ms_replay_result first;
	struct ms_limit_range lim;
	struct ms_whatif_report r;
	struct ms_diag d = MS_DIAG_INIT;
	ms_status s;

	if (ms_replay_cli_run_reported(c, path, &first, &lim))
		return MS_EXIT_ERROR;
	s = ms_whatif_report_run(t, &c->o, &first, &lim, (const char *const *)user, nrows, jobs, &r,
	                         &d);
	ms_replay_result_release(&first);
	if (s) {
		ms_whatif_report_release(&r);
		ms_die(MS_EXIT_ERROR, "%s", d.msg);
	}
	/* the replay with the recorded settings ran out where the job did not: exit 3, as replay */
	*ended_by_oom |= r.ended_by_oom;
	if (json && !(*jout = ms_whatif_report_json(&r, path)))
		ms_die(MS_EXIT_ERROR, "out of memory");
	else if (!json)
		print_report(&r, label);
	ms_whatif_report_release(&r);
	return MS_EXIT_OK;
}

int cmd_whatif(int argc, const char **argv)
{
	struct ms_replay_cli c;
	int n, json = 0;
	const char *configs = NULL;
	uint64_t jobs = 0;
	struct ms_opt opts[MS_REPLAY_OPTS_MAX + 2];
	size_t nrows, nd;
	const struct ms_trace *t;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_replay_opts base;
	char **user = NULL;
	size_t nuser = 0, k;
	uint32_t *devs;
	struct ms_json_devices jd;
	int rc = MS_EXIT_OK, oom = 0;
	ms_status s;

	ms_replay_cli_init(&c, opts, &json);
	ms_opts_drop(opts, "backend");
	ms_opts_drop(opts, "alloc-conf");
	for (k = 0; opts[k].type != MS_OPT_T_END; k++)
		;
	opts[k++] = (struct ms_opt)MS_OPT_STRING(
	        0, "configs", &configs, "FILE",
	        "settings to try, one per line ('recorded' for the trace's; # comments)");
	opts[k++] = (struct ms_opt)MS_OPT_U64('j', "jobs", &jobs, "N", "threads (default: CPUs)");
	opts[k] = (struct ms_opt)MS_OPT_END();
	n = ms_parse_options(argc, argv, opts, usage);
	if (n != 1)
		ms_usage_error(opts, usage, n ? "one trace at a time" : "no trace given");
	ms_replay_cli_check(&c, opts, usage);

	/* read whole once: its devices and every replay come from it */
	if ((s = ms_replay_cli_trace_held(argv[0], &t, &d))) {
		ms_report(argv[0], s, &d);
		return MS_EXIT_ERROR;
	}
	if (ms_replay_cli_devices(&c, argv[0], "whatif", &devs, &nd))
		return MS_EXIT_ERROR;
	if (configs)
		user = read_configs(configs, &nuser);
	nrows = configs ? nuser : ms_whatif_n_default_configs;
	ms_json_devices_begin(&jd, argv[0], json ? nd : 0);
	base = c.o;
	for (k = 0; k < nd && rc == MS_EXIT_OK; k++) {
		char label[MS_LABEL_MAX];
		cJSON *o = NULL;
		c.o = base; /* an inferred limit or a rebuilt state belongs to one device */
		c.o.device = devs[k];
		if (k && !json)
			putchar('\n');
		rc = whatif_one(&c, argv[0], t,
		                ms_replay_cli_label(argv[0], devs[k], nd, label, sizeof(label)),
		                user, nrows, (unsigned)(jobs > 1024 ? 1024 : jobs), json, &o, &oom);
		ms_replay_cli_release(&c);
		ms_json_devices_add(&jd, devs[k], o);
	}
	ms_json_devices_end(&jd, rc == MS_EXIT_OK, NULL, rc == MS_EXIT_OK);
	for (k = 0; k < nuser; k++)
		ms_free(user[k]);
	ms_free(user);
	ms_free(devs);
	return rc == MS_EXIT_OK && oom ? MS_EXIT_OOM : rc;
}
