"""The command line, `tb-paddle-profile` (commands.py: the parser and the commands)."""

from tb_paddle_profile.cli.commands import main  # noqa: F401
