# The `attribution` module: everything a Python rule may import from Attribution (docs/rules.md,
# "Python rules"). Compiled into libattribution_rules_python; rules see a copy of its public
# names only. The loader (python_rules.cc) drives the underscore functions.
import ast as _ast
import csv as _csv
import io as _io
import json as _json
import types as _types

import _attribution_native as _native

PHASES = ("EARLY", "DEFAULT", "LATE", "FINAL", "POST_OUTCOME")
QUALITY_LEVELS = ("definitive", "probable", "ambiguous", "insufficient")

BudgetExceeded = _native.BudgetExceeded


class RuleError(Exception):
    """A rule's own declaration is wrong (unknown phase, bad fixture ...)."""


# ------------------------------------------------------------------ what a refiner returns

class Explain:
    """`cause` explains `effects` (symptoms or their indices): the effects are kept, marked
    explained by the cause through this rule."""
    __slots__ = ("cause", "effects")

    def __init__(self, cause, effects):
        self.cause = cause
        self.effects = tuple(effects) if isinstance(effects, (list, tuple)) else (effects,)


class Candidate:
    """A candidate cause the rule adds (a new symptom of role cause). Its times, counts and
    evidence lines are those of `based_on`; it explains `explains`."""
    __slots__ = ("id", "label", "domain", "outcome", "priority", "node", "gpu", "rank",
                 "based_on", "explains", "fields", "indirect", "role")

    def __init__(self, id, label, domain, outcome=None, priority=80, node="", gpu="", rank=None,
                 based_on=(), explains=(), fields=None, indirect=False):
        self.id, self.label, self.domain = id, label, domain
        self.outcome = outcome if outcome is not None else domain + ".unknown"
        self.priority, self.node, self.gpu, self.rank = priority, node, gpu, rank
        self.based_on, self.explains = tuple(based_on), tuple(explains)
        self.fields = dict(fields or {})
        self.indirect = indirect
        self.role = "cause"


class Evidence(Candidate):
    """Extra evidence: a context symptom that reaches the verdict's symptoms and timeline (it is
    never a root cause), e.g. "gpu-a01, gpu-a02 share NVLink domain nvl-3"."""
    __slots__ = ()

    def __init__(self, id, label, based_on=(), node="", fields=None, domain="unknown"):
        Candidate.__init__(self, id, label, domain, None, 0, node, "", None, based_on, (), fields)
        self.role = "context"


class CapQuality:
    """The verdict's quality is at most `level`; `reason` joins quality.reasons."""
    __slots__ = ("level", "reason")

    def __init__(self, level, reason):
        if level not in QUALITY_LEVELS:
            raise RuleError("CapQuality level must be one of %s, not %r" % (", ".join(QUALITY_LEVELS), level))
        self.level, self.reason = level, str(reason)


# ------------------------------------------------------------------ decorators

_loading = None  # the file being loaded: {"file", "data", "rules"}


def _register(kind, func, rule_id, extra, fixtures):
    if _loading is None:
        raise RuleError("rules are registered when their file is loaded, not later")
    if not isinstance(func, _types.FunctionType):
        raise RuleError("a rule decorator applies to a function")
    code = func.__code__
    if code.co_argcount != (1 if kind == "refiner" else 2):
        raise RuleError("%s '%s' must take %s" % (kind.replace("_", " "), func.__name__,
                        "one argument (the analysis view)" if kind == "refiner" else "two arguments (fields, line)"))
    if rule_id is None:
        stem = _loading["file"].rsplit("/", 1)[-1].rsplit(".", 1)[0]
        rule_id = "py.%s.%s" % (stem, func.__name__)
    fixtures = list(fixtures or ())
    for f in fixtures:
        if not isinstance(f, dict) or "expect" not in f:
            raise RuleError("%s: every fixture is a mapping with 'expect'" % rule_id)
    _loading["rules"].append({
        "kind": kind, "id": str(rule_id), "func": func, "line": code.co_firstlineno,
        "description": (func.__doc__ or "").strip().split("\n")[0], "fixtures": fixtures, **extra})
    return func


def refiner(phase="DEFAULT", id=None, fixtures=None):
    """Registers a refiner: a function of one argument, the read-only analysis view, called once
    per verdict in `phase`. It returns None, or one of / a list of Explain, Candidate, Evidence,
    CapQuality."""
    if phase not in PHASES:
        raise RuleError("unknown phase %r (%s)" % (phase, ", ".join(PHASES)))

    def wrap(func):
        return _register("refiner", func, id, {"phase": phase}, fixtures)
    return wrap


def field_hook(extractor, id=None, fixtures=None):
    """Registers a field hook on the YAML extractor `extractor`: a function of (fields, line)
    returning a dict of extra fields, called once per aggregated symptom that extractor produced
    (on its first matched line), never per input line."""
    if not isinstance(extractor, str) or not extractor:
        raise RuleError("field_hook needs the id of an extractor")

    def wrap(func):
        return _register("field_hook", func, id, {"extractor": extractor}, fixtures)
    return wrap


def _freeze(value):
    if isinstance(value, dict):
        return _types.MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, set):
        return frozenset(value)
    return value


def site_data(name):
    """The parsed content of a data file beside the rule (read once, when the rule file loads):
    *.csv → a tuple of rows (read-only mappings by header); *.json and *.data.yaml → the
    document (dicts read-only, lists as tuples). Only during loading (module level)."""
    if _loading is None:
        raise RuleError("site_data() is called at module level, when the rule file loads")
    data = _loading["data"]
    if name not in data:
        raise RuleError("no site data file %r beside %s (have: %s)" % (
            name, _loading["file"], ", ".join(sorted(data)) or "none"))
    kind, text = data[name]
    if kind == "csv":
        return _freeze([dict(row) for row in _csv.DictReader(_io.StringIO(text))])
    if kind == "json":
        return _freeze(_json.loads(text))
    return _freeze(text)  # yaml: parsed by the loader already


# ------------------------------------------------------------------ the loader's side

_ALLOWED_IMPORTS = frozenset({
    "attribution", "math", "re", "collections", "itertools", "functools", "operator", "string",
    "bisect", "heapq", "fnmatch", "ipaddress", "statistics", "textwrap", "json", "fractions",
    "dataclasses", "enum", "typing"})
_FRAME_ATTRIBUTES = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "ag_frame", "ag_code",
    "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "f_trace", "tb_frame", "tb_next",
    "mro", "format_map"})


def _check_source(source, filename):
    """Raises SyntaxError, or returns [(line, column, message)] for what rules may not do."""
    tree = _ast.parse(source, filename)
    problems = []

    def bad(node, message):
        problems.append((node.lineno, node.col_offset + 1, message))

    for node in _ast.walk(tree):
        if isinstance(node, _ast.Attribute):
            if node.attr.startswith("__") or node.attr in _FRAME_ATTRIBUTES or node.attr.startswith("co_"):
                bad(node, "attribute '%s' is not available to rules" % node.attr)
        elif isinstance(node, _ast.Name):
            if node.id.startswith("__"):
                bad(node, "name '%s' is not available to rules" % node.id)
        elif isinstance(node, (_ast.Global, _ast.Nonlocal)):
            bad(node, "rules keep no state between calls: '%s' is not allowed" %
                ("global" if isinstance(node, _ast.Global) else "nonlocal"))
        elif isinstance(node, _ast.ExceptHandler):
            if node.type is None:
                bad(node, "a bare 'except:' would swallow the rule's time and memory budget; name the exceptions")
            elif isinstance(node.type, _ast.Name) and node.type.id in ("BaseException", "BudgetExceeded"):
                bad(node, "catching %s is not allowed (it carries the rule's budget)" % node.type.id)
        elif isinstance(node, _ast.Import):
            for alias in node.names:
                if alias.name not in _ALLOWED_IMPORTS:
                    bad(node, "import of '%s' is not allowed (rules may import: %s)" % (
                        alias.name, ", ".join(sorted(_ALLOWED_IMPORTS))))
        elif isinstance(node, _ast.ImportFrom):
            if node.level or node.module not in _ALLOWED_IMPORTS:
                bad(node, "import from '%s' is not allowed (rules may import: %s)" % (
                    "." * node.level + (node.module or ""), ", ".join(sorted(_ALLOWED_IMPORTS))))
        elif isinstance(node, (_ast.AsyncFunctionDef, _ast.Await)):
            bad(node, "async code is not available to rules")
    return sorted(problems)


def _public_copy(module):
    """A module object with `module`'s public names that are not modules themselves."""
    copy = _types.ModuleType(module.__name__)
    for key, value in vars(module).items():
        if not key.startswith("_") and not isinstance(value, _types.ModuleType):
            setattr(copy, key, value)
    return copy


def _guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
    # A fresh copy per import: what one rule sets on a module never reaches another rule.
    if level or name not in _ALLOWED_IMPORTS:
        raise ImportError("import of '%s' is not allowed in rules" % name)
    import sys
    return _public_copy(sys.modules["attribution"] if name == "attribution" else __import__(name))


_SAFE_BUILTINS = (
    "abs", "all", "any", "bool", "bytes", "callable", "chr", "dict", "divmod", "enumerate", "filter",
    "float", "format", "frozenset", "hasattr", "int", "isinstance", "issubclass", "iter", "len", "list",
    "map", "max", "min", "next", "object", "ord", "pow", "property", "range", "repr", "reversed", "round",
    "set", "slice", "sorted", "staticmethod", "classmethod", "str", "sum", "super", "tuple", "zip",
    "True", "False", "None", "NotImplemented", "Ellipsis",
    "Exception", "ArithmeticError", "AssertionError", "AttributeError", "IndexError", "KeyError",
    "LookupError", "NotImplementedError", "OverflowError", "RuntimeError", "StopIteration", "TypeError",
    "ValueError", "ZeroDivisionError", "MemoryError", "RecursionError", "UnicodeError", "ImportError",
    "__build_class__")


def _restricted_builtins():
    import builtins
    b = {name: getattr(builtins, name) for name in _SAFE_BUILTINS}
    b["__import__"] = _guarded_import
    return b


def _begin(filename, data):
    """Starts loading one rule file; `data` maps a data file's name to (kind, text or value)."""
    global _loading
    _loading = {"file": filename, "data": data, "rules": []}
    return {"__builtins__": _restricted_builtins(), "__name__": "rules." + filename.rsplit("/", 1)[-1][:-3]}


def _end(namespace):
    """Ends loading: freezes the module's state and returns what it registered."""
    global _loading
    done, _loading = _loading, None
    if namespace is not None:
        for key, value in list(namespace.items()):
            if not key.startswith("__") and isinstance(value, (dict, list, set)):
                namespace[key] = _freeze(value)
    return done["rules"] if done else []
