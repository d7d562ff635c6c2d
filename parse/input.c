/* Opening input files: sniffing, zstd/gzip streaming decompression, whole-file mapping. */
#define _DEFAULT_SOURCE
#include "parse/input.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "common/alloc.h"
#include "common/status.h"
#include "memsnap/format.h"

#define IN_CHUNK    (1u << 20)
#define FIRST_CHUNK 4096

struct ms_input {
	int fd;
	int own_fd;
	uint64_t off; /* a regular file: where the next read starts (pread: fd's offset is not
	                 ours, another input may read the same descriptor) */
	int regular;  /* a regular file (not a pipe or a device) */
	uint64_t file_size;
	enum ms_compression comp;
	unsigned char *in; /* raw bytes read from fd */
	size_t in_pos, in_len;
	int raw_eof;
	int filled;         /* fill_raw has read once */
	uint64_t raw_total; /* bytes read from the file */
	size_t zst_left;    /* ZSTD_decompressStream's last answer: 0 at the end of a frame */
	ZSTD_DCtx *zd;
	z_stream gz;
	int gz_init;
	int done;
	/* decompressed bytes peeked for sniffing, handed out first */
	unsigned char peek[16];
	size_t peek_len, peek_pos;
	int peeked;
	int is_trace;
	/* what went wrong while peeking (a compressed file cut off before its first bytes) */
	ms_status peek_status;
	struct ms_diag peek_diag;
};

/* Up to cap raw bytes of the file: from in->off for a regular file, else what comes. */
static ssize_t raw_read(struct ms_input *in, void *buf, size_t cap)
{
	ssize_t n;

	do
		n = in->regular ? pread(in->fd, buf, cap, (off_t)in->off) : read(in->fd, buf, cap);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		in->off += (uint64_t)n;
	return n;
}

static ms_status fill_raw(struct ms_input *in, struct ms_diag *diag)
{
	ssize_t n;

	if (in->in_pos < in->in_len || in->raw_eof)
		return MS_OK;
	/*
	 * The first read only needs the magic bytes and what sniffing peeks at: kept small, so
	 * that an uncompressed file is then read straight into the caller's buffer (read_decomp)
	 * instead of through this one and a copy.
	 */
	n = raw_read(in, in->in, in->filled ? IN_CHUNK : FIRST_CHUNK);
	in->filled = 1;
	if (n < 0)
		return ms__diag_set(diag, MS_ERR_IO, -1, -1, "read error: %s", strerror(errno));
	in->in_pos = 0;
	in->in_len = (size_t)n;
	in->raw_total += (uint64_t)n;
	if (n == 0)
		in->raw_eof = 1;
	return MS_OK;
}

static ms_status start(struct ms_input *in, struct ms_input **out, struct ms_diag *diag);

ms_status ms_input_open(const char *path, struct ms_input **out, struct ms_diag *diag)
{
	struct ms_input *in = ms_calloc(1, sizeof(*in));

	if (!in)
		return ms__diag_set(diag, MS_ERR_NOMEM, -1, -1, "out of memory");
	if (strcmp(path, "-") == 0) {
		in->fd = 0;
	} else {
		in->fd = open(path, O_RDONLY);
		if (in->fd < 0) {
			ms__diag_set(diag, MS_ERR_IO, -1, -1, "cannot open: %s", strerror(errno));
			ms_free(in);
			return MS_ERR_IO;
		}
		in->own_fd = 1;
	}
	return start(in, out, diag);
}

ms_status ms_input_open_fd(int fd, struct ms_input **out, struct ms_diag *diag)
{
	struct ms_input *in = ms_calloc(1, sizeof(*in));

	if (!in)
		return ms__diag_set(diag, MS_ERR_NOMEM, -1, -1, "out of memory");
	in->fd = fd;
	return start(in, out, diag);
}

/* in's descriptor open: what it is, its first bytes, its compression. */
static ms_status start(struct ms_input *in, struct ms_input **out, struct ms_diag *diag)
{
	struct stat st;
	ms_status s;

	if (fstat(in->fd, &st) == 0 && S_ISREG(st.st_mode)) {
		in->regular = 1;
		in->file_size = (uint64_t)st.st_size;
	} else if (fstat(in->fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		ms_input_close(in);
		return ms__diag_set(diag, MS_ERR_IO, -1, -1, "is a directory");
	}
	in->in = ms_malloc(IN_CHUNK);
	if (!in->in) {
		ms_input_close(in);
		return ms__diag_set(diag, MS_ERR_NOMEM, -1, -1, "out of memory");
	}
	if ((s = fill_raw(in, diag))) {
		ms_input_close(in);
		return s;
	}
	/* compression from the magic bytes, never from the file name */
	if (in->in_len >= 4 && (in->in[0] & 0xf0) == 0x50 &&
	    memcmp(in->in + 1, "\x2a\x4d\x18", 3) == 0) {
		/* starts with a zstd skippable frame: a trace, or the reader says why not */
		in->is_trace = 1;
	} else if (in->in_len >= 4 && memcmp(in->in, "\x28\xb5\x2f\xfd", 4) == 0) {
		in->comp = MS_COMP_ZSTD;
		in->zd = ZSTD_createDCtx();
		if (!in->zd) {
			ms_input_close(in);
			return ms__diag_set(diag, MS_ERR_NOMEM, -1, -1, "out of memory");
		}
	} else if (in->in_len >= 2 && in->in[0] == 0x1f && in->in[1] == 0x8b) {
		in->comp = MS_COMP_GZIP;
		memset(&in->gz, 0, sizeof(in->gz));
		if (inflateInit2(&in->gz, 15 + 32) != Z_OK) {
			ms_input_close(in);
			return ms__diag_set(diag, MS_ERR_NOMEM, -1, -1,
			                    "cannot start gzip decoder");
		}
		in->gz_init = 1;
	} else if (in->in_len && in->in_len < 4 &&
	           (!memcmp(in->in, "\x28\xb5\x2f\xfd", in->in_len) ||
	            ((in->in[0] & 0xf0) == 0x50 &&
	             !memcmp(in->in + 1, "\x2a\x4d\x18", in->in_len - 1)))) {
		/* the whole file is the start of a zstd magic number */
		size_t n = in->in_len;
		ms_input_close(in);
		return ms__diag_set(diag, MS_ERR_TRUNCATED, 0, -1,
		                    "cut off: the file is %zu byte%s long, the start of a zstd "
		                    "frame's magic number",
		                    n, n == 1 ? "" : "s");
	}
	*out = in;
	return MS_OK;
}

static ms_status read_decomp(struct ms_input *in, void *buf, size_t cap, size_t *got,
                             struct ms_diag *diag)
{
	*got = 0;
	while (*got == 0 && !in->done) {
		if (in->comp == MS_COMP_NONE && in->in_pos == in->in_len && !in->raw_eof &&
		    cap >= 65536) {
			/* nothing buffered and a large request: read straight into it, one copy
			 * less */
			ssize_t n = raw_read(in, buf, cap);
			if (n < 0)
				return ms__diag_set(diag, MS_ERR_IO, -1, -1, "read error: %s",
				                    strerror(errno));
			if (n == 0)
				in->raw_eof = in->done = 1;
			*got = (size_t)n;
			break;
		}
		MS_TRY(fill_raw(in, diag));
		if (in->comp == MS_COMP_NONE) {
			size_t n = in->in_len - in->in_pos;
			if (n > cap)
				n = cap;
			memcpy(buf, in->in + in->in_pos, n);
			in->in_pos += n;
			*got = n;
			if (in->raw_eof)
				in->done = 1;
		} else if (in->comp == MS_COMP_ZSTD) {
			ZSTD_inBuffer ib = {in->in, in->in_len, in->in_pos};
			ZSTD_outBuffer ob = {buf, cap, 0};
			size_t r;
			if (in->raw_eof && !in->zst_left) {
				in->done = 1;
				break;
			}
			/* at the end of the file, what zstd still holds is flushed first */
			r = ZSTD_decompressStream(in->zd, &ob, &ib);
			if (ZSTD_isError(r))
				return ms__diag_set(diag, MS_ERR_COMPRESSION, -1, -1, "zstd: %s",
				                    ZSTD_getErrorName(r));
			in->in_pos = ib.pos;
			in->zst_left = r;
			*got = ob.pos;
			if (in->raw_eof && !ob.pos) {
				if (r)
					return ms__diag_set(
					        diag, MS_ERR_FORMAT, (int64_t)in->raw_total, -1,
					        "the zstd stream ends inside a frame at byte "
					        "%llu: the file is cut off",
					        (unsigned long long)in->raw_total);
				in->done = 1;
				break;
			}
		} else {
			int r;
			if (in->raw_eof) {
				in->done = 1;
				break;
			}
			in->gz.next_in = in->in + in->in_pos;
			in->gz.avail_in = (uInt)(in->in_len - in->in_pos);
			in->gz.next_out = buf;
			in->gz.avail_out = (uInt)(cap > (1u << 30) ? (1u << 30) : cap);
			r = inflate(&in->gz, Z_NO_FLUSH);
			if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR)
				return ms__diag_set(diag, MS_ERR_COMPRESSION, -1, -1, "gzip: %s",
				                    in->gz.msg ? in->gz.msg : "corrupt data");
			*got = (size_t)((unsigned char *)in->gz.next_out - (unsigned char *)buf);
			in->in_pos = in->in_len - in->gz.avail_in;
			if (r == Z_STREAM_END) {
				/* concatenated gzip members are allowed */
				if (inflateReset(&in->gz) != Z_OK)
					return MS_ERR_COMPRESSION;
			}
		}
	}
	return MS_OK;
}

int ms_input_empty(const struct ms_input *in)
{
	return in->regular ? in->file_size == 0 : in->raw_total == 0 && in->peek_len == 0;
}

enum ms_file_kind ms_input_kind(struct ms_input *in)
{
	size_t i;

	if (in->is_trace)
		return MS_FILE_TRACE;
	if (!in->peeked) {
		in->peeked = 1;
		in->peek_diag = (struct ms_diag)MS_DIAG_INIT;
		while (in->peek_len < sizeof(in->peek)) {
			size_t got;
			if ((in->peek_status = read_decomp(in, in->peek + in->peek_len,
			                                   sizeof(in->peek) - in->peek_len, &got,
			                                   &in->peek_diag)) ||
			    got == 0)
				break;
			in->peek_len += got;
		}
	}
	if (in->peek_len >= 2 && in->peek[0] == 0x80)
		return MS_FILE_PICKLE;
	/* protocol 0/1 pickles have no PROTO: the unpickler refuses them with a precise reason */
	if (in->peek_len >= 1 && strchr("c(}])", in->peek[0]) && in->peek[0])
		return MS_FILE_PICKLE;
	for (i = 0; i < in->peek_len; i++) {
		unsigned char c = in->peek[i];
		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		if (c == '{' || c == '[')
			return MS_FILE_JSON;
		break;
	}
	return MS_FILE_UNKNOWN;
}

ms_status ms_input_peek_error(const struct ms_input *in, struct ms_diag *diag)
{
	if (!in->peek_status || in->peek_len)
		return MS_OK;
	if (diag)
		*diag = in->peek_diag;
	return in->peek_status;
}

ms_status ms_input_read(struct ms_input *in, void *buf, size_t cap, size_t *got,
                        struct ms_diag *diag)
{
	if (in->peek_pos < in->peek_len) {
		size_t n = in->peek_len - in->peek_pos;
		if (n > cap)
			n = cap;
		memcpy(buf, in->peek + in->peek_pos, n);
		in->peek_pos += n;
		*got = n;
		return MS_OK;
	}
	return read_decomp(in, buf, cap, got, diag);
}

enum ms_compression ms_input_compression(const struct ms_input *in)
{
	return in->comp;
}

uint64_t ms_input_file_size(const struct ms_input *in)
{
	return in->file_size;
}

int ms_input_is_regular(const struct ms_input *in)
{
	return in->regular;
}

ms_status ms_input_drain(struct ms_input *in, struct ms_diag *diag)
{
	char buf[4096];
	size_t got;

	if (in->comp == MS_COMP_NONE)
		return MS_OK;
	do
		MS_TRY(read_decomp(in, buf, sizeof(buf), &got, diag));
	while (!in->done);
	return MS_OK;
}

void ms_input_close(struct ms_input *in)
{
	if (!in)
		return;
	if (in->own_fd)
		close(in->fd);
	ZSTD_freeDCtx(in->zd);
	if (in->gz_init)
		inflateEnd(&in->gz);
	ms_free(in->in);
	ms_free(in);
}

/* The first len bytes of the regular file fd, read-only and read ahead. */
static ms_status map_fd(int fd, size_t len, struct ms_mapped *m, struct ms_diag *diag)
{
	void *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);

	if (p == MAP_FAILED)
		return ms__diag_set(diag, MS_ERR_IO, -1, -1, "cannot map: %s", strerror(errno));
	madvise(p, len, MADV_SEQUENTIAL);
	m->data = p;
	m->len = len;
	m->is_mmap = 1;
	m->let_go = 0;
	return MS_OK;
}

ms_status ms_input_map(const char *path, struct ms_mapped *m, struct ms_diag *diag)
{
	int fd = 0;
	struct stat st;
	char *buf = NULL;
	size_t n = 0, cap = 0;

	if (strcmp(path, "-") != 0) {
		fd = open(path, O_RDONLY);
		if (fd < 0)
			return ms__diag_set(diag, MS_ERR_IO, -1, -1, "cannot open: %s",
			                    strerror(errno));
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
		ms_status s = map_fd(fd, (size_t)st.st_size, m, diag);
		if (fd)
			close(fd);
		return s;
	}
	for (;;) {
		ssize_t r;
		if (ms_grow(&buf, &cap, n + IN_CHUNK, 1)) {
			ms_free(buf);
			if (fd)
				close(fd);
			return ms__diag_set(diag, MS_ERR_NOMEM, -1, -1, "out of memory");
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ms_free(buf);
			if (fd)
				close(fd);
			return ms__diag_set(diag, MS_ERR_IO, -1, -1, "read error: %s",
			                    strerror(errno));
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (fd)
		close(fd);
	m->data = buf;
	m->len = n;
	m->is_mmap = 0;
	m->let_go = 0;
	return MS_OK;
}

ms_status ms_input_map_file(const struct ms_input *in, struct ms_mapped *m, struct ms_diag *diag)
{
	struct stat st;

	memset(m, 0, sizeof(*m));
	if (fstat(in->fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > SIZE_MAX)
		return ms__diag_set(diag, MS_ERR_IO, -1, -1,
		                    "not a regular file: cannot be mapped");
	if (st.st_size == 0) { /* nothing to map: an empty buffer of its own */
		if (!(m->data = ms_malloc(1)))
			return ms__diag_set(diag, MS_ERR_NOMEM, -1, -1, "out of memory");
		return MS_OK;
	}
	return map_fd(in->fd, (size_t)st.st_size, m, diag);
}

ms_status ms_input_map_plain(const struct ms_input *in, struct ms_mapped *m, struct ms_diag *diag)
{
	struct stat st;

	memset(m, 0, sizeof(*m));
	if (in->comp != MS_COMP_NONE || fstat(in->fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size <= 0 || (uint64_t)st.st_size > SIZE_MAX)
		return MS_OK;
	return map_fd(in->fd, (size_t)st.st_size, m, diag);
}

#define LET_GO_STEP  ((size_t)32 << 20)
#define LET_GO_SLACK ((size_t)4 << 20)

void ms_input_mapped_read(struct ms_mapped *m, uint64_t done)
{
	size_t page, to;

	if (!m->is_mmap || done > m->len || done < (uint64_t)m->let_go + LET_GO_STEP + LET_GO_SLACK)
		return;
	page = (size_t)sysconf(_SC_PAGESIZE);
	to = ((size_t)done - LET_GO_SLACK) / page * page;
	/* the mapping starts on a page; an error leaves the pages resident, nothing else */
	madvise((char *)m->data + m->let_go, to - m->let_go, MADV_DONTNEED);
	m->let_go = to;
}

void ms_input_unmap(struct ms_mapped *m)
{
	if (!m || !m->data)
		return;
	if (m->is_mmap)
		munmap((void *)m->data, m->len);
	else
		ms_free((void *)m->data);
	memset(m, 0, sizeof(*m));
}
