"""Paths are data, never code: a script or output folder name that holds Python or shell
syntax runs nothing, and names with spaces work."""
from conftest import collect

SCRIPT = "import sys\nprint('script ran', sys.argv[1:])\n"


def test_a_script_name_with_a_newline_and_python_code_runs_nothing(tmp_path):
    name = 'a\nopen("PWNED","w").write("x")\n#.py'
    (tmp_path / name).write_text(SCRIPT)
    result = collect(tmp_path, "-p", name, "--output-dir", "out", script_args=["x"])
    assert result.returncode == 0, result.stderr
    assert "script ran ['x']" in result.stdout
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "out" / "PWNED").exists()


def test_an_output_folder_with_shell_syntax_or_a_space_stays_one_word_in_the_shell_launcher(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "run.sh").write_text('#!/bin/bash\npython train.py "$@"\npython "train.py" second\n')
    for out in ("o$(touch PWNED2)", "out dir"):
        result = collect(tmp_path, "-p", "train.py", "-s", "run.sh", "--output-dir", out, script_args=["y"])
        assert result.returncode == 0, result.stdout + result.stderr
        assert "script ran ['y']" in result.stdout and "script ran ['second']" in result.stdout
    assert not list(tmp_path.rglob("PWNED2"))


def test_a_missing_shell_launcher_is_a_clear_error(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    result = collect(tmp_path, "-p", "train.py", "-s", "missing.sh", "--output-dir", "out")
    assert result.returncode != 0
    assert "missing.sh" in result.stderr and "Traceback" not in result.stderr
