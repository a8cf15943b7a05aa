"""The parts of the original's `traincheck.config.config` that training scripts touch.

``DISABLE_WRAPPER`` (0.2.0 keeps the flag here) turns recording off while True, exactly as
``traincheck.instrumentor.tracer.DISABLE_WRAPPER`` does; ``INSTRUMENTATION_POLICY`` is the live sampling
policy (``{"interval": ..., "warm_up": ...}``, from ``--sampling-interval``/``--warm-up-steps``).
"""

import sys
import types

from traincheck import meta_vars as _meta_vars

ALL_STAGE_NAMES = list(_meta_vars.VALID_STAGES)


class _ConfigModule(types.ModuleType):
    @property
    def DISABLE_WRAPPER(self) -> bool:  # noqa: N802 - the original's name
        return _meta_vars.is_wrapper_disabled()

    @DISABLE_WRAPPER.setter
    def DISABLE_WRAPPER(self, disabled) -> None:  # noqa: N802
        _meta_vars.set_wrapper_disabled(bool(disabled))

    @property
    def INSTRUMENTATION_POLICY(self) -> dict:  # noqa: N802
        return _meta_vars._policy

    @INSTRUMENTATION_POLICY.setter
    def INSTRUMENTATION_POLICY(self, policy) -> None:  # noqa: N802
        # None: no policy, every step recorded (the original's start_step then never disables).
        policy = policy or {"interval": 1, "warm_up": 0}
        _meta_vars._policy["interval"] = max(1, int(policy["interval"]))
        _meta_vars._policy["warm_up"] = max(0, int(policy["warm_up"]))


sys.modules[__name__].__class__ = _ConfigModule

__all__ = ["ALL_STAGE_NAMES", "DISABLE_WRAPPER", "INSTRUMENTATION_POLICY"]
