"""YAML with limits: every YAML text senpai reads goes through `load` (ledger blocks from the forge,
senpai.yaml from a checkout or a commit, the harness config, a params file).

`dump` writes the subset `load` accepts: no anchors or aliases, strings that carry a line separator
YAML would fold (CR, U+0085, U+2028, U+2029) or a control character double-quoted and escaped, so
`load(dump(x)) == x` for every block value.  `load` refuses what senpai never writes: anchors and
aliases (an alias bomb of a few hundred bytes expands to megabytes), explicit tags (`!!float x`,
`!!timestamp x`: their constructors raise ValueError and the like, not YAMLError), merge keys, duplicate keys,
nesting deeper than MAX_DEPTH, integers longer than MAX_DIGITS characters (Python refuses
4,301+ digits with ValueError) and texts over MAX_BYTES.  It resolves no timestamps (senpai writes
none, and `2001-02-30` would raise ValueError): a date-shaped plain scalar stays a string.  Any
other exception a constructor raises becomes ConstructError, so `load` raises only yaml.YAMLError.

It uses libyaml (CSafeLoader) when PyYAML has it, ~20x faster than the pure-Python loader, and
keeps every limit: depth and anchors are checked on the event stream (libyaml's parser keeps its
own stack, no recursion) before any node is composed, and the constructor checks (integers,
duplicate and merge keys) run in Python on top of either loader.
"""

import unicodedata
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError

MAX_BYTES = 64 * 1024  # default, per block; an evidence is bounded under it (blocks.Evidence keeps MAX_METRICS numbers)
MAX_DEPTH = 20  # collections nested; senpai's blocks nest 3 deep
MAX_DIGITS = 100  # characters of one integer scalar
_FOLDED = frozenset("\r\x85\u2028\u2029\ufeff")
_BASE: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class LimitError(yaml.YAMLError):
    """A YAML text that breaks one of the limits (its message says which, with no value in it)."""


class ConstructError(yaml.YAMLError):
    """A YAML text whose value could not be built (a constructor raised; the message is bounded)."""


class _Loader(_BASE):
    # no timestamp resolver: a date-shaped plain scalar is a string (see the module docstring)
    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in _BASE.yaml_implicit_resolvers.items()
    }

    def construct_mapping(self, node, deep=False):
        seen: set = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise ConstructorError(None, None, "merge keys (<<) are not allowed", key_node.start_mark)
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:
                raise ConstructorError(None, None, "a mapping key must be a scalar", key_node.start_mark) from None
            if duplicate:
                raise ConstructorError(None, None, f"duplicate key {_excerpt(str(key), 40)}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def _int(loader: _Loader, node: yaml.ScalarNode) -> int:
    if len(node.value) > MAX_DIGITS:
        raise ConstructorError(None, None, f"an integer of {len(node.value)} characters (at most {MAX_DIGITS})", node.start_mark)
    return loader.construct_yaml_int(node)


_Loader.add_constructor("tag:yaml.org,2002:int", _int)


def _check_events(text: str) -> None:
    """Refuse anchors, aliases, explicit tags and deep nesting before anything is composed."""
    depth = 0
    for event in yaml.parse(text, Loader=_BASE):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise ComposerError(None, None, "anchors and aliases are not allowed", event.start_mark)
        if getattr(event, "tag", None) is not None:
            raise ComposerError(None, None, "explicit tags are not allowed", event.start_mark)
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise ComposerError(None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _excerpt(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def load(text: str, max_bytes: int = MAX_BYTES) -> Any:
    """The value of one YAML document `text` of at most `max_bytes` bytes (UTF-8).

    Raises yaml.YAMLError and nothing else (LimitError for a text over `max_bytes`, ConstructError
    when a constructor raised); its message holds PyYAML's bounded snippet around the problem or
    a bounded excerpt of the constructor's error, never the parsed value.
    """
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise LimitError(f"{size} bytes (at most {max_bytes})")
    try:
        _check_events(text)
        return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass
    except yaml.YAMLError:
        raise
    except (ValueError, LookupError, AttributeError, TypeError, OverflowError, RecursionError) as e:
        raise ConstructError(f"{type(e).__name__}: {_excerpt(str(e), 200)}") from None


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if any(ch in _FOLDED or (ch != "\n" and unicodedata.category(ch)[0] == "C") for ch in value):
        style = '"'  # escaped: YAML would read these back as line breaks or refuse them raw
    elif "\n" in value:
        style = "|"  # readable log tails; the emitter falls back to quotes where a block cannot hold it
    else:
        style = None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump(data: Any) -> str:
    """`data` as block-style YAML that `load` reads back equal (keys in insertion order)."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100)
