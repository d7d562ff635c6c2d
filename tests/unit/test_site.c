/* The site rule (replay/site.c): frame kinds, the site of a stack, the frames shown with it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "helpers.h"
#include "parse/trace.h"
#include "replay/replay.h"
#include "replay/site.h"

struct fr {
	const char *name, *file;
	uint32_t line;
};

/* A stack of frames given innermost first, interned in y. */
static uint32_t stack_of(struct ms_symtab *y, const struct fr *f, size_t n)
{
	uint32_t ids[64], stack;

	cr_assert_leq(n, 64);
	for (size_t i = 0; i < n; i++) {
		struct ms_frame g = {0, 0, f[i].line};
		cr_assert_eq(ms_symtab_str(y, f[i].name, strlen(f[i].name), &g.name), MS_OK);
		cr_assert_eq(ms_symtab_str(y, f[i].file, strlen(f[i].file), &g.file), MS_OK);
		cr_assert_eq(ms_symtab_frame(y, &g, &ids[i]), MS_OK);
	}
	cr_assert_eq(ms_symtab_stack(y, ids, n, &stack), MS_OK);
	return stack;
}

#define STACK(y, arr) stack_of(y, arr, sizeof(arr) / sizeof(arr[0]))

static struct ms_symtab y;

static void setup(void)
{
	cr_assert_eq(ms_symtab_init(&y), MS_OK);
}

static void teardown(void)
{
	ms_symtab_release(&y);
}

/* The site's label and the kind it was chosen by. */
static void expect_site(uint32_t stack, const char *label, enum ms_frame_kind kind)
{
	char buf[512];
	size_t n;
	const uint32_t *fr = ms_symtab_get_stack(&y, stack, &n);
	enum ms_frame_kind k;

	ms_stack_label(&y, stack, buf, sizeof(buf));
	cr_expect_str_eq(buf, label);
	if (n) {
		ms_site_pos(&y, fr, n, &k);
		cr_expect_eq(k, kind, "%s: kind %d, want %d", label, k, kind);
	}
}

#define SP "/opt/venv/lib/python3.12/site-packages"

/* the frames PyTorch puts first in every C++ stack, and the allocator's */
#define CAPTURE                                                                                   \
	{"torch::unwind::unwind()", "??", 0},                                                     \
	        {"torch::CapturedTraceback::gather(bool, bool, bool)", "??", 0},                  \
	{                                                                                         \
		"torch::cuda::(anonymous namespace)::gather_with_cpp()", "memory_snapshot.cpp", 0 \
	}
#define MALLOC                                                                                     \
	CAPTURE,                                                                                   \
	        {"c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed " \
	         "char, unsigned long, CUstream_st*)",                                             \
	         "CUDACachingAllocator.cpp", 0},                                                   \
	        {"at::TensorBase at::detail::_empty_generic<long>(c10::ArrayRef<long>, "           \
	         "c10::Allocator*)",                                                               \
	         "", 0},                                                                           \
	{                                                                                          \
		"at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)", "??", 0  \
	}

TestSuite(site, .init = setup, .fini = teardown);

Test(site, frame_kinds)
{
	static const struct {
		const char *name, *file;
		enum ms_frame_kind kind;
	} cases[] = {
	        /* Python: the user's code, wherever it lives outside the packages */
	        {"forward", "/home/ada/proj/model.py", MS_FRAME_USER},
	        {"forward", "model.py", MS_FRAME_USER},
	        {"forward", "cs336-basics/cs336_basics/model.py", MS_FRAME_USER},
	        {"<module>", "/tmp/ipykernel_114/3105878423.py", MS_FRAME_USER},
	        {"<module>", "<stdin>", MS_FRAME_USER},
	        {"<module>", "<string>", MS_FRAME_USER},
	        {"<module>", "<console>", MS_FRAME_USER},
	        {"<module>", "<ipython-input-3-5d41402abc4b>", MS_FRAME_USER},
	        {"f", "/home/ada/mytorch/train.py", MS_FRAME_USER},
	        {"f", "/home/ada/proj/ext.pyx", MS_FRAME_USER},
	        /* libraries torch is called through */
	        {"forward", SP "/transformers/models/llama/modeling_llama.py", MS_FRAME_LIBRARY},
	        {"f", "/usr/lib/python3/dist-packages/numpy/core/numeric.py", MS_FRAME_LIBRARY},
	        {"f", "venv/lib/python3.12/site-packages/triton/testing.py", MS_FRAME_LIBRARY},
	        /* an environment kept in a directory named torch holds libraries too */
	        {"forward", "/opt/torch/.venv/lib/python3.12/site-packages/transformers/x.py",
	         MS_FRAME_LIBRARY},
	        /* torch's own (installed, relative, a checkout, generated), the standard library,
	           CPython's pseudo-files */
	        {"forward", SP "/torch/nn/modules/linear.py", MS_FRAME_PYTHON},
	        {"forward", "/opt/torch/.venv/lib/python3.12/site-packages/torch/nn/linear.py",
	         MS_FRAME_PYTHON},
	        {"_call_impl", "venv/lib/python3.12/site-packages/torch/nn/modules/module.py",
	         MS_FRAME_PYTHON},
	        {"f", "torch/_dynamo/eval_frame.py", MS_FRAME_PYTHON},
	        {"f", "/home/ada/pytorch/torch/optim/adam.py", MS_FRAME_PYTHON},
	        {"f", SP "/functorch/_src/x.py", MS_FRAME_PYTHON},
	        {"call", "/tmp/torchinductor_ada/z3/cz3vcpg.py", MS_FRAME_PYTHON},
	        {"forward", "<eval_with_key>.3", MS_FRAME_PYTHON},
	        {"_run_code", "<frozen runpy>", MS_FRAME_PYTHON},
	        {"inner", "/usr/lib/python3.12/contextlib.py", MS_FRAME_PYTHON},
	        {"wrapper", "/opt/conda/lib/python3.11/functools.py", MS_FRAME_PYTHON},
	        {"run", "/usr/lib64/python3.9/threading.py", MS_FRAME_PYTHON},
	        {"run", "/opt/pypy/lib/pypy3.10/threading.py", MS_FRAME_PYTHON},
	        /* C++ that says what ran */
	        {"at::native::div(at::Tensor const&, c10::Scalar const&)", "??", MS_FRAME_NATIVE},
	        {"torch::autograd::generated::MeanBackward0::apply(std::vector<at::Tensor, "
	         "std::allocator<at::Tensor> >&&)",
	         "??", MS_FRAME_NATIVE},
	        {"void at::native::gemm<float>(char, char)", "Blas.cpp", MS_FRAME_NATIVE},
	        {"at::cuda::getNewWorkspace()", "", MS_FRAME_NATIVE},
	        {"my_ext::fused_forward(at::Tensor const&)", "my_ext.so", MS_FRAME_NATIVE},
	        {"torch::cuda::ext::f()", "x.py", MS_FRAME_NATIVE},
	        /* and what lies between it and the allocator */
	        {"torch::unwind::unwind()", "??", MS_FRAME_PLUMBING},
	        {"torch::CapturedTraceback::gather(bool, bool, bool)", "??", MS_FRAME_PLUMBING},
	        {"torch::cuda::(anonymous namespace)::gather_with_cpp()", "memory_snapshot.cpp",
	         MS_FRAME_PLUMBING},
	        {"c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate("
	         "unsigned "
	         "long)",
	         "", MS_FRAME_PLUMBING},
	        {"c10::intrusive_ptr<c10::StorageImpl, c10::detail::intrusive_target_default_null_"
	         "type<c10::StorageImpl> >::reset_()",
	         "", MS_FRAME_PLUMBING},
	        {"at::TensorBase at::detail::_empty_generic<long>(c10::ArrayRef<long>)", "",
	         MS_FRAME_PLUMBING},
	        {"at::_ops::mm::call(at::Tensor const&, at::Tensor const&)", "??",
	         MS_FRAME_PLUMBING},
	        {"at::(anonymous namespace)::wrapper_CUDA_mm(at::Tensor const&, at::Tensor const&)",
	         "RegisterCUDA.cpp", MS_FRAME_PLUMBING},
	        {"at::impl::check_names_valid_for(at::TensorBase const&)", "??", MS_FRAME_PLUMBING},
	        {"at::meta::structured_add_Tensor::meta(at::Tensor const&)", "??",
	         MS_FRAME_PLUMBING},
	        {"at::TensorIteratorBase::allocate_or_resize_outputs()", "??", MS_FRAME_PLUMBING},
	        {"at::TensorIterator::binary_op(at::TensorBase&)", "??", MS_FRAME_PLUMBING},
	        {"at::empty_like(at::Tensor const&)", "??", MS_FRAME_PLUMBING},
	        {"at::native::empty_cuda(c10::ArrayRef<long>)", "??", MS_FRAME_PLUMBING},
	        {"at::native::new_empty_symint(at::Tensor const&)", "??", MS_FRAME_PLUMBING},
	        {"at::native::resize_output(at::Tensor const&)", "??", MS_FRAME_PLUMBING},
	        {"torch::autograd::VariableType::(anonymous namespace)::div_Scalar(c10::"
	         "DispatchKeySet)",
	         "VariableType_1.cpp", MS_FRAME_PLUMBING},
	        {"torch::autograd::Node::operator()(std::vector<at::Tensor>&&)", "",
	         MS_FRAME_PLUMBING},
	        {"torch::ADInplaceOrView::(anonymous namespace)::add_(c10::DispatchKeySet)", "??",
	         MS_FRAME_PLUMBING},
	        {"std::vector<at::Tensor, std::allocator<at::Tensor> >::~vector()", "",
	         MS_FRAME_PLUMBING},
	        {"_PyEval_EvalFrameDefault", "??", MS_FRAME_PLUMBING},
	        {"dynamo_custom_eval_frame_shim", "eval_frame.c", MS_FRAME_PLUMBING},
	        {"__libc_start_main", "??", MS_FRAME_PLUMBING},
	        {"??", "??", MS_FRAME_PLUMBING},
	        {"", "", MS_FRAME_PLUMBING},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_expect_eq(ms_frame_kind(cases[i].name, cases[i].file), cases[i].kind,
		             "%s (%s): %d, want %d", cases[i].name, cases[i].file,
		             ms_frame_kind(cases[i].name, cases[i].file), cases[i].kind);
}

/* Python only (stacks="python"): the user's frame under torch's. */
Test(site, python_user_code)
{
	static const struct fr s[] = {
	        {"forward", SP "/torch/nn/modules/linear.py", 125},
	        {"_call_impl", SP "/torch/nn/modules/module.py", 1750},
	        {"forward", "/home/ada/proj/model.py", 42},
	        {"_call_impl", SP "/torch/nn/modules/module.py", 1750},
	        {"train_step", "/home/ada/proj/train.py", 88},
	};
	expect_site(STACK(&y, s), "forward (/home/ada/proj/model.py:42)", MS_FRAME_USER);
}

/* The user's code calls transformers, which calls torch; without the user's frame, the library. */
Test(site, library_between_user_and_torch)
{
	static const struct fr s[] = {
	        {"forward", SP "/torch/nn/modules/linear.py", 125},
	        {"inner", "/usr/lib/python3.12/contextlib.py", 81},
	        {"forward", SP "/transformers/models/llama/modeling_llama.py", 187},
	        {"wrapper", "/usr/lib/python3.12/functools.py", 50},
	        {"train_step", "/home/ada/proj/train.py", 88},
	};
	expect_site(STACK(&y, s), "train_step (/home/ada/proj/train.py:88)", MS_FRAME_USER);
	expect_site(stack_of(&y, s, 4),
	            "forward (" SP "/transformers/models/llama/modeling_llama.py:187)",
	            MS_FRAME_LIBRARY);
	/* only torch and the standard library: the innermost Python frame */
	expect_site(stack_of(&y, s, 2), "forward (" SP "/torch/nn/modules/linear.py:125)",
	            MS_FRAME_PYTHON);
	expect_site(stack_of(&y, s + 1, 1), "inner (/usr/lib/python3.12/contextlib.py:81)",
	            MS_FRAME_PYTHON);
}

/*
 * --site-depth: the site, then frames of the user's or a library's code further in (torch's own
 * and the standard library passed over), a package's file from its package down.
 */
Test(site, site_depth)
{
	static const struct fr s[] = {
	        {"forward", SP "/torch/nn/modules/linear.py", 125},
	        {"inner", "/usr/lib/python3.12/contextlib.py", 81},
	        {"forward", SP "/transformers/models/llama/modeling_llama.py", 187},
	        {"_call_impl", SP "/torch/nn/modules/module.py", 1790},
	        {"forward", SP "/transformers/models/llama/modeling_llama.py", 420},
	        {"wrapper", "/usr/lib/python3.12/functools.py", 50},
	        {"train_step", "/home/ada/proj/train.py", 88},
	        {"main", "/home/ada/proj/train.py", 120},
	};
	uint32_t st = STACK(&y, s);
	char buf[512];
	size_t n, pos[8];
	const uint32_t *fr = ms_symtab_get_stack(&y, st, &n);

	ms_stack_label_depth(&y, st, 1, buf, sizeof(buf));
	cr_expect_str_eq(buf, "train_step (/home/ada/proj/train.py:88)");
	ms_stack_label_depth(&y, st, 2, buf, sizeof(buf));
	cr_expect_str_eq(buf, "train_step (/home/ada/proj/train.py:88) > forward "
	                      "(transformers/models/llama/modeling_llama.py:420)");
	ms_stack_label_depth(&y, st, 3, buf, sizeof(buf));
	cr_expect_str_eq(buf, "train_step (/home/ada/proj/train.py:88) > forward "
	                      "(transformers/models/llama/modeling_llama.py:420) > forward "
	                      "(transformers/models/llama/modeling_llama.py:187)");
	/* deeper than the stack goes: as deep as it goes */
	cr_expect_eq(ms_site_chain(&y, fr, n, 10, pos, 8), 3);
	cr_expect(pos[0] == 6 && pos[1] == 4 && pos[2] == 2);
	ms_stack_label_depth(&y, 0, 3, buf, sizeof(buf));
	cr_expect_str_eq(buf, "(no stack recorded)");
}

/* The autograd engine's thread: C++ only, the stack capture first. */
Test(site, cpp_only)
{
	static const struct fr s[] = {
	        MALLOC,
	        {"at::TensorIteratorBase::build(at::TensorIteratorConfig&)", "??", 0},
	        {"at::(anonymous namespace)::wrapper_CUDA_div_Tensor(at::Tensor const&, at::Tensor "
	         "const&)",
	         "RegisterCUDA.cpp", 0},
	        {"c10::impl::wrap_kernel_functor_unboxed_<F>::call(c10::OperatorKernel*)",
	         "RegisterCUDA.cpp", 0},
	        {"at::_ops::div_Tensor::call(at::Tensor const&, at::Tensor const&)", "??", 0},
	        {"at::native::div(at::Tensor const&, c10::Scalar const&)", "??", 0},
	        {"torch::autograd::generated::MeanBackward0::apply(std::vector<at::Tensor>&&)",
	         "??", 0},
	        {"torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> "
	         "const&)",
	         "??", 0},
	        {"start_thread", "./nptl/pthread_create.c", 442},
	        {"__clone3", "./misc/../sysdeps/unix/sysv/linux/x86_64/clone3.S", 81},
	};
	static const struct fr plumbing_only[] = {CAPTURE, {"__clone3", "??", 0}};

	expect_site(STACK(&y, s), "at::native::div(at::Tensor const&, c10::Scalar const&)",
	            MS_FRAME_NATIVE);
	/* nothing but plumbing: the innermost frame */
	expect_site(STACK(&y, plumbing_only), "torch::unwind::unwind()", MS_FRAME_PLUMBING);
}

/*
 * C++ and Python in one list, as stacks="all" writes them: CPython's C frames between the
 * Python ones, and the Python frames PyTorch could not interleave after _start.
 */
Test(site, cpp_and_python)
{
	static const struct fr s[] = {
	        MALLOC,
	        {"at::_ops::mm::call(at::Tensor const&, at::Tensor const&)", "??", 0},
	        {"at::native::matmul(at::Tensor const&, at::Tensor const&)", "??", 0},
	        {"torch::autograd::THPVariable_matmul(_object*, _object*, _object*)",
	         "python_torch_functions_0.cpp", 0},
	        {"cfunction_call", "??", 0},
	        {"forward", SP "/torch/nn/modules/linear.py", 125},
	        {"_PyEval_EvalFrameDefault", "??", 0},
	        {"forward", SP "/transformers/models/llama/modeling_llama.py", 187},
	        {"_PyEval_EvalFrameDefault", "??", 0},
	        {"Py_RunMain", "??", 0},
	        {"__libc_start_main", "??", 0},
	        {"_start", "??", 0},
	        {"train_step", "/home/ada/proj/train.py", 88},
	        {"<module>", "/home/ada/proj/train.py", 120},
	};
	expect_site(STACK(&y, s), "train_step (/home/ada/proj/train.py:88)", MS_FRAME_USER);
	/* cut before the user's frames: the library; before it: torch's Python, not the C++ */
	expect_site(stack_of(&y, s, 16),
	            "forward (" SP "/transformers/models/llama/modeling_llama.py:187)",
	            MS_FRAME_LIBRARY);
	expect_site(stack_of(&y, s, 12), "forward (" SP "/torch/nn/modules/linear.py:125)",
	            MS_FRAME_PYTHON);
	/* and no Python at all: the operator */
	expect_site(stack_of(&y, s, 10), "at::native::matmul(at::Tensor const&, at::Tensor const&)",
	            MS_FRAME_NATIVE);
}

Test(site, no_frames)
{
	char buf[64];

	ms_stack_label(&y, 0, buf, sizeof(buf));
	cr_expect_str_eq(buf, "(no stack recorded)");
	cr_expect_eq(ms_site_frames(&y, 0, MS_FRAMES_ALL, NULL, 0, NULL), 0);
}

Test(site, labels)
{
	static const struct fr s[] = {
	        {"at::native::div(at::Tensor const&)", "??", 0},
	        {"at::native::mm(at::Tensor const&)", "", 0},
	        {"gather_with_cpp()", "memory_snapshot.cpp", 0},
	        {"forward", "/home/ada/proj/model.py", 42},
	        {"", "/home/ada/proj/model.py", 7},
	};
	static const char *const want[] = {
	        "at::native::div(at::Tensor const&)",      "at::native::mm(at::Tensor const&)",
	        "gather_with_cpp() (memory_snapshot.cpp)", "forward (/home/ada/proj/model.py:42)",
	        "?? (/home/ada/proj/model.py:7)",
	};
	size_t n;
	const uint32_t *fr = ms_symtab_get_stack(&y, STACK(&y, s), &n);

	for (size_t i = 0; i < n; i++) {
		char buf[128];
		ms_frame_label(&y, fr[i], buf, sizeof(buf));
		cr_expect_str_eq(buf, want[i]);
	}
}

/* --frames N: the site and N - 1 frames of its kind further out; all: every frame. */
Test(site, frames_shown)
{
	static const struct fr s[] = {
	        MALLOC,                                                 /* 0 .. 5 */
	        {"forward", SP "/torch/nn/modules/linear.py", 125},     /* 6 */
	        {"forward", "/home/ada/proj/model.py", 42},             /* 7 */
	        {"_call_impl", SP "/torch/nn/modules/module.py", 1750}, /* 8 */
	        {"_PyEval_EvalFrameDefault", "??", 0},                  /* 9 */
	        {"forward", SP "/transformers/models/x.py", 3},         /* 10 */
	        {"train_step", "/home/ada/proj/train.py", 88},          /* 11 */
	        {"<module>", "/home/ada/proj/train.py", 120},           /* 12 */
	};
	static const struct fr cpp[] = {
	        CAPTURE,
	        {"at::native::div(at::Tensor const&)", "??", 0},
	        {"c10::impl::call()", "??", 0},
	        {"torch::autograd::generated::DivBackward0::apply()", "??", 0},
	        {"start_thread", "??", 0},
	};
	static const struct fr lib[] = {
	        {"forward", SP "/torch/nn/modules/linear.py", 125},
	        {"forward", SP "/transformers/models/x.py", 3},
	        {"_PyEval_EvalFrameDefault", "??", 0},
	        {"generate", SP "/transformers/generation/utils.py", 9},
	        {"main", SP "/accelerate/commands/launch.py", 1},
	};
	static const struct fr plumbing_only[] = {CAPTURE};
	uint32_t st = STACK(&y, s);
	size_t pos[32], site = 99, n;

	n = ms_site_frames(&y, st, MS_FRAMES_USER, pos, 32, &site);
	cr_assert_eq(n, 1);
	cr_expect_eq(pos[0], 7);
	cr_expect_eq(site, 0);
	n = ms_site_frames(&y, st, 3, pos, 32, &site);
	cr_assert_eq(n, 3);
	cr_expect(pos[0] == 7 && pos[1] == 11 && pos[2] == 12, "%zu %zu %zu", pos[0], pos[1],
	          pos[2]);
	cr_expect_eq(ms_site_frames(&y, st, 10, pos, 32, NULL), 3, "no more user frames");
	cr_expect_eq(ms_site_frames(&y, st, 3, pos, 1, NULL), 3, "counted past cap");
	n = ms_site_frames(&y, st, MS_FRAMES_ALL, pos, 32, &site);
	cr_assert_eq(n, 13);
	cr_expect_eq(site, 7);
	for (size_t i = 0; i < n; i++)
		cr_expect_eq(pos[i], i);
	/* a library site: its kind's frames */
	n = ms_site_frames(&y, STACK(&y, lib), 2, pos, 32, NULL);
	cr_assert_eq(n, 2);
	cr_expect(pos[0] == 1 && pos[1] == 3, "%zu %zu", pos[0], pos[1]);
	/* a C++ site: the C++ frames that say what ran */
	n = ms_site_frames(&y, STACK(&y, cpp), 3, pos, 32, NULL);
	cr_assert_eq(n, 2);
	cr_expect(pos[0] == 3 && pos[1] == 5);
	/* the innermost by default: the frames from there */
	n = ms_site_frames(&y, STACK(&y, plumbing_only), 2, pos, 32, NULL);
	cr_assert_eq(n, 2);
	cr_expect(pos[0] == 0 && pos[1] == 1);
}

/*
 * The bundled stacks="all" snapshot (scripts/gen_stack_cases.py): each allocation's site, and
 * the replay's holders at its OOM, stacks copied into the result.
 */
Test(site, stacks_all_snapshot)
{
	static const char *const want[] = {
	        "forward (/home/ada/proj/model.py:42)",
	        "at::native::div(at::Tensor const&, c10::Scalar const&)",
	        "recurse (/home/ada/proj/deep.py:7)",
	        "forward (" SP "/transformers/models/llama/modeling_llama.py:187)",
	        "_multi_tensor_adam (" SP "/torch/optim/adam.py:610)",
	};
	const char *path = MS_TESTDATA "/snapshots/edge/stacks_all.pickle";
	struct ms_trace *t = NULL;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_replay_opts o;
	struct ms_replay_result r;
	char buf[256];
	size_t k = 0;
	long live = ms__alloc_live();

	cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK, "%s", d.msg);
	for (size_t i = 0; i < t->n_events; i++) {
		if (t->events[i].action != MS_ACT_ALLOC || !t->events[i].stack)
			continue;
		ms_stack_label(&t->syms, t->events[i].stack, buf, sizeof(buf));
		cr_assert_lt(k, 5);
		cr_expect_str_eq(buf, want[k], "allocation %zu", k);
		k++;
	}
	cr_expect_eq(k, 5);

	memset(&o, 0, sizeof(o));
	cr_assert_eq(ms_replay_trace(t, &o, &r, &d), MS_OK, "%s", d.msg);
	cr_assert(r.has_oom);
	cr_assert_eq(r.first_oom.n_holders, 5);
	cr_assert(r.holder_syms);
	for (size_t i = 0; i < 5; i++) {
		const struct ms_replay_holder *h = &r.first_oom.holders[i];
		cr_expect_str_eq(h->site, want[i], "holder %zu", i);
		cr_assert_neq(h->stack, 0);
		ms_stack_label(r.holder_syms, h->stack, buf, sizeof(buf));
		cr_expect_str_eq(buf, want[i], "holder %zu's copied stack", i);
	}
	{
		size_t n;
		ms_symtab_get_stack(r.holder_syms, r.first_oom.holders[2].stack, &n);
		cr_expect_eq(n, 3000);
	}
	ms_replay_result_release(&r);
	ms_trace_free(t);
	cr_expect_eq(ms__alloc_live(), live, "%ld allocations leaked", ms__alloc_live() - live);
}

/*
 * The real stacks="all" snapshots of ../shared/testdata/wild (skipped where absent): no
 * allocation is named by the stack capture, the allocator or any other plumbing (every stack
 * there has Python or an operator), and user code names some.
 */
static void wild_sites(const char *name, struct ms_trace *t, void *ctx)
{
	size_t *with_cpp = ctx;
	char buf[512];
	size_t allocs = 0, user = 0, cpp_stacks = 0, kinds[5] = {0};
	for (size_t i = 0; i < t->n_events; i++) {
		const struct ms_event *e = &t->events[i];
		size_t n;
		const uint32_t *fr;
		enum ms_frame_kind k;
		if (e->action != MS_ACT_ALLOC || !e->stack)
			continue;
		fr = ms_symtab_get_stack(&t->syms, e->stack, &n);
		cpp_stacks += !strcmp(ms_symtab_get_str(&t->syms, t->syms.frames[fr[0]].name)->s,
		                      "torch::unwind::unwind()");
		ms_stack_label(&t->syms, e->stack, buf, sizeof(buf));
		cr_expect(strncmp(buf, "torch::unwind", 13) && strncmp(buf, "c10::", 5),
		          "%s: event %zu named by %s", name, i, buf);
		ms_site_pos(&t->syms, fr, n, &k);
		user += k == MS_FRAME_USER;
		kinds[k]++;
		allocs++;
	}
	if (cpp_stacks) {
		(*with_cpp)++;
		cr_expect_gt(user, 0, "%s: no allocation by user code of %zu", name, allocs);
		cr_expect_eq(kinds[MS_FRAME_PLUMBING], 0,
		             "%s: %zu allocations named by their innermost frame", name,
		             kinds[MS_FRAME_PLUMBING]);
	}
}

Test(site, wild_snapshots)
{
	size_t with_cpp = 0;

	if (th_each_wild(wild_sites, &with_cpp) < 0) {
		cr_skip_test("%s: absent (third-party snapshots, not bundled)", MS_SHARED_WILD);
		return;
	}
	cr_expect_gt(with_cpp, 0, "%s holds no stacks=\"all\" snapshot", MS_SHARED_WILD);
}
