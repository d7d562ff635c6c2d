/*
 * memsnap's tools for the Model Context Protocol server (cmd_mcp.c): their list with input
 * schemas, and a call answered through libmemsnap's API (include/memsnap/analyze.h) or, for
 * render, by the command itself in a process of its own.
 */
#ifndef MEMSNAP_CLI_MCP_TOOLS_H
#define MEMSNAP_CLI_MCP_TOOLS_H

#include <cjson/cJSON.h>

/* The most bytes of one answer a call returns; beyond, it is cut and marked truncated. */
#define MS_MCP_RESULT_MAX (1u << 20)

/* tools/list's result: {"tools": [...]}. NULL: out of memory. */
cJSON *ms_mcp_tools_list(void);

/*
 * tools/call of the tool name with arguments (an object, or NULL): the result, with isError
 * where the tool could not answer. NULL with *unknown set where no tool has that name (a
 * protocol error); NULL otherwise: out of memory. self: this program, to run render.
 */
cJSON *ms_mcp_tools_call(const char *name, const cJSON *arguments, const char *self, int *unknown);

#endif
