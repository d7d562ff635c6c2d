/*
 * A small declarative option parser (git's parse-options in miniature): each
 * command declares a table, and the same table prints the help.
 */
#ifndef MEMSNAP_CLI_OPTS_H
#define MEMSNAP_CLI_OPTS_H

#include <stdint.h>
#include <stdio.h>

enum ms_opt_type {
	MS_OPT_T_END = 0,
	MS_OPT_T_BOOL,
	MS_OPT_T_STRING,
	MS_OPT_T_SIZE,
	MS_OPT_T_U64,
	MS_OPT_T_INT,
	MS_OPT_T_LIST /* a string option given any number of times: struct ms_opt_list */
};

#define MS_OPT_LIST_MAX 64
struct ms_opt_list {
	const char *v[MS_OPT_LIST_MAX];
	size_t n;
};

struct ms_opt {
	enum ms_opt_type type;
	char short_name;       /* 0 for none */
	const char *long_name; /* NULL for none */
	void *value;           /* int*, const char**, uint64_t*, uint64_t*, int* */
	const char *argh;      /* argument name in the help */
	const char *help;
};

#define MS_OPT_BOOL(s, l, v, h)                 \
	{                                       \
		MS_OPT_T_BOOL, s, l, v, NULL, h \
	}
#define MS_OPT_STRING(s, l, v, a, h)           \
	{                                      \
		MS_OPT_T_STRING, s, l, v, a, h \
	}
/* a size in bytes, more than 0, as common/size.h reads it ("80GiB", "512MB", "1.5 GiB") */
#define MS_OPT_SIZE(s, l, v, a, h)           \
	{                                    \
		MS_OPT_T_SIZE, s, l, v, a, h \
	}
#define MS_OPT_U64(s, l, v, a, h)           \
	{                                   \
		MS_OPT_T_U64, s, l, v, a, h \
	}
#define MS_OPT_INT(s, l, v, a, h)           \
	{                                   \
		MS_OPT_T_INT, s, l, v, a, h \
	}
#define MS_OPT_LIST(s, l, v, a, h)           \
	{                                    \
		MS_OPT_T_LIST, s, l, v, a, h \
	}
#define MS_OPT_END()                                    \
	{                                               \
		MS_OPT_T_END, 0, NULL, NULL, NULL, NULL \
	}

/*
 * Parse argv[1..argc) (argv[0] is the command name). Options may come
 * anywhere; "--" ends them. Positional arguments are moved to the front of
 * argv and their count returned. --help / -h prints the help and exits 0; a
 * bad option prints the error and the usage and exits 2.
 */
int ms_parse_options(int argc, const char **argv, const struct ms_opt *opts,
                     const char *const *usage);
/* Print usage lines and the option table. */
void ms_print_help(FILE *f, const struct ms_opt *opts, const char *const *usage);
/* Remove the option long_name from a table (a command that shares a fragment without it). */
void ms_opts_drop(struct ms_opt *opts, const char *long_name);
/* Give the option long_name another help text (what it does for this command). */
void ms_opts_help(struct ms_opt *opts, const char *long_name, const char *help);
/* Usage error: the message, the first usage line and where the rest is; exits 2. */
_Noreturn void ms_usage_error(const struct ms_opt *opts, const char *const *usage, const char *fmt,
                              ...) __attribute__((format(printf, 3, 4)));

#endif
