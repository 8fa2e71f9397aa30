"""The knobs of serve(), search(), sensitivity() and solve(), read from the C++ tables
(g5sim/knobs.hpp, g5sim/design.hpp): each keyword's type, range, default and help come from its
row, and its value goes to the library as the text its flag would take. Nothing here names a knob:
a knob added to a table is a keyword of every function that takes it."""

import inspect
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ._errors import ConfigError
from ._g5sim import knobs as _knob_table

KNOBS: List[Dict[str, Any]] = _knob_table()


def taking(use: str) -> List[Dict[str, Any]]:
    """The knobs a function takes: use is serve, serve_item, search, search_list, sweep_axis,
    sensitivity or solve."""
    return [k for k in KNOBS if k[use]]


def by_keyword(use: str) -> Dict[str, Dict[str, Any]]:
    return {k["keyword"]: k for k in taking(use)}


def _error(knob: Dict[str, Any], message: str) -> ConfigError:
    return ConfigError(f"{knob['keyword']}: {message}", field=knob["keyword"])


def _whole(knob: Dict[str, Any], value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _error(knob, f"expected a whole number, got {value!r}")
    return str(value)


def _one(knob: Dict[str, Any], value: Any) -> str:
    """One value as its flag takes it."""
    kind = knob["type"]
    if kind == "flag":
        if not isinstance(value, bool):
            raise _error(knob, f"expected True or False, got {value!r}")
        return "true" if value else "false"
    if kind == "count":
        return _whole(knob, value)
    if kind == "decimal":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _error(knob, f"expected a number, got {value!r}")
        return str(value) if isinstance(value, int) else repr(value)
    if kind == "path":
        if not isinstance(value, (str, os.PathLike)) or isinstance(value, bool):
            raise _error(knob, f"expected a path, got {value!r}")
        return os.fspath(value)
    # A text: a pair (A, B) as A:B, a list of values comma separated, a number as written.
    if knob["pair"] and isinstance(value, (tuple, list)) and len(value) == 2:
        return f"{_whole(knob, value[0])}:{_whole(knob, value[1])}"
    if isinstance(value, (tuple, list)):
        return ",".join(_one(dict(knob, pair=False), v) for v in value)
    if isinstance(value, bool):
        raise _error(knob, f"expected a string, got {value!r}")
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (int, str)):
        return str(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise _error(knob, f"expected a string, got {type(value).__name__}")


def text_of(knob: Dict[str, Any], value: Any, as_list: bool = False) -> str:
    """`value` as the knob's flag would take it. A list knob (and a search list) takes a list or
    tuple of values, or the text itself; a pair knob takes (A, B) as A:B."""
    if knob["type"] == "list" or as_list:
        if isinstance(value, (str, os.PathLike)):
            return os.fspath(value)
        pair = knob["pair"] and isinstance(value, tuple) and len(value) == 2
        if isinstance(value, (list, tuple)) and not pair:
            item = dict(knob, type="text") if knob["type"] == "list" else knob
            return ",".join(_one(item, v) for v in value)
        return _one(dict(knob, type="text") if knob["type"] == "list" else knob, value)
    return _one(knob, value)


def items_of(use: str, keywords: Dict[str, Any], lists: bool = False) -> Tuple[List[Tuple[str, str]], Dict[str, Any]]:
    """(the knob items of `keywords` in table order, the keywords left): None is "not given". With
    lists, the knobs a search lists are items too (micro_batches and the formats, run options a
    search varies as dimensions of its grid)."""
    table = [k for k in KNOBS if k[use] or (lists and k["search_list"])]
    wanted = {k["keyword"]: k for k in table}
    items = []
    for knob in table:
        value = keywords.get(knob["keyword"])
        if value is None:
            continue
        items.append((knob["name"], text_of(knob, value, as_list=lists and knob["search_list"])))
    rest = {name: value for name, value in keywords.items() if name not in wanted}
    return items, rest


def refuse_unknown(function: str, use: str, rest: Dict[str, Any], options: Sequence[str]) -> None:
    """A keyword that is neither a knob `use` takes nor one of the step `options` is an error naming
    it and the function, with the closest keyword."""
    import difflib

    knobs = [k["keyword"] for k in taking(use)]
    for name in rest:
        if name in options:
            continue
        near = difflib.get_close_matches(name, knobs + list(options), n=1)
        hint = f" (did you mean {near[0]}?)" if near else ""
        raise ConfigError(f"{name}: not a {function}() keyword{hint}: its knobs are {sorted(knobs)}, and the run "
                          f"options of its steps", field=name)


def signature(function: Any, use: str, leading: Sequence[inspect.Parameter], trailing: Sequence[inspect.Parameter]):
    """`function`'s signature with a keyword per knob the table gives `use` (default None)."""
    knobs = [inspect.Parameter(k["keyword"], inspect.Parameter.KEYWORD_ONLY, default=None) for k in taking(use)]
    params = list(leading) + [p for p in knobs if p.name not in {q.name for q in list(leading) + list(trailing)}]
    function.__signature__ = inspect.Signature(params + list(trailing))


def docs(use: str, search_lists: bool = False) -> str:
    """The keywords' lines for a docstring: `keyword` (its unit) doc [default]."""
    lines = []
    for k in taking(use):
        default = k["default_doc"] or k["default"]
        unit = f" ({k['unit']})" if k["unit"] else ""
        listed = "; a list (4,8,16 or 'LO:HI')" if search_lists and k["search_list"] else ""
        lines.append(f"    {k['keyword']}{unit}: {k['doc']}{listed}" + (f" [default: {default}]" if default else ""))
    return "\n".join(lines)


def optional_keyword(name: str, default: Optional[Any] = None) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
