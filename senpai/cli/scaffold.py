"""What `senpai init` reads from an existing training repository, and the files it writes.

Detection is static: it reads the repository's files (Python with `ast`, never importing or running
them) to guess the train command (`train.py`/`main.py`/`run.py`, a Makefile `train` target, a
pyproject script), the primary metric and how the script reports it (`wandb.log({...})`, a printed
`name: value` line, or forms senpai does not read: `name=value`, printed JSON, a metrics file),
the params file (`params.*`, `config.*`, `hparams.*`) or else the argparse defaults, and whether the
script honours `SEED` and `SENPAI_ARTIFACT_DIR`. Every guess is a default the user confirms.
`advice()` turns what does not fit docs/target-contract.md into sentences with a snippet to add.
The files are rendered from the jinja2 templates in `senpai/cli/templates/`.
"""

import ast
import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import jinja2
import yaml

from senpai.agents.params import FORMATS, read_params
from senpai.cli.confine import inside
from senpai.cli.quantities import QUANTITIES, estimator
from senpai.config.target import CONFIG_FILE, LOWER_WORDS
from senpai.errors import ConfigError

SCRIPTS = ["train.py", "main.py", "run.py", "src/train.py", "scripts/train.py"]
PARAMS_FILES = [f"{stem}{ext}" for stem in ("params", "hparams", "hyperparams", "config") for ext in FORMATS]
DATA_DIRS = ["data", "datasets"]
EVALUATOR = "eval/evaluate.py"
MAX_SOURCE_BYTES = 1024 * 1024  # a larger script is not parsed
_NAME = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*([:=])\s*$")  # `accuracy: ` or `accuracy=` before the value
_KEY = re.compile(r"[A-Za-z0-9_./-]+")  # a key senpai reads from a `key: value` line (senpai.agents.measure.LINE)
_PREFERRED = ("val", "valid", "test", "dev", "eval")
_METRIC_WORDS = ("acc", "f1", "auc", "loss", "score", "r2", "rmse", "mse", "mae", "precision", "recall", "bpb", "ppl")


@dataclass(frozen=True)
class Report:
    """One way the script reports a number: `name`, and `how` (`stdout`: a `name: value` line;
    `wandb`: a key of `wandb.log`/`run.log`; `equals`: printed `name=value`; `json`: printed JSON;
    `file`: `json.dump` into a file). Only `stdout` and `wandb` are read by senpai."""

    name: str
    how: str


@dataclass(frozen=True)
class Detected:
    """What `detect` found in a repository; None/empty where it found nothing."""

    name: str
    train_cmd: str | None = None
    script: str | None = None  # the repo-relative Python file the train command runs
    source: str = ""  # that file's text
    reports: list[Report] = field(default_factory=list)
    params_file: str | None = None
    argparse_defaults: dict[str, Any] = field(default_factory=dict)
    framework: str | None = None  # "torch" or "sklearn", from the script's imports
    model: str | None = None  # "classifier" or "regressor", from the names it uses (`quantities.estimator`)
    data_dirs: list[str] = field(default_factory=list)

    @property
    def metric(self) -> str | None:
        """The most likely primary metric: one senpai can read, named like a validation metric."""
        if not self.reports:
            return None

        def rank(ir: tuple[int, Report]) -> tuple:
            i, r = ir
            low = r.name.lower()
            return (r.how in ("stdout", "wandb"), any(p in low for p in _PREFERRED), any(w in low for w in _METRIC_WORDS), i)

        return max(enumerate(self.reports), key=rank)[1].name

    def how(self, metric: str) -> str | None:
        """How the script reports `metric` (`stdout`/`wandb` preferred), None if it does not."""
        found = [r.how for r in self.reports if r.name == metric]
        return next((h for h in ("stdout", "wandb") if h in found), found[0] if found else None)


def guess_direction(metric: str) -> str:
    """`minimize` for losses and errors (by name), else `maximize`."""
    words = re.split(r"[^a-z0-9]+", metric.lower())
    return "minimize" if any(w in LOWER_WORDS or w.endswith("loss") for w in words) else "maximize"


def detect(repo: Path) -> Detected:
    """Read `repo` (a directory) and guess the target's parts; never runs or imports its code."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", repo.resolve().name).strip("-.") or "target"
    train_cmd, script = _train_command(repo)
    source = _read(repo, script) if script else ""
    tree = _parse(source)
    params_file = next((p for p in PARAMS_FILES if _regular(repo, p)), None)
    return Detected(
        name=name,
        train_cmd=train_cmd,
        script=script,
        source=source,
        reports=_reports(tree) if tree else [],
        params_file=params_file,
        argparse_defaults=_argparse_defaults(tree) if tree else {},
        framework=_framework(tree) if tree else None,
        model=estimator(tree),
        data_dirs=[d for d in DATA_DIRS if (repo / d).is_dir() and not (repo / d).is_symlink()],
    )


def _regular(repo: Path, rel: str) -> bool:
    """Whether repo-relative `rel` is a regular file of the repository: not outside it, and no
    symlink on the way (`confine.inside`: a link may point anywhere, /etc/passwd included)."""
    try:
        return inside(repo, rel).is_file()
    except ConfigError:
        return False


def _read(repo: Path, rel: str) -> str:
    """The text of repo-relative `rel`, "" unless it is `_regular` and at most MAX_SOURCE_BYTES."""
    path = repo / rel
    if not _regular(repo, rel) or path.stat().st_size > MAX_SOURCE_BYTES:
        return ""
    return path.read_text(errors="replace")


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source) if source else None
    except (SyntaxError, ValueError, RecursionError):
        return None


def _train_command(repo: Path) -> tuple[str | None, str | None]:
    """(command, the Python file it runs) from a train script, a Makefile `train` target or a pyproject script."""
    for script in SCRIPTS:
        if _regular(repo, script):
            return f"python {script}", script
    makefile = _read(repo, "Makefile")
    if target := re.search(r"^train\s*:", makefile, re.MULTILINE):
        ran = re.search(r"python[0-9.]*\s+(?:-u\s+)?([\w./-]+\.py)", makefile[target.end() :])
        return "make train", ran.group(1) if ran and _regular(repo, ran.group(1)) else None
    try:  # a hostile pyproject: `project = 1`, `scripts = "x"`, arrays nested 200,000 deep
        project = tomllib.loads(_read(repo, "pyproject.toml")).get("project")
        scripts = project.get("scripts") if isinstance(project, dict) else None
    except (tomllib.TOMLDecodeError, RecursionError):
        scripts = None
    for command, target in (scripts if isinstance(scripts, dict) else {}).items():
        if "train" in command and isinstance(target, str):
            module = target.split(":")[0].replace(".", "/")
            found = next((f"{d}{module}.py" for d in ("", "src/") if _regular(repo, f"{d}{module}.py")), None)
            return command, found
    return None, None


def _reports(tree: ast.Module) -> list[Report]:
    """Every metric-like name the script reports, in source order (see Report)."""
    calls = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.args), key=lambda n: (n.lineno, n.col_offset))
    out = []
    for node in calls:  # in source order: of equally likely names, the last reported wins
        func = node.func
        attr = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if attr == "log" and isinstance(node.args[0], ast.Dict):
            out += [Report(k, "wandb") for k in _keys(node.args[0])]
        elif attr == "dump" and isinstance(node.args[0], ast.Dict):
            out += [Report(k, "file") for k in _keys(node.args[0])]
        elif attr == "print":
            out += _printed(node)
    return out


def _keys(d: ast.Dict) -> list[str]:
    return [k.value for k in d.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]


def _printed(call: ast.Call) -> list[Report]:
    first = call.args[0]
    if isinstance(first, ast.Call) and getattr(first.func, "attr", "") == "dumps" and first.args:
        return [Report(k, "json") for k in _keys(first.args[0])] if isinstance(first.args[0], ast.Dict) else []
    if isinstance(first, ast.JoinedStr):  # f"name: {value}"
        prefix = first.values[0] if first.values else None
        text = prefix.value if isinstance(prefix, ast.Constant) and len(first.values) > 1 else None
    elif isinstance(first, ast.Constant) and isinstance(first.value, str):
        text = first.value if len(call.args) > 1 else None  # print("name:", value)
    elif isinstance(first, ast.BinOp) and isinstance(first.left, ast.Constant):  # "name: %f" % value
        text = str(first.left.value).split("%")[0]
    elif isinstance(first, ast.Call) and isinstance(first.func, ast.Attribute) and isinstance(first.func.value, ast.Constant):
        text = str(first.func.value.value).split("{")[0]  # "name: {}".format(value)
    else:
        text = None
    m = _NAME.match(text or "")
    if not m or not any(w in m.group(1).lower() for w in (*_METRIC_WORDS, *_PREFERRED)):
        return []
    return [Report(m.group(1), "stdout" if m.group(2) == ":" else "equals")]


def _argparse_defaults(tree: ast.Module) -> dict[str, Any]:
    """`--name` → literal default of every `add_argument` that has one (dest spelled with `_`)."""
    out = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument" and node.args):
            continue
        flag = node.args[0]
        default = next((k.value for k in node.keywords if k.arg == "default"), None)
        is_option = isinstance(flag, ast.Constant) and isinstance(flag.value, str) and flag.value.startswith("--")
        if not is_option or default is None:
            continue
        try:
            value = ast.literal_eval(default)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):  # `default={[]: 1}` raises TypeError
            continue
        if isinstance(value, bool | int | float | str):
            out[flag.value[2:].replace("-", "_")] = value
    return out


def _framework(tree: ast.Module) -> str | None:
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    return "torch" if {"torch", "lightning", "pytorch_lightning"} & names else "sklearn" if "sklearn" in names else None


# --- the search space and the files -----------------------------------------------------------


def space_for(params: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A first search space around the current values (to review): ints and positive floats from
    half/a tenth to twice/ten times the value, booleans both ways, strings as their one choice."""
    out: dict[str, dict[str, Any]] = {}
    for key, v in params.items():
        if isinstance(v, bool):
            out[key] = {"type": "categorical", "choices": [v, not v]}
        elif isinstance(v, int):
            low = max(1, v // 2) if v > 0 else v
            out[key] = {"type": "int", "low": low, "high": max(v * 2, low + 1)}
        elif isinstance(v, float) and math.isfinite(v) and v > 0:
            out[key] = {"type": "float", "low": float(f"{v / 10:.3g}"), "high": float(f"{v * 10:.3g}"), "log": True}
        elif isinstance(v, float) and math.isfinite(v):
            out[key] = {"type": "float", "low": min(v, 0.0), "high": max(v, 1.0)}
        elif isinstance(v, str):
            out[key] = {"type": "categorical", "choices": [v]}
    return out


@dataclass(frozen=True)
class Answers:
    """What the user confirmed (prompts or flags)."""

    train_cmd: str
    metric: str
    direction: str
    params_file: str
    quantity: str  # what the evaluator prints on the holdout: a key of `quantities.QUANTITIES`


def params_of(repo: Path, answers: Answers, found: Detected) -> tuple[dict[str, Any], bool]:
    """(the params, whether init must write the file): the file's if it exists, else the argparse defaults.
    Raises ConfigError if the path leaves the repository or passes a symlink (`confine.inside`)."""
    path = inside(repo, answers.params_file)
    if path.exists():
        return read_params(path), False
    return dict(found.argparse_defaults), True


def render(repo: Path, answers: Answers, found: Detected) -> dict[str, str]:
    """Repo-relative path → text of each file `senpai init` writes: senpai.yaml, program.md, the
    evaluator, and the params file when it is made from the argparse defaults (JSON or YAML).
    Raises ConfigError for a params file that does not parse, leaves the repository, passes a symlink
    or is one of init's own files, or for a stdout metric senpai could not read."""
    source = "stdout" if found.how(answers.metric) in (None, "stdout", "equals", "json", "file") else "wandb"
    if source == "stdout" and not _KEY.fullmatch(answers.metric):
        raise ConfigError(f"metric {answers.metric!r}: a metric printed as `name: value` is named with A-Z a-z 0-9 _ . / - only")
    params, new_params = params_of(repo, answers, found)
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("senpai.cli", "templates"),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # YAML, Markdown and Python, not HTML; values go through `yaml`/`code`
    )
    env.filters["yaml"] = _yaml
    env.filters["code"] = lambda v: "`" + str(v).replace("`", "'").replace("|", "\\|") + "`"  # a Markdown table cell
    scope = [answers.params_file, *([found.script] if found.script and found.script != answers.params_file else [])]
    ctx = {
        "name": found.name,
        "a": answers,
        "source": source,
        "space": space_for(params),
        "params": params,
        "evaluator": EVALUATOR,
        "q": QUANTITIES[answers.quantity],
        "protected": [*(f"{d}/" for d in found.data_dirs), f"{PurePosixPath(EVALUATOR).parent}/", CONFIG_FILE],
        "scope": scope,
        "script": found.script,
    }
    templates = {CONFIG_FILE: "senpai.yaml.j2", "program.md": "program.md.j2", EVALUATOR: "evaluate.py.j2"}
    if answers.params_file in templates:
        raise ConfigError(f"params file {answers.params_file}: senpai init writes that file itself; name another")
    files = {rel: env.get_template(name).render(ctx) for rel, name in templates.items()}
    if new_params:
        fmt = FORMATS.get(PurePosixPath(answers.params_file).suffix.lower())
        files[answers.params_file] = (
            json.dumps(params, indent=2) + "\n" if fmt == "json" else yaml.safe_dump(params, sort_keys=False)
        )
    return files


def _yaml(value: Any) -> str:
    """`value` as one line of YAML (flow style), safe to put after `key: `."""
    return yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10**6).removesuffix("\n...\n").strip()


# --- what does not fit the contract ------------------------------------------------------------


@dataclass(frozen=True)
class Advice:
    """One thing the script must change to fit docs/target-contract.md: `why`, and `snippet` to add."""

    why: str
    snippet: str


def advice(answers: Answers, found: Detected) -> list[Advice]:
    """What the train script lacks, each with a short snippet (empty: it fits as far as static reading can tell)."""
    out = []
    where = found.script or "the train script"
    how = found.how(answers.metric)
    if how not in ("stdout", "wandb"):
        said = {
            "equals": f"prints `{answers.metric}=...`",
            "json": "prints it as JSON",
            "file": "writes it to a file",
            None: "does not report it in a way init can see",
        }[how]
        out.append(
            Advice(
                f"senpai reads the metric as the last `{answers.metric}: value` line on stdout, and {where} {said}; "
                f"print it at the end (a variable named `{answers.metric}` below: use yours)",
                f'print(f"{answers.metric}: {{{_ident(answers.metric)}}}")',
            )
        )
    name = PurePosixPath(answers.params_file).name
    if name not in found.source:
        load = {"json": "json.load(f)", "yaml": "yaml.safe_load(f)", "toml": "tomllib.load(f)"}
        fmt = FORMATS.get(PurePosixPath(name).suffix.lower(), "json")
        opener = f'open("{answers.params_file}"' + (', "rb")' if fmt == "toml" else ")")
        imports = f"import {'tomllib' if fmt == 'toml' else fmt}\n"
        if found.argparse_defaults:
            snippet = f"{imports}with {opener} as f:\n    parser.set_defaults(**{load[fmt]})  # before parser.parse_args()"
        else:
            snippet = f"{imports}with {opener} as f:\n    params = {load[fmt]}"
        out.append(Advice(f"{where} does not read {answers.params_file}, the file the search runtime changes; load it", snippet))
    if "SEED" not in found.source:
        out.append(
            Advice(
                f"{where} does not read SEED, which the verifier sets per run; seed everything with it",
                'import os\nseed = int(os.environ.get("SEED", "0"))  # e.g. random_state=seed, torch.manual_seed(seed)',
            )
        )
    if "SENPAI_ARTIFACT_DIR" not in found.source:
        if found.framework == "torch":
            snippet = (
                "import os\nfrom safetensors.torch import save_file\n"
                'if os.environ.get("SENPAI_ARTIFACT_DIR"):\n'
                '    save_file(model.state_dict(), os.path.join(os.environ["SENPAI_ARTIFACT_DIR"], "model.safetensors"))'
            )
            why = (
                f"{where} does not write its model into $SENPAI_ARTIFACT_DIR for the verifier; save the weights "
                f"(never torch.save: a pickle), and change {EVALUATOR}, which scores scikit-learn models, to load them"
            )
        else:
            snippet = (
                "import os\nimport skops.io\n"
                'if os.environ.get("SENPAI_ARTIFACT_DIR"):\n'
                '    skops.io.dump(model, os.path.join(os.environ["SENPAI_ARTIFACT_DIR"], "model.skops"))'
            )
            why = f"{where} does not write its model into $SENPAI_ARTIFACT_DIR for the verifier; save it with skops (not pickle)"
        out.append(Advice(why + " (`model` below: your fitted model)", snippet))
    return out


def _ident(metric: str) -> str:
    ident = re.sub(r"\W+", "_", metric).strip("_") or "value"
    return ident if not ident[0].isdigit() else f"v_{ident}"
