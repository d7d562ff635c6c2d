/*
 * _pystack_test: a CPython extension that drives the recorder's Python stack reader
 * (recorder/torch/pystack.c) the way PyTorch's allocator hook does, with and without the GIL,
 * so that tests/recorder/pystack_test.py can check the stacks on this machine's Python.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <time.h>

#include "memsnap/recorder.h"
#include "recorder/torch/pystack.h"

static struct msr *g_rec;
static uint64_t g_addr = 0x7f0000000000ULL;

static PyObject *py_open(PyObject *self, PyObject *args)
{
	const char *path;
	int rc;

	(void)self;
	if (!PyArg_ParseTuple(args, "s", &path))
		return NULL;
	rc = msr_open(path, NULL, &g_rec);
	if (rc)
		return PyErr_Format(PyExc_OSError, "msr_open: %d", rc);
	Py_RETURN_NONE;
}

/* capture(release): record an alloc with this thread's stack, taken with the GIL released
 * if release (as in PyTorch's operators) or held. Returns the stack id. */
static PyObject *py_capture(PyObject *self, PyObject *args)
{
	int release;
	uint32_t id;
	struct msr_event e = {0};

	(void)self;
	if (!PyArg_ParseTuple(args, "p", &release))
		return NULL;
	if (!g_rec)
		return PyErr_Format(PyExc_RuntimeError, "not open");
	if (release) {
		Py_BEGIN_ALLOW_THREADS id = ms_pystack_capture(g_rec, 64);
		Py_END_ALLOW_THREADS
	} else {
		id = ms_pystack_capture(g_rec, 64);
	}
	e.action = MSR_ALLOC;
	e.addr = g_addr;
	e.size = 512;
	e.stack = id;
	g_addr += 512;
	msr_record(g_rec, &e);
	return PyLong_FromUnsignedLong(id);
}

static PyObject *py_close(PyObject *self, PyObject *args)
{
	int rc;

	(void)self;
	(void)args;
	rc = g_rec ? msr_close(g_rec) : 0;
	g_rec = NULL;
	if (rc)
		return PyErr_Format(PyExc_OSError, "msr_close: %d", rc);
	Py_RETURN_NONE;
}

/* capture_loop(n): n captures of this thread's stack in a C loop, nothing recorded; the
 * nanoseconds they took (what the capture alone costs, without Python's call). */
static PyObject *py_capture_loop(PyObject *self, PyObject *args)
{
	unsigned long n;
	struct timespec a, b;
	uint32_t sink = 0;

	(void)self;
	if (!PyArg_ParseTuple(args, "k", &n))
		return NULL;
	if (!g_rec)
		return PyErr_Format(PyExc_RuntimeError, "not open");
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (unsigned long i = 0; i < n; i++)
		sink += ms_pystack_capture(g_rec, 64);
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (n && !sink)
		return PyErr_Format(PyExc_RuntimeError, "no stack captured");
	return PyLong_FromLongLong((long long)(b.tv_sec - a.tv_sec) * 1000000000LL +
	                           (b.tv_nsec - a.tv_nsec));
}

static PyObject *py_supported(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	return PyBool_FromLong(ms_pystack_supported());
}

static PyMethodDef methods[] = {
        {"open", py_open, METH_VARARGS, "open(path): start a trace"},
        {"capture", py_capture, METH_VARARGS, "capture(release): record an alloc with a stack"},
        {"capture_loop", py_capture_loop, METH_VARARGS,
         "capture_loop(n): ns that n captures took, nothing recorded"},
        {"close", py_close, METH_NOARGS, "close(): finish the trace"},
        {"supported", py_supported, METH_NOARGS, "supported(): stacks readable here"},
        {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
        PyModuleDef_HEAD_INIT, "_pystack_test", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__pystack_test(void);
PyMODINIT_FUNC PyInit__pystack_test(void)
{
	return PyModule_Create(&module);
}
