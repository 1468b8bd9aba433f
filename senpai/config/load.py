"""Load a YAML file into a pydantic model, turning every failure into a ConfigError that names
the file, the field and what was expected."""

from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from senpai.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


def describe_validation_error(source: str, err: ValidationError) -> str:
    """Render a pydantic error as `source: field.path: message (got <input>)` lines."""
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "<root>"
        got = e.get("input")
        shown = f" (got {got!r})" if got is not None and not isinstance(got, dict) else ""
        lines.append(f"{source}: {loc}: {e['msg']}{shown}")
    return "\n".join(lines)


def load_yaml_model(path: Path | str, model: type[M]) -> M:
    """Parse the YAML file at `path` into `model`.

    Raises ConfigError (exit 2) if the file is missing, is not YAML, is not a mapping, or fails
    the model's validation; the message names the file and each bad field.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from e
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from e
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise ConfigError(describe_validation_error(str(path), e)) from e
