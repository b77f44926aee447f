"""A failing run whose only traceback was logged at WARNING: the program then gives up with exit status 1."""
import logging
import sys

logging.basicConfig(level=logging.INFO)
log = logging.getLogger("setup")

try:
    int("twelve")
except ValueError:
    log.warning("bad --epochs value, cannot continue", exc_info=True)
    sys.exit(1)
