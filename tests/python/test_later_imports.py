"""Modules of an instrumented package imported after collection starts are instrumented when imported, in
full and selective mode (docs/collection.md §Modules imported later): a package of the script's own, a
torch submodule torch does not import at start, and transformers' lazily loaded modeling and generation
modules (a tiny GPT-2 from its config, no download), with torch.compile untouched."""
import json
import subprocess
import sys

import pytest

from conftest import SCRIPTS, all_records, collect, write_script
from traincheck.instrument.selective import summary_line

LATE_PACKAGE = {
    "mylib/__init__.py": "",
    "mylib/late.py": "def inner(x):\n    return x * 2\n\n\ndef outer(x):\n    return inner(x) + 1\n",
}

LATE_SCRIPT = """
import torch
import torch.nn.utils.prune as prune  # not loaded by `import torch`
import mylib.late                     # imported after collection started

lin = torch.nn.Linear(4, 4)
prune.l1_unstructured(lin, "weight", amount=0.5)
print("RESULT", mylib.late.outer(3), int((lin.weight == 0).sum()))
"""


def _contains(parent: str, child: str) -> dict:
    return {
        "text_description": f"{parent} contains {child}", "relation": "APIContainRelation",
        "params": [{"param_type": "APIParam", "api_full_name": parent},
                   {"param_type": "APIParam", "api_full_name": child}],
        "precondition": {"parent_func_call_pre": {"inverted": False, "preconditions": [{"clauses": "Unconditional"}]}},
        "num_positive_examples": 3, "num_negative_examples": 0,
    }


def _pre_functions(out) -> list[str]:
    return [r["function"] for r in all_records(out) if r["type"] == "function_call (pre)"]


def _late_package(tmp_path):
    for name, text in LATE_PACKAGE.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    return write_script(tmp_path, "late.py", LATE_SCRIPT)


def _result_line(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith("RESULT"))


def test_full_mode_wraps_a_package_submodule_and_a_torch_submodule_imported_after_the_start(tmp_path):
    script = _late_package(tmp_path)
    r = collect(tmp_path, "-p", str(script), "-t", "torch", "mylib", "--output-dir", "out")
    assert r.returncode == 0, r.stderr
    assert _result_line(r.stdout) == "RESULT 7 8"
    functions = _pre_functions(tmp_path / "out")
    assert functions.count("mylib.late.outer") == 1 and functions.count("mylib.late.inner") == 1
    assert "torch.nn.utils.prune.l1_unstructured" in functions
    summary = json.loads(next((tmp_path / "out").glob("instrumentation_summary_*.json")).read_text())
    assert summary["modules_instrumented_on_import"] >= 2  # mylib.late, torch.nn.utils.prune
    # Their signatures are published as they are wrapped, as those of the APIs wrapped at the start.
    signatures = json.loads((tmp_path / "out" / "api_signatures.json").read_text())
    assert [p["name"] for p in signatures["mylib.late.outer"]["params"]] == ["x"]
    assert "torch.nn.utils.prune.l1_unstructured" in signatures


def test_selective_mode_wraps_named_functions_of_a_module_not_loaded_at_the_start(tmp_path):
    script = _late_package(tmp_path)
    (tmp_path / "inv.json").write_text(json.dumps(_contains("mylib.late.outer", "mylib.late.inner")) + "\n")
    r = collect(tmp_path, "-p", str(script), "-i", "inv.json", "--output-dir", "sel")
    assert r.returncode == 0, r.stderr
    assert _result_line(r.stdout) == "RESULT 7 8"
    assert "API not found" not in r.stderr  # the module was not imported yet: not missing
    assert "2 more wrapped when their module is imported" in r.stderr
    functions = _pre_functions(tmp_path / "sel")
    assert sorted(set(functions)) == ["mylib.late.inner", "mylib.late.outer"]
    summary = json.loads(next((tmp_path / "sel").glob("instrumentation_summary_*.json")).read_text())
    assert (summary["apis_resolved"], summary["invariants_resolved"]) == (2, 1)  # rewritten at exit
    # The start's resolution stays in it, so the launcher's line is the same whenever it reads the file
    # (it once read only the exit version and printed no "waiting" count).
    assert summary["at_start"]["apis_not_imported_yet"] == ["mylib.late.inner", "mylib.late.outer"]
    assert "2 more wrapped when their module is imported" in summary_line(summary)
    assert not (tmp_path / "sel" / "online_check" / "failed.log").read_text().strip()


@pytest.fixture
def transformers_installed():
    pytest.importorskip("transformers", reason="transformers is not installed: pip install 'traincheck[stacks]'")


GENERATE = "transformers.generation.utils.GenerationMixin.generate"
ATTENTION = "transformers.models.gpt2.modeling_gpt2.GPT2Attention.forward"
SDPA = "transformers.integrations.sdpa_attention.sdpa_attention_forward"
HF_SCRIPT = SCRIPTS / "hf_generate_lazy.py"


def _plain(tmp_path, *args) -> str:
    r = subprocess.run([sys.executable, str(HF_SCRIPT), *args], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_transformers_generate_and_attention_recorded_full_and_selective(tmp_path, transformers_installed):
    plain = _plain(tmp_path)
    r = collect(tmp_path, "-p", str(HF_SCRIPT), "-t", "transformers", "--output-dir", "full")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == plain.splitlines()[-1]  # the generated tokens
    functions = _pre_functions(tmp_path / "full")
    assert functions.count(GENERATE) == 1
    assert functions.count(ATTENTION) == 3 and functions.count(SDPA) == 3  # the prompt, then 2 new tokens

    (tmp_path / "inv.json").write_text(json.dumps(_contains(GENERATE, ATTENTION)) + "\n")
    r = collect(tmp_path, "-p", str(HF_SCRIPT), "-i", "inv.json", "--output-dir", "sel")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == plain.splitlines()[-1]
    functions = _pre_functions(tmp_path / "sel")
    assert sorted(set(functions)) == [GENERATE, ATTENTION]
    assert not (tmp_path / "sel" / "online_check" / "failed.log").read_text().strip()


def test_modules_torch_compile_imports_are_not_instrumented(tmp_path, transformers_installed):
    # The first compile imports torch._inductor, torch._dynamo and other compiler modules after the start;
    # they stay unwrapped and the compiled model gives what it gives without the tool. (Only torch is
    # instrumented: a compiled model whose own library is instrumented, -t transformers, stops in dynamo's
    # guards, docs/differences.md.)
    plain = _plain(tmp_path, "--compile")
    r = collect(tmp_path, "-p", str(HF_SCRIPT), "--output-dir", "out", script_args=("--compile",))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-2:] == plain.splitlines()[-2:]  # compiled logits, generated tokens
    assert not any(f.startswith(("torch._inductor", "torch._dynamo")) for f in _pre_functions(tmp_path / "out"))


ARG_PACKAGE = {
    "arglib/__init__.py": "",
    "arglib/late.py": "def scale(x, factor):\n    return x * factor\n\n\ndef outer(x, factor):\n    return scale(x, factor) + 1\n",
}
ARG_SCRIPT = "import sys\nimport arglib.late\n\nprint('RESULT', arglib.late.outer(3, int(sys.argv[1])))\n"


def _violations(folder) -> list:
    text = folder.read_text() if folder.exists() else ""
    return [line for line in text.splitlines() if line.strip()]


def test_in_process_check_names_arguments_of_apis_wrapped_later_as_the_offline_check_does(tmp_path):
    """The in-process checker gets the signatures of APIs wrapped when their module is imported (their
    positional arguments named, as offline): it once checked them with arguments named by index, so an
    invariant on `factor` flagged every call in-process and none offline."""
    for name, text in ARG_PACKAGE.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    script = write_script(tmp_path, "args.py", ARG_SCRIPT)
    invariant = _contains("arglib.late.outer", "arglib.late.scale")
    invariant["params"][1]["arguments"] = {"args": {"factor": {"int": 2}}, "func_name": "arglib.late.scale"}
    (tmp_path / "inv.json").write_text(json.dumps(invariant) + "\n")
    verdicts = {}
    for factor in ("2", "3"):  # the invariant's value, then another
        out = f"run{factor}"
        r = collect(tmp_path, "-p", str(script), "-t", "arglib", "-i", "inv.json", "--output-dir", out,
                    script_args=[factor])
        assert r.returncode == 0, r.stderr
        in_process = _violations(tmp_path / out / "online_check" / "failed.log")
        c = subprocess.run(["traincheck-check", "-f", out, "-i", "inv.json", "-o", f"offline{factor}"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
        assert c.returncode == 0, c.stderr
        offline = json.loads((tmp_path / f"offline{factor}" / out / "violations_summary.json").read_text())["violations"]
        verdicts[factor] = (len(in_process) > 0, len(offline) > 0)
    assert verdicts == {"2": (False, False), "3": (True, True)}


def test_an_import_executing_many_hooked_modules_hands_over_what_they_wrapped_once(tmp_path, monkeypatch):
    """Publishing signatures rewrites a file: once per outermost import, not once per module it executes
    (importing torch._dynamo executes ~150 torch modules; per module, a tiny script's collect took 20 s)."""
    from traincheck import _core, post_import
    from traincheck.instrument.installer import CallOptions
    from traincheck.instrument.later_imports import LaterImports

    (tmp_path / "burst").mkdir()
    (tmp_path / "burst" / "__init__.py").write_text("from burst import first, second\n")
    (tmp_path / "burst" / "first.py").write_text("from burst import second\n\ndef f(x):\n    return x\n")
    (tmp_path / "burst" / "second.py").write_text("def g(y=1):\n    return y\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    later = LaterImports(["burst"], True, _core.is_wrapper, False, lambda name: CallOptions(), _empty_report())
    batches = []
    later.on_installed = lambda installed: batches.append(sorted(installed.wrappers))
    post_import.add_hook(later.hook)
    post_import.after_outermost_import(later.flush_installed)
    try:
        import burst  # noqa: F401

        import burst.second  # already imported: nothing executes, nothing is handed over
    finally:
        post_import.remove_hook(later.hook)
        post_import.remove_after_outermost_import(later.flush_installed)
        for name in ("burst", "burst.first", "burst.second"):
            sys.modules.pop(name, None)
    assert batches == [["burst.first.f", "burst.second.g"]]
    assert sorted(later.modules_walked) == ["burst", "burst.first", "burst.second"]


def _empty_report():
    from traincheck.instrument.installer import InstallReport

    return InstallReport()
