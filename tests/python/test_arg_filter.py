"""Selective mode records only the arguments its invariants constrain (instrument/arg_filter.py)."""
import json
import subprocess
import sys
import textwrap

from conftest import SCRIPTS, all_records, collect
from test_selective import write_invariants
from traincheck.instrument.arg_filter import argument_filter


def sample(a, b, c=3, *rest, key=None, **extra):
    return a


class Owner:
    def method(self, x, y=1):
        return x

    @classmethod
    def build(cls, size, name="n"):
        return size


def test_names_map_to_their_positions_and_stay_keyword_matches():
    positions, keywords = argument_filter(sample, ["b", "key"])
    assert positions == 0b10 and keywords == ("b", "key")


def test_indices_select_positions_without_a_signature():
    # C builtins have no signature: index names still work, since they need none.
    assert argument_filter(max, ["0", "2"]) == (0b101, ())


def test_a_name_without_a_known_position_records_every_argument():
    assert argument_filter(max, ["key"]) is None  # no signature: cannot tell where it is passed
    assert argument_filter(sample, ["rest"]) is None  # *args: positions are not named
    assert argument_filter(sample, ["99"]) is None  # beyond the wrapper's mask


def test_methods_count_self_and_classmethods_do_not_count_cls():
    assert argument_filter(Owner.method, ["x"]) == (0b10, ("x",))
    assert argument_filter(Owner.__dict__["build"].__func__, ["size"], drop_first=True) == (0b1, ("size",))


def test_keyword_only_and_extra_names_match_by_keyword_only():
    assert argument_filter(sample, ["key", "whatever"]) == (0, ("key", "whatever"))


WRAPPED_CALLS = """
import json, os, sys
from traincheck import _core
out = sys.argv[1]
_core.start(out)
def f(a, b, c=0, *, key=None):
    return a
w = _core.wrap(f, "demo.f", binds=False, dump_args=True, arg_positions=0b100, arg_keywords=("key", "c"))
every = _core.wrap(f, "demo.every", binds=False, dump_args=True)
w(1, 2, 3, key="k")
w(1, 2, c=5)
every(1, 2, key="k")
_core.shutdown()
"""


def test_the_wrapper_records_selected_arguments_with_their_indices(tmp_path):
    script = tmp_path / "calls.py"
    script.write_text(textwrap.dedent(WRAPPED_CALLS))
    subprocess.run([sys.executable, str(script), str(tmp_path / "out")], check=True, timeout=120)
    pres = [r for r in all_records(tmp_path / "out") if r["type"] == "function_call (pre)"]
    by_call = [(r["function"], r["args"], r["kwargs"]) for r in sorted(pres, key=lambda r: r["time"])]
    assert by_call == [
        ("demo.f", {"2": {"int": 3}}, {"key": {"str": "k"}}),
        ("demo.f", {}, {"c": {"int": 5}}),
        ("demo.every", {"0": {"int": 1}, "1": {"int": 2}}, {"key": {"str": "k"}}),
    ]


ADAM_ARGUMENT_INVARIANT = {
    "text_description": "Adam.step calls _single_tensor_adam with lr 0.01",
    "relation": "APIContainRelation",
    "params": [
        {"param_type": "APIParam", "api_full_name": "torch.optim.adam.Adam.step"},
        {"param_type": "APIParam", "api_full_name": "torch.optim.adam._single_tensor_adam",
         "arguments": {"args": {"lr": {"float": 0.01}, "exp_avgs": {"list": []}},
                       "func_name": "torch.optim.adam._single_tensor_adam"}},
    ],
    "precondition": {"parent_func_call_pre": {"inverted": False, "preconditions": [{"clauses": "Unconditional"}]}},
    "num_positive_examples": 5,
    "num_negative_examples": 0,
}


def test_selective_collect_records_only_constrained_arguments_of_a_real_optimizer(tmp_path):
    write_invariants(tmp_path / "inv.json", [ADAM_ARGUMENT_INVARIANT])
    result = collect(
        tmp_path, "-p", str(SCRIPTS / "mlp_adam.py"), "-i", "inv.json", "--output-dir", "out",
        "--sampling-interval", "1", "--warm-up-steps", "1", script_args=["--iters", "2"],
    )
    assert result.returncode == 0, result.stderr
    opts = json.loads((tmp_path / "out" / "instr_opts.json").read_text())
    assert set(opts["funcs_instr_opts"]["torch.optim.adam._single_tensor_adam"]["dump_args_config"]) == {"lr", "exp_avgs"}
    pres = [r for r in all_records(tmp_path / "out")
            if r["function"] == "torch.optim.adam._single_tensor_adam" and r["type"] == "function_call (pre)"]
    assert len(pres) == 2
    for r in pres:
        # exp_avgs is the third positional parameter: recorded at its index; lr is keyword-only.
        assert set(r["args"]) == {"2"} and set(r["kwargs"]) == {"lr"}
        assert r["kwargs"]["lr"] == {"float": 0.01}
