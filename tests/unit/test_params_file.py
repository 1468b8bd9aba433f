"""The target's params file in JSON, YAML or TOML: read and written by suffix, bounded, and a bad
file is a ConfigError naming the file (never a raw JSONDecodeError), in `senpai validate` too."""

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from senpai.agents.params import MAX_BYTES, apply_params, read_params, write_params
from senpai.cli.main import cli, main
from senpai.errors import ConfigError

# digits' stand-in (stdlib and wandb, the same params): what is tested is validate's reading of the
# params file, not digits' scikit-learn (tests/unit/test_validate_evaluator.py validates digits)
QUICK = Path(__file__).resolve().parents[1] / "quick_target"
PARAMS = {"hidden_width": 8, "activation": "logistic", "alpha": 0.0001, "batch_size": 64, "early": True}
TEXTS = {
    "params.json": json.dumps(PARAMS),
    "params.yaml": yaml.safe_dump(PARAMS),
    "params.yml": yaml.safe_dump(PARAMS),
    "params.toml": 'hidden_width = 8\nactivation = "logistic"\nalpha = 0.0001\nbatch_size = 64\nearly = true\n',
}


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_each_format_reads_the_same_params(tmp_path, name):
    path = tmp_path / name
    path.write_text(TEXTS[name])
    assert read_params(path) == PARAMS


@pytest.mark.parametrize("name", ["params.json", "params.yaml", "params.yml"])
def test_json_and_yaml_are_written_back_in_their_own_format(tmp_path, name):
    path = tmp_path / name
    path.write_text(TEXTS[name])
    assert apply_params(path, {"hidden_width": 64, "activation": "relu"}) == {**PARAMS, "hidden_width": 64, "activation": "relu"}
    text = path.read_text()
    parsed = json.loads(text) if name.endswith(".json") else yaml.safe_load(text)
    assert parsed == {**PARAMS, "hidden_width": 64, "activation": "relu"}
    assert read_params(path) == parsed


def test_toml_is_read_but_never_written(tmp_path):
    path = tmp_path / "params.toml"
    path.write_text(TEXTS["params.toml"])
    assert apply_params(path, {}) == PARAMS  # a code-only hypothesis writes nothing
    assert apply_params(path, {"hidden_width": 8}) == PARAMS  # nor does one that repeats the current values
    with pytest.raises(ConfigError, match=r"params\.toml: senpai can read a TOML params file but not write one"):
        apply_params(path, {"hidden_width": 64})
    assert path.read_text() == TEXTS["params.toml"]


@pytest.mark.parametrize(
    "name,text,message",
    [
        ("params.json", '{"hidden_width": 8,', r"params\.json: not valid JSON: Expecting property name"),
        ("params.json", "[1, 2]", r"params\.json: expected a mapping of param names to values, got list"),
        (
            "params.json",
            "[" * 100_000 + "]" * 100_000,
            rf"params\.json: over {MAX_BYTES} bytes",
        ),
        ("params.json", "[" * 30_000 + "]" * 30_000, r"params\.json: (not valid JSON|expected a mapping)"),
        ("params.yaml", "a: &x [1]\nb: *x\n", r"params\.yaml: not valid YAML: anchors and aliases are not allowed"),
        ("params.yaml", "a: 1\na: 2\n", r"params\.yaml: not valid YAML: .*duplicate key"),
        ("params.yaml", "{1: 2}", r"params\.yaml: every param name must be a string"),
        ("params.toml", "a = ", r"params\.toml: not valid TOML"),
        ("params.txt", "{}", r"params\.txt: a params file must end in \.json, \.yaml, \.yml, \.toml"),
        ("params.json", "\udcff{}", r"params\.json: not UTF-8"),
    ],
)
def test_a_bad_params_file_is_a_config_error_naming_it(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(ConfigError, match=message):
        read_params(path)
    with pytest.raises(ConfigError, match=r"params\.txt: a params file must end"):
        write_params(tmp_path / "params.txt", PARAMS)


def test_validate_reads_a_yaml_params_file_and_refuses_a_broken_one(tmp_path, monkeypatch, capsys):
    repo = tmp_path / "repo"
    shutil.copytree(QUICK, repo, ignore=shutil.ignore_patterns("__pycache__", "wandb"))
    params = json.loads((repo / "params.json").read_text())
    (repo / "params.json").unlink()
    (repo / "params.yaml").write_text(yaml.safe_dump(params))
    cfg = yaml.safe_load((repo / "senpai.yaml").read_text())
    cfg["params"]["file"] = "params.yaml"
    cfg["scope"] = ["params.yaml", "train.py"]
    (repo / "senpai.yaml").write_text(yaml.safe_dump(cfg))
    ok = CliRunner().invoke(cli, ["validate", str(repo)])
    assert ok.exit_code == 0, ok.output
    assert "params file: params.yaml (yaml, 7 keys)" in ok.output

    (repo / "params.yaml").write_text("hidden_width: [8\n")
    monkeypatch.setattr("sys.argv", ["senpai", "validate", str(repo)])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert f"{repo / 'params.yaml'}: not valid YAML" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: os.mkfifo(p), "not a regular file"),  # a plain read would block for ever
        (lambda p: p.symlink_to("/dev/zero"), "cannot read: a symlink"),  # or never end
        (
            lambda p: p.symlink_to(p.with_name("real.json")),
            "cannot read: a symlink",
        ),  # anything the job can read, shown in evidence
        (lambda p: p.mkdir(), "not a regular file"),
    ],
)
def test_a_params_file_that_is_not_a_regular_file_is_refused_without_reading(tmp_path, make, message):
    (tmp_path / "real.json").write_text('{"a": 1}')
    path = tmp_path / "params.json"
    make(path)
    with pytest.raises(ConfigError, match=rf"params\.json: ({message})"):
        read_params(path)
