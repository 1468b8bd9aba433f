"""Configuration models: the target's `senpai.yaml` and the harness settings."""

from senpai.config.harness import HarnessConfig, StudentSpec, load_harness
from senpai.config.load import load_yaml_model
from senpai.config.target import Budget, Holdout, Metric, ParamSpec, TargetConfig, load_target

__all__ = [
    "Budget",
    "HarnessConfig",
    "Holdout",
    "Metric",
    "ParamSpec",
    "StudentSpec",
    "TargetConfig",
    "load_harness",
    "load_target",
    "load_yaml_model",
]
