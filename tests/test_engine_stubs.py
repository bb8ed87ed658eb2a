"""The engine's stubs are a package (python/rmq/_rmqcore/) beside the extension module
(rmq/_rmqcore.abi3.so): importing still loads the engine, and the stubtest step of
scripts/test-all (scripts/stubtest-rmqcore) compares the names of the private stub
modules with the engine's, not only the package's ``__all__``."""

from __future__ import annotations

import ast
import importlib.machinery
import os
import shutil
import subprocess
import sys
from pathlib import Path

import rmq._rmqcore

ROOT = Path(__file__).resolve().parent.parent
STUBTEST = ROOT / "scripts" / "stubtest-rmqcore"
STUB_PACKAGE = ROOT / "python" / "rmq" / "_rmqcore"


def test_the_stub_directory_does_not_shadow_the_extension_module() -> None:
    assert not (STUB_PACKAGE / "__init__.py").exists()
    assert not hasattr(rmq._rmqcore, "__path__")  # a module, not a (namespace) package
    assert rmq._rmqcore.__file__ is not None
    assert rmq._rmqcore.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
    assert callable(rmq._rmqcore.java_string_hash)


def test_stubtest_reports_a_wrong_signature_in_a_private_stub_module(tmp_path: Path) -> None:
    # A copy of the package's sources (no engine binary) with one parameter misnamed, found
    # by mypy first through MYPYPATH; the engine stubtest imports is the installed one.
    copy = tmp_path / "rmq"
    shutil.copytree(
        ROOT / "python" / "rmq",
        copy,
        ignore=shutil.ignore_patterns("*.so", "__pycache__"),
    )
    store_stub = copy / "_rmqcore" / "_store.pyi"
    right = "def get_at(self, commitlog_offset: int)"
    assert right in store_stub.read_text()
    store_stub.write_text(store_stub.read_text().replace(right, "def get_at(self, position: int)"))
    found = subprocess.run(
        [sys.executable, str(STUBTEST), "--concise"],
        env={**os.environ, "MYPYPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert found.returncode == 1, found.stdout + found.stderr
    assert found.stdout.splitlines() == [
        'rmq._rmqcore._store.Store.get_at is inconsistent, stub parameter "position" differs'
        ' from runtime parameter "commitlog_offset"'
    ]


def test_the_package_stub_re_exports_each_engine_name_as_itself() -> None:
    # Editors that follow PEP 484's stub rules strictly (jedi) see a name imported into a
    # stub as private unless it is imported ``as`` itself, whatever ``__all__`` says.
    tree = ast.parse((STUB_PACKAGE / "__init__.pyi").read_text(encoding="utf-8"))
    re_exported = [
        alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.asname == alias.name
    ]
    imported = [
        alias.name for node in tree.body if isinstance(node, ast.ImportFrom) for alias in node.names
    ]
    assert re_exported == imported
    assert sorted([*re_exported, "__version__"]) == sorted(rmq._rmqcore.__all__)
