"""`senpai validate` refuses an evaluator (holdout.files) that is not protected, or that imports a
repository file which is not itself protected and listed in holdout.files; it accepts the digits
example. The message names the evaluator file, the import and the repository file. The checks of
the train command's interpreter run on tests/quick_target, digits' stand-in without scikit-learn."""

import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from second_python import venv_with

from senpai.cli.main import cli, main
from senpai.config.evaluator import evaluator_problems
from senpai.config.target import load_target
from senpai.job.measure import command_path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "digits"
QUICK = Path(__file__).resolve().parents[1] / "quick_target"  # digits' stand-in: its scripts import no scikit-learn
PYTHON = shutil.which("python", path=command_path())  # what `python` in a train command runs
EVALUATOR = "eval/evaluate.py"


@pytest.fixture
def repo(tmp_path):
    dest = tmp_path / "repo"
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("__pycache__", "wandb"))
    return dest


@pytest.fixture
def quick(tmp_path):
    """tests/quick_target, for the tests of the train interpreter's checks: what the evaluator and the
    train script import is incidental there, and each validate would import digits' scikit-learn,
    skops and wandb for them (seconds) where the stand-in's import wandb alone."""
    dest = tmp_path / "repo"
    shutil.copytree(QUICK, dest, ignore=shutil.ignore_patterns("__pycache__", "wandb"))
    return dest


def prepend(repo: Path, line: str) -> None:
    path = repo / EVALUATOR
    path.write_text(line + "\n" + path.read_text())


def configure(repo: Path, files: list[str] | None = None, protected: list[str] | None = None) -> None:
    """Rewrite holdout.files and/or protected in the repo's senpai.yaml."""
    cfg = yaml.safe_load((repo / "senpai.yaml").read_text())
    if files is not None:
        cfg["holdout"]["files"] = files
    if protected is not None:
        cfg["protected"] = protected
    (repo / "senpai.yaml").write_text(yaml.safe_dump(cfg))


def validate(repo: Path, monkeypatch, capsys) -> tuple[int, str]:
    monkeypatch.setattr("sys.argv", ["senpai", "validate", str(repo)])
    with pytest.raises(SystemExit) as exc:
        main()
    return exc.value.code, capsys.readouterr().err


def test_the_digits_evaluator_is_accepted():
    assert evaluator_problems(EXAMPLE, load_target(EXAMPLE)) == []
    result = CliRunner().invoke(cli, ["validate", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    assert "evaluator: eval/evaluate.py (imports checked under the score interpreter)" in result.output


UNPROTECTED = (
    "is neither protected nor listed in holdout.files, so a candidate can edit it and the score step does not lay it out"
)
UNLISTED = "is protected but not listed in holdout.files; add it there"


@pytest.mark.parametrize(
    "files, line, expected",
    [
        # a top-level module anyone may edit, imported outright or by name at run time
        ({"helpers.py": "X = 1\n"}, "import helpers", f"imports 'helpers', and helpers.py {UNPROTECTED}"),
        ({"helpers.py": "X = 1\n"}, "from helpers import X", f"imports 'helpers', and helpers.py {UNPROTECTED}"),
        (
            {"helpers.py": "X = 1\n"},
            "import importlib; importlib.import_module('helpers')",
            f"imports 'helpers', and helpers.py {UNPROTECTED}",
        ),
        ({"tools/__init__.py": "", "tools/x.py": ""}, "from tools.x import y", f"imports 'tools.x', and tools/ {UNPROTECTED}"),
        # a repository file shadowing an installed module the evaluator imports
        (
            {"threadpoolctl.py": "def threadpool_limits(limits): ...\n"},
            "",
            f"imports 'threadpoolctl', and threadpoolctl.py {UNPROTECTED}; protect and list it, or rename it",
        ),
        # a sibling that is protected (under eval/) but not listed in holdout.files
        ({"eval/util.py": "X = 1\n"}, "from util import X", f"imports 'util', and eval/util.py {UNLISTED}"),
        ({"eval/util.py": "X = 1\n"}, "from .util import X", f"imports '.util', and eval/util.py {UNLISTED}"),
    ],
)
def test_an_import_of_an_unlisted_or_unprotected_repository_file_is_refused(repo, monkeypatch, capsys, files, line, expected):
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    if line:
        prepend(repo, line)
    code, err = validate(repo, monkeypatch, capsys)
    assert code == 2, err
    assert f"{EVALUATOR}: {expected}" in err


def test_an_import_of_a_listed_file_that_is_not_protected_says_so(repo):
    (repo / "helpers.py").write_text("X = 1\n")
    prepend(repo, "import helpers")
    configure(repo, files=[EVALUATOR, "helpers.py"])
    problems = evaluator_problems(repo, load_target(repo))
    listed = "helpers.py is listed in holdout.files but not protected; add it to `protected`"
    assert f"{EVALUATOR}: imports 'helpers', and {listed}" in problems


def test_a_protected_listed_sibling_may_be_imported(repo):
    (repo / "eval" / "util.py").write_text("X = 1\n")
    prepend(repo, "from util import X")
    configure(repo, files=[EVALUATOR, "eval/util.py"])
    assert evaluator_problems(repo, load_target(repo)) == []
    configure(repo, files=["eval/"])  # or the whole protected directory
    assert evaluator_problems(repo, load_target(repo)) == []


def test_a_listed_file_that_is_not_protected_is_refused(repo, monkeypatch, capsys):
    (repo / "score.py").write_text("print('holdout_accuracy: 1.0')\n")
    configure(repo, files=[EVALUATOR, "score.py"])
    code, err = validate(repo, monkeypatch, capsys)
    assert code == 2
    assert "holdout.files: score.py is not protected; add it (or a directory holding it) to `protected`" in err
    configure(repo, files=[EVALUATOR], protected=["data/"])  # the evaluator itself no longer protected
    problems = evaluator_problems(repo, load_target(repo))
    assert problems == ["holdout.files: eval/evaluate.py is not protected; add it (or a directory holding it) to `protected`"]


def test_an_unparseable_or_missing_evaluator_is_refused(repo):
    configure(repo, files=[EVALUATOR, "eval/gone.py"])
    (repo / EVALUATOR).write_text("def broken(:\n")
    problems = evaluator_problems(repo, load_target(repo))
    assert "holdout.files: eval/gone.py does not exist in the repository" in problems
    assert any(p.startswith(f"{EVALUATOR}: cannot be parsed as Python (SyntaxError") for p in problems)


@pytest.mark.parametrize(
    "files, listed, expected",
    [
        ({"eval/numpy.py": ""}, ["eval/numpy.py"], "eval/numpy.py would shadow the installed module 'numpy' (of numpy)"),
        ({"eval/json.py": ""}, ["eval/"], "eval/json.py would shadow the standard-library module 'json'"),
        ({"eval/yaml/__init__.py": ""}, ["eval/"], "eval/yaml/ would shadow the installed module 'yaml' (of PyYAML)"),
        ({"numpy.py": ""}, ["numpy.py"], "numpy.py would shadow the installed module 'numpy' (of numpy)"),  # next to itself
    ],
)
def test_an_evaluator_module_named_like_an_installed_or_stdlib_one_is_refused(repo, monkeypatch, capsys, files, listed, expected):
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    configure(repo, files=[EVALUATOR, *listed], protected=["data/", "eval/", *listed])
    prepend(repo, "import yaml")  # an installed module shadows only what the evaluator imports
    code, err = validate(repo, monkeypatch, capsys)
    assert code == 2, err
    assert f"holdout.files: {expected} once the evaluator puts its directory on sys.path; rename it" in err


def test_an_evaluator_module_named_like_an_installed_module_it_does_not_import_is_fine(repo):
    (repo / "eval" / "click.py").write_text("")  # click is installed; no evaluator file imports it
    configure(repo, files=[EVALUATOR, "eval/click.py"], protected=["data/", "eval/"])
    assert evaluator_problems(repo, load_target(repo)) == []
    prepend(repo, "import click")
    assert evaluator_problems(repo, load_target(repo)) == [
        "holdout.files: eval/click.py would shadow the installed module 'click' (of click) once the evaluator puts its "
        "directory on sys.path; rename it"
    ]


def test_a_module_inside_an_evaluator_package_may_share_a_standard_name(repo):
    for rel in ("eval/metrics/__init__.py", "eval/metrics/io.py", "eval/metrics/json.py"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("")
    configure(repo, files=["eval/"])  # imported as metrics.io: no top-level module io
    assert evaluator_problems(repo, load_target(repo)) == []


def _train(repo: Path, command: str) -> None:
    cfg = yaml.safe_load((repo / "senpai.yaml").read_text())
    cfg["train"] = command
    (repo / "senpai.yaml").write_text(yaml.safe_dump(cfg))


def _program(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_a_train_interpreter_the_wall_hides_is_granted_and_another_program_is_named_with_wall_readable(quick):
    # a new user's torch venv under /tmp: every training failed with exit 127 behind the wall's fresh /tmp
    with tempfile.TemporaryDirectory(prefix="senpai-venv-", dir="/tmp") as where:  # whatever the basetemp
        venv = Path(where)
        python = _program(venv / "bin" / "python", f'#!/bin/sh\nexec {sys.executable} "$@"\n')  # senpai's, with its packages
        _train(quick, f"CUDA_VISIBLE_DEVICES=0 {python} train.py")
        granted = CliRunner().invoke(cli, ["validate", str(quick)])
        script = _program(venv / "bin" / "train.sh", "#!/bin/sh\npython3 train.py\n")  # not Python: not granted
        _train(quick, f"{script} --fast")
        named = CliRunner().invoke(cli, ["validate", str(quick)])
    assert granted.exit_code == 0, granted.output
    assert f"note: the train command starts {python}, which the wall would hide" in granted.output
    assert "senpai grants it to every step that runs the train command, as it grants holdout.python" in granted.output
    assert "wall: {readable:" not in granted.output
    assert named.exit_code == 0, named.output  # a note: the harness config's wall.readable may grant it
    assert f"note: the train command starts {script}, which the wall would hide" in named.output
    assert "it is not a Python interpreter, which senpai would grant: every training would fail with exit 127" in named.output
    assert f"wall: {{readable: [{venv}]}}" in named.output

    _train(quick, "python train.py")  # found on PATH, as the example's: senpai's own interpreter, nothing to say
    result = CliRunner().invoke(cli, ["validate", str(quick)])
    assert result.exit_code == 0 and "note: the train command" not in result.output


def test_a_train_interpreter_that_does_not_run_as_python_3_is_refused_naming_train(repo, tmp_path, monkeypatch, capsys):
    fake = _program(tmp_path / "venv" / "bin" / "python3", "#!/bin/sh\necho not python\n")
    _train(repo, f"{fake} train.py")
    code, err = validate(repo, monkeypatch, capsys)
    assert code == 2, err
    assert (
        f"senpai.yaml: train: {fake} does not run as a Python 3 interpreter (it exited 0: not python): every "
        "training would fail; point train in senpai.yaml at a Python 3 interpreter that exists on this machine"
    ) in err
    old = _program(tmp_path / "old" / "python2.7", '#!/bin/sh\necho \'["2.7", "/usr/bin/python2.7", "/usr"]\'\n')
    _train(repo, f"{old} train.py")
    code, err = validate(repo, monkeypatch, capsys)
    assert code == 2 and f"train: {old} is Python 2.7: every training would fail" in err
    assert "Traceback" not in err


def test_a_train_interpreter_whose_folder_is_the_home_folder_is_refused(repo, tmp_path, monkeypatch, capsys):
    # `~/python3`, a link to a venv's python: granting its folder would un-hide the whole home folder
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    python = _program(home / "python3", '#!/bin/sh\nexec python3 "$@"\n')  # answers as Python 3
    _train(repo, f"{python} train.py")
    code, err = validate(repo, monkeypatch, capsys)
    assert code == 2, err
    assert f"{python} reads {home}, which holds {home}" in err and "fix senpai.yaml" in err


def test_a_train_script_importing_what_its_interpreter_lacks_is_warned_of_naming_both(quick, tmp_path):
    # a new user's torch script with `train: python lm.py` and holdout.python at the torch venv: the
    # evaluator's imports passed, every training would fail (senpai's interpreter has no torch). A
    # warning, not a refusal: a script may put folders on sys.path itself, which no reading sees
    # (the quick target imports wandb only when W&B is on: here at the top, as a real script would)
    (quick / "train.py").write_text("import senpai_absent_net\nimport wandb\n" + (quick / "train.py").read_text())
    result = CliRunner().invoke(cli, ["validate", str(quick)])
    assert result.exit_code == 0, result.output
    assert (
        f"warning: train.py imports senpai_absent_net, which senpai's interpreter {PYTHON} cannot import "
        "(ModuleNotFoundError: No module named 'senpai_absent_net'): install it there, or start train with your venv's "
        "bin/python; every training would fail with it, unless the script finds it by itself"
    ) in result.output
    venv = venv_with(tmp_path / "venv", {"senpai_absent_net": ""})
    _train(quick, f"{venv} train.py")  # its own interpreter has the module, but not the target's wandb
    result = CliRunner().invoke(cli, ["validate", str(quick)])
    assert f"train.py imports wandb, which the train command's interpreter {venv} cannot import" in result.output
    assert "senpai_absent_net" not in result.output


def test_a_src_layout_package_the_train_command_puts_on_pythonpath_is_not_refused(quick, monkeypatch, capsys):
    # `PYTHONPATH=src python -m pkg.train` trains (the train step's sh sets it, from the checkout root):
    # its package is no installed module for the train interpreter to lack
    (quick / "src" / "pkg").mkdir(parents=True)
    (quick / "src" / "pkg" / "__init__.py").write_text("")
    (quick / "src" / "pkg" / "model.py").write_text("WIDTH = 8\n")
    (quick / "src" / "pkg" / "train.py").write_text("from pkg.model import WIDTH\n" + (quick / "train.py").read_text())
    _train(quick, "PYTHONPATH=src python -m pkg.train")
    result = CliRunner().invoke(cli, ["validate", str(quick)])
    assert result.exit_code == 0, result.output
    (quick / "src" / "pkg" / "train.py").write_text("import senpai_absent_net\n" + (quick / "train.py").read_text())
    result = CliRunner().invoke(cli, ["validate", str(quick)])  # the check still runs for what is truly missing
    assert "warning: src/pkg/train.py imports senpai_absent_net, which senpai's interpreter" in result.output


@pytest.mark.parametrize("launcher", ["launch", "uv run"])
def test_a_train_script_another_program_starts_is_not_checked_under_senpais_interpreter(quick, tmp_path, launcher):
    # torchrun, `uv run`, `conda run -n x python`: the program picks its own interpreter and
    # environment, which senpai cannot read; senpai's interpreter lacking the script's torch says nothing
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "senpai_absent_net.py").write_text("")
    words = launcher.split()
    text = f'#!/bin/sh\n[ "$1" = run ] && shift\nPYTHONPATH={lib} exec {sys.executable} "$@"\n'
    program = _program(tmp_path / "bin" / words[0], text)
    (quick / "train.py").write_text("import senpai_absent_net\n" + (quick / "train.py").read_text())
    _train(quick, " ".join([str(program), *words[1:], "train.py"]))
    result = CliRunner().invoke(cli, ["validate", str(quick)])
    assert result.exit_code == 0, result.output
