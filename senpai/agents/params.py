"""The target's params file (`params.file` in senpai.yaml) in JSON, YAML or TOML, chosen by its suffix.

The file lives in a work copy that students and agents edit, so it is read as hostile data: at most
MAX_BYTES, YAML through `senpai.config.safe_yaml` (no aliases, tags or deep nesting), and the top
level must be a mapping with string keys. Every failure is a ConfigError that names the file and
what was wrong, never a raw JSONDecodeError. TOML is read with the standard library's tomllib; no
TOML writer is installed, so writing a TOML file raises ConfigError (a hypothesis with no params,
i.e. a code-only change, writes nothing and works with TOML too).
"""

import json
import tomllib
from pathlib import Path
from typing import Any

import yaml

from senpai.config import safe_yaml
from senpai.config.load import read_bounded
from senpai.errors import ConfigError

MAX_BYTES = 64 * 1024
FORMATS = {".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml"}


def params_format(path: Path | str) -> str:
    """`json`, `yaml` or `toml` from the suffix of `path`; raises ConfigError for any other suffix."""
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise ConfigError(f"{path}: a params file must end in {', '.join(FORMATS)} (the suffix picks the format)")
    return fmt


def parse_params(text: str, fmt: str, source: str) -> dict[str, Any]:
    """The mapping in `text` (format `fmt`); raises ConfigError naming `source` if it is not one."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        raise ConfigError(f"{source}: {size} bytes, a params file may hold at most {MAX_BYTES}")
    try:
        if fmt == "json":
            data = json.loads(text)
        elif fmt == "yaml":
            data = safe_yaml.load(text)
        else:
            data = tomllib.loads(text)
    except (ValueError, RecursionError, yaml.YAMLError) as e:  # JSONDecodeError and TOMLDecodeError are ValueErrors
        raise ConfigError(f"{source}: not valid {fmt.upper()}: {_first_line(e)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of param names to values, got {type(data).__name__}")
    if not all(isinstance(k, str) for k in data):
        raise ConfigError(f"{source}: every param name must be a string")
    return data


def read_params(path: Path) -> dict[str, Any]:
    """The params in the file at `path`. Raises ConfigError if it cannot be read (`read_bounded`:
    missing, a symlink, not a regular file, over MAX_BYTES) or holds no mapping."""
    fmt = params_format(path)
    return parse_params(read_bounded(path, MAX_BYTES), fmt, str(path))


def write_params(path: Path, params: dict[str, Any]) -> None:
    """Write `params` to `path` in the format its suffix names (JSON: sorted keys, 2-space indent).

    Raises ConfigError for TOML (no TOML writer is installed) or an unknown suffix.
    """
    fmt = params_format(path)
    if fmt == "toml":
        raise ConfigError(f"{path}: senpai can read a TOML params file but not write one; use JSON or YAML to search params")
    text = json.dumps(params, indent=2, sort_keys=True) + "\n" if fmt == "json" else safe_yaml.dump(params)
    path.write_text(text, encoding="utf-8")


def apply_params(path: Path, updates: dict[str, Any]) -> dict[str, Any]:
    """The file's params overlaid with `updates`, written back only if that changes a value (a
    code-only hypothesis leaves the file, and its formatting, alone).

    Raises ConfigError as `read_params` and `write_params` do.
    """
    params = read_params(path)
    merged = {**params, **updates}
    if merged != params:
        write_params(path, merged)
    return merged


def _first_line(e: BaseException) -> str:
    text = " ".join(line.strip() for line in str(e).splitlines() if line.strip())
    return (text or type(e).__name__)[:300]
