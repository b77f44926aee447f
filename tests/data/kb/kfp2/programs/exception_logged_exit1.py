"""The error is logged by logger.exception (ERROR) and the program exits 1."""
import logging
import sys

logging.basicConfig(level=logging.INFO)
log = logging.getLogger("train")

try:
    import numpy_missing_module  # noqa: F401
except ImportError:
    log.exception("could not set up the data pipeline")
    sys.exit(1)
