"""A fetch that fails once, is logged at WARNING with its traceback, and succeeds on the retry."""
import logging
import time

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("fetcher")


def fetch(attempt):
    if attempt == 0:
        raise ConnectionResetError(104, "Connection reset by peer")
    return b"payload"


for attempt in range(3):
    try:
        data = fetch(attempt)
        break
    except ConnectionResetError:
        log.warning("fetch failed on attempt %d, retrying", attempt + 1, exc_info=True)
        time.sleep(0.1)
log.info("fetched %d bytes", len(data))
try:
    import json
    json.loads("{bad json")
except json.JSONDecodeError:
    logging.getLogger("config").info("no cached config, using defaults", exc_info=True)
print("done")
