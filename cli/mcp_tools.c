/* memsnap's MCP tools (mcp_tools.h): each answers with the command's --json. */
#include "cli/mcp_tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/mcp_call.h"
#include "memsnap/analyze.h"

/* The arguments a tool takes beside path: name, JSON type ("size": a string such as "12GiB"
 * or a number of bytes), what it is, and bounds where it has them (lo > hi: none). */
struct arg {
	const char *name, *type, *what;
	double lo, hi;
};

/* clang-format off */
#define NB 1, 0 /* no bounds */
#define A_DEVICE {"device", "integer", "the device to answer for (default: every device with events)", 0, 65535}
#define A_LIMIT {"limit", "size", "a per-process memory limit to replay under, e.g. \"12GiB\" (not with memory_fraction)", NB}
#define A_FRACTION {"memory_fraction", "number", "the limit as a fraction of the device's memory, over 0 and at most 1", NB}
#define A_DEVMEM {"device_memory", "size", "the device's size, where the trace does not record it", NB}
#define A_REPLAY A_LIMIT, A_FRACTION, A_DEVMEM
#define A_CONF {"alloc_conf", "string", "PYTORCH_CUDA_ALLOC_CONF to replay with", NB}
#define A_JOBS {"jobs", "integer", "threads (default: one per CPU)", 1, 1024}
#define A_DEPTH {"site_depth", "integer", "frames that make a site (default 1)", 1, 64}
#define A_FROM {"from", "string", "a window from here: an event's number, a time after the first event (\"1.5s\", \"200ms\"), or \"mark:NAME\" (a phase's start), \"mark:NAME#N\" the Nth", NB}
#define A_TO {"to", "string", "the window up to here, not included: an event's number, a time, or \"mark:NAME\" (a phase's end)", NB}
#define A_WINDOWS {"windows", "string", "a window for each phase whose name starts with this (not with from or to)", NB}
#define A_AT {"at", "string", "the moment right after one event (not with from or to): an event's number, a time, \"mark:NAME\", \"alloc:0xADDRESS\" (the first allocation there; \"#N\" the Nth) or \"free:0xADDRESS\"", NB}
#define A_CATS {"categories", "object", "categories of your own: {name: extended regular expression}, matched on an allocation's frames written \"file:line function\"; the first that matches wins, over memsnap's own", NB}
#define A_END {NULL, NULL, NULL, NB}
/* clang-format on */

static const struct tool {
	const char *name, *question, *what;
	struct arg args[20];
} tools[] = {
        {"info",
         "info",
         "What a trace or snapshot holds: format, devices, events, streams.",
         {A_END}},
        {"stats",
         "stats",
         "Peaks, the top allocation sites at the peak, what is live at the end; windows of the "
         "run from the trace alone.",
         {A_DEVICE, A_DEPTH, A_FROM, A_TO, A_WINDOWS, A_AT, A_CATS, A_END}},
        {"replay",
         "replay",
         "Replay the trace against memsnap's model of PyTorch's CUDA caching allocator: OOMs, "
         "peaks, retries, who held the memory at an OOM; each window's peaks and rise.",
         {A_DEVICE, A_REPLAY, A_CONF, A_FROM, A_TO, A_WINDOWS, A_AT, A_END}},
        {"verify",
         "verify",
         "Whether the replay's segments equal the recorded ones.",
         {A_DEVICE, A_REPLAY, A_CONF, A_END}},
        {"explain",
         "explain",
         "What holds the memory at the peak and at an OOM (parameters, gradients, optimizer "
         "state, activations), what grows, the verdict on an OOM's cause, the settings that "
         "would have helped, each replayed.",
         {A_DEVICE, A_REPLAY, A_CONF, A_JOBS, A_DEPTH, A_FROM, A_TO, A_AT, A_CATS, A_END}},
        {"whatif",
         "whatif",
         "Replay under several allocator settings: which avoids the OOM, the peak under each, "
         "the least memory that completes.",
         {A_DEVICE,
          A_REPLAY,
          {"configs", "array",
           "PYTORCH_CUDA_ALLOC_CONF strings to try "
           "(\"recorded\": the trace's own; default: "
           "memsnap's matrix)",
           NB},
          A_JOBS,
          A_END}},
        {"check",
         "check",
         "A gate: the run's peaks against budgets; a dead run never passes. passed, exceeded "
         "and gates say the outcome.",
         {A_DEVICE,
          A_REPLAY,
          A_CONF,
          {"max_peak_reserved", "size", "budget for the peak reserved bytes", NB},
          {"max_peak_allocated", "size", "budget for the peak allocated bytes", NB},
          {"max_fragmentation", "number", "budget for the waste at the peak", 0, 1},
          {"max_growth_per_step", "size", "budget for growth a step", NB},
          {"baseline", "string", "another trace to compare the peaks with (with max_growth)", NB},
          {"max_growth", "string", "allowed growth over the baseline, e.g. \"5%\"", NB},
          {"allow_oom", "boolean", "pass a run that recorded an OOM", NB},
          {"allow_cut_short", "boolean", "pass a trace whose recording was cut short", NB},
          A_FROM,
          A_TO,
          A_AT,
          A_END}},
        {"diff",
         "diff",
         "What changed from this run to another: settings, peaks, categories, steps, sites.",
         {{"other", "string", "the other trace or snapshot (required)", NB},
          A_DEVICE,
          A_REPLAY,
          A_CONF,
          A_DEPTH,
          {"top", "integer", "rows a table (default 10)", 1, 100000},
          A_CATS,
          A_END}},
        {"render",
         NULL,
         "Write memsnap's self-contained HTML report of the trace (or, by output's extension, "
         "csv, txt, dot or svg): returns the path and size written.",
         {{"output", "string", "the file to write (required); never an input", NB},
          A_DEVICE,
          A_REPLAY,
          A_CONF,
          A_END}},
};

static cJSON *tool_schema(const struct tool *t)
{
	cJSON *o = cJSON_CreateObject(), *props, *req, *p;

	cJSON_AddStringToObject(o, "type", "object");
	props = cJSON_AddObjectToObject(o, "properties");
	p = cJSON_AddObjectToObject(props, "path");
	cJSON_AddStringToObject(p, "type", "string");
	cJSON_AddStringToObject(p, "description", "the memsnap trace or PyTorch snapshot to read");
	req = cJSON_AddArrayToObject(o, "required");
	cJSON_AddItemToArray(req, cJSON_CreateString("path"));
	for (const struct arg *a = t->args; a->name; a++) {
		p = cJSON_AddObjectToObject(props, a->name);
		if (!strcmp(a->type, "size")) { /* "12GiB", or a number of bytes */
			cJSON *ty = cJSON_AddArrayToObject(p, "type");
			cJSON_AddItemToArray(ty, cJSON_CreateString("string"));
			cJSON_AddItemToArray(ty, cJSON_CreateString("integer"));
		} else {
			cJSON_AddStringToObject(p, "type", a->type);
		}
		if (!strcmp(a->type, "array"))
			cJSON_AddStringToObject(cJSON_AddObjectToObject(p, "items"), "type",
			                        "string");
		if (!strcmp(a->type, "object")) /* {name: string} */
			cJSON_AddStringToObject(cJSON_AddObjectToObject(p, "additionalProperties"),
			                        "type", "string");
		if (a->lo <= a->hi) {
			cJSON_AddNumberToObject(p, "minimum", a->lo);
			cJSON_AddNumberToObject(p, "maximum", a->hi);
		}
		if (!strcmp(a->name, "memory_fraction")) {
			cJSON_AddNumberToObject(p, "exclusiveMinimum", 0);
			cJSON_AddNumberToObject(p, "maximum", 1);
		}
		cJSON_AddStringToObject(p, "description", a->what);
		if (strstr(a->what, "(required)"))
			cJSON_AddItemToArray(req, cJSON_CreateString(a->name));
	}
	cJSON_AddBoolToObject(o, "additionalProperties", 0);
	return o;
}

cJSON *ms_mcp_tools_list(void)
{
	cJSON *root = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(root, "tools");

	for (size_t k = 0; k < sizeof(tools) / sizeof(tools[0]); k++) {
		cJSON *t = cJSON_CreateObject();
		cJSON_AddStringToObject(t, "name", tools[k].name);
		cJSON_AddStringToObject(t, "description", tools[k].what);
		cJSON_AddItemToObject(t, "inputSchema", tool_schema(&tools[k]));
		cJSON_AddItemToArray(a, t);
	}
	return root;
}

/*
 * The answer's JSON as the result, on one line (minified as written, so that 64-bit integers
 * stay exact): whole, as text and as structured content, or its first MS_MCP_RESULT_MAX bytes
 * as text alone, marked truncated.
 */
static cJSON *answer_result(const char *json)
{
	size_t len = strlen(json), cut = MS_MCP_RESULT_MAX;
	char *text = malloc(len + 1);
	cJSON *r, *meta;

	if (!text)
		return NULL;
	memcpy(text, json, len + 1);
	cJSON_Minify(text);
	if ((len = strlen(text)) <= MS_MCP_RESULT_MAX) {
		/* structured content is an object: stats' array of rows as {"rows": [...]} */
		cJSON *sc = text[0] == '[' ? cJSON_CreateObject() : cJSON_CreateRaw(text);
		if (text[0] == '[')
			cJSON_AddItemToObject(sc, "rows", cJSON_CreateRaw(text));
		r = ms_mcp_result(text, sc, 0);
		free(text);
		return r;
	}
	while (cut && ((unsigned char)text[cut] & 0xC0) == 0x80)
		cut--; /* not inside a UTF-8 sequence */
	text[cut] = 0;
	r = ms_mcp_result(text, NULL, 0);
	free(text);
	meta = cJSON_AddObjectToObject(r, "_meta");
	cJSON_AddBoolToObject(meta, "truncated", 1);
	cJSON_AddNumberToObject(meta, "bytes", (double)len);
	return r;
}

/* The arguments but path, other and output as "name=value" options (configs: one each). */
static int options_of(const cJSON *args, char opts[][1100], size_t cap, size_t *n, char *why,
                      size_t why_cap)
{
	const cJSON *a;
	char v[1024];

	*n = 0;
	cJSON_ArrayForEach(a, args)
	{
		const cJSON *c;
		if (!strcmp(a->string, "path") || !strcmp(a->string, "other") ||
		    !strcmp(a->string, "output") || cJSON_IsNull(a)) /* null: not given */
			continue;
		if (!strcmp(a->string, "configs") && !cJSON_IsArray(a))
			return snprintf(why, why_cap, "configs: a list of strings"), -1;
		if (!strcmp(a->string, "configs") && !cJSON_GetArraySize(a))
			return snprintf(why, why_cap,
			                "configs: an empty list, no setting to try (leave it out "
			                "for "
			                "memsnap's matrix)"),
			       -1;
		if (!strcmp(a->string,
		            "categories")) { /* {name: regex}: category=NAME=REGEX each */
			if (!cJSON_IsObject(a))
				return snprintf(why, why_cap,
				                "categories: an object {name: regular expression}"),
				       -1;
			cJSON_ArrayForEach(c, a)
			{
				if (*n == cap || !cJSON_IsString(c) || strchr(c->string, '=') ||
				    strlen(c->string) + strlen(c->valuestring) + 11 >
				            sizeof(opts[0]))
					return snprintf(why, why_cap,
					                "categories: {name: regular expression} "
					                "strings, names without '=', at most %zu",
					                cap),
					       -1;
				snprintf(opts[(*n)++], sizeof(opts[0]), "category=%s=%s", c->string,
				         c->valuestring);
			}
			continue;
		}
		if (!strcmp(a->string, "configs")) {
			cJSON_ArrayForEach(c, a)
			{
				if (*n == cap || ms_mcp_option_value(c, v, sizeof(v)))
					return snprintf(why, why_cap,
					                "configs: strings, at most %zu", cap),
					       -1;
				snprintf(opts[(*n)++], sizeof(opts[0]), "config=%s", v);
			}
			continue;
		}
		if (*n == cap || ms_mcp_option_value(a, v, sizeof(v)))
			return snprintf(why, why_cap, "%s: not a string, number or boolean",
			                a->string),
			       -1;
		snprintf(opts[(*n)++], sizeof(opts[0]), "%s=%s", a->string, v);
	}
	return 0;
}

/* A question through the library: the command's --json, or why not. */
static cJSON *ask(const struct tool *t, const cJSON *args)
{
	enum { MAX_OPTS = 64 };
	char(*opts)[1100];
	const char *ptrs[MAX_OPTS], *path = ms_mcp_string_arg(args, "path"), *other = NULL;
	char msg[1024] = "";
	ms_file *a = NULL, *b = NULL;
	char *json = NULL;
	size_t n;
	int rc;
	cJSON *r;

	if (!cJSON_GetObjectItemCaseSensitive(args, "path"))
		return ms_mcp_error("%s: the argument path (a file to read) is required", t->name);
	if (!strcmp(t->question, "diff") && !cJSON_GetObjectItemCaseSensitive(args, "other"))
		return ms_mcp_error("%s: the argument other (the file to compare with) is required",
		                    t->name);
	if (ms_mcp_files_unreadable(args, msg, sizeof(msg)))
		return ms_mcp_error("%s", msg);
	other = ms_mcp_string_arg(args, "other");
	if (!(opts = malloc(MAX_OPTS * sizeof(*opts))))
		return NULL;
	if (options_of(args, opts, MAX_OPTS, &n, msg, sizeof(msg))) {
		free(opts);
		return ms_mcp_error("%s", msg);
	}
	for (size_t k = 0; k < n; k++)
		ptrs[k] = opts[k];
	if ((rc = ms_file_open(path, &a, msg, sizeof(msg))) == 0 && other)
		rc = ms_file_open(other, &b, msg, sizeof(msg));
	if (rc == 0)
		rc = other ? ms_compare(a, b, ptrs, n, &json, msg, sizeof(msg))
		           : ms_ask(a, t->question, ptrs, n, &json, msg, sizeof(msg));
	r = json ? answer_result(json) : ms_mcp_error("%s", msg[0] ? msg : "no answer");
	ms_json_free(json);
	ms_file_close(a);
	ms_file_close(b);
	free(opts);
	return r;
}

cJSON *ms_mcp_tools_call(const char *name, const cJSON *arguments, const char *self, int *unknown)
{
	cJSON *empty = NULL, *r;
	const cJSON *args = arguments;

	*unknown = 0;
	for (size_t k = 0; k < sizeof(tools) / sizeof(tools[0]); k++) {
		if (strcmp(tools[k].name, name))
			continue;
		if (!args && !(args = empty = cJSON_CreateObject()))
			return NULL;
		r = tools[k].question ? ask(&tools[k], args) : ms_mcp_render(self, args);
		cJSON_Delete(empty);
		return r;
	}
	*unknown = 1;
	return NULL;
}
