"""A Ctrl-C or sys.exit that Python raises inside the tool's own hook still stops the script: the tool's
clearing of its own errors never swallows them (cpp/record/python/clear_error.h)."""
import subprocess
import sys
import textwrap

HOOK_RAISES = """
import sys, threading
from traincheck import _core
_core.start(sys.argv[1])
raised = []
def hook(api, phase):
    if phase == "pre" and not raised:
        raised.append(api)
        raise {exception}  # as Python raises it when the signal arrives while the hook runs
def f(x):
    return x + 1
w = _core.wrap(f, "demo.f", binds=False, track_vars=True)
_core.set_var_hook(hook)
{body}
"""

CALL_IN_MAIN = """
result = None
try:
    result = w(1)
    for _ in range(1000):
        pass
    print("not stopped", result, flush=True)
except KeyboardInterrupt:
    print("stopped after", result, flush=True)
"""

CALL_IN_THREAD = """
out = []
t = threading.Thread(target=lambda: out.append(w(1)))
t.start(); t.join()
for _ in range(1000):
    pass
print("main thread ran on", out, flush=True)
"""


def _run(tmp_path, exception, body):
    script = tmp_path / "hook.py"
    script.write_text(textwrap.dedent(HOOK_RAISES.format(exception=exception, body=body)))
    return subprocess.run([sys.executable, str(script), str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=120)


def test_a_keyboard_interrupt_raised_in_the_hook_reaches_the_script(tmp_path):
    # Raised again at the script's next bytecode: inside the wrapped function or just after it, as a Ctrl-C
    # arriving at that moment would be without the tool.
    result = _run(tmp_path, "KeyboardInterrupt", CALL_IN_MAIN)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("stopped after"), result.stdout


def test_a_system_exit_raised_in_the_hook_ends_the_script_with_its_code(tmp_path):
    result = _run(tmp_path, "SystemExit(7)", CALL_IN_MAIN)
    assert result.returncode == 7, result.stderr
    assert "not stopped" not in result.stdout


def test_an_error_of_the_hook_is_cleared_and_the_script_goes_on(tmp_path):
    result = _run(tmp_path, "ValueError('hook failed')", CALL_IN_MAIN)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "not stopped 2"


def test_a_stop_request_raised_in_another_thread_does_not_stop_the_main_thread(tmp_path):
    result = _run(tmp_path, "KeyboardInterrupt", CALL_IN_THREAD)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "main thread ran on [2]"
