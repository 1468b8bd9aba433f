"""The verifier (no LLM): the trust boundary every merge passes. It re-measures a PR's head against
its base on the sealed holdout and records the verdict: what it measures (`plan`), the job's steps
(`steps`), the judge that drives them and records the block (`judge`), the evaluator's train and
score steps (`evaluate`), the artifact checks (`artifacts`, `onnx_refs`), measurement reuse
(`reuse`), and `senpai validate`'s run of the evaluator on a sample (`sample`, `imports`).

It builds on `senpai.job` and imports nothing of `senpai.agents`, which does not import it either
(the import contracts in pyproject.toml).
"""
