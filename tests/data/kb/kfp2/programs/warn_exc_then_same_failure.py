"""Retries logged at WARNING with their tracebacks, then the last attempt's error kills the program."""
import logging

logging.basicConfig(level=logging.INFO)
log = logging.getLogger("client")


def connect():
    raise ConnectionRefusedError(111, "Connection refused")


for attempt in range(3):
    try:
        connect()
        break
    except ConnectionRefusedError:
        if attempt == 2:
            raise
        log.warning("connect failed (attempt %d of 3), retrying", attempt + 1, exc_info=True)
