/* Allocation sites: which frame of a stack names it, and the frames shown with it (site.h). */
#include "replay/site.h"

#include <stdio.h>
#include <string.h>

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

static int starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* dir ("torch/") is a directory of path: at its start or after a separator. */
static int has_dir(const char *path, const char *dir)
{
	for (const char *p = path; (p = strstr(p, dir)); p++)
		if (p == path || p[-1] == '/' || p[-1] == '\\')
			return 1;
	return 0;
}

/* What follows the last directory dir in path ("site-packages/"), or NULL. */
static const char *last_dir_after(const char *path, const char *dir)
{
	const char *at = NULL;

	for (const char *p = path; (p = strstr(p, dir)); p++)
		if (p == path || p[-1] == '/' || p[-1] == '\\')
			at = p + strlen(dir);
	return at;
}

/*
 * A Python frame: a .py (or Cython .pyx) file, or a pseudo-file such as <frozen runpy> or
 * <stdin>. A qualified C++ name is never Python, whatever its file.
 */
static int is_python(const char *name, const char *file)
{
	if (strstr(name, "::"))
		return 0;
	return file[0] == '<' || ends_with(file, ".py") || ends_with(file, ".pyx");
}

static enum ms_frame_kind python_kind(const char *file)
{
	/* code typed or run as text is the user's; CPython's frozen modules and the code torch
	 * generates (<eval_with_key>.N) are not */
	static const char *const user_pseudo[] = {"<stdin>", "<string>", "<console>",
	                                          "<ipython-input-"};
	if (file[0] == '<') {
		for (size_t i = 0; i < sizeof(user_pseudo) / sizeof(user_pseudo[0]); i++)
			if (starts_with(file, user_pseudo[i]))
				return MS_FRAME_USER;
		return MS_FRAME_PYTHON;
	}
	/* an installed package: torch's own, or a library's (whatever directories hold the
	 * environment: /opt/torch/.venv/lib/python3.12/site-packages/transformers/ is a library) */
	const char *pkg = last_dir_after(file, "site-packages/");
	if (!pkg)
		pkg = last_dir_after(file, "dist-packages/");
	if (pkg)
		return starts_with(pkg, "torch/") || starts_with(pkg, "functorch/")
		               ? MS_FRAME_PYTHON
		               : MS_FRAME_LIBRARY;
	/* torch's own files from a checkout, and inductor's generated code */
	if (has_dir(file, "torch/") || has_dir(file, "functorch/") ||
	    strstr(file, "torchinductor_"))
		return MS_FRAME_PYTHON;
	/* the standard library: lib/python3.X/ (site-packages was matched above) */
	if (has_dir(file, "lib/python3.") || has_dir(file, "lib64/python3.") ||
	    has_dir(file, "lib/pypy3."))
		return MS_FRAME_PYTHON;
	return MS_FRAME_USER;
}

/*
 * The qualified name of a C++ function: past a return type ("at::TensorBase at::detail::f<long>
 * (...)" -> "at::detail::f<long>(...)"), i.e. after the last space outside template brackets
 * before the argument list; "(anonymous namespace)" is part of the name.
 */
static const char *qualified(const char *name)
{
	static const char anon[] = "(anonymous namespace)";
	const char *q = name;
	int depth = 0;

	for (const char *p = name; *p; p++) {
		if (*p == '(' && strncmp(p, anon, sizeof(anon) - 1) == 0)
			p += sizeof(anon) - 2;
		else if (*p == '(' && depth == 0)
			break;
		else if (*p == '<')
			depth++;
		else if (*p == '>' && depth > 0)
			depth--;
		else if (*p == ' ' && depth == 0)
			q = p + 1;
	}
	return q;
}

/*
 * What lies between the code that ran and the allocator: capturing the stack, the allocator
 * and the rest of c10, the dispatcher and its generated wrappers, tensor creation and
 * TensorIterator's output allocation, autograd's dispatch wrappers and engine calls, the
 * standard library.
 */
static const char *const plumbing[] = {
        "torch::unwind::",
        "torch::CapturedTraceback::",
        "torch::cuda::(anonymous namespace)::gather",
        "c10::",
        "at::detail::",
        "at::_ops::",
        "at::(anonymous namespace)::",
        "at::impl::",
        "at::meta::",
        "at::TensorIteratorBase::",
        "at::TensorIterator::",
        "at::empty",
        "at::native::empty",
        "at::native::new_empty",
        "at::native::resize_",
        "torch::autograd::VariableType::",
        "torch::autograd::Node::",
        "torch::ADInplaceOrView::",
        "std::",
};

static enum ms_frame_kind native_kind(const char *name)
{
	const char *q = qualified(name);

	/* unknown ("??", ""), or a C function (CPython's interpreter, libc, thread start-up) */
	if (!strstr(q, "::"))
		return MS_FRAME_PLUMBING;
	for (size_t i = 0; i < sizeof(plumbing) / sizeof(plumbing[0]); i++)
		if (starts_with(q, plumbing[i]))
			return MS_FRAME_PLUMBING;
	return MS_FRAME_NATIVE;
}

enum ms_frame_kind ms_frame_kind(const char *name, const char *file)
{
	return is_python(name, file) ? python_kind(file) : native_kind(name);
}

static enum ms_frame_kind kind_of(const struct ms_symtab *y, uint32_t frame)
{
	const struct ms_frame *f = &y->frames[frame];

	return ms_frame_kind(ms_symtab_get_str(y, f->name)->s, ms_symtab_get_str(y, f->file)->s);
}

size_t ms_site_pos(const struct ms_symtab *y, const uint32_t *frames, size_t n,
                   enum ms_frame_kind *kind)
{
	size_t first[MS_FRAME_PLUMBING];
	enum ms_frame_kind k;

	for (k = MS_FRAME_USER; k < MS_FRAME_PLUMBING; k++)
		first[k] = SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		k = kind_of(y, frames[i]);
		if (k < MS_FRAME_PLUMBING && first[k] == SIZE_MAX)
			first[k] = i;
		if (k == MS_FRAME_USER)
			break;
	}
	for (k = MS_FRAME_USER; k < MS_FRAME_PLUMBING; k++)
		if (first[k] != SIZE_MAX)
			break;
	if (kind)
		*kind = k;
	return k < MS_FRAME_PLUMBING ? first[k] : 0;
}

size_t ms_site_frames(const struct ms_symtab *y, uint32_t stack, uint32_t frames, size_t *pos,
                      size_t cap, size_t *site)
{
	size_t n, at, got = 0;
	const uint32_t *fr;
	enum ms_frame_kind kind;

	if (!stack)
		return 0;
	fr = ms_symtab_get_stack(y, stack, &n);
	if (!n)
		return 0;
	if (!frames)
		frames = MS_FRAMES_USER;
	at = ms_site_pos(y, fr, n, &kind);
	if (frames == MS_FRAMES_ALL) {
		for (size_t i = 0; i < n && i < cap; i++)
			pos[i] = i;
		if (site)
			*site = at;
		return n;
	}
	if (site)
		*site = 0;
	for (size_t i = at; i < n && got < frames; i++) {
		/* past the innermost by default, any frame; else frames of the site's kind */
		if (i != at && kind != MS_FRAME_PLUMBING && kind_of(y, fr[i]) != kind)
			continue;
		if (got < cap)
			pos[got] = i;
		got++;
	}
	return got;
}

void ms_frame_label(const struct ms_symtab *y, uint32_t frame, char *buf, size_t cap)
{
	const struct ms_frame *f = &y->frames[frame];
	const char *name = ms_symtab_get_str(y, f->name)->s;
	const char *file = ms_symtab_get_str(y, f->file)->s;

	if (!name[0])
		name = "??";
	if (!file[0] || !strcmp(file, "??"))
		snprintf(buf, cap, "%s", name);
	else if (!f->line)
		snprintf(buf, cap, "%s (%s)", name, file);
	else
		snprintf(buf, cap, "%s (%s:%u)", name, file, f->line);
}

size_t ms_site_chain(const struct ms_symtab *y, const uint32_t *frames, size_t n, uint32_t depth,
                     size_t *pos, size_t cap)
{
	size_t k = 0, at;

	if (!n || !cap)
		return 0;
	at = ms_site_pos(y, frames, n, NULL);
	pos[k++] = at;
	for (size_t i = at; i-- > 0 && k < depth && k < cap;) {
		enum ms_frame_kind kind = kind_of(y, frames[i]);
		if (kind == MS_FRAME_USER || kind == MS_FRAME_LIBRARY)
			pos[k++] = i;
	}
	return k;
}

void ms_stack_label_depth(const struct ms_symtab *y, uint32_t stack, uint32_t depth, char *buf,
                          size_t cap)
{
	size_t n, pos[64], k, used = 0;
	const uint32_t *fr;

	if (depth <= 1 || !stack || !cap) {
		ms_stack_label(y, stack, buf, cap);
		return;
	}
	fr = ms_symtab_get_stack(y, stack, &n);
	if (!n) {
		ms_stack_label(y, stack, buf, cap);
		return;
	}
	k = ms_site_chain(y, fr, n, depth, pos, sizeof(pos) / sizeof(pos[0]));
	ms_frame_label(y, fr[pos[0]], buf, cap);
	used = strlen(buf);
	/* the frames further in: a package's file from its package down */
	for (size_t i = 1; i < k && used + 1 < cap; i++) {
		const struct ms_frame *f = &y->frames[fr[pos[i]]];
		const char *file = ms_symtab_get_str(y, f->file)->s, *pkg;
		if ((pkg = last_dir_after(file, "site-packages/")) ||
		    (pkg = last_dir_after(file, "dist-packages/")))
			file = pkg;
		snprintf(buf + used, cap - used, " > %s (%s:%u)", ms_symtab_get_str(y, f->name)->s,
		         file, f->line);
		used += strlen(buf + used);
	}
}

void ms_stack_label(const struct ms_symtab *y, uint32_t stack, char *buf, size_t cap)
{
	size_t n;
	const uint32_t *fr;

	if (!stack) {
		snprintf(buf, cap, "(no stack recorded)");
		return;
	}
	fr = ms_symtab_get_stack(y, stack, &n);
	if (!n) {
		snprintf(buf, cap, "(no stack recorded)");
		return;
	}
	ms_frame_label(y, fr[ms_site_pos(y, fr, n, NULL)], buf, cap);
}
