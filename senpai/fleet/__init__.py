"""The fleet port (launch, list, logs, delete jobs) and its backends: `local` subprocesses now,
Kubernetes Jobs later. senpai never schedules: the backend does."""
