"""The report tables (g5sim/report_fields.hpp, g5sim.reports()): the columns a DataFrame takes from
them, so that a frame's columns and the reports' declared fields cannot drift apart."""

from typing import Any, Dict, List

from ._g5sim import reports as _reports

_BY_NAME: Dict[str, Dict[str, Any]] = {r["name"]: r for r in _reports()}


def report(name: str) -> Dict[str, Any]:
    """The report named `name` (a KeyError names the reports there are)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no report '{name}' (there are: {', '.join(sorted(_BY_NAME))})") from None


def columns(name: str) -> List[str]:
    """A report's top-level fields in order: a frame's or a CSV's columns."""
    return [f["path"] for f in report(name)["fields"] if "." not in f["path"] and "[" not in f["path"]]
