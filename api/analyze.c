/*
 * The library's way in (memsnap/analyze.h): an input read once, and the questions the commands
 * answer, each written by its result's serializer (json/).
 */
#include "memsnap/analyze.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/json.h"
#include "common/size.h"
#include "explain/check.h"
#include "explain/diff.h"
#include "explain/report.h"
#include "explain/verdict.h"
#include "explain/whatif_report.h"
#include "analysis/file_info.h"
#include "analysis/stats_view.h"
#include "analysis/trace_stats.h"
#include "json/check.h"
#include "json/diff.h"
#include "json/explain.h"
#include "json/info.h"
#include "json/replay.h"
#include "json/stats.h"
#include "json/verify.h"
#include "json/whatif.h"
#include "parse/devices.h"
#include "parse/trace.h"
#include "replay/alloc_conf.h"
#include "replay/run.h"
#include "replay/site.h"
#include "replay/verify.h"

enum { ASK_OK = 0, ASK_ERROR = 1, ASK_USAGE = 2, ASK_OOM = 3, ASK_DIVERGED = 4, ASK_BUDGET = 5 };

struct ms_file {
	char *path;
	struct ms_trace *t;
	struct ms_source_info si; /* how it was read: its kind, size, frames */
	struct ms_diag read;      /* the read's warnings (a file cut short) */
};

/* What a question is asked with: the command's flags. */
struct ask {
	struct ms_replay_opts o;
	uint64_t device; /* UINT64_MAX: every device with allocations */
	unsigned jobs;
	uint32_t site_depth;
	const char **configs; /* whatif's settings (config=, each once); NULL: the default matrix */
	size_t n_configs;
	struct ms_check_budgets budgets; /* check's */
	uint64_t top;                    /* diff's rows a table */
	unsigned given;                  /* the options given (1 << enum opt) */
	struct ms_windows_asked windows; /* from=, to=, windows= (o.windows points here) */
	int reserved_log;                /* explain and check read the first replay's */
	const char *from, *to;           /* as given */
	struct ms_user_cats *user_cats;  /* category=, categories= (NULL: none) */
};

static void ask_release(struct ask *a)
{
	ms_free(a->configs);
	ms_user_cats_free(a->user_cats);
	a->configs = NULL;
	a->user_cats = NULL;
}

/* The options, and which questions take them (as the commands take their flags). */
enum opt {
	O_DEVICE,
	O_LIMIT,
	O_FRACTION,
	O_DEVMEM,
	O_CONF,
	O_JOBS,
	O_DEPTH,
	O_CONFIG,
	O_MAX_RESERVED,
	O_MAX_ALLOCATED,
	O_MAX_FRAG,
	O_MAX_GPS,
	O_BASELINE,
	O_MAX_GROWTH,
	O_ALLOW_OOM,
	O_ALLOW_CUT,
	O_TOP,
	O_FROM,
	O_TO,
	O_WINDOWS,
	O_AT,
	O_CATEGORY,
	O_CATEGORIES,
	O_N
};
static const char *const opt_name[O_N] = {"device",
                                          "limit",
                                          "memory_fraction",
                                          "device_memory",
                                          "alloc_conf",
                                          "jobs",
                                          "site_depth",
                                          "config",
                                          "max_peak_reserved",
                                          "max_peak_allocated",
                                          "max_fragmentation",
                                          "max_growth_per_step",
                                          "baseline",
                                          "max_growth",
                                          "allow_oom",
                                          "allow_cut_short",
                                          "top",
                                          "from",
                                          "to",
                                          "windows",
                                          "at",
                                          "category",
                                          "categories"};
#define CHECK_OPTS                                                                           \
	(1u << O_MAX_RESERVED | 1u << O_MAX_ALLOCATED | 1u << O_MAX_FRAG | 1u << O_MAX_GPS | \
	 1u << O_BASELINE | 1u << O_MAX_GROWTH | 1u << O_ALLOW_OOM | 1u << O_ALLOW_CUT)
#define REPLAY_OPTS \
	(1u << O_DEVICE | 1u << O_LIMIT | 1u << O_FRACTION | 1u << O_DEVMEM | 1u << O_CONF)
#define WINDOW_OPTS   (1u << O_FROM | 1u << O_TO | 1u << O_AT)
#define CATEGORY_OPTS (1u << O_CATEGORY | 1u << O_CATEGORIES)
static const struct {
	const char *q;
	unsigned takes;
} questions[] = {
        {"info", 0},
        {"stats", 1u << O_DEVICE | 1u << O_DEPTH | WINDOW_OPTS | 1u << O_WINDOWS | CATEGORY_OPTS},
        {"replay", REPLAY_OPTS | WINDOW_OPTS | 1u << O_WINDOWS},
        {"verify", REPLAY_OPTS},
        {"explain", REPLAY_OPTS | WINDOW_OPTS | 1u << O_JOBS | 1u << O_DEPTH | CATEGORY_OPTS},
        {"whatif", (REPLAY_OPTS & ~(1u << O_CONF)) | 1u << O_JOBS | 1u << O_CONFIG},
        {"check", REPLAY_OPTS | CHECK_OPTS | WINDOW_OPTS},
        {"diff", REPLAY_OPTS | 1u << O_DEPTH | 1u << O_TOP | CATEGORY_OPTS},
};

static int say(char *msg, size_t cap, int rc, const char *fmt, ...) MS_PRINTF(4, 5);

static int say(char *msg, size_t cap, int rc, const char *fmt, ...)
{
	va_list ap;

	if (msg && cap) {
		va_start(ap, fmt);
		vsnprintf(msg, cap, fmt, ap);
		va_end(ap);
	}
	return rc;
}

int ms_file_open(const char *path, ms_file **in, char *msg, size_t cap)
{
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_file *x;
	ms_status s;

	if (!in)
		return say(msg, cap, ASK_ERROR, "no place for the file (in is NULL)");
	*in = NULL;
	if (!path)
		return say(msg, cap, ASK_ERROR, "no path given");
	if (!(x = ms_calloc(1, sizeof(*x))) || !(x->path = ms_strndup(path, strlen(path)))) {
		ms_free(x);
		return say(msg, cap, ASK_ERROR, "%s: out of memory", path);
	}
	x->read = (struct ms_diag)MS_DIAG_INIT;
	if ((s = ms_trace_load(path, NULL, &x->t, &x->si, &x->read))) {
		d = x->read;
		say(msg, cap, ASK_ERROR, "%s: %s", path, d.msg[0] ? d.msg : ms_strerror(s));
		ms_file_close(x);
		return ASK_ERROR;
	}
	*in = x;
	return ASK_OK;
}

void ms_file_close(ms_file *in)
{
	if (!in)
		return;
	ms_trace_free(in->t);
	ms_free(in->path);
	ms_free(in);
}

const char *ms_file_warning(const ms_file *in)
{
	return in && in->read.warnings ? in->read.warning : NULL;
}

void ms_json_free(char *json)
{
	cJSON_free(json);
}

static int option(struct ask *a, const char *opt, unsigned takes, char *msg, size_t cap)
{
	const char *eq = strchr(opt, '='), *v, *why;
	size_t n = eq ? (size_t)(eq - opt) : 0;
	uint64_t x;
	char *end;

	for (const char *c = opt; *c; c++)
		if ((unsigned char)*c < ' ' || *c == 0x7f) /* the message is one line */
			return say(msg, cap, ASK_USAGE, "an option with a control character");
	if (!eq)
		return say(msg, cap, ASK_USAGE, "option '%s': not name=value", opt);
	v = eq + 1;
	for (unsigned k = 0; k < O_N; k++)
		if (n == strlen(opt_name[k]) && !memcmp(opt, opt_name[k], n))
			a->given |= 1u << k;
#define IS(name) (n == strlen(name) && !memcmp(opt, name, n))
	if (IS("max_peak_reserved") || IS("max_peak_allocated") || IS("max_growth_per_step")) {
		if ((why = ms_size_parse(v, &x)))
			return say(msg, cap, ASK_USAGE, "option '%s': %s", opt, why);
		if (!x) /* as the command's flags: 0 would be no budget */
			return say(msg, cap, ASK_USAGE, "option '%s': must be more than 0 bytes",
			           opt);
		if (IS("max_peak_reserved"))
			a->budgets.max_reserved = x;
		else if (IS("max_peak_allocated"))
			a->budgets.max_allocated = x;
		else
			a->budgets.max_growth_per_step = x, a->budgets.growth_per_step_given = 1;
	} else if (IS("max_fragmentation") || IS("max_growth")) {
		double f = strtod(v, &end);
		if (IS("max_growth") && *end == '%')
			end++;
		if (!*v || *end || !(f >= 0) || (IS("max_fragmentation") && f > 1))
			return say(msg, cap, ASK_USAGE, "option '%s': %s", opt,
			           IS("max_growth") ? "a percentage, e.g. 5%"
			                            : "a ratio from 0 to 1");
		if (IS("max_growth"))
			a->budgets.max_growth = f;
		else
			a->budgets.max_waste = f;
	} else if (IS("baseline")) {
		if (!*v)
			return say(msg, cap, ASK_USAGE, "option 'baseline=': no file");
		a->budgets.baseline = v;
	} else if (IS("allow_oom") || IS("allow_cut_short")) {
		int yes = !strcmp(v, "1") || !strcmp(v, "true");
		if (!yes && strcmp(v, "0") && strcmp(v, "false"))
			return say(msg, cap, ASK_USAGE, "option '%s': true or false", opt);
		if (IS("allow_oom"))
			a->budgets.allow_oom = yes;
		else
			a->budgets.allow_cut_short = yes;
	} else if (IS("limit") || IS("device_memory")) {
		if ((why = ms_size_parse(v, &x)))
			return say(msg, cap, ASK_USAGE, "option '%s': %s", opt, why);
		if (!x)
			return say(msg, cap, ASK_USAGE, "option '%s': must be more than 0 bytes",
			           opt);
		if (IS("limit"))
			a->o.limit = x, a->o.limit_given = x != 0;
		else
			a->o.device_memory = x;
	} else if (IS("memory_fraction")) {
		double f = strtod(v, &end);
		if (*end || !(f > 0 && f <= 1))
			return say(msg, cap, ASK_USAGE, "option '%s': not a number in (0, 1]", opt);
		a->o.fraction = f;
	} else if (IS("alloc_conf")) {
		struct ms_alloc_conf ac;
		struct ms_diag d = MS_DIAG_INIT;
		ms_alloc_conf_init(&ac);
		if (ms_alloc_conf_parse(&ac, v, &d))
			return say(msg, cap, ASK_USAGE, "option '%s': %s", opt, d.msg);
		a->o.alloc_conf = v;
	} else if (IS("config")) { /* whatif: a setting to try; "recorded": the trace's own */
		struct ms_alloc_conf ac;
		struct ms_diag d = MS_DIAG_INIT;
		const char **c;
		ms_alloc_conf_init(&ac);
		if (!*v)
			return say(
			        msg, cap, ASK_USAGE,
			        "option 'config=': no setting (config=recorded for the trace's)");
		if (strcmp(v, "recorded") && ms_alloc_conf_parse(&ac, v, &d))
			return say(msg, cap, ASK_USAGE, "option '%s': %s", opt, d.msg);
		if (!(c = ms_realloc(a->configs, (a->n_configs + 1) * sizeof(*c))))
			return say(msg, cap, ASK_ERROR, "out of memory");
		a->configs = c;
		a->configs[a->n_configs++] = strcmp(v, "recorded") ? v : NULL;
	} else if (IS("from") || IS("to")) {
		struct ms_window_end *e = IS("from") ? &a->windows.from : &a->windows.to;
		if ((why = ms_window_end_parse(v, e)))
			return say(msg, cap, ASK_USAGE, "option '%s': %s", opt, why);
		a->windows.one = 1;
		*(IS("from") ? &a->from : &a->to) = v;
		a->o.windows = &a->windows;
	} else if (IS("at")) { /* the moment right after one event */
		if ((why = ms_window_end_parse(v, &a->windows.from)))
			return say(msg, cap, ASK_USAGE, "option '%s': %s", opt, why);
		a->windows.one = a->windows.at = 1;
		a->from = v;
		a->o.windows = &a->windows;
	} else if (IS("category") || IS("categories")) {
		char why2[1400];
		ms_status s;
		if (!a->user_cats && !(a->user_cats = ms_user_cats_new()))
			return say(msg, cap, ASK_ERROR, "out of memory");
		s = IS("category") ? ms_user_cats_add(a->user_cats, v, why2, sizeof(why2))
		                   : ms_user_cats_load(a->user_cats, v, why2, sizeof(why2));
		if (s == MS_ERR_NOMEM)
			return say(msg, cap, ASK_ERROR, "out of memory");
		if (s)
			return say(msg, cap, s == MS_ERR_IO ? ASK_ERROR : ASK_USAGE,
			           "option '%s=': %s", IS("category") ? "category" : "categories",
			           why2);
	} else if (IS("windows")) {
		if (!*v)
			return say(msg, cap, ASK_USAGE, "option 'windows=': an empty prefix");
		a->windows.prefix = v;
		a->o.windows = &a->windows;
	} else if (IS("device") || IS("jobs") || IS("site_depth") || IS("top")) {
		unsigned long long u = strtoull(v, &end, 10);
		if (!*v || *end || *v == '-')
			return say(msg, cap, ASK_USAGE, "option '%s': not a number", opt);
		if (IS("device") && u > 65535)
			return say(msg, cap, ASK_USAGE, "option '%s': a device below 65536", opt);
		if (IS("site_depth") && (u < 1 || u > 64))
			return say(msg, cap, ASK_USAGE, "option '%s': 1 to 64", opt);
		if (IS("top") && (u < 1 || u > 100000))
			return say(msg, cap, ASK_USAGE, "option '%s': 1 to 100000", opt);
		if (IS("device"))
			a->device = u;
		else if (IS("jobs"))
			a->jobs = u > 1024 ? 1024 : (unsigned)u;
		else if (IS("top"))
			a->top = u;
		else
			a->site_depth = (uint32_t)u;
	} else {
		char names[512];
		size_t at = 0;
		names[0] = 0;
		for (unsigned k = 0; k < O_N && at < sizeof(names); k++)
			if (takes & 1u << k)
				at += (size_t)snprintf(names + at, sizeof(names) - at, "%s%s",
				                       at ? ", " : "", opt_name[k]);
		return say(msg, cap, ASK_USAGE, "option '%s': no such option (%s%s)", opt,
		           names[0] ? "this question takes: " : "this question takes none", names);
	}
#undef IS
	return ASK_OK;
}

/* The devices a question covers: those with allocations, or the one asked (an error if it has
 * none). */
static int devices(const struct ms_file *in, const struct ask *a, uint32_t **out, size_t *n,
                   char *msg, size_t cap)
{
	struct ms_devices ds;

	*out = NULL;
	*n = 0;
	if (ms_devices_of(in->t, &ds))
		return say(msg, cap, ASK_ERROR, "%s: out of memory", in->path);
	if (!(*out = ms_calloc(ds.n ? ds.n : 1, sizeof(**out)))) {
		ms_devices_release(&ds);
		return say(msg, cap, ASK_ERROR, "%s: out of memory", in->path);
	}
	for (size_t i = 0; i < ds.n; i++)
		if (ds.d[i].allocs && (a->device == UINT64_MAX || ds.d[i].device == a->device))
			(*out)[(*n)++] = ds.d[i].device;
	ms_devices_release(&ds);
	if (*n)
		return ASK_OK;
	ms_free(*out);
	*out = NULL;
	if (a->device != UINT64_MAX)
		return say(msg, cap, ASK_ERROR, "%s: no allocator events on device %llu", in->path,
		           (unsigned long long)a->device);
	return say(msg, cap, ASK_ERROR,
	           "%s: no allocator events: nothing to replay (a snapshot without a trace?)",
	           in->path);
}

/* One device's replay under a's options into *r, with what it decided in *out. */
static ms_status replay_device(const struct ms_file *in, const struct ask *a, uint32_t dev,
                               struct ms_replay_outcome *out, struct ms_replay_result *r,
                               struct ms_diag *d)
{
	struct ms_replay_request q;
	char why[512];
	ms_status s;

	memset(&q, 0, sizeof(q));
	q.path = in->path;
	q.trace = in->t;
	q.o = a->o;
	q.o.device = dev;
	q.o.reserved_log = a->reserved_log;
	q.backend = MS_REPLAY_SIM;
	memset(out, 0, sizeof(*out));
	if ((s = ms_replay_request_run(&q, out, r, d)))
		return s;
	if (a->o.windows &&
	    ms_window_missing(&a->windows, a->from, a->to, r->events_total,
	                      r->ended_by_oom ? r->end_oom_index : UINT64_MAX, r->windows,
	                      r->n_windows, r->window_marks_seen, why, sizeof(why)))
		return ms__diag_set(d, MS_ERR_INVALID_ARG, -1, -1, "%s", why);
	return MS_OK;
}

static cJSON *ask_replay(const struct ms_file *in, const struct ask *a, uint32_t dev, int *flags,
                         struct ms_diag *d)
{
	struct ms_replay_outcome out;
	struct ms_replay_result r;
	struct ms_oom_verdict ov;
	struct ms_death death;
	int has_death;
	cJSON *o = NULL;

	if (!replay_device(in, a, dev, &out, &r, d)) {
		ms_verdict_oom_of_replay(in->t, &out.o, &r, &out.lim, &ov, &death, &has_death);
		o = ms_replay_result_json(in->path, dev, &r, &out.lim, NULL, MS_FRAMES_USER,
		                          r.has_oom ? &ov : NULL);
		*flags |= r.ended_by_oom; /* 1: ran out of memory (exit 3) */
		if (!o)
			ms__diag_set(d, MS_ERR_NOMEM, -1, -1, "out of memory");
	}
	ms_replay_result_release(&r);
	ms_replay_outcome_release(&out);
	return o;
}

static cJSON *ask_explain(const struct ms_file *in, const struct ask *a, uint32_t dev, int *flags,
                          struct ms_diag *d)
{
	struct ms_replay_outcome out;
	struct ms_replay_result first;
	struct ms_explain_report rep;
	cJSON *o = NULL;

	if (replay_device(in, a, dev, &out, &first, d)) {
		ms_replay_result_release(&first);
		ms_replay_outcome_release(&out);
		return NULL;
	}
	/* the report owns the first replay from here */
	if (!ms_explain_report_run(in->t, &out.o, &first, &out.lim, a->jobs, a->site_depth,
	                           a->user_cats, NULL, &rep, d)) {
		o = ms_explain_report_json(&rep, in->path);
		*flags |= rep.first.ended_by_oom;
		if (!o)
			ms__diag_set(d, MS_ERR_NOMEM, -1, -1, "out of memory");
	}
	ms_explain_report_release(&rep);
	ms_replay_outcome_release(&out);
	return o;
}

/* verify: the model against the recording; 2 in *flags where the device diverges (exit 4) */
static cJSON *ask_verify(const struct ms_file *in, const struct ask *a, uint32_t dev, int *flags,
                         struct ms_diag *d)
{
	struct ms_replay_outcome out;
	struct ms_replay_result r;
	struct ms_verify v;
	cJSON *o = NULL;

	if (!replay_device(in, a, dev, &out, &r, d)) {
		if (r.other_allocator[0]) {
			ms__diag_set(
			        d, MS_ERR_UNSUPPORTED, -1, -1,
			        "a %s snapshot: memsnap models PyTorch's CUDA caching allocator "
			        "only, so there is nothing to verify it against",
			        r.other_allocator);
		} else {
			ms_verify_compare(&r, NULL, &v);
			o = ms_verify_json(in->path, dev, &r, &v, &out.lim);
			*flags |= v.identical ? 0 : 2;
			if (!o)
				ms__diag_set(d, MS_ERR_NOMEM, -1, -1, "out of memory");
		}
	}
	ms_replay_result_release(&r);
	ms_replay_outcome_release(&out);
	return o;
}

static cJSON *ask_whatif(const struct ms_file *in, const struct ask *a, uint32_t dev, int *flags,
                         struct ms_diag *d)
{
	struct ms_replay_outcome out;
	struct ms_replay_result first;
	struct ms_whatif_report rep;
	cJSON *o = NULL;

	memset(&rep, 0, sizeof(rep));
	if (!replay_device(in, a, dev, &out, &first, d) &&
	    !ms_whatif_report_run(in->t, &out.o, &first, &out.lim, a->configs,
	                          a->configs ? a->n_configs : ms_whatif_n_default_configs, a->jobs,
	                          &rep, d)) {
		o = ms_whatif_report_json(&rep, in->path);
		*flags |= rep.ended_by_oom;
		if (!o)
			ms__diag_set(d, MS_ERR_NOMEM, -1, -1, "out of memory");
	}
	ms_whatif_report_release(&rep);
	ms_replay_result_release(&first);
	ms_replay_outcome_release(&out);
	return o;
}

/* check: the gate's figures against the budgets; 4 in *flags where one is exceeded (exit 5) */
static cJSON *ask_check(const struct ms_file *in, const struct ask *a, uint32_t dev, int *flags,
                        struct ms_diag *d)
{
	struct ms_replay_outcome out, bout;
	struct ms_replay_result r, br;
	struct ms_check_figures f, bf;
	struct ms_check_result res;
	struct ms_file *base = NULL;
	char bmsg[512];
	cJSON *o = NULL;
	ms_status s;

	memset(&bout, 0, sizeof(bout));
	memset(&br, 0, sizeof(br));
	if ((s = replay_device(in, a, dev, &out, &r, d)))
		goto done;
	if (!r.events_replayed) {
		ms__diag_set(d, MS_ERR_INVALID_ARG, -1, -1,
		             "no allocator events on device %u to compare with", dev);
		goto done;
	}
	if ((s = ms_check_figures_of(in->t, &out.o, &r, &out.lim, a->budgets.growth_per_step_given,
	                             &f)))
		goto done;
	if (a->budgets.baseline) { /* a baseline: device with device, as the command does */
		if (ms_file_open(a->budgets.baseline, &base, bmsg, sizeof(bmsg))) {
			ms__diag_set(d, MS_ERR_IO, -1, -1, "%s", bmsg);
			goto done;
		}
		struct ask ba = *a;
		uint32_t *bdevs = NULL;
		size_t nb = 0;
		ba.device = UINT64_MAX;
		if (devices(base, &ba, &bdevs, &nb, bmsg, sizeof(bmsg))) {
			ms__diag_set(d, MS_ERR_INVALID_ARG, -1, -1, "%s", bmsg);
			goto done;
		}
		/* a baseline of one device is compared with each device; else device with device */
		uint32_t bdev = nb == 1 ? bdevs[0] : dev;
		ms_free(bdevs);
		if ((s = replay_device(base, a, bdev, &bout, &br, d)) ||
		    (s = ms_check_figures_of(base->t, &bout.o, &br, &bout.lim, 0, &bf)))
			goto done;
	}
	ms_check_judge(&a->budgets, &f, a->budgets.baseline ? &bf : NULL, &res);
	*flags |= res.n_exceeded ? 4 : 0;
	if (!(o = ms_check_json(in->path, dev, &a->budgets, &f, &res)))
		ms__diag_set(d, MS_ERR_NOMEM, -1, -1, "out of memory");
done:
	ms_replay_result_release(&br);
	ms_replay_outcome_release(&bout);
	ms_file_close(base);
	ms_replay_result_release(&r);
	ms_replay_outcome_release(&out);
	return o;
}

/* info: what the file holds, the whole of it (no device, no option) */
static int ask_info(const struct ms_file *in, size_t n_options, char **json, char *msg, size_t cap)
{
	struct ms_file_info x;
	struct ms_sink sink;
	cJSON *o = NULL;
	ms_status s;

	if (n_options)
		return say(msg, cap, ASK_USAGE, "info takes no option");
	memset(&x, 0, sizeof(x));
	ms_file_info_sink(&x, &sink);
	if (!(s = ms_trace_emit(in->t, &sink)))
		o = ms_file_info_json(in->path, &x, &in->si, &in->read);
	ms_file_info_release(&x);
	*json = o ? cJSON_Print(o) : NULL;
	cJSON_Delete(o);
	if (!*json)
		return say(msg, cap, ASK_ERROR, "%s: out of memory", in->path);
	return ASK_OK;
}

/* stats of one device (dev < 0: the file whole) into a new object, or NULL with d set */
static cJSON *stats_of(const struct ms_file *in, const struct ask *a, int64_t dev, int64_t device,
                       size_t top, uint64_t *peak, struct ms_diag *d)
{
	struct ms_stats_builder *b;
	struct ms_sink sink;
	cJSON *o = NULL;
	ms_status s;

	if ((s = ms_stats_builder_new(top, &b))) {
		ms__diag_set(d, s, -1, -1, "out of memory");
		return NULL;
	}
	if (dev >= 0)
		ms_stats_builder_only(b, (uint32_t)dev);
	if (a->o.windows)
		ms_stats_builder_windows(b, a->o.windows);
	ms_stats_builder_sink(b, &sink);
	if (!(s = ms_trace_emit(in->t, &sink)) && a->o.windows) {
		const struct ms_trace_stats *r = ms_stats_builder_result(b);
		char why[512];
		if (ms_window_missing(&a->windows, a->from, a->to, r->window_events, UINT64_MAX,
		                      r->windows, r->n_windows, r->window_marks_seen, why,
		                      sizeof(why))) {
			ms__diag_set(d, MS_ERR_INVALID_ARG, -1, -1, "%s", why);
			ms_stats_builder_free(b);
			return NULL;
		}
	}
	if (!s) {
		struct ms_stats_view v = {in->path,
		                          device,
		                          dev,
		                          &in->t->syms,
		                          ms_stats_builder_result(b),
		                          ms_source_cut_short(&in->si),
		                          top,
		                          MS_FRAMES_USER,
		                          a->site_depth,
		                          a->user_cats};
		if (!(o = ms_stats_json(&v)))
			ms__diag_set(d, MS_ERR_NOMEM, -1, -1, "out of memory");
		/* the peak a row is set against the others' median with; 0: no allocation */
		*peak = v.r->n_allocs ? ms_stats_peak(v.r) : 0;
	} else {
		ms__diag_set(d, s, -1, -1, "%s", ms_strerror(s));
	}
	ms_stats_builder_free(b);
	return o;
}

/*
 * stats: a device's object, or an array of one for each device (the command's table's rows):
 * the devices with allocator events, else (a snapshot without a trace) those with segments.
 */
static int ask_stats(const struct ms_file *in, const struct ask *a, char **json, char *msg,
                     size_t cap)
{
	struct ms_devices ds;
	struct ms_diag d = MS_DIAG_INIT;
	uint32_t devs[64];
	uint64_t peaks[64], sorted[64], median;
	size_t nd = 0, top = 10, np = 0;
	int events = 0;
	cJSON *root = NULL;

	if (ms_devices_of(in->t, &ds))
		return say(msg, cap, ASK_ERROR, "%s: out of memory", in->path);
	for (size_t i = 0; i < ds.n; i++)
		events |= ds.d[i].events > 0;
	for (size_t i = 0; i < ds.n && nd < 64; i++)
		if ((events ? ds.d[i].events > 0 : ds.d[i].segments > 0) &&
		    (a->device == UINT64_MAX || ds.d[i].device == a->device))
			devs[nd++] = ds.d[i].device;
	ms_devices_release(&ds);
	if (!nd)
		return say(msg, cap, ASK_ERROR, "%s: %s", in->path,
		           a->device != UINT64_MAX ? "nothing on the device asked"
		                                   : "no events and no segments: nothing to show");
	if (nd == 1)
		root = stats_of(in, a, a->device == UINT64_MAX ? -1 : (int64_t)devs[0], devs[0],
		                top, &peaks[0], &d);
	else if ((root = cJSON_CreateArray()))
		for (size_t k = 0; k < nd && root; k++) {
			cJSON *o = stats_of(in, a, devs[k], devs[k], top, &peaks[k], &d);
			if (!o) {
				cJSON_Delete(root);
				root = NULL;
			} else {
				cJSON_AddItemToArray(root, o);
			}
		}
	/* several rows: each peak against the median of them, as the command's table has it */
	for (size_t k = 0; root && nd > 1 && k < nd; k++)
		if (peaks[k])
			sorted[np++] = peaks[k];
	median = ms_median_u64(sorted, np);
	for (size_t k = 0; root && nd > 1 && k < nd; k++) {
		cJSON *row = cJSON_GetArrayItem(root, (int)k);
		if (median && peaks[k])
			cJSON_AddNumberToObject(row, "peak_against_median",
			                        (double)peaks[k] / (double)median - 1);
		else
			cJSON_AddNullToObject(row, "peak_against_median");
	}
	*json = root ? cJSON_Print(root) : NULL;
	cJSON_Delete(root);
	if (!*json)
		return say(msg, cap, ASK_ERROR, "%s: %s", in->path,
		           d.msg[0] ? d.msg : "out of memory");
	return ASK_OK;
}

/* a's options (the question's flags) from options[0..n), refused where question does not take
 * them. */
static int ask_options(const char *question, const char *const *options, size_t n_options,
                       struct ask *a, char *msg, size_t cap)
{
	int rc = ASK_OK;
	unsigned takes = 0;

	memset(a, 0, sizeof(*a));
	a->device = UINT64_MAX;
	a->budgets.max_waste = -1;
	a->site_depth = 1;
	a->top = 10;
	for (size_t q = 0; q < sizeof(questions) / sizeof(questions[0]); q++)
		if (!strcmp(question, questions[q].q))
			takes = questions[q].takes;
	for (size_t i = 0; i < n_options && !rc; i++)
		rc = options[i] ? option(a, options[i], takes, msg, cap)
		                : say(msg, cap, ASK_USAGE, "a NULL option");
	for (size_t q = 0; !rc && q < sizeof(questions) / sizeof(questions[0]); q++)
		if (!strcmp(question, questions[q].q) && (a->given & ~questions[q].takes))
			for (unsigned k = 0; k < O_N && !rc; k++)
				if (a->given & ~questions[q].takes & 1u << k)
					rc = say(msg, cap, ASK_USAGE, "%s takes no option %s",
					         question, opt_name[k]);
	if (!rc && !(a->given & 1u << O_BASELINE) != !(a->given & 1u << O_MAX_GROWTH))
		rc = say(msg, cap, ASK_USAGE, "baseline and max_growth go together");
	if (!rc && (a->given & 1u << O_LIMIT) && (a->given & 1u << O_FRACTION))
		rc = say(msg, cap, ASK_USAGE, "limit and memory_fraction exclude each other");
	if (!rc && (a->given & 1u << O_WINDOWS) && (a->given & WINDOW_OPTS))
		rc = say(msg, cap, ASK_USAGE, "windows takes no from, to or at");
	if (!rc && (a->given & 1u << O_AT) && (a->given & (1u << O_FROM | 1u << O_TO)))
		rc = say(msg, cap, ASK_USAGE, "at is one moment: it takes no from or to");
	if (!rc && ms_window_ends_cross(&a->windows.from, &a->windows.to))
		rc = say(msg, cap, ASK_USAGE, "to comes before from");
	return rc;
}

/*
 * The library's callers give options as name=value (limit=12GiB), not as the command's flags:
 * the error messages, made once for both, are respelled for them where they name a flag (the
 * answers stay the command's JSON, byte for byte). A flag is one where it begins a word (after
 * a space, a bracket or a quote), never inside a path.
 */
static const struct {
	const char *flag, *option;
} spelled[] = {
        {"--device-memory", "device_memory="},
        {"--memory-fraction", "memory_fraction="},
        {"--limit", "limit="},
        {"--allow-oom", "allow_oom=true"},
        {"--allow-cut-short", "allow_cut_short=true"},
        {"--max-fragmentation", "max_fragmentation="},
        {"--max-growth", "max_growth="},
        {"--from", "from="},
        {"--to", "to="},
        {"--at", "at="},
        {"--categories", "categories="},
        {"--category", "category="},
};

/* s with the flags respelled, in a new string (free; NULL: out of memory). */
static char *respell(const char *s)
{
	size_t len = strlen(s), n = 0;
	char *out = malloc(len * 2 + 1); /* no respelling is twice its flag */

	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t k = 0, fl = 0;
		int word = i == 0 || strchr(" (\"`'", s[i - 1]);
		for (; word && k < sizeof(spelled) / sizeof(spelled[0]); k++) {
			fl = strlen(spelled[k].flag);
			if (!strncmp(s + i, spelled[k].flag, fl) &&
			    !(s[i + fl] >= 'a' && s[i + fl] <= 'z') && s[i + fl] != '-')
				break;
		}
		if (word && k < sizeof(spelled) / sizeof(spelled[0])) {
			size_t ol = strlen(spelled[k].option);
			int takes = spelled[k].option[ol - 1] == '=';
			/* "--limit 12GiB": "limit=12GiB"; "--limit settles it": "limit settles it"
			 */
			int value = takes && s[i + fl] == ' ' &&
			            ((s[i + fl + 1] >= '0' && s[i + fl + 1] <= '9') ||
			             !strncmp(s + i + fl + 1, "mark:", 5));
			memcpy(out + n, spelled[k].option, ol - (takes && !value));
			n += ol - (takes && !value);
			i += fl + (value != 0);
		} else {
			out[n++] = s[i++];
		}
	}
	out[n] = 0;
	return out;
}

/* The error message in msg respelled (the answer is the command's JSON as it prints it). */
static void respell_message(char *msg, size_t cap)
{
	char *r;

	if (msg && cap && msg[0] && (r = respell(msg))) {
		snprintf(msg, cap, "%s", r);
		free(r);
	}
}

static int ask(ms_file *in, const char *question, const char *const *options, size_t n_options,
               char **json, char *msg, size_t cap);

int ms_ask(ms_file *in, const char *question, const char *const *options, size_t n_options,
           char **json, char *msg, size_t cap)
{
	int rc = ask(in, question, options, n_options, json, msg, cap);

	respell_message(msg, cap);
	return rc;
}

static int ask(ms_file *in, const char *question, const char *const *options, size_t n_options,
               char **json, char *msg, size_t cap)
{
	cJSON *(*fn)(const struct ms_file *, const struct ask *, uint32_t, int *, struct ms_diag *);
	struct ask a;
	uint32_t *devs;
	size_t nd;
	cJSON *root = NULL, *byd = NULL;
	int rc, flags = 0; /* 1: a replay ran out of memory; 2: verify diverged */

	if (msg && cap)
		msg[0] = 0;
	if (!json)
		return say(msg, cap, ASK_USAGE, "no place for the answer (json is NULL)");
	*json = NULL;
	if (!in || !question)
		return say(msg, cap, ASK_USAGE, "no file or no question");
	if (n_options && !options)
		return say(msg, cap, ASK_USAGE, "%zu options, but options is NULL", n_options);
	if (!strcmp(question, "info"))
		return n_options ? say(msg, cap, ASK_USAGE, "info takes no option")
		                 : ask_info(in, 0, json, msg, cap);
	if (!strcmp(question, "replay"))
		fn = ask_replay;
	else if (!strcmp(question, "explain"))
		fn = ask_explain;
	else if (!strcmp(question, "whatif"))
		fn = ask_whatif;
	else if (!strcmp(question, "verify"))
		fn = ask_verify;
	else if (!strcmp(question, "check"))
		fn = ask_check;
	else if (!strcmp(question, "stats"))
		fn = NULL; /* its own shape: ask_stats */
	else
		return say(msg, cap, ASK_USAGE,
		           "'%s': no such question (info, stats, replay, explain, whatif, verify, "
		           "check; diff is ms_compare)",
		           question);
	rc = ask_options(question, options, n_options, &a, msg, cap);
	a.reserved_log = fn == ask_explain || fn == ask_check;
	if (!rc && !strcmp(question, "stats")) {
		rc = ask_stats(in, &a, json, msg, cap);
		ask_release(&a);
		return rc;
	}
	if (!rc && fn == ask_explain && ms_trace_no_allocations(in->t))
		rc = say(msg, cap, ASK_ERROR,
		         "%s: a snapshot without a trace: the library does not explain its end "
		         "state yet (memsnap explain does)",
		         in->path);
	if (!rc)
		rc = devices(in, &a, &devs, &nd, msg, cap);
	if (rc) {
		ask_release(&a);
		return rc;
	}
	for (size_t k = 0; k < nd; k++) {
		struct ms_diag d = MS_DIAG_INIT;
		cJSON *o = fn(in, &a, devs[k], &flags, &d);
		char key[16];
		if (!o) {
			say(msg, cap, ASK_ERROR, "%s: %s", in->path,
			    d.msg[0] ? d.msg : "out of memory");
			cJSON_Delete(root);
			ms_free(devs);
			ask_release(&a);
			return ASK_ERROR;
		}
		if (nd == 1) {
			root = o;
			break;
		}
		if (!root) { /* several devices: keyed by device, as the command writes them */
			root = cJSON_CreateObject();
			ms_json_schema(root);
			cJSON_AddStringToObject(root, "trace", in->path);
			byd = cJSON_AddObjectToObject(root, "devices");
		}
		snprintf(key, sizeof(key), "%u", devs[k]);
		cJSON_AddItemToObject(byd, key, o);
	}
	ms_free(devs);
	ask_release(&a);
	/* verify over several devices: whether all of them are identical, as the command says */
	if (fn == ask_verify && byd)
		cJSON_AddBoolToObject(root, "identical", !(flags & 2));
	if (fn == ask_check && byd)
		cJSON_AddBoolToObject(root, "passed", !(flags & 4));
	*json = root ? cJSON_Print(root) : NULL;
	cJSON_Delete(root);
	if (!*json)
		return say(msg, cap, ASK_ERROR, "%s: out of memory", in->path);
	if (fn == ask_check) /* a replay that ran out is a budget the run did not keep */
		return flags & 4 ? ASK_BUDGET : ASK_OK;
	return flags & 2 ? ASK_DIVERGED : flags ? ASK_OOM : ASK_OK;
}

/* One pair of devices compared, into a new object (NULL with d set). */
static cJSON *compare_pair(const struct ms_file *const in[2], const struct ask *a,
                           const uint32_t dev[2], struct ms_diag *d)
{
	struct ms_replay_outcome out[2];
	struct ms_replay_result r[2];
	struct ms_diff_input di[2];
	struct ms_diff x;
	cJSON *o = NULL;
	ms_status s = MS_OK;

	memset(out, 0, sizeof(out));
	memset(r, 0, sizeof(r));
	memset(di, 0, sizeof(di));
	for (int w = 0; w < 2 && !s; w++) {
		s = replay_device(in[w], a, dev[w], &out[w], &r[w], d);
		di[w] = (struct ms_diff_input){in[w]->path, in[w]->t,   dev[w],
		                               &r[w],       out[w].lim, a->user_cats};
	}
	if (!s && !(s = ms_diff_run(di, MS_FRAMES_USER, a->site_depth, &x))) {
		if (!(o = ms_diff_json(&x, (size_t)a->top, MS_FRAMES_USER)))
			ms__diag_set(d, MS_ERR_NOMEM, -1, -1, "out of memory");
	} else if (!d->msg[0]) {
		ms__diag_set(d, s, -1, -1, "%s", ms_strerror(s));
	}
	if (!s)
		ms_diff_release(&x);
	for (int w = 0; w < 2; w++) {
		ms_replay_result_release(&r[w]);
		ms_replay_outcome_release(&out[w]);
	}
	return o;
}

static int compare(ms_file *a, ms_file *b, const char *const *options, size_t n_options,
                   char **json, char *msg, size_t cap);

int ms_compare(ms_file *a, ms_file *b, const char *const *options, size_t n_options, char **json,
               char *msg, size_t cap)
{
	int rc = compare(a, b, options, n_options, json, msg, cap);

	respell_message(msg, cap);
	return rc;
}

static int compare(ms_file *a, ms_file *b, const char *const *options, size_t n_options,
                   char **json, char *msg, size_t cap)
{
	const struct ms_file *in[2] = {a, b};
	uint32_t *da = NULL, *db = NULL, *pa = NULL, *pb = NULL;
	size_t na = 0, nb = 0, pairs = 0;
	struct ask q;
	cJSON *root = NULL, *arr = NULL;
	int rc;

	if (msg && cap)
		msg[0] = 0;
	if (!json)
		return say(msg, cap, ASK_USAGE, "no place for the answer (json is NULL)");
	*json = NULL;
	if (!a || !b)
		return say(msg, cap, ASK_USAGE, "no file %s (NULL): two files are compared",
		           !a ? "a" : "b");
	if (n_options && !options)
		return say(msg, cap, ASK_USAGE, "%zu options, but options is NULL", n_options);
	if ((rc = ask_options("diff", options, n_options, &q, msg, cap)) ||
	    (rc = devices(a, &q, &da, &na, msg, cap)) || (rc = devices(b, &q, &db, &nb, msg, cap)))
		goto done;
	if (!(pa = ms_calloc(na, sizeof(*pa))) || !(pb = ms_calloc(na, sizeof(*pb)))) {
		rc = say(msg, cap, ASK_ERROR, "out of memory");
		goto done;
	}
	if (!(pairs = ms_diff_pairs(da, na, db, nb, pa, pb))) {
		rc = say(msg, cap, ASK_ERROR, "%s and %s have events on no common device", a->path,
		         b->path);
		goto done;
	}
	if (pairs > 1 && (root = cJSON_CreateObject())) {
		ms_json_schema(root);
		arr = cJSON_AddArrayToObject(root, "devices");
	}
	for (size_t k = 0; k < pairs && !rc; k++) {
		struct ms_diag d = MS_DIAG_INIT;
		const uint32_t dev[2] = {pa[k], pb[k]};
		cJSON *o = compare_pair(in, &q, dev, &d);
		if (!o)
			rc = say(msg, cap, ASK_ERROR, "%s", d.msg[0] ? d.msg : "out of memory");
		else if (arr)
			cJSON_AddItemToArray(arr, o);
		else
			root = o;
	}
	if (!rc && !(*json = root ? cJSON_Print(root) : NULL))
		rc = say(msg, cap, ASK_ERROR, "out of memory");
done:
	cJSON_Delete(root);
	ms_free(da);
	ms_free(db);
	ms_free(pa);
	ms_free(pb);
	ask_release(&q);
	return rc;
}
