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

from offline.data import (
    convert_finesure,
    convert_frank,
    convert_geval,
    convert_shen,
    convert_summeval,
    convert_vicuna80,
)
from offline.data.convert_io import Converter, Inputs, dump_jsonl, json_lines

__all__ = ["Converter", "Inputs", "converter", "converter_names", "dump_jsonl", "json_lines"]


def _registry() -> dict[str, Converter]:
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
