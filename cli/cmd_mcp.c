/*
 * memsnap mcp: a Model Context Protocol server on standard input and output (JSON-RPC 2.0, one
 * message a line, revision 2025-06-18), whose tools are memsnap's questions (mcp_tools.c).
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmds.h"
#include "cli/mcp_tools.h"
#include "cli/messages.h"
#include "cli/opts.h"
#include "memsnap/memsnap.h"

#define PROTOCOL       "2025-06-18"
#define LINE_MAX_BYTES (8u << 20) /* a longer message is refused, and skipped */

static const char *const usage[] = {
        "memsnap mcp",
        "",
        "A Model Context Protocol server for agents: JSON-RPC 2.0 on standard input and output,",
        "one message a line (revision " PROTOCOL "). Its tools are info, stats, replay, verify,",
        "explain, whatif, check, diff and render, each with a path argument and the options the",
        "command takes (named as the library's: alloc_conf, limit, device_memory, ...), each",
        "answering with the command's --json (render: the file it wrote). It reads only the",
        "files a call names, writes only render's output, replays on the model only, answers one",
        "call at a time, returns at most 1 MiB an answer (beyond: cut, marked truncated), and",
        "exits at the end of its input. docs/MCP.md says how to add it to an agent.",
        NULL,
};

/* The length of the valid UTF-8 sequence at s (1 to 4), or 0 where none starts there. */
static size_t utf8_seq(const unsigned char *s)
{
	size_t n = s[0] < 0x80             ? 1
	           : (s[0] & 0xE0) == 0xC0 ? 2
	           : (s[0] & 0xF0) == 0xE0 ? 3
	           : (s[0] & 0xF8) == 0xF0 ? 4
	                                   : 0;
	if (n == 2 && s[0] < 0xC2)
		return 0; /* overlong */
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xC0) != 0x80)
			return 0;
	return n;
}

/* Whether s is UTF-8 throughout. */
static int utf8_valid(const char *s)
{
	for (size_t n; *s; s += n)
		if (!(n = utf8_seq((const unsigned char *)s)))
			return 0;
	return 1;
}

/* Bytes that are no UTF-8 (a message cut inside a character) as '?': the stream stays UTF-8. */
static void utf8_mend(char *s)
{
	for (size_t n; *s; s += n)
		if (!(n = utf8_seq((unsigned char *)s))) {
			*s = '?';
			n = 1;
		}
}

static void emit_msg(cJSON *msg)
{
	char *text = cJSON_PrintUnformatted(msg);

	if (!text)
		ms_die(MS_EXIT_ERROR, "out of memory");
	utf8_mend(text);
	fputs(text, stdout);
	fputc('\n', stdout);
	fflush(stdout);
	cJSON_free(text);
	cJSON_Delete(msg);
}

static cJSON *reply(const cJSON *id)
{
	cJSON *m = cJSON_CreateObject();

	cJSON_AddStringToObject(m, "jsonrpc", "2.0");
	if (cJSON_IsNumber(id)) { /* as the integer it is: cJSON would print a double */
		char n[32];
		snprintf(n, sizeof(n), "%" PRId64, (int64_t)id->valuedouble);
		cJSON_AddItemToObject(m, "id", cJSON_CreateRaw(n));
	} else {
		cJSON_AddItemToObject(m, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
	}
	return m;
}

static void send_error(const cJSON *id, int code, const char *message)
{
	cJSON *m = reply(id), *e = cJSON_AddObjectToObject(m, "error");

	cJSON_AddNumberToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", message);
	emit_msg(m);
}

static void send_result(const cJSON *id, cJSON *result)
{
	cJSON *m = reply(id);

	if (!result)
		ms_die(MS_EXIT_ERROR, "out of memory");
	cJSON_AddItemToObject(m, "result", result);
	emit_msg(m);
}

/* initialize: the revision asked for where it is this one, else this one; the tools. */
static cJSON *initialize(const cJSON *params)
{
	cJSON *r = cJSON_CreateObject(), *caps, *info;

	(void)params; /* one revision spoken: a client that cannot speak it disconnects */
	cJSON_AddStringToObject(r, "protocolVersion", PROTOCOL);
	caps = cJSON_AddObjectToObject(r, "capabilities");
	cJSON_AddBoolToObject(cJSON_AddObjectToObject(caps, "tools"), "listChanged", 0);
	info = cJSON_AddObjectToObject(r, "serverInfo");
	cJSON_AddStringToObject(info, "name", "memsnap");
	cJSON_AddStringToObject(info, "title", "memsnap: GPU memory traces of PyTorch jobs");
	cJSON_AddStringToObject(info, "version", MS_VERSION_STRING);
	cJSON_AddStringToObject(
	        r, "instructions",
	        "Tools over a PyTorch CUDA memory snapshot (torch.cuda.memory._dump_snapshot) or a "
	        "memsnap trace. Start with explain for why a job ran out of memory and what to "
	        "change; whatif compares allocator settings; check gates peaks against budgets.");
	return r;
}

/* tools/call: the tool's result, or a protocol error for an unknown tool or bad params. */
static void call(const cJSON *id, const cJSON *params, const char *self)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
	cJSON *r;
	int unknown;

	if (!cJSON_IsString(name) || (args && !cJSON_IsObject(args) && !cJSON_IsNull(args))) {
		send_error(id, -32602, "tools/call takes a name and an object of arguments");
		return;
	}
	r = ms_mcp_tools_call(name->valuestring, cJSON_IsObject(args) ? args : NULL, self,
	                      &unknown);
	if (unknown) {
		char msg[300];
		snprintf(msg, sizeof(msg), "Unknown tool: %.200s", name->valuestring);
		send_error(id, -32602, msg);
		return;
	}
	send_result(id, r);
}

/* Whether id is one JSON-RPC can give back as it came: a string, or an integer of magnitude
 * below 2^53, which a double holds exactly (MCP's ids are strings or integers). */
static int id_ok(const cJSON *id)
{
	return cJSON_IsString(id) || (cJSON_IsNumber(id) && id->valuedouble > -9007199254740992.0 &&
	                              id->valuedouble < 9007199254740992.0 &&
	                              id->valuedouble == (double)(int64_t)id->valuedouble);
}

/* One message: a request answered, a notification taken, anything else refused. */
static void handle(const char *line, const char *self)
{
	const char *end = NULL;
	cJSON *msg;
	const cJSON *id, *method, *params, *version;

	if (!utf8_valid(line) || !(msg = cJSON_ParseWithOpts(line, &end, 1))) {
		send_error(NULL, -32700, "Parse error: not one JSON value in UTF-8 on the line");
		return;
	}
	id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	method = cJSON_GetObjectItemCaseSensitive(msg, "method");
	params = cJSON_GetObjectItemCaseSensitive(msg, "params");
	version = cJSON_GetObjectItemCaseSensitive(msg, "jsonrpc");
	if (cJSON_IsObject(msg) && id && !method &&
	    (cJSON_GetObjectItemCaseSensitive(msg, "result") ||
	     cJSON_GetObjectItemCaseSensitive(msg, "error"))) {
		; /* a response from the client: it answers nothing we asked, and needs no answer */
	} else if (!cJSON_IsObject(msg) || !cJSON_IsString(version) ||
	           strcmp(version->valuestring, "2.0") || !cJSON_IsString(method) ||
	           (id && !id_ok(id))) {
		send_error(cJSON_IsObject(msg) && id_ok(id) ? id : NULL, -32600,
		           "Invalid Request: a JSON-RPC 2.0 request object (jsonrpc \"2.0\", a "
		           "method, an id that is a string or an integer below 2^53), one a line");
	} else if (!id) {
		; /* notifications (initialized, cancelled): nothing to answer */
	} else if (!strcmp(method->valuestring, "initialize")) {
		send_result(id, initialize(params));
	} else if (!strcmp(method->valuestring, "ping")) {
		send_result(id, cJSON_CreateObject());
	} else if (!strcmp(method->valuestring, "tools/list")) {
		send_result(id, ms_mcp_tools_list());
	} else if (!strcmp(method->valuestring, "tools/call")) {
		call(id, params, self);
	} else {
		send_error(id, -32601, "Method not found");
	}
	cJSON_Delete(msg);
}

/* The next line of standard input into buf (cap bytes), without its end: its length, -1 at
 * the end of input, -2 for a line too long (read past, not kept). */
static long next_line(char *buf, size_t cap)
{
	size_t n;

	if (!fgets(buf, (int)cap, stdin))
		return -1;
	n = strlen(buf);
	if (n == cap - 1 && buf[n - 1] != '\n') {
		int c;
		while ((c = getchar()) != EOF && c != '\n')
			;
		return -2;
	}
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = 0;
	return (long)n;
}

int cmd_mcp(int argc, const char **argv)
{
	struct ms_opt opts[] = {MS_OPT_END()};
	char self[4096], *line;
	long n;

	if (ms_parse_options(argc, argv, opts, usage) != 0)
		ms_usage_error(opts, usage, "mcp takes no argument");
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		ms_die(MS_EXIT_ERROR, "cannot find this program (/proc/self/exe) to run render");
	self[n] = 0;
	if (!(line = malloc(LINE_MAX_BYTES + 2)))
		ms_die(MS_EXIT_ERROR, "out of memory");
	while ((n = next_line(line, LINE_MAX_BYTES + 2)) != -1) {
		if (n == -2)
			send_error(NULL, -32600, "Invalid Request: a message over 8 MiB");
		else if (line[strspn(line, " \t")])
			handle(line, self); /* a blank line is no message */
	}
	free(line);
	return MS_EXIT_OK;
}
