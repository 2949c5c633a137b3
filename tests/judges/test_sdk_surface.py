"""The OpenAI SDK's private surface that judges/transport.py stands on is the one this test knows, and the SDK is
pinned to the minor release it was checked against (pyproject.toml).

judges/transport.py builds the chat-completion request once per judge and sends it through the SDK's private
client methods (about half the CPU of a call, measured). A release may rename or re-sign any of them: here every
private name the judges package uses is listed (an unlisted one fails), each is looked up on the installed SDK
with the parameters the transport passes, and the dependency must carry an upper bound that the installed
version satisfies. Moving the pin is one edit of pyproject.toml, and this test says whether the new release
still has what the transport needs.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import tomllib
from importlib import metadata
from pathlib import Path

import openai
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
TRANSPORT = ROOT / "judges" / "transport.py"
# (module, name) of every private import of the judges package
PRIVATE_IMPORTS = {
    ("openai._base_client", "get_platform"),
    ("openai._httpx2", "request_exceptions"),
    ("openai._httpx2", "timeout_exceptions"),
    ("openai._models", "FinalRequestOptions"),
    ("openai._utils", "asyncify"),
}
# private attributes of the SDK client the transport reads or calls, with the keyword parameters it passes
CLIENT_METHODS = {
    "_prepare_options": (),
    "_build_request": ("retries_taken",),
    "_prepare_request": (),
    "_send_request": ("stream",),
    "_make_status_error_from_response": (),
}
CLIENT_ATTRIBUTES = {"_platform", "_client"}
# the fields of FinalRequestOptions.construct(...) in judges/transport.py
OPTION_FIELDS = {"method", "url", "content", "headers", "timeout"}


def _private_uses(package: Path) -> tuple[set[tuple[str, str]], set[str]]:
    """(private imports, private attributes read off the SDK client) in the package's source."""
    imports: set[tuple[str, str]] = set()
    attributes: set[str] = set()
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("openai._"):
                imports |= {(node.module or "", alias.name) for alias in node.names}
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                if isinstance(node.value, ast.Name) and node.value.id in ("client", "sdk", "openai_client"):
                    attributes.add(node.attr)
                elif isinstance(node.value, ast.Attribute) and node.value.attr == "_openai":
                    attributes.add(node.attr)
    return imports, attributes


def test_every_private_use_of_the_sdk_is_listed_here() -> None:
    imports, attributes = _private_uses(ROOT / "judges")
    assert imports == PRIVATE_IMPORTS
    assert attributes == set(CLIENT_METHODS) | CLIENT_ATTRIBUTES


def test_the_installed_sdk_has_every_private_name_with_the_parameters_passed() -> None:
    for module, name in sorted(PRIVATE_IMPORTS):
        assert callable(getattr(importlib.import_module(module), name)), f"{module}.{name}"
    for name, keywords in CLIENT_METHODS.items():
        parameters = inspect.signature(getattr(openai.AsyncOpenAI, name)).parameters
        assert set(keywords) <= set(parameters), (
            f"AsyncOpenAI.{name}{inspect.signature(getattr(openai.AsyncOpenAI, name))}"
        )
    client = openai.AsyncOpenAI(api_key="not-needed", base_url="http://127.0.0.1:9/v1", max_retries=0)
    assert all(hasattr(client, name) for name in CLIENT_ATTRIBUTES)
    options = importlib.import_module("openai._models").FinalRequestOptions
    assert OPTION_FIELDS <= set(options.model_fields)


def test_the_sdk_is_pinned_to_a_release_range_the_installed_version_is_in() -> None:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    (openai_requirement,) = [Requirement(text) for text in dependencies if Requirement(text).name == "openai"]
    uppers = [spec for spec in openai_requirement.specifier if spec.operator in ("<", "<=", "==", "~=")]
    assert uppers, "the SDK needs an upper bound: judges/transport.py uses its private modules"
    assert openai_requirement.specifier.contains(metadata.version("openai"))


def test_an_unlisted_private_use_would_be_caught(tmp_path: Path) -> None:
    """The scan sees a private import and private calls on the client, the way the transport writes them."""
    (tmp_path / "module.py").write_text(
        "from openai._new import thing\nclient._new_method(1)\nself._openai._other\nclient.public()\n"
    )
    assert _private_uses(tmp_path) == ({("openai._new", "thing")}, {"_new_method", "_other"})
    assert TRANSPORT.exists()
