/* An input opened once (source.h). */
#include "parse/source.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"

static const char *const pass_names[MS_PASS_COUNT] = {"devices", "whole", "replay",
                                                      "report",  "stats", "other"};

const char *ms_pass_name(unsigned pass)
{
	return pass < MS_PASS_COUNT ? pass_names[pass] : "?";
}

ms_status ms_source_open(const char *path, struct ms_source **out, struct ms_diag *diag)
{
	struct ms_source *src = ms_calloc(1, sizeof(*src));
	struct stat st;

	*out = NULL;
	if (!src || !(src->path = ms_strndup(path, strlen(path)))) {
		ms_free(src);
		return ms__diag_set(diag, MS_ERR_NOMEM, -1, -1, "out of memory");
	}
	src->whole_read = (struct ms_diag)MS_DIAG_INIT;
	pthread_mutex_init(&src->mu, NULL);
	if (!strcmp(path, "-")) { /* what it is comes with its first (and only) read */
		src->fd = 0;
		src->is_stdin = 1;
		*out = src;
		return MS_OK;
	}
	if ((src->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		ms__diag_set(diag, MS_ERR_IO, -1, -1, "cannot open: %s", strerror(errno));
		ms_source_close(src);
		return MS_ERR_IO;
	}
	if (fstat(src->fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		ms_source_close(src);
		return ms__diag_set(diag, MS_ERR_IO, -1, -1, "is a directory");
	}
	src->regular = fstat(src->fd, &st) == 0 && S_ISREG(st.st_mode);
	/* a named pipe or a device is read once, as standard input is */
	src->is_stdin = !src->regular;
	if (src->regular) { /* what it is, from its first bytes (a pipe's would be gone) */
		struct ms_input *in;
		struct ms_diag quiet = MS_DIAG_INIT;
		if (!ms_input_open_fd(src->fd, &in, &quiet)) {
			src->kind = ms_input_kind(in);
			ms_input_close(in);
		}
	}
	*out = src;
	return MS_OK;
}

void ms_source_close(struct ms_source *src)
{
	if (!src)
		return;
	if (strcmp(src->path, "-") != 0)
		close(src->fd);
	ms_trace_free(src->whole);
	ms_devices_release(&src->devices);
	pthread_mutex_destroy(&src->mu);
	ms_free(src->path);
	ms_free(src);
}

int ms_source_is_snapshot(const struct ms_source *src)
{
	return src->is_stdin || src->kind == MS_FILE_PICKLE || src->kind == MS_FILE_JSON;
}

ms_status ms_source_whole(struct ms_source *src, const struct ms_trace **t, struct ms_diag *diag)
{
	ms_status s;

	*t = NULL;
	if (!src->whole) {
		src->whole_read = (struct ms_diag)MS_DIAG_INIT;
		s = ms_trace_load_source(src, NULL, &src->whole, &src->whole_info,
		                         &src->whole_read);
		if (s) {
			*diag = src->whole_read;
			return s;
		}
	}
	*t = src->whole;
	ms_source_warnings(src, diag);
	return MS_OK;
}

void ms_source_warnings(const struct ms_source *src, struct ms_diag *diag)
{
	if (src->whole_read.warnings) {
		diag->warnings = src->whole_read.warnings;
		memcpy(diag->warning, src->whole_read.warning, sizeof(diag->warning));
	}
}

void ms_source_count(const struct ms_source *src, unsigned pass)
{
	/* counting changes nothing a reader sees of the source */
	struct ms_source *s = (struct ms_source *)(uintptr_t)src;
	if (pass < MS_PASS_COUNT)
		atomic_fetch_add(&s->passes[pass], 1);
}

unsigned ms_source_passes(const struct ms_source *src, unsigned pass)
{
	unsigned n = 0;

	for (unsigned k = 0; k < MS_PASS_COUNT; k++)
		if (pass == MS_PASS_COUNT || pass == k)
			n += atomic_load(&src->passes[k]);
	return n;
}
