"""The pieces of a job that the agent runtimes and the verifier share: the turn's context (its
clone, forge, tracker and ledger: `context`), the work copy (`workcopy`), the command run behind
its wall and measured (`measure`, `walls`, `environ`) and the W&B runs it logs (`runs`).

Below `senpai.agents` and `senpai.verifier`, which both build on it and never on each other.
"""
