"""Violations while training runs (docs/collection.md §Violations while training runs).

Under ``traincheck-collect -i`` the in-process checker (traincheck._online, on the recorder's writer
thread) prints the first violation of each invariant on stderr as it finds it (``--on-violation warn``,
the default; ``log`` keeps it to failed.log and the report). The training thread hears of those
violations at the next step boundary (``start_step``), where this module calls the script's
``traincheck.on_violation`` callbacks, then, with ``--on-violation raise``, raises ``ViolationError`` in
the training loop, so the script's own exception handling and checkpointing run: its traceback names the
line where the step began (the loop header the collector annotated, or the script's own start_step()).
No torch here.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional

ACTIONS = ("log", "warn", "raise")


@dataclasses.dataclass(frozen=True)
class Violation:
    """An invariant's first violation in this process. `held_on_programs` (a shipped pack's invariants:
    the correct corpus programs it held on) and `examples` (what it was inferred from) say why to trust it."""

    label: str
    relation: str
    description: str
    step: Optional[int]
    stage: Optional[str]
    held_on_programs: Optional[int]
    examples: Optional[int]

    def __str__(self) -> str:
        where = "" if self.step is None else f" at step {self.step}" + (f" ({self.stage})" if self.stage else "")
        return f"violation{where}: {self.label}"


class ViolationError(RuntimeError):
    """Raised in the training thread at a step boundary under ``--on-violation raise``: `violations`
    holds the invariants first violated since the last boundary, oldest first."""

    def __init__(self, violations: list[Violation]):
        self.violations = violations
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        super().__init__(f"traincheck: {violations[0]}{more}")


_callbacks: list[Callable[[Violation], object]] = []
_delivery = {"online": None, "action": "warn"}


def on_violation(callback: Callable[[Violation], object]) -> Callable[[Violation], object]:
    """Call `callback(violation)` in the training thread at the step boundary after an invariant is first
    violated (under traincheck-collect -i; otherwise never). Usable as a decorator. An exception the
    callback raises propagates into the training loop, as ``--on-violation raise`` does."""
    if not callable(callback):
        raise TypeError("traincheck.on_violation expects a callable")
    _callbacks.append(callback)
    return callback


def start_delivery(online, action: str) -> None:
    """The runtime's: violations of the in-process check `online` (traincheck._online) are delivered at
    each step boundary from now on."""
    if action not in ACTIONS:
        raise ValueError(f"on_violation must be one of {', '.join(ACTIONS)}, not {action!r}")
    _delivery["online"] = online
    _delivery["action"] = action


def deliver() -> None:
    """At a step boundary: the callbacks for each new violation, then raise under ``raise``."""
    online = _delivery["online"]
    if online is None:
        return
    alerts = online.take_alerts()  # [] at once when nothing is waiting
    if not alerts:
        return
    found = [Violation(**alert) for alert in alerts]
    for violation in found:
        for callback in list(_callbacks):
            callback(violation)
    if _delivery["action"] == "raise":
        raise ViolationError(found)
