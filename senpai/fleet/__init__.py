"""The fleet port (launch, list, logs, delete jobs) and its backends: `local` subprocesses, and
Kubernetes Jobs (`kubernetes.py`, which needs the `kubernetes` extra: `pip install 'senpai[kubernetes]'`;
`senpai.cli.wiring.make_fleet` says so when it is missing). senpai never schedules: the backend does."""
