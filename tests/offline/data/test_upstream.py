"""``make data`` from pinned upstream files, served on loopback as raw.githubusercontent.com lays them out.

A real ``python3 -m http.server --bind 127.0.0.1`` serves a tree ``OWNER/REPO/COMMIT/PATH`` holding the raw files of
a few manifest entries (rebuilt byte for byte from the data directory: a downloaded file is its own raw file, and
the Vicuna80 prompts' raw JSON Lines are their rows one a line). ``make data`` runs with ``DATA_SOURCE_BASE`` on that
server: a truncated file and an altered raw input each stop it with an error naming the file, and nothing
half-written remains; once the server serves the right bytes, the run completes and prints each source's licence.
The whole directory from ``../shared/sources`` is rebuilt by ``.ci/run`` (the same command, every file).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

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


def _make_data(tmp_path: Path, out: Path, base: str) -> subprocess.CompletedProcess[str]:
    manifest = tmp_path / "sources.json"
    document = json.loads(MANIFEST.read_text())
    chosen = [f for f in document["files"] if f["path"] in (LICENCE, PROJECT, TRUNCATED, CONVERTED)]
    manifest.write_text(json.dumps({"files": chosen}))
    environment = {
        **{k: v for k, v in os.environ.items() if k not in ("DATA_DIR", "DATA_MIRROR_URL", "DATA_SOURCE_BASE")},
        "PYTHONPATH": f"{ROOT}:{ROOT / 'client'}",
    }
    return subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-o",
            "install",
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
