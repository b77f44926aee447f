"""A handled (logged at WARNING) traceback, the program goes on, then dies later of another, unhandled error."""
import logging

logging.basicConfig(level=logging.INFO)
log = logging.getLogger("loader")

try:
    open("/nonexistent/cache/index.json")
except FileNotFoundError:
    log.warning("no cache index, rebuilding", exc_info=True)
log.info("indexed %d shards", 8)

config = {"lr": 0.1}
log.info("building the model")
print("batch size:", config["batch_size"])
