"""traincheck-collect's command line, config, launcher and output layout
(docs/formats.md §traincheck-collect, docs/collection.md §Launcher)."""
import textwrap

from conftest import SCRIPTS, all_records, collect, write_script


def test_exit_code_is_propagated_and_output_saved(tmp_path):
    write_script(tmp_path, "exits.py", "import torch, sys\nprint('hello', torch.ones(1).sum().item())\nsys.exit(7)\n")
    result = collect(tmp_path, "-p", "exits.py", "--output-dir", "out")
    assert result.returncode == 7
    assert "hello 1.0" in result.stdout
    saved = (tmp_path / "out" / "program_output.txt").read_text()
    assert "hello 1.0" in saved and saved.rstrip().endswith("Program exited with code 7")


def test_an_uncaught_exception_is_recorded_and_reraised_unchanged(tmp_path):
    write_script(
        tmp_path,
        "raises.py",
        textwrap.dedent(
            """
            import torch
            x = torch.ones(2, 3)
            try:
                torch.matmul(x, x)
            except RuntimeError as e:
                print("caught", type(e).__name__)
            torch.matmul(x, x)
            """
        ),
    )
    result = collect(tmp_path, "-p", "raises.py", "--output-dir", "out")
    assert result.returncode == 1
    assert "caught RuntimeError" in result.stdout
    assert "RuntimeError: mat1 and mat2 shapes cannot be multiplied" in result.stderr  # streams kept apart
    assert "RuntimeError" not in result.stdout.replace("caught RuntimeError", "")
    errors = [r for r in all_records(tmp_path / "out") if r["type"] == "function_call (post) (exception)"]
    matmul = [r for r in errors if r["function"] == "torch._VariableFunctionsClass.matmul"]
    assert len(matmul) == 2
    assert matmul[0]["exception"] == "RuntimeError" and "cannot be multiplied" in matmul[0]["exception_msg"]


def test_yaml_config_supplies_arguments_relative_to_its_directory(tmp_path):
    wl = tmp_path / "wl"
    wl.mkdir()
    (wl / "train.py").write_text((SCRIPTS / "mlp_adam.py").read_text())
    (wl / "md-config.yml").write_text("pyscript: train.py\nmodules_to_instr: [torch]\nsampling_interval: 2\n")
    result = collect(tmp_path, "--use-config", "--config", "wl/md-config.yml", "--output-dir", "out", script_args=["--iters", "3"])
    assert result.returncode == 0, result.stderr
    env = (tmp_path / "out" / "env_dump.txt").read_text()
    assert "sampling_interval: 2\n" in env and "warm_up_steps: 1\n" in env
    assert env.index("Arguments:") < env.index("Environment Variables:") < env.index("Library Versions:")


def test_unknown_config_key_is_an_error(tmp_path):
    (tmp_path / "c.yml").write_text("pyscript: x.py\nnot_an_option: 1\n")
    result = collect(tmp_path, "--use-config", "--config", "c.yml")
    assert result.returncode != 0 and "not_an_option" in result.stderr


def test_shell_launcher_runs_the_instrumented_script_with_its_arguments(tmp_path):
    (tmp_path / "train.py").write_text((SCRIPTS / "mlp_adam.py").read_text())
    (tmp_path / "run.sh").write_text('#!/bin/bash\npython train.py --iters 2 "$@"\n')
    result = collect(tmp_path, "-p", "train.py", "-s", "run.sh", "--output-dir", "out", script_args=["--width", "8"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("loss") == 2
    steps = {r["meta_vars"]["step"] for r in all_records(tmp_path / "out")}
    assert {0, 1, 2} <= steps
    assert (tmp_path / "out" / "_traincheck_run.sh").exists()


def test_script_runs_in_the_output_dir_and_copy_all_files_brings_its_data(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "data.txt").write_text("42\n")
    (src / "reads.py").write_text("import os, torch\nprint('cwd-ok', os.path.basename(os.getcwd()), open('data.txt').read().strip())\n")
    result = collect(tmp_path, "-p", "src/reads.py", "-a", "--output-dir", "out")
    assert result.returncode == 0, result.stdout
    assert "cwd-ok out 42" in result.stdout


def test_only_instr_writes_the_launcher_without_running(tmp_path):
    write_script(tmp_path, "t.py", "raise SystemExit(5)\n")
    result = collect(tmp_path, "-p", "t.py", "--only-instr", "--output-dir", "out")
    assert result.returncode == 0
    assert (tmp_path / "out" / "_traincheck_t.py").exists()
    assert not (tmp_path / "out" / "program_output.txt").exists()


def test_sampling_records_only_the_chosen_steps(tmp_path):
    result = collect(
        tmp_path, "-p", str(SCRIPTS / "mlp_adam.py"), "--output-dir", "out", "--sampling-interval", "3",
        "--warm-up-steps", "2", script_args=["--iters", "8"],
    )
    assert result.returncode == 0, result.stderr
    steps = {r["meta_vars"]["step"] for r in all_records(tmp_path / "out")}
    # Warm-up steps 1 and then every 3rd step after it: 2, 5, 8 (docs/collection.md §Meta-vars and sampling).
    assert steps == {0, 1, 2, 5, 8}


def test_script_calling_start_step_itself_is_not_annotated_twice(tmp_path):
    write_script(
        tmp_path,
        "manual.py",
        textwrap.dedent(
            """
            import torch, traincheck
            opt = torch.optim.SGD([torch.nn.Parameter(torch.ones(2))], lr=0.1)
            for i in range(3):
                traincheck.start_step()
                opt.step()
            """
        ),
    )
    result = collect(tmp_path, "-p", "manual.py", "--output-dir", "out")
    assert result.returncode == 0, result.stdout
    steps = [r["meta_vars"]["step"] for r in all_records(tmp_path / "out") if r["function"] == "torch.optim.sgd.SGD.step" and r["type"] == "function_call (pre)"]
    assert steps == [1, 2, 3]


def test_api_dump_stack_trace_adds_the_callers_frames_to_pre_records(tmp_path):
    write_script(tmp_path, "st.py", "import torch\ndef helper():\n    return torch.relu(torch.ones(2))\nhelper()\n")
    result = collect(tmp_path, "-p", "st.py", "--output-dir", "out", "--API-dump-stack-trace")
    assert result.returncode == 0, result.stdout
    relu = next(r for r in all_records(tmp_path / "out") if r["function"] == "torch._VariableFunctionsClass.relu")
    stack = relu["stack_trace"]
    assert stack[-1].endswith("line 3, in helper\n") and "st.py" in stack[-1]
    assert any(frame.endswith("line 4, in <module>\n") for frame in stack)


def test_use_full_instr_also_records_what_the_original_wraps_without_dump(tmp_path):
    write_script(tmp_path, "ad.py", "import torch\nx = torch.ones(2, requires_grad=True)\nx.sum().backward()\nprint(x.grad)\n")
    result = collect(tmp_path, "-p", "ad.py", "--output-dir", "out", "--use-full-instr")
    assert result.returncode == 0, result.stdout
    functions = {r["function"] for r in all_records(tmp_path / "out")}
    assert "torch.autograd.backward" in functions
    result = collect(tmp_path, "-p", "ad.py", "--output-dir", "out2")
    assert "torch.autograd.backward" not in {r["function"] for r in all_records(tmp_path / "out2")}
