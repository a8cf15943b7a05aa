"""The original TrainCheck 0.2.0's script API (docs/differences.md §Script API): every public name its
`traincheck`, `traincheck.developer` and `traincheck.instrumentor` export imports here, either as an
offered name with the original's meaning, or as a clear ImportError for the few not offered
(`Instrumentor`, `VarSampler` and the internals of its recorder and source rewriter)."""
import importlib
import json
import subprocess
import sys

import pytest

from conftest import all_records, collect, write_script

# The public names of the original 0.2.0 (its wheel from PyPI): `traincheck.__all__`, the functions of
# `traincheck.developer.annotations`, and what `traincheck.instrumentor`'s star imports of source_file and
# tracer export (the modules they re-export, such as os and torch, left out).
ORIGINAL_EXPORTS = {
    "traincheck": ["Instrumentor", "get_all_subclasses", "annotate_stage", "annotate_answer_start_token_ids"],
    "traincheck.developer.annotations": ["annotate_stage", "annotate_answer_start_token_ids", "ALL_STAGE_NAMES",
                                         "META_VARS", "config", "tracer"],
    "traincheck.instrumentor.control": ["start_step", "start_eval_step", "META_VARS", "annotate_stage", "config"],
    "traincheck.instrumentor": [
        "META_VARS", "VarSampler", "Instrumentor", "get_all_subclasses", "get_meta_vars", "suppress_tracing",
        "application_tracing", "tracing_suppressed", "TraceLineType", "GENERATE_START_TOKEN_ID",
        "GENERATE_START_TOKEN_ID_INCLUDE_START_TOKEN", "COLLECT_OVERHEAD_METRICS", "config",
        "METRIC_INSTRUMENTED_FUNC_LIST", "IS_INSTRUMENTING", "THREAD_DATA", "get_process_thread_id",
        "is_c_level_function", "get_owner_class", "to_dict_args_kwargs", "to_dict_return_value",
        "function_wrapper", "core_wrapper_proxy", "wrapper", "log_instrumentation_progress",
        "modules_or_cls_id_instrumented", "mark_module_or_cls_as_visited", "is_module_or_cls_instrumented",
        "is_API_instrumented", "is_API_bound_method", "get_module_path_from_file_path", "convert_var_to_dict",
        "dump_trace_API", "dump_trace_VAR", "get_instrumentation_logger_for_process", "var_to_serializable",
        "is_proxied", "is_proxyparameter", "unproxy_args_kwargs", "get_global_registry", "funcs_to_be_replaced",
        "is_funcs_to_be_unproxied", "preserve_torchscript_builtin", "warn_unsupported_torchscript",
        "get_timestamp_ns", "get_unique_id", "typename", "INSTR_MODULES_TO_SKIP", "SKIP_INSTR_APIS",
        "WRAP_WITHOUT_DUMP", "WRAP_WITHOUT_DUMP_WHITELIST", "get_code_head_and_tail", "InsertTracerVisitor",
        "instrument_library", "instrument_model_once", "get_child_parent_map", "instrument_all_model_assignments",
        "instrument_model_tracker_proxy", "instrument_model_tracker_sampler", "annotate_stage", "instrument_file",
        "INSTR_MODULES_TO_INSTR",
    ],
}

# What a training script uses: offered with the original's meaning.
OFFERED = {
    "traincheck": {"get_all_subclasses", "annotate_stage", "annotate_answer_start_token_ids"},
    "traincheck.developer.annotations": set(ORIGINAL_EXPORTS["traincheck.developer.annotations"]),
    "traincheck.instrumentor.control": set(ORIGINAL_EXPORTS["traincheck.instrumentor.control"]),
    "traincheck.instrumentor": {
        "META_VARS", "get_all_subclasses", "get_meta_vars", "suppress_tracing", "application_tracing",
        "tracing_suppressed", "TraceLineType", "GENERATE_START_TOKEN_ID", "GENERATE_START_TOKEN_ID_INCLUDE_START_TOKEN",
        "COLLECT_OVERHEAD_METRICS", "config"},
}


@pytest.mark.parametrize("module", sorted(ORIGINAL_EXPORTS))
def test_every_public_name_of_the_original_imports_or_says_why_not(module):
    importlib.import_module(module)
    for name in ORIGINAL_EXPORTS[module]:
        if name in OFFERED[module]:
            exec(f"from {module} import {name}", {})
            continue
        with pytest.raises(ImportError) as e:
            exec(f"from {module} import {name}", {})
        assert f"{module}.{name} is " in str(e.value) and "does not offer" in str(e.value)


def test_not_offered_names_fail_with_the_message_not_a_bare_cannot_import():
    r = subprocess.run([sys.executable, "-c", "from traincheck import Instrumentor"], capture_output=True, text=True)
    assert r.returncode == 1
    assert "traincheck.Instrumentor is the original's instrumentation API" in r.stderr
    assert "cannot import name" not in r.stderr


def test_offered_names_keep_the_original_meaning():
    import traincheck
    from traincheck.instrumentor import tracer

    class A:
        pass

    class B(A):
        pass

    class C(B):
        pass

    assert traincheck.get_all_subclasses(A) == {B, C}
    traincheck.annotate_answer_start_token_ids(7)
    assert (tracer.GENERATE_START_TOKEN_ID, tracer.GENERATE_START_TOKEN_ID_INCLUDE_START_TOKEN) == (7, False)
    traincheck.annotate_answer_start_token_ids(9, include_start_token=True)
    from traincheck.instrumentor import GENERATE_START_TOKEN_ID
    assert GENERATE_START_TOKEN_ID == 9 and tracer.GENERATE_START_TOKEN_ID_INCLUDE_START_TOKEN is True
    tracer.GENERATE_START_TOKEN_ID = None
    assert not tracer.tracing_suppressed()
    with tracer.suppress_tracing():
        assert tracer.tracing_suppressed()
        with tracer.application_tracing():
            assert not tracer.tracing_suppressed()
        assert tracer.tracing_suppressed()
    assert not tracer.tracing_suppressed()
    assert tracer.TraceLineType.FUNC_CALL_PRE == "function_call (pre)"


SUPPRESS = """
import torch
from traincheck.instrumentor import suppress_tracing
x = torch.ones(3)
with suppress_tracing():
    torch.relu(x)            # not recorded
    torch.relu(x)
torch.relu(x)                # recorded
print("OK")
"""


def test_suppress_tracing_leaves_the_calls_inside_unrecorded(tmp_path):
    script = write_script(tmp_path, "suppress.py", SUPPRESS)
    r = collect(tmp_path, "-p", str(script), "--output-dir", "out")
    assert r.returncode == 0, r.stderr
    pre = [rec["function"] for rec in all_records(tmp_path / "out") if rec["type"] == "function_call (pre)"]
    assert pre.count("torch._VariableFunctionsClass.relu") == 1


ANSWER = """
import json
import torch
import traincheck
from transformers import GPT2Config, GPT2LMHeadModel

traincheck.annotate_answer_start_token_ids(3)   # the response follows the prompt's token 3 (found once)
torch.manual_seed(0)
config = GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=64, n_positions=32, bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(config).eval()
out = model.generate(torch.tensor([[1, 2, 3, 4]]), max_new_tokens=3, do_sample=False, pad_token_id=0)
print(json.dumps({"generated": out.tolist(), "attributes": sorted(vars(out))}))
"""


def test_answer_start_token_marks_generate_responses_in_the_trace(tmp_path):
    pytest.importorskip("transformers", reason="transformers is not installed: pip install 'traincheck[stacks]'")
    script = write_script(tmp_path, "answer.py", ANSWER)
    r = collect(tmp_path, "-p", str(script), "-t", "transformers", "--output-dir", "out")
    assert r.returncode == 0, r.stderr
    generated = json.loads(r.stdout.splitlines()[-1])["generated"][0]
    post = next(rec for rec in all_records(tmp_path / "out") if rec["type"] == "function_call (post)"
                and rec["function"] == "transformers.generation.utils.GenerationMixin.generate")
    tensor = post["return_values"]["torch.LongTensor"]
    assert generated.count(3) == 1
    assert tensor["_TRAINCHECK_RESPONSE_STARTING_INDICES"] == [3]
    assert tensor["_TRAINCHECK_RESPONSE_LENGTHS"] == [len(generated) - 3]
