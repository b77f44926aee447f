import logging
import traceback

log = logging.getLogger("svc.client")


def flaky(n):
    if n == 0:
        raise TimeoutError("read timed out after 5.0 s")
    return n


def test_retry_logs_the_first_failure():
    got = None
    for n in range(2):
        try:
            got = flaky(n)
            break
        except TimeoutError:
            log.warning("request failed, retrying", exc_info=True)
    assert got == 1


def test_parse_falls_back():
    try:
        int("x")
    except ValueError:
        traceback.print_exc()
    assert True


def test_plain():
    assert 1 + 1 == 2


def test_shapes_match():
    rows = [[1, 2, 3], [4, 5]]
    widths = {len(r) for r in rows}
    assert len(widths) == 1, f"ragged rows: {sorted(widths)}"
