/* Output files: refused over an input, written through a temporary file, renamed when whole. */
#define _DEFAULT_SOURCE /* mkstemp, fchmod, realpath */
#include "cli/output_file.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/messages.h"
#include "common/alloc.h"

/* Exit 1 with one line where out cannot be written: out is a folder, or the folder the temporary
 * file goes to is missing or not writable (a device or a FIFO is written in place: not asked).
 * Said before the work, not after it. */
static void refuse_unwritable(const char *out)
{
	const char *slash = strrchr(out, '/');
	char dir[4096];
	struct stat so;
	int there = stat(out, &so) == 0;

	if (there && S_ISDIR(so.st_mode))
		ms_die(MS_EXIT_ERROR, "%s: cannot write: it is a directory", out);
	if (there && !S_ISREG(so.st_mode))
		return;
	if (slash == out)
		snprintf(dir, sizeof(dir), "/");
	else if (slash)
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - out), out);
	else
		snprintf(dir, sizeof(dir), ".");
	if (access(dir, W_OK | X_OK) != 0)
		ms_die(MS_EXIT_ERROR, "%s: cannot write: %s: %s", out, dir, strerror(errno));
}

void ms_output_refuse_inputs(const char *out, const char *flag, const char *const *inputs, size_t n)
{
	struct stat so, si;

	if (!out || !strcmp(out, "-"))
		return;
	refuse_unwritable(out);
	if (stat(out, &so) != 0)
		return; /* nothing there yet (or unreadable: opening it will say so) */
	for (size_t i = 0; i < n; i++) {
		if (!inputs[i] || !strcmp(inputs[i], "-") || stat(inputs[i], &si) != 0)
			continue;
		if (so.st_dev == si.st_dev && so.st_ino == si.st_ino)
			ms_die(MS_EXIT_ERROR,
			       "%s: refusing to write the output over the input '%s' (the same "
			       "file); choose another %s",
			       out, inputs[i], flag);
	}
}

int ms_same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (!strcmp(a, b))
		return 1;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/*
 * The temporary file a fatal signal must remove. One output is open at a time; the path is
 * copied into a static buffer so that the handler needs nothing but unlink (async-signal-safe).
 */
static char g_tmp[4096];
static volatile sig_atomic_t g_have_tmp;
static const int g_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
static struct sigaction g_old[sizeof(g_signals) / sizeof(g_signals[0])];

static void on_fatal(int sig)
{
	if (g_have_tmp)
		unlink(g_tmp);
	for (size_t i = 0; i < sizeof(g_signals) / sizeof(g_signals[0]); i++)
		if (g_signals[i] == sig)
			sigaction(sig, &g_old[i], NULL); /* what the signal did before */
	raise(sig);
}

/* An exit while a temporary file is open (ms_die on running out of memory) removes it too. */
static void at_exit(void)
{
	if (g_have_tmp)
		unlink(g_tmp);
}

static void guard(const char *tmp)
{
	static int registered;
	struct sigaction sa;
	size_t n = strlen(tmp);

	if (!registered++)
		atexit(at_exit);

	if (n >= sizeof(g_tmp))
		return; /* mkstemp made it, so the path fits PATH_MAX; never happens on Linux */
	memcpy(g_tmp, tmp, n + 1);
	g_have_tmp = 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(g_signals) / sizeof(g_signals[0]); i++) {
		sigaction(g_signals[i], NULL, &g_old[i]);
		/* a signal the caller ignores (nohup's SIGHUP) stays ignored */
		if (g_old[i].sa_handler != SIG_IGN)
			sigaction(g_signals[i], &sa, NULL);
	}
}

static void unguard(void)
{
	if (!g_have_tmp)
		return;
	for (size_t i = 0; i < sizeof(g_signals) / sizeof(g_signals[0]); i++)
		sigaction(g_signals[i], &g_old[i], NULL);
	g_have_tmp = 0;
}

/*
 * Whether path is written in place rather than replaced: a device or a pipe (a FIFO), and a
 * symbolic link to anything but a regular file (/dev/stdout, /proc/self/fd/N, a link whose
 * target does not exist yet). A link to a regular file is replaced at its target (*real,
 * ms_free'd by the caller), never the link itself.
 */
static int in_place(const char *path, char **real)
{
	struct stat st, lst;

	*real = NULL;
	if (lstat(path, &lst) != 0)
		return 0; /* a new file */
	if (!S_ISLNK(lst.st_mode))
		return !S_ISREG(lst.st_mode);
	if (!strncmp(path, "/dev/", 5) || !strncmp(path, "/proc/", 6) || stat(path, &st) != 0 ||
	    !S_ISREG(st.st_mode))
		return 1;
	{
		char *r = realpath(path, NULL); /* libc's malloc: copied into ours */
		if (!r || !strncmp(r, "/proc/", 6)) {
			free(r);
			return 1;
		}
		if ((*real = ms_malloc(strlen(r) + 1)))
			memcpy(*real, r, strlen(r) + 1);
		free(r);
		if (!*real)
			ms_die(MS_EXIT_ERROR, "out of memory");
	}
	return 0;
}

int ms_output_open(struct ms_output *o, const char *path)
{
	size_t n;
	int fd;
	mode_t mask;
	char *real;

	memset(o, 0, sizeof(*o));
	o->path = path;
	if (!strcmp(path, "-")) {
		o->f = stdout;
		return 0;
	}
	if (in_place(path, &real)) {
		/* a device or a pipe (/dev/stdout, a FIFO): written in place, never replaced */
		if (!(o->f = fopen(path, "wb"))) {
			ms_error("%s: cannot write: %s", path, strerror(errno));
			return -1;
		}
		return 0;
	}
	o->dest = real; /* a link's regular file: replaced there, the link kept */
	n = strlen(real ? real : path);
	if (!(o->tmp = ms_malloc(n + 16)))
		ms_die(MS_EXIT_ERROR, "out of memory");
	snprintf(o->tmp, n + 16, "%s.tmp.XXXXXX", real ? real : path);
	if ((fd = mkstemp(o->tmp)) < 0) {
		ms_error("%s: cannot write: %s", path, strerror(errno));
		ms_free(o->tmp);
		o->tmp = NULL;
		return -1;
	}
	guard(o->tmp);
	/* mkstemp creates 0600; the output gets the usual 0666 less the umask */
	mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask) != 0 || !(o->f = fdopen(fd, "wb"))) {
		ms_error("%s: cannot write: %s", path, strerror(errno));
		close(fd);
		ms_output_abort(o);
		return -1;
	}
	return 0;
}

void ms_output_abort(struct ms_output *o)
{
	if (o->f && o->f != stdout)
		fclose(o->f);
	o->f = NULL;
	if (o->tmp) {
		unlink(o->tmp);
		unguard();
		ms_free(o->tmp);
		o->tmp = NULL;
	}
	ms_free(o->dest);
	o->dest = NULL;
}

int ms_output_commit(struct ms_output *o)
{
	int ok;

	if (!o->tmp && o->f == stdout) {
		if (fflush(stdout) != 0 || ferror(stdout)) {
			ms_error("write error on standard output");
			return -1;
		}
		return 0;
	}
	if (!o->tmp) { /* a device or a pipe, written in place */
		ok = !ferror(o->f);
		ok = fclose(o->f) == 0 && ok;
		o->f = NULL;
		if (!ok) {
			ms_error("%s: cannot write: %s", o->path, strerror(errno ? errno : EIO));
			return -1;
		}
		return 0;
	}
	ok = !ferror(o->f);
	ok = fclose(o->f) == 0 && ok;
	o->f = NULL;
	if (!ok || rename(o->tmp, o->dest ? o->dest : o->path) != 0) {
		ms_error("%s: cannot write: %s", o->path, strerror(errno ? errno : EIO));
		ms_output_abort(o);
		return -1;
	}
	unguard();
	ms_free(o->tmp);
	o->tmp = NULL;
	ms_free(o->dest);
	o->dest = NULL;
	return 0;
}

int ms_output_write_whole(const char *path, const void *data, size_t len)
{
	struct ms_output o;

	if (ms_output_open(&o, path))
		return -1;
	if (fwrite(data, 1, len, o.f) != len) {
		ms_error("%s: cannot write: %s", path, strerror(errno));
		ms_output_abort(&o);
		return -1;
	}
	return ms_output_commit(&o);
}
