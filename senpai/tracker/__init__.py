"""The tracker port (experiment runs) and its one adapter, the real `wandb` library."""
