"""JSON log lines: the buffered sink's flush rules, the access line's shape, the clock, the request context."""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import logging
import re
from collections.abc import Callable

import msgspec
import pytest

from service.config.settings import Settings, SettingsError
from service.observability.logging import (
    AppLogs,
    JsonLineSink,
    RequestContext,
    RequestIds,
    current_request,
    library_logs,
    make_logs,
    request_id_from,
)
from tests.service.conftest import AppHarness

ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def _lines(stream: io.StringIO) -> list[dict]:
    return [msgspec.json.decode(line) for line in stream.getvalue().split("\n") if line]


def test_info_lines_wait_for_the_timer_and_leave_in_order():
    stream = io.StringIO()
    sink = JsonLineSink(stream, flush_interval_s=0.05)

    async def write_then_wait() -> tuple[str, str]:
        sink.buffer('{"n":1}')
        sink.buffer('{"n":2}')
        before = stream.getvalue()
        await asyncio.sleep(0.2)
        return before, stream.getvalue()

    before, after = asyncio.run(write_then_wait())
    assert before == ""
    assert after == '{"n":1}\n{"n":2}\n'


def test_a_warning_leaves_at_once_after_the_lines_before_it():
    stream = io.StringIO()
    logs = make_logs("INFO", stream, flush_interval_s=60.0)

    async def log() -> str:
        logs.logger.info("first")
        logs.logger.warning("second")
        return stream.getvalue()

    written = asyncio.run(log())
    assert [line["event"] for line in map(msgspec.json.decode, written.splitlines())] == ["first", "second"]


def test_without_an_event_loop_or_with_interval_zero_every_line_is_written_at_once():
    stream = io.StringIO()
    JsonLineSink(stream, flush_interval_s=60.0).buffer('{"a":1}')  # no running loop in this thread
    assert stream.getvalue() == '{"a":1}\n'
    immediate = io.StringIO()

    async def in_loop() -> str:
        JsonLineSink(immediate, flush_interval_s=0).buffer('{"b":2}')
        return immediate.getvalue()

    assert asyncio.run(in_loop()) == '{"b":2}\n'


def test_a_full_buffer_is_written_without_waiting_for_the_timer():
    stream = io.StringIO()
    sink = JsonLineSink(stream, flush_interval_s=60.0, max_pending=3)

    async def fill() -> list[str]:
        seen = []
        for n in range(3):
            sink.buffer(f'{{"n":{n}}}')
            seen.append(stream.getvalue())
        return seen

    seen = asyncio.run(fill())
    assert seen[:2] == ["", ""] and seen[2] == '{"n":0}\n{"n":1}\n{"n":2}\n'


def test_access_line_has_the_logger_shape_and_a_utc_timestamp():
    stream = io.StringIO()
    logs = make_logs("INFO", stream, access_log="all", flush_interval_s=0)
    context = RequestContext(request_id="req-1", started=0.0, scope={"path_template": "/v1/score"})
    logs.access.record(context, "POST", 200, 0.0012345)
    token = current_request.set(context)
    try:
        logs.logger.info("request", method="POST", status=200, duration_ms=1.23)
    finally:
        current_request.reset(token)
    access, structured = _lines(stream)
    assert list(access) == sorted(access) and list(structured) == sorted(structured)  # keys sorted alike
    assert set(access) == set(structured)
    assert access["duration_ms"] == 1.23 and access["route"] == "/v1/score" and access["request_id"] == "req-1"
    for line in (access, structured):
        assert ISO_UTC.match(line["timestamp"]), line["timestamp"]
        stamped = dt.datetime.strptime(line["timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)
        assert abs((dt.datetime.now(dt.UTC) - stamped).total_seconds()) < 5


@pytest.mark.parametrize(
    ("mode", "level", "logged"),
    [("all", "INFO", [200, 404, 500]), ("errors", "INFO", [404, 500]), ("off", "INFO", []), ("all", "WARNING", [])],
)
def test_access_log_mode_and_level_select_lines(mode: str, level: str, logged: list[int]):
    stream = io.StringIO()
    logs = make_logs(level, stream, access_log=mode, flush_interval_s=0)
    for status in (200, 404, 500):
        logs.access.record(RequestContext(request_id="r", started=0.0, scope={}), "GET", status, 0.001)
    assert [line["status"] for line in _lines(stream)] == logged
    assert all(line["route"] == "<unmatched>" for line in _lines(stream))


def test_access_lines_stay_valid_json_whatever_the_method_and_route():
    stream = io.StringIO()
    logs = make_logs("INFO", stream, access_log="all", flush_interval_s=0)
    odd = {"path_template": '/v1/"quoted"\\path\u2028{id}'}
    logs.access.record(RequestContext(request_id="r.1:2-3_4", started=0.0, scope=odd), 'GE"T', 404, 12.345678)
    (line,) = _lines(stream)
    assert line["route"] == odd["path_template"] and line["method"] == 'GE"T' and line["duration_ms"] == 12345.68


def test_request_ids_are_echoed_when_plain_and_made_otherwise():
    assert request_id_from("abc-123:x.y_z") == "abc-123:x.y_z"
    made = {request_id_from(value) for value in (None, "", "has space", "x" * 129, 'quote"', "line\n")}
    assert len(made) == 6 and all(re.fullmatch(r"[0-9a-f]{32}", value) for value in made)


def test_by_default_only_problem_requests_get_an_access_line():
    assert Settings.from_env({}).access_log == "errors"
    stream = io.StringIO()
    logs = make_logs("INFO", stream, flush_interval_s=0)
    for status in (200, 201, 399, 400, 404, 503):
        logs.access.record(RequestContext(request_id="r", started=0.0, scope={}), "GET", status, 0.001)
    assert [line["status"] for line in _lines(stream)] == [400, 404, 503]


def test_fresh_request_ids_are_unique_plain_and_differ_between_sources():
    first, second = RequestIds(), RequestIds()
    ids = [first.next() for _ in range(1000)]
    assert len(set(ids)) == 1000 and all(re.fullmatch(r"[0-9a-f]{32}", value) for value in ids)
    assert request_id_from(None, first) not in ids
    assert ids[0][:16] != second.next()[:16]  # 64 random bits per source


def test_a_flush_after_the_loop_is_gone_lets_the_next_loop_set_its_timer():
    stream = io.StringIO()
    sink = JsonLineSink(stream, flush_interval_s=0.01)

    async def one_line(text: str) -> None:
        sink.buffer(text)

    asyncio.run(one_line('{"n":1}'))  # the loop ends before its timer fires
    sink.flush()
    assert stream.getvalue() == '{"n":1}\n'

    async def line_and_wait() -> str:
        sink.buffer('{"n":2}')
        await asyncio.sleep(0.1)
        return stream.getvalue()

    assert asyncio.run(line_and_wait()) == '{"n":1}\n{"n":2}\n'


def test_log_flush_ms_is_read_and_validated():
    assert Settings.from_env({"LOG_FLUSH_MS": "0"}).log_flush_ms == 0
    with pytest.raises(SettingsError, match="LOG_FLUSH_MS"):
        Settings.from_env({"LOG_FLUSH_MS": "-1"})


def test_the_app_flushes_buffered_lines_on_shutdown(start_app: Callable[[Settings], AppHarness], make_settings):
    harness = start_app(make_settings(log_flush_ms=10_000, access_log="all"))
    assert harness.client.get("/healthz").status_code == 200
    assert not [line for line in harness.log_lines(flush=False) if line["event"] == "request"]  # still buffered
    harness.client.__exit__(None, None, None)  # lifespan shutdown
    assert [line["route"] for line in harness.log_lines(flush=False) if line["event"] == "request"] == ["/healthz"]


def _write_library_records(logs: AppLogs, saq: logging.Logger, uvicorn_error: logging.Logger) -> None:
    """Inside ``library_logs``: one INFO (dropped), one exception and one warning from the libraries' loggers."""
    with library_logs(logs.logger):
        saq.info("Enqueuing %s", "job")  # below WARNING: not written (the libraries' chatter)
        try:
            raise RuntimeError("redis went away")
        except RuntimeError:
            saq.exception("Error in %s", "poll")
        uvicorn_error.warning("Invalid HTTP request received.")


def test_library_records_are_json_lines_with_the_traceback_in_one_field():
    stream = io.StringIO()
    logs = make_logs("INFO", stream, flush_interval_s=0)
    saq = logging.getLogger("saq.worker")
    uvicorn_error = logging.getLogger("uvicorn.error")
    # another module's in-process uvicorn (its default log config, log_level="error") may have left uvicorn's
    # loggers at ERROR or not propagating: this test sets what it needs and restores it (the served process runs
    # uvicorn with log_config=None, so there they propagate)
    chain = [uvicorn_error, logging.getLogger("uvicorn")]
    previous = [(logger.level, logger.disabled, logger.propagate) for logger in chain]
    root_handlers = list(logging.getLogger().handlers)  # another module's in-process server may hold one of its own
    for logger in chain:
        logger.setLevel(logging.NOTSET if logger is not uvicorn_error else logging.WARNING)
        logger.disabled, logger.propagate = False, True
    try:
        _write_library_records(logs, saq, uvicorn_error)
    finally:
        for logger, (level, disabled, propagate) in zip(chain, previous, strict=True):
            logger.setLevel(level)
            logger.disabled, logger.propagate = disabled, propagate
    saq.error("after the block")  # the handler is gone: not ours to write
    text = stream.getvalue()
    assert text.count("\n") == 2  # two records, one line each
    first, second = _lines(stream)
    assert (first["event"], first["logger"], first["level"], first["message"]) == (
        "library.log", "saq.worker", "error", "Error in poll"
    )  # fmt: skip
    assert first["exception"].startswith("Traceback") and "RuntimeError: redis went away" in first["exception"]
    assert (second["logger"], second["level"], second["message"]) == (
        "uvicorn.error", "warning", "Invalid HTTP request received."
    )  # fmt: skip
    assert logging.getLogger().handlers == root_handlers  # the block removed the handler it added


def test_the_app_writes_library_records_while_it_runs(app: AppHarness):
    logging.getLogger("saq.queue").warning("queue %s is slow", "cj-jobs")
    [line] = [line for line in app.log_lines() if line.get("event") == "library.log"]
    assert (line["logger"], line["message"], line["level"]) == ("saq.queue", "queue cj-jobs is slow", "warning")
