"""``make data`` from pinned upstream files, served on loopback as raw.githubusercontent.com lays them out.

A real ``python3 -m http.server --bind 127.0.0.1`` serves a tree ``OWNER/REPO/COMMIT/PATH`` holding the raw files of
a few manifest entries (rebuilt byte for byte from the data directory: a downloaded file is its own raw file, and
the Vicuna80 prompts' raw JSON Lines are their rows one a line). ``make data`` runs with ``DATA_SOURCE_BASE`` on that
server: a truncated file and an altered raw input each stop it with an error naming the file, and nothing
half-written remains; once the server serves the right bytes, the run completes and prints each source's licence.
The whole directory from ``../shared/sources`` is rebuilt by ``.ci/run`` (the same command, every file).

``make data`` installs the runtime and the ``data`` extra only (a fresh clone needs neither the test nor the study
tooling to build its data): the runs here import with every module of the other extras' own packages refused, and a
dry run of ``make data`` into an empty virtual environment installs nothing else.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from offline.data.fetch import INCOMPLETE_MARKER, STAGING
from offline.data.manifest import MANIFEST, load_manifest
from offline.data.upstream import GITHUB_RAW

ROOT = Path(__file__).resolve().parents[3]
LICENCE, TRUNCATED, CONVERTED, PROJECT = (
    "frank/LICENSE",
    "pairwise/vicuna80/LICENSE",
    "pairwise/vicuna80/prompts.json",
    "judges/summeval/judges.json",
)
PROMPTS_INPUT = (
    "bcdnlp/PRD/35fb99e5d5c7a2f3535811f1edbe417da7563957/data/vicuna80/prompts/vicuna_prompt_threeclass.jsonl"
)


@dataclass
class Upstream:
    """The served tree and the server's base URL."""

    root: Path
    base: str


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def upstream(tmp_path: Path, data_dir: Path) -> Iterator[Upstream]:
    """Raw files of the chosen entries under their keys, served by ``python3 -m http.server`` on loopback."""
    root = tmp_path / "sources"
    entries = {f.path: f for f in load_manifest()}
    for path in (LICENCE, TRUNCATED):
        url = entries[path].url
        assert url is not None and url.startswith(GITHUB_RAW + "/")
        served = root / url.removeprefix(GITHUB_RAW + "/")
        served.parent.mkdir(parents=True, exist_ok=True)
        served.write_bytes((data_dir / path).read_bytes())
    (key,) = [i.key for i in entries[CONVERTED].inputs]
    assert key == PROMPTS_INPUT
    rows = json.loads((data_dir / CONVERTED).read_text(encoding="utf-8"))
    raw = root / key
    raw.parent.mkdir(parents=True)
    raw.write_bytes("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode())
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory", str(root), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield Upstream(root=root, base=f"http://127.0.0.1:{port}")
    finally:
        server.terminate()
        server.wait(timeout=10)


def _closure(requirements: list[str], extras: set[str]) -> set[str]:
    """The distributions ``requirements`` (this project's, with ``extras``) pull in, transitively (normalised names)."""
    found: set[str] = set()
    pending = [(Requirement(text), extras) for text in requirements]
    while pending:
        requirement, wanted = pending.pop()
        if requirement.marker is not None and not any(
            requirement.marker.evaluate({"extra": extra}) for extra in (wanted or {""})
        ):
            continue
        name = re.sub(r"[-_.]+", "-", requirement.name).lower()
        if name in found and not requirement.extras:
            continue
        found.add(name)
        try:
            nested = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue  # an optional dependency that is not installed here
        pending += [(Requirement(text), set(requirement.extras)) for text in nested]
    return found


def _other_extras_modules() -> list[str]:
    """Top-level modules of the distributions only the dev, offline and otel extras bring (not the runtime's or the
    data extra's): what ``make data`` does not install, so must not import."""
    own = importlib.metadata.requires("conformal-judge") or []
    needed = _closure(own, {"data"})
    everything = _closure(own, {"data", "dev", "offline", "otel"})
    refused = everything - needed - {"conformal-judge"}
    return sorted(
        module
        for module, distributions in importlib.metadata.packages_distributions().items()
        if {re.sub(r"[-_.]+", "-", d).lower() for d in distributions} <= refused and module.isidentifier()
    )


_REFUSING_SITECUSTOMIZE = """
import importlib.abc, sys

REFUSED = frozenset({modules!r})


class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in REFUSED:
            raise ImportError(f"{{name}} is not installed by make data (refused by the test)")
        return None


sys.meta_path.insert(0, Refuse())
"""


def _make_data(tmp_path: Path, out: Path, base: str) -> subprocess.CompletedProcess[str]:
    manifest = tmp_path / "sources.json"
    document = json.loads(MANIFEST.read_text())
    chosen = [f for f in document["files"] if f["path"] in (LICENCE, PROJECT, TRUNCATED, CONVERTED)]
    manifest.write_text(json.dumps({"files": chosen}))
    refusing = tmp_path / "refusing"  # the extras make data does not install: importing one fails the run
    refusing.mkdir(exist_ok=True)
    (refusing / "sitecustomize.py").write_text(_REFUSING_SITECUSTOMIZE.format(modules=_other_extras_modules()))
    environment = {
        **{k: v for k, v in os.environ.items() if k not in ("DATA_DIR", "DATA_MIRROR_URL", "DATA_SOURCE_BASE")},
        "PYTHONPATH": f"{refusing}:{ROOT}:{ROOT / 'client'}",
    }
    return subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-o",
            "install-data",
            "data",
            f"DATA_DIR={out}",
            f"DATA_SOURCE_BASE={base}",
            f"DATA_FLAGS=--manifest {manifest} --no-progress --retries 2",
        ],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _half_written(out: Path) -> list[str]:
    """Files that are not complete, verified data files: ``.part`` transfers anywhere under ``out``."""
    return sorted(str(p.relative_to(out)) for p in out.rglob("*.part"))


def test_make_data_refuses_a_truncated_and_an_altered_file_naming_each_and_leaves_nothing_half_written(
    tmp_path: Path, upstream: Upstream, data_dir: Path
) -> None:
    out = tmp_path / "data"
    served_licence = next(p for p in upstream.root.rglob("LICENSE") if "bcdnlp" in str(p))
    good_licence = served_licence.read_bytes()
    served_licence.write_bytes(good_licence[: len(good_licence) // 2])
    raw = upstream.root / PROMPTS_INPUT
    good_raw = raw.read_bytes()
    middle = len(good_raw) // 2
    raw.write_bytes(good_raw[:middle] + bytes([good_raw[middle] ^ 0x20]) + good_raw[middle + 1 :])

    truncated = _make_data(tmp_path, out, upstream.base)
    assert truncated.returncode != 0
    assert f"error: {TRUNCATED}: refused the download from {upstream.base}/bcdnlp/PRD/" in truncated.stderr
    assert "truncated" in truncated.stderr and f"{len(good_licence) // 2} of the expected" in truncated.stderr
    assert not (out / TRUNCATED).exists() and _half_written(out) == []
    assert (out / LICENCE).read_bytes() == (data_dir / LICENCE).read_bytes(), "a verified file is kept"
    assert (out / INCOMPLETE_MARKER).exists()

    served_licence.write_bytes(good_licence)
    altered = _make_data(tmp_path, out, upstream.base)
    assert altered.returncode != 0
    assert f"error: {CONVERTED} (input {PROMPTS_INPUT}): refused the download" in altered.stderr
    assert "sha256" in altered.stderr
    assert not (out / CONVERTED).exists() and _half_written(out) == []
    assert not (out / STAGING / "upstream" / PROMPTS_INPUT).exists(), "an altered input is not kept"

    raw.write_bytes(good_raw)
    done = _make_data(tmp_path, out, upstream.base)
    assert done.returncode == 0, done.stderr
    assert f"data:        {out} (1 fetched, 3 already present)" in done.stdout
    assert "bcdnlp/PRD @ 35fb99e5: MIT (2 data file(s))" in done.stdout
    assert "artidoro/frank @ 80a88fb1: MIT (1 data file(s))" in done.stdout
    assert "this project (offline/data/notes/): the code's licence, MIT (1 data file(s))" in done.stdout
    for path in (LICENCE, PROJECT, TRUNCATED, CONVERTED):
        assert (out / path).read_bytes() == (data_dir / path).read_bytes(), path
    assert not (out / STAGING).exists() and not (out / INCOMPLETE_MARKER).exists()
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == sorted(
        (LICENCE, PROJECT, TRUNCATED, CONVERTED)
    )


def test_the_refused_modules_are_the_other_extras_and_the_runtime_is_not_among_them() -> None:
    refused = _other_extras_modules()
    assert {"matplotlib", "pytest", "hypothesis", "schemathesis", "sklearn", "opentelemetry"} <= set(refused)
    assert not {"numpy", "msgspec", "tqdm", "httpx", "openai", "litestar", "offline"} & set(refused)


def test_make_data_installs_the_runtime_and_the_data_extra_only(tmp_path: Path) -> None:
    """A dry run into an empty virtual environment: the pip commands ``make data`` would run."""
    dry = subprocess.run(
        ["make", "--no-print-directory", "-n", "data", f"VENV={tmp_path / 'venv'}", "DATA_DIR=/nonexistent"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    installs = [line.split("pip install", 1)[1].split() for line in dry.stdout.splitlines() if "pip install" in line]
    targets = [next(word for word in words if not word.startswith("-")) for words in installs]
    assert [t for t in targets if t != "pip"] == [".", "'.[data]'"], dry.stdout
    assert "offline data" in dry.stdout.splitlines()[-1]
