"""Steps numbered by optimizer steps, where no training loop is annotated.

The source rewrite (traincheck/source_rewrite.py) numbers steps in the loops of the script it runs. A
training loop it cannot see (in a module of the user's package, in a library with no integration) leaves
every record at step 0: cross-rank checks then never compare replicas, and per-step relations see one
step. So, when the first optimizer to step steps while no step was ever started or set (no annotated loop,
no integration callback, no `META_VARS["step"]` of the script's own), each of its steps ends one: a step
runs from one step of that optimizer to the next, its claims and states recorded before the number moves
on. The numbering stands aside for good once anything else starts or sets a step.
"""

from __future__ import annotations

import weakref

from traincheck import meta_vars


class OptimizerStepNumbering:
    def __init__(self):
        self._lead = None     # the first optimizer that stepped, weakly
        self._active = None   # None: not decided yet; then whether its steps number the steps
        self._expected = 0    # the step this numbering last started

    def after_optimizer_step(self, optimizer, args, kwargs) -> None:
        if self._active is False:
            return
        if self._active is None:
            self._active = meta_vars.steps_started() == 0 and meta_vars.get_step() == 0
            if not self._active:
                return
            try:
                self._lead = weakref.ref(optimizer)
            except TypeError:  # an optimizer-like object without weak references
                self._active = False
                return
        elif self._lead() is not optimizer:
            return
        if meta_vars.get_step() != self._expected:  # something else numbers steps now
            self._active = False
            return
        meta_vars.start_step()
        self._expected = meta_vars.get_step()
