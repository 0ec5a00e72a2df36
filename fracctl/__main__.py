"""Allow ``python -m fracctl``."""

from fracctl.cli.main import main

main()
