"""The TRAINCHECK_* environment variables that tune the recorder, each with its accepted range.

traincheck-collect validates every one before the script starts (`check_all`): a bad value stops it with
one line naming the variable and the range, instead of a traceback or a feature silently off. Inside the
traced process (`value`), where a shell launcher may have changed the environment since, a bad value is
said once on stderr and the default is used: the user's training runs as it would without the tool.

The native commands (traincheck-check, traincheck-onlinecheck) validate theirs in C++
(cpp/common/env_settings.h): TRAINCHECK_PYTHON and TRAINCHECK_EXPORT_TIMEOUT_S.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    name: str
    kind: type  # int or float
    low: float
    high: float
    default: float
    meaning: str

    def accepted(self) -> str:
        what = "an integer" if self.kind is int else "a number"
        return f"{what} from {_show(self.low)} to {_show(self.high)}"

    def parse(self, text: str):
        """The value of `text`, or raises ValueError with the one-line message."""
        try:
            value = self.kind(text.strip())
        except ValueError:
            value = None
        if value is None or (self.kind is float and not math.isfinite(value)) or not (self.low <= value <= self.high):
            raise ValueError(f"{self.name}={text!r}: expected {self.accepted()} ({self.meaning})")
        return value


def _show(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


SETTINGS = {s.name: s for s in (
    Setting("TRAINCHECK_WRITER_PERIOD_MS", int, 1, 3_600_000, 20,
            "how often the writer thread writes the trace, in ms; bounds what a SIGKILL loses"),
    Setting("TRAINCHECK_HEAP_RECLAIM_MB", int, 0, 1 << 20, 64,
            "resident growth in MB after which the recorder gives free heap pages back; 0 never"),
    Setting("TRAINCHECK_CROSS_RANK", int, 0, 1, 1, "0 turns the in-process cross-rank check off"),
    Setting("TRAINCHECK_CROSS_RANK_PEERS", int, 0, 1 << 20, 0,
            "ring neighbours each rank compares with; 0 chooses from the job's shape (all pairs up to 8 ranks, "
            "then per node or a ring)"),
    Setting("TRAINCHECK_CROSS_RANK_KEEP_STEPS", int, 1, 100_000, 8,
            "steps a rank's summary stays in the job's store at least (more while its kept summaries fit in 1 MiB)"),
    Setting("TRAINCHECK_ONLINE_REPORT_INTERVAL_S", float, 0, 86_400, 10,
            "seconds between report.html refreshes; 0 writes it at exit only"),
)}

_warned: set[str] = set()


def check_all(environ=None) -> list[str]:
    """One message per TRAINCHECK_* setting of `environ` whose value is out of range."""
    environ = os.environ if environ is None else environ
    errors = []
    for name, setting in SETTINGS.items():
        if name in environ:
            try:
                setting.parse(environ[name])
            except ValueError as e:
                errors.append(str(e))
    return errors


def value(name: str):
    """The setting's value in this process; a bad one is said once on stderr and the default used."""
    setting = SETTINGS[name]
    text = os.environ.get(name)
    if text is None:
        return setting.kind(setting.default)
    try:
        return setting.parse(text)
    except ValueError as e:
        if name not in _warned:
            _warned.add(name)
            print(f"traincheck: error: {e}; using the default {_show(setting.default)}", file=sys.stderr, flush=True)
        return setting.kind(setting.default)
