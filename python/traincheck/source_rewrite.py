"""Adds step and stage annotations to the user's script, in memory
(docs/collection.md §Step and stage annotations).

The script file itself is never modified: the launcher compiles the annotated syntax tree, keeping the
original file name and line numbers, so tracebacks point at the user's code. A script that already calls
``start_step``/``start_eval_step`` (or ``annotate_stage(<stage>)``) is left to do so itself.

Step numbering equals the original's (0.2.0 ``InsertTracerVisitor``): loops are classified by the same
heuristics, innermost first, and every loop classified as training gets ``start_step()``, nested or not.
So an epoch loop around a batch loop (it calls ``.step()``/``.backward()`` somewhere inside, or a
``train_*`` function) takes a step number of its own at the top of each epoch, before its batches': with
B batches per epoch, batch b of epoch e is step ``(e - 1) * (B + 1) + 1 + b``, in both tools. The signals
are searched in the whole loop (nested loops and definitions included), and the ``start_step()`` /
``start_eval_step()`` calls already added to inner loops count as the original's do (one statement each;
``start_eval_step`` is an eval signal), so an outer loop is classified as in the original. ``async for``
loops are not annotated (the original visits only ``for`` and ``while``). A script that sets
``META_VARS["step"]`` by hand still gets ``start_step()`` in its loops, as in the original: the script's
value holds from its assignment to the next ``start_step()``.

Differences from the original: the rewrite works on the syntax tree rather than tokens, keeps comments and
formatting of the file on disk (it is never rewritten), and a script that calls ``start_step()`` or
``start_eval_step()`` itself gets no step annotations (the original adds its own as well, so each such
iteration would count twice). And a loop is also a training loop when it calls a function or method of
the script that trains (one that calls ``.step()``/``.backward()``, or calls such a function, by name):
the original finds no step in a loop whose batches go to ``self._run_batch(...)`` of a Trainer class
written in the script, and numbers the whole run step 0. Where the loop is in no script the rewrite sees
(a module of the user's package), optimizer steps number the steps instead (traincheck/optimizer_steps.py).
"""

from __future__ import annotations

import ast

_TRAIN_STAGE_ATTRS = ("train", "step")
_TEST_STAGE_ATTRS = ("eval", "no_grad")
_CHECKPOINT_ATTRS = ("save",)
_STATEMENT_NODES = (ast.Assign, ast.Expr, ast.Return, ast.AugAssign, ast.AnnAssign)


def _iterator_kind(loop: ast.AST) -> str | None:
    """The original's first heuristic: a `for` over `train_loader` (or `enumerate(val_loader, ...)`: the first
    Name argument naming train/val/eval/test decides)."""
    if not isinstance(loop, ast.For):
        return None
    name = None
    if isinstance(loop.iter, ast.Name):
        name = loop.iter.id.lower()
    elif isinstance(loop.iter, ast.Call):
        for arg in loop.iter.args:
            if isinstance(arg, ast.Name):
                arg_name = arg.id.lower()
                if "train" in arg_name or any(k in arg_name for k in ("val", "eval", "test")):
                    name = arg_name
                    break
    if name is None:
        return None
    if "train" in name:
        return "training"
    if any(k in name for k in ("val", "eval", "test")):
        return "eval"
    return None


def _ours(call: ast.Call) -> str | None:
    """The function name of a call this rewrite inserted (`__traincheck__.start_step()`), else None."""
    f = call.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "__traincheck__":
        return f.attr
    return None


def _walk_as_original(loop: ast.AST):
    """The loop's nodes as the original's classifier sees them: everything inside (nested loops and
    definitions too), where only the start_step/start_eval_step calls of inner loops have been added yet.
    Our stage annotations and model-tracking calls are left out: the original adds them in later passes."""
    stack = [loop]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            name = _ours(node.value)
            if name is not None and name not in ("start_step", "start_eval_step"):
                continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _called_name(call: ast.Call) -> str | None:
    """`f` of `f(...)` and of `anything.f(...)`."""
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def training_functions(tree: ast.AST) -> frozenset[str]:
    """Names of the script's functions and methods that train: they call `.step()` or `.backward()`, or call
    (by name, as `f(...)` or `self.f(...)`) one that does. Names, not objects: a method is known by its
    name wherever it is called from."""
    calls: dict[str, set[str]] = {}
    trains: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        called = calls.setdefault(node.name, set())
        for inner in ast.walk(node):
            if isinstance(inner, ast.Call):
                name = _called_name(inner)
                if isinstance(inner.func, ast.Attribute) and name in ("step", "backward"):
                    trains.add(node.name)
                elif name is not None:
                    called.add(name)
    changed = True
    while changed:
        changed = False
        for name, called in calls.items():
            if name not in trains and called & trains:
                trains.add(name)
                changed = True
    return frozenset(trains)


def classify_loop(loop: ast.AST, trains: frozenset[str] = frozenset()) -> str | None:
    """'training', 'eval' or None, by the original's heuristics (docs/collection.md §Step and stage
    annotations), and ours: a loop calling one of `trains` (training_functions) is a training loop."""
    kind = _iterator_kind(loop)
    if kind is not None:
        return kind
    train = evaluation = False
    statements = 0
    for node in _walk_as_original(loop):
        if isinstance(node, _STATEMENT_NODES):
            statements += 1
        if isinstance(node, ast.Call):
            inserted = _ours(node)
            if inserted is None and _called_name(node) in trains:
                train = True
            if isinstance(node.func, ast.Attribute) and inserted is None:
                if node.func.attr in ("step", "backward"):
                    train = True
                if node.func.attr == "eval":
                    evaluation = True
            elif isinstance(node.func, ast.Name) or inserted is not None:
                # The original inserts `start_step()` as a plain name: `start_eval_step` reads as an eval call.
                parts = (inserted or node.func.id).lower().split("_")
                if "iter" in parts or "train" in parts:
                    train = True
                if "eval" in parts:
                    evaluation = True
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                expr = item.context_expr
                if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "no_grad":
                    evaluation = True
    if train:
        return "training"
    if evaluation:
        return "eval"
    return None if statements < 3 else "eval"


def _call_stmt(func: str, *args: str) -> ast.stmt:
    call = ast.Call(
        func=ast.Attribute(value=ast.Name(id="__traincheck__", ctx=ast.Load()), attr=func, ctx=ast.Load()),
        args=[ast.Constant(a) for a in args],
        keywords=[],
    )
    return ast.Expr(value=call)


def _at_loop_header(stmt: ast.stmt, loop: ast.For | ast.While) -> ast.stmt:
    """`stmt` placed on the loop's header (`for x in loader`, `while cond`): a step starts there, and an
    exception raised at the boundary (a ViolationError under --on-violation raise) names that line, not
    the body's first statement."""
    header = loop.iter if isinstance(loop, ast.For) else loop.test
    one_line = header.end_lineno == loop.lineno
    end_col = header.end_col_offset if one_line else loop.col_offset + (3 if isinstance(loop, ast.For) else 5)
    for node in ast.walk(stmt):
        node.lineno = node.end_lineno = loop.lineno
        node.col_offset, node.end_col_offset = loop.col_offset, end_col
    return stmt


def _user_calls(tree: ast.AST) -> set[str]:
    """Annotation functions the script already calls itself (any spelling: traincheck.x or x)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name in ("start_step", "start_eval_step"):
                found.add(name)
            if name == "annotate_stage" and node.args and isinstance(node.args[0], ast.Constant):
                found.add(f"annotate_stage:{node.args[0].value}")
    return found


def _assigned_names(stmt: ast.stmt) -> list[str]:
    """Plain names bound by an assignment statement (`a = ...`, `a, b = ...`, `a: T = ...`)."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
    names = []
    for t in targets:
        for node in [t] if isinstance(t, ast.Name) else t.elts if isinstance(t, (ast.Tuple, ast.List)) else []:
            if isinstance(node, ast.Name):
                names.append(node.id)
    return names


class _Annotator(ast.NodeTransformer):
    def __init__(self, user_calls: set[str], models_to_track: tuple[str, ...], trains: frozenset[str]):
        self.user_calls = user_calls
        self.trains = trains
        self.models_to_track = set(models_to_track)
        self.annotate_steps = not ({"start_step", "start_eval_step"} & user_calls)
        self.loop_depth = 0

    def _stage_of(self, stmt: ast.stmt) -> str | None:
        if isinstance(stmt, (ast.For, ast.While, ast.AsyncFor, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.Try)):
            return None  # compound statements: their inner statements are annotated instead
        attrs = set()
        nodes = [stmt] if not isinstance(stmt, ast.With) else [item.context_expr for item in stmt.items]
        for root in nodes:
            for node in ast.walk(root):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                    attrs.add(node.func.attr)
        for stage, keys in (("training", _TRAIN_STAGE_ATTRS), ("testing", _TEST_STAGE_ATTRS), ("checkpointing", _CHECKPOINT_ATTRS)):
            if attrs & set(keys):
                return None if f"annotate_stage:{stage}" in self.user_calls else stage
        return None

    def _annotate_body(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        previous = None
        for stmt in body:
            stage = self._stage_of(stmt)
            if stage is not None and stage != previous:
                out.append(ast.copy_location(_call_stmt("annotate_stage", stage), stmt))
                previous = stage
            out.append(self.visit(stmt))
            if self.loop_depth == 0:  # as the original: assignments inside loops are not tracked
                for name in _assigned_names(stmt):
                    if name in self.models_to_track:
                        call = _call_stmt("track_model", name)
                        call.value.args.insert(0, ast.Name(id=name, ctx=ast.Load()))
                        call.value.args[1] = ast.Constant(name)
                        out.append(ast.copy_location(call, stmt))
        return out

    def generic_visit(self, node):
        for field in ("body", "orelse", "finalbody"):
            value = getattr(node, field, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                setattr(node, field, self._annotate_body(value))
        for field, value in ast.iter_fields(node):
            if field in ("body", "orelse", "finalbody"):
                continue
            if isinstance(value, list):
                setattr(node, field, [self.visit(v) if isinstance(v, ast.AST) else v for v in value])
            elif isinstance(value, ast.AST):
                setattr(node, field, self.visit(value))
        return node

    def _visit_loop(self, node):
        self.loop_depth += 1
        node = self.generic_visit(node)
        self.loop_depth -= 1
        if not self.annotate_steps:
            return node
        kind = classify_loop(node, self.trains)  # after the inner loops got theirs, as in the original
        if kind == "training":
            node.body.insert(0, _at_loop_header(_call_stmt("start_step"), node))
        elif kind == "eval":
            node.body.insert(0, _at_loop_header(_call_stmt("start_eval_step"), node))
        return node

    visit_For = visit_While = _visit_loop

    def visit_AsyncFor(self, node):
        self.loop_depth += 1
        node = self.generic_visit(node)
        self.loop_depth -= 1
        return node


def annotate_source(source: str, filename: str, models_to_track: tuple[str, ...] = ()) -> ast.Module:
    """The script's syntax tree with annotations added; they call `__traincheck__` (traincheck.script_api).

    After each assignment to a name in `models_to_track` (outside loops), the model is handed to the
    tracker: `__traincheck__.track_model(model, "model")`.
    """
    tree = ast.parse(source, filename=filename)
    user_calls = _user_calls(tree)
    tree = _Annotator(user_calls, tuple(models_to_track), training_functions(tree)).visit(tree)
    if "annotate_stage:init" not in user_calls:
        _insert_init_stage(tree)
    ast.fix_missing_locations(tree)
    return tree


def starts_steps(tree: ast.AST) -> bool:
    """Whether the (annotated) script starts training steps anywhere: a loop the rewrite annotated, or the
    script's own start_step() calls."""
    return any(isinstance(node, ast.Call) and _called_name(node) == "start_step" for node in ast.walk(tree))


def numbers_own_steps(source: str, filename: str) -> bool:
    """Whether the script calls start_step()/start_eval_step() itself (then nothing else numbers its steps)."""
    return bool({"start_step", "start_eval_step"} & _user_calls(ast.parse(source, filename=filename)))


def _insert_init_stage(tree: ast.Module) -> None:
    """annotate_stage("init") at the top of main() when the script has a __main__ guard, else after imports."""
    has_guard = any(
        isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) and "__name__" in ast.unparse(n.test) for n in tree.body
    )
    for node in tree.body:
        if has_guard and isinstance(node, ast.FunctionDef) and node.name == "main":
            node.body.insert(0, ast.copy_location(_call_stmt("annotate_stage", "init"), node.body[0]))
            return
    index = 0
    for i, node in enumerate(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)) or (
            i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        ):
            index = i + 1
    anchor = tree.body[index] if index < len(tree.body) else (tree.body[-1] if tree.body else None)
    stmt = _call_stmt("annotate_stage", "init")
    if anchor is not None:
        ast.copy_location(stmt, anchor)
    tree.body.insert(index, stmt)
