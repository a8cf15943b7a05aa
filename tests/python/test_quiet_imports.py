"""Nothing is recorded while a library module imported after collection starts runs its top-level code;
a module of the user's own runs recorded (docs/collection.md §Determinism): which training call first
imports a lazily loaded module must not change the trace."""
from conftest import collect, read_trace_files, write_script

LIBRARY = {
    "mylib/__init__.py": "",
    "mylib/core.py": "def register(name):\n    return name.upper()\n",
    # Set-up at import time, as torch's lazily imported submodules do (register_fake, is_available, ...).
    "mylib/lazy.py": "from mylib import core\n\nNAME = core.register('lazy')\n",
}
# The user's own module, beside the script: its top-level call is the program's.
USER_MODULE = "from mylib import core\n\nNAME = core.register('user')\n"

SCRIPT = """
import os
import mylib.core
if os.environ.get("IMPORT_FIRST") == "1":
    import mylib.lazy      # before training
for step in range(3):
    if step == 1:
        import mylib.lazy  # inside training, at the first use (a no-op when imported already)
        import helper
    mylib.core.register(f"step{step}")
print("RESULT", mylib.lazy.NAME, helper.NAME)
"""


def _register_calls(out) -> list[str]:
    return [str(r.get("args")) for recs in read_trace_files(out, "API").values() for r in recs
            if r["function"] == "mylib.core.register" and r["type"] == "function_call (pre)"]


def _run(tmp_path, out, **env):
    for name, text in LIBRARY.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "helper.py").write_text(USER_MODULE)
    script = write_script(tmp_path, "train.py", SCRIPT)
    r = collect(tmp_path, "-p", str(script), "-t", "mylib", "--output-dir", out, env=env)
    assert r.returncode == 0, r.stderr
    assert "RESULT LAZY USER" in r.stdout
    return _register_calls(tmp_path / out)


def test_a_library_module_imported_during_training_records_none_of_its_top_level_calls(tmp_path):
    calls = _run(tmp_path, "late")
    # Three training calls and the user's module's call; the library's import-time call is not there.
    assert len(calls) == 4, calls
    assert not any("lazy" in str(c) for c in calls), calls
    assert sum("user" in str(c) for c in calls) == 1, calls


def test_the_trace_is_the_same_whether_a_library_module_is_imported_before_or_during_training(tmp_path):
    assert _run(tmp_path, "late") == _run(tmp_path, "early", IMPORT_FIRST="1")
