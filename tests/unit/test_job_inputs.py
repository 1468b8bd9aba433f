"""A launch takes its deadline and environment from the tick's `JobInputs`, an input, not state set
on the Dispatcher between ticks; without time limits (senpai.yaml at the base unread, missing or
not fitting the harness config) nothing launches, and the error says why."""

import pytest
import yaml
from tiny_target import files

from senpai.config.harness import HarnessConfig
from senpai.config.target import TargetConfig
from senpai.config.time_limits import TimeLimits
from senpai.errors import ConfigError
from senpai.wrapper.actions import Launch
from senpai.wrapper.dispatch import NOT_READ, Dispatcher, JobInputs

CFG = HarnessConfig.model_validate(
    {"forge": {"repo": "o/r"}, "tracker": {"dir": "/tmp/w"}, "fleet": {"dir": "/tmp/f"}, "state_dir": "/tmp/s",
     "students": [{"name": "ada"}]}
)  # fmt: skip
LAUNCH = Launch("student", "senpai-student-pr3-1", ["student"], pr=3, student="ada")


class Recorder:
    def __init__(self) -> None:
        self.specs = []

    def launch(self, spec) -> None:
        self.specs.append(spec)


def test_a_launch_gets_the_ticks_deadline_and_environment():
    fleet = Recorder()
    time_limits = TimeLimits.of(CFG.times(), TargetConfig.model_validate(yaml.safe_load(files()["senpai.yaml"])))
    Dispatcher(None, fleet, "/h.yaml", {}).apply(LAUNCH, {}, JobInputs(time_limits, {"SENPAI_MIRROR_BASE": "ab12"}))  # type: ignore[arg-type]
    (spec,) = fleet.specs
    assert spec.wall_seconds == 60 and spec.env["SENPAI_MIRROR_BASE"] == "ab12" and spec.env["SENPAI_CONFIG"] == "/h.yaml"


@pytest.mark.parametrize("inputs", [NOT_READ, JobInputs(ConfigError("senpai.yaml at ab12cd34 is missing or invalid"))])
def test_without_time_limits_nothing_launches_and_the_error_says_why(inputs):
    fleet = Recorder()
    with pytest.raises(ConfigError, match=rf"^senpai-student-pr3-1 not launched: {inputs.time_limits}$"):
        Dispatcher(None, fleet, "/h.yaml", {}).apply(LAUNCH, {}, inputs)  # type: ignore[arg-type]
    assert fleet.specs == []
