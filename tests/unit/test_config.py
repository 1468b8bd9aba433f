"""senpai.yaml: bad config exits 2 naming the file, the field and what was expected."""

import re
import shutil
import typing
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from forge_fixtures import commit_and_push

from senpai.agents.openhands.runtime import OpenHandsRuntime
from senpai.agents.search.runtime import SearchRuntime
from senpai.cli.demo import write_config
from senpai.cli.main import cli, main
from senpai.cli.wiring import RUNTIMES, make_runtime
from senpai.config.harness import RoleRuntime, RuntimeSettings, load_harness
from senpai.config.target import load_target
from senpai.wrapper.loop import base_target

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "digits"
# digits' stand-in (stdlib and wandb): for the tests of validate's own output, whose run of digits'
# scikit-learn checks tests/unit/test_validate_evaluator.py keeps
QUICK = Path(__file__).resolve().parents[1] / "quick_target"


def _write(tmp_path: Path, mutate, source: Path = EXAMPLE) -> Path:
    data = yaml.safe_load((source / "senpai.yaml").read_text())
    mutate(data)
    (tmp_path / "senpai.yaml").write_text(yaml.safe_dump(data))
    return tmp_path


def _run_main(args, monkeypatch, capsys) -> tuple[int, str]:
    monkeypatch.setattr("sys.argv", ["senpai", *args])
    with pytest.raises(SystemExit) as exc:
        main()
    return exc.value.code, capsys.readouterr().err


def test_example_config_is_valid():
    t = load_target(EXAMPLE)
    assert t.metric.name == "val_accuracy" and t.metric.direction == "maximize"
    assert t.is_protected("eval/evaluate.py") and t.is_protected("senpai.yaml") and not t.is_protected("params.json")


def test_validate_prints_the_summary():
    result = CliRunner().invoke(cli, ["validate", str(QUICK)])
    assert result.exit_code == 0, result.output
    assert "metric: val_accuracy (maximize)" in result.output


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda d: d["metric"].update(direction="up"), r"metric\.direction: must be 'maximize' or 'minimize'"),
        (lambda d: d["params"]["space"].update(bad={"type": "float", "low": 1, "high": 0}), r"params\.space\.bad: "),
        (
            lambda d: d["params"]["space"].update(bad={"type": "real"}),
            r"params\.space\.bad: unknown type 'real'; expected one of",
        ),
        (
            lambda d: d["params"].update(file="../params.json"),
            r"params\.file: expected a path relative to the repository",
        ),
        (lambda d: d["protected"].append("/etc/passwd"), r"protected\.\d+: expected a path relative"),
        (
            lambda d: d["holdout"].update(command="python eval/evaluate.py --seed {seed}"),
            r"holdout: holdout\.command must contain \{artifact\}",
        ),
        (
            lambda d: d["holdout"].update(command="python eval/evaluate.py --artifact {artifact}"),
            r"holdout: holdout\.command must contain \{holdout\}",
        ),
        (lambda d: d["holdout"].update(seeds=[0, 0]), r"holdout: holdout\.seeds must be distinct"),
        (
            lambda d: d["holdout"].update(min_delta=0.01),  # digits' rule is noise_floor
            r"holdout: holdout\.min_delta applies to the test rules .*; with noise_floor use min_floor",
        ),
        (
            lambda d: d["holdout"].update(rule="welch"),  # digits sets min_floor
            r"holdout: holdout\.min_floor applies to the noise_floor rule only; with welch use min_delta",
        ),
        (lambda d: d["budget"].update(wall_seconds=-5), r"budget\.wall_seconds: must be greater than 0"),
        (lambda d: d.pop("train"), r"train: is missing: add it"),
        (lambda d: d.update(colour="blue"), r"colour: is not a field senpai knows"),
    ],
)
def test_bad_config_exits_2_naming_file_and_field(tmp_path, monkeypatch, capsys, mutate, expected):
    repo = _write(tmp_path, mutate)
    code, err = _run_main(["validate", str(repo)], monkeypatch, capsys)
    assert code == 2
    assert str(repo / "senpai.yaml") in err
    assert re.search(expected, err), err


def test_not_yaml_exits_2(tmp_path, monkeypatch, capsys):
    (tmp_path / "senpai.yaml").write_text("name: [unclosed\n")
    code, err = _run_main(["validate", str(tmp_path)], monkeypatch, capsys)
    assert code == 2 and "not valid YAML" in err


def test_a_target_config_that_is_a_symlink_is_refused_and_a_harness_config_may_be_one(tmp_path, monkeypatch, capsys):
    (tmp_path / "real").mkdir()
    real = _write(tmp_path / "real", lambda d: None) / "senpai.yaml"
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "senpai.yaml").symlink_to(real)  # a checkout's link could point anywhere
    code, err = _run_main(["validate", str(tmp_path / "repo")], monkeypatch, capsys)
    assert code == 2 and "senpai.yaml: cannot read: a symlink (not followed)" in err
    harness = write_config(tmp_path / "..data", "http://127.0.0.1:9", 1, 1, repo="o/r")  # a ConfigMap volume's layout
    (tmp_path / "harness.yaml").symlink_to(harness)
    assert load_harness(tmp_path / "harness.yaml").forge.repo == "o/r"


def test_missing_harness_config_exits_2(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("SENPAI_CONFIG", raising=False)
    code, err = _run_main(["ledger", "--config", str(tmp_path / "nope.yaml")], monkeypatch, capsys)
    assert code == 2 and f"{tmp_path / 'nope.yaml'}: no such harness config: check --config" in err


@pytest.mark.parametrize(
    "fleet, expected",
    [
        ({"backend": "lokal"}, r"h\.yaml: fleet: unknown backend 'lokal'; expected one of 'local', 'kubernetes'"),
        ({"backend": "kubernetes", "namespace": "ns"}, r"h\.yaml: fleet\.images: is missing: add it"),
    ],
)
def test_bad_harness_config_names_the_field_as_written(tmp_path, monkeypatch, capsys, fleet, expected):
    config = {"forge": {"repo": "o/r"}, "tracker": {"dir": "w"}, "fleet": fleet, "students": [{"name": "ada"}], "state_dir": "s"}
    (tmp_path / "h.yaml").write_text(yaml.safe_dump(config))
    code, err = _run_main(["ledger", "--config", str(tmp_path / "h.yaml")], monkeypatch, capsys)
    assert code == 2 and re.search(expected, err), err


@pytest.mark.parametrize("caps", [{"dollars": ".inf"}, {"gpu_hours": 1e400}, {"tokens": 10**14}, {"cpu_hours": ".nan"}])
def test_a_fleet_cap_is_a_finite_number_no_larger_than_slash_caps_takes(tmp_path, monkeypatch, capsys, caps):
    config = {"forge": {"repo": "o/r"}, "tracker": {"dir": "w"}, "fleet": {"backend": "local"}, "students": [{"name": "ada"}]}
    text = yaml.safe_dump({**config, "state_dir": "s"}) + "caps: {" + ", ".join(f"{k}: {v}" for k, v in caps.items()) + "}\n"
    (tmp_path / "h.yaml").write_text(text)
    code, err = _run_main(["ledger", "--config", str(tmp_path / "h.yaml")], monkeypatch, capsys)
    (key,) = caps
    assert code == 2 and f"caps.{key}" in err, err  # an unset cap is no cap; inf would show as null in status


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ("caps: {dollars: 0}\n", "h.yaml: caps.dollars: must be greater than 0: leave the line out for no cap (got 0)"),
        ("limits: {gpu_hours: -1}\n", "h.yaml: limits.gpu_hours: must be greater than 0: leave the line out for no cap"),
        ("caps: {gpu_hours: '0'}\n", "h.yaml: caps.gpu_hours: must be greater than 0: leave the line out for no cap (got '0')"),
        ("caps: {dollars: true}\n", "h.yaml: caps.dollars: must be a number, not true"),  # not a cap of $1
        ("caps: {cpu_hours: .nan}\n", "h.yaml: caps.cpu_hours: must be a finite number (got nan)"),
        ("caps: {end_at: 0}\n", "h.yaml: caps.end_at: must be a time, ISO 8601 with a zone (2026-12-31T18:00Z): leave"),
        ("caps:\n", "h.yaml: caps: is empty: give it its fields or remove the line"),
        ("caps: [1]\n", "h.yaml: caps: must be a mapping of its fields (got [1])"),
        ("steering: 3\n", "h.yaml: steering: must be a mapping of its fields (got 3)"),
    ],
)
def test_a_bad_section_or_cap_is_named_as_a_person_writes_it_and_says_what_to_write(
    tmp_path, monkeypatch, capsys, section, expected
):
    config = {"forge": {"repo": "o/r"}, "tracker": {"dir": "w"}, "fleet": {"dir": "j"}, "students": [{"name": "ada"}]}
    (tmp_path / "h.yaml").write_text(yaml.safe_dump({**config, "state_dir": "s"}) + section)
    code, err = _run_main(["ledger", "--config", str(tmp_path / "h.yaml")], monkeypatch, capsys)
    assert code == 2 and expected in err and "Settings" not in err, err


@pytest.mark.parametrize(
    "advisor, expected",
    [
        ({"kind": "openhands"}, r"h\.yaml: runtime\.advisor\.llm: is missing: add it"),
        ("openhands", r"h\.yaml: runtime\.advisor\.llm: is missing: add it"),
        ({"kind": "openhand"}, r"h\.yaml: runtime\.advisor: unknown kind 'openhand'; expected one of 'search', 'openhands'"),
    ],
)
def test_an_agent_runtime_without_an_llm_is_refused_at_load(tmp_path, monkeypatch, capsys, advisor, expected):
    config = {"forge": {"repo": "o/r"}, "tracker": {"dir": "w"}, "fleet": {"dir": "j"}, "students": [{"name": "ada"}]}
    (tmp_path / "h.yaml").write_text(yaml.safe_dump({**config, "state_dir": "s", "runtime": {"advisor": advisor}}))
    code, err = _run_main(["ledger", "--config", str(tmp_path / "h.yaml")], monkeypatch, capsys)
    assert code == 2 and re.search(expected, err), err


def test_every_runtime_kind_the_config_accepts_is_registered_and_picked_per_role():
    union = typing.get_args(RoleRuntime)[0]
    kinds = {typing.get_args(variant)[0].model_fields["kind"].default for variant in typing.get_args(union)}
    assert kinds == set(RUNTIMES) == {"search", "openhands"}
    rt = RuntimeSettings.model_validate({"advisor": {"kind": "openhands", "llm": {"model": "m"}}, "student": "search"})
    assert (type(make_runtime(rt.advisor)), type(make_runtime(rt.student))) == (OpenHandsRuntime, SearchRuntime)


@pytest.mark.parametrize(
    "cpus, expected", [(0, "greater than or equal to 1"), (2.5, "valid integer"), (4096, "less than or equal")]
)
def test_a_students_cpus_are_a_whole_positive_count(tmp_path, monkeypatch, capsys, cpus, expected):
    config = {"forge": {"repo": "o/r"}, "tracker": {"dir": "w"}, "fleet": {"dir": "j"}, "state_dir": "s"}
    config["students"] = [{"name": "ada", "cpus": 2}, {"name": "bo", "cpus": cpus}]
    (tmp_path / "h.yaml").write_text(yaml.safe_dump(config))
    code, err = _run_main(["ledger", "--config", str(tmp_path / "h.yaml")], monkeypatch, capsys)
    assert code == 2 and re.search(rf"h\.yaml: students\.1\.cpus: .*{expected}", err), err


def test_each_rule_takes_only_its_own_threshold(tmp_path):
    def welch(d, **extra):
        d["holdout"].pop("min_floor")
        d["holdout"].update(rule="welch", **extra)

    assert load_target(_write(tmp_path, welch)).holdout.min_delta == 0  # the test's alpha bounds false accepts
    assert load_target(_write(tmp_path, lambda d: welch(d, min_delta=0.01))).holdout.min_delta == 0.01
    assert load_target(EXAMPLE).holdout.min_floor == 0.005


@pytest.mark.parametrize("scope", [["train.py"], ["trian.py", "params.jsn"]])
def test_validate_refuses_a_scope_that_leaves_out_the_params_file(tmp_path, monkeypatch, capsys, scope):
    repo = _write(tmp_path, lambda d: d.update(scope=scope))
    shutil.copy(EXAMPLE / "params.json", repo / "params.json")
    code, err = _run_main(["validate", str(repo)], monkeypatch, capsys)
    assert code == 2
    globs = ", ".join(scope)
    assert f"{repo / 'senpai.yaml'}: scope: [{globs}] does not match the params file params.json, so the gate refuses" in err
    assert "add params.json to scope" in err


@pytest.mark.parametrize("scope", [[], ["*.json"]])  # empty: the params file only
def test_validate_accepts_a_scope_that_admits_the_params_file(tmp_path, scope):
    shutil.copytree(QUICK, tmp_path / "repo", ignore=shutil.ignore_patterns("__pycache__", "wandb"))
    _write(tmp_path / "repo", lambda d: d.update(scope=scope), QUICK)
    result = CliRunner().invoke(cli, ["validate", str(tmp_path / "repo")])
    assert result.exit_code == 0, result.output
    assert f"scope: {', '.join(scope) or 'params.json'}" in result.output


def test_the_demo_refuses_a_bad_target_before_it_starts_anything(tmp_path, monkeypatch, capsys):
    """It used to start the forge and wait out its timeout (15 minutes) while no job could launch."""
    example = tmp_path / "example"
    shutil.copytree(EXAMPLE, example, ignore=shutil.ignore_patterns("__pycache__", "wandb"))
    _write(example, lambda d: d["metric"].update(direction="up"))
    code, err = _run_main(["demo", "--example", str(example), "--out", str(tmp_path / "out")], monkeypatch, capsys)
    assert code == 2 and f"{example / 'senpai.yaml'}: metric.direction" in err
    assert not (tmp_path / "out").exists()  # no forge, no folder


ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(9)
)


def test_an_alias_bomb_in_senpai_yaml_is_refused_naming_the_file(tmp_path, monkeypatch, capsys):
    (tmp_path / "senpai.yaml").write_text(ALIAS_BOMB)
    code, err = _run_main(["validate", str(tmp_path)], monkeypatch, capsys)
    assert code == 2
    assert f"{tmp_path / 'senpai.yaml'}: not valid YAML" in err and "anchors and aliases are not allowed" in err


def test_the_wrapper_reads_no_alias_bomb_from_a_commit(fake_forge, tmp_path):
    forge, _ = fake_forge
    good = commit_and_push(forge, tmp_path / "seed", "main", {"senpai.yaml": (EXAMPLE / "senpai.yaml").read_text()})
    bomb = commit_and_push(forge, tmp_path / "seed", "main", {"senpai.yaml": ALIAS_BOMB})
    assert base_target(forge, good) is not None
    assert base_target(forge, bomb) is None
