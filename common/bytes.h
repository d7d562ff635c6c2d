/*
 * Little-endian integers in byte buffers (the trace format's fixed fields, pickle opcode
 * arguments). memcpy compiles to one load or store; big-endian hosts swap.
 */
#ifndef MEMSNAP_COMMON_BYTES_H
#define MEMSNAP_COMMON_BYTES_H

#include <stdint.h>
#include <string.h>

static inline uint32_t ms_load_le32(const unsigned char *b)
{
	uint32_t u;

	memcpy(&u, b, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	u = __builtin_bswap32(u);
#endif
	return u;
}

static inline uint64_t ms_load_le64(const unsigned char *b)
{
	uint64_t u;

	memcpy(&u, b, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	u = __builtin_bswap64(u);
#endif
	return u;
}

/* The first n (0 to 8) bytes at b as a little-endian number; 8 bytes must be readable there. */
static inline uint64_t ms_load_le_first(const unsigned char *b, unsigned n)
{
	static const uint64_t mask[9] = {0,
	                                 0xff,
	                                 0xffff,
	                                 0xffffff,
	                                 0xffffffff,
	                                 0xffffffffff,
	                                 0xffffffffffff,
	                                 0xffffffffffffff,
	                                 0xffffffffffffffff};

	return ms_load_le64(b) & mask[n];
}

static inline void ms_store_le32(unsigned char *b, uint32_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	memcpy(b, &v, 4);
}

static inline void ms_store_le64(unsigned char *b, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	memcpy(b, &v, 8);
}

#endif
