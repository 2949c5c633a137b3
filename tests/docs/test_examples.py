"""Every shell example of README.md and docs/*.md is run, checked, or listed here with the reason it is not.

The fenced blocks tagged ``sh``, ``bash``, ``shell`` or ``console`` are split into commands (continuation lines
and quotes spanning lines joined, comments dropped, ``&``/``&&``/``;`` separating commands, a pipe's consumer
dropped) and each command is classified:

* ``curl`` against ``localhost:PORT`` / ``127.0.0.1:PORT``: run with the real curl against the service started
  by this module (the shipped calibration, no judge, no keys, Redis for jobs): the answer must be 2xx. Callers
  send their own verdicts in these examples, so no judge is needed. ``3f2a...`` (the job id placeholder of
  docs/jobs.md) is replaced by the id of the job the previous example created; ``@items.jsonl`` is a small file
  of /v1/score bodies in the working directory.
* ``python -m MODULE [SUBCOMMAND] ...`` (not listed below): ``--help`` of that module (and subcommand) must
  succeed and name every ``--option`` the example uses; every ``*.py`` path it names must exist;
  ``python -m pytest`` examples are collected (``--collect-only``).
* ``make TARGET``: the target must exist in the Makefile, and be listed in ``ALLOWED`` with its reason.
* anything else: listed in ``ALLOWED`` (a command prefix) or ``ALLOWED_EXAMPLES`` (one example), each with the
  test that exercises it; a new example that is neither run, checked nor listed fails.

The walk-through of docs/bring-your-own-judge.md (between its ``walkthrough`` markers) is run as written by
tests/test_readme_walkthrough.py and skipped here. A ``http`` block is not supported yet: it fails.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from tests.redis_url import REDIS_TEST_URL
from tests.service.servers import ServedApp, serve_in_thread
from tools.settings_table import settings_modules

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_TAGS = {"sh", "bash", "shell", "console"}
REDIS_URL = REDIS_TEST_URL  # the tests' database (tests/redis_url.py); this module's queue keys are removed afterwards
HOST = re.compile(r"^(?:https?://)?(?:localhost|127\.0\.0\.1):\d+")
JOB_ID_PLACEHOLDER = "3f2a..."

# Command prefixes (after environment assignments; `.venv/bin/` and `python3` normalised) not run here, each with
# where it is exercised. Every test file named in a reason must exist, and every entry must still be used.
ALLOWED = {
    "make serve": "blocks while serving; `python -m service` is started by tests/service/http/test_server.py",
    "make test": "the test suite itself (tests/conftest.py)",
    "make data": "downloads about 60 MB of pinned upstream files; tests/offline/data/test_upstream.py runs it against "
    "a loopback server, and .ci/run builds the whole directory with it",
    "make mutate": "tens of minutes to hours (mutmut on a scratch copy); run by hand, not part of the tests",
    "make worker": "blocks; `python -m service.worker` processes run in tests/service/jobs/test_worker.py",
    "python -m service": "blocks while serving; started as a process by tests/service/http/test_server.py",
    "python -m service.worker": "blocks; worker processes run in tests/service/jobs/test_worker.py",
    "schemathesis run": "minutes per run; the CLI runs against `python -m service` in "
    "tests/service/http/test_schemathesis_cli.py",
    "docker compose": "no Docker engine in the tests; compose.yaml is checked by tests/deploy/test_compose.py",
    "export": "sets the environment of the block's other commands",
    "pip install ./client": "installs the client package; `make install` installs it editable and tests/client "
    "runs it against the service (tests/client/test_service.py)",
    "pip install ./client[integrations]": "installs the client with its eval-tool extras; `make install` installs "
    "it so, and each adapter runs against the service in tests/client/integrations/test_deepeval.py, "
    "tests/client/integrations/test_inspect.py and tests/client/integrations/test_langfuse.py",
    "make local-judge": "builds llama-cpp-python (7-10 minutes the first time) and blocks while serving; .ci/run "
    "runs `make local-judge-install`, and tests/service/live_judge/conftest.py starts the same server "
    "(tools/local_judge.py serve) for the end-to-end tests",
    "make local-judge-report": "calibrates the recorded answers and rewrites docs/local-judge.md; "
    "tests/offline/studies/local_judge/test_command.py runs `python -m offline local-judge` on them",
    "make promptfoo": "installs the recipe's pinned promptfoo from its lock file (about 1.4 GB of node_modules, "
    "90 s); .ci/run runs it, and tests/client/integrations/test_promptfoo.py runs the recipe with it against "
    "the service",
    "examples/promptfoo/node_modules/.bin/promptfoo": "needs the promptfoo install and a model to evaluate; "
    "tests/client/integrations/test_promptfoo.py runs this eval with the echo provider against the service",
}
# Single examples (document, a fragment of the command) not run here, each with where it is exercised.
ALLOWED_EXAMPLES = {
    ("docs/estimates.md", '"job": "3f2a'): "needs a finished job and no worker runs here: the same requests run "
    "against jobs scored by the worker's runner in tests/service/jobs/test_estimates_from_jobs.py",
    ("docs/user-guide.md", '"judge": "smollm2-135m"'): "needs the local judge (make local-judge) and its "
    "calibration: tests/service/live_judge/test_live_judge.py sends the same request to a service whose "
    "JUDGES_FILE is examples/local-judge/judges.json",
    ("README.md", '"judge": "smollm2-135m"'): "needs the local judge (make local-judge) and its calibration: "
    "tests/service/live_judge/test_live_judge.py sends the same request to a service whose JUDGES_FILE is "
    "examples/local-judge/judges.json",
    ("docs/panels.md", '"panel": "jury"'): "needs PANELS_FILE and live judges; a configured panel named jury is "
    "served against judge stand-ins in tests/service/scoring/test_panels.py",
}
ITEMS = [
    {"item_id": "doc7/sysB", "criterion": "relevance", "judge": "gpt-4o-mini-2024-07-18", "judge_score": 4},
    {"item_id": "doc7/sysC", "criterion": "coherence", "judge": "gpt-4o-mini-2024-07-18", "judge_score": 2},
]


@dataclass(frozen=True)
class Example:
    """One command of a fenced block: where it is, its text and its words (as the shell would pass them)."""

    doc: str
    line: int
    text: str
    words: tuple[str, ...]
    order: int = 1  # the n-th command of its line

    @property
    def id(self) -> str:
        """``docs/jobs.md:18`` (``docs/jobs.md:13#2`` for the second command of a line)."""
        return f"{self.doc}:{self.line}" + (f"#{self.order}" if self.order > 1 else "")


def fenced_blocks(path: Path) -> Iterator[tuple[str, int, list[str]]]:
    """(tag, line of the first body line, body lines) of every fenced block, outside the walk-through markers."""
    lines = path.read_text(encoding="utf-8").splitlines()
    skipping = False
    index = 0
    while index < len(lines):
        line = lines[index]
        if "<!-- walkthrough:start -->" in line:
            skipping = True
        elif "<!-- walkthrough:end -->" in line:
            skipping = False
        fence = re.match(r"^(\s*)(```+)\s*([\w-]*)", line)
        if fence:
            end = next(j for j in range(index + 1, len(lines)) if lines[j].strip().startswith(fence.group(2)))
            if not skipping:
                yield fence.group(3).lower(), index + 2, lines[index + 1 : end]
            index = end
        index += 1


def _split(words: list[str]) -> Iterator[list[str]]:
    """The commands of one command line: split at ``&``, ``&&``, ``;``, ``||``; a pipe's consumer dropped."""
    current: list[str] = []
    piped = False
    for word in words:
        if word in ("&", "&&", ";", "||"):
            if current:
                yield current
            current, piped = [], False
        elif word == "|":
            piped = True
        elif not piped:
            current.append(word)
    if current:
        yield current


def commands(doc: str, first_line: int, body: list[str], tag: str) -> Iterator[Example]:
    """The commands of a block: continuation lines and quotes spanning lines joined, comments dropped."""
    buffer: list[str] = []
    start = first_line
    for offset, raw in enumerate(body):
        line = raw
        if tag == "console":
            if not buffer and not line.startswith("$ "):
                continue  # output
            line = line.removeprefix("$ ") if not buffer else line
        if not buffer:
            start = first_line + offset
        buffer.append(line)
        text = "\n".join(buffer)
        if text.rstrip().endswith("\\"):
            continue
        try:
            lexer = shlex.shlex(text.replace("\\\n", " "), posix=True, punctuation_chars="&;|")
            lexer.whitespace_split = True
            lexer.commenters = "#"
            words = list(lexer)
        except ValueError:  # a quote still open: the command goes on on the next line
            continue
        buffer = []
        for order, part in enumerate(_split(words), start=1):
            yield Example(doc, start, text.strip(), tuple(part), order)
    assert not buffer, f"{doc}:{start}: unterminated command"


def examples() -> list[Example]:
    """Every command of every shell block of the README and docs."""
    found = []
    for path in DOCS:
        doc = str(path.relative_to(ROOT))
        for tag, line, body in fenced_blocks(path):
            if tag in SHELL_TAGS:
                found.extend(commands(doc, line, body, tag))
            elif tag == "http":
                found.append(Example(doc, line, "\n".join(body), ("<http block>",)))
    return found


def program(words: tuple[str, ...]) -> list[str]:
    """The words without leading ``NAME=value`` assignments, ``.venv/bin/`` and ``python3`` normalised."""
    rest = list(words)
    while rest and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", rest[0]):
        rest.pop(0)
    if rest:
        rest[0] = rest[0].removeprefix(".venv/bin/").removeprefix("$(BIN)/")
        rest[0] = "python" if rest[0] in ("python3", sys.executable) else rest[0]
    return rest


def allowed_reason(example: Example) -> str | None:
    """Why the example is not run here, if it is listed."""
    for (doc, fragment), reason in ALLOWED_EXAMPLES.items():
        if example.doc == doc and fragment in example.text:
            return reason
    words = program(example.words)
    for prefix, reason in ALLOWED.items():
        if words[: len(prefix.split())] == prefix.split():
            return reason
    return None


def makefile_targets() -> set[str]:
    """The targets the Makefile defines."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z][\w-]*):(?!=)", text, flags=re.MULTILINE))


EXAMPLES = examples()


@pytest.fixture(scope="module")
def served() -> Iterator[ServedApp]:
    """The service as `make serve` runs it (shipped calibration, no judge, no keys), plus Redis for jobs."""
    queue = f"docs-examples-{uuid.uuid4().hex[:8]}"
    settings = settings_modules()[0].Settings.from_env({"REDIS_URL": REDIS_URL, "JOB_QUEUE": queue})
    try:
        with serve_in_thread(settings) as app:
            yield app
    finally:
        client = redis.Redis.from_url(REDIS_URL)
        keys = [*client.scan_iter(f"cj:{queue}:*"), *client.scan_iter(f"saq:*{queue}*")]
        if keys:
            client.delete(*keys)
        client.close()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory curl runs in: ``items.jsonl`` for the jobs example."""
    directory = tmp_path_factory.mktemp("examples")
    (directory / "items.jsonl").write_text("".join(json.dumps(item) + "\n" for item in ITEMS))
    return directory


@pytest.fixture(scope="module")
def answers() -> dict[str, str]:
    """Values earlier examples answered that later ones refer to (the job id)."""
    return {}


def test_docs_have_shell_examples() -> None:
    by_doc = {example.doc for example in EXAMPLES}
    assert {"README.md", "docs/user-guide.md", "docs/jobs.md", "docs/offline.md"} <= by_doc
    assert sum(program(example.words)[0] == "curl" for example in EXAMPLES) >= 10


def test_untagged_blocks_hold_no_commands() -> None:
    """A command in a block without a shell tag would escape this module: tag it ``sh``."""
    command = re.compile(r"^\s*(?:\$ )?(?:curl|make|python3?|\.venv/bin/|PYTHONPATH=|docker)\b")
    for path in DOCS:
        for tag, line, body in fenced_blocks(path):
            if tag not in SHELL_TAGS and tag != "http":
                hits = [text for text in body if command.match(text)]
                assert not hits, f"{path.relative_to(ROOT)}:{line}: untagged block with commands {hits}"


def test_allow_lists_are_used_and_name_existing_tests() -> None:
    used = {allowed_reason(example) for example in EXAMPLES}
    for reason in [*ALLOWED.values(), *ALLOWED_EXAMPLES.values()]:
        assert reason in used, f"stale allow-list entry: {reason}"
        for named in re.findall(r"tests/[\w/]+\.py", reason):
            assert (ROOT / named).is_file(), f"{named} (named in the allow-list) does not exist"


@pytest.mark.parametrize("example", EXAMPLES, ids=[example.id for example in EXAMPLES])
def test_example(example: Example, served: ServedApp, workdir: Path, answers: dict[str, str]) -> None:
    words = program(example.words)
    assert words != ["<http block>"], f"{example.id}: http blocks are not run yet; use a curl example"
    if words[0] == "make":
        assert words[1] in makefile_targets(), f"{example.id}: no Makefile target {words[1]!r}"
    reason = allowed_reason(example)
    if reason is not None:
        return  # listed, with where it is exercised (test_allow_lists_are_used_and_name_existing_tests)
    if words[0] == "curl":
        _run_curl(example, words, served, workdir, answers)
    elif words[:2] == ["python", "-m"]:
        _check_module(example, words[2:])
    else:
        pytest.fail(f"{example.id}: {example.text!r} is neither run nor listed in ALLOWED / ALLOWED_EXAMPLES")


def _run_curl(example: Example, words: list[str], served: ServedApp, workdir: Path, answers: dict[str, str]) -> None:
    """Run the curl command against the served app; the answer must be 2xx."""
    urls = [i for i, word in enumerate(words) if HOST.match(word)]
    assert len(urls) == 1, f"{example.id}: expected one localhost URL in {words}"
    command = list(words)
    command[urls[0]] = HOST.sub(served.url, command[urls[0]])
    if JOB_ID_PLACEHOLDER in command[urls[0]]:
        assert "job_id" in answers, f"{example.id}: no earlier example created a job"
        command[urls[0]] = command[urls[0]].replace(JOB_ID_PLACEHOLDER, answers["job_id"])
    assert not any("$" in word for word in command), f"{example.id}: shell variables are not supported"
    body = workdir / "answer.out"
    command += ["--max-time", "60", "-o", str(body), "-w", "%{http_code}"]
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, f"{example.id}: curl failed: {done.stderr}"
    status = int(done.stdout.strip()[-3:])
    text = body.read_text(errors="replace")
    assert 200 <= status < 300, f"{example.id}: {status} {text[:500]}"
    if text.startswith("{"):
        answer = json.loads(text)
        if "job_id" in answer:
            answers["job_id"] = answer["job_id"]


def _check_module(example: Example, arguments: list[str]) -> None:
    """``--help`` of the module (and subcommand) succeeds and names every option the example uses."""
    module, rest = arguments[0], arguments[1:]
    for path in (word for word in rest if word.endswith(".py") and "/" in word):
        assert (ROOT / path).is_file(), f"{example.id}: {path} does not exist"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if module == "pytest":
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", *rest],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"{example.id}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
        return
    subcommand = [rest[0]] if rest and not rest[0].startswith("-") else []
    done = subprocess.run(
        [sys.executable, "-m", module, *subcommand, "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, (
        f"{example.id}: `python -m {module} {' '.join(subcommand)} --help` failed: {done.stderr[-2000:]}"
    )
    options = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", done.stdout))
    used = {match for word in rest for match in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", word)}
    assert used <= options, f"{example.id}: options not accepted: {sorted(used - options)}"
