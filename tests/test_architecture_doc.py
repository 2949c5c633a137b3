"""docs/architecture.md matches the code: it names every package and module of the five layers and of research/,
every module file it names exists (so a move or a new module without its line in the map fails here), and its
arrows between packages are the imports between them, no more and no fewer."""

from __future__ import annotations

import re
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("calibration", "artifact", "judges", "service", "offline", "research")
DOC = ROOT / "docs" / "architecture.md"


def _modules() -> list[Path]:
    return sorted(
        path.relative_to(ROOT)
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if path.name != "__init__.py" and "__pycache__" not in path.parts
    )


def _folders() -> list[Path]:
    return sorted(
        path.parent.relative_to(ROOT)
        for package in PACKAGES
        for path in (ROOT / package).rglob("__init__.py")
        if "__pycache__" not in path.parts
    )


def test_the_map_names_every_module_and_package() -> None:
    text = DOC.read_text()
    named = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*\.py", text))
    missing = [str(module) for module in _modules() if module.name not in named]
    assert not missing, f"docs/architecture.md does not name: {', '.join(missing)}"
    folders = [str(folder) for folder in _folders() if f"{folder.name}/" not in text]
    assert not folders, f"docs/architecture.md does not name the packages: {', '.join(folders)}"


def test_every_module_the_map_names_exists() -> None:
    text = DOC.read_text()
    folders = ("tests", "bench", "tools", "client")
    elsewhere = {path.name for folder in folders for path in (ROOT / folder).rglob("*.py")}
    existing = {module.name for module in _modules()} | elsewhere
    stale = sorted(
        name
        for name in set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*\.py", text))
        if name not in existing and not (ROOT / name).exists()
    )
    assert not stale, f"docs/architecture.md names modules that do not exist: {', '.join(stale)}"


def _drawn_arrows(text: str) -> set[tuple[str, str]]:
    """(importer, imported) pairs of the first fenced block's ``importer/  ->  imported/, ...`` lines."""
    block = text.split("```", 2)[1]
    arrows = set()
    for line in block.splitlines():
        match = re.match(r"\s*([a-z_]+)/\s+->\s+([^(]*)", line)
        if match:
            arrows |= {(match.group(1), imported) for imported in re.findall(r"([a-z_]+)/", match.group(2))}
    return arrows


def test_the_arrows_between_packages_are_the_imports() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    real = {
        (importer, imported)
        for importer in PACKAGES
        for imported in PACKAGES
        if importer != imported and graph.direct_import_exists(importer=importer, imported=imported, as_packages=True)
    }
    drawn = _drawn_arrows(DOC.read_text())
    assert ("artifact", "calibration") in real  # the graph holds the imports
    assert not drawn - real, f"docs/architecture.md draws imports the code does not make: {sorted(drawn - real)}"
    assert not real - drawn, f"docs/architecture.md does not draw these imports: {sorted(real - drawn)}"
    assert {importer for importer, _ in drawn} | {"judges"} == set(PACKAGES) - {"calibration"}


def test_the_arrow_reader_reads_a_drawing() -> None:
    drawing = "x\n```\na/  ->  b/, c/   (a note: d/)\nb/  ->  (none of ours)\n```\n"
    assert _drawn_arrows(drawing) == {("a", "b"), ("a", "c")}
