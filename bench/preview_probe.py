"""One measured offline preview in a fresh interpreter (so import time is real), as JSON.

    python -m bench.preview_probe real  --stack prod [--stack-file F] [--resources F.json]
    python -m bench.preview_probe floor --resources F.json

`real` runs the project's preview (program under mocks + the real policy pack over gRPC) in the
engine views `--views` names (default `update`: one view; `new,update` is `make preview`). With
`--resources` (a dump of an earlier run) it first imports the provider modules that run used, so
that pulumi_aws's lazy per-service imports count as import time rather than program time.
`floor` re-registers the same resources — same types, names, parents and inputs, through the
same generated SDK classes (`pulumi_aws.ec2.VpcEndpoint`, ...) but with no logic of its own:
no config, no plan, no Output graph — under the same recording mocks, and analyses them with
an empty policy pack over the same gRPC client: what any program of this size pays. Both print
{"import": s, "program": s, "policy": s, "total": s, "resources": n}; `real` adds "checks" (wall
time after the program: the fidelity checks and the wait for the rehearsal and the pack, which
run in the background) and each part's own duration ("fidelity", "rehearsal", "policy")."""

from __future__ import annotations

import time

_T0 = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parent.parent

EMPTY_PACK_MAIN = """
from pulumi_policy import EnforcementLevel, PolicyPack, ResourceValidationPolicy

# pulumi_policy needs at least one policy; this one looks at nothing.
PolicyPack(
    name="empty-floor",
    enforcement_level=EnforcementLevel.ADVISORY,
    policies=[
        ResourceValidationPolicy(name="noop", description="floor", validate=lambda a, r: None)
    ],
)
"""


def empty_pack(directory: Path) -> Path:
    (directory / "PulumiPolicy.yaml").write_text("runtime: python\nversion: 0.0.1\n")
    (directory / "__main__.py").write_text(EMPTY_PACK_MAIN)
    return directory


SDK_PACKAGES = {"aws": "pulumi_aws", "tls": "pulumi_tls", "awsx": "pulumi_awsx"}


def sdk_attribute(token: str) -> object | None:
    """What a resource type token names in its generated SDK (`aws:ec2/vpcEndpoint:VpcEndpoint`
    -> `pulumi_aws.ec2.VpcEndpoint`), or None. Reading it loads the lazy service module."""
    import importlib

    package, _, rest = token.partition(":")
    if package not in SDK_PACKAGES:
        return None
    module, _, class_name = rest.partition(":")
    module = module.split("/")[0]
    mod = importlib.import_module(SDK_PACKAGES[package])
    if module and module != "index":
        mod = getattr(mod, module)
    return getattr(mod, class_name, None)


def load_provider_modules(types: set[str]) -> None:
    """Import the provider SDK modules the real program used. pulumi_aws loads each service
    module (thousands of generated classes) lazily, on first attribute access, so touch the
    resource's own class: the floor then pays the same SDK import, and the real run counts it as
    import rather than program time."""
    for token in types:
        sdk_attribute(token)


def dump_resources(resources, path: Path) -> None:
    path.write_text(
        json.dumps(
            [
                {
                    "type": r.type,
                    "name": r.name,
                    "urn": r.urn,
                    "custom": r.custom,
                    "parent": r.parent,
                    "inputs": r.inputs,
                }
                for r in resources
            ]
        )
    )


def run_real(
    stack: str,
    stack_file: Path | None,
    resources: Path | None,
    dump: Path | None,
    views: tuple[str, ...],
) -> dict:
    import ecs_inference.platform  # noqa: F401
    from tools.preview import run_preview

    if resources is not None:
        load_provider_modules({r["type"] for r in json.loads(resources.read_text())})
    t_import = time.perf_counter()
    # What `make preview` runs: the program under each view's mocks, the naming, request and
    # AWS-rule checks (real work the floor does not do, timed as its own part) and the pack.
    result = run_preview(stack, program_dir=REPO, stack_file=stack_file, views=views)
    t_end = time.perf_counter()
    if result.error:
        raise SystemExit(result.error)
    if dump:
        dump_resources(result.resources, dump)
    timings = result.timings
    return {
        "import": t_import - _T0,
        "program": timings["program"],
        # After the program: the fidelity checks, then waiting for the rehearsal and the pack
        # analysis (both run in the background, beside the `new` run and the checks).
        "checks": t_end - t_import - timings["program"],
        "total": t_end - _T0,
        # Each part's own duration, on its own thread (they overlap).
        "fidelity": timings["fidelity"],
        "rehearsal": timings["rehearsal"],
        "policy": timings["policy"],
        "findings": len(result.findings),
        "resources": len(result.resources),
        "violations": len(result.violations),
        "views": list(views),
    }


def provider_class(token: str) -> type | None:
    """The generated custom-resource class of a type token, or None (components, unknown
    packages)."""
    import pulumi

    cls = sdk_attribute(token)
    return cls if isinstance(cls, type) and issubclass(cls, pulumi.CustomResource) else None


def typed_props(cls: type, inputs: dict) -> object:
    """The recorded inputs in the resource's generated `<Class>Args` type (as the generated
    constructor passes them), so the SDK's typed serialisation path runs for the floor too."""
    import sys as _sys

    import pulumi
    from pulumi import _types

    args_cls = getattr(_sys.modules[cls.__module__], f"{cls.__name__}Args", None)
    if args_cls is None:
        return inputs
    py_names = {v: k for k, v in _types.input_type_py_to_pulumi_names(args_cls).items()}
    props = args_cls.__new__(args_cls)
    for key, value in inputs.items():
        pulumi.set(props, py_names.get(key, key), value)
    return props


def run_floor(resources_file: Path) -> dict:
    import pulumi

    from tools.analyzer_client import PolicyPackProcess
    from tools.recording import run_function

    recorded = json.loads(resources_file.read_text())
    load_provider_modules({r["type"] for r in recorded})
    t_import = time.perf_counter()

    def program() -> None:
        made: dict[str, pulumi.Resource] = {}
        for r in recorded:
            parent = made.get(r["parent"]) if r["parent"] else None
            opts = pulumi.ResourceOptions(parent=parent)
            if not r["custom"]:
                props = r["inputs"] or None
                made[r["urn"]] = pulumi.ComponentResource(r["type"], r["name"], props, opts)
                continue
            # The same generated SDK class as the real program (so the SDK's per-class output
            # typing and serialisation cost is the same), given the recorded inputs as they are:
            # what a program without any logic of its own would cost.
            cls = provider_class(r["type"]) or pulumi.CustomResource
            resource = cls.__new__(cls)
            props = typed_props(cls, r["inputs"])
            pulumi.CustomResource.__init__(resource, r["type"], r["name"], props, opts)
            made[r["urn"]] = resource

    rec = run_function(program, stack="floor", config={"aws:region": "us-east-1"})
    t_program = time.perf_counter()
    # The floor is only a floor if it registered exactly what the real program did.
    floor_inputs = {(r.type, r.name): r.inputs for r in rec.resources}
    differ = [
        r["name"] for r in recorded if floor_inputs.get((r["type"], r["name"])) != r["inputs"]
    ]
    if differ or len(rec.resources) != len(recorded):
        raise SystemExit(f"floor registered different inputs for {differ[:5]}")
    with tempfile.TemporaryDirectory() as tmp, PolicyPackProcess(empty_pack(Path(tmp))) as pack:
        pack.analyze(rec.resources)
    t_policy = time.perf_counter()
    return {
        "import": t_import - _T0,
        "program": t_program - t_import,
        "policy": t_policy - t_program,
        "total": t_policy - _T0,
        "resources": len(rec.resources),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["real", "floor"])
    parser.add_argument("--stack", default="prod")
    parser.add_argument("--stack-file", type=Path)
    parser.add_argument("--dump-resources", type=Path)
    parser.add_argument("--resources", type=Path)
    parser.add_argument(
        "--views", default="update", help="engine views, comma-separated (real only)"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    if args.mode == "real":
        views = tuple(args.views.split(","))
        result = run_real(args.stack, args.stack_file, args.resources, args.dump_resources, views)
    else:
        result = run_floor(args.resources)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
