"""traincheck._torch_fields: tensor fields read straight from TensorImpl (cpp/record/python/tensor_fields.h),
against what torch's getters give, and its loader (traincheck.tracking.torch_fields)."""

import subprocess
import sys
import warnings

import pytest
import torch

from traincheck import _core
from traincheck.tracking import torch_fields

# Built with the package whenever torch is importable at build time, as it is wherever the tests run.
from traincheck import _torch_fields  # noqa: E402


def _getters(t):
    strided = t.layout == torch.strided
    return (t._version, t.data_ptr() if strided else 0, strided, t.requires_grad, t.grad)


def _tensors():
    param = torch.nn.Parameter(torch.randn(5, 3))
    param.grad = torch.randn(5, 3)
    with torch.no_grad():
        param.mul_(3)
        param.grad.add_(1)
    frozen = torch.nn.Parameter(torch.zeros(2), requires_grad=False)
    base = torch.arange(24.0).reshape(4, 6)
    resized = torch.ones(4)
    resized.untyped_storage().resize_(0)  # as FSDP frees a parameter's memory
    half = torch.ones(8, dtype=torch.float16)
    half.add_(1)
    return {
        "parameter updated in place": param,
        "its gradient": param.grad,
        "frozen parameter": frozen,
        "view at an offset": base[1:, 2:],
        "transposed view": base.t(),
        "empty": torch.empty(0),
        "float16": half,
        "int64": torch.arange(5),
        "sparse": torch.eye(3).to_sparse(),
        "meta": torch.empty(3, device="meta"),
        "storage resized to 0": resized,
    }


@pytest.mark.parametrize("name", list(_tensors()))
def test_the_direct_reads_give_what_torchs_getters_give(name):
    t = _tensors()[name]
    got = _torch_fields.fields(t)
    want = _getters(t)
    assert got is not None
    assert got[:4] == want[:4]
    assert got[4] is want[4]  # the gradient's own Python object (None when it has none)


def test_a_tensor_they_cannot_read_is_left_to_the_getters():
    with torch.inference_mode():
        t = torch.ones(2)  # no version counter: t._version raises
    assert _torch_fields.fields(t) is None
    with pytest.raises(RuntimeError):
        t._version


def test_reading_a_non_leafs_gradient_gives_no_warning():
    x = torch.ones(3, requires_grad=True)
    y = x * 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _torch_fields.fields(y)[4] is None
    assert caught == []


def test_a_version_counter_read_follows_in_place_updates():
    t = torch.zeros(3)
    before = _torch_fields.fields(t)[0]
    t.add_(1)
    t[0] = 5
    assert _torch_fields.fields(t)[0] == before + 2 == t._version


def test_it_takes_only_plain_tensors():
    with pytest.raises(TypeError):
        _torch_fields.fields([1, 2])

    class Sub(torch.Tensor):
        pass

    with pytest.raises(TypeError):
        _torch_fields.fields(torch.ones(2).as_subclass(Sub))


def test_the_tracker_installs_the_direct_reads():
    assert torch_fields.load() is True
    assert _core.has_tensor_field_reader()


def test_the_loader_refuses_reads_that_disagree_with_the_getters():
    assert torch_fields._agrees(_torch_fields.fields)
    assert not torch_fields._agrees(lambda t: (0, 0, True, True, None))
    assert torch_fields._agrees(lambda t: None)  # reads nothing: the getters read everything


def test_a_check_that_fails_leaves_the_getters(monkeypatch):
    def refuse():
        raise RuntimeError("a probe torch refuses")

    monkeypatch.setattr(torch_fields, "_loaded", None)
    monkeypatch.setattr(torch_fields, "_probes", refuse)
    _core.set_tensor_field_reader(None)
    try:
        assert torch_fields.load() is False
        assert not _core.has_tensor_field_reader()
    finally:
        _core.set_tensor_field_reader(_torch_fields.reader())


def test_it_refuses_to_import_under_another_torch():
    code = ("import torch; torch.__version__ = '0.0.1'\n"
            "try:\n    import traincheck._torch_fields\nexcept ImportError as e:\n    print('refused:', e)\n"
            "from traincheck.tracking import torch_fields; from traincheck import _core\n"
            "print(torch_fields.load(), _core.has_tensor_field_reader())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "refused: traincheck._torch_fields was built against torch" in out
    assert "not the torch imported: 0.0.1" in out
    assert out.strip().endswith("False False")  # the tracker keeps torch's getters


def test_it_refuses_to_import_when_torchs_version_cannot_be_read():
    code = ("import torch; del torch.version.git_version\n"
            "try:\n    import traincheck._torch_fields\nexcept ImportError as e:\n    print('refused:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "refused: traincheck._torch_fields: cannot read the imported torch's version" in out


def test_the_capsule_is_checked():
    with pytest.raises(ValueError):
        _core.set_tensor_field_reader(object())
