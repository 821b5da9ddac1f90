"""`ecs-inference-preview`: the offline preview of a program in the current directory, from the
installed package (`pip install 'ecs-inference[preview] @ git+<repository URL>'`), with no
checkout of this repository.

    ecs-inference-preview [--cwd DIR] [--stack dev] [--json] [--policy-pack DIR | --no-policy]

The same preview as `python -m tools.preview` in a checkout (tools/preview.py, every option and
exit code): the program under the mocks, the fidelity checks, the runtime rehearsal and, with a
policy pack directory, the pack over gRPC. The package installs these tools as
`ecs_inference.preview`; they import one another as `tools.*`, which this entry point maps to the
installed folder before it loads them. The default program directory is the current one. The
package ships no policy pack and not the rehearsal's IAM evaluator (a development install of
Node packages, docs/fidelity.md): without `--policy-pack` the pack is skipped, and without the
evaluator the rehearsal's IAM checks are skipped, each said in the report.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def _tools_package() -> None:
    """Load this folder as the package `tools` (installed, it is `ecs_inference.preview`; the
    tools name themselves and one another `tools.*`, also in `from tools import x`)."""
    if __package__ == "tools":
        return
    folder = Path(__file__).resolve().parent
    known = sys.modules.get("tools")
    if known is not None:
        if Path(getattr(known, "__file__", "") or "").resolve().parent == folder:
            return
        raise SystemExit(
            f"ecs-inference-preview: another module `tools` is already imported ({known!r}); "
            "run the preview in its own process"
        )
    spec = importlib.util.spec_from_file_location(
        "tools", folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules["tools"] = package
    spec.loader.exec_module(package)


def main(argv: list[str] | None = None) -> int:
    _tools_package()
    from tools import preview

    args = list(sys.argv[1:] if argv is None else argv)
    if not any(a == "--cwd" or a.startswith("--cwd=") for a in args):
        args = ["--cwd", str(Path.cwd()), *args]
    chosen = any(
        a in ("--policy-pack", "--no-policy") or a.startswith("--policy-pack=") for a in args
    )
    if not chosen and not (preview.REPO / "policy").is_dir():
        args.append("--no-policy")
    return preview.main(args, prog="ecs-inference-preview")


if __name__ == "__main__":
    sys.exit(main())
