"""A tiny target for verifier tests: train.py writes a JSON artifact, score.py (the evaluator,
protected) scores it against the sealed holdout's `target.txt`, on a real local-forge repository.

Both programs print how many secret or `PYTHON*` variables they can see (`train_leak`, and the
guard `leak`, which also counts the candidate's tree on the evaluator's path or in its cwd).
acc = 1 - |w - target| + a small fixed per-seed noise, so equal params give equal values.
"""

import uuid
from pathlib import Path

from forge_fixtures import TOKEN, commit_and_push, seed_repository

from senpai.config import safe_yaml
from senpai.config.harness import ForgeSettings
from senpai.forge.github import GitHubForge
from senpai.forge.github.admin import create_repository

SNOOPED = ("GITHUB_TOKEN", "LLM_API_KEY", "AWS_SECRET_ACCESS_KEY", "SENPAI_CONFIG", "SENPAI_DEMO_TOKEN")
_LEAKS = f"""
import os, sys
secret = [k for k in {SNOOPED!r} if k in os.environ]
python_env = [k for k in os.environ if k.startswith("PYTHON")]
"""
TRAIN = (
    "import ast\n"
    + _LEAKS
    + """
p = ast.literal_eval(open("params.json").read())
seed = int(os.environ["SEED"])
noise = (seed * 7919 % 13) / 1000
w = p["w"] + SHIFT
with open(os.path.join(os.environ["SENPAI_ARTIFACT_DIR"], "model.json"), "w") as f:
    f.write('{"w": %r, "noise": %r}' % (w, noise))
print("train_leak:", len(secret) + len(python_env))
print("steps:", p.get("steps", 100))
print("val:", w)
"""
)
SCORE = (
    "import json\n"
    + _LEAKS
    + """
art, hold = sys.argv[1], sys.argv[2]
with open(os.path.join(art, "model.json")) as f:
    m = json.load(f)
t = float(open(os.path.join(hold, "target.txt")).read())
print("acc:", 1 - abs(m["w"] - t) + m["noise"])
tree = os.path.exists("train.py") or any(os.path.exists(os.path.join(p or ".", "train.py")) for p in sys.path)
print("leak:", len(secret) + len(python_env) + int(tree))
"""
)
HOLDOUT = {
    "command": "python score.py {artifact} {holdout}",
    "files": ["score.py"],
    "metric": "acc",
    "seeds": [0, 1],
    "min_floor": 0.01,
    "compute": {"key": "steps", "tolerance": 0.25, "seconds": False},
    "guards": {"leak": {"direction": "minimize", "tolerance": 0.0}},
}


def train_py(shift: float = 0.0) -> str:
    """train.py whose model is the params' w moved by `shift` (a code change)."""
    return TRAIN.replace("SHIFT", repr(shift))


def files(test: str | None = None, **holdout) -> dict[str, str]:
    config = {
        "name": "tiny",
        "train": "python train.py",
        "metric": {"name": "val", "direction": "maximize", "source": "stdout"},
        "params": {"file": "params.json", "space": {"w": {"type": "float", "low": 0.0, "high": 1.0}}},
        "holdout": {**HOLDOUT, **holdout},
        "protected": ["score.py"],
        "scope": ["params.json", "*.py"],
        "budget": {"wall_seconds": 60, "attempts": 1},
        **({"test": test} if test else {}),
    }
    return {
        "senpai.yaml": safe_yaml.dump(config),
        "program.md": "# tiny\n",
        "params.json": '{"w": 0.5}\n',
        "train.py": train_py(),
        "score.py": SCORE,
    }


def sealed_holdout(root: Path, target: float = 0.8) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "target.txt").write_text(f"{target}\n")
    return root


def tiny_repo(base_url: str, seed: Path, test: str | None = None, **holdout) -> tuple[GitHubForge, ForgeSettings]:
    """A new repository `senpai/tiny-<hex>` on the local forge whose `main` and `advisor` hold the tiny target."""
    name = f"tiny-{uuid.uuid4().hex[:10]}"
    settings = ForgeSettings(base_url=base_url, repo=f"senpai/{name}", token_env="SENPAI_DEMO_TOKEN", base_branch="advisor")
    create_repository(settings, TOKEN, name)
    forge = GitHubForge(settings, TOKEN)
    seed_repository(forge, seed, files(test, **holdout))
    return forge, settings


def open_candidate(forge: GitHubForge, seed: Path, change: dict[str, str | None]) -> int:
    """Push `change` on a new branch off advisor and open its PR in status:verifying; returns its number."""
    branch = f"senpai/ada/{uuid.uuid4().hex[:8]}"
    commit_and_push(forge, seed, branch, change, start="advisor")
    labels = ["senpai", "student:ada", "status:verifying"]
    return forge.create_pull("candidate", "a candidate", head=branch, base="advisor", labels=labels).number


# Hostile candidates shared by the verifier tests and the gaming corpus.
# Overwrites every score.py it can find in the work dir around its checkout (<work>/candidate/checkout),
# and plants one where an evaluator dir could be.
INTO_EVALUATOR = """
import os
root = os.path.dirname(os.path.dirname(os.getcwd()))
denied = 0
for d, _, names in os.walk(root):
    if "score.py" in names:
        try:
            open(os.path.join(d, "score.py"), "w").write("print('acc: 1.0')\\nprint('leak: 0')\\n")
        except OSError:
            denied += 1
try:
    os.makedirs(os.path.join(root, "score"), exist_ok=True)
    open(os.path.join(root, "score", "score.py"), "w").write("print('acc: 1.0')\\n")
except OSError:
    denied += 1
print("denied:", denied)
"""
SHADOW_JSON = "import sys\nprint('acc: 1.0')\nsys.exit(0)\n"  # a perfect score, if the evaluator ever imports it
PICKLE_TRAIN = """import os, pickle
class Boom:
    def __reduce__(self):
        return (os.system, ("echo pwned > /tmp/senpai-pwned",))
open(os.path.join(os.environ["SENPAI_ARTIFACT_DIR"], "model.pkl"), "wb").write(pickle.dumps(Boom()))
"""
NAN_TRAIN = """import os
open(os.path.join(os.environ["SENPAI_ARTIFACT_DIR"], "model.json"), "w").write('{"w": NaN, "noise": 0}')
"""
