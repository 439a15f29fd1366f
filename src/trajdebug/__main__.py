"""``python -m trajdebug``: the command line."""

from trajdebug.cli import main


main()
