"""TRAINCHECK_* settings: every one validated before the script starts, with one line
naming the variable and the accepted range; inside the traced process a bad value is said once and the
default used; the native binding refuses values that crashed it."""
import os
import subprocess
import sys

import pytest

from conftest import collect, write_script

BAD = [
    ("TRAINCHECK_CROSS_RANK_KEEP_STEPS", "-1", "an integer from 1 to 100000"),
    ("TRAINCHECK_CROSS_RANK_KEEP_STEPS", "0", "an integer from 1 to 100000"),
    ("TRAINCHECK_CROSS_RANK_PEERS", "two", "an integer from 0 to 1048576"),
    ("TRAINCHECK_WRITER_PERIOD_MS", "abc", "an integer from 1 to 3600000"),
    ("TRAINCHECK_WRITER_PERIOD_MS", "0", "an integer from 1 to 3600000"),
    ("TRAINCHECK_CROSS_RANK", "yes", "an integer from 0 to 1"),
    ("TRAINCHECK_ONLINE_REPORT_INTERVAL_S", "nan", "a number from 0 to 86400"),
]


@pytest.mark.parametrize("name,value,accepted", BAD)
def test_collect_refuses_a_bad_setting_in_one_line_before_the_script_runs(tmp_path, name, value, accepted):
    write_script(tmp_path, "train.py", "open('ran', 'w').write('yes')\n")
    result = collect(tmp_path, "-p", "train.py", "--output-dir", "out", env={name: value})
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"traincheck-collect: error: {name}={value!r}: expected {accepted} (")
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "ran").exists()


def test_good_settings_are_accepted(tmp_path):
    write_script(tmp_path, "train.py", "import torch\nprint(torch.ones(2).sum().item())\n")
    env = {"TRAINCHECK_CROSS_RANK_KEEP_STEPS": "3", "TRAINCHECK_CROSS_RANK_PEERS": "0", "TRAINCHECK_WRITER_PERIOD_MS": " 50 ",
           "TRAINCHECK_CROSS_RANK": "0", "TRAINCHECK_ONLINE_REPORT_INTERVAL_S": "0.5"}
    result = collect(tmp_path, "-p", "train.py", "--output-dir", "out", env=env)
    assert result.returncode == 0, result.stderr
    assert "2.0" in result.stdout and "error" not in result.stderr


def test_inside_the_traced_process_a_bad_value_is_said_once_and_the_default_used():
    code = ("from traincheck import settings\n"
            "print(settings.value('TRAINCHECK_WRITER_PERIOD_MS'), settings.value('TRAINCHECK_WRITER_PERIOD_MS'))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "TRAINCHECK_WRITER_PERIOD_MS": "abc"})
    assert result.returncode == 0 and result.stdout == "20 20\n"
    assert result.stderr == ("traincheck: error: TRAINCHECK_WRITER_PERIOD_MS='abc': expected an integer from 1 to 3600000 "
                             "(how often the writer thread writes the trace, in ms; bounds what a SIGKILL loses); "
                             "using the default 20\n")


@pytest.mark.parametrize("kwargs", [{"keep_steps": 0}, {"keep_steps": -1}, {"peers": -2}])
def test_the_binding_refuses_keep_steps_below_one_and_negative_peers(kwargs):
    from traincheck import _online

    with pytest.raises(ValueError):
        _online.enable_cross_rank(lambda: None, **kwargs)
