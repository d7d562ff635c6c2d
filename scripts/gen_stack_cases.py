#!/usr/bin/env python3
"""Writes the stack test inputs (run once; outputs are committed). Needs no other file.
- testdata/snapshots/edge/stacks_all.pickle: a snapshot in the shape PyTorch 2.6/2.7 writes with
  _record_memory_history(stacks="all"): C++ and Python frames in one list, innermost first, C++
  frames with file "??", "" or a .cpp name and line 0, CPython's own C frames between the Python
  ones, the Python frames that could not be placed appended after `_start`, a Python frame whose
  line is size_t(-1) (2^64 - 1: what made memsnap refuse such files), frames with a key PyTorch
  does not write, and one stack 3000 frames deep. Frame dicts are shared between entries (memo
  references), as PyTorch's are. The trace: six allocations with different kinds of stacks
  (user code under transformers and torch; C++ only, from the autograd thread; the deep one; a
  library without user code; torch's own Python only; a frame-less one), one freed, then an OOM
  (64 MiB with 10 MiB free on the device), so `memsnap replay` names who holds the memory. The
  same bytes are a seed of the pickle fuzzer (testdata/corpus/pickle/stacks_all_p4.pickle).
- testdata/bad/frame_line_str.pickle and frame_not_dict.pickle: a frame whose 'line' is a string,
  and a frames list holding a string: malformed ("bad 'frames'").
Usage: scripts/gen_stack_cases.py
"""
import pickle

MiB = 1 << 20
BASE = 0x7F3A00000000
U64_MAX = (1 << 64) - 1

_frames = {}


def fr(name, filename, line=0, **extra):
    """One frame dict per distinct frame, shared by every stack that holds it."""
    key = (name, filename, line, tuple(sorted(extra.items())))
    if key not in _frames:
        d = {"name": name, "filename": filename, "line": line}
        d.update(extra)
        _frames[key] = d
    return _frames[key]


SP = "/opt/venv/lib/python3.12/site-packages"
CAPTURE = [
    fr("torch::unwind::unwind()", "??"),
    fr("torch::CapturedTraceback::gather(bool, bool, bool)", "??"),
    fr("torch::cuda::(anonymous namespace)::gather_with_cpp()", "memory_snapshot.cpp"),
]
MALLOC = CAPTURE + [
    fr("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, "
       "unsigned long, CUstream_st*)", "CUDACachingAllocator.cpp"),
    fr("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed "
       "char, unsigned long, CUstream_st*)", ""),
    fr("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)",
       ""),
    fr("at::TensorBase at::detail::_empty_generic<long>(c10::ArrayRef<long>, c10::Allocator*, "
       "c10::DispatchKeySet, c10::ScalarType, std::optional<c10::MemoryFormat>)", ""),
    fr("at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)", "??"),
]
FREE = CAPTURE + [
    fr("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::free(c10::cuda::"
       "CUDACachingAllocator::Native::(anonymous namespace)::Block*)", "CUDACachingAllocator.cpp"),
    fr("c10::cuda::CUDACachingAllocator::Native::local_raw_delete(void*)",
       "CUDACachingAllocator.cpp"),
    fr("c10::StorageImpl::~StorageImpl()", ""),
    fr("c10::TensorImpl::~TensorImpl()", "??"),
    fr("THPVariable_subclass_dealloc(_object*)", "??"),
]
MATMUL = [
    fr("at::(anonymous namespace)::wrapper_CUDA_mm(at::Tensor const&, at::Tensor const&)",
       "RegisterCUDA.cpp"),
    fr("c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<"
       "c10::CompileTimeFunctionPointer<at::Tensor (at::Tensor const&, at::Tensor const&), "
       "&at::(anonymous namespace)::wrapper_CUDA_mm> > >::call(c10::OperatorKernel*, "
       "c10::DispatchKeySet, at::Tensor const&, at::Tensor const&)", "RegisterCUDA.cpp"),
    fr("at::_ops::mm::call(at::Tensor const&, at::Tensor const&)", "??"),
    fr("at::native::matmul(at::Tensor const&, at::Tensor const&)", "??"),
    fr("torch::autograd::THPVariable_matmul(_object*, _object*, _object*)",
       "python_torch_functions_0.cpp"),
    fr("cfunction_call", "??"),
]
EVAL = fr("_PyEval_EvalFrameDefault", "??")
PY_MAIN = [
    fr("PyEval_EvalCode", "??"),
    fr("run_eval_code_obj", "??"),
    fr("Py_RunMain", "??"),
    fr("Py_BytesMain", "??"),
    fr("__libc_start_main", "??"),
    fr("_start", "??"),
]


def py(*frames):
    """Python frames, each followed by the interpreter's C frame, as stacks="all" has them."""
    out = []
    for f in frames:
        out += [f, EVAL]
    return out


LINEAR = fr("forward", SP + "/torch/nn/modules/linear.py", 125)
CALL_IMPL = fr("_call_impl", SP + "/torch/nn/modules/module.py", 1750)
WRAPPED = fr("_wrapped_call_impl", SP + "/torch/nn/modules/module.py", 1739)
HF_MLP = fr("forward", SP + "/transformers/models/llama/modeling_llama.py", 187)
HF_LAYER = fr("forward", SP + "/transformers/models/llama/modeling_llama.py", 330)
CTXLIB = fr("inner", "/usr/lib/python3.12/contextlib.py", 81)
USER_MODEL = fr("forward", "/home/ada/proj/model.py", 42)
USER_TRAIN = fr("train_step", "/home/ada/proj/train.py", 88)
USER_MAIN = fr("<module>", "/home/ada/proj/train.py", 120)

# user code that calls a transformers layer that calls torch (the user's frames appended
# after _start, as PyTorch does with the Python frames it could not interleave)
stack_user = (MALLOC + MATMUL + py(LINEAR, CALL_IMPL, WRAPPED, HF_MLP, CALL_IMPL, WRAPPED,
                                   HF_LAYER, CTXLIB) + [fr("PyObject_Call", "??")] +
              py(USER_MODEL) + PY_MAIN + [USER_TRAIN, USER_MAIN])
# the autograd engine's thread: no Python at all
stack_cpp = MALLOC + [
    fr("at::detail::empty_cuda(c10::ArrayRef<long>, std::optional<c10::ScalarType>, "
       "std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, "
       "std::optional<c10::MemoryFormat>)", "??"),
    fr("at::TensorIteratorBase::allocate_or_resize_outputs()", "??"),
    fr("at::TensorIteratorBase::build(at::TensorIteratorConfig&)", "??"),
    fr("at::(anonymous namespace)::wrapper_CUDA_div_Tensor(at::Tensor const&, at::Tensor const&)",
       "RegisterCUDA.cpp"),
    fr("at::_ops::div_Tensor::call(at::Tensor const&, at::Tensor const&)", "??"),
    fr("at::native::div(at::Tensor const&, c10::Scalar const&)", "??"),
    fr("torch::autograd::VariableType::(anonymous namespace)::div_Scalar(c10::DispatchKeySet, "
       "at::Tensor const&, c10::Scalar const&)", "VariableType_1.cpp"),
    fr("torch::autograd::generated::MeanBackward0::apply(std::vector<at::Tensor, "
       "std::allocator<at::Tensor> >&&)", "??"),
    fr("torch::autograd::Node::operator()(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)",
       ""),
    fr("torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, "
       "torch::autograd::Node*, torch::autograd::InputBuffer&, "
       "std::shared_ptr<torch::autograd::ReadyQueue> const&)", "??"),
    fr("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)",
       "??"),
    fr("start_thread", "./nptl/pthread_create.c", 442),
    fr("__clone3", "./misc/../sysdeps/unix/sysv/linux/x86_64/clone3.S", 81),
]
# a recursion 1488 levels deep in user code: 3000 frames, one of them with line 2^64 - 1 and
# two with a key PyTorch does not write
deep = [fr("recurse", "/home/ada/proj/deep.py", 7, column=12)]
deep += py(*[fr("recurse", "/home/ada/proj/deep.py", 9)] * 1488)
deep += [fr("init_ctx", SP + "/torch/_subclasses/fake_tensor.py", U64_MAX), EVAL]
deep += [fr("run", "/home/ada/proj/deep.py", 15, column=4, end_line=None)]
stack_deep = MALLOC + MATMUL + deep + PY_MAIN
assert len(stack_deep) == 3000
# a library with no user code below it (a command-line entry point in site-packages)
stack_lib = (MALLOC + MATMUL + py(LINEAR, CALL_IMPL, WRAPPED, HF_MLP,
                                  fr("main", SP + "/accelerate/commands/launch.py", 1160)) +
             PY_MAIN)
# torch's own Python only (an optimizer step run by torch.distributed's launcher)
stack_torch = (MALLOC + py(fr("_multi_tensor_adam", SP + "/torch/optim/adam.py", 610),
                           fr("step", SP + "/torch/optim/adam.py", 223),
                           fr("<module>", "<frozen runpy>", 88)) + PY_MAIN)
stack_free = FREE + py(USER_TRAIN, USER_MAIN) + PY_MAIN

t = [1_700_000_000_000_000]


def entry(action, addr, size, frames, **extra):
    t[0] += 1000
    e = {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t[0],
         "frames": frames}
    e.update(extra)
    return e


SEG1, SEG2 = BASE, BASE + 32 * MiB
A, B, C, D, F = SEG1, SEG1 + 8 * MiB, SEG1 + 14 * MiB, SEG1 + 16 * MiB, SEG1 + 18 * MiB
trace = [
    entry("segment_alloc", SEG1, 20 * MiB, stack_user),
    entry("alloc", A, 8 * MiB, stack_user),
    entry("alloc", B, 6 * MiB, stack_cpp),
    entry("alloc", C, 2 * MiB, stack_deep),
    entry("alloc", D, 2 * MiB, stack_lib),
    entry("alloc", F, 2 * MiB, stack_torch),
    entry("segment_alloc", SEG2, 20 * MiB, stack_user),
    entry("alloc", SEG2, 1536 * 1024, []),
    entry("free_requested", SEG2, 1536 * 1024, stack_free),
    entry("free_completed", SEG2, 1536 * 1024, stack_free),
    entry("segment_free", SEG2, 20 * MiB, stack_user),
    entry("oom", 0, 64 * MiB, stack_user, device_free=10 * MiB),
]


def block(addr, size, frames):
    return {"address": addr, "size": size, "requested_size": size, "state": "active_allocated",
            "frames": frames}


blocks = [block(A, 8 * MiB, stack_user), block(B, 6 * MiB, stack_cpp),
          block(C, 2 * MiB, stack_deep), block(D, 2 * MiB, stack_lib),
          block(F, 2 * MiB, stack_torch)]
snapshot = {
    "segments": [{"device": 0, "address": SEG1, "total_size": 20 * MiB,
                  "allocated_size": 20 * MiB, "active_size": 20 * MiB,
                  "requested_size": 20 * MiB, "stream": 0, "segment_type": "large",
                  "segment_pool_id": (0, 0), "is_expandable": False, "frames": stack_user,
                  "blocks": blocks}],
    "device_traces": [trace],
    "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                           "garbage_collection_threshold": 0.0, "expandable_segments": False},
    "external_annotations": [],
}
for path in ("testdata/snapshots/edge/stacks_all.pickle",
             "testdata/corpus/pickle/stacks_all_p4.pickle"):
    with open(path, "wb") as f:
        pickle.dump(snapshot, f, protocol=4)


def bad_frames(frames):
    return {"segments": [], "device_traces": [[entry("alloc", BASE, 512, frames)]],
            "allocator_settings": {}, "external_annotations": []}


with open("testdata/bad/frame_line_str.pickle", "wb") as f:
    pickle.dump(bad_frames([{"name": "f", "filename": "a.py", "line": "12"}]), f, protocol=4)
with open("testdata/bad/frame_not_dict.pickle", "wb") as f:
    pickle.dump(bad_frames(["f (a.py:12)"]), f, protocol=4)
