/* The restricted unpickler: every supported opcode, every refusal, limits and malformed input. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "parse/pickle.h"
#include "parse/pool_infer.h"

static ms_status run(const void *data, size_t n, struct ms_pickle **vm, struct ms_pk_val *root,
                     struct ms_diag *d)
{
	struct th_mem m = {data, n, 0, 3};

	cr_assert_eq(ms_pickle_new(vm), MS_OK);
	return ms_pickle_run(*vm, th_mem_read, &m, root, d);
}

#define RUN_OK(bytes, vm, root)                                                \
	do {                                                                   \
		struct ms_diag d_ = MS_DIAG_INIT;                              \
		ms_status s_ = run(bytes, sizeof(bytes) - 1, &vm, &root, &d_); \
		cr_assert_eq(s_, MS_OK, "%s", d_.msg);                         \
	} while (0)

static ms_status run_fail(const void *bytes, size_t n, struct ms_diag *d)
{
	struct ms_pickle *vm;
	struct ms_pk_val root;
	ms_status s = run(bytes, n, &vm, &root, d);

	ms_pickle_free(vm);
	return s;
}

static const char *str(struct ms_pickle *vm, const struct ms_pk_val *v)
{
	cr_assert_eq(v->type, MS_PK_STR);
	return ms_symtab_get_str(ms_pickle_strings(vm), v->v.str)->s;
}

Test(pickle, ints_of_every_width)
{
	/* [0, 255, 65535, -1, -2147483648, 2^40, -2^40, 2^64-1 (big), -2^63, LONG4 5] */
	static const char b[] =
	        "\x80\x04]\x94(K\x00K\xffM\xff\xffJ\xff\xff\xff\xffJ\x00\x00\x00\x80"
	        "\x8a\x06\x00\x00\x00\x00\x00\x01\x8a\x06\x00\x00\x00\x00\x00\xff"
	        "\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00"
	        "\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80"
	        "\x8b\x01\x00\x00\x00\x05"
	        "e.";
	struct ms_pickle *vm;
	struct ms_pk_val r;
	int64_t want[] = {0, 255, 65535, -1, INT32_MIN, 1LL << 40, -(1LL << 40), 0, INT64_MIN, 5};

	RUN_OK(b, vm, r);
	cr_assert_eq(r.type, MS_PK_LIST);
	cr_assert_eq(r.v.o->n, 10);
	for (int i = 0; i < 10; i++) {
		if (i == 7) {
			cr_assert_eq(r.v.o->items[i].type, MS_PK_BIGINT);
			continue;
		}
		cr_assert_eq(r.v.o->items[i].type, MS_PK_INT, "item %d", i);
		cr_assert_eq(r.v.o->items[i].v.i, want[i], "item %d", i);
	}
	ms_pickle_free(vm);
}

Test(pickle, strings_floats_bools_none_tuples_memo)
{
	/* {'a': (1.5, True, False, None), 'bb': 'a'(memo get), 'c': b'xy', 'd': ()} */
	static const char b[] = "\x80\x05\x95\x00\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01\x61\x94"
	                        "(G\x3f\xf8\x00\x00\x00\x00\x00\x00\x88\x89Nt\x94"
	                        "X\x02\x00\x00\x00\x62\x62h\x01"
	                        "\x8c\x01\x63"
	                        "C\x02xy"
	                        "\x8d\x01\x00\x00\x00\x00\x00\x00\x00\x64)u.";
	struct ms_pickle *vm;
	struct ms_pk_val r;
	const struct ms_pk_val *v;

	RUN_OK(b, vm, r);
	cr_assert_eq(ms_pickle_protocol(vm), 5);
	v = ms_pk_dict_get(vm, &r, "a");
	cr_assert(v && v->type == MS_PK_TUPLE && v->v.o->n == 4);
	cr_assert_eq(v->v.o->items[0].type, MS_PK_FLOAT);
	cr_assert_eq(v->v.o->items[3].type, MS_PK_NONE);
	cr_assert(v->v.o->items[0].v.f == 1.5);
	cr_assert_eq(v->v.o->items[1].type, MS_PK_BOOL);
	cr_assert_eq(v->v.o->items[1].v.i, 1);
	cr_assert_eq(v->v.o->items[2].v.i, 0);
	v = ms_pk_dict_get(vm, &r, "bb");
	cr_assert_str_eq(str(vm, v), "a");
	v = ms_pk_dict_get(vm, &r, "c");
	cr_assert_eq(v->type, MS_PK_BYTES);
	v = ms_pk_dict_get(vm, &r, "d");
	cr_assert(v && v->type == MS_PK_TUPLE && v->v.o->n == 0);
	ms_pickle_free(vm);
}

Test(pickle, protocol_2_memo_and_dict_list_opcodes)
{
	/* protocol 2: BINPUT/LONG_BINPUT/LONG_BINGET, DICT and LIST from a mark, SETITEM, APPEND,
	 * POP, DUP */
	static const char b[] = "\x80\x02(K\x07l"
	                        "\x8c\x01z"
	                        "K\x01"
	                        "s."; /* SETITEM on [7] */
	struct ms_diag d = MS_DIAG_INIT;

	/* SETITEM onto a list is malformed: refused, not crashed */
	cr_assert_eq(run_fail(b, sizeof(b) - 1, &d), MS_ERR_FORMAT);
	{
		static const char ok[] = "\x80\x02(\x8c\x01kq\x00K\x01"
		                         "dr\x05\x00\x00\x00"
		                         "j\x05\x00\x00\x00"
		                         "h\x00"
		                         "K\x02s"
		                         "0"
		                         ".";
		struct ms_pickle *vm;
		struct ms_pk_val r;
		const struct ms_pk_val *v;
		RUN_OK(ok, vm, r);
		v = ms_pk_dict_get(vm, &r, "k");
		cr_assert_eq(v->v.i, 2); /* the later SETITEM of the same key wins */
		ms_pickle_free(vm);
	}
}

Test(pickle, refuses_code_execution)
{
	static const struct {
		const char *file, *needle;
	} cases[] = {
	        {"reduce_os_system_p4.pickle", "STACK_GLOBAL at offset 43"},
	        {"reduce_os_system_p2.pickle", "GLOBAL at offset 2"},
	        {"global_p0.pickle", "GLOBAL at offset 0"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[512];
		size_t n;
		char *data;
		struct ms_diag d = MS_DIAG_INIT;
		snprintf(path, sizeof(path), "%s/bad/%s", MS_TESTDATA, cases[i].file);
		data = th_read_file(path, &n);
		cr_assert(data, "%s", path);
		cr_assert_eq(run_fail(data, n, &d), MS_ERR_UNSAFE, "%s", cases[i].file);
		cr_assert(strstr(d.msg, cases[i].needle), "%s: '%s'", cases[i].file, d.msg);
		cr_assert(strstr(d.msg, "never executes"), "%s", d.msg);
		free(data);
	}
	/* every code-running opcode is refused wherever it appears */
	static const unsigned char ops[] = {'c',  0x93, 'R', 'b',  'i',  'o', 0x81,
	                                    0x92, 'P',  'Q', 0x82, 0x83, 0x84};
	for (size_t i = 0; i < sizeof(ops); i++) {
		unsigned char b[] = {0x80, 4, 'N', ops[i], '.'};
		struct ms_diag d = MS_DIAG_INIT;
		cr_assert_eq(run_fail(b, sizeof(b), &d), MS_ERR_UNSAFE, "opcode 0x%02x", ops[i]);
		cr_assert(strstr(d.msg, "at offset 3"), "%s", d.msg);
	}
}

Test(pickle, malformed_inputs_fail_cleanly)
{
	static const struct {
		const char *b;
		size_t n;
		ms_status want;
	} cases[] = {
	        {"", 0, MS_ERR_TRUNCATED},                /* empty */
	        {"\x80\x04}", 3, MS_ERR_TRUNCATED},       /* no STOP */
	        {"\x80\x06}.", 4, MS_ERR_UNSUPPORTED},    /* protocol 6 */
	        {"\x80\x01}.", 4, MS_ERR_UNSUPPORTED},    /* protocol 1 */
	        {"\x80\x04\xff.", 4, MS_ERR_UNSUPPORTED}, /* unknown opcode */
	        {"\x80\x04I1\n.", 6, MS_ERR_UNSUPPORTED}, /* text opcode */
	        {"\x80\x04"
	         "a.",
	         4, MS_ERR_FORMAT}, /* APPEND, empty stack */
	        {"\x80\x04"
	         "e.",
	         4, MS_ERR_FORMAT}, /* APPENDS, no mark */
	        {"\x80\x04"
	         "h\x07.",
	         5, MS_ERR_FORMAT}, /* BINGET of nothing */
	        {"\x80\x04"
	         "N"
	         "r\xff\xff\xff\xff.",
	         9, MS_ERR_LIMIT},                              /* LONG_BINPUT 2^32-1 */
	        {"\x80\x04X\xf0\xff\xff\xff", 7, MS_ERR_LIMIT}, /* 4 GiB string: over the limit */
	        {"\x80\x04X\x00\x00\x00\x01", 7, MS_ERR_TRUNCATED}, /* 16 MiB string, file ends */
	        {"\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\x7f", 11,
	         MS_ERR_LIMIT},                                     /* 2^63 string */
	        {"\x80\x04\x8b\x00\x00\x00\x80", 7, MS_ERR_FORMAT}, /* negative LONG4 length */
	        {"\x80\x04NN.", 5, MS_ERR_FORMAT},                  /* two values at STOP */
	        {"\x80\x04(.", 4, MS_ERR_FORMAT},                   /* mark left at STOP */
	        {"\x80\x04}K\x01u.", 6, MS_ERR_FORMAT},             /* SETITEMS, no mark */
	        {"\x80\x04}(K\x01u.", 7, MS_ERR_FORMAT},            /* odd SETITEMS */
	        {"\x80\x04\x85.", 4, MS_ERR_FORMAT},                /* TUPLE1 underflow */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ms_diag d = MS_DIAG_INIT;
		ms_status s = run_fail(cases[i].b, cases[i].n, &d);
		cr_assert_eq(s, cases[i].want, "case %zu: got %s (%s)", i, ms_status_name(s),
		             d.msg);
		cr_assert(d.msg[0], "case %zu: no message", i);
		cr_assert(d.offset >= 0, "case %zu: no offset", i);
	}
}

Test(pickle, deep_nesting_is_not_recursion)
{
	/* 200000 nested lists: no recursion anywhere, so no stack overflow */
	size_t depth = 200000, n = 0;
	unsigned char *b = malloc(depth * 2 + 8);
	struct ms_pickle *vm;
	struct ms_pk_val r;
	struct ms_diag d = MS_DIAG_INIT;

	b[n++] = 0x80;
	b[n++] = 4;
	for (size_t i = 0; i < depth; i++)
		b[n++] = ']';
	for (size_t i = 1; i < depth; i++)
		b[n++] = 'a';
	b[n++] = '.';
	cr_assert_eq(run(b, n, &vm, &r, &d), MS_OK, "%s", d.msg);
	cr_assert_eq(r.type, MS_PK_LIST);
	ms_pickle_free(vm);
	free(b);
}

Test(pickle, object_limit)
{
	static const char b[] = "\x80\x04]]]]]]]]]]aaaaaaaaa.";
	struct ms_pickle *vm;
	struct ms_pk_val r;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_pickle_limits l = {0, 0, 4};
	struct th_mem m = {(const unsigned char *)b, sizeof(b) - 1, 0, SIZE_MAX};

	cr_assert_eq(ms_pickle_new(&vm), MS_OK);
	ms_pickle_set_limits(vm, &l);
	cr_assert_eq(ms_pickle_run(vm, th_mem_read, &m, &r, &d), MS_ERR_LIMIT);
	ms_pickle_free(vm);
}

/*
 * Memo puts past the next index leave holes, a memo slot each: a gap within the slack reads
 * (and a get of a hole is refused), but gaps in all beyond the input read so far (plus 4096)
 * are refused before the memo grows: 200 puts a million apart, 1 KB of input, took 3.3 GB.
 */
Test(pickle, memo_gaps_are_bounded_by_the_input)
{
	static const char gap[] = "\x80\x02]q\x64" /* [] put at 100 */
	                          "0h\x64"         /* pop; get 100 */
	                          ".";
	static const char hole[] = "\x80\x02]q\x64" /* [] put at 100 */
	                           "0h\x63"         /* pop; get 99: a hole */
	                           ".";
	struct ms_pickle *vm;
	struct ms_pk_val r;
	struct ms_diag d = MS_DIAG_INIT;
	unsigned char *jumps;
	size_t n = 0;

	RUN_OK(gap, vm, r);
	cr_assert_eq(r.type, MS_PK_LIST);
	ms_pickle_free(vm);
	cr_assert_eq(run_fail(hole, sizeof(hole) - 1, &d), MS_ERR_FORMAT, "%s", d.msg);

	cr_assert(jumps = malloc(3 + 200 * 5 + 3));
	memcpy(jumps, "\x80\x04]", 3), n = 3;
	for (uint32_t k = 1; k <= 200; k++) { /* LONG_BINPUT k << 20 */
		uint32_t idx = k << 20;
		jumps[n++] = 'r';
		for (int b = 0; b < 4; b++)
			jumps[n++] = (unsigned char)(idx >> (8 * b));
	}
	memcpy(jumps + n, "0N.", 3), n += 3;
	d = (struct ms_diag)MS_DIAG_INIT;
	cr_assert_eq(run_fail(jumps, n, &d), MS_ERR_LIMIT);
	cr_assert(strstr(d.msg, "memo index out of range"), "%s", d.msg);
	free(jumps);
}

/* Every protocol of the same snapshot, and its JSON form, give the same trace. */
Test(pickle, protocols_2_to_5_and_json_agree)
{
	struct ms_trace *ref, *t;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_source_info si;

	cr_assert_eq(ms_trace_load(MS_TESTDATA "/snapshots/proto/small.json", NULL, &ref, &si, &d),
	             MS_OK, "%s", d.msg);
	cr_assert_eq(si.kind, MS_FILE_JSON);
	cr_assert_eq(ref->n_events, 300);
	for (int p = 2; p <= 5; p++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/snapshots/proto/small_p%d.pickle", MS_TESTDATA, p);
		cr_assert_eq(ms_trace_load(path, NULL, &t, &si, &d), MS_OK, "%s: %s", path, d.msg);
		cr_assert_eq(si.snap.pickle_protocol, p);
		cr_assert_eq(th_events_diff(ref, t), -1, "protocol %d differs at %ld", p,
		             th_events_diff(ref, t));
		cr_assert_eq(t->n_segs, ref->n_segs);
		cr_assert_eq(t->n_blocks, ref->n_blocks);
		ms_trace_free(t);
	}
	ms_trace_free(ref);
}

/* A shared trace-entry object (legal pickle, never written by PyTorch) is reported, not misread. */
Test(pickle, shared_trace_entry_is_refused)
{
	/* {'device_traces': [[e]]} then e fetched again from the memo after it was streamed */
	static const char b[] = "\x80\x04}\x94(\x8c\x0d"
	                        "device_traces\x94]\x94]\x94("
	                        "}\x94(\x8c\x06"
	                        "action\x94\x8c\x05"
	                        "alloc\x94\x8c\x04"
	                        "addr\x94K\x01"
	                        "\x8c\x04"
	                        "size\x94K\x02"
	                        "ue"
	                        "h\x04"
	                        "aau.";
	struct ms_trace *t;
	struct ms_diag d = MS_DIAG_INIT;
	const char *path = th_write_temp(b, sizeof(b) - 1, ".pickle");
	ms_status s = ms_trace_load(path, NULL, &t, NULL, &d);

	cr_assert_eq(s, MS_ERR_UNSUPPORTED, "%s: %s", ms_status_name(s), d.msg);
	remove(path);
}

/*
 * Trace entries are mapped at their own SETITEM(S), before the APPEND(S) that adds them to
 * their list. Legal pickles that PyTorch's (and Python's) pickler never writes for a snapshot
 * must then be reported, not misread: each of these is read fine by pickle.loads.
 */
Test(pickle, entry_layouts_python_never_writes_are_refused)
{
#define HDR                      \
	"\x80\x04}\x94(\x8c\x0d" \
	"device_traces\x94]\x94]\x94("
#define ENTRY                   \
	"}\x94(\x8c\x06"        \
	"action\x94\x8c\x05"    \
	"alloc\x94\x8c\x04"     \
	"addr\x94K\x01\x8c\x04" \
	"size\x94K\x02u"
#define EA(a)                \
	"}(\x8c\x06"         \
	"action\x8c\x05"     \
	"alloc\x8c\x04"      \
	"addrK" a "\x8c\x04" \
	"sizeK\x02u"
/* the same entry, memoized at 0x63 */
#define EA_MEMO             \
	"}q\x63(\x8c\x06"   \
	"action\x8c\x05"    \
	"alloc\x8c\x04"     \
	"addrK\x01\x8c\x04" \
	"sizeK\x02u"
#define BYTES(s) s, sizeof(s) - 1
	static const struct {
		const char *name, *bytes;
		size_t n;
		const char *msg;
	} cases[] = {
	        /* a second SETITEM on an entry already mapped */
	        {"extended",
	         BYTES(HDR ENTRY "\x8c\x06streamK\x00s"
	                         "eau."),
	         "modified later"},
	        /* an entry mapped, then popped: never added to its list */
	        {"popped",
	         BYTES(HDR ENTRY "0"
	                         "eau."),
	         "never added"},
	        /* an entry from elsewhere (the memo) appended before one mapped earlier */
	        {"order",
	         BYTES("\x80\x04}\x94(\x8c\x01x" EA_MEMO "\x8c\x0d"
	               "device_traces]](h\x63" EA("\x03") "eau."),
	         "out of order"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ms_trace *t = NULL;
		struct ms_diag d = MS_DIAG_INIT;
		const char *path = th_write_temp(cases[i].bytes, cases[i].n, ".pickle");
		ms_status s = ms_trace_load(path, NULL, &t, NULL, &d);

		cr_expect_eq(s, MS_ERR_UNSUPPORTED, "%s: %s: %s", cases[i].name, ms_status_name(s),
		             d.msg);
		cr_expect(strstr(d.msg, cases[i].msg), "%s: %s", cases[i].name, d.msg);
		ms_trace_free(t);
		remove(path);
	}
}

/* The same shapes in the layout Python does write read fine: memo'd dict appended after. */
Test(pickle, entry_from_the_memo_after_mapped_ones_reads)
{
	static const char b[] = "\x80\x04}\x94(\x8c\x01x" EA_MEMO "\x8c\x0d"
	                        "device_traces]](" EA("\x03") "h\x63"
	                                                      "eau.";
	struct ms_trace *t = NULL;
	struct ms_diag d = MS_DIAG_INIT;
	const char *path = th_write_temp(b, sizeof(b) - 1, ".pickle");
	ms_status s = ms_trace_load(path, NULL, &t, NULL, &d);

	cr_assert_eq(s, MS_OK, "%s", d.msg);
	cr_assert_eq(t->n_events, 2);
	cr_expect_eq(t->events[0].addr, 3);
	cr_expect_eq(t->events[1].addr, 1);
	ms_trace_free(t);
	remove(path);
#undef HDR
#undef ENTRY
#undef EA
#undef EA_MEMO
#undef BYTES
}

/*
 * A frames list shared by entries through the memo, as PyTorch writes one whose stack repeats:
 * entry 1 makes it of frames entry 0 made (so the fast path reads it), entry 2 gets it after it
 * was mapped and given up (the fast path has reused its header), entry 3 gets it in a layout
 * only the general path reads (a key whose value is a dict), and a key after device_traces gets
 * it too. Written by Python's pickle (protocol 4), fa, fb and fz frame dicts:
 *   fl = [fa, fb]
 *   {"device_traces": [[E(0, [fa, fb, fz]), E(1, fl), E(2, fl), E(3, fl, odd={"k": 1})]],
 *    "extra": fl}
 * Every way of reading gives entries 1 to 3 one stack, f then g, and entry 0 another.
 */
Test(pickle, shared_frames_list_after_it_is_given_up)
{
	static const char b[] =
	        "\x80\x04\x95"
	        "6\x01\x00\x00\x00\x00\x00\x00}\x94(\x8c\x0d"
	        "device_traces\x94]\x94]\x94(}\x94(\x8c\x06"
	        "action\x94\x8c\x05"
	        "alloc\x94\x8c\x04"
	        "addr\x94K\x00\x8c\x04size\x94M\x00\x02\x8c\x06stream\x94K\x00\x8c\x07time_"
	        "us\x94K\x00"
	        "\x8c\x06"
	        "frames\x94]\x94(}\x94(\x8c\x08"
	        "filename\x94\x8c\x04"
	        "a.py\x94\x8c\x04line\x94K\x01\x8c\x04name\x94\x8c\x01"
	        "f\x94u}\x94(h\x0e\x8c\x04"
	        "b.py\x94h\x10K\x02h\x11\x8c\x01g\x94u}\x94(h\x0e\x8c\x04z."
	        "py\x94h\x10K\x09h\x11\x8c"
	        "\x01h\x94ueu}\x94(h\x05h\x06h\x07K\x01h\x08M\x00\x02h\x09K\x00h\x0aK\x01h\x0b]"
	        "\x94(h"
	        "\x0dh\x13"
	        "eu}\x94(h\x05h\x06h\x07K\x02h\x08M\x00\x02h\x09K\x00h\x0aK\x02h\x0bh\x1au}\x94("
	        "h\x05h"
	        "\x06h\x07K\x03h\x08M\x00\x02h\x09K\x00h\x0aK\x03h\x0bh\x1a\x8c\x03odd\x94}"
	        "\x94\x8c\x01"
	        "k\x94K\x01suea\x8c\x05"
	        "extra\x94h\x1au.";
	struct ms_trace *ref = NULL;
	struct ms_diag d = MS_DIAG_INIT;
	static const struct {
		int fast;
		size_t chunk;
	} ways[] = {{1, SIZE_MAX}, {1, 61}, {0, 7}};

	cr_assert_eq(th_pickle_load(b, sizeof(b) - 1, 0, SIZE_MAX, &ref, NULL, &d), MS_OK, "%s",
	             d.msg);
	cr_assert_eq(ref->n_events, 4);
	for (size_t i = 1; i < 4; i++)
		cr_expect_eq(ref->events[i].stack, ref->events[1].stack, "entry %zu", i);
	cr_expect_neq(ref->events[0].stack, ref->events[1].stack);
	{
		size_t n;
		const uint32_t *fr = ms_symtab_get_stack(&ref->syms, ref->events[1].stack, &n);
		cr_assert_eq(n, 2);
		cr_expect_str_eq(ms_symtab_get_str(&ref->syms, ref->syms.frames[fr[0]].name)->s,
		                 "f");
		cr_expect_str_eq(ms_symtab_get_str(&ref->syms, ref->syms.frames[fr[1]].name)->s,
		                 "g");
	}
	for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
		struct ms_trace *t = NULL;
		uint64_t fast = 0;
		cr_assert_eq(th_pickle_load(b, sizeof(b) - 1, ways[w].fast, ways[w].chunk, &t,
		                            &fast, &d),
		             MS_OK, "way %zu: %s", w, d.msg);
		cr_expect_eq(th_events_diff(ref, t), -1, "way %zu differs at event %ld", w,
		             th_events_diff(ref, t));
		if (ways[w].fast && ways[w].chunk == SIZE_MAX)
			cr_expect_geq(fast, 2, "entries 1 and 2 read fast: %llu",
			              (unsigned long long)fast);
		ms_trace_free(t);
	}
	ms_trace_free(ref);
}

/* Entries of several devices, in batches and alone (see testdata/snapshots/edge/README.md). */
Test(pickle, entries_of_several_devices)
{
	static const char *const files[] = {"multi_device_p2.pickle", "multi_device_p4.pickle"};
	static const struct {
		uint16_t device;
		uint64_t addr, size;
		int64_t t_ns;
	} want[] = {{0, 1, 512, 1000}, {0, 1, 512, 2000}, {1, 2, 1024, 3000}, {3, 3, 2048, 4000}};

	for (size_t f = 0; f < 2; f++) {
		char path[1024];
		struct ms_trace *t = NULL;
		struct ms_diag d = MS_DIAG_INIT;
		snprintf(path, sizeof(path), "%s/snapshots/edge/%s", MS_TESTDATA, files[f]);
		cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK, "%s: %s", path, d.msg);
		cr_assert_eq(t->n_events, 4, "%s", path);
		for (size_t i = 0; i < 4; i++)
			cr_expect(t->events[i].device == want[i].device &&
			                  t->events[i].addr == want[i].addr &&
			                  t->events[i].size == want[i].size &&
			                  t->events[i].t_ns == want[i].t_ns,
			          "%s: event %zu", path, i);
		cr_expect_eq(t->events[1].action, MS_ACT_FREE_REQUESTED);
		ms_trace_free(t);
	}
}

/*
 * The fast path for trace entries reads what the general path reads, on every real snapshot
 * at hand: the same events, string for string and stack for stack. Also with the input in
 * small pieces, where entries cross the end of the window and the fast path gives up midway.
 */
Test(pickle, fast_path_reads_what_the_general_path_reads)
{
	static const char *const names[] = {
	        "dynamic_oom", "gpt_train",          "multistream",        "resnet50",
	        "dynamic_seq", "dynamic_expandable", "dynamic_empty_cache"};
	int tried = 0;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *path = th_snapshot_path(names[i]);
		static const struct {
			int fast;
			size_t chunk;
		} ways[] = {{1, SIZE_MAX}, {1, 4099}, {0, 7}};
		struct ms_trace *ref = NULL;
		struct ms_diag d = MS_DIAG_INIT;
		size_t n;
		char *data;

		if (!path)
			continue;
		cr_assert(data = th_read_decompressed(path, &n), "%s", path);
		cr_assert_eq(th_pickle_load(data, n, 0, SIZE_MAX, &ref, NULL, &d), MS_OK, "%s: %s",
		             path, d.msg);
		cr_assert_gt(ref->n_events, 1000, "%s", path);
		for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
			struct ms_trace *t = NULL;
			uint64_t fast = 0;
			cr_assert_eq(
			        th_pickle_load(data, n, ways[w].fast, ways[w].chunk, &t, &fast, &d),
			        MS_OK, "%s: %s", path, d.msg);
			cr_expect_eq(th_events_diff(ref, t), -1, "%s: way %zu differs at event %ld",
			             path, w, th_events_diff(ref, t));
			if (ways[w].fast && ways[w].chunk == SIZE_MAX)
				/* all but the first entries, those with new frames and those cut by
				 * a FRAME opcode: 99.8% to 99.9% of these files */
				cr_expect_geq(fast, ref->n_events / 100 * 99,
				              "%s: only %llu of %zu entries fast", path,
				              (unsigned long long)fast, ref->n_events);
			else if (!ways[w].fast)
				cr_expect_eq(fast, 0);
			ms_trace_free(t);
		}
		{
			/* and the file itself: a plain pickle mapped and read in place, a
			 * compressed one streamed; loading tells the pools from the end state */
			struct ms_trace *t = NULL;
			struct ms_pool_inference pi;
			cr_assert_eq(ms_trace_infer_pools(ref, &pi), MS_OK);
			cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK, "%s: %s", path,
			             d.msg);
			cr_expect_eq(th_events_diff(ref, t), -1,
			             "%s: the file differs at event %ld", path,
			             th_events_diff(ref, t));
			ms_trace_free(t);
		}
		ms_trace_free(ref);
		free(data);
		tried++;
	}
	cr_assert_geq(tried, 4, "the bundled snapshots are missing");
}

/* Segments and blocks are read by key id in one pass: a later duplicate key wins, as in Python;
 * keys that are not strings are passed over. */
Test(pickle, segment_keys_last_duplicate_wins)
{
	static const char bytes[] = "\x80\x04}(\x8c\x08segments](}(\x8c\x07"
	                            "addressJ\x00\x10\x00\x00\x8c\x0a"
	                            "total_sizeJ\x00\x04\x00\x00\x8c\x0a"
	                            "total_sizeJ\x00\x08\x00\x00K\x01K\x02\x8c\x06"
	                            "blocks](}(\x8c\x04"
	                            "sizeJ\x00\x04\x00\x00\x8c\x05"
	                            "state\x8c\x10"
	                            "active_allocated\x8c\x0e"
	                            "requested_sizeJ\xd0\x07\x00\x00\x8c\x04"
	                            "sizeJ\x00\x08\x00\x00ueue\x8c\x0d"
	                            "device_traces]]au.";
	struct ms_trace *t = NULL;
	struct ms_diag d = MS_DIAG_INIT;

	cr_assert_eq(th_pickle_load(bytes, sizeof(bytes) - 1, 1, SIZE_MAX, &t, NULL, &d), MS_OK,
	             "%s", d.msg);
	cr_assert_eq(t->n_segs, 1);
	cr_assert_eq(t->n_blocks, 1);
	cr_expect_eq(t->segs[0].addr, 4096);
	cr_expect_eq(t->segs[0].total_size, 2048);
	cr_expect_eq(t->blocks[0].size, 2048);
	cr_expect_eq(t->blocks[0].addr, 4096);
	cr_expect_eq(t->blocks[0].requested_size, 2000);
	cr_expect_eq(t->blocks[0].state, MS_BLOCK_ACTIVE_ALLOCATED);
	ms_trace_free(t);
}

/*
 * Layouts that would trip the fast path up, each read both ways: the same status and the same
 * message (the fast path gives up and lets the general path report, or reports what the
 * general path would). Entry 1 has its keys inline and goes the general way; entry 2 gets them
 * from the memo and, where marked, goes the fast way.
 */
Test(pickle, fast_path_refuses_what_the_general_path_refuses)
{
#define HDR                      \
	"\x80\x04}\x94(\x8c\x0d" \
	"device_traces\x94]\x94]\x94("
	/* memo 4: the entry, 5 'action', 6 'alloc', 7 'addr', 8 'size' */
#define E1                      \
	"}\x94(\x8c\x06"        \
	"action\x94\x8c\x05"    \
	"alloc\x94\x8c\x04"     \
	"addr\x94K\x01\x8c\x04" \
	"size\x94K\x02u"
	/* memo 9 */
#define E2 "}\x94(h\x05h\x06h\x07K\x03h\x08K\x04u"
/* a general entry with one frame: memo 9 the entry, 10 'frames', 11 its list, 12 the frame */
#define E1F                                              \
	"}\x94(h\x05h\x06h\x07K\x01h\x08K\x02\x8c\x06"   \
	"frames\x94]\x94(}\x94(\x8c\x04name\x94\x8c\x01" \
	"f\x94\x8c\x08"                                  \
	"filename\x94\x8c\x04x.py\x94\x8c\x04line\x94K\x07ueu"
#define E2F(frames) "}\x94(h\x05h\x06h\x07K\x03h\x08K\x04h\x0a]\x94" frames "u"
#define TAIL                    \
	"ea\x8c\x03pad\x8c\x10" \
	"0123456789abcdefu."
#define BYTES(s) s, sizeof(s) - 1
	static const struct {
		const char *name, *bytes;
		size_t n;
		ms_status s;
		const char *msg;
		int fast;           /* entries the fast path must have read */
		uint64_t last_addr; /* when read: the last entry's address and action */
		int last_action;
		int last_frames; /* -1: not checked */
	} cases[] = {
	        {"plain", BYTES(HDR E1 E2 TAIL), MS_OK, "", 1, 3, MS_ACT_ALLOC, -1},
	        {"duplicate key: the last wins",
	         BYTES(HDR E1 "}\x94(h\x05h\x06h\x07K\x03h\x07K\x09h\x08K\x04u" TAIL), MS_OK, "", 1,
	         9, MS_ACT_ALLOC, -1},
	        {"negative int",
	         BYTES(HDR E1 "}\x94(h\x05h\x06h\x07\x8a\x02\x00\xffh\x08K\x04u" TAIL), MS_OK, "",
	         1, (uint64_t)-256, MS_ACT_ALLOC, -1},
	        /* a value memoized by one fast entry (memo 10) and fetched by the next */
	        {"value from the memo",
	         BYTES(HDR E1 "}\x94(h\x05\x8c\x0e"
	                      "free_requested\x94h\x07K\x03h\x08K\x04u"
	                      "}\x94(h\x05h\x0ah\x07K\x05h\x08K\x06u" TAIL),
	         MS_OK, "", 2, 5, MS_ACT_FREE_REQUESTED, -1},
	        /* an int memoized (Python never does): the general path reads that entry */
	        {"int memoized", BYTES(HDR E1 "}\x94(h\x05h\x06h\x07K\x03\x94h\x08K\x04u" TAIL),
	         MS_OK, "", 0, 3, MS_ACT_ALLOC, -1},
	        /* a memo slot read as a key, then written again: the key it holds now counts */
	        {"memo slot of a key written again",
	         BYTES(HDR E1 E2 "\x8c\x04"
	                         "addr\x94"
	                         "0\x8c\x06"
	                         "streamq\x07"
	                         "0}\x94(h\x05h\x06h\x0aK\x03h\x07K\x09h\x08K\x04u" TAIL),
	         MS_OK, "", 2, 3, MS_ACT_ALLOC, -1},
	        /* a list of frames seen before: one (APPEND), none, two (APPENDS) */
	        {"frames: one",
	         BYTES(HDR E1 E1F E2F("h\x0c"
	                              "a") TAIL),
	         MS_OK, "", 1, 3, MS_ACT_ALLOC, 1},
	        {"frames: none", BYTES(HDR E1 E1F E2F("") TAIL), MS_OK, "", 1, 3, MS_ACT_ALLOC, 0},
	        {"frames: two",
	         BYTES(HDR E1 E1F E2F("(h\x0ch\x0c"
	                              "e") TAIL),
	         MS_OK, "", 1, 3, MS_ACT_ALLOC, 2},
	        /* a fast path's list (memo 19) extended later by the general path, then reused */
	        {"frames list extended later",
	         BYTES(HDR E1 E1F E2F(
	                 "(h\x0ch\x0c"
	                 "e") "h\x13h\x0c"
	                      "a0}\x94(h\x05h\x06h\x07K\x05h\x08K\x04h\x0ah\x13u" TAIL),
	         MS_OK, "", 2, 5, MS_ACT_ALLOC, -1},
	        /* the list made, then something only the general path reads: it is taken back */
	        {"frames, then an int beyond 64 bits",
	         BYTES(HDR E1 E1F E2F("(h\x0ch\x0c"
	                              "eh\x07\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01") TAIL),
	         MS_ERR_FORMAT, "bad 'addr'", 0, 0, 0, -1},
	        /* short string values by slot: repeated, changed at equal length, empty, 8 and
	           9 bytes (memo 10 the key 'user_metadata') */
	        {"short strings",
	         BYTES(HDR E1 "}\x94(h\x05h\x06h\x07K\x03h\x08K\x04\x8c\x0d"
	                      "user_metadata\x94\x8c\x03N/A\x94u"
	                      "}\x94(h\x05h\x06h\x07K\x04h\x08K\x04h\x0a\x8c\x03N/B\x94u"
	                      "}\x94(h\x05h\x06h\x07K\x05h\x08K\x04h\x0a\x8c\x03N/B\x94u"
	                      "}\x94(h\x05h\x06h\x07K\x06h\x08K\x04h\x0a\x8c\x03N/A\x94u"
	                      "}\x94(h\x05h\x06h\x07K\x07h\x08K\x04h\x0a\x8c\x00\x94u"
	                      "}\x94(h\x05h\x06h\x07K\x08h\x08K\x04h\x0a\x8c\x09"
	                      "abcdefghi\x94u"
	                      "}\x94(h\x05h\x06h\x07K\x09h\x08K\x04h\x0a\x8c\x08"
	                      "abcdefgh\x94u"
	                      "}\x94(h\x05h\x06h\x07K\x0ah\x08K\x04h\x0a\x8c\x08"
	                      "abcdefgi\x94u" TAIL),
	         MS_OK, "", 7, 10, MS_ACT_ALLOC, -1},
	        {"extended", BYTES(HDR E1 E2 "\x8c\x06streamK\x00s" TAIL), MS_ERR_UNSUPPORTED,
	         "modified later", 1, 0, 0, -1},
	        {"popped", BYTES(HDR E1 E2 "0" TAIL), MS_ERR_UNSUPPORTED, "never added", 1, 0, 0,
	         -1},
	        {"fetched again", BYTES(HDR E1 E2 "h\x09" TAIL), MS_ERR_UNSUPPORTED,
	         "reference to a streamed trace entry", 1, 0, 0, -1},
	        {"appended twice", BYTES(HDR E1 E2 "2" TAIL), MS_ERR_UNSUPPORTED, "used twice", 1,
	         0, 0, -1},
	        {"stored in a tuple", BYTES(HDR E1 E2 "2\x85" TAIL), MS_ERR_FORMAT, "not a dict", 1,
	         0, 0, -1},
	        {"no size", BYTES(HDR E1 "}\x94(h\x05h\x06h\x07K\x03u" TAIL), MS_ERR_FORMAT,
	         "bad 'size'", 0, 0, 0, -1},
	        {"memo hole", BYTES(HDR E1 "}\x94(h\x05h\x06h\x07h\x7fh\x08K\x04u" TAIL),
	         MS_ERR_FORMAT, "unknown slot", 0, 0, 0, -1},
	        {"int beyond 64 bits",
	         BYTES(HDR E1 "}\x94(h\x05h\x06h\x07\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01"
	                      "h\x08K\x04u" TAIL),
	         MS_ERR_FORMAT, "bad 'addr'", 0, 0, 0, -1},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ms_trace *a = NULL, *b = NULL;
		struct ms_diag da = MS_DIAG_INIT, db = MS_DIAG_INIT;
		uint64_t fast = 0;
		ms_status sa =
		        th_pickle_load(cases[i].bytes, cases[i].n, 1, SIZE_MAX, &a, &fast, &da);
		ms_status sb = th_pickle_load(cases[i].bytes, cases[i].n, 0, 7, &b, NULL, &db);

		cr_expect_eq(sa, cases[i].s, "%s: %s: %s", cases[i].name, ms_status_name(sa),
		             da.msg);
		cr_expect_eq(sb, sa, "%s: general %s, fast %s", cases[i].name, ms_status_name(sb),
		             ms_status_name(sa));
		cr_expect_str_eq(db.msg, da.msg, "%s", cases[i].name);
		cr_expect(strstr(da.msg, cases[i].msg), "%s: %s", cases[i].name, da.msg);
		cr_expect_geq(fast, (uint64_t)cases[i].fast, "%s: the fast path did not run",
		              cases[i].name);
		if (sa == MS_OK && sb == MS_OK) {
			cr_expect_eq(th_events_diff(a, b), -1, "%s", cases[i].name);
			cr_assert_geq(a->n_events, 2, "%s", cases[i].name);
			cr_expect_eq(a->events[a->n_events - 1].addr, cases[i].last_addr, "%s",
			             cases[i].name);
			cr_expect_eq(a->events[a->n_events - 1].action, cases[i].last_action, "%s",
			             cases[i].name);
			if (cases[i].last_frames >= 0) {
				size_t nf;
				ms_symtab_get_stack(&a->syms, a->events[a->n_events - 1].stack,
				                    &nf);
				cr_expect_eq(nf, (size_t)cases[i].last_frames, "%s", cases[i].name);
			}
		}
		ms_trace_free(a);
		ms_trace_free(b);
	}
#undef HDR
#undef E1
#undef E2
#undef E1F
#undef E2F
#undef TAIL
#undef BYTES
}

/* An entry of an action this reader does not know (a later release's): skipped with one counted
 * warning naming it, by the fast path and the general path alike; the rest is read. */
Test(pickle, unknown_action_skipped_with_a_warning)
{
	/* the layout of fast_path_refuses_what_the_general_path_refuses: entry 1 an alloc, entry
	   2 of action 'foo' with its keys from the memo */
	static const char bytes[] = "\x80\x04}\x94(\x8c\x0d"
	                            "device_traces\x94]\x94]\x94("
	                            "}\x94(\x8c\x06"
	                            "action\x94\x8c\x05"
	                            "alloc\x94\x8c\x04"
	                            "addr\x94K\x01\x8c\x04"
	                            "size\x94K\x02u"
	                            "}\x94(h\x05\x8c\x03"
	                            "foo\x94h\x07K\x03h\x08K\x04u"
	                            "ea\x8c\x03pad\x8c\x10"
	                            "0123456789abcdefu.";

	for (int fast = 0; fast < 2; fast++) {
		struct ms_trace *t = NULL;
		struct ms_diag d = MS_DIAG_INIT;
		ms_status s = th_pickle_load(bytes, sizeof(bytes) - 1, fast, fast ? SIZE_MAX : 7,
		                             &t, NULL, &d);
		cr_assert_eq(s, MS_OK, "fast %d: %s", fast, d.msg);
		cr_expect_eq(t->n_events, 1, "fast %d: %zu events", fast, t->n_events);
		cr_expect_eq(d.warnings, 1, "fast %d", fast);
		cr_expect(strstr(d.warning, "1 trace entries skipped") &&
		                  strstr(d.warning, "'foo'"),
		          "fast %d: %s", fast, d.warning);
		ms_trace_free(t);
	}
}
