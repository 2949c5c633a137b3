"""The subcommands of ``python -m offline`` (:mod:`offline.cli`): the parser and one handler per subcommand.

Each handler takes the parsed arguments and a structlog logger and returns the exit status; a usage or data error is
raised as :class:`offline.build.inputs.errors.DataError` and becomes exit status 2 in :func:`offline.cli.main`. Handlers
import their study lazily, so ``--help`` and a quick command stay fast.
"""
