"""Which attributes of the instrumented modules are wrapped (docs/collection.md §Which functions are wrapped).

Names are the original's, so invariant files written by either tool select the same functions.
"""

from __future__ import annotations

# Prefixes never walked (the original's INSTR_MODULES_TO_SKIP).
MODULES_TO_SKIP = ("torch.fx", "torch._dynamo", "torch._sources", "torchtitan.trainer.Trainer.train_step")

# The original wraps these "without dump" (a pass-through that only unproxies arguments). Ours records
# nothing there, so it does not wrap them at all, unless --use-full-instr asks to record them.
WRAP_WITHOUT_DUMP = (
    "torch._C",
    "torch._jit",
    "torch.jit",
    "torch._tensor_str",
    "torch.overrides.handle_torch_function",
    "torch._ops.OpOverloadPacket",
    "torch._ops._OpNamespace",
    "torch.nn.modules.module.Module._apply",
    "torch.autograd",
    "torch.cuda._is_compiled",
    "torch.cuda.is_available",
    "torch.overrides",
    "torch._ops.OpOverload",
    "torch.utils.data._utils",
    "torch.get_default_dtype",
)

# Exempt from WRAP_WITHOUT_DUMP and NEVER_WRAP (the original's WRAP_WITHOUT_DUMP_WHITELIST): the Tensor
# methods that --instr-descriptors wraps, named after the C type that defines them (walker.py).
DUMP_WHITELIST = ("torch._C.TensorBase.",)

# Never wrapped: the module call machinery (the original's SKIP_INSTR_APIS).
SKIP_APIS = frozenset(
    {
        "torch.nn.modules.module.Module._call_impl",
        "torch.nn.modules.module.Module._wrapped_impl",
        "torch.nn.modules.module.Module._wrapped_call_impl",
    }
)

# Never wrapped, and nothing recorded inside them (instrument/worker_transport.py): the main process taking
# DataLoader worker results off their queue. How many arrive in a step, and so these calls and the
# unpickling inside them, follows the workers' timing, not the program: recorded, they made two runs of
# one program differ (docs/collection.md §Determinism).
TIMING_DEPENDENT_APIS = frozenset(
    {
        "torch.utils.data.dataloader._MultiProcessingDataLoaderIter._get_data",
        "torch.utils.data.dataloader._MultiProcessingDataLoaderIter._try_get_data",
    }
)

# Modules whose code must keep running unwrapped even under --use-full-instr: wrapping them breaks
# torch itself (the JIT frontend inspects function objects; import machinery runs during the walk).
NEVER_WRAP = ("torch._C", "torch.jit", "torch._jit_internal", "torch._dynamo", "torch.fx", "torch._sources")

# torch's compiler, which torch.compile imports at its first compile: never instrumented when imported
# after the start (compiler work is not training, and torch.compile must run as without the tool).
COMPILER_MODULES = (
    "torch._inductor",
    "torch._dynamo",
    "torch._functorch",
    "torch._higher_order_ops",
    "torch._subclasses",
    "torch._prims",
    "torch._refs",
    "torch._decomp",
    "torch._export",
    "torch.export",
    "torch._guards",
    "torch._logging",
    "torch._library",
    "torch._lazy",
    "torch.utils._sympy",
    # The profiler's monitor, imported by the first record_function (inside the first zero_grad or DDP
    # forward): recorded, its annotation calls came and went between runs of one program.
    "torch.profiler",
)

ALLOWED_DUNDERS = frozenset({"__init__", "__call__", "__enter__", "__exit__"})


def skip_attribute_name(attr: str) -> bool:
    """Rules 4 and 5: getfile helpers and dunders other than the four call-related ones."""
    if "getfile" in attr:
        return True
    return attr.startswith("__") and attr.endswith("__") and attr not in ALLOWED_DUNDERS


def skip_api(full_name: str, root: str, use_full_instr: bool) -> bool:
    """Rules 7 to 9 plus the dump decision, for a function's full API name."""
    if not (full_name == root or full_name.startswith(root + ".")):
        return True
    if full_name in SKIP_APIS or full_name in TIMING_DEPENDENT_APIS or _startswith_any(full_name, MODULES_TO_SKIP):
        return True
    if _startswith_any(full_name, DUMP_WHITELIST):
        return False
    if _startswith_any(full_name, NEVER_WRAP):
        return True
    if not use_full_instr and _startswith_any(full_name, WRAP_WITHOUT_DUMP):
        return True
    return False


def _startswith_any(name: str, prefixes) -> bool:
    # Plain string prefixes, as the original matches them: "torch._jit" also covers "torch._jit_internal".
    return name.startswith(tuple(prefixes))
