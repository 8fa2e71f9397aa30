"""g5sim.ConfigError: the one error bad input causes (a config document or a simulate() argument)."""

from typing import Optional


class ConfigError(ValueError):
    """A config document or a simulate() argument is wrong.

    str(error) is one line naming the place and the field. The same facts as data:
      source  the file path, "<memory:NAME>" for YAML text, the name given to a dict
              document; None for a simulate() argument
      field   the dotted path of the field ("ddr.bandwidth_gb_per_s", "kv_lora_rank") or the
              simulate() keyword ("ctx", "tp"); None when the whole document is at fault
      line, column  1-based position in a file or YAML text; None for a dict or an argument
    """

    def __init__(self, message: str, *, source: Optional[str] = None, field: Optional[str] = None,
                 line: Optional[int] = None, column: Optional[int] = None) -> None:
        super().__init__(message)
        self.source = source
        self.field = field
        self.line = line
        self.column = column

    def __reduce__(self):  # keep the attributes through pickling (multiprocessing, dask)
        return (_rebuild, (str(self), self.source, self.field, self.line, self.column))


def _rebuild(message, source, field, line, column):
    return ConfigError(message, source=source, field=field, line=line, column=column)
