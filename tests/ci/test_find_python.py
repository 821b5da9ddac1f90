"""The interpreter `make` builds .venv with (tools/find-python), tested with fake interpreters.

Each fake is a shell script standing in for a Python: it answers the finder's probe with the
version it pretends to be, fails it when it pretends to lack venv/ensurepip, and records a
`-m venv` call by creating the environment's pyvenv.cfg. PATH holds only the fakes, so what this
machine has installed plays no part.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FINDER = ROOT / "tools" / "find-python"
MAKE = shutil.which("make")


def fake(bin_dir: Path, name: str, version: str, *, venv: bool = True) -> Path:
    """A fake interpreter `name` that reports `version` ("3.12") and logs how it was called."""
    major, minor = version.split(".")
    path = bin_dir / name
    path.write_text(
        "#!/bin/sh\n"
        f'echo "$0 $*" >> "{bin_dir}/calls.log"\n'
        'if [ "$1" = -m ] && [ "$2" = venv ]; then\n'
        '  /bin/mkdir -p "$3" && : > "$3/pyvenv.cfg"; exit 0\n'
        "fi\n"
        f'echo "{major} {minor}"\n'
        f"exit {0 if venv else 1}\n"
    )
    path.chmod(0o755)
    return path


def find(bin_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(FINDER)],
        env={"PATH": str(bin_dir), **env},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "bin"
    directory.mkdir()
    return directory


def test_the_newest_versioned_interpreter_wins(bin_dir: Path) -> None:
    for name, version in (("python3.11", "3.11"), ("python3.12", "3.12"), ("python3.13", "3.13")):
        fake(bin_dir, name, version)
    fake(bin_dir, "python3", "3.13")
    result = find(bin_dir)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(bin_dir / "python3.13")


@pytest.mark.parametrize("present", [["python3.12"], ["python3.11"], ["python3.11", "python3.12"]])
def test_a_versioned_interpreter_comes_before_python3(bin_dir: Path, present: list[str]) -> None:
    for name in present:
        fake(bin_dir, name, name.removeprefix("python"))
    fake(bin_dir, "python3", "3.13")
    assert find(bin_dir).stdout.strip() == str(bin_dir / max(present))


def test_one_without_venv_is_skipped_for_the_next(bin_dir: Path) -> None:
    fake(bin_dir, "python3.13", "3.13", venv=False)
    fake(bin_dir, "python3.11", "3.11")
    assert find(bin_dir).stdout.strip() == str(bin_dir / "python3.11")


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.14", "4.0"])
def test_python3_is_taken_when_it_is_new_enough(bin_dir: Path, version: str) -> None:
    fake(bin_dir, "python3", version)
    assert find(bin_dir).stdout.strip() == str(bin_dir / "python3")


def test_nothing_usable_says_what_it_needs_and_what_it_found(bin_dir: Path) -> None:
    fake(bin_dir, "python3", "3.10")
    fake(bin_dir, "python3.12", "3.12", venv=False)
    result = find(bin_dir)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "needs Python 3.11 or newer" in result.stderr
    assert f"{bin_dir / 'python3'}: Python 3.10, too old" in result.stderr
    assert f"{bin_dir / 'python3.12'}: Python 3.12 without venv/ensurepip" in result.stderr
    assert "make PYTHON=/path/to/python3.12 preview" in result.stderr


def test_no_python_at_all(bin_dir: Path) -> None:
    result = find(bin_dir)
    assert result.returncode == 1
    assert "none of them is on PATH" in result.stderr


def test_an_interpreter_that_does_not_run_is_named(bin_dir: Path) -> None:
    broken = bin_dir / "python3.13"
    broken.write_text("#!/bin/sh\necho 'pyenv: python3.13: command not found' >&2\nexit 127\n")
    broken.chmod(0o755)
    result = find(bin_dir)
    assert result.returncode == 1
    assert f"{broken}: does not run" in result.stderr


def test_python_names_the_interpreter(bin_dir: Path) -> None:
    fake(bin_dir, "python3.13", "3.13")
    chosen = fake(bin_dir, "custom-python", "3.12")
    assert find(bin_dir, PYTHON=str(chosen)).stdout.strip() == str(chosen)


def test_python_too_old_is_refused_not_replaced(bin_dir: Path) -> None:
    fake(bin_dir, "python3.13", "3.13")
    old = fake(bin_dir, "old-python", "3.10")
    result = find(bin_dir, PYTHON=str(old))
    assert result.returncode == 1
    assert f"PYTHON={old} does not qualify" in result.stderr
    assert "Python 3.10, too old" in result.stderr


def test_python_that_does_not_exist(bin_dir: Path) -> None:
    result = find(bin_dir, PYTHON="python9")
    assert result.returncode == 1
    assert "PYTHON=python9: no such interpreter" in result.stderr


def _preview_prerequisites() -> list[str]:
    """The files `.venv/.preview` depends on, as the repository's Makefile names them."""
    assert MAKE is not None
    listed = subprocess.run(
        [
            MAKE,
            "-s",
            "--no-print-directory",
            "--eval",
            "_files: ; @echo $(PREVIEW_INPUTS)",
            "_files",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return listed.stdout.split()


def _make(tmp_path: Path, bin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The repository's Makefile and finder in a scratch directory, PATH holding only fakes."""
    (tmp_path / "tools").mkdir(exist_ok=True)
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    shutil.copy(FINDER, tmp_path / "tools" / "find-python")
    for name in _preview_prerequisites():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).touch()
    assert MAKE is not None
    return subprocess.run(
        [MAKE, "--no-print-directory", *args],
        cwd=tmp_path,
        env={"PATH": str(bin_dir), "HOME": os.environ.get("HOME", "/")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_make_creates_the_venv_with_the_chosen_interpreter(tmp_path: Path, bin_dir: Path) -> None:
    fake(bin_dir, "python3.12", "3.12")
    fake(bin_dir, "python3", "3.11")
    result = _make(tmp_path, bin_dir, ".venv/pyvenv.cfg")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / ".venv" / "pyvenv.cfg").is_file()
    calls = (bin_dir / "calls.log").read_text().splitlines()
    assert f"{bin_dir / 'python3.12'} -m venv .venv" in calls


def test_make_stops_with_the_finders_message(tmp_path: Path, bin_dir: Path) -> None:
    fake(bin_dir, "python3", "3.9")
    result = _make(tmp_path, bin_dir, "preview")
    assert result.returncode != 0
    assert "needs Python 3.11 or newer" in result.stderr
    assert not (tmp_path / ".venv").exists()
