/*
 * Input files: opening, sniffing and streaming decompression (zstd, gzip) of
 * snapshot files, and whole-file mapping of .zst traces. "-" is stdin.
 */
#ifndef MEMSNAP_PARSE_INPUT_H
#define MEMSNAP_PARSE_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "memsnap/memsnap.h"

enum ms_file_kind {
	MS_FILE_UNKNOWN = 0,
	MS_FILE_TRACE,  /* memsnap .zst trace */
	MS_FILE_PICKLE, /* PyTorch snapshot pickle (possibly compressed) */
	MS_FILE_JSON,   /* snapshot as JSON (possibly compressed) */
};

enum ms_compression { MS_COMP_NONE = 0, MS_COMP_ZSTD, MS_COMP_GZIP };

struct ms_input;

/*
 * Open path for streaming reads of its decompressed content.
 * @return MS_OK, MS_ERR_IO, MS_ERR_NOMEM
 */
ms_status ms_input_open(const char *path, struct ms_input **out, struct ms_diag *diag);
/*
 * As ms_input_open, over a descriptor the caller keeps open (ms_input_close leaves it): a
 * regular file is read from its start with pread, so that several inputs may read one
 * descriptor, one after another or at once.
 */
ms_status ms_input_open_fd(int fd, struct ms_input **out, struct ms_diag *diag);
/* Read up to cap decompressed bytes; *got == 0 means end of input. */
ms_status ms_input_read(struct ms_input *in, void *buf, size_t cap, size_t *got,
                        struct ms_diag *diag);
/* What the file holds, from its first bytes (after decompression). */
enum ms_file_kind ms_input_kind(struct ms_input *in);
/* Why ms_input_kind() saw no byte of a compressed file (cut off, corrupt), into diag; MS_OK when it
 * saw some or nothing failed. */
ms_status ms_input_peek_error(const struct ms_input *in, struct ms_diag *diag);
enum ms_compression ms_input_compression(const struct ms_input *in);
/* Size of the file on disk (0 for pipes). */
uint64_t ms_input_file_size(const struct ms_input *in);
/* Nothing came from the input: a regular file of 0 bytes, or a pipe or device that gave none
 * (after ms_input_kind, which reads its first bytes). */
int ms_input_empty(const struct ms_input *in);
/* 1 for a regular file, 0 for a pipe or a device (read once only, size not known). */
int ms_input_is_regular(const struct ms_input *in);
/*
 * Read a compressed input to its end, the bytes discarded: a reader that stopped where its
 * format ended (a pickle's STOP) learns whether the compressed stream is whole (its checksum
 * there, its frame complete). Nothing to do for an uncompressed one.
 */
ms_status ms_input_drain(struct ms_input *in, struct ms_diag *diag);

/* Close and free; NULL-safe. */
void ms_input_close(struct ms_input *in);

/*
 * The whole raw file as bytes: mmap for regular files, read into memory for
 * pipes. Release with ms_input_unmap().
 */
struct ms_mapped {
	const void *data;
	size_t len;
	int is_mmap;
	size_t let_go; /* ms_input_mapped_read: the bytes before it are out of resident memory */
};
ms_status ms_input_map(const char *path, struct ms_mapped *m, struct ms_diag *diag);
/* The whole raw file behind in (a regular file), mapped from its descriptor. */
ms_status ms_input_map_file(const struct ms_input *in, struct ms_mapped *m, struct ms_diag *diag);
/*
 * An uncompressed regular file's whole content, mapped from in's descriptor (what in has
 * already read does not matter); m->data NULL when in is compressed or not a regular file.
 */
ms_status ms_input_map_plain(const struct ms_input *in, struct ms_mapped *m, struct ms_diag *diag);
/*
 * The bytes of m before offset done are read, and will not be read again soon: the pages of a
 * mapping well behind done (a few MiB of slack) leave the process's resident memory, 32 MiB at
 * a time. They stay readable: a private read-only file mapping faults them in again from the
 * file (page cache) if they are read after all. Nothing for a copy in memory. Cheap to call
 * often.
 */
void ms_input_mapped_read(struct ms_mapped *m, uint64_t done);
/* NULL-safe; m is zeroed. */
void ms_input_unmap(struct ms_mapped *m);

#endif
