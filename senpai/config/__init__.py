"""Configuration models: the target's `senpai.yaml` (`target`), the harness settings (`harness`),
the time limits computed from both (`time_limits`) and the job roles (`roles`). Nothing is imported
here: a process that needs only `roles` (the local supervisor) loads no YAML or harness models."""
