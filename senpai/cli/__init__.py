"""The `senpai` command line: one click group, one module per subcommand."""
