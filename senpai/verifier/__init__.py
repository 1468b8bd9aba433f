"""The verifier (no LLM): the trust boundary every merge passes. It re-measures a PR's head against
its base on the sealed holdout and records the verdict: the plan and the judge (`judge`), the job's
steps (`steps`), the evaluator's train and score steps (`evaluate`), the artifact checks
(`artifacts`, `onnx_refs`), measurement reuse (`reuse`) and `senpai validate`'s run of the evaluator
on a sample (`sample`, `imports`).

It builds on `senpai.job` and imports no agent runtime (`senpai.agents`), nor the agents it runs
imports it (import-linter contracts in pyproject.toml).
"""
