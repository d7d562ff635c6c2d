/* memsnap: global flags, the commands[] table, dispatch, and a checked close of stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmds.h"
#include "cli/messages.h"

struct cmd {
	const char *name;
	int (*fn)(int argc, const char **argv);
	const char *summary;
};

static const struct cmd commands[] = {
        {"record", cmd_record, "run a program and stream its GPU memory events into a trace"},
        {"info", cmd_info, "what a trace or snapshot holds: format, devices, events, streams"},
        {"stats", cmd_stats, "peaks, live allocations at the end, top sites; one row per file"},
        {"convert", cmd_convert, "PyTorch snapshot (pickle/JSON) to .zst, .zst to JSON"},
        {"replay", cmd_replay, "replay a trace against the caching-allocator model: OOMs, peaks"},
        {"verify", cmd_verify,
         "compare the model's segment events and peaks with the recorded ones"},
        {"whatif", cmd_whatif, "replay under a matrix of allocator settings: which avoids the OOM"},
        {"explain", cmd_explain,
         "what the peak is made of, what grows, what to change (each replayed)"},
        {"render", cmd_render, "draw the segments and blocks at the peak, the OOM or any event"},
        {"check", cmd_check, "a CI gate: peaks and fragmentation against budgets (exit 5)"},
        {"diff", cmd_diff, "what changed between two runs: peaks, sites, annotations"},
        {"mcp", cmd_mcp,
         "a Model Context Protocol server: memsnap's questions as tools for agents"},
        {"version", cmd_version, "version and build options"},
        {"help", cmd_help, "help on a command"},
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

/* After a usage error: the first usage line and where the rest is (as the commands say it). */
static const char short_usage[] = "usage: memsnap [-q] <command> [<args>]\n"
                                  "       (`memsnap --help` lists the commands)\n";

static void main_usage(FILE *f)
{
	fprintf(f, "usage: memsnap [-q] <command> [<args>]\n\n"
	           "-q: no notes, warnings or \"wrote\" lines on stderr, errors only (before or\n"
	           "after the command)\n\n"
	           "memsnap records, reads, replays and renders GPU memory traces.\n\n"
	           "commands:\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(f, "    %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f,
	        "\n'memsnap help <command>' describes a command and its options.\n"
	        "Exit codes: 0 ok, 1 error, 2 usage, 3 the replay ran out of memory where the\n"
	        "recorded run did not, 4 verify found a divergence, 5 a check budget was exceeded\n"
	        "(on any device); docs/FORMAT.md describes the .zst format.\n");
}

static const struct cmd *find(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/* Edit distance, for "did you mean". */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), prev[64], cur[64];

	if (la >= 63 || lb >= 63)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t c = prev[j - 1] + (a[i - 1] != b[j - 1]);
			if (prev[j] + 1 < c)
				c = prev[j] + 1;
			if (cur[j - 1] + 1 < c)
				c = cur[j - 1] + 1;
			cur[j] = c;
		}
		memcpy(prev, cur, sizeof(size_t) * (lb + 1));
	}
	return prev[lb];
}

int cmd_help(int argc, const char **argv)
{
	const struct cmd *c;
	const char *args[2];

	if (argc < 2) {
		main_usage(stdout);
		return MS_EXIT_OK;
	}
	c = find(argv[1]);
	if (!c || c->fn == cmd_help) {
		if (!c)
			ms_die(MS_EXIT_USAGE, "'%s' is not a memsnap command", argv[1]);
		main_usage(stdout);
		return MS_EXIT_OK;
	}
	args[0] = c->name;
	args[1] = "--help";
	return c->fn(2, args);
}

static int close_stdout(int rc)
{
	if (fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0) {
		ms_error("cannot write to standard output");
		return rc ? rc : MS_EXIT_ERROR;
	}
	return rc;
}

int main(int argc, const char **argv)
{
	const struct cmd *c;
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0) {
			ms_quiet = 1;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			main_usage(stdout);
			return close_stdout(MS_EXIT_OK);
		} else if (strcmp(argv[i], "--version") == 0) {
			const char *a[1] = {"version"};
			return close_stdout(cmd_version(1, a));
		} else {
			ms_error("unknown option '%s'", argv[i]);
			fputs(short_usage, stderr);
			return MS_EXIT_USAGE;
		}
	}
	if (i >= argc) {
		main_usage(stderr);
		return MS_EXIT_USAGE;
	}
	c = find(argv[i]);
	if (!c) {
		const char *best = NULL;
		size_t bd = 3;
		for (size_t k = 0; k < N_COMMANDS; k++) {
			size_t d = distance(argv[i], commands[k].name);
			if (d < bd)
				bd = d, best = commands[k].name;
		}
		ms_error("'%s' is not a memsnap command", argv[i]);
		if (best)
			ms_error_more("\nthe most similar command is\n\t%s\n", best);
		else
			fputs(short_usage, stderr);
		return MS_EXIT_USAGE;
	}
	/* -q after the command too (before any "--", after which the arguments are a program's) */
	for (int j = i + 1, k = i + 1; j <= argc; j++) {
		if (j < argc && strcmp(argv[j], "--") == 0) {
			while (j <= argc)
				argv[k++] = argv[j++];
			argc = k - 1;
			break;
		}
		if (j < argc && (strcmp(argv[j], "-q") == 0 || strcmp(argv[j], "--quiet") == 0)) {
			ms_quiet = 1;
			continue;
		}
		argv[k++] = argv[j];
		if (j == argc)
			argc = k - 1;
	}
	/* 'memsnap CMD --help' is 'memsnap help CMD' */
	return close_stdout(c->fn(argc - i, argv + i));
}
