/* What the MCP tools share (mcp_call.c), and the render tool (mcp_render.c). */
#ifndef MEMSNAP_CLI_MCP_CALL_H
#define MEMSNAP_CLI_MCP_CALL_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* A tool's result: one text content, structured (an object, taken) where not NULL. */
cJSON *ms_mcp_result(const char *text, cJSON *structured, int is_error);
/* A result with isError: fmt with one string argument. */
cJSON *ms_mcp_error(const char *fmt, const char *a);
/* An argument's value as the command's option takes it, into buf; -1 where it has no such. */
int ms_mcp_option_value(const cJSON *v, char *buf, size_t cap);
/* The argument name where it is a string not empty, else NULL. */
const char *ms_mcp_string_arg(const cJSON *args, const char *name);
/* Why the files the arguments name (path, other, baseline) cannot be read, into why (0: they
 * can): each a string naming a regular file (a FIFO or a device could block or never end). */
int ms_mcp_files_unreadable(const cJSON *args, char *why, size_t cap);

/* render: the page (or drawing) written where the argument output says, by self (this program)
 * run as `memsnap render`; its result {path, bytes}. NULL: out of memory. */
cJSON *ms_mcp_render(const char *self, const cJSON *args);

#endif
