"""The engine's views of a stack: what a policy pack sees on a first preview, on a preview of
the deployed stack, and when it audits the stored state (DESIGN §12).

- `new`: the first preview of a new stack. Ids and every attribute the provider computes are
  unknown (the provider's plan), unless the provider knows it at plan time (Terraform
  defaults, autonames, `tagsAll`); applies on unknown values do not run, so whatever the
  program builds from them is unknown too.
- `update`: a preview of the stack once deployed: every id, ARN and name is known, and the
  outputs are what the provider stores.
- `state`: the deployed stack as `pulumi stack export` holds it, analysed the way
  `deploy.AnalyzeSnapshot` does (not a dry run).

The stable entry point for tests and tools is `run_pack`::

    from tools.views import run_pack
    violations = run_pack(records, "new")           # corpus records, tests/policy
    violations = run_pack(recording, "state", project="ecs-inference", stack="prod",
                          config=config_values)     # a program run (tools.recording)

Details: `engine.py` (what the engine sends), `shape.py` (checked inputs and outputs per
view), `provider_schema.py` and `tf_facts.py` (what the provider computes and stores).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.views.shape import VIEWS

if TYPE_CHECKING:
    from tools.views.engine import EngineStack

REPO = Path(__file__).resolve().parents[2]
DEFAULT_VIEWS = ("new", "update")
"""What `tools.preview` (and `make preview`) runs unless told otherwise."""

__all__ = ["DEFAULT_VIEWS", "VIEWS", "engine_stack", "run_pack"]


def engine_stack(
    source: Any,
    view: str,
    *,
    project: str = "ecs-inference",
    stack: str = "dev",
    config: Mapping[str, str] | None = None,
) -> EngineStack:
    """`source` as the engine shows it to a pack in `view`.

    `source` is an `EngineStack` (returned as is), a `tools.recording.Recording` (a program
    run; run it under the mocks of `view`, or of "update" for "state"), or records with
    `type, name, urn, custom, inputs` (and optionally `parent, dependencies,
    property_dependencies, provider, outputs`) such as tests/policy's corpus stacks, whose
    outputs are planned here. `config` is the stack's config (`ns:key` -> string; its
    `aws:*` keys are the default provider's inputs); default none.
    """
    # Imported here: tools.recording itself uses tools.views.shape.
    from tools.recording import Recording
    from tools.views.engine import EngineStack, from_recording, from_records

    if isinstance(source, EngineStack):
        return source
    if isinstance(source, Recording):
        return from_recording(source, view, project=project, stack=stack, config=config or {})
    return from_records(list(source), view, project=project, stack=stack, config=config)


def run_pack(
    source: Any,
    view: str,
    *,
    pack_dir: Path = REPO / "policy",
    policy_config: Mapping[str, Any] | None = None,
    project: str = "ecs-inference",
    stack: str = "dev",
    config: Mapping[str, str] | None = None,
    pack: Any = None,
) -> list[Any]:
    """Run the policy pack on `source` (see `engine_stack`) in `view`, as the engine would:
    ConfigureStack with the stack, project, config and dry-run flag of a preview (`new`,
    `update`; `state` is analysed unconfigured, as `pulumi policy analyze` does), then
    Analyze on the checked inputs and AnalyzeStack on the outputs. Returns the
    `tools.analyzer_client.PolicyViolation`s in the order the pack gave them.

    `pack_dir` defaults to this repository's `policy/`; `policy_config` is a parsed
    `--policy-pack-config`. `pack`: an already started `PolicyPackProcess` to reuse (its
    stack configuration is then the caller's); by default one is started and stopped here.
    """
    from tools.analyzer_client import PolicyPackProcess

    engine = engine_stack(source, view, project=project, stack=stack, config=config)
    if pack is not None:
        return pack.analyze_view(engine)
    with PolicyPackProcess(
        pack_dir,
        config=policy_config,
        stack=engine.stack,
        project=engine.project,
        dry_run=engine.dry_run,
        stack_config=engine.config,
        configure_stack=engine.dry_run,
    ) as process:
        return process.analyze_view(engine)
