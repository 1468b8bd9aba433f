"""Load a YAML file into a pydantic model, turning every failure into a ConfigError that names
the file, the field and what was expected."""

from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from senpai.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


def describe_validation_error(source: str, err: ValidationError, data: object = None) -> str:
    """Render a pydantic error as `source: field.path: message (got <input>)` lines.

    With the validated `data`, path parts that are not in it (the tags pydantic adds for
    discriminated unions, e.g. `fleet.kubernetes.images`) are left out of the path.
    """
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in _user_path(e["loc"], data)) or "<root>"
        got = e.get("input")
        shown = f" (got {got!r})" if got is not None and not isinstance(got, dict) else ""
        msg = e["msg"]
        if e["type"] == "union_tag_invalid":
            field = e["ctx"]["discriminator"].strip("'_()")  # "'type'" or "_backend()"
            msg = f"unknown {field} {e['ctx']['tag']!r}; expected one of {e['ctx']['expected_tags']}"
        lines.append(f"{source}: {loc}: {msg}{shown}")
    return "\n".join(lines)


def _user_path(loc: tuple, data: object) -> list:
    if data is None:
        return list(loc)
    path, node = [], data
    for part in loc:
        if isinstance(node, dict) and part in node:
            path.append(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            path.append(part)
            node = node[part]
        elif isinstance(node, dict) and isinstance(part, str) and part in {str(v) for v in node.values()}:
            continue  # a union tag (the value of the discriminator field), not a field of the file
        else:
            path.append(part)  # a missing field: name it
            node = None
    return path


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
        raise ConfigError(describe_validation_error(str(path), e, data)) from e
