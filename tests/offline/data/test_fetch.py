"""``python -m offline data`` (offline.data.fetch) against a real loopback HTTP server serving the real data.

The server (http.server in a thread) serves a tree whose ``data/`` is the real data directory itself (a mirror of
the data directory), with range requests, and can be told to corrupt, truncate, or fail a path; it records every
request. The manifest under test is the shipped ``offline/data/sources.json``, restricted to subsets. The path from
the pinned upstream files is tested in test_data_upstream.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from offline.build.inputs.arena_ppr import load_arena_ppr
from offline.build.inputs.errors import DataError
from offline.build.inputs.vicuna80 import load_vicuna80
from offline.data.convert.finesure import convert_rows
from offline.data.fetch import INCOMPLETE_MARKER, STAGING, build_data_dir, fetch_data, mirror_url, target_dir
from offline.data.manifest import MANIFEST, DataFile, load_manifest
from offline.data.upstream import GITHUB_RAW, UpstreamFile, load_upstream

ROOT = Path(__file__).resolve().parents[3]
# The project's own files (written from the repository, never fetched from a mirror).
PROJECT = {
    "README.md",
    "judges/summeval/judges.json",
    "pairwise/arena_ppr/SOURCE.json",
    "frank/llm/finesure/LICENSE-NOTE.txt",
}
SMALL = (
    "judges/summeval/judges.json",
    "pairwise/vicuna80/prompts.json",
    "pairwise/vicuna80/LICENSE",
    "frank/LICENSE",
    "summeval/official_format_sample/M8_outputs_annotations.jsonl",
)


@dataclass
class Mirror:
    """The loopback server's state: its root, per-path faults and the requests it answered."""

    root: Path
    url: str = ""
    faults: dict[str, str | int] = field(default_factory=dict)
    requests: list[tuple[str, str | None]] = field(default_factory=list)

    def requested(self, path: str) -> list[str | None]:
        """The Range headers of the requests for ``path`` (None: a whole-file request)."""
        return [r for p, r in self.requests if p == path]


def _handler(state: Mirror) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            """Quiet."""

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            """Serve a file of the root, honouring ``Range: bytes=N-`` and the injected faults."""
            rel = urllib.parse.unquote(self.path.lstrip("/"))
            state.requests.append((rel, self.headers.get("Range")))
            fault = state.faults.get(rel)
            if isinstance(fault, int):
                self.send_error(fault)
                return
            path = state.root / rel
            if not path.is_file():
                self.send_error(404)
                return
            data = path.read_bytes()
            if fault == "corrupt":
                middle = len(data) // 2
                data = data[:middle] + bytes([data[middle] ^ 0x01]) + data[middle + 1 :]
            start = 0
            header = self.headers.get("Range", "")
            if header.startswith("bytes=") and header.endswith("-"):
                start = int(header[len("bytes=") : -1])
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            else:
                self.send_response(200)
            body = data[start:]
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if fault == "truncate-once":
                del state.faults[rel]
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(body)

    return Handler


@pytest.fixture
def mirror(tmp_path: Path, data_dir: Path) -> Iterator[Mirror]:
    """A server whose ``data/`` is the shared data directory; ``mirror.url`` is its base URL."""
    root = tmp_path / "served"
    root.mkdir()
    (root / "data").symlink_to(data_dir.resolve(), target_is_directory=True)
    state = Mirror(root=root)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{server.server_address[1]}/data/"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()
    thread.join()


def _entries(*paths: str, prefix: str | None = None) -> tuple[DataFile, ...]:
    files = load_manifest()
    chosen = tuple(f for f in files if f.path in paths or (prefix is not None and f.path.startswith(prefix)))
    assert chosen and (prefix is not None or len(chosen) == len(paths))
    return chosen


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _leftovers(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.name.endswith(".part"))


def test_manifest_lists_every_data_file_with_the_developed_copy_digest(data_dir: Path) -> None:
    files = load_manifest()
    on_disk = {str(p.relative_to(data_dir)) for p in data_dir.rglob("*") if p.is_file()} - {INCOMPLETE_MARKER}
    assert {f.path for f in files} == on_disk
    pinned = load_upstream()
    for f in files:
        content = (data_dir / f.path).read_bytes()
        assert (len(content), hashlib.sha256(content).hexdigest()) == (f.size, f.sha256), f.path
        assert not f.mirror_only, f"{f.path} has no pinned source"
        if f.url is not None:
            assert f.url.startswith(GITHUB_RAW + "/"), f.path
            commit = f.url.split("/")[5]
            assert len(commit) == 40 and all(c in "0123456789abcdef" for c in commit), f.path
            assert pinned.repository_of(f.url) is not None, f"{f.path}: its repository is not in upstream.json"
        elif f.convert is not None:
            assert f.inputs and all(pinned.files[i.key] == i for i in f.inputs), f.path
        else:
            assert f.path in PROJECT and f.project_path is not None and f.project_path.read_bytes() == content
    assert {f.path for f in files if f.project is not None} == PROJECT


def test_cli_builds_the_layout_from_a_mirror(tmp_path: Path, mirror: Mirror, data_dir: Path) -> None:
    manifest = tmp_path / "sources.json"
    document = json.loads(MANIFEST.read_text())
    manifest.write_text(json.dumps({"files": [f for f in document["files"] if f["path"] in SMALL]}))
    out = tmp_path / "out"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "offline",
            "data",
            "--mirror",
            mirror.url,
            "--out",
            str(out),
            "--manifest",
            str(manifest),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert f"{len(SMALL)} fetched" in run.stdout
    built = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert built == sorted(SMALL)
    for path in SMALL:
        assert _sha(out / path) == _sha(data_dir / path)
    assert sorted(p for p, _ in mirror.requests) == sorted(f"data/{p}" for p in SMALL if p not in PROJECT)


def test_a_full_size_subset_is_read_by_the_loaders(tmp_path: Path, mirror: Mirror, data_dir: Path) -> None:
    files = (*_entries(prefix="pairwise/arena_ppr/"), *_entries(prefix="pairwise/vicuna80/"))
    out = tmp_path / "out"
    ticks: list[int] = []

    class Bar:
        def update(self, n: int) -> None:
            ticks.append(n)

        def close(self) -> None:
            ticks.append(-1)

    report = fetch_data(out, files, mirror=mirror.url, progress=lambda total: Bar())
    assert set(report.fetched) == {f.path for f in files} and report.present == ()
    transferred = sum(f.size for f in files if f.project is None)
    assert sum(t for t in ticks if t > 0) == transferred and ticks[-1] == -1
    for f in files:
        assert _sha(out / f.path) == f.sha256
    assert not (out / INCOMPLETE_MARKER).exists() and _leftovers(out) == []
    fetched, shared = load_arena_ppr(out), load_arena_ppr(data_dir)
    assert fetched.question_ids == shared.question_ids and len(fetched.question_ids) == 26919
    assert sorted(fetched.judges) == sorted(shared.judges)
    assert sorted(load_vicuna80(out).judges) == sorted(load_vicuna80(data_dir).judges)


def test_a_corrupted_file_is_refused_and_not_left_in_place(tmp_path: Path, mirror: Mirror) -> None:
    files = _entries("frank/LICENSE", "pairwise/vicuna80/prompts.json")
    mirror.faults["data/pairwise/vicuna80/prompts.json"] = "corrupt"
    out = tmp_path / "out"
    with pytest.raises(DataError) as caught:
        fetch_data(out, files, mirror=mirror.url, backoff=0)
    message = str(caught.value)
    assert "pairwise/vicuna80/prompts.json" in message and "sha256" in message and "refused" in message
    assert not (out / "pairwise/vicuna80/prompts.json").exists()
    assert _leftovers(out) == []
    assert (out / INCOMPLETE_MARKER).exists(), "an unfinished directory keeps its marker"
    assert len(mirror.requested("data/pairwise/vicuna80/prompts.json")) == 1, (
        "a full download that is wrong is not retried"
    )


def test_a_truncated_download_is_resumed_with_a_range_request(tmp_path: Path, mirror: Mirror, data_dir: Path) -> None:
    path = "pairwise/vicuna80/prompts.json"
    mirror.faults[f"data/{path}"] = "truncate-once"
    out = tmp_path / "out"
    fetch_data(out, _entries(path), mirror=mirror.url, backoff=0)
    size = (data_dir / path).stat().st_size
    assert mirror.requested(f"data/{path}") == [None, f"bytes={size // 2}-"]
    assert _sha(out / path) == _sha(data_dir / path)


def test_an_interrupted_run_resumes_where_it_stopped(tmp_path: Path, mirror: Mirror, data_dir: Path) -> None:
    first, second, third = "frank/LICENSE", "pairwise/vicuna80/LICENSE", "pairwise/vicuna80/prompts.json"
    files = _entries(first, second, third)
    order = [f.path for f in files]
    out = tmp_path / "out"
    mirror.faults[f"data/{order[1]}"] = 500
    with pytest.raises(DataError):
        fetch_data(out, files, mirror=mirror.url, retries=2, backoff=0)
    assert (out / order[0]).exists() and not (out / order[1]).exists()
    # A half-written .part of the third file, as a killed process leaves it (in the staging folder: never at the
    # data file's own path).
    part = out / STAGING / "files" / (order[2] + ".part")
    part.parent.mkdir(parents=True, exist_ok=True)
    content = (data_dir / order[2]).read_bytes()
    part.write_bytes(content[:1000])
    del mirror.faults[f"data/{order[1]}"]
    mirror.requests.clear()
    report = fetch_data(out, files, mirror=mirror.url, backoff=0)
    assert report.present == (order[0],) and report.fetched == (order[1], order[2])
    assert mirror.requested(f"data/{order[0]}") == []
    assert mirror.requested(f"data/{order[2]}") == ["bytes=1000-"]
    for path in order:
        assert _sha(out / path) == _sha(data_dir / path)
    assert not (out / INCOMPLETE_MARKER).exists() and _leftovers(out) == []


def test_a_stale_part_that_gives_a_wrong_digest_is_downloaded_again(
    tmp_path: Path, mirror: Mirror, data_dir: Path
) -> None:
    path = "pairwise/vicuna80/prompts.json"
    out = tmp_path / "out"
    part = out / STAGING / "files" / (path + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes(b"x" * 500)
    fetch_data(out, _entries(path), mirror=mirror.url, backoff=0)
    assert mirror.requested(f"data/{path}") == ["bytes=500-", None]
    assert _sha(out / path) == _sha(data_dir / path)


def test_http_errors_name_the_file(tmp_path: Path, mirror: Mirror) -> None:
    path = "frank/LICENSE"
    mirror.faults[f"data/{path}"] = 404
    with pytest.raises(DataError) as missing:
        fetch_data(tmp_path / "a", _entries(path), mirror=mirror.url, retries=3, backoff=0)
    assert str(missing.value).startswith(f"{path}: HTTP 404")
    assert len(mirror.requested(f"data/{path}")) == 1, "a 404 is not retried"
    mirror.faults[f"data/{path}"] = 500
    mirror.requests.clear()
    with pytest.raises(DataError) as failing:
        fetch_data(tmp_path / "b", _entries(path), mirror=mirror.url, retries=3, backoff=0)
    assert str(failing.value).startswith(f"{path}: could not download") and "after 3 attempts: HTTP 500" in str(
        failing.value
    )
    assert len(mirror.requested(f"data/{path}")) == 3, "a 500 is retried, a bounded number of times"
    assert not (tmp_path / "b" / path).exists()


def test_cli_reports_a_failed_file_with_exit_status_2(tmp_path: Path, mirror: Mirror) -> None:
    manifest = tmp_path / "sources.json"
    document = json.loads(MANIFEST.read_text())
    manifest.write_text(json.dumps({"files": [f for f in document["files"] if f["path"] == "frank/LICENSE"]}))
    mirror.faults["data/frank/LICENSE"] = 404
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "offline",
            "data",
            "--mirror",
            mirror.url,
            "--out",
            str(tmp_path / "out"),
            "--manifest",
            str(manifest),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert run.returncode == 2
    assert "error: frank/LICENSE: HTTP 404" in run.stderr


def test_an_existing_complete_directory_downloads_nothing(tmp_path: Path, mirror: Mirror) -> None:
    files = _entries(*SMALL)
    out = tmp_path / "out"
    fetch_data(out, files, mirror=mirror.url)
    mirror.requests.clear()
    again = fetch_data(out, files, mirror=mirror.url)
    assert again.fetched == () and set(again.present) == set(SMALL)
    assert mirror.requests == []


def test_the_default_directory_is_used_as_is_unless_a_run_was_interrupted(
    tmp_path: Path, mirror: Mirror, data_dir: Path
) -> None:
    manifest = tmp_path / "sources.json"
    document = json.loads(MANIFEST.read_text())
    manifest.write_text(json.dumps({"files": [f for f in document["files"] if f["path"] in SMALL]}))
    used = build_data_dir(None, mirror=mirror.url, manifest=manifest, env={"DATA_DIR": str(data_dir)})
    assert used.used_as_is and used.target == data_dir and mirror.requests == []
    partial = tmp_path / "partial"
    partial.mkdir()
    as_is = build_data_dir(None, mirror=mirror.url, manifest=manifest, env={"DATA_DIR": str(partial)})
    assert as_is.used_as_is and mirror.requests == [], "an existing directory is the user's: not touched"
    (partial / INCOMPLETE_MARKER).touch()
    resumed = build_data_dir(None, mirror=mirror.url, manifest=manifest, env={"DATA_DIR": str(partial)})
    assert not resumed.used_as_is and set(resumed.fetched) == set(SMALL)
    assert not (partial / INCOMPLETE_MARKER).exists()
    missing = tmp_path / "missing"
    built = build_data_dir(None, mirror=mirror.url, manifest=manifest, env={"DATA_DIR": str(missing)})
    assert set(built.fetched) == set(SMALL) and (missing / SMALL[0]).is_file()


def test_files_without_a_source_fail_before_any_download_unless_a_mirror_has_them(
    tmp_path: Path, mirror: Mirror
) -> None:
    (licence,) = _entries("frank/LICENSE")
    sourceless = DataFile(path=licence.path, sha256=licence.sha256, size=licence.size, note="only the curators have it")
    out = tmp_path / "out"
    with pytest.raises(DataError) as caught:
        fetch_data(out, [sourceless], mirror=None)
    message = str(caught.value)
    assert "  frank/LICENSE: only the curators have it" in message and "DATA_MIRROR_URL" in message
    assert not out.exists()
    fetch_data(out, [sourceless], mirror=mirror.url, backoff=0)
    assert _sha(out / licence.path) == licence.sha256


def _raw_finesure(shipped: bytes) -> bytes:
    """FineSurE's raw row form, rebuilt from a shipped file (with the fields the conversion drops)."""
    rows = []
    for line in shipped.decode("utf-8").splitlines():
        r = json.loads(line)
        rows.append(
            {
                "doc_id": r["hash"],
                "source": r["dataset"],
                "split": r["split"],
                "model": r["model_name"],
                "transcript": "article text",
                "reference": "reference summary",
                "sentences": r["sentences"],
                "raw_annotations": r["human_sentence_annotations"],
                "llm_output": r["response"],
                "pred_faithfulness_labels": r["pred_error"],
                "pred_faithfulness_error_type": r["pred_error_type"],
            }
        )
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def test_a_raw_source_is_converted_and_checked(tmp_path: Path, mirror: Mirror, data_dir: Path) -> None:
    (entry,) = _entries("frank/llm/finesure/gpt-4o-2024-05-13.jsonl")
    assert entry.convert == "finesure" and len(entry.inputs) == 1
    raw = _raw_finesure((data_dir / entry.path).read_bytes())
    assert hashlib.sha256(convert_rows("raw", raw)).hexdigest() == entry.sha256
    key = "owner/repo/" + "0" * 40 + "/result/raw.json"
    served = mirror.root / "raw" / key
    served.parent.mkdir(parents=True)
    served.write_bytes(raw)
    local = DataFile(
        path=entry.path,
        sha256=entry.sha256,
        size=entry.size,
        convert="finesure",
        inputs=(UpstreamFile(key, hashlib.sha256(raw).hexdigest(), len(raw)),),
    )
    base = mirror.url.replace("/data/", "/raw")
    out = tmp_path / "out"
    fetch_data(out, [local], source_base=base, backoff=0)
    assert _sha(out / entry.path) == entry.sha256 and _leftovers(out) == [] and not (out / STAGING).exists()
    assert mirror.requested(f"raw/{key}") == [None]
    wrong = DataFile(path=local.path, sha256="0" * 64, size=local.size, convert="finesure", inputs=local.inputs)
    with pytest.raises(DataError, match="finesure conversion of 1 pinned input.* gave .* refused"):
        fetch_data(tmp_path / "wrong", [wrong], source_base=base, backoff=0)
    assert not (tmp_path / "wrong" / entry.path).exists() and _leftovers(tmp_path / "wrong") == []


def test_mirror_url_comes_from_the_flag_or_the_environment() -> None:
    assert mirror_url(None, env={}) is None
    assert mirror_url(None, env={"DATA_MIRROR_URL": "https://example.org/data"}) == "https://example.org/data/"
    assert mirror_url("http://127.0.0.1:1/d/", env={"DATA_MIRROR_URL": "https://x/"}) == "http://127.0.0.1:1/d/"
    with pytest.raises(DataError, match="http"):
        mirror_url("ftp://example.org/data", env={})


def test_make_data_builds_the_directory_the_tests_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`make data && make test` in a fresh clone: without DATA_DIR both mean ../shared/data beside the checkout
    when it exists, else the checkout's .data;
    with it, both mean DATA_DIR."""
    from offline.data.paths import default_data_dir
    from tests.conftest import REPO_ROOT, resolve_data_dir

    monkeypatch.delenv("DATA_DIR", raising=False)
    expected = REPO_ROOT.parent / "shared" / "data"
    if not expected.is_dir():
        expected = REPO_ROOT / ".data"
    assert target_dir(None, {}) == (expected, False) and default_data_dir() == expected
    assert resolve_data_dir() == expected
    monkeypatch.setenv("DATA_DIR", str(tmp_path))
    assert target_dir(None)[0] == resolve_data_dir() == tmp_path
