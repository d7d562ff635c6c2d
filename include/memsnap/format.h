/*
 * The memsnap trace format in code: magics, versions, record types, flags.
 * docs/FORMAT.md is the normative text; change both together.
 */
#ifndef MEMSNAP_FORMAT_H
#define MEMSNAP_FORMAT_H

#define MS_FORMAT_MAJOR 1
#define MS_FORMAT_MINOR 5

#define MS_HEADER_FRAME_MAGIC 0x184D2A5DU /* zstd skippable frame holding the header */
#define MS_FOOTER_FRAME_MAGIC 0x184D2A5EU /* zstd skippable frame holding the footer */
#define MS_HEADER_MAGIC       "MSNP"
#define MS_FOOTER_MAGIC       "MSIX"
#define MS_HEADER_SIZE        24 /* payload bytes of the 1.0 header */
#define MS_FOOTER_SIZE        20 /* payload bytes of the footer */

/* Header flag bits: low 32 must-understand, high 32 may-ignore. None defined in 1.0. */
#define MS_FLAGS_KNOWN           0ULL
#define MS_FLAGS_MUST_UNDERSTAND 0xffffffffULL

/* Mandatory records (0-63): an unknown one is an error. */
enum ms_record_type {
	MS_REC_META = 0,
	MS_REC_FRAME = 1,
	MS_REC_STRING = 2,
	MS_REC_FRAMEDEF = 3,
	MS_REC_STACK = 4,
	MS_REC_STREAM = 5,
	MS_REC_SEGMENT = 6,
	MS_REC_BLOCK = 7,
	MS_REC_END = 8,
	MS_REC_INDEX = 9,
	MS_REC_TRAILER = 10,
	MS_REC_EVENT = 16, /* 16 + action, actions 0..8 */
	MS_REC_EVENT_LAST = 24,
	/* Optional records (64-127): an unknown one is skipped. */
	MS_REC_ANNOTATION = 64,
	MS_REC_DROPPED = 65, /* since 1.1 */
};
#define MS_REC_MANDATORY_MAX 63
#define MS_REC_OPTIONAL_MAX  127

/* EVENT daddr given as [k]: the address of the event k+1 events back in the frame, k < this */
#define MS_ADDR_RING 256

/* SEGMENT flags */
#define MS_SEGF_SMALL      1u
#define MS_SEGF_EXPANDABLE 2u

#endif
