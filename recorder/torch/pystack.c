/* Python stacks without the GIL (pystack.h): CPython's interpreter frames, read in place. */
#define Py_BUILD_CORE /* the frame layout lives in CPython's internal headers */
#include <Python.h>

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000 && !defined(Py_GIL_DISABLED)
#include "internal/pycore_frame.h"
#define MS_HAVE_PYSTACK 1
#endif

#include <pthread.h>
#include <string.h>

#include "memsnap/recorder.h"
#include "pystack.h"

#ifdef MS_HAVE_PYSTACK

/*
 * (code object, line) -> frame id, direct-mapped and bounded. A code object
 * may be freed and its address reused; an entry also keeps the object's file,
 * name and first line, and a mismatch is a miss (msr_frame interns again).
 */
struct centry {
	const void *code, *file, *name;
	int firstline, line;
	uint32_t id;
};
#define CACHE_SIZE 65536
static struct centry g_cache[CACHE_SIZE];
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

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

static uint32_t frame_id(struct msr *r, PyCodeObject *co, int line)
{
#if PY_VERSION_HEX >= 0x030B0000
	PyObject *name = co->co_qualname;
#else
	PyObject *name = co->co_name;
#endif
	size_t h = (((uintptr_t)co >> 4) * 0x9E3779B97F4A7C15ULL + (size_t)line) >> 16;
	struct centry *e = &g_cache[h % CACHE_SIZE];
	uint32_t id;

	pthread_mutex_lock(&g_mu);
	if (e->code == co && e->line == line && e->file == co->co_filename && e->name == name &&
	    e->firstline == co->co_firstlineno) {
		id = e->id;
		pthread_mutex_unlock(&g_mu);
		return id;
	}
	pthread_mutex_unlock(&g_mu);
	char fn[512], file[1024];
	utf8(name, fn, sizeof(fn));
	utf8(co->co_filename, file, sizeof(file));
	id = msr_frame(r, fn, file, line > 0 ? (uint32_t)line : 0);
	if (id) {
		pthread_mutex_lock(&g_mu);
		*e = (struct centry){co, co->co_filename, name, co->co_firstlineno, line, id};
		pthread_mutex_unlock(&g_mu);
	}
	return id;
}

int ms_pystack_supported(void)
{
	return 1;
}

uint32_t ms_pystack_capture(struct msr *r, size_t max_frames)
{
	uint32_t ids[256];
	size_t n = 0;
	PyThreadState *ts;
	_PyInterpreterFrame *f;

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
	if (max_frames > sizeof(ids) / sizeof(ids[0]))
		max_frames = sizeof(ids) / sizeof(ids[0]);
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
		int line = PyCode_Addr2Line(co, _PyInterpreterFrame_LASTI(f) *
		                                        (int)sizeof(_Py_CODEUNIT));
		uint32_t id = frame_id(r, co, line);
		if (id)
			ids[n++] = id;
	}
	return n ? msr_stack(r, ids, n) : 0;
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
