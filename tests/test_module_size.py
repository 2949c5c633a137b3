"""Small modules, one concept each: no module of the packages is longer than MAX_LINES, except those listed here,
and packages by concept: no package folder holds more than MAX_MODULES modules (``__init__.py`` not counted).

Each exception names its module and why it stays long; a module that shrinks under the limit must leave the list
(the test says so), so the list only ever holds real exceptions.
"""

from __future__ import annotations

from pathlib import Path

# {path relative to the repository root: why it stays over MAX_LINES} -- one entry per line.
EXCEPTIONS: dict[str, str] = {}

MAX_LINES = 400
MAX_MODULES = 14
ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("artifact", "calibration", "judges", "service", "offline", "research")


def _modules() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_the_packages_hold_modules():
    modules = _modules()
    assert len(modules) > 100  # the whole code base, not an empty glob
    assert all(any(m.relative_to(ROOT).parts[0] == package for m in modules) for package in PACKAGES)


def test_no_module_is_over_the_limit_unless_listed():
    too_long = {
        str(path.relative_to(ROOT)): n
        for path in _modules()
        if (n := _lines(path)) > MAX_LINES and str(path.relative_to(ROOT)) not in EXCEPTIONS
    }
    assert not too_long, f"modules over {MAX_LINES} lines (split by concept, or list with a reason): {too_long}"


def test_every_exception_is_a_long_module_with_a_reason():
    for path, reason in EXCEPTIONS.items():
        module = ROOT / path
        assert module.is_file(), f"{path} is listed but does not exist"
        assert _lines(module) > MAX_LINES, f"{path} is within {MAX_LINES} lines now: remove it from EXCEPTIONS"
        assert reason.strip(), f"{path} needs a reason"


def test_the_limit_is_counted_in_lines(tmp_path: Path):
    sample = tmp_path / "m.py"
    sample.write_text("x = 1\n" * (MAX_LINES + 1))
    assert _lines(sample) == MAX_LINES + 1


def _folder_sizes() -> dict[str, int]:
    folders: dict[str, int] = {}
    for path in _modules():
        if path.name != "__init__.py" and "__pycache__" not in path.parts:
            key = str(path.parent.relative_to(ROOT))
            folders[key] = folders.get(key, 0) + 1
    return folders


def test_no_package_folder_holds_more_than_the_cap():
    sizes = _folder_sizes()
    assert "calibration/conformal" in sizes and "offline/studies/monitoring" in sizes  # subpackages counted
    crowded = {folder: n for folder, n in sizes.items() if n > MAX_MODULES}
    assert not crowded, f"package folders over {MAX_MODULES} modules (split by concept): {crowded}"


def test_every_package_folder_is_a_package():
    loose = [folder for folder in _folder_sizes() if not (ROOT / folder / "__init__.py").is_file()]
    assert not loose, f"folders of modules without __init__.py: {loose}"
