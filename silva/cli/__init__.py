"""The `silva` command: one module per subcommand group, assembled in silva/cli/main.py."""
