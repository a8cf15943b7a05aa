"""The culprit rate of the detection evaluation (eval/detection/culprits.py): does a caught
bug's first alarm name what is at fault, as each case's `culprits:` lists it."""
from eval.detection.cases import discover
from eval.detection.culprits import culprit_rates, names_culprit


def test_a_label_names_a_culprit_by_a_fragment_of_a_word_or_a_pattern():
    label = "torch.nn.Parameter.grad is consistent across variable instances"
    assert names_culprit(label, ["*.grad"])
    assert names_culprit(label, ["zero_grad", "Parameter.grad"])
    assert not names_culprit(label, ["zero_grad"])
    assert not names_culprit(label, ["*.data"])
    # A pattern matches a whole word: `*.grad` is not `.grad_fn`.
    assert not names_culprit("torch.relu returns tensors whose grad_fn is null", ["*.grad"])
    assert names_culprit("Dropout.forward contains dropout({\"training\": true})", ["dropout"])


def test_every_case_says_what_is_at_fault():
    cases = discover()
    assert cases
    assert [c.name for c in cases if not c.culprits] == []


def test_the_rate_counts_caught_cases_of_one_repetition_by_setting_tool_and_check():
    row = dict(rep="1", status="ok", detected="True", setting="same", tool="ours", mode="offline")
    rows = [
        {**row, "case": "a", "caught_by": "torch.optim.optimizer.Optimizer.zero_grad is called before step"},
        {**row, "case": "b", "caught_by": "torch.compiler.is_exporting is called before every call of SGD.step"},
        {**row, "case": "c", "caught_by": "Optimizer.zero_grad", "detected": "False"},  # not caught
        {**row, "case": "a", "caught_by": "Optimizer.zero_grad", "rep": "2"},            # another repetition
        {**row, "case": "d", "caught_by": "Optimizer.zero_grad"},                        # lists no culprit
        {**row, "case": "a", "caught_by": "Optimizer.zero_grad", "mode": "in-process"},
    ]
    culprits = {"a": ("zero_grad",), "b": ("zero_grad",), "c": ("zero_grad",)}
    assert culprit_rates(rows, culprits) == {("same", "ours", "in-process"): (1, 1), ("same", "ours", "offline"): (1, 2)}
