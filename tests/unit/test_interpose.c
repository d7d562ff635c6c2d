/*
 * The CUDA interposer (libmemsnap_cuda) and `memsnap record`, against a fake CUDA library
 * (tests/recorder/fake_cuda.c): which calls become which events, and the launcher's exit
 * codes and per-process trace names. The GPU tests run the same against the real driver.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/trace_stats.h"
#include "helpers.h"
#include "parse/trace.h"

static char g_dir[256];

static void make_dir(void)
{
	const char *t = getenv("TMPDIR");
	snprintf(g_dir, sizeof(g_dir), "%s/msi-XXXXXX", t && *t ? t : "/tmp");
	cr_assert_not_null(mkdtemp(g_dir));
}

static void remove_dir(void)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
	cr_assert_eq(system(cmd), 0);
}

/* Run argv with extra environment; return the exit status (or 128 + signal). */
static int run(const char *const *argv, const char *const *env)
{
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		for (; env && *env; env += 2)
			setenv(env[0], env[1], 1);
		/* the sanitizer runtime need not come first, and the recorder is kept to exit */
		setenv("ASAN_OPTIONS", "verify_asan_link_order=0:detect_leaks=0", 1);
		execv(argv[0], (char *const *)argv);
		_exit(126);
	}
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void expect_program_events(const char *path)
{
	struct ms_trace *t = NULL;
	struct ms_source_info info;
	struct ms_diag d = MS_DIAG_INIT;
	static const struct {
		unsigned action;
		uint64_t addr, size, stream;
		unsigned device;
	} want[] = {
	        {MS_ACT_SEGMENT_ALLOC, 0x7f0000000000ULL, 1000, 0, 0},
	        {MS_ACT_SEGMENT_ALLOC, 0x7f0000100000ULL, 2 << 20, 0, 0},
	        {MS_ACT_SEGMENT_FREE, 0x7f0000000000ULL, 1000, 0, 0},
	        {MS_ACT_SEGMENT_ALLOC, 0x7f0000300000ULL, 4096, 0x77, 0},
	        {MS_ACT_SEGMENT_FREE, 0x7f0000300000ULL, 4096, 0x77, 0},
	        {MS_ACT_SEGMENT_MAP, 0x7e0000000000ULL, 20 << 20, 0, 1},
	        {MS_ACT_SEGMENT_UNMAP, 0x7e0000000000ULL, 20 << 20, 0, 1},
	        {MS_ACT_SEGMENT_ALLOC, 0x7f0000400000ULL, 3 << 20, 0, 1},
	        {MS_ACT_SEGMENT_FREE, 0x7f0000400000ULL, 3 << 20, 0, 1},
	        {MS_ACT_SEGMENT_FREE, 0x7f0000100000ULL, 2 << 20, 0, 0},
	};

	cr_assert_eq(ms_trace_load(path, NULL, &t, &info, &d), MS_OK, "%s: %s", path, d.msg);
	cr_assert_eq(info.zst.has_end, 1, "finished at exit");
	cr_assert_eq(t->n_events, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < t->n_events; i++) {
		const struct ms_event *e = &t->events[i];
		cr_assert_eq(e->action, want[i].action, "event %zu", i);
		cr_assert_eq(e->addr, want[i].addr, "event %zu", i);
		cr_assert_eq(e->size, want[i].size, "event %zu", i);
		cr_assert_eq(e->stream, want[i].stream, "event %zu", i);
		cr_assert_eq(e->device, want[i].device, "event %zu", i);
		cr_assert_eq(e->source, MS_SRC_CUDA, "event %zu", i);
	}
	ms_trace_free(t);
}

Test(interpose, raw_calls_become_events, .init = make_dir, .fini = remove_dir)
{
	char path[512];
	const char *argv[] = {MS_CUDA_PROG, NULL};

	snprintf(path, sizeof(path), "%s/t.zst", g_dir);
	const char *env[] = {"LD_PRELOAD", MS_INTERPOSER, "MEMSNAP_RECORD", path, NULL};
	cr_assert_eq(run(argv, env), 0);
	expect_program_events(path);

	/* none of it is PyTorch's: all of it is memory outside PyTorch's allocator */
	struct ms_trace *t = NULL;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_stats_builder *b;
	struct ms_sink sink;
	cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK);
	cr_assert_eq(ms_stats_builder_new(10, &b), MS_OK);
	ms_stats_builder_sink(b, &sink);
	cr_assert_eq(ms_trace_emit(t, &sink), MS_OK);
	const struct ms_trace_stats *r = ms_stats_builder_result(b);
	cr_assert_eq(r->raw_events, 10);
	cr_assert_eq(r->raw_claimed, 0);
	cr_assert_eq(r->external_peak, (2 << 20) + (20 << 20), "2 MiB segment + 20 MiB mapping");
	cr_assert_eq(r->external_peak_index, 5);
	cr_assert_eq(r->external_end, 0);
	ms_stats_builder_free(b);
	ms_trace_free(t);
}

Test(interpose, without_a_trace_path_nothing_is_written, .init = make_dir, .fini = remove_dir)
{
	const char *argv[] = {MS_CUDA_PROG, "4", NULL};
	const char *env[] = {"LD_PRELOAD", MS_INTERPOSER, NULL};
	DIR *d;
	int n = 0;

	cr_assert_eq(chdir(g_dir), 0);
	unsetenv("MEMSNAP_RECORD");
	cr_assert_eq(run(argv, env), 4, "the program runs as it would");
	d = opendir(g_dir);
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	cr_assert_eq(n, 0);
}

Test(interpose, record_runs_the_program_and_keeps_its_exit_code, .init = make_dir,
     .fini = remove_dir)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/r.zst", g_dir);
	const char *argv[] = {MS_MEMSNAP, "record", "-o", path, "--", MS_CUDA_PROG, "5", NULL};
	cr_assert_eq(run(argv, NULL), 5);
	expect_program_events(path);
	/* options after the program are the program's */
	const char *argv2[] = {MS_MEMSNAP, "record", "-o", path, MS_CUDA_PROG, "0", "-o", NULL};
	cr_assert_eq(run(argv2, NULL), 0);
	expect_program_events(path);
	const char *argv3[] = {MS_MEMSNAP, "record", "-o", path, "--", "/nonexistent/prog", NULL};
	cr_assert_eq(run(argv3, NULL), 127);
	const char *argv4[] = {MS_MEMSNAP, "record", "--", MS_CUDA_PROG, NULL};
	cr_assert_eq(run(argv4, NULL), 2, "-o is required");
}

Test(interpose, processes_started_by_the_program_get_their_own_trace, .init = make_dir,
     .fini = remove_dir)
{
	char path[512], script[1024];
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "%s/w.zst", g_dir);
	snprintf(script, sizeof(script), "%s && %s", MS_CUDA_PROG, MS_CUDA_PROG);
	const char *argv[] = {MS_MEMSNAP, "record", "-o",   path, "--",
	                      "/bin/sh",  "-c",     script, NULL};
	cr_assert_eq(run(argv, NULL), 0);
	d = opendir(g_dir);
	for (struct dirent *e; (e = readdir(d));) {
		char p[1024];
		if (strncmp(e->d_name, "w.", 2) || strcmp(e->d_name, "w.zst") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", g_dir, e->d_name);
		expect_program_events(p);
		n++;
	}
	closedir(d);
	cr_assert_eq(n, 2, "one w.PID.zst per process");
}

/* The launcher's sitecustomize starts memsnap and still runs the program's own sitecustomize. */
Test(interpose, launcher_keeps_an_existing_sitecustomize, .init = make_dir, .fini = remove_dir)
{
	char site[512], marker[512], pypath[600];
	FILE *f;

	if (access("/usr/bin/python3", X_OK) != 0)
		cr_skip_test("no /usr/bin/python3");
	snprintf(site, sizeof(site), "%s/sitecustomize.py", g_dir);
	snprintf(marker, sizeof(marker), "%s/user-site-ran", g_dir);
	f = fopen(site, "w");
	cr_assert_not_null(f);
	fprintf(f, "open(%s, 'w').close()\n", "__import__('os').environ['MARKER']");
	fclose(f);
	snprintf(pypath, sizeof(pypath), "%s", g_dir);
	const char *env[] = {"PYTHONPATH", pypath, "MARKER", marker, NULL};
	/* exit 0 only if the memsnap module was loaded by the launcher's hook */
	const char *argv[] = {
	        MS_MEMSNAP, "record",
	        "-o",       "t.zst",
	        "--",       "/usr/bin/python3",
	        "-c",       "import sys; sys.exit(0 if 'memsnap._launch' in sys.modules else 5)",
	        NULL};
	cr_assert_eq(chdir(g_dir), 0);
	cr_assert_eq(run(argv, env), 0);
	cr_assert_eq(access(marker, F_OK), 0, "the program's sitecustomize ran too");
}

/* The GPU backends where they cannot run (CI: no GPU, no driver, no plugin): one error, exit 1. */
Test(interpose, gpu_backends_fail_cleanly_without_a_gpu)
{
	const char *trace = MS_TESTDATA "/snapshots/dynamic_oom.pickle";

	if (access("/dev/nvidia0", F_OK) == 0)
		cr_skip_test("a GPU is here: tests/gpu covers the backends");
	const char *a1[] = {MS_MEMSNAP, "replay", "--backend", "cuda", trace, NULL};
	cr_assert_eq(run(a1, NULL), 1);
	const char *a2[] = {MS_MEMSNAP, "verify", "--backend", "torch", trace, NULL};
	cr_assert_eq(run(a2, NULL), 1);
	const char *a3[] = {MS_MEMSNAP, "whatif", "--backend", "cuda", trace, NULL};
	cr_assert_eq(run(a3, NULL), 2, "whatif replays on sim only");
}
