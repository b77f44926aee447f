"""A handled (logged at WARNING) traceback, then the program dies of another, unhandled error."""
import logging

logging.basicConfig(level=logging.INFO)
log = logging.getLogger("loader")

try:
    open("/nonexistent/cache/index.json")
except FileNotFoundError:
    log.warning("no cache index, rebuilding", exc_info=True)

config = {"lr": 0.1}
print("batch size:", config["batch_size"])
