/* Python stacks without the GIL (pystack.h): CPython's interpreter frames, read in place. */
#define Py_BUILD_CORE /* the frame layout lives in CPython's internal headers */
#include <Python.h>

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000 && !defined(Py_GIL_DISABLED)
#include "internal/pycore_frame.h"
#define MS_HAVE_PYSTACK 1
#endif

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/recorder.h"
#include "pystack.h"

#ifdef MS_HAVE_PYSTACK

/*
 * (code object, instruction index) -> frame id, per thread (no lock), direct-mapped and bounded,
 * for one recorder (its generation: ids are the recorder's own). A code object may be freed and
 * its address reused: an entry also keeps the object's file, name and first line, and a mismatch
 * is a miss (msr_frame interns again). The key is the instruction, not the line: working out the
 * line (PyCode_Addr2Line) walks the code's line table, which was most of a capture's time.
 */
struct centry {
	const void *code, *file, *name;
	int firstline, lasti;
	uint32_t id;
};
#define CACHE_SIZE 4096
_Static_assert(CACHE_SIZE == 1 << 12, "frame_id takes 12 bits of its hash");
#define MAX_FRAMES 256
/* A frame as a capture meets it: what frame_id's cache compares. */
struct fkey {
	const void *code, *file, *name;
	int firstline, lasti;
};
struct tcache {
	uint64_t gen;
	struct centry e[CACHE_SIZE];
	/*
	 * The thread's last stack, by its frames' keys: allocations in a row from one line are
	 * told by comparing the frames with these, in order, with no lookup and no interning.
	 */
	uint32_t last_id, last_n;
	struct fkey last[MAX_FRAMES];
};
static pthread_key_t g_key;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_key_ok;

static void make_key(void)
{
	g_key_ok = pthread_key_create(&g_key, free) == 0;
}

/* This thread's cache for r, emptied if it held another recorder's ids; NULL: none to be had. */
static struct tcache *thread_cache(struct msr *r)
{
	struct tcache *c;
	uint64_t gen = msr_generation(r);

	pthread_once(&g_once, make_key);
	if (!g_key_ok)
		return NULL;
	if (!(c = pthread_getspecific(g_key))) {
		if (!(c = calloc(1, sizeof(*c))))
			return NULL;
		if (pthread_setspecific(g_key, c)) {
			free(c);
			return NULL;
		}
	}
	if (c->gen != gen) {
		memset(c->e, 0, sizeof(c->e));
		c->last_n = c->last_id = 0;
		c->gen = gen;
	}
	return c;
}

/* UTF-8 of a str without allocating (PyUnicode_AsUTF8 may allocate and needs the GIL). */
static void utf8(PyObject *s, char *buf, size_t cap)
{
	size_t o = 0;

	if (!s || !PyUnicode_Check(s)) {
		snprintf(buf, cap, "?");
		return;
	}
	int kind = PyUnicode_KIND(s);
	const void *d = PyUnicode_DATA(s);
	Py_ssize_t n = PyUnicode_GET_LENGTH(s);
	for (Py_ssize_t i = 0; i < n && o + 4 < cap; i++) {
		Py_UCS4 c = PyUnicode_READ(kind, d, i);
		if (c < 0x80) {
			buf[o++] = (char)c;
		} else if (c < 0x800) {
			buf[o++] = (char)(0xc0 | c >> 6);
			buf[o++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			buf[o++] = (char)(0xe0 | c >> 12);
			buf[o++] = (char)(0x80 | ((c >> 6) & 0x3f));
			buf[o++] = (char)(0x80 | (c & 0x3f));
		} else {
			buf[o++] = (char)(0xf0 | c >> 18);
			buf[o++] = (char)(0x80 | ((c >> 12) & 0x3f));
			buf[o++] = (char)(0x80 | ((c >> 6) & 0x3f));
			buf[o++] = (char)(0x80 | (c & 0x3f));
		}
	}
	buf[o] = 0;
}

static struct fkey key_of(PyCodeObject *co, int lasti)
{
#if PY_VERSION_HEX >= 0x030B0000
	PyObject *name = co->co_qualname;
#else
	PyObject *name = co->co_name;
#endif
	return (struct fkey){co, co->co_filename, name, co->co_firstlineno, lasti};
}

static int same_key(const struct fkey *a, const struct fkey *b)
{
	return a->code == b->code && a->lasti == b->lasti && a->file == b->file &&
	       a->name == b->name && a->firstline == b->firstline;
}

static uint32_t frame_id(struct msr *r, struct tcache *c, const struct fkey *k)
{
	PyCodeObject *co = (PyCodeObject *)k->code;
	uint64_t h = (((uint64_t)(uintptr_t)co >> 4) ^ (uint64_t)(unsigned)k->lasti << 40) *
	                     0x9E3779B97F4A7C15ULL >>
	             52; /* the product's top bits: CACHE_SIZE 2^12 */
	struct centry *e = c ? &c->e[h] : NULL;
	char fn[512], file[1024];
	uint32_t id;
	int line;

	if (e && e->code == co && e->lasti == k->lasti && e->file == k->file &&
	    e->name == k->name && e->firstline == k->firstline)
		return e->id;
	line = PyCode_Addr2Line(co, k->lasti * (int)sizeof(_Py_CODEUNIT));
	utf8((PyObject *)k->name, fn, sizeof(fn));
	utf8((PyObject *)k->file, file, sizeof(file));
	id = msr_frame(r, fn, file, line > 0 ? (uint32_t)line : 0);
	if (id && e)
		*e = (struct centry){co, k->file, k->name, k->firstline, k->lasti, id};
	return id;
}

int ms_pystack_supported(void)
{
	return 1;
}

uint32_t ms_pystack_capture(struct msr *r, size_t max_frames)
{
	struct fkey keys[MAX_FRAMES];
	uint32_t ids[MAX_FRAMES], id;
	size_t n = 0, m = 0, same;
	PyThreadState *ts;
	_PyInterpreterFrame *f;
	struct tcache *c;

	if (!Py_IsInitialized())
		return 0;
	ts = PyGILState_GetThisThreadState(); /* this thread's state; no GIL needed */
	if (!ts)
		return 0; /* a thread that never ran Python (the autograd engine's) */
#if PY_VERSION_HEX >= 0x030D0000
	f = ts->current_frame;
#else
	f = ts->cframe ? ts->cframe->current_frame : NULL;
#endif
	c = thread_cache(r);
	if (max_frames > MAX_FRAMES)
		max_frames = MAX_FRAMES;
	for (; f && n < max_frames; f = f->previous) {
		PyCodeObject *co;
#if PY_VERSION_HEX >= 0x030C0000
		if (f->owner == FRAME_OWNED_BY_CSTACK)
			continue;
#endif
		if (_PyFrame_IsIncomplete(f))
			continue;
#if PY_VERSION_HEX >= 0x030D0000
		if (!f->f_executable || !PyCode_Check(f->f_executable))
			continue;
		co = (PyCodeObject *)f->f_executable;
#else
		co = f->f_code;
#endif
		keys[n++] = key_of(co, _PyInterpreterFrame_LASTI(f));
	}
	if (!n)
		return 0;
	/* the same frames as the last capture: its stack */
	for (same = 0; c && c->last_id && c->last_n == n && same < n; same++)
		if (!same_key(&keys[same], &c->last[same]))
			break;
	if (c && c->last_id && same == n)
		return c->last_id;
	for (size_t i = 0; i < n; i++)
		if ((id = frame_id(r, c, &keys[i])))
			keys[m] = keys[i], ids[m++] = id;
	if (!m || !(id = msr_stack(r, ids, m)))
		return 0;
	if (c) {
		/* kept only when every frame has an id: then the stack is these frames exactly */
		c->last_id = m == n ? id : 0;
		memcpy(c->last, keys, m * sizeof(keys[0]));
		c->last_n = (uint32_t)m;
	}
	return id;
}

#else

int ms_pystack_supported(void)
{
	return 0;
}

uint32_t ms_pystack_capture(struct msr *r, size_t max_frames)
{
	(void)r;
	(void)max_frames;
	return 0;
}

#endif
