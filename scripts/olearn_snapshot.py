"""A frozen copy of the olearn package for long experiments: other people may edit olearn while
an experiment runs, so it imports (and runs the CLI from) a copy named by its sources' hash."""
from __future__ import annotations

import hashlib
import importlib.util
import shutil
import tempfile
from pathlib import Path


def source_digest(package: Path) -> str:
    """sha1 over the names and contents of a package's .py files."""
    digest = hashlib.sha1()
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def snapshot_olearn(label: str) -> tuple[Path, str]:
    """Copy the importable olearn package to ``$TMPDIR/olearn-<label>-snapshot-<hash>`` (made
    once); return the folder to put on PYTHONPATH and the hash. Raises RuntimeError when olearn
    is not importable."""
    spec = importlib.util.find_spec("olearn")
    if spec is None or spec.origin is None:
        raise RuntimeError("olearn is not importable by this Python; use the project's venv")
    package = Path(spec.origin).parent
    digest = source_digest(package)
    root = Path(tempfile.gettempdir()) / f"olearn-{label}-snapshot-{digest[:16]}"
    if not root.is_dir():
        staging = Path(tempfile.mkdtemp(prefix=f"olearn-{label}-staging-"))
        shutil.copytree(package, staging / "olearn", ignore=shutil.ignore_patterns("__pycache__"))
        try:
            staging.rename(root)
        except OSError:  # another run made it meanwhile
            shutil.rmtree(staging)
    return root, digest
