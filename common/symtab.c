/* Interning of strings, frames and stacks into dense ids (see symtab.h). */
#include "common/symtab.h"

#include <string.h>

#include "common/alloc.h"

struct bytes_key {
	const char *s;
	size_t len;
};

static int str_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct ms_symtab *t = ctx;
	const struct bytes_key *k = key;

	return t->strs[id].len == k->len && memcmp(t->strs[id].s, k->s, k->len) == 0;
}

static int frame_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct ms_symtab *t = ctx;
	const struct ms_frame *f = key;

	return t->frames[id].name == f->name && t->frames[id].file == f->file &&
	       t->frames[id].line == f->line;
}

struct stack_key {
	const uint32_t *f;
	size_t n;
};

static int stack_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct ms_symtab *t = ctx;
	const struct stack_key *k = key;
	size_t n;
	const uint32_t *f = ms_symtab_get_stack(t, id, &n);

	if (n != k->n)
		return 0;
	/*
	 * One id at a time, not memcmp: k->f was most often just written an id at a time, and
	 * memcmp's wide loads of it would wait for those stores (no store forwarding).
	 */
	for (size_t i = 0; i < n; i++)
		if (f[i] != k->f[i])
			return 0;
	return 1;
}

ms_status ms_symtab_init(struct ms_symtab *t)
{
	memset(t, 0, sizeof(*t));
	if (ms_grow(&t->strs, &t->cap_strs, 1, sizeof(*t->strs)) ||
	    ms_grow(&t->frames, &t->cap_frames, 1, sizeof(*t->frames)) ||
	    ms_grow(&t->stack_off, &t->cap_stacks, 2, sizeof(*t->stack_off))) {
		ms_symtab_release(t);
		return MS_ERR_NOMEM;
	}
	t->strs[0].s = "";
	t->strs[0].len = 0;
	t->n_strs = 1;
	memset(&t->frames[0], 0, sizeof(t->frames[0]));
	t->n_frames = 1;
	t->stack_off[0] = t->stack_off[1] = 0;
	t->n_stacks = 1;
	return MS_OK;
}

void ms_symtab_release(struct ms_symtab *t)
{
	ms_arena_release(&t->arena);
	ms_free(t->strs);
	ms_free(t->frames);
	ms_free(t->stack_frames);
	ms_free(t->stack_off);
	ms_idset_release(&t->str_idx);
	ms_idset_release(&t->frame_idx);
	ms_idset_release(&t->stack_idx);
	memset(t, 0, sizeof(*t));
}

ms_status ms_symtab_str(struct ms_symtab *t, const char *s, size_t len, uint32_t *id)
{
	struct bytes_key k = {s, len};
	uint32_t h, found;
	char *copy;

	if (len == 0) {
		*id = 0;
		return MS_OK;
	}
	if (len > UINT32_MAX || t->n_strs >= UINT32_MAX)
		return MS_ERR_LIMIT;
	h = (uint32_t)ms_hash_bytes(s, len);
	found = ms_idset_find(&t->str_idx, h, str_eq, t, &k);
	if (found) {
		*id = found;
		return MS_OK;
	}
	if (ms_grow(&t->strs, &t->cap_strs, t->n_strs + 1, sizeof(*t->strs)))
		return MS_ERR_NOMEM;
	copy = ms_arena_strndup(&t->arena, s, len);
	if (!copy)
		return MS_ERR_NOMEM;
	if (ms_idset_insert(&t->str_idx, h, (uint32_t)t->n_strs))
		return MS_ERR_NOMEM;
	t->strs[t->n_strs].s = copy;
	t->strs[t->n_strs].len = (uint32_t)len;
	*id = (uint32_t)t->n_strs++;
	return MS_OK;
}

ms_status ms_symtab_frame(struct ms_symtab *t, const struct ms_frame *f, uint32_t *id)
{
	uint32_t h, found;

	if (t->n_frames >= UINT32_MAX)
		return MS_ERR_LIMIT;
	h = (uint32_t)ms_hash_bytes(f, sizeof(*f));
	found = ms_idset_find(&t->frame_idx, h, frame_eq, t, f);
	if (found) {
		*id = found;
		return MS_OK;
	}
	if (ms_grow(&t->frames, &t->cap_frames, t->n_frames + 1, sizeof(*t->frames)))
		return MS_ERR_NOMEM;
	if (ms_idset_insert(&t->frame_idx, h, (uint32_t)t->n_frames))
		return MS_ERR_NOMEM;
	t->frames[t->n_frames] = *f;
	*id = (uint32_t)t->n_frames++;
	return MS_OK;
}

ms_status ms_symtab_stack(struct ms_symtab *t, const uint32_t *frames, size_t n, uint32_t *id)
{
	struct stack_key k = {frames, n};
	uint32_t h, found;

	if (n == 0) {
		*id = 0;
		return MS_OK;
	}
	/*
	 * Events follow each other from the same place in a program (85% of gpt_train's entries
	 * with frames have the stack of the one before): a compare instead of the hash.
	 */
	if (t->last_stack && stack_eq(t, t->last_stack, &k)) {
		*id = t->last_stack;
		return MS_OK;
	}
	if (t->n_stacks >= UINT32_MAX - 1)
		return MS_ERR_LIMIT;
	h = (uint32_t)ms_hash_bytes(frames, n * sizeof(*frames));
	found = ms_idset_find(&t->stack_idx, h, stack_eq, t, &k);
	if (found) {
		*id = t->last_stack = found;
		return MS_OK;
	}
	if (ms_grow(&t->stack_frames, &t->cap_stack_frames, t->n_stack_frames + n,
	            sizeof(*t->stack_frames)) ||
	    ms_grow(&t->stack_off, &t->cap_stacks, t->n_stacks + 2, sizeof(*t->stack_off)))
		return MS_ERR_NOMEM;
	if (ms_idset_insert(&t->stack_idx, h, (uint32_t)t->n_stacks))
		return MS_ERR_NOMEM;
	memcpy(t->stack_frames + t->n_stack_frames, frames, n * sizeof(*frames));
	t->n_stack_frames += n;
	t->stack_off[t->n_stacks + 1] = t->n_stack_frames;
	*id = t->last_stack = (uint32_t)t->n_stacks++;
	return MS_OK;
}
