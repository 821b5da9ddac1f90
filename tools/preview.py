"""Offline preview: `pulumi preview --policy-pack policy` without the CLI, plugins or AWS.

    python -m tools.preview [--stack dev] [--view new --view update] [--json] [--mermaid]
                            [--policy-pack-config cfg.json]
    python -m tools.preview --state exported.json   # audit a deployed stack

Runs the real `__main__.py` under the SDK's mock runtime with the config of `Pulumi.<stack>.yaml`
(tools/recording.py), starts the real policy pack as a subprocess and drives it over the analyzer
gRPC protocol as the CLI does (tools/analyzer_client.py), in each engine view (tools/views:
`new`, `update`, `state`; `new` and `update` by default), then prints the resource tree with the
key decisions and the policy report. `--state` runs no program: it audits the output of
`pulumi stack export` as `pulumi policy analyze --file` does.

Exit codes (also in the README):
  0  clean (advisory policy findings allowed)
  1  mandatory policy violations
  2  invalid configuration: the stack file or its values, including a name or request that the
     provider or AWS would reject because of a config value (the config path is named)
  3  the program raised, or asked a lookup the offline preview cannot answer (one line names
     the lookup or the program line and the cause)
  4  the provider or AWS would reject a resource the program declares, not caused by config
     (tools/fidelity.py: naming, request shapes, AWS rules; each finding names the resource), or
     the runtime rehearsal finds a task that would not start, a call its role may not make or an
     instance that would not join (tools/rehearsal/; one line each)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pulumi

from ecs_inference import cost, ledger
from ecs_inference.config.issues import ADVISORY_PREFIX
from ecs_inference.config.stack_file import StackFileError
from ecs_inference.config.stack_file import read_stack_file as read_source
from tools.aws_requests import Finding
from tools.described import SETTING as LOOKUPS_SETTING
from tools.described import DescriptionError, World
from tools.fidelity import check_resources
from tools.preview_report import rejection_outcome, render_mermaid, render_text
from tools.recording import (
    ACCOUNT_ID,
    RecordedResource,
    Recording,
    UnansweredLookupError,
    run_program,
)
from tools.rehearsal import Rehearsal, rehearse
from tools.rehearsal.iam import EvaluatorUnavailableError, prestart
from tools.stack_config import (
    PreviewConfig,
    offline,
    preview_config,
    project_name,
    stack_file_path,
)
from tools.views import DEFAULT_VIEWS, VIEWS
from tools.views.engine import EngineStack, from_recording
from tools.views.packs import PackPool, PolicyRunError

REPO = Path(__file__).resolve().parent.parent
CHECKOUT = (REPO / "pyproject.toml").is_file()
"""Run from this repository's checkout (else from the installed package, `tools/launch.py`,
which ships no IAM evaluator)."""

EXIT_OK, EXIT_VIOLATIONS, EXIT_CONFIG, EXIT_PROGRAM, EXIT_REJECTED = 0, 1, 2, 3, 4
_T = TypeVar("_T")


@dataclass
class PreviewResult:
    """Everything one offline preview produced (also the `--json` document)."""

    stack: str
    ok: bool
    exit_code: int
    error: str | None = None
    resources: list[RecordedResource] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    violations: list[Any] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    """What the provider or AWS would reject (tools/fidelity.py, tools/rehearsal/)."""
    notes: list[str] = field(default_factory=list)
    """What the runtime rehearsal could not check during preview (values known after apply)."""
    views: tuple[str, ...] = ()
    """The engine views the policy pack ran in (each violation names its own)."""
    advisories: list[str] = field(default_factory=list)
    """The plan's predictions of an outage (`components.plan.advisories`), one line each with
    its file and line; counted with the advisory policy findings."""
    stack_notes: list[str] = field(default_factory=list)
    """What the offline preview could not resolve in the stack's config (values set with
    `--secret`, ESC environments) and what stood in for it."""

    def to_json(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "ok": self.ok,
            "exitCode": self.exit_code,
            "error": self.error,
            "resources": [
                {
                    "type": r.type,
                    "name": r.name,
                    "urn": r.urn,
                    "custom": r.custom,
                    "parent": r.parent,
                    "inputs": r.inputs,
                }
                for r in self.resources
            ],
            "outputs": self.outputs,
            "cost": self.outputs.get("cost"),
            "policy": [asdict(v) for v in self.violations],
            "findings": [asdict(f) for f in self.findings],
            "views": list(self.views),
            "notes": self.notes,
            "stackNotes": self.stack_notes,
            "advisories": self.advisories,
            "timings": self.timings,
        }


def read_stack_file(program_dir: Path, stack: str, path: Path | None = None) -> dict[str, Any]:
    """The stack file's document as the offline preview runs it (`--secret` values as
    placeholders of their kind); `{"config": {}}` for a program without any stack file.
    Raises `StackFileError` naming the file (and line)."""
    found = stack_file_path(program_dir, stack, path)
    if found is None:
        return {"config": {}}
    data = dict(read_source(found).data)
    data["config"] = offline(data.get("config") or {})
    return data


def _program_error(exc: BaseException, program_dir: Path) -> str:
    """One line: where in the program (or which lookup) and the cause."""
    if isinstance(exc, UnansweredLookupError):
        return str(exc)
    frames = traceback.extract_tb(exc.__traceback__)
    inside = [f for f in frames if str(program_dir) in (f.filename or "")]
    where = ""
    if inside:
        last = inside[-1]
        where = f" at {Path(last.filename).relative_to(program_dir)}:{last.lineno}"
    cause = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"program error{where}: {type(exc).__name__}" + (f": {cause}" if cause else "")


def run_preview(
    stack: str,
    *,
    program_dir: Path = REPO,
    policy_pack: Path | None = REPO / "policy",
    policy_config: dict[str, Any] | None = None,
    stack_file: Path | None = None,
    views: Sequence[str] = DEFAULT_VIEWS,
    overrides: Sequence[str] = (),
    config_file: Path | None = None,
) -> PreviewResult:
    """Run the program under mocks and the policy pack over gRPC in each of `views` (default
    `new` and `update`); never raises for user errors. The tree, outputs and fidelity checks
    are those of `update`, where every value a request carries is known, as when it is sent.
    `overrides` (`ns:key.path=value`) and `config_file` (a `config:` block) stand in for the
    ESC environments the stack imports (tools/stack_config.py)."""
    timings: dict[str, float] = {}
    start = time.perf_counter()
    prestart()  # the IAM evaluator starts while the program runs
    try:
        settings = preview_config(
            program_dir,
            stack,
            stack_file=stack_file,
            overrides=overrides,
            config_file=config_file,
        )
    except (StackFileError, ValueError) as exc:
        return PreviewResult(stack, False, EXIT_CONFIG, error=str(exc))
    project = project_name(program_dir)
    source = (stack_file or program_dir / f"Pulumi.{stack}.yaml").name
    config = settings.config
    try:
        world = World.parse(
            config.get(LOOKUPS_SETTING), str(config.get("aws:region") or "us-east-1"), source
        )
    except DescriptionError as exc:
        return PreviewResult(stack, False, EXIT_CONFIG, error=str(exc))
    # The packs start while the program runs (tools/views/packs.py).
    packs = (
        PackPool(
            policy_pack,
            policy_config,
            views=views,
            project=project,
            stack=stack,
            config=settings.values,
        )
        if policy_pack is not None
        else None
    )
    # The rehearsal waits on the IAM evaluator (a Node process) and the pack analysis on the
    # pack's process: both run in the background, beside the program's `new` run and the
    # fidelity checks; their results are read in the order the checks report.
    background = _Background(packs)
    try:
        run = _ProgramRun(program_dir, project, stack, settings, world)
        failed = run.run(("update",))
        if failed is None:
            background.rehearse(run)
            if packs is not None and "update" in views:
                background.analyze(run, "update")
            if packs is not None and "new" in views:
                failed = run.run(("new",))
        timings["program"] = time.perf_counter() - start
        if failed is None:
            for view in views:
                background.analyze(run, view)
        result = failed or _checked(run, background, views, timings)
        result.stack_notes = settings.notes
        if "update" in run.recordings:
            result.advisories = [
                w.removeprefix(ADVISORY_PREFIX)
                for w in run.recordings["update"].warnings
                if w.startswith(ADVISORY_PREFIX)
            ]
        return result
    finally:
        background.close()
        if packs is not None:
            packs.close()


class _Background:
    """The rehearsal and the pack analysis of each view, each started once, on its own
    thread (the pack answers one view after another, as the engine's one run does)."""

    def __init__(self, packs: PackPool | None) -> None:
        self.packs = packs
        self._rehearsal_pool = ThreadPoolExecutor(1, thread_name_prefix="preview-rehearsal")
        self._policy_pool = ThreadPoolExecutor(1, thread_name_prefix="preview-policy")
        self.rehearsal: Future[Rehearsal] | None = None
        self.policy: dict[str, Future[list[Any]]] = {}
        self.seconds: dict[str, float] = {"rehearsal": 0.0, "policy": 0.0}
        """Time each part took on its thread (it overlaps the main thread's work)."""

    def _timed(self, part: str, work: Callable[[], _T]) -> Callable[[], _T]:
        def timed() -> _T:
            start = time.perf_counter()
            try:
                return work()
            finally:
                self.seconds[part] += time.perf_counter() - start

        return timed

    def rehearse(self, run: _ProgramRun) -> None:
        """Start the runtime rehearsal of the `update` run."""
        recording = run.recordings["update"]
        region = run.config.get("aws:region") or "us-east-1"
        self.rehearsal = self._rehearsal_pool.submit(
            self._timed(
                "rehearsal",
                lambda: rehearse(
                    recording.resources, region, ACCOUNT_ID, lookups=recording.lookups
                ),
            )
        )

    def analyze(self, run: _ProgramRun, view: str) -> None:
        """Start the pack's analysis of `view` (once; nothing without a pack)."""
        if self.packs is None or view in self.policy:
            return
        packs = self.packs
        self.policy[view] = self._policy_pool.submit(
            self._timed("policy", lambda: packs.analyze(run.engine_stacks((view,))))
        )

    def close(self) -> None:
        """Wait for what has started (nothing outlives the preview); drop what has not."""
        for pool in (self._rehearsal_pool, self._policy_pool):
            pool.shutdown(wait=True, cancel_futures=True)


class _ProgramRun:
    """The program under the mocks of each view it is run in."""

    def __init__(
        self,
        program_dir: Path,
        project: str,
        stack: str,
        settings: PreviewConfig,
        world: World | None = None,
    ):
        self.program_dir, self.project, self.stack = program_dir, project, stack
        self.settings = settings
        self.config = config = settings.values
        self.world = world or World(config.get("aws:region") or "us-east-1")
        self.recordings: dict[str, Recording] = {}

    def run(self, views: Sequence[str]) -> PreviewResult | None:
        """Run under each view's mocks (`update` first); the failure, if the program fails."""
        stack = self.stack
        world = self.world
        try:
            for view in sorted(views, key=lambda v: v != "update"):
                # Each run collects its own undescribed ids.
                world = World(self.world.region, self.world.described, left_out=self.world.left_out)
                with ledger.collecting() as book:
                    recording = run_program(
                        self.program_dir,
                        project=self.project,
                        stack=stack,
                        config=self.config,
                        view=view,
                        secret_keys=self.settings.secret_keys,
                        stack_file=self.settings.stack_file,
                        world=world,
                    )
                self.recordings[view] = recording
                recorded_outputs(recording.outputs, book, self.config.get("aws:region"))
        except pulumi.RunError as exc:
            # The program reports invalid configuration as RunError before registering anything.
            return PreviewResult(
                stack, False, EXIT_CONFIG, error=str(exc) + _derived(world, str(exc))
            )
        except Exception as exc:  # any other failure of the program: reported as one line
            if type(exc).__name__ == "ConfigError":
                # A check raised from the program (components/config/issues.py ConfigError):
                # the config paths are in the message, nothing is half-created.
                return PreviewResult(
                    stack, False, EXIT_CONFIG, error=str(exc) + _derived(world, str(exc))
                )
            return PreviewResult(
                stack, False, EXIT_PROGRAM, error=_program_error(exc, self.program_dir)
            )
        return None

    def engine_stacks(self, views: Sequence[str]) -> list[EngineStack]:
        """Each view as the engine sends it (`state` from the `update` run: its answers are
        the stored outputs)."""
        return [
            from_recording(
                self.recordings["new" if view == "new" else "update"],
                view,
                project=self.project,
                stack=self.stack,
                config=self.config,
            )
            for view in views
        ]


def recorded_outputs(outputs: dict[str, Any], book: ledger.Ledger, region: str | None) -> None:
    """A program that exports no `decisions` or `cost` of its own gets what its components
    recorded (`ecs_inference.ledger`): their decision lines, and the estimate of their cost
    facts at the stack's region."""
    if "decisions" not in outputs and book.decided:
        outputs["decisions"] = dict(book.decided)
    facts = book.stack_input(region)
    if "cost" not in outputs and facts is not None:
        outputs["cost"] = doc = cost.estimate_inputs(facts).to_json()
        if not book.operations:
            doc["notes"].append(
                "no Operations component: no alarms, dashboard or alarm-topic key are counted"
            )


def _derived(world: World, refusal: str) -> str:
    """A refusal's footnotes when it may come from a made-up answer: the ids the program looked
    up that the stack file does not describe, and, for each id the refusal names, the fields
    the checks read that its description leaves out (answered with the preview's defaults)."""
    notes = ""
    ids = list(dict.fromkeys(world.derived))
    if ids:
        notes += (
            f"\nnote: {', '.join(ids)} {'is' if len(ids) == 1 else 'are'} not described under "
            f"`{LOOKUPS_SETTING}` in the stack file, so the offline preview answered the lookups "
            "with made-up values (docs/network.md: describing an existing network)"
        )
    for resource_id, fields in world.left_out.items():
        if resource_id in refusal:
            notes += (
                f"\nnote: the description of {resource_id} under `{LOOKUPS_SETTING}` leaves out "
                f"{', '.join(fields)}, which the checks read: the refusal may come from the "
                "preview's default rather than from AWS (docs/network.md lists the fields; "
                "`python -m tools.describe_vpc` writes them)"
            )
    return notes


def _checked(
    run: _ProgramRun, background: _Background, views: Sequence[str], timings: dict[str, float]
) -> PreviewResult:
    """The fidelity checks, then the runtime rehearsal and the policy pack (started in the
    background by `run_preview`), reported in that order: the first that fails decides."""
    stack, recording = run.stack, run.recordings["update"]
    start = time.perf_counter()
    findings = check_resources(recording.resources, run.config)
    timings["fidelity"] = time.perf_counter() - start
    if findings:
        return _rejected(stack, recording, timings, findings)
    assert background.rehearsal is not None
    notes: list[str] = []
    try:
        rehearsal = background.rehearsal.result()
    except EvaluatorUnavailableError as exc:
        if CHECKOUT:
            return PreviewResult(stack, False, EXIT_PROGRAM, error=f"runtime rehearsal: {exc}")
        # The installed package ships no IAM evaluator (tools/launch.py): said, not hidden.
        rehearsal = None
        notes.append(
            "the runtime rehearsal did not run: the installed package has no IAM evaluator "
            "(preview from a checkout of ecs-inference for the rehearsal)"
        )
    finally:
        timings["rehearsal"] = background.seconds["rehearsal"]
    if rehearsal is not None and rehearsal.findings:
        return _rehearsal_failed(stack, recording, timings, rehearsal)
    violations: list[Any] = []
    if background.packs is not None:
        try:
            for view in views:
                violations += background.policy[view].result()
        except PolicyRunError as exc:
            return PreviewResult(stack, False, EXIT_CONFIG, error=str(exc))
        timings["policy"] = background.seconds["policy"]
    return _verdict(
        PreviewResult(
            stack,
            ok=True,
            exit_code=EXIT_OK,
            resources=recording.resources,
            outputs=recording.outputs,
            violations=violations,
            timings=timings,
            notes=rehearsal.notes if rehearsal is not None else notes,
            views=tuple(views) if background.packs is not None else (),
        )
    )


def _rejected(
    stack: str, recording: Recording, timings: dict[str, float], findings: list[Finding]
) -> PreviewResult:
    from_config = any(f.config_paths for f in findings)
    noun = "problem" if len(findings) == 1 else "problems"
    lines = [
        f"the provider or AWS would reject this stack ({len(findings)} {noun}; "
        f"{rejection_outcome(f.check for f in findings)}):"
    ]
    lines += [f"  - {f}" for f in findings]
    return PreviewResult(
        stack,
        False,
        EXIT_CONFIG if from_config else EXIT_REJECTED,
        error="\n".join(lines),
        resources=recording.resources,
        outputs=recording.outputs,
        timings=timings,
        findings=findings,
    )


def _rehearsal_failed(
    stack: str, recording: Recording, timings: dict[str, float], rehearsal: Any
) -> PreviewResult:
    noun = "problem" if len(rehearsal.findings) == 1 else "problems"
    lines = [
        f"the runtime rehearsal found what AWS would refuse once the stack exists "
        f"({len(rehearsal.findings)} {noun}; tasks would not start or would fail at run time, "
        "or a role would hold more than its duty):"
    ]
    lines += [f"  - {f}" for f in rehearsal.findings]
    return PreviewResult(
        stack,
        False,
        EXIT_REJECTED,
        error="\n".join(lines),
        resources=recording.resources,
        outputs=recording.outputs,
        timings=timings,
        findings=rehearsal.findings,
        notes=rehearsal.notes,
    )


def _verdict(result: PreviewResult) -> PreviewResult:
    """`result` with its exit code: 1 when any view has a mandatory violation."""
    mandatory = [v for v in result.violations if v.enforcement_level == "mandatory"]
    result.ok = not mandatory
    result.exit_code = EXIT_VIOLATIONS if mandatory else EXIT_OK
    return result


def run_audit(
    state_file: Path,
    *,
    policy_pack: Path = REPO / "policy",
    policy_config: dict[str, Any] | None = None,
) -> PreviewResult:
    """Audit an exported stack (`pulumi stack export`) as `deploy.AnalyzeSnapshot` does: no
    program run, Analyze on the stored inputs, AnalyzeStack on the stored outputs."""
    from tools.views.state_file import StateFileError, read_state

    try:
        snapshot = read_state(state_file)
    except StateFileError as exc:
        return PreviewResult("unknown", False, EXIT_CONFIG, error=str(exc))
    start = time.perf_counter()
    try:
        with PackPool(
            policy_pack,
            policy_config,
            views=("state",),
            project=snapshot.project,
            stack=snapshot.stack,
            config=snapshot.config,
        ) as packs:
            violations = packs.analyze([snapshot])
    except PolicyRunError as exc:
        return PreviewResult(snapshot.stack, False, EXIT_CONFIG, error=str(exc))
    return _verdict(
        PreviewResult(
            snapshot.stack,
            ok=True,
            exit_code=EXIT_OK,
            violations=violations,
            timings={"policy": time.perf_counter() - start},
            views=("state",),
        )
    )


def main(argv: list[str] | None = None, prog: str = "python -m tools.preview") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=(__doc__ or "").split("\n")[0])
    parser.add_argument(
        "--stack", default="dev", help="stack name (Pulumi.<stack>.yaml); default dev"
    )
    parser.add_argument(
        "--cwd", type=Path, default=REPO, help="program directory; default the repo"
    )
    parser.add_argument(
        "--policy-pack",
        type=Path,
        default=REPO / "policy",
        help="policy pack directory; default ./policy",
    )
    parser.add_argument("--no-policy", action="store_true", help="skip the policy pack")
    parser.add_argument(
        "--policy-pack-config",
        type=Path,
        help="JSON file in the format of `pulumi preview --policy-pack-config`",
    )
    parser.add_argument(
        "--stack-file", type=Path, help="read config from this file instead of Pulumi.<stack>.yaml"
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="NS:KEY[.PATH]=VALUE",
        help="set one value, as `pulumi config set --path` would (repeatable; the value is "
        "read as YAML); for values an ESC environment would set",
    )
    parser.add_argument(
        "--config-file",
        type=Path,
        help="a YAML file with a `config:` block standing in for the ESC environments the "
        "stack imports (the stack file's own values win)",
    )
    parser.add_argument(
        "--view",
        action="append",
        choices=VIEWS,
        help="engine view to run the pack in (repeatable); default: " + " and ".join(DEFAULT_VIEWS),
    )
    parser.add_argument(
        "--state",
        type=Path,
        help="audit this `pulumi stack export` file instead of running a program",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--mermaid", action="store_true", help="print a Mermaid diagram too")
    args = parser.parse_args(argv)

    policy_config = None
    if args.policy_pack_config:
        from tools.analyzer_client import load_policy_config

        try:
            policy_config = load_policy_config(args.policy_pack_config)
        except ValueError as exc:
            print(f"--policy-pack-config: {exc}", file=sys.stderr)
            return EXIT_CONFIG

    if args.state is not None:
        result = run_audit(
            args.state, policy_pack=args.policy_pack.resolve(), policy_config=policy_config
        )
    else:
        result = run_preview(
            args.stack,
            program_dir=args.cwd.resolve(),
            policy_pack=None if args.no_policy else args.policy_pack.resolve(),
            policy_config=policy_config,
            stack_file=args.stack_file,
            views=tuple(dict.fromkeys(args.view or DEFAULT_VIEWS)),
            overrides=args.config,
            config_file=args.config_file,
        )
    if args.json:
        doc = result.to_json()
        if args.mermaid:
            doc["mermaid"] = render_mermaid(result.resources)
        print(json.dumps(doc, indent=2, default=str))
    else:
        failed = result.exit_code in (EXIT_CONFIG, EXIT_PROGRAM, EXIT_REJECTED)
        print(render_text(result), file=sys.stderr if failed else sys.stdout)
        if args.mermaid and result.resources:
            print("\n```mermaid\n" + render_mermaid(result.resources) + "\n```")
    _close_event_loop()
    return result.exit_code


def _close_event_loop() -> None:
    """Close the fresh loop the mock runtime leaves set (tools/recording.py), so no loop is
    left for the interpreter's exit to collect half torn down."""
    import asyncio
    import contextlib

    with contextlib.suppress(RuntimeError):
        asyncio.get_event_loop_policy().get_event_loop().close()


if __name__ == "__main__":
    sys.exit(main())
