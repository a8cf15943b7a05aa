"""Inside the traced process: start the recorder, wrap the instrumented modules, run the user's script.

The collector writes a small launcher `_traincheck_<script>.py` into the output directory that calls
`main(config)`; `python <launcher> args...` (or a shell launcher / torchrun running it) then behaves like
`python <script> args...`: same argv, same sys.path[0], same __main__, same exceptions and exit code.
"""

from __future__ import annotations

import atexit
import builtins
import dataclasses
import gc
import importlib
import json
import os
import signal
import sys
import types

from traincheck import meta_vars, output_files, script_api, settings, violations


def _start_recorder(config: dict):
    from traincheck import _core

    # The writer's period bounds what a SIGKILL can lose; tests shorten or lengthen it.
    _core.start(config["output_dir"], settings.value("TRAINCHECK_WRITER_PERIOD_MS"),
                settings.value("TRAINCHECK_HEAP_RECLAIM_MB"))
    meta_vars.attach_recorder(_core, config["sampling_interval"], config["warm_up_steps"])
    if os.environ.get("RANK", "").isdigit():  # torchrun / DDP: cross-rank invariants need the rank
        meta_vars.set_meta_var("_DATA_PARALLEL_RANK", int(os.environ["RANK"]))
    atexit.register(_core.shutdown)
    os.register_at_fork(after_in_child=_after_fork_in_child)
    _install_sigterm_flush(_core)
    _install_os_exit_flush(_core)
    return _core


def _install_os_exit_flush(core) -> None:
    """os._exit (a scheduler's timeout handler, a forked worker's end) runs no atexit handler and no
    finaliser: without this, the records of the last writer period were lost, and a short script wrote no
    trace at all. os._exit becomes a function that shuts the recorder down (writes the trace's tail and the
    in-process checker's results), then calls the real os._exit with the same status."""
    real_exit = os._exit
    if getattr(real_exit, "__traincheck_flush__", False):
        return

    def _exit(status, /):
        try:
            core.shutdown()
        except BaseException:  # noqa: BLE001 - the process ends as asked, whatever the recorder says
            pass
        real_exit(status)

    _exit.__traincheck_flush__ = True
    _exit.__wrapped__ = real_exit
    _exit.__doc__ = real_exit.__doc__
    os._exit = _exit


_exit_flush = None                 # this process's multiprocessing finaliser that shuts the recorder down
_after_forker_registered = False   # inherited by every child, as multiprocessing's registry is


def _flush_at_exit(_anchor=None) -> None:
    """A multiprocessing finaliser that shuts the recorder down: it writes the trace's tail and closes the
    in-process checker (which judges what only the end decides and writes this process's summary). A
    child that multiprocessing started leaves through os._exit: atexit never runs there, its finalisers do."""
    global _exit_flush
    from multiprocessing import util
    from traincheck import _core

    if _exit_flush is None or not _exit_flush.still_active():
        _exit_flush = util.Finalize(None, _core.shutdown, exitpriority=-100)


def _after_fork_in_child() -> None:
    # The C++ side already dropped the parent's buffers. A multiprocessing.Process child (a DataLoader
    # worker) clears every finaliser after this hook runs (Process._after_fork), then runs the callbacks
    # of util.register_after_fork: the finaliser is registered again from there.
    global _after_forker_registered
    try:
        from multiprocessing import util

        _flush_at_exit()
        if not _after_forker_registered:
            util.register_after_fork(_flush_at_exit, _flush_at_exit)  # the function is its own (weakref-able) key
            _after_forker_registered = True
    except Exception:  # noqa: BLE001 - never break the user's child process
        pass


def _install_sigterm_flush(core) -> None:
    """SIGTERM normally kills without atexit: flush first, then die of the signal as before."""
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def on_sigterm(signum, frame):
        core.shutdown()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    try:
        signal.signal(signal.SIGTERM, on_sigterm)
    except ValueError:  # not the main thread
        pass


def _publish_signatures(report, output_dir: str) -> dict:
    """api_signatures.json, written when the APIs are wrapped (before the script runs, and as modules
    imported later are instrumented), never at exit: a live traincheck-onlinecheck reads it before this
    process's first trace line, and a run killed by SIGKILL, SIGTERM or os._exit leaves it too. Each
    process merges its entries in (signatures.publish_signatures). Returns the entries, which the
    in-process checker uses as well."""
    from traincheck.instrument.signatures import publish_signatures, signature_entries

    entries = signature_entries(report.wrappers, frozenset(report.classmethods))
    try:
        publish_signatures(entries, output_dir)
    except Exception as e:  # noqa: BLE001 - never fails the user's program
        print(f"traincheck: warning: could not write api_signatures.json in {output_dir} ({e}); the analyzers "
              "will name arguments by position", file=sys.stderr)
    return entries


def _instrument(config: dict, core):
    """Wraps the loaded modules of the instrumented packages now and those imported later when they are
    imported; returns a function giving the instrumentation summary so far."""
    from traincheck import post_import
    from traincheck.instrument import compile_support, quiet_imports, selective, worker_transport
    from traincheck.instrument.installer import CallOptions, install
    from traincheck.instrument.later_imports import LaterImports
    from traincheck.instrument.walker import find_targets
    from traincheck.tracking.tracker import mutates_parameters

    roots = config["modules_to_instr"]
    for root in roots:
        importlib.import_module(root)
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        core.set_torch_types(torch.Tensor, torch.nn.Parameter, torch.dtype, torch.device, torch.nn.Module)

    stack = bool(config.get("api_dump_stack_trace"))
    plan = selective.load_plan(config["instr_opts"]) if config.get("instr_opts") else None
    # Selective mode wraps what the plan names wherever it lives: the packages of its APIs are walked too
    # (only the named functions are wrapped), but never imported by us.
    walked = list(roots) if plan is None else list(dict.fromkeys([*roots, *selective.plan_roots(plan)]))
    # C method descriptors (Tensor.normal_, ...): in full mode only with --instr-descriptors, as the
    # original; in selective mode always, so that an invariant naming one is checked whether or not the
    # flag was repeated at checking time (only the descriptors invariants name get wrapped there).
    descriptors = plan is not None or bool(config.get("instr_descriptors"))
    targets = find_targets(walked, config["use_full_instr"], core.is_wrapper, instr_descriptors=descriptors)
    full = CallOptions(dump_args=True, dump_return=True, dump_stack=stack)
    full_tracked = dataclasses.replace(full, track_vars=True)
    tracking = bool(config.get("models_to_track") or config.get("discover_models"))

    exits = selective.overriding_exits(plan, targets) if plan is not None else set()

    def options_for(name):
        if plan is None:
            return full_tracked if tracking and mutates_parameters(name) else full
        opts = CallOptions() if name in exits else plan.options_for(name)
        return dataclasses.replace(opts, dump_stack=True) if opts is not None and stack else opts

    report = install(targets, options_for)
    later = LaterImports(walked, config["use_full_instr"], core.is_wrapper, descriptors, options_for, report)
    post_import.add_hook(later.hook)
    compile_support.pause_recording_while_compiling(core, report)
    worker_transport.pause_recording_in_worker_transport(core)
    quiet_imports.pause_recording_in_library_imports(core, walked)
    signatures = _publish_signatures(report, config["output_dir"])
    online = _start_online_check(config, core, signatures)
    later.on_installed = lambda installed: _signatures_of_later_apis(installed, config["output_dir"], online)
    post_import.after_outermost_import(later.flush_installed)

    at_start = {}

    def summary() -> dict:
        if plan is None:
            return {"mode": "full", "wrapped_targets": report.wrapped_targets, "apis": len(report.api_names),
                    "instr_descriptors": descriptors, "modules_instrumented_on_import": len(later.modules_walked)}
        # The summary is rewritten at exit, when APIs that were waiting for their module may be wrapped. The
        # resolution at the start stays in it: the launcher reports that one, whichever version it reads.
        now = selective.resolution_summary(plan, report.api_names, walked)
        if not at_start:
            at_start.update(now)
        return {**now, "at_start": dict(at_start)}

    return summary


def _signatures_of_later_apis(installed, output_dir: str, online) -> None:
    """APIs wrapped when their modules were imported during the run (one batch per outermost import):
    their signatures go where those of the APIs wrapped at the start went, the file and the in-process
    checker (its checks of them bind arguments by name from then on, as an offline check of the same
    trace does)."""
    entries = _publish_signatures(installed, output_dir)
    if online is None or not entries:
        return
    try:
        online.add_signatures(json.dumps(entries))
    except Exception as e:  # noqa: BLE001 - checking is an extra
        print(f"traincheck: warning: online check: signatures of later imported APIs not added ({e})", file=sys.stderr)


def _start_online_check(config: dict, core, signatures: dict):
    """In-process checking (collect -i, unless --no-online-check): the recorder's writer thread feeds every
    trace line to the checker in traincheck._online, which appends violations to failed.log as it finds
    them and writes report.html and summary_<pid>.json when the recorder shuts down. Imported only here,
    so that otherwise no analyzer code is loaded into training. Returns that module, or None when off.

    A check that cannot start (its output folder full or not writable) is never dropped silently: under
    --on-violation raise the user asked to be stopped on a violation, which nothing would do, so the
    program does not start (CheckNotStarted); otherwise training runs unchecked, with a warning."""
    online = config.get("online_check")
    if not online:
        return None
    action = online.get("on_violation", "warn")
    try:
        from traincheck import _online

        interval = settings.value("TRAINCHECK_ONLINE_REPORT_INTERVAL_S")
        capsule = _online.start(online["invariants"], json.dumps(signatures), online["output_dir"], interval, action,
                                json.dumps(_library_versions(config)))
        _start_cross_rank_check(_online)
        core.set_record_sink(capsule)
        violations.start_delivery(_online, action)
        return _online
    except Exception as e:  # noqa: BLE001 - checking is an extra: never stop the training it watches, unless told to
        if action == "raise":
            raise CheckNotStarted(f"traincheck: error: the in-process check cannot start ({e}); --on-violation raise "
                                  "cannot be honoured, so the program was not started") from None
        print(f"traincheck: warning: the in-process check cannot start ({e}): nothing is checked while this program "
              "runs", file=sys.stderr)
        return None


class CheckNotStarted(SystemExit):
    """The program is not started: its message goes to stderr and the exit status is 1, as for any
    SystemExit with a message, without a traceback of ours."""


# Libraries whose internals a shipped pack's invariants may name, besides the instrumented ones.
_VERSIONED_LIBRARIES = ("torch", "transformers", "accelerate", "lightning")


def _library_versions(config: dict) -> dict:
    """{distribution: version} of the libraries this process may check invariants about: invariants vetted
    on other versions are not checked (cpp/invariant/version_gate.h). Read from their metadata, never imported."""
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for name in dict.fromkeys([*_VERSIONED_LIBRARIES, *config.get("modules_to_instr", ())]):
        try:
            versions[name] = version(name)
        except (PackageNotFoundError, ValueError):
            pass
    return versions


def _start_cross_rank_check(online) -> None:
    """A rank of a multi-rank job compares its step ends with its peers' through the job's store
    (traincheck.cross_rank), when some invariant compares ranks."""
    from traincheck import cross_rank

    if cross_rank.wanted():
        online.enable_cross_rank(cross_rank.find_store, **cross_rank.options())


def _start_tracking(config: dict, core) -> None:
    """Model tracking: the tracker gets the models --models-to-track names from the annotated script and,
    when the in-process check reads parameter states, finds those each optimizer steps by itself."""
    discover = bool(config.get("discover_models"))
    if not config.get("models_to_track") and not discover:
        return
    from torch.nn.modules.module import register_module_module_registration_hook
    from torch.optim.optimizer import register_optimizer_step_post_hook

    from traincheck.tracking.tracker import (ModelTracker, watch_functional_dropout, watch_gradient_unscaling,
                                             watch_optimizer_construction, watch_sampler_iterations)

    tracker = ModelTracker(core, config.get("model_tracker_style") or "sampler", config.get("tensor_hash", "full"),
                           discover=discover)
    script_api.set_tracker(tracker)
    watch_optimizer_construction(tracker)
    watch_gradient_unscaling(tracker)
    watch_sampler_iterations(tracker)
    watch_functional_dropout(tracker)
    # The tool's own calls into torch are not the program's: unrecorded (they were, in every trace).
    previous = core.set_inside_recorder(True)
    try:
        register_optimizer_step_post_hook(tracker.after_optimizer_step)
        register_module_module_registration_hook(tracker.module_registered)
    finally:
        core.set_inside_recorder(previous)
    meta_vars.add_step_end_hook(tracker.at_step_end)
    atexit.register(tracker.at_exit)  # the last iteration's states (runs before the recorder's shutdown)
    core.set_var_hook(tracker.around_api)


def _number_steps_by_optimizer(core) -> None:
    """Optimizer steps number the steps where no training loop is annotated (traincheck/optimizer_steps.py).
    Registered after the tracker's hook: a step's claims and states are written before its number moves on."""
    if "torch" not in sys.modules:  # nothing instrumented imported torch: the script's own import is left alone
        return
    from torch.optim.optimizer import register_optimizer_step_post_hook

    from traincheck.optimizer_steps import OptimizerStepNumbering

    previous = core.set_inside_recorder(True)
    try:
        register_optimizer_step_post_hook(OptimizerStepNumbering().after_optimizer_step)
    finally:
        core.set_inside_recorder(previous)


def _from_the_script_on(tb, script: str):
    """The traceback from the script's first frame on: the frames before it (the launcher stub, this
    module) are ours, and a plain `python script.py` shows none of them. None when the script never ran
    (a syntax error), which Python prints without a traceback, as it does for the script itself."""
    while tb is not None and tb.tb_frame.f_code.co_filename != script:
        tb = tb.tb_next
    return tb


def _to_the_step_boundary(tb):
    """A ViolationError's traceback without its last frames when they are ours (the step-boundary hooks
    that raised it): it ends at the script's line where the step began (the loop header, or the script's
    own start_step() call)."""
    ours = os.path.dirname(os.path.abspath(violations.__file__)) + os.sep
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    keep = len(entries)
    while keep > 1 and entries[keep - 1].tb_frame.f_code.co_filename.startswith(ours):
        keep -= 1
    if entries:
        entries[keep - 1].tb_next = None
        return entries[0]
    return None


def _hide_our_frames(script: str) -> None:
    previous = sys.excepthook

    def excepthook(exc_type, exc, tb):
        tb = _from_the_script_on(tb, script)
        if isinstance(exc, violations.ViolationError):
            tb = _to_the_step_boundary(tb)
        if isinstance(exc, BaseException):
            exc.__traceback__ = tb  # the default hook prints the exception's own traceback, not `tb`
        previous(exc_type, exc, tb)

    sys.excepthook = excepthook


def _script_code(path: str, annotate: bool, models_to_track: list[str]):
    """The script compiled as it runs under the tool: annotated with its steps and stages."""
    from traincheck import integrations, source_rewrite

    _hide_our_frames(path)
    with open(path, "rb") as f:
        source = f.read().decode("utf-8")
    # Trainer loops inside libraries (transformers, Lightning) get their steps and stages from callbacks.
    integrations.install(script_numbers_steps=source_rewrite.numbers_own_steps(source, path))
    tree = source_rewrite.annotate_source(source, path, tuple(models_to_track)) if annotate else source
    if annotate and not source_rewrite.starts_steps(tree):
        # No training loop in the script (it is in a module the rewrite never sees): optimizer steps number
        # the steps. Only then: under torch.compile, a hook on every optimizer step is traced into the
        # compiled step.
        from traincheck import _core

        _number_steps_by_optimizer(_core)
    return compile(tree, path, "exec")


def _script_module(path: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update({"__file__": path, "__builtins__": builtins, "__traincheck__": script_api})
    return module


def _run_script(path: str, argv: list[str], annotate: bool, models_to_track: list[str]) -> None:
    code = _script_code(path, annotate, models_to_track)
    main = _script_module(path, "__main__")
    sys.modules["__main__"] = main
    sys.argv = [path, *argv]
    sys.path[0] = os.path.dirname(path)
    exec(code, main.__dict__)


# The collector's configuration, for the processes the script starts with multiprocessing's spawn method
# (torch.multiprocessing.spawn, as the PyTorch DDP tutorial starts its ranks).
_SPAWN_CONFIG = "TRAINCHECK_SPAWN_CONFIG"


def _instrument_spawned_children(config: dict) -> None:
    """A process started by multiprocessing's spawn method is a fresh interpreter that imports the script as
    `__mp_main__` and calls a function of it: without this, it would run untouched by the tool. Its command
    line gets a first statement that sets it up as this process was (spawned_child_main), with the
    configuration passed in the environment it inherits."""
    import multiprocessing.spawn as mp_spawn

    try:
        os.environ[_SPAWN_CONFIG] = json.dumps(config)
    except (TypeError, ValueError):  # the launcher writes literals; a value JSON cannot carry leaves children as they were
        return
    original = mp_spawn.get_command_line

    def get_command_line(**kwds):
        command = original(**kwds)
        if "-c" in command:
            i = command.index("-c") + 1
            command[i] = "import traincheck.runtime; traincheck.runtime.spawned_child_main(); " + command[i]
        return command

    mp_spawn.get_command_line = get_command_line


def spawned_child_main() -> None:
    """In a process multiprocessing spawned from a collected script: recording, instrumentation, tracking and
    the in-process check as in the script's own process (each process writes its own trace files and
    summary), then the script imported as `__mp_main__` annotated as the script's own process ran it
    (multiprocessing's own import of it would run it untouched)."""
    config = json.loads(os.environ[_SPAWN_CONFIG])
    _set_up(config)
    import multiprocessing.spawn as mp_spawn

    original = mp_spawn._fixup_main_from_path
    script = os.path.realpath(config["pyscript"])

    def fixup_main_from_path(main_path):
        if os.path.realpath(main_path) != script:
            return original(main_path)
        code = _script_code(script, config.get("annotate", True), config.get("models_to_track", []))
        module = _script_module(script, "__mp_main__")
        sys.modules["__main__"] = sys.modules["__mp_main__"] = module
        exec(code, module.__dict__)

    mp_spawn._fixup_main_from_path = fixup_main_from_path


def _write_summary(path: str, summary: dict, quiet: bool = False) -> None:
    try:
        with output_files.open_output(path, "w") as f:
            json.dump(summary, f, indent=2)
    except OSError as e:  # a full or read-only output folder: the recorder announces it too; train anyway
        if not quiet:
            print(f"traincheck: warning: could not write {path} ({e.strerror})", file=sys.stderr)


def main(config: dict) -> None:
    """Entry point of the launcher file; `config` is what traincheck-collect decided."""
    _set_up(config)
    _instrument_spawned_children(config)
    _run_script(config["pyscript"], sys.argv[1:], config.get("annotate", True), config.get("models_to_track", []))


def _set_up(config: dict) -> None:
    """Everything the tool does in a process before the script runs in it."""
    os.environ.setdefault("TRAINCHECK_OUTPUT_DIR", config["output_dir"])
    core = _start_recorder(config)
    summary = _instrument(config, core)
    # One file per process: DDP ranks and workers each report what they resolved; written again at exit
    # with what modules imported during the run added.
    summary_path = os.path.join(config["output_dir"], f"instrumentation_summary_{os.getpid()}.json")
    _write_summary(summary_path, summary())
    pid = os.getpid()
    atexit.register(lambda: os.getpid() == pid and _write_summary(summary_path, summary(), quiet=True))
    _start_tracking(config, core)
    # After the tracker's step-end hook: a step's states are recorded before a violation can stop it.
    meta_vars.add_step_end_hook(violations.deliver)  # nothing to deliver without an in-process check
    # Instrumentation leaves tens of thousands of short-lived objects (the walk over torch, the script's
    # AST): collected here, before the script starts, they cannot trigger the script's first full
    # collections (~0.2 s each with torch loaded) inside its first training iterations.
    gc.collect()
