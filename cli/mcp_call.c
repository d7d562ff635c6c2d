/* What the MCP tools share (mcp_call.h): their results, and their arguments read. */
#include "cli/mcp_call.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* A tool's result: one text content, the object as structured content where there is one. */
cJSON *ms_mcp_result(const char *text, cJSON *structured, int is_error)
{
	cJSON *r = cJSON_CreateObject(), *content = cJSON_AddArrayToObject(r, "content");
	cJSON *c = cJSON_CreateObject();

	cJSON_AddStringToObject(c, "type", "text");
	cJSON_AddStringToObject(c, "text", text);
	cJSON_AddItemToArray(content, c);
	if (structured)
		cJSON_AddItemToObject(r, "structuredContent", structured);
	cJSON_AddBoolToObject(r, "isError", is_error);
	return r;
}

cJSON *ms_mcp_error(const char *fmt, const char *a)
{
	char msg[1200];
	snprintf(msg, sizeof(msg), fmt, a);
	return ms_mcp_result(msg, NULL, 1);
}

/* An argument's value as the command's option takes it, into buf; -1 where it has no such. */
int ms_mcp_option_value(const cJSON *v, char *buf, size_t cap)
{
	if (cJSON_IsString(v))
		return snprintf(buf, cap, "%s", v->valuestring) < (int)cap ? 0 : -1;
	if (cJSON_IsBool(v))
		return snprintf(buf, cap, "%s", cJSON_IsTrue(v) ? "true" : "false"), 0;
	if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;
		if (d == floor(d) && fabs(d) < 9.0e15)
			snprintf(buf, cap, "%.0f", d);
		else
			snprintf(buf, cap, "%.17g", d);
		return 0;
	}
	return -1;
}

const char *ms_mcp_string_arg(const cJSON *args, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);
	return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

/*
 * Why the files a call names cannot be read, into why (0: they can): each a string naming a
 * regular file. A FIFO or a device would block or never end: the server reads files only.
 */
int ms_mcp_files_unreadable(const cJSON *args, char *why, size_t cap)
{
	static const char *const names[] = {"path", "other", "baseline"};
	struct stat st;

	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, names[k]);
		if (!v)
			continue;
		if (!cJSON_IsString(v) || !v->valuestring[0])
			return snprintf(why, cap, "the argument %s: a file's path, as a string",
			                names[k]),
			       -1;
		if (stat(v->valuestring, &st) != 0)
			return snprintf(why, cap, "%.900s: cannot open: %s", v->valuestring,
			                strerror(errno)),
			       -1;
		if (!S_ISREG(st.st_mode))
			return snprintf(why, cap,
			                "%.900s: not a regular file (memsnap mcp reads files only)",
			                v->valuestring),
			       -1;
	}
	return 0;
}
