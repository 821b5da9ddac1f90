"""Instance life cycles: every launch hook completed on every transition that pauses.

The boot model (what cloud-init and systemd run on which boot) is tested on small user data;
the pools' real user data is tested twice: under the model, through the whole preview, and by
running its pre-pull script with bash against a stand-in IMDS, AWS CLI and docker for each
transition.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from ecs_inference.pools import user_data as scripts
from tools.preview import run_preview
from tools.rehearsal.boot import completed_hooks, watchers
from tools.rehearsal.userdata import Boots, scan

HOOK = "aws autoscaling complete-lifecycle-action --lifecycle-hook-name h --instance-id i"
IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/ecs-inference/vllm@sha256:" + "a" * 64


def script_file(path: str, body: str) -> str:
    return f"cat <<'EOF' > {path}\n{body}\nEOF\nchmod 0755 {path}\n"


def unit(name: str, exec_start: str, extra: str = "") -> str:
    service = f"[Service]\nType=oneshot\nExecStart={exec_start}\n{extra}"
    return script_file(
        f"/etc/systemd/system/{name}", f"{service}[Install]\nWantedBy=multi-user.target"
    )


SBIN = "/usr/local/sbin/x"
SHELL = "#!/bin/bash\n"
PER_BOOT_PART = (
    'Content-Type: multipart/mixed; boundary="B"\nMIME-Version: 1.0\n\n--B\n'
    'Content-Type: text/x-shellscript-per-boot; charset="us-ascii"\n\n'
    f"#!/bin/bash\n{HOOK}\n--B--\n"
)
CASES = [
    # (what, user data, completes on first boot, completes on a later boot)
    ("a command in the user data", f"{SHELL}{HOOK}\n", True, False),
    ("a script started with systemd-run",
     SHELL + script_file(SBIN, HOOK) + f"systemd-run --no-block {SBIN}\n", True, False),
    ("an enabled unit, started now",
     SHELL + script_file(SBIN, HOOK) + unit("x.service", SBIN) + "systemctl enable --now x\n",
     True, True),
    ("an enabled unit, not started",
     SHELL + unit("x.service", f"/bin/bash -c '{HOOK}'") + "systemctl enable x.service\n",
     False, True),
    ("a per-boot script", SHELL + script_file("/var/lib/cloud/scripts/per-boot/x", HOOK),
     False, True),
    ("a heredoc no one runs", SHELL + script_file(SBIN, HOOK), False, False),
    ("a cloud boothook", f"#cloud-boothook\n#!/bin/bash\n{HOOK}\n", True, True),
    ("a MIME per-boot part", PER_BOOT_PART, True, True),
    ("cloud-config bootcmd", f"#cloud-config\nbootcmd:\n  - {HOOK}\n", True, True),
    ("cloud-config runcmd", f"#cloud-config\nruncmd:\n  - {HOOK}\n", True, False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("user_data", "first", "later"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_which_boot_runs_what(user_data: str, first: bool, later: bool) -> None:  # fmt: skip
    boots = Boots.of(user_data)
    assert ("h" in completed_hooks(boots.first)) is first
    assert ("h" in completed_hooks(boots.later)) is later


def test_cloud_config_is_read_as_cloud_config() -> None:
    boots = Boots.of(
        'Content-Type: multipart/mixed; boundary="B"\nMIME-Version: 1.0\n\n--B\n'
        'Content-Type: text/cloud-config; charset="us-ascii"\n\n'
        f"bootcmd:\n  - {HOOK}\nruncmd:\n  - echo once\n--B--\n"
    )
    assert "h" in completed_hooks(boots.first) and "h" in completed_hooks(boots.later)
    assert any("echo once" in s for s in boots.first)
    assert not any("echo once" in s for s in boots.later)


def test_reference_pools_complete_their_hook_on_every_transition() -> None:
    result = run_preview("prod", policy_pack=None)
    assert result.ok, result.error
    (pool,) = [
        r
        for r in result.resources
        if r.type == "aws:autoscaling/group:Group" and r.inputs.get("initialLifecycleHooks")
    ]
    assert pool.inputs["warmPool"]["poolState"] == "Stopped"


def test_a_running_pool_needs_a_script_that_waits_for_service() -> None:
    text = scripts.prepull_script([IMAGE], "us-east-1")
    assert "until" in text
    body = text.replace('  until [[ "$(target)" == InService ]]; do sleep 5; done\n', "")
    boots, without = Boots.of("#!/bin/bash\n" + text), Boots.of("#!/bin/bash\n" + body)
    assert scripts.PREPULL_HOOK in completed_hooks(watchers(boots.first))
    assert scripts.PREPULL_HOOK not in completed_hooks(watchers(without.first))


# -- the real pre-pull script, run --------------------------------------------------------------

STUB = """#!/bin/bash
# Stand-in for {name}: records the call; IMDS answers from files the test writes.
echo "{name} $*" >> "$CALLS"
case "{name} $*" in
  *target-lifecycle-state*) state=$(head -n1 "$STATES"); rest=$(tail -n +2 "$STATES");
                            [ -n "$rest" ] && printf '%s\\n' "$rest" > "$STATES"; echo "$state" ;;
  *api/token*) echo token ;;
  *describe-auto-scaling-instances*) echo my-group ;;
  *meta-data/instance-id*) echo i-0123456789abcdef0 ;;
  *get-login-password*) echo password ;;
esac
"""


def run_prepull(tmp_path: Path, states: list[str]) -> list[str]:
    """Run the pool's pre-pull script with IMDS answering `states` in turn (the last repeats)."""
    files = scan(scripts.prepull_script([IMAGE], "us-east-1")).files
    script = tmp_path / "prepull"
    script.write_text(files["/usr/local/sbin/ecs-inference-prepull"])
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("curl", "aws", "docker", "sleep"):
        stub = bin_dir / name
        stub.write_text(STUB.format(name=name))
        stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "states").write_text("\n".join(states) + "\n")
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "CALLS": str(tmp_path / "calls"),
        "STATES": str(tmp_path / "states"),
    }
    proc = subprocess.run(
        ["bash", str(script)], env={**os.environ, **env}, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return (tmp_path / "calls").read_text().splitlines()


def completions(calls: list[str]) -> list[str]:
    return [c for c in calls if "complete-lifecycle-action" in c]


def test_entering_a_stopped_pool_pulls_then_completes(tmp_path: Path) -> None:
    calls = run_prepull(tmp_path, ["Warmed:Stopped"])
    pulls = [i for i, c in enumerate(calls) if c.startswith("docker pull")]
    (done,) = [i for i, c in enumerate(calls) if "complete-lifecycle-action" in c]
    assert pulls and max(pulls) < done
    assert "--auto-scaling-group-name my-group --instance-id i-0123456789abcdef0" in calls[done]
    assert f"--lifecycle-hook-name {scripts.PREPULL_HOOK}" in calls[done]


def test_a_start_into_service_completes_without_pulling(tmp_path: Path) -> None:
    calls = run_prepull(tmp_path, ["InService"])
    assert len(completions(calls)) == 1
    assert not any(c.startswith("docker pull") for c in calls)


def test_a_running_pool_instance_completes_again_when_it_leaves(tmp_path: Path) -> None:
    calls = run_prepull(tmp_path, ["Warmed:Running", "Warmed:Running", "InService"])
    assert len(completions(calls)) == 2
    assert any(c.startswith("docker pull") for c in calls)
