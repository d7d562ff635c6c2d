/* A program outside the project that asks libmemsnap (memsnap/analyze.h) about a snapshot and
 * prints the answer's JSON; built as C and as C++. usage: ask FILE QUESTION [OPTION...] */
#include <stdio.h>

#include <memsnap/analyze.h>

int main(int argc, char **argv)
{
	ms_file *f;
	char msg[512], *json = NULL;
	int rc;

	if (argc < 3)
		return 2;
	if (ms_file_open(argv[1], &f, msg, sizeof msg) != 0) {
		fprintf(stderr, "%s\n", msg);
		return 1;
	}
	rc = ms_ask(f, argv[2], (const char *const *)(argv + 3), (size_t)(argc - 3), &json, msg,
	            sizeof msg);
	if (json)
		puts(json);
	else
		fprintf(stderr, "%s\n", msg);
	ms_json_free(json);
	ms_file_close(f);
	return rc;
}
