"""Scripts written for the original TrainCheck: its import surface
(docs/collection.md §Step and stage annotations, §Meta-vars and sampling) and
its step numbering.

- `traincheck.instrumentor.tracer.DISABLE_WRAPPER` (older releases) and `traincheck.config.config.DISABLE_WRAPPER`
  (0.2.0): nothing is recorded while True; the next start_step/start_eval_step (sampling) or stage change
  (back on) overrides the script's value, as 0.2.0 overrides `config.DISABLE_WRAPPER`.
- `META_VARS` (0.2.0) / `meta_vars` (older) from `traincheck.instrumentor`: item assignment sets the step or
  a key that appears in every later record.
- Numbering: every loop the original classifies as training gets start_step(), nested or not, so an epoch
  loop takes a step of its own before its batches. The expected steps below follow from the scripts'
  structure (they were checked against the original 0.2.0 on the same scripts).
"""

import ast
import textwrap

import pytest
from conftest import SCRIPTS, all_records, collect, write_script

from traincheck.source_rewrite import annotate_source

PRE = "function_call (pre)"


def run(tmp_path, script, *extra, script_args=()):
    result = collect(tmp_path, "-p", str(script), "--output-dir", "out", *extra, script_args=script_args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result, sorted(all_records(tmp_path / "out"), key=lambda r: r["time"])


def pre_records(records, function_suffix):
    return [r for r in records if r["type"] == PRE and r["function"].endswith(function_suffix)]


def steps_of(records, function_suffix):
    return [r["meta_vars"]["step"] for r in pre_records(records, function_suffix)]


def nested_steps(epochs, batches):
    """Steps of the batches when an epoch loop and its batch loop both call start_step(): batch b of epoch e
    is step (e - 1) * (batches + 1) + 1 + b."""
    return [(e - 1) * (batches + 1) + 1 + b for e in range(1, epochs + 1) for b in range(1, batches + 1)]


# --- DISABLE_WRAPPER -------------------------------------------------------------------------------------


def test_figure7_resnet_style_script_records_nothing_while_the_wrapper_is_disabled(tmp_path):
    result, records = run(tmp_path, SCRIPTS / "fig7_resnet_style.py", script_args=["--epochs", "2", "--batches", "3"])
    assert "parameter mass" in result.stdout
    functions = {r["function"] for r in records}
    # Set-up (module level and main_worker) and the summary after training ran with the wrapper disabled;
    # all of these are recorded when it is not.
    for disabled in (
        "torch._VariableFunctionsClass.eye",
        "torch.random.manual_seed",
        "torch.nn.modules.linear.Linear.__init__",
        "torch.optim.sgd.SGD.__init__",
        "torch.optim.lr_scheduler.StepLR.__init__",
        "torch._VariableFunctionsClass.randint",
        "torch._VariableFunctionsClass.stack",
    ):
        assert disabled not in functions, disabled
    assert min(r["meta_vars"]["step"] for r in records) == 1
    assert not [r for r in records if r["meta_vars"].get("stage") == "init"]
    # The training loop is recorded, numbered as under the original.
    assert steps_of(records, "torch.optim.sgd.SGD.step") == nested_steps(2, 3)
    assert steps_of(records, "torch.optim.lr_scheduler.LRScheduler.step") == [4, 8]
    # Validation too: its stage change (model.eval()) turns recording back on, as in the original.
    assert {r["meta_vars"].get("eval_step") for r in records if r["meta_vars"].get("stage") == "testing"} >= {1, 2, 3, 4}


def test_figure7_transformer_style_script_records_from_its_init_stage_on(tmp_path):
    _, records = run(tmp_path, SCRIPTS / "fig7_transformer_style.py", script_args=["--epochs", "2"])
    # Disabled at import; the script's own annotate_stage("init") turns recording back on (a stage change).
    assert not pre_records(records, "torch._VariableFunctionsClass.arange")
    assert all(r["meta_vars"].get("stage") is not None for r in records)
    assert pre_records(records, "torch.nn.modules.sparse.Embedding.__init__")[0]["meta_vars"] == {"step": 0, "stage": "init"}
    # 15 rows, bptt 5: three batches per epoch, after the epoch loop's own step (it calls train()).
    assert steps_of(records, "torch.nn.modules.module.Module.zero_grad") == nested_steps(2, 3)


def test_a_scripts_disable_wrapper_holds_until_the_next_start_step(tmp_path):
    write_script(
        tmp_path,
        "toggle.py",
        textwrap.dedent(
            """
            import torch
            import traincheck.config.config as tc_config
            import traincheck.instrumentor.tracer as tc_tracer

            w = torch.nn.Parameter(torch.ones(3))
            opt = torch.optim.SGD([w], lr=0.1)
            for i in range(3):
                if i == 1:
                    tc_tracer.DISABLE_WRAPPER = False  # step 2 is sampled out: recorded all the same
                if i == 2:
                    tc_config.DISABLE_WRAPPER = True  # step 3 is sampled: not recorded
                opt.zero_grad()
                (w * w).sum().backward()
                opt.step()
                print("disabled", i, tc_tracer.DISABLE_WRAPPER, tc_config.DISABLE_WRAPPER)
            """
        ),
    )
    result, records = run(tmp_path, tmp_path / "toggle.py", "--sampling-interval", "2", "--warm-up-steps", "1")
    assert "disabled 1 False False" in result.stdout and "disabled 2 True True" in result.stdout
    assert steps_of(records, "torch.optim.sgd.SGD.step") == [1, 2]
    assert steps_of(records, "torch.optim.optimizer.Optimizer.zero_grad") == [1, 2]


def test_tracer_and_config_flags_are_one_flag_and_start_step_applies_the_policy():
    import traincheck.config.config as config
    import traincheck.instrumentor.tracer as tracer
    from traincheck import meta_vars
    from traincheck.instrumentor.control import start_eval_step, start_step

    import traincheck  # `traincheck.instrumentor.tracer.DISABLE_WRAPPER = True` after a plain import works too

    assert traincheck.instrumentor.tracer is tracer and traincheck.config.config is config
    saved = dict(meta_vars._meta), dict(meta_vars._policy), meta_vars.is_wrapper_disabled()
    try:
        config.INSTRUMENTATION_POLICY["interval"], config.INSTRUMENTATION_POLICY["warm_up"] = 2, 1
        tracer.DISABLE_WRAPPER = True
        assert config.DISABLE_WRAPPER is True and meta_vars.is_wrapper_disabled()
        meta_vars._meta["step"] = 0
        start_step()  # step 1 is sampled
        assert tracer.DISABLE_WRAPPER is False
        config.DISABLE_WRAPPER = True
        start_step()  # step 2 is not
        assert tracer.DISABLE_WRAPPER is True
        meta_vars._meta.pop("eval_step", None)
        start_eval_step()  # eval step 1 is sampled
        assert config.DISABLE_WRAPPER is False
    finally:
        meta_vars._meta.clear()
        meta_vars._meta.update(saved[0])
        meta_vars._policy.update(saved[1])
        meta_vars._set_recording(not saved[2])
    # ImportError, not AttributeError: `from ... import Instrumentor` turns an AttributeError into a bare
    # "cannot import name" and loses the message, and importing it must say why it is not offered.
    with pytest.raises(ImportError, match="traincheck-collect"):
        tracer.Instrumentor


# --- META_VARS / meta_vars -----------------------------------------------------------------------------


def test_meta_vars_assignment_sets_the_step_and_keys_of_later_records(tmp_path):
    write_script(
        tmp_path,
        "meta.py",
        textwrap.dedent(
            """
            import torch
            from traincheck.instrumentor import META_VARS

            META_VARS["step"] = -1
            META_VARS["_DATA_PARALLEL_RANK"] = 3
            model = torch.nn.Linear(4, 2)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            data = [torch.randn(3, 4) for _ in range(4)]
            for i, x in enumerate(data):
                META_VARS["step"] = 10 * i
                opt.zero_grad()
                model(x).sum().backward()
                opt.step()
            """
        ),
    )
    _, records = run(tmp_path, tmp_path / "meta.py")
    init = pre_records(records, "torch.nn.modules.linear.Linear.__init__")
    assert init and init[0]["meta_vars"] == {"step": -1, "stage": "init", "_DATA_PARALLEL_RANK": 3}
    # The rewrite still adds start_step() to the loop (as the original does); the script's value follows it.
    assert steps_of(records, "torch.optim.sgd.SGD.step") == [0, 10, 20, 30]
    after = records[records.index(init[0]):]
    assert all(r["meta_vars"].get("_DATA_PARALLEL_RANK") == 3 for r in after)


def test_older_meta_vars_spelling_sets_the_step_where_no_loop_is_annotated(tmp_path):
    write_script(
        tmp_path,
        "older.py",
        textwrap.dedent(
            """
            import torch
            from traincheck.instrumentor import meta_vars
            from traincheck.instrumentor.caches import META_VARS

            assert meta_vars is META_VARS
            model = torch.nn.Linear(4, 2)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)

            def training_step(step, x):  # called by a framework's loop, as a Trainer would
                meta_vars["step"] = step
                opt.zero_grad()
                model(x).sum().backward()
                opt.step()

            for s in (5, 6):
                training_step(s, torch.randn(3, 4))
            meta_vars["step"] += 1
            meta_vars["phase"] = "done"
            torch.relu(torch.ones(2))
            print(sorted(meta_vars.items()))
            """
        ),
    )
    result, records = run(tmp_path, tmp_path / "older.py")
    assert steps_of(records, "torch.optim.sgd.SGD.step") == [5, 6]
    relu = pre_records(records, "torch._VariableFunctionsClass.relu")[-1]
    assert relu["meta_vars"] == {"step": 7, "stage": "training", "phase": "done"}
    assert "[('phase', 'done'), ('stage', 'training'), ('step', 7)]" in result.stdout


# --- step numbering equal to the original's ----------------------------------------------------------

EPOCH_AND_SCHEDULER = """
import torch
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1)
data = [torch.randn(3, 4) for _ in range(3)]
for epoch in range(2):
    model.train()
    for x in data:
        opt.zero_grad()
        loss = model(x).sum()
        loss.backward()
        opt.step()
    sched.step()
"""

WHILE_LOOP = """
import torch
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1)
train_loader = [(torch.randn(3, 4), torch.randn(3, 2)) for _ in range(3)]
iteration = 0
while iteration < 5:
    model.train()
    for batch_idx, (x, y) in enumerate(train_loader):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        iteration += 1
        if iteration >= 5:
            break
    sched.step()
"""

VALIDATION_INSIDE_EPOCH = """
import torch
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = [(torch.randn(3, 4), torch.randn(3, 2)) for _ in range(3)]
val_loader = [(torch.randn(3, 4), torch.randn(3, 2)) for _ in range(2)]
for epoch in range(2):
    model.train()
    for x, y in train_loader:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        for x, y in val_loader:
            out = model(x)
            torch.nn.functional.mse_loss(out, y)
"""

TRAIN_ONE_EPOCH = """
import torch
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.randn(3, 4), torch.randn(3, 2)) for _ in range(3)]


def train_one_epoch(model, data, opt):
    model.train()
    for x, y in data:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()


def evaluate(model, data):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for x, y in data:
            out = model(x)
            total += torch.nn.functional.mse_loss(out, y).item()
    return total


for epoch in range(2):
    train_one_epoch(model, data, opt)
    evaluate(model, data)
"""


def _loop_annotations(source: str) -> list[str | None]:
    """For each for/while loop, in source order: which step call the rewrite put first in its body."""
    tree = annotate_source(textwrap.dedent(source), "script.py")
    loops = sorted((n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While))), key=lambda n: n.lineno)
    found = []
    for loop in loops:
        first = loop.body[0]
        call = first.value if isinstance(first, ast.Expr) and isinstance(first.value, ast.Call) else None
        name = call.func.attr if call is not None and isinstance(call.func, ast.Attribute) else None
        found.append(name if name in ("start_step", "start_eval_step") else None)
    return found


@pytest.mark.parametrize(
    "source, expected",
    [
        (EPOCH_AND_SCHEDULER, ["start_step", "start_step"]),
        (WHILE_LOOP, ["start_step", "start_step"]),
        (VALIDATION_INSIDE_EPOCH, ["start_step", "start_step", "start_eval_step"]),
        # The epoch loop calls train_one_epoch(): a training signal. The short loop of evaluate() has none.
        (TRAIN_ONE_EPOCH, ["start_step", None, "start_step"]),
        # Epoch loop, train()'s batch loop, run_validate()'s loop (eval: at least 3 statements).
        ((SCRIPTS / "fig7_resnet_style.py").read_text(), ["start_step", "start_step", "start_eval_step"]),
        # evaluate()'s loop, train()'s batch loop and its one-line parameter loop (no signal), the epoch loop.
        ((SCRIPTS / "fig7_transformer_style.py").read_text(), ["start_eval_step", "start_step", None, "start_step"]),
    ],
    ids=["epoch-scheduler", "while", "validation-inside-epoch", "train-one-epoch", "fig7-resnet", "fig7-transformer"],
)
def test_the_rewrite_annotates_the_loops_the_original_annotates(source, expected):
    assert _loop_annotations(source) == expected


@pytest.mark.parametrize(
    "source, sgd_steps, other",
    [
        # The scheduler steps once when constructed (step 0), then at the end of each epoch.
        (EPOCH_AND_SCHEDULER, nested_steps(2, 3), ("torch.optim.lr_scheduler.LRScheduler.step", [0, 4, 8])),
        # The second epoch stops after two batches (iteration reaches 5).
        (WHILE_LOOP, nested_steps(2, 3)[:5], ("torch.optim.lr_scheduler.LRScheduler.step", [0, 4, 7])),
        (VALIDATION_INSIDE_EPOCH, nested_steps(2, 3), ("torch.nn.modules.module.Module.eval", [4, 8])),
        (TRAIN_ONE_EPOCH, nested_steps(2, 3), ("torch.nn.modules.module.Module.eval", [4, 8])),
    ],
    ids=["epoch-scheduler", "while", "validation-inside-epoch", "train-one-epoch"],
)
def test_steps_are_numbered_as_by_the_original(tmp_path, source, sgd_steps, other):
    write_script(tmp_path, "train.py", textwrap.dedent(source))
    _, records = run(tmp_path, tmp_path / "train.py")
    assert steps_of(records, "torch.optim.sgd.SGD.step") == sgd_steps
    function, steps = other
    assert steps_of(records, function) == steps
    # Each epoch's own step holds what runs before its first batch (model.train() here).
    first_train = pre_records(records, "torch.nn.modules.module.Module.train")[0]
    assert first_train["meta_vars"]["step"] == 1


def test_validation_inside_the_epoch_counts_eval_steps_across_epochs(tmp_path):
    write_script(tmp_path, "train.py", textwrap.dedent(VALIDATION_INSIDE_EPOCH))
    _, records = run(tmp_path, tmp_path / "train.py")
    forward = [r["meta_vars"] for r in pre_records(records, "torch.nn.modules.linear.Linear.forward")]
    evals = [(m["step"], m["eval_step"]) for m in forward if m["stage"] == "testing"]
    assert evals == [(4, 1), (4, 2), (8, 3), (8, 4)]
