"""Direct tensor reads for the tracker (cpp/record/python/tensor_fields.h).

traincheck._torch_fields reads a tensor's version counter, data address, layout, gradient and requires_grad
straight from its TensorImpl, a few loads instead of a call through one of torch's getters each. It is built
against the torch installed at build time and imports only under that same torch. `load()` installs it into
_core once per process, after checking its reads against torch's getters on a few tensors; when it is
missing, refuses the torch imported, or disagrees, nothing is installed and the tracker reads every tensor
through the getters, as it would without it.
"""

from __future__ import annotations

import torch

from traincheck import _core

_loaded: bool | None = None  # None: not tried yet


def _getter_fields(t: torch.Tensor) -> tuple:
    return (t._version, t.data_ptr() if t.layout == torch.strided else 0, t.layout == torch.strided,
            t.requires_grad, t.grad)


def _probes() -> list[torch.Tensor]:
    """Tensors whose fields the check compares: a parameter with a gradient, updated in place; a frozen one;
    a view at an offset; an empty tensor; a sparse one."""
    param = torch.nn.Parameter(torch.zeros(6))
    param.grad = torch.ones(6)
    with torch.no_grad():
        param.add_(1.0)
        param.grad.mul_(2.0)
    frozen = torch.nn.Parameter(torch.arange(4.0), requires_grad=False)
    base = torch.arange(12.0).reshape(3, 4)
    base.add_(1.0)
    return [param, param.grad, frozen, base[1:, 2:], torch.empty(0), torch.zeros(3, 3).to_sparse()]


def _agrees(fields) -> bool:
    previous = _core.set_inside_recorder(True)  # the probes' torch calls are the tool's: never recorded
    try:
        for t in _probes():
            got = fields(t)
            if got is None:
                continue  # read through the getters anyway
            want = _getter_fields(t)
            if got[:4] != want[:4] or got[4] is not want[4]:
                return False
        return True
    finally:
        _core.set_inside_recorder(previous)


def load() -> bool:
    """Installs the direct reads into _core if they can be used here; whether they are installed."""
    global _loaded
    if _loaded is None:
        # Whatever goes wrong here leaves the getters, never the user's run broken: not built, built against
        # another torch (ImportError, or OSError for a missing library), a probe torch refuses.
        try:
            from traincheck import _torch_fields

            _loaded = _agrees(_torch_fields.fields)
            if _loaded:
                _core.set_tensor_field_reader(_torch_fields.reader())
        except Exception:
            _loaded = False
    return _loaded
