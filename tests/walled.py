"""A wall for tests that run a verifier step or a train command by hand: the one a job of a harness
config rooted at `root` would put around it (`senpai.job.walls`)."""

from pathlib import Path

from senpai.config.harness import HarnessConfig
from senpai.fleet.wall import Wall
from senpai.job.walls import Walls, walls_of


def harness_at(root: Path, repo: str = "o/r") -> HarnessConfig:
    """A local harness config whose state, tracker and fleet folders lie under `root`."""
    return HarnessConfig.model_validate(
        {
            "forge": {"base_url": "http://127.0.0.1:1", "repo": repo},
            "tracker": {"dir": str(root / "wandb"), "mode": "offline"},
            "fleet": {"backend": "local", "dir": str(root / "jobs")},
            "students": [{"name": "ada"}],
            "state_dir": str(root / "state"),
        }
    )


def walls_at(root: Path) -> Walls:
    """`walls_of(harness_at(root))`."""
    return walls_of(harness_at(root))


def wall_around(folder: Path) -> Wall:
    """The wall of a command that may write `folder` alone (senpai's own folders beside it, hidden)."""
    return walls_at(folder.with_name(folder.name + "-senpai"))([folder], [])
