"""The converters that turn pinned raw upstream files into data files, by the name ``sources.json`` gives them.

A converter receives :class:`Inputs` (the verified raw files of its manifest entry, by key
``OWNER/REPO/COMMIT/PATH``) and the entry's ``options``, and returns the data file's bytes; the caller checks
them against the pinned sha256 before anything is written. A converter refuses input it does not understand with
``ValueError`` naming the raw file (and line); it never guesses.

================================  =====================================================  ==========================
name                              data file                                              module
================================  =====================================================  ==========================
``finesure``                      ``frank/llm/finesure/<model>.jsonl``                   ``finesure.py``
``summeval_items``                ``summeval/items.jsonl``                               ``summeval.py``
``summeval_articles``             ``summeval/articles.jsonl``                            ``summeval.py``
``geval_judge``                   ``judges/summeval/{gpt-4o-mini,qwen2.5-72b}.jsonl``    ``geval.py``
``rts_judge``                     ``judges/summeval/{gpt-3.5-turbo-0301,llama-2-*}``     ``shen.py``
``shen_pairwise``                 ``pairwise/summeval/gpt-3.5-turbo-0301.jsonl``         ``shen.py``
``vicuna80_items`` / ``_prompts`` ``pairwise/vicuna80/{items.jsonl,prompts.json}``       ``vicuna80.py``
``vicuna80_human`` / ``_judge``   ``pairwise/vicuna80/{human.jsonl,judges/*.jsonl}``     ``vicuna80.py``
``frank_items`` / ``_articles``   ``frank/{items,articles}.jsonl``                       ``frank.py``
================================  =====================================================  ==========================
"""

from __future__ import annotations

from offline.data.convert import finesure, frank, geval, shen, summeval, vicuna80
from offline.data.convert.files import Converter, Inputs, dump_jsonl, json_lines

__all__ = ["Converter", "Inputs", "converter", "converter_names", "dump_jsonl", "json_lines"]


def _registry() -> dict[str, Converter]:
    return {
        "finesure": finesure.convert,
        "summeval_items": summeval.items,
        "summeval_articles": summeval.articles,
        "geval_judge": geval.judge,
        "rts_judge": shen.rts_judge,
        "shen_pairwise": shen.pairwise,
        "vicuna80_items": vicuna80.items,
        "vicuna80_prompts": vicuna80.prompts,
        "vicuna80_human": vicuna80.human,
        "vicuna80_judge": vicuna80.judge,
        "frank_items": frank.items,
        "frank_articles": frank.articles,
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
