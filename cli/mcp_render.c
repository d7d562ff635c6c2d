/* The MCP tool render (mcp_call.h): the command itself, in a process of its own. */
#define _DEFAULT_SOURCE /* realpath */
#include "cli/mcp_call.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The flag of render for an option of the library's name, or NULL: not one render takes. */
static const char *render_flag(const char *name)
{
	static const char *const map[][2] = {{"device", "--device"},
	                                     {"limit", "--limit"},
	                                     {"memory_fraction", "--memory-fraction"},
	                                     {"device_memory", "--device-memory"},
	                                     {"alloc_conf", "--alloc-conf"}};
	for (size_t k = 0; k < sizeof(map) / sizeof(map[0]); k++)
		if (!strcmp(map[k][0], name))
			return map[k][1];
	return NULL;
}

/* self render PATH -o OUTPUT [flags], its stderr into err; the exit status, or -1. */
static int run_render(const char *self, const char *path, const char *output, const cJSON *args,
                      char *err, size_t cap)
{
	enum { MAX_ARGV = 24 };
	char vals[MAX_ARGV][1024];
	char *argv[MAX_ARGV + 1];
	int n = 0, k = 0, fd[2], status;
	const cJSON *a;
	posix_spawn_file_actions_t fa;
	pid_t pid;
	ssize_t got;
	size_t len = 0;

	argv[n++] = (char *)self;
	argv[n++] = "-q";
	argv[n++] = "render";
	cJSON_ArrayForEach(a, args)
	{
		const char *flag;
		if (!strcmp(a->string, "path") || !strcmp(a->string, "output"))
			continue;
		if (!(flag = render_flag(a->string)) || n + 2 > MAX_ARGV - 4 ||
		    ms_mcp_option_value(a, vals[k], sizeof(vals[k])))
			return snprintf(err, cap, "render takes no argument %s", a->string), -1;
		argv[n++] = (char *)flag;
		argv[n++] = vals[k++];
	}
	argv[n++] = "-o";
	argv[n++] = (char *)output;
	argv[n++] = "--";
	argv[n++] = (char *)path;
	argv[n] = NULL;
	if (pipe(fd))
		return snprintf(err, cap, "cannot start render: %s", strerror(errno)), -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, fd[1], 2);
	posix_spawn_file_actions_addclose(&fa, fd[0]);
	status = posix_spawn(&pid, self, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fd[1]);
	if (status) {
		close(fd[0]);
		return snprintf(err, cap, "cannot start render: %s", strerror(status)), -1;
	}
	while (len + 1 < cap && (got = read(fd[0], err + len, cap - 1 - len)) > 0)
		len += (size_t)got;
	err[len] = 0;
	close(fd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The command's error in its stderr: the line after "memsnap: error: ", else its first. */
static const char *error_line(char *err)
{
	static const char tag[] = "memsnap: error: ";
	char *e = strstr(err, tag), *nl;

	e = e ? e + sizeof(tag) - 1 : err;
	if ((nl = strchr(e, '\n')))
		*nl = 0;
	return e[0] ? e : "render failed";
}

/* render: the page (or drawing) written where output says, by the command itself. */
cJSON *ms_mcp_render(const char *self, const cJSON *args)
{
	const char *output = ms_mcp_string_arg(args, "output");
	char err[4096], *text, *full;
	struct stat st;
	cJSON *o;
	int rc;

	if (!cJSON_GetObjectItemCaseSensitive(args, "path") || !output || !strcmp(output, "-"))
		return ms_mcp_error("%s", "render: the arguments path (a file to read) and output "
		                          "(the file to write, not \"-\") are required");
	if (ms_mcp_files_unreadable(args, err, sizeof(err)))
		return ms_mcp_error("%.1000s", err);
	/* a new file or a regular one: never a device or a pipe, the server's own stdout included
	 */
	if (stat(output, &st) == 0 && !S_ISREG(st.st_mode))
		return ms_mcp_error("%.1000s: not a regular file to write", output);
	rc = run_render(self, ms_mcp_string_arg(args, "path"), output, args, err, sizeof(err));
	if (rc != 0 || stat(output, &st) || !S_ISREG(st.st_mode))
		return ms_mcp_error("%.1000s", error_line(err));
	o = cJSON_CreateObject();
	full = realpath(output, NULL);
	cJSON_AddStringToObject(o, "path", full ? full : output);
	free(full);
	cJSON_AddNumberToObject(o, "bytes", (double)st.st_size);
	if (!(text = cJSON_PrintUnformatted(o))) {
		cJSON_Delete(o);
		return NULL;
	}
	o = ms_mcp_result(text, o, 0);
	cJSON_free(text);
	return o;
}
