"""The converters that turn pinned raw upstream files into data files, by the name ``sources.json`` gives them.

A converter receives :class:`Inputs` (the verified raw files of its manifest entry, by key
``OWNER/REPO/COMMIT/PATH``) and the entry's ``options``, and returns the data file's bytes; the caller checks
them against the pinned sha256 before anything is written. A converter refuses input it does not understand with
``ValueError`` naming the raw file (and line); it never guesses.

================================  =====================================================  ==========================
name                              data file                                              module
================================  =====================================================  ==========================
``finesure``                      ``frank/llm/finesure/<model>.jsonl``                   ``convert_finesure.py``
``summeval_items``                ``summeval/items.jsonl``                               ``convert_summeval.py``
``summeval_articles``             ``summeval/articles.jsonl``                            ``convert_summeval.py``
``geval_judge``                   ``judges/summeval/{gpt-4o-mini,qwen2.5-72b}.jsonl``    ``convert_geval.py``
``rts_judge``                     ``judges/summeval/{gpt-3.5-turbo-0301,llama-2-*}``     ``convert_shen.py``
``shen_pairwise``                 ``pairwise/summeval/gpt-3.5-turbo-0301.jsonl``         ``convert_shen.py``
``vicuna80_items`` / ``_prompts`` ``pairwise/vicuna80/{items.jsonl,prompts.json}``       ``convert_vicuna80.py``
``vicuna80_human`` / ``_judge``   ``pairwise/vicuna80/{human.jsonl,judges/*.jsonl}``     ``convert_vicuna80.py``
``frank_items`` / ``_articles``   ``frank/{items,articles}.jsonl``                       ``convert_frank.py``
================================  =====================================================  ==========================
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = ["Converter", "Inputs", "converter", "converter_names", "dump_jsonl", "json_lines"]


class Inputs:
    """The raw files a converter may read: key -> local path of the verified copy."""

    def __init__(self, files: Mapping[str, Path]) -> None:
        self._files = dict(files)

    def keys(self, pattern: str) -> list[str]:
        """The keys matching the shell pattern (``*`` crosses ``/``), sorted.

        Raises:
            ValueError: nothing matches.
        """
        found = sorted(k for k in self._files if fnmatch.fnmatchcase(k, pattern))
        if not found:
            raise ValueError(f"no input matches {pattern!r}")
        return found

    def read(self, key: str) -> bytes:
        """The bytes of one input."""
        return self._files[key].read_bytes()

    def one(self, pattern: str) -> tuple[str, bytes]:
        """The single input matching ``pattern`` and its bytes.

        Raises:
            ValueError: none or several match.
        """
        keys = self.keys(pattern)
        if len(keys) != 1:
            raise ValueError(f"{len(keys)} inputs match {pattern!r}, expected one")
        return keys[0], self.read(keys[0])

    def each(self, pattern: str) -> Iterator[tuple[str, bytes]]:
        """Every input matching ``pattern``, sorted by key, with its bytes."""
        for key in self.keys(pattern):
            yield key, self.read(key)


Converter = Callable[[Inputs, Mapping[str, Any]], bytes]


def json_lines(key: str, raw: bytes) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line of a raw JSON Lines file.

    Raises:
        ValueError: a line is not JSON (the file and line named).
    """
    for number, line in enumerate(raw.decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except ValueError as exc:
            raise ValueError(f"{key}:{number}: not JSON: {exc}") from None


def dump_jsonl(rows: list[dict[str, Any]]) -> bytes:
    """The data directory's JSON Lines form: ``json.dumps`` defaults, UTF-8 kept as is, one row a line."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")


def _registry() -> dict[str, Converter]:
    from offline.data import (
        convert_finesure,
        convert_frank,
        convert_geval,
        convert_shen,
        convert_summeval,
        convert_vicuna80,
    )

    return {
        "finesure": convert_finesure.convert,
        "summeval_items": convert_summeval.items,
        "summeval_articles": convert_summeval.articles,
        "geval_judge": convert_geval.judge,
        "rts_judge": convert_shen.rts_judge,
        "shen_pairwise": convert_shen.pairwise,
        "vicuna80_items": convert_vicuna80.items,
        "vicuna80_prompts": convert_vicuna80.prompts,
        "vicuna80_human": convert_vicuna80.human,
        "vicuna80_judge": convert_vicuna80.judge,
        "frank_items": convert_frank.items,
        "frank_articles": convert_frank.articles,
    }


def converter_names() -> frozenset[str]:
    """Every converter name a manifest may use."""
    return frozenset(_registry())


def converter(name: str) -> Converter:
    """The converter called ``name``.

    Raises:
        KeyError: no such converter.
    """
    return _registry()[name]
