"""A `senpai` process imports the kubernetes client, OpenHands, LiteLLM, scipy, Optuna and matplotlib only when
it uses them: each adds 0.3–1 s to every job's start (bench/job_start.py measures it).

Each command runs in a fresh interpreter through the console entry point, which then reports the
heavy packages in its `sys.modules`.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from forge_fixtures import TOKEN
from k8s_fixtures import k8s_settings

HEAVY = ("kubernetes", "openhands", "litellm", "scipy", "optuna", "wandb", "matplotlib")
TOKEN_ENV = "SENPAI_LAZY_TOKEN"
PROBE = f"""
import json, sys
from senpai.cli.main import main
out, sys.argv, code = sys.argv[1], ["senpai", *sys.argv[2:]], 0
try:
    main()
except SystemExit as e:
    code = e.code
loaded = sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r}))
open(out, "w").write(json.dumps({{"code": code, "loaded": loaded}}))
"""


def run(tmp_path: Path, *args: str) -> dict:
    """{"code": exit status, "loaded": the HEAVY packages imported} of `senpai ARGS` in a fresh process."""
    out = tmp_path / "probe.json"
    env = {**os.environ, TOKEN_ENV: TOKEN}
    proc = subprocess.run([sys.executable, "-c", PROBE, str(out), *args], capture_output=True, text=True, env=env, timeout=120)
    assert out.exists(), proc.stderr
    return json.loads(out.read_text()) | {"stdout": proc.stdout}


@pytest.mark.parametrize(
    "args", [["--help"], ["ledger", "--help"], ["report", "--help"], ["job", "advisor", "--help"], ["wrapper", "run", "--help"]]
)
def test_help_imports_no_heavy_package(tmp_path, args):
    result = run(tmp_path, *args)
    assert (result["code"], result["loaded"]) == (0, [])


def harness(tmp_path: Path, forge_repo, fleet: dict) -> Path:
    _, settings = forge_repo
    raw = {
        "forge": {"base_url": settings.base_url, "repo": settings.repo, "token_env": TOKEN_ENV, "base_branch": "advisor"},
        "tracker": {"dir": str(tmp_path / "wandb"), "mode": "offline"},
        "fleet": fleet,
        "students": [{"name": "ada"}],
        "state_dir": str(tmp_path / "state"),
    }
    path = tmp_path / "harness.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_a_local_fleet_preflight_imports_no_heavy_package(tmp_path, forge_repo):
    """The whole preflight against the local forge, with the local fleet and the search runtime."""
    path = harness(tmp_path, forge_repo, {"backend": "local", "dir": str(tmp_path / "jobs")})
    result = run(tmp_path, "preflight", "--config", str(path), "--json")
    assert (result["code"], result["loaded"]) == (0, [])
    assert {r["outcome"] for r in json.loads(result["stdout"])} <= {"pass", "skip"}


def test_a_kubernetes_fleet_imports_the_client(tmp_path, forge_repo, monkeypatch):
    """The probe sees an import when one happens: the kubernetes fleet's preflight loads the client."""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    path = harness(tmp_path, forge_repo, k8s_settings().model_dump(mode="json"))
    result = run(tmp_path, "preflight", "--config", str(path), "--json")
    assert result["loaded"] == ["kubernetes"]
    rows = {r["check"]: r["outcome"] for r in json.loads(result["stdout"])}
    assert (result["code"], rows["cluster connection"]) == (1, "fail")


def test_a_search_student_does_not_import_optuna():
    """Only the search advisor's proposal needs Optuna; the student shares only its reply to a human.
    numpy waits for a verdict (`senpai.ledger.stats`) too."""
    heavy = (*HEAVY, "numpy")
    code = f"import sys, senpai.agents.search.student; print(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r})))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "[]", proc.stderr


def test_picking_a_runtime_imports_none_of_its_heavy_packages():
    """`senpai.cli.wiring` registers both runtimes; OpenHands and LiteLLM wait for an openhands turn."""
    code = (
        "import sys; from senpai.cli.wiring import make_runtime; from senpai.config.harness import RuntimeSettings\n"
        "rt = RuntimeSettings.model_validate({'advisor': {'kind': 'openhands', 'llm': {'model': 'm'}}})\n"
        "picked = [type(make_runtime(r)).__name__ for r in (rt.advisor, rt.student)]\n"
        f"print(picked, sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "['OpenHandsRuntime', 'SearchRuntime'] []", proc.stderr


def test_a_job_command_imports_only_its_own_command_module():
    """`senpai job ...` loads `senpai.cli.job`, not the demo, the wrapper loop or preflight (and their
    rich, numpy), and pydantic never scans the installed distributions for plugins."""
    others = ["senpai.cli.demo", "senpai.cli.preflight", "senpai.wrapper.loop", "senpai.cli.ledger", "rich"]
    code = (
        "import sys; from senpai.cli.main import main; sys.argv = ['senpai', 'job', 'student', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "from pydantic.plugin import _loader\n"
        f"print(sorted(m for m in {others!r} if m in sys.modules), 'senpai.cli.job' in sys.modules, _loader._plugins)"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert proc.stdout.strip().splitlines()[-1] == "[] True None", proc.stdout + proc.stderr


def test_the_proposal_imports_optuna_without_redis_and_leaves_redis_importable():
    """Optuna would import redis (installed for litellm) for a storage senpai never uses."""
    code = "import sys, senpai.agents.search.propose; print('redis' in sys.modules); import redis; print(redis.__name__)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.split() == ["False", "redis"], proc.stderr


def test_a_markdown_report_imports_matplotlib_only_for_the_html_page():
    """Only the HTML page has figures: `senpai report --format md` and the W&B report's Markdown draw none."""
    code = (
        "import sys; from senpai.report import render; from senpai.report.summary import summarise\n"
        "s = summarise([], 'o/r'); render.markdown(s); render.tracker_spec(s); print('matplotlib' in sys.modules)\n"
        "render.html(s); print('matplotlib' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.split() == ["False", "True"], proc.stderr


def _third_party(code: str) -> set[str]:
    """The top-level packages outside the standard library (private names aside: `__main__`, an
    editable install's finder) that `code` has imported, run in a fresh interpreter."""
    names = "{m.split('.')[0] for m in sys.modules if not m.startswith('_')} - set(sys.stdlib_module_names)"
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted({names})))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_the_local_supervisor_loads_only_pydantic_before_it_starts_its_job():
    """`python -m senpai.fleet.supervise` runs before every local job starts: psutil (the clean-up of
    what the job leaves) is imported once the job has ended."""
    pydantic = {"pydantic", "pydantic_core", "annotated_types", "typing_extensions", "typing_inspection"}
    assert _third_party("import senpai.fleet.supervise") == {"senpai", *pydantic}


def test_the_redaction_filter_finds_prctl_without_ldconfig():
    """Every job starts a redaction filter (`python -m senpai.ledger.redact`), which makes itself
    non-dumpable: through the process's own symbols, not `ctypes.util.find_library` (`ldconfig -p`)."""
    code = "import sys, senpai.ledger.redact as r; print(r.set_not_dumpable(), 'ctypes.util' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.split() == ["True", "False"], proc.stderr


# A fresh interpreter in which the `agents` and `kubernetes` extras cannot be imported, as after `pip install senpai`.
WITHOUT_EXTRAS = "import sys\nfor m in ('openhands', 'openhands.sdk', 'litellm', 'kubernetes'):\n    sys.modules[m] = None\n"
MINIMAL = {
    "forge": {"repo": "o/r"},
    "tracker": {"dir": "wandb", "mode": "offline"},
    "students": [{"name": "ada"}],
    "state_dir": "state",
}


def _without_extras(code: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", WITHOUT_EXTRAS + code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()


def test_an_openhands_turn_without_the_agents_extra_says_what_to_install():
    code = (
        "from senpai.agents.openhands.runtime import OpenHandsRuntime\nfrom senpai.errors import MissingExtra\n"
        "try:\n    OpenHandsRuntime().advisor_turn(None, [])\nexcept MissingExtra as e:\n    print(e.exit_code, e)\n"
    )
    assert _without_extras(code) == [
        "2 the openhands runtime needs the 'openhands.sdk' package, which is not installed: "
        "install it with pip install 'senpai[agents]'"
    ]


def test_a_kubernetes_fleet_without_the_extra_says_what_to_install():
    code = (
        "from senpai.cli.wiring import make_fleet, make_cluster_probe\n"
        "from senpai.config.harness import HarnessConfig\nfrom senpai.errors import MissingExtra\n"
        f"cfg = HarnessConfig.model_validate({MINIMAL | {'fleet': k8s_settings().model_dump(mode='json')}!r})\n"
        "for make in (make_fleet, make_cluster_probe):\n"
        "    try:\n        make(cfg)\n    except MissingExtra as e:\n        print(e)\n"
    )
    line = (
        "fleet.backend kubernetes needs the 'kubernetes' package, which is not installed: "
        "install it with pip install 'senpai[kubernetes]'"
    )
    assert _without_extras(code) == [line, line]


RUNTIME = {"advisor": {"kind": "openhands", "llm": {"model": "m"}}}


def test_preflight_without_the_agents_extra_fails_the_llm_rows_with_the_fix():
    code = (
        "from senpai.preflight.llm import llm_checks\nfrom senpai.config.harness import HarnessConfig\n"
        f"cfg = HarnessConfig.model_validate({MINIMAL | {'fleet': {'backend': 'local', 'dir': 'jobs'}, 'runtime': RUNTIME}!r})\n"
        "for r in llm_checks(cfg):\n    print(r.check, r.outcome, r.fix)\n"
    )
    assert _without_extras(code) == ["advisor LLM fail pip install 'senpai[agents]'", "student LLM skip None"]


UNPRICED = {"advisor": {"kind": "openhands", "llm": {"model": "openai/qwen", "base_url": "http://127.0.0.1:8080/v1"}}}


def test_telling_an_unpriced_model_imports_no_heavy_package():
    """Every process that loads a config with an openhands role prices its model (`senpai.config.prices`):
    from LiteLLM's map file, not by importing LiteLLM."""
    code = (
        "import sys; from senpai.config.harness import HarnessConfig\n"
        f"cfg = HarnessConfig.model_validate({MINIMAL | {'fleet': {'backend': 'local', 'dir': 'jobs'}, 'runtime': UNPRICED}!r})\n"
        f"print(dict(cfg.unpriced_llms()), sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "{<Role.ADVISOR: 'advisor'>: 'openai/qwen'} []", proc.stderr


def test_without_litellm_a_price_cannot_be_told_and_nothing_is_refused():
    """Without the `agents` extra no openhands turn runs here: a dollars cap over an unpriced model loads."""
    raw = MINIMAL | {"fleet": {"backend": "local", "dir": "jobs"}, "runtime": UNPRICED, "caps": {"dollars": 5.0}}
    code = f"from senpai.config.harness import HarnessConfig\nprint(HarnessConfig.model_validate({raw!r}).unpriced_llms())\n"
    assert _without_extras(code) == ["{}"]
