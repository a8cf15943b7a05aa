"""Steps are found where the training loop is not at the script's top level: in a Trainer class of the
script (the source rewrite follows calls to the script's training functions by name), and in a module the
rewrite never sees (optimizer steps number the steps: traincheck/optimizer_steps.py)."""

import ast
import textwrap

from conftest import all_records, collect, write_script

from traincheck.source_rewrite import annotate_source, training_functions

PRE = "function_call (pre)"

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, data, opt):
        self.model, self.train_data, self.opt = model, data, opt

    def _run_batch(self, x, y):
        self.opt.zero_grad()
        torch.nn.functional.mse_loss(self.model(x), y).backward()
        self.opt.step()

    def _run_epoch(self, epoch):
        for x, y in self.train_data:
            self._run_batch(x, y)

    def fit(self, epochs):
        for epoch in range(epochs):
            self._run_epoch(epoch)
"""

SCRIPT_WITH_TRAINER = TRAINER + """

model = torch.nn.Linear(4, 2)
data = [(torch.randn(3, 4), torch.randn(3, 2)) for _ in range(3)]
Trainer(model, data, torch.optim.SGD(model.parameters(), lr=0.1)).fit(2)
"""

SCRIPT_IMPORTING_TRAINER = """
import torch
from trainer_lib import Trainer

model = torch.nn.Linear(4, 2)
data = [(torch.randn(3, 4), torch.randn(3, 2)) for _ in range(3)]
Trainer(model, data, torch.optim.SGD(model.parameters(), lr=0.1)).fit(2)
"""


def _records(tmp_path, script: str):
    result = collect(tmp_path, "-p", str(tmp_path / script), "--output-dir", "out")
    assert result.returncode == 0, result.stdout + result.stderr
    return sorted(all_records(tmp_path / "out"), key=lambda r: r["time"])


def _steps(records, suffix):
    return [r["meta_vars"]["step"] for r in records if r["type"] == PRE and r["function"].endswith(suffix)]


def test_the_training_functions_are_those_that_step_or_call_one_that_does():
    assert training_functions(ast.parse(TRAINER)) == {"_run_batch", "_run_epoch", "fit"}


def test_the_loops_of_a_trainer_class_calling_its_training_methods_get_steps():
    tree = annotate_source(textwrap.dedent(SCRIPT_WITH_TRAINER), "train.py")
    annotated = []
    for loop in sorted((n for n in ast.walk(tree) if isinstance(n, ast.For)), key=lambda n: n.lineno):
        first = loop.body[0]
        annotated.append(isinstance(first, ast.Expr) and isinstance(first.value, ast.Call)
                         and getattr(first.value.func, "attr", None) == "start_step")
    assert annotated == [True, True]  # the batch loop of _run_epoch, the epoch loop of fit


def test_a_trainer_class_in_the_script_numbers_steps_as_an_inline_loop_would(tmp_path):
    write_script(tmp_path, "train.py", SCRIPT_WITH_TRAINER)
    records = _records(tmp_path, "train.py")
    # Epoch loop and batch loop both start steps: batch b of epoch e is step (e - 1) * 4 + 1 + b.
    assert _steps(records, "torch.optim.sgd.SGD.step") == [2, 3, 4, 6, 7, 8]


def test_a_trainer_in_a_module_the_rewrite_never_sees_gets_steps_from_its_optimizer(tmp_path):
    write_script(tmp_path, "trainer_lib.py", TRAINER)
    write_script(tmp_path, "train.py", SCRIPT_IMPORTING_TRAINER)
    records = _records(tmp_path, "train.py")
    # A step runs from one optimizer step to the next: the k-th optimizer step is at step k - 1.
    assert _steps(records, "torch.optim.sgd.SGD.step") == [0, 1, 2, 3, 4, 5]
    assert _steps(records, "torch.nn.modules.linear.Linear.forward") == [0, 1, 2, 3, 4, 5]
    stages = {r["meta_vars"].get("stage") for r in records if r["meta_vars"]["step"] > 0}
    assert stages == {"training"}


def test_steps_the_program_sets_itself_are_left_alone(tmp_path):
    write_script(tmp_path, "trainer_lib.py", TRAINER.replace(
        "            self._run_batch(x, y)",
        "            META_VARS['step'] = 10 * (epoch + 1)\n            self._run_batch(x, y)").replace(
        "import torch", "import torch\nfrom traincheck.instrumentor import META_VARS"))
    write_script(tmp_path, "train.py", SCRIPT_IMPORTING_TRAINER)
    records = _records(tmp_path, "train.py")
    assert _steps(records, "torch.optim.sgd.SGD.step") == [10, 10, 10, 20, 20, 20]
