"""What `senpai init` reads from an existing training repository, and the files it writes.

Detection is static: it reads the repository's files (Python with `ast`, never importing or running
them) to guess the train command (`senpai.cli.scripts`: a conventional name, a Makefile `train`
target, a pyproject script, else the `.py` that trains; or the script `--train-cmd` runs), the
primary metric and how the script reports it (`wandb.log({...})`, a printed `name: value` line, or
forms senpai does not read: `name=value`, either inside a longer line, printed JSON, a metrics
file), the params file (`params.*`, `config.*`, `hparams.*`) or else the argparse defaults (the
search space around them: `senpai.cli.space`), and whether the script honours `SEED` and
`SENPAI_ARTIFACT_DIR`. Every guess is a default the user confirms.
`advice()` turns what does not fit docs/target-contract.md into sentences with a snippet to add.
The files are rendered from the jinja2 templates in `senpai/cli/templates/`; the evaluator loads
what the script saves: skops for scikit-learn, safetensors for a network (`senpai.cli.weights`).
"""

import ast
import json
import re
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

import jinja2
import yaml

from senpai.agents.params import FORMATS, read_params
from senpai.cli import scripts
from senpai.cli.confine import inside
from senpai.cli.quantities import QUANTITIES, estimator
from senpai.cli.run_length import Endless, periodic_calls, unbounded
from senpai.cli.space import space_for
from senpai.cli.weights import BODIES, FRAMEWORKS, STUB, local_modules, model_file
from senpai.config.target import CONFIG_FILE, LOWER_WORDS
from senpai.errors import ConfigError

PARAMS_FILES = [f"{stem}{ext}" for stem in ("params", "hparams", "hyperparams", "config") for ext in FORMATS]
DATA_DIRS = ["data", "datasets"]
EVALUATOR = "eval/evaluate.py"
MAX_SOURCE_BYTES = 1024 * 1024  # a larger script is not parsed
# `name: ` or `name=` (a name of one or two words: `test loss: `) right before a printed value
_NAMED = re.compile(r"([A-Za-z][A-Za-z0-9_./-]*(?: [A-Za-z][A-Za-z0-9_./-]*)?)\s*([:=])\s*$")
_KEY = re.compile(r"[A-Za-z0-9_./-]+")  # a key senpai reads from a `key: value` line (senpai.job.measure.LINE)
_PREFERRED = ("val", "valid", "test", "dev", "eval")
READ = ("stdout", "wandb", "equals", "inline", "json")  # how a script may report what senpai reads as it is
_METRIC_WORDS = ("acc", "f1", "auc", "loss", "score", "r2", "rmse", "mse", "mae", "precision", "recall", "bpb", "ppl")


@dataclass(frozen=True)
class Report:
    """One way the script reports a number: `name`, `how` (`stdout`: a `name: value` line;
    `wandb`: a key of `wandb.log`/`run.log`; `equals`: a printed line `name=value`; `inline`:
    `name: value` or `name=value` inside a longer printed line; `json`: printed JSON; `file`:
    `json.dump` into a file), and `expr`, the source of the value (None for a literal). senpai
    reads all but `file` as they are (`senpai.job.measure`); for a file init gives a line to print."""

    name: str
    how: str
    expr: str | None = None
    every: str | None = None  # the N of the loop that prints it only every N passes (`run_length.periodic_calls`)


@dataclass(frozen=True)
class Detected:
    """What `detect` found in a repository; None/empty where it found nothing."""

    name: str
    train_cmd: str | None = None
    script: str | None = None  # the repo-relative Python file the train command runs
    others: list[str] = field(default_factory=list)  # other scripts that rank as high as `script`: ask
    source: str = ""  # that file's text
    reports: list[Report] = field(default_factory=list)
    params_file: str | None = None
    argparse_defaults: dict[str, Any] = field(default_factory=dict)
    framework: str | None = None  # "torch", "numpy" (safetensors.numpy weights) or "sklearn", from the script's imports
    model_file: str | None = None  # torch/numpy: the local module the script imports that defines the network (`weights`)
    model: str | None = None  # "classifier" or "regressor", from the names it uses (`quantities.estimator`)
    data_dirs: list[str] = field(default_factory=list)
    endless: list[Endless] = field(default_factory=list)  # flags that set how long it trains, "no limit" by default

    @property
    def metric(self) -> str | None:
        """The most likely primary metric: one named like a validation metric (a training loss is
        never the primary, however it is printed), then one senpai can read as it is."""
        if not self.reports:
            return None

        def rank(ir: tuple[int, Report]) -> tuple:
            i, r = ir
            low = r.name.lower()
            return (any(p in low for p in _PREFERRED), r.how in READ, any(w in low for w in _METRIC_WORDS), i)

        return max(enumerate(self.reports), key=rank)[1].name

    def every(self, metric: str) -> str | None:
        """The N of the loop that alone reports `metric` (once every N passes), None if it is also
        reported elsewhere or not at all."""
        said = {r.every for r in self.reports if r.name == metric}
        return next(iter(said)) if len(said) == 1 else None

    def how(self, metric: str) -> str | None:
        """How the script reports `metric` (the first of READ it uses), None if it does not."""
        found = [r.how for r in self.reports if r.name == metric]
        return next((h for h in READ if h in found), found[0] if found else None)


def guess_direction(metric: str) -> str:
    """`minimize` for losses and errors (by name), else `maximize`."""
    words = re.split(r"[^a-z0-9]+", metric.lower())
    return "minimize" if any(w in LOWER_WORDS or w.endswith("loss") for w in words) else "maximize"


def detect(repo: Path, train_cmd: str | None = None) -> Detected:
    """Read `repo` (a directory) and guess the target's parts; never runs or imports its code.
    With `train_cmd` (the user's), the script read is the one that command runs (`scripts.script_of`)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", repo.resolve().name).strip("-.") or "target"
    regular, read = partial(_regular, repo), partial(_read, repo)
    found = scripts.find(repo, regular, read)
    if train_cmd:  # the user's command: the script it runs (`make train`: the one the Makefile runs, if detected)
        ran = scripts.script_of(train_cmd, regular) or (found.script if found.command == train_cmd else None)
        found = scripts.Found(train_cmd, ran)
    source = read(found.script) if found.script else ""
    tree = _parse(source)
    framework = _framework(tree) if tree else None
    if framework is None:  # the imports of the local modules it imports: torch only in model.py
        modules = (_parse(read(m)) for m in local_modules(found.script, tree, regular))
        framework = next((f for m in modules if m and (f := _framework(m))), None)
    network = model_file(found.script, tree, regular, read) if framework in FRAMEWORKS else None
    params_file = next((p for p in PARAMS_FILES if _regular(repo, p)), None)
    return Detected(
        name=name,
        train_cmd=found.command,
        script=found.script,
        others=found.others,
        source=source,
        reports=_reports(tree) if tree else [],
        params_file=params_file,
        argparse_defaults=_argparse_defaults(tree) if tree else {},
        endless=[Endless(f, d, v) for f, d, v in _arguments(tree) if unbounded(d, v)] if tree else [],
        framework=framework,
        model_file=network,
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


def _reports(tree: ast.Module) -> list[Report]:
    """Every metric-like name the script reports, in source order (see Report)."""
    calls = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.args), key=lambda n: (n.lineno, n.col_offset))
    dicts, periodic = _dict_literals(tree), periodic_calls(tree)
    out = []
    for node in calls:  # in source order: of equally likely names, the last reported wins
        func = node.func
        attr = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if attr == "log":
            said = [Report(k, "wandb", _shown(v)) for k, v in _items(node.args[0], dicts)]
        elif attr == "dump":
            said = [Report(k, "file", _shown(v)) for k, v in _items(node.args[0], dicts)]
        else:
            said = _printed(node, dicts) if attr == "print" else []
        out += [replace(r, every=periodic.get(node)) for r in said]
    return out


def _dict_literals(tree: ast.Module) -> dict[str, ast.expr]:
    """Variable name -> the dict it was last assigned (`{...}` or `dict(...)`), for `print(json.dumps(metrics))`."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if _items(node.value, {}):
                out[node.targets[0].id] = node.value
    return out


def _items(node: ast.expr, dicts: dict[str, ast.expr]) -> list[tuple[str, ast.expr]]:
    """(string key, value) of a dict display, a `dict(k=v)` call, or a variable assigned one of them."""
    if isinstance(node, ast.Name) and node.id in dicts:
        node = dicts[node.id]
    if isinstance(node, ast.Dict):
        pairs = zip(node.keys, node.values, strict=True)  # a `**spread` key is None
        return [(k.value, v) for k, v in pairs if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return [(k.arg, k.value) for k in node.keywords if k.arg]
    return []


def _shown(value: ast.expr) -> str | None:
    """The source of a reported value, for a snippet that prints it; None for a literal."""
    return None if isinstance(value, ast.Constant) else ast.unparse(value)


def _pieces(arg: ast.expr) -> list[str | ast.expr]:
    """One printed argument as its literal text and the values it formats, in order: an f-string,
    `"..." % values` or `"...".format(values)`; any other expression is one value."""
    if isinstance(arg, ast.JoinedStr):
        return [v.value for v in arg.values if isinstance(v, ast.Constant | ast.FormattedValue)]  # text, or the value's expr
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return [arg.value]
    if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Mod) and isinstance(arg.left, ast.Constant):
        values = arg.right.elts if isinstance(arg.right, ast.Tuple) else [arg.right]
        return _fill(re.split(r"%[-+ #0-9.*]*[a-zA-Z]", str(arg.left.value)), values)
    if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "format":
        if isinstance(arg.func.value, ast.Constant) and isinstance(arg.func.value.value, str):
            return _fill(re.split(r"\{[^{}]*\}", arg.func.value.value), arg.args)
    return [arg]


def _fill(texts: list[str], values: list[ast.expr]) -> list[str | ast.expr]:
    out: list[str | ast.expr] = []
    for i, text in enumerate(texts):
        out += [text] if i == len(texts) - 1 else [text, values[i] if i < len(values) else ast.Constant(None)]
    return out


def _line(call: ast.Call) -> list[str | ast.expr]:
    """What `print(...)` writes: text and values alternating, adjacent texts joined (args are separated by a space)."""
    out: list[str | ast.expr] = []
    for i, arg in enumerate(call.args):
        for piece in ([" "] if i else []) + _pieces(arg):
            if isinstance(piece, str) and out and isinstance(out[-1], str):
                out[-1] += piece
            else:
                out.append(piece)
    return out


def _printed(call: ast.Call, dicts: dict[str, ast.expr]) -> list[Report]:
    """What one `print(...)` reports: JSON keys (`print(json.dumps({...}))`), and each value printed
    after `name: ` or `name=` anywhere in the line (`step 300 | test loss: 2.27` reports `test_loss`)."""
    first = call.args[0]
    if isinstance(first, ast.Call) and getattr(first.func, "attr", "") == "dumps" and first.args:
        return [Report(k, "json", _shown(v)) for k, v in _items(first.args[0], dicts)]
    line = _line(call)
    out = []
    for i, piece in enumerate(line):
        before = line[i - 1] if i else ""
        if isinstance(piece, str) or not isinstance(before, str) or not (m := _NAMED.search(before)):
            continue
        said, sep = m.group(1), m.group(2)
        if not any(w in said.lower() for w in (*_METRIC_WORDS, *_PREFERRED)):
            continue
        whole = i == 1 and before.strip() == said + sep and all(p == "" or p.isspace() for p in line[2:] if isinstance(p, str))
        whole = whole and len(line) <= 3 and " " not in said
        how = "stdout" if whole and sep == ":" else "equals" if whole else "inline"
        out.append(Report(re.sub(r"[^A-Za-z0-9_./-]+", "_", said), how, _shown(piece)))
    return out


def _argparse_defaults(tree: ast.Module) -> dict[str, Any]:
    """The dest (`dest=`, else the long flag spelled with `_`) → literal default of every `add_argument` that has one."""
    return {dest: value for _, dest, value in _arguments(tree) if isinstance(value, bool | int | float | str)}


def _arguments(tree: ast.Module) -> list[tuple[tuple[str, ...], str, Any]]:
    """(the flags, the dest, the literal default, None included) of every `add_argument` with a long flag and a `default=`."""
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument" and node.args):
            continue
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        long = next((f for f in flags if f.startswith("--")), None)  # `add_argument("-o", "--work-dir")`
        dest = next((k.value.value for k in node.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)), None)
        default = next((k.value for k in node.keywords if k.arg == "default"), None)
        if long is None or default is None:
            continue
        try:
            value = ast.literal_eval(default)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):  # `default={[]: 1}` raises TypeError
            continue
        out.append((tuple(flags), dest if isinstance(dest, str) else long[2:].replace("-", "_"), value))
    return out


def _framework(tree: ast.Module) -> str | None:
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    if {"torch", "lightning", "pytorch_lightning"} & names:
        return "torch"
    return "numpy" if "safetensors" in names else "sklearn" if "sklearn" in names else None


# --- the search space and the files -----------------------------------------------------------


@dataclass(frozen=True)
class Answers:
    """What the user confirmed (prompts or flags)."""

    train_cmd: str
    metric: str
    direction: str
    params_file: str
    quantity: str  # what the evaluator prints on the holdout: a key of `quantities.QUANTITIES`
    python: str | None = None  # holdout.python: the interpreter of the score step (None: senpai's)


def params_of(repo: Path, answers: Answers, found: Detected) -> tuple[dict[str, Any], bool]:
    """(the params, whether init must write the file): the file's if it exists, else the argparse defaults.
    Raises ConfigError if the path leaves the repository or passes a symlink (`confine.inside`)."""
    path = inside(repo, answers.params_file)
    if path.exists():
        try:
            return read_params(path), False
        except ConfigError as e:
            raise ConfigError(f"{e}; fix it, or name another params file with --params-file") from None
    return dict(found.argparse_defaults), True


def render_skipped(repo: Path, answers: Answers, found: Detected) -> dict[str, str]:
    """The params `render` leaves out of the search space: key -> why (`space.left_out`)."""
    return _searched(repo, answers, found)[3]


def _searched(repo: Path, answers: Answers, found: Detected) -> tuple[dict[str, Any], bool, dict[str, Any], dict[str, str]]:
    """(the params, whether init writes their file, the search space, what is left out: key -> why).
    The argparse defaults left out are listed too: a params file init wrote before holds only the
    knobs, and a re-run must render the same senpai.yaml."""
    params, new = params_of(repo, answers, found)
    space, skipped = space_for(params)
    skipped |= {k: why for k, why in space_for(found.argparse_defaults)[1].items() if k not in space and k not in skipped}
    return params, new, space, skipped


def render(repo: Path, answers: Answers, found: Detected) -> dict[str, str]:
    """Repo-relative path → text of each file `senpai init` writes: senpai.yaml, program.md, the
    evaluator, and the params file when it is made from the argparse defaults (JSON or YAML).
    Raises ConfigError for a params file that does not parse, leaves the repository, passes a symlink
    or is one of init's own files, or for a stdout metric senpai could not read."""
    source = "wandb" if found.how(answers.metric) == "wandb" else "stdout"
    if source == "stdout" and not _KEY.fullmatch(answers.metric):
        raise ConfigError(
            f"metric {answers.metric!r}: a metric printed as `name: value` is named with A-Z a-z 0-9 _ . / - only; "
            f"pass --metric {_ident(answers.metric)} and print it under that name"
        )
    params, new_params, space, skipped = _searched(repo, answers, found)
    if not space:
        raise ConfigError(_no_space(answers, found, params, skipped, new_params))
    if new_params:  # the file the search changes holds the knobs, not the seed or the paths
        params = {k: params[k] for k in space}
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("senpai.cli", "templates"),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # YAML, Markdown and Python, not HTML; values go through `yaml`/`code`
    )
    env.filters["yaml"] = _yaml
    env.filters["code"] = lambda v: "`" + str(v).replace("`", "'").replace("|", "\\|") + "`"  # a Markdown table cell
    scope = [answers.params_file, *([found.script] if found.script and found.script != answers.params_file else [])]
    weights = found.framework in FRAMEWORKS  # a network saved as safetensors (`senpai.cli.weights`)
    network = found.model_file or STUB
    protected = [*(f"{d}/" for d in found.data_dirs), f"{PurePosixPath(EVALUATOR).parent}/", CONFIG_FILE]
    protected += [found.model_file] if weights and found.model_file else []
    ctx = {
        "name": found.name,
        "a": answers,
        "source": source,
        "space": space,
        "skipped": skipped,
        "params": params,
        "evaluator": EVALUATOR,
        "q": QUANTITIES[answers.quantity],
        "protected": protected,
        "scope": scope,
        "script": found.script,
        "holdout_files": [EVALUATOR, network] if weights else [EVALUATOR],
        "framework": found.framework,
        "model_file": network,
        "stub": STUB,
        "body": BODIES[answers.quantity],
        "depth": len(PurePosixPath(EVALUATOR).parts) - 1,
    }
    templates = {CONFIG_FILE: "senpai.yaml.j2", "program.md": "program.md.j2"}
    templates[EVALUATOR] = "evaluate_weights.py.j2" if weights else "evaluate.py.j2"
    if weights and not found.model_file:
        templates[STUB] = "model.py.j2"
    if answers.params_file in templates:
        raise ConfigError(f"params file {answers.params_file}: senpai init writes that file itself; name another")
    files = {rel: env.get_template(name).render(ctx) for rel, name in templates.items()}
    if new_params:
        fmt = FORMATS.get(PurePosixPath(answers.params_file).suffix.lower())
        files[answers.params_file] = (
            json.dumps(params, indent=2) + "\n" if fmt == "json" else yaml.safe_dump(params, sort_keys=False)
        )
    return files


def _no_space(answers: Answers, found: Detected, params: dict[str, Any], skipped: dict[str, str], new: bool) -> str:
    """The one sentence init says when it finds nothing to search, naming the fix."""
    where = f"the argparse defaults of {found.script or 'the train script'}" if new else answers.params_file
    if params:
        why = f"{where} hold no hyper-parameter ({', '.join(f'{k}: {w}' for k, w in skipped.items())})"
    elif new and not found.script:
        why = f"init cannot tell which script {answers.train_cmd!r} runs, so it read no argparse defaults"
    else:
        why = f"{where} hold no params (no `--name` flag with a literal default)"
    return (
        f"senpai init found nothing to search: {why}; write {answers.params_file} yourself with the knobs worth "
        'searching and their current values (e.g. {"lr": 0.001, "batch_size": 64}), make the script read it, and run init again'
    )


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
    if how not in READ:
        said = {"file": "writes it to a file", None: "does not report it in a way init can see"}[how]
        expr = next((r.expr for r in found.reports if r.name == answers.metric and r.how == how and r.expr), None)
        ident = _ident(answers.metric)
        named = f"`{expr}` below: the value it prints" if expr else f"a variable named `{ident}` below: use yours"
        out.append(
            Advice(
                f"senpai reads the metric as the last `{answers.metric}: value` line on stdout, and {where} {said}; "
                f"print it on a line of its own at the end ({named})",
                f'print(f"{answers.metric}: {{{expr or _ident(answers.metric)}}}")',
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
    if found.framework in FRAMEWORKS:
        out += _network_advice(where, found)
    if "SENPAI_ARTIFACT_DIR" not in found.source:
        if found.framework in FRAMEWORKS:
            params = "vars(args)" if found.argparse_defaults else "params"
            snippet = (
                f"import json\nimport os\nfrom safetensors.{found.framework} import save_file\n"
                'if os.environ.get("SENPAI_ARTIFACT_DIR"):\n'
                '    path = os.path.join(os.environ["SENPAI_ARTIFACT_DIR"], "model.safetensors")\n'
                f'    save_file(model.state_dict(), path, metadata={{"params": json.dumps({params})}})'
            )
            why = (
                f"{where} does not write its weights into $SENPAI_ARTIFACT_DIR for the verifier; save them with "
                f"safetensors (never {'torch.save: a pickle' if found.framework == 'torch' else 'pickle'}), with the params "
                f"{EVALUATOR} builds the module with"
            )
        else:
            snippet = (
                "import os\nimport skops.io\n"
                'if os.environ.get("SENPAI_ARTIFACT_DIR"):\n'
                '    skops.io.dump(model, os.path.join(os.environ["SENPAI_ARTIFACT_DIR"], "model.skops"))'
            )
            why = f"{where} does not write its model into $SENPAI_ARTIFACT_DIR for the verifier; save it with skops (not pickle)"
        out.append(Advice(why + " (`model` below: your fitted model)", snippet))
    return [Advice(a.why, _new_imports(a.snippet, found.source)) for a in out]


def _new_imports(snippet: str, source: str) -> str:
    """`snippet` without the import lines the script already has at its top level: pasted into a
    function, `import os` would make `os` a local name, unbound where the function used it before."""
    have = {line.strip() for line in source.splitlines() if line.startswith(("import ", "from "))}
    return "\n".join(line for line in snippet.splitlines() if line not in have)


def _network_advice(where: str, found: Detected) -> list[Advice]:
    """Where the evaluator builds the network from, when the script defines it itself (`senpai.cli.weights`).
    A model file without build() needs no advice: the evaluator's run on the sample fails naming it."""
    if found.model_file is not None:
        return []
    return [
        Advice(
            f"{where} defines its network itself, and the evaluator builds it from {STUB}, which experiments "
            "cannot change; move the class there, import it from there, and return it from build(**params)",
            f"# {STUB}\ndef build(**params):\n    return Net(**params)  # your class, with the params that set its shapes",
        )
    ]


def _ident(metric: str) -> str:
    ident = re.sub(r"\W+", "_", metric).strip("_") or "value"
    return ident if not ident[0].isdigit() else f"v_{ident}"
