/*
 * memsnap record -o TRACE [options] [--] PROGRAM [ARGS...]: run a program with
 * the recorder attached, the way ddtrace-run and opentelemetry-instrument do:
 * through the environment, so the program itself is not changed.
 *
 *   LD_PRELOAD   += libmemsnap_cuda.so       raw CUDA allocations (any program)
 *   PYTHONPATH   += <libdir>/python          sitecustomize.py: PyTorch's allocator,
 *                                            then the sitecustomize it hides
 *   MEMSNAP_*                                where and how to record
 *
 * memsnap waits for the program and exits with its exit status (128 + N when
 * signal N killed it, as shells do).
 */
#define _DEFAULT_SOURCE /* setenv, readlink */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cmds.h"
#include "cli/opts.h"
#include "cli/messages.h"
#include "format/trace_read.h"
#include "common/event.h"
#include "common/symtab.h"
#include "parse/trace.h"

static const char *const usage[] = {
        "memsnap record -o TRACE [--stacks none|python] [--max-frames N] [--flush-ms N]",
        "               [--no-torch] [--no-cuda] [--] PROGRAM [ARGS...]",
        "",
        "Run PROGRAM and stream every GPU memory event it makes into TRACE (a .zst trace),",
        "without changing the program. Two sources, each event marked with its source:",
        "PyTorch's caching allocator (every alloc, free, segment and OOM, through its trace",
        "tracker, from the moment PyTorch initialises CUDA), and raw CUDA calls (cudaMalloc,",
        "cudaFree, cudaMallocAsync, cudaFreeAsync, cuMemAlloc, cuMemFree, cuMemCreate,",
        "cuMemMap, cuMemUnmap: memory of NCCL, cuDNN, other libraries and programs without",
        "PyTorch) through an LD_PRELOAD interposer. The trace is written as the program runs,",
        "a frame at least every --flush-ms (default 100): a program that crashes, hangs or is",
        "killed leaves a readable trace. Python programs are hooked through a sitecustomize",
        "module that then runs the one it hides, so an existing sitecustomize keeps working.",
        "Processes the program starts record to TRACE's name plus .PID (workers, ranks).",
        "",
        "memsnap exits with the program's exit status (128+N if signal N ended it); its own",
        "errors: 2 usage, 126 the program cannot run, 127 it was not found, 1 anything else.",
        NULL,
};

/* Prepend value to the ':'-separated variable name. */
static int env_prepend(const char *name, const char *value)
{
	const char *old = getenv(name);
	size_t n = strlen(value) + (old ? strlen(old) : 0) + 2;
	char *buf = malloc(n);
	int rc;

	if (!buf)
		return -1;
	snprintf(buf, n, "%s%s%s", value, old && *old ? ":" : "", old && *old ? old : "");
	rc = setenv(name, buf, 1);
	free(buf);
	return rc;
}

static pid_t g_child;

static void forward(int sig)
{
	if (g_child > 0)
		kill(g_child, sig);
}

/* One line about a trace written. */
static void summary(const char *path)
{
	struct ms_trace *t = NULL;
	struct ms_source_info info;
	struct ms_diag d = MS_DIAG_INIT;
	struct stat st;
	ms_status s;

	if (stat(path, &st) != 0)
		return;
	s = ms_trace_load(path, NULL, &t, &info, &d);
	if (s) {
		ms_report(path, s, &d);
		return;
	}
	uint64_t by_src[2] = {0, 0};
	for (size_t i = 0; i < t->n_events; i++)
		by_src[t->events[i].source ? 1 : 0]++;
	ms_said("%s: %zu events (%llu from PyTorch, %llu from CUDA calls), %.2f "
	        "bytes/event"
	        "%s",
	        path, t->n_events, (unsigned long long)by_src[0], (unsigned long long)by_src[1],
	        t->n_events ? (double)st.st_size / (double)t->n_events : 0.0,
	        info.zst.has_end ? "" : ", not finished (the program was killed)");
	if (info.zst.dropped_events)
		ms_warning("%s: the recorder dropped %llu events", path,
		           (unsigned long long)info.zst.dropped_events);
	ms_trace_free(t);
}

/*
 * A stale trace from an earlier run must not pass for this one's, and nothing else is ever lost:
 * an earlier memsnap trace at the path is kept as PATH.old (as perf record does), and any other
 * file there is refused with one line before the program runs.
 */
static void keep_earlier_trace(const char *out, const char *abs_out)
{
	unsigned char head[64];
	char old[PATH_MAX + 8];
	struct stat st;
	FILE *f;
	size_t n;

	if (lstat(abs_out, &st) != 0) {
		if (errno != ENOENT)
			ms_die(MS_EXIT_ERROR, "%s: %s", out, strerror(errno));
		return;
	}
	if (!S_ISREG(st.st_mode))
		ms_die(MS_EXIT_ERROR, "%s: exists and is not a file; choose another -o", out);
	if (!(f = fopen(abs_out, "rb")))
		ms_die(MS_EXIT_ERROR, "%s: %s", out, strerror(errno));
	n = fread(head, 1, sizeof(head), f);
	fclose(f);
	if (st.st_size && !ms_zst_sniff(head, n))
		ms_die(MS_EXIT_ERROR,
		       "%s: exists and is not a memsnap trace; refusing to replace it (choose "
		       "another -o)",
		       out);
	snprintf(old, sizeof(old), "%s.old", abs_out);
	/* an earlier .old is replaced only if it is a trace too */
	if ((f = fopen(old, "rb"))) {
		n = fread(head, 1, sizeof(head), f);
		fclose(f);
		if (lstat(old, &st) != 0 || !S_ISREG(st.st_mode) ||
		    (st.st_size && !ms_zst_sniff(head, n)))
			ms_die(MS_EXIT_ERROR,
			       "%s.old: exists and is not a memsnap trace; refusing to replace it "
			       "(choose another -o)",
			       out);
	}
	if (rename(abs_out, old) != 0)
		ms_die(MS_EXIT_ERROR, "%s: cannot keep the earlier trace as %s.old: %s", out, out,
		       strerror(errno));
	ms_note("the earlier trace %s is kept as %s.old", out, out);
}

/* Where memsnap's options end: at "--" or at the program (its own options are the program's). */
static int options_end(int argc, const char **argv)
{
	int end;

	for (end = 1; end < argc; end++) {
		const char *a = argv[end];
		if (strcmp(a, "--") == 0 || a[0] != '-')
			break;
		if ((strcmp(a, "-o") == 0 ||
		     (a[1] == '-' && !strchr(a, '=') &&
		      (strcmp(a, "--output") == 0 || strcmp(a, "--stacks") == 0 ||
		       strcmp(a, "--max-frames") == 0 || strcmp(a, "--flush-ms") == 0))) &&
		    end + 1 < argc)
			end++;
	}
	return end;
}

/* What the recorder in the program reads: the trace, its libraries, its options, preloaded. */
static void set_environment(const char *abs_out, const char *libdir, const char *stacks,
                            int max_frames, int flush_ms, int no_torch, int no_cuda)
{
	char buf[PATH_MAX + 64];

	setenv("MEMSNAP_RECORD", abs_out, 1);
	setenv("MEMSNAP_LIBDIR", libdir, 1);
	setenv("MEMSNAP_RECORD_STACKS", stacks, 1);
	snprintf(buf, sizeof(buf), "%d", max_frames);
	setenv("MEMSNAP_RECORD_MAX_FRAMES", buf, 1);
	snprintf(buf, sizeof(buf), "%d", flush_ms);
	setenv("MEMSNAP_RECORD_FLUSH_MS", buf, 1);
	setenv("MEMSNAP_RECORD_TORCH", no_torch ? "0" : "1", 1);
	if (ms_path_join(buf, sizeof(buf), libdir, "python"))
		ms_die(MS_EXIT_ERROR, "%s: path too long", libdir);
	if (!no_torch && env_prepend("PYTHONPATH", buf))
		ms_die(MS_EXIT_ERROR, "out of memory");
	if (!no_cuda) {
		if (ms_path_join(buf, sizeof(buf), libdir, "libmemsnap_cuda.so") ||
		    access(buf, R_OK) != 0)
			ms_die(MS_EXIT_ERROR, "%s: %s", buf, strerror(errno));
		if (env_prepend("LD_PRELOAD", buf))
			ms_die(MS_EXIT_ERROR, "out of memory");
	}
}

/* The summary of the program's trace and of those of the processes it started (TRACE.PID.zst);
 * how many there were. */
static size_t summaries(const char *abs_out)
{
	char buf[PATH_MAX + 64];
	glob_t g;
	size_t n = strlen(abs_out), found = access(abs_out, F_OK) == 0;
	int len;

	if (found)
		summary(abs_out);
	if (n > 4 && strcmp(abs_out + n - 4, ".zst") == 0)
		n -= 4;
	len = snprintf(buf, sizeof(buf), "%.*s.[0-9]*.zst", (int)n, abs_out);
	if (len > 0 && (size_t)len < sizeof(buf) && glob(buf, 0, NULL, &g) == 0) {
		for (size_t k = 0; k < g.gl_pathc; k++)
			summary(g.gl_pathv[k]);
		found += g.gl_pathc;
		globfree(&g);
	}
	return found;
}

int cmd_record(int argc, const char **argv)
{
	const char *out = NULL, *stacks = "none";
	int max_frames = 64, flush_ms = 100, no_torch = 0, no_cuda = 0, status;
	char libdir[PATH_MAX], buf[PATH_MAX + 64], abs_out[PATH_MAX];
	const char **prog;
	const struct ms_opt opts[] = {
	        MS_OPT_STRING('o', "output", &out, "TRACE", "the trace to write (required)"),
	        MS_OPT_STRING(0, "stacks", &stacks, "KIND",
	                      "none (default) or python: the Python stack of each allocation"),
	        MS_OPT_INT(0, "max-frames", &max_frames, "N", "deepest stack kept (default 64)"),
	        MS_OPT_INT(0, "flush-ms", &flush_ms, "N",
	                   "longest time before an event is in the file, 1..100 (default 100)"),
	        MS_OPT_BOOL(0, "no-torch", &no_torch, "do not hook PyTorch's allocator"),
	        MS_OPT_BOOL(0, "no-cuda", &no_cuda, "do not interpose raw CUDA calls"),
	        MS_OPT_END(),
	};
	int end = options_end(argc, argv);

	if (ms_parse_options(end, argv, opts, usage) != 0)
		ms_usage_error(opts, usage, "unexpected argument '%s'", argv[1]);
	if (end < argc && strcmp(argv[end], "--") == 0)
		end++;
	if (end >= argc)
		ms_usage_error(opts, usage, "no program to run");
	if (!out)
		ms_usage_error(opts, usage, "-o TRACE is required");
	if (strcmp(stacks, "none") && strcmp(stacks, "python"))
		ms_usage_error(opts, usage, "--stacks must be none or python");
	if (flush_ms < 1 || flush_ms > 100)
		ms_usage_error(opts, usage, "--flush-ms must be within 1..100");
	if (max_frames < 1 || max_frames > 256)
		ms_usage_error(opts, usage, "--max-frames must be within 1..256");
	prog = argv + end;

	if (ms_find_libdir(libdir, sizeof(libdir)))
		ms_die(MS_EXIT_ERROR, "cannot find the recorder's libraries (set MEMSNAP_LIBDIR)");
	{
		char cwd[PATH_MAX];
		if (out[0] != '/' && !getcwd(cwd, sizeof(cwd)))
			ms_die(MS_EXIT_ERROR, "getcwd: %s", strerror(errno));
		if (ms_path_join(abs_out, sizeof(abs_out), out[0] == '/' ? NULL : cwd, out))
			ms_die(MS_EXIT_ERROR, "%s: path too long", out);
	}
	keep_earlier_trace(out, abs_out);

	set_environment(abs_out, libdir, stacks, max_frames, flush_ms, no_torch, no_cuda);
	fflush(NULL);

	g_child = fork();
	if (g_child < 0)
		ms_die(MS_EXIT_ERROR, "fork: %s", strerror(errno));
	if (g_child == 0) {
		snprintf(buf, sizeof(buf), "%d", (int)getpid());
		setenv("MEMSNAP_RECORD_ROOT_PID", buf, 1);
		execvp(prog[0], (char *const *)prog);
		ms_error("%s: %s", prog[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	/* Ctrl-C reaches the program through the terminal; forward what is sent to memsnap alone */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGTERM, forward);
	signal(SIGHUP, forward);
	while (waitpid(g_child, &status, 0) < 0)
		if (errno != EINTR)
			ms_die(MS_EXIT_ERROR, "waitpid: %s", strerror(errno));
	if (!summaries(abs_out) && !(WIFEXITED(status) && WEXITSTATUS(status) >= 126))
		ms_warning("%s: not written: the program made no CUDA allocation memsnap saw", out);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status)) {
		ms_error("%s: killed by signal %d", prog[0], WTERMSIG(status));
		return 128 + WTERMSIG(status);
	}
	return MS_EXIT_ERROR;
}
