/*
 * Output files: never written over an input, and written whole or not at all.
 *
 * A command that writes a file calls ms_output_refuse_inputs before it opens anything for
 * writing, then ms_output_open, which creates a temporary file beside the destination
 * ("OUT.tmp.XXXXXX", same directory so the rename is atomic); ms_output_commit renames it into
 * place once complete, ms_output_abort removes it. A fatal signal (SIGINT, SIGTERM, SIGHUP,
 * SIGPIPE) while a temporary file is open removes it before the process dies, so an
 * interrupted command leaves neither a partial output nor a stray temporary file.
 * "-" is standard output: written directly, nothing to rename; so is a destination that exists
 * and is not a regular file (a device such as /dev/null, a FIFO), or a symbolic link to one
 * (/dev/stdout), which is never replaced. A symbolic link to a regular file keeps its link: its
 * target is replaced.
 */
#ifndef MEMSNAP_CLI_OUTPUT_FILE_H
#define MEMSNAP_CLI_OUTPUT_FILE_H

#include <stddef.h>
#include <stdio.h>

/* Whether paths a and b name one file (the same path, or the same device and inode). */
int ms_same_file(const char *a, const char *b);

/*
 * Exit 1 with one line when out cannot be written (its folder missing or not writable, or out
 * a folder), or names the same file as one of inputs[0..n) (same device and inode, so a hard
 * link, a symbolic link or another spelling of the path is caught too). "-" on either side is
 * not a file and is never refused. flag is the option that named out, for the message.
 */
void ms_output_refuse_inputs(const char *out, const char *flag, const char *const *inputs,
                             size_t n);

struct ms_output {
	FILE *f;          /* where to write */
	const char *path; /* the destination, "-" for standard output */
	char *tmp;        /* the temporary file, NULL for standard output */
	char *dest;       /* where a symbolic link to a regular file points: renamed there */
};

/* 0, or -1 after one line on stderr. */
int ms_output_open(struct ms_output *o, const char *path);
/* Close and rename into place; 0, or -1 after one line on stderr (the temporary file removed). */
int ms_output_commit(struct ms_output *o);
/* Close and remove the temporary file; the destination is left as it was. */
void ms_output_abort(struct ms_output *o);
/* data[0..len) into path, whole or not at all; 0, or -1 after one line on stderr. */
int ms_output_write_whole(const char *path, const void *data, size_t len);

#endif
