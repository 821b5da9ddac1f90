"""GatewayDatabase under mocks: private, encrypted, password managed by RDS, gateway-only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ecs_inference.contracts import litellm
from ecs_inference.gateway.database import DatabaseWiring, GatewayDatabase
from ecs_inference.gateway.input import GatewayDatabaseConfig
from tests.aws_shapes import UNKNOWN, validate_shape
from tools.recording import Recording, run_function

SALT = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gw/salt-AbCdEf"


def record(**overrides) -> Recording:
    wiring = DatabaseWiring(
        vpc_id="vpc-0abc",
        subnet_ids=["subnet-a", "subnet-b"],
        gateway_security_group_id="sg-gateway",
    )
    database = GatewayDatabaseConfig.model_validate(
        {"enabled": True, "saltKeySecretArn": SALT, **overrides}
    )
    return run_function(lambda: GatewayDatabase("gw-db", database, wiring))


def test_cluster_is_encrypted_private_and_never_sees_a_password():
    rec = record()
    cluster = rec.one("aws:rds/cluster:Cluster").inputs
    assert cluster["storageEncrypted"] is True
    assert cluster["manageMasterUserPassword"] is True and "masterPassword" not in cluster
    assert cluster["deletionProtection"] is True and cluster["skipFinalSnapshot"] is False
    scaling = cluster["serverlessv2ScalingConfiguration"]
    request = {
        "DBClusterIdentifier": "gw-db-cluster-abc1234",
        "Engine": cluster["engine"],
        "EngineVersion": cluster["engineVersion"],
        "EngineMode": cluster["engineMode"],
        "DatabaseName": cluster["databaseName"],
        "MasterUsername": cluster["masterUsername"],
        "ManageMasterUserPassword": True,
        "StorageEncrypted": True,
        "EnableIAMDatabaseAuthentication": True,
        "DeletionProtection": True,
        "BackupRetentionPeriod": int(cluster["backupRetentionPeriod"]),
        "CopyTagsToSnapshot": True,
        "ServerlessV2ScalingConfiguration": {
            "MinCapacity": scaling["minCapacity"],
            "MaxCapacity": scaling["maxCapacity"],
        },
    }
    validate_shape("rds", "CreateDBCluster", request)
    instance = rec.one("aws:rds/clusterInstance:ClusterInstance").inputs
    assert instance["instanceClass"] == "db.serverless"
    assert instance["publiclyAccessible"] is False
    sg = rec.one("aws:ec2/securityGroup:SecurityGroup").inputs
    (rule,) = sg["ingress"]
    assert (rule["fromPort"], rule["securityGroups"]) == (5432, ["sg-gateway"])
    assert not sg.get("egress")
    subnets = rec.one("aws:rds/subnetGroup:SubnetGroup").inputs
    assert subnets["subnetIds"] == ["subnet-a", "subnet-b"]
    assert UNKNOWN not in (cluster["engine"], cluster["databaseName"])


def test_auto_pause_only_at_zero_capacity():
    paused = record(minCapacityAcu=0.0).one("aws:rds/cluster:Cluster").inputs
    assert paused["serverlessv2ScalingConfiguration"]["secondsUntilAutoPause"] == 300
    steady = record().one("aws:rds/cluster:Cluster").inputs
    assert "secondsUntilAutoPause" not in steady["serverlessv2ScalingConfiguration"]


FAKE_BOTO3 = """
import json, os
class DatabaseResumingException(Exception):
    pass
class _Exceptions:
    DatabaseResumingException = DatabaseResumingException
class _Client:
    exceptions = _Exceptions
    def __init__(self):
        self.resuming = int(os.environ.get("FAKE_RESUMING", "0"))
    def execute_statement(self, **kw):
        if self.resuming:
            self.resuming -= 1
            raise DatabaseResumingException("resuming")
        with open(os.environ["FAKE_CALLS"], "a") as f:
            f.write(json.dumps(kw) + "\\n")
def client(name):
    assert name == "rds-data"
    return _Client()
"""


RUN_HANDLER = """
import json, sys
sys.path.insert(0, sys.argv[1])
import index
class Context:
    def get_remaining_time_in_millis(self):
        return 600_000
print(json.dumps(index.handler(json.loads(sys.argv[2]), Context())))
"""


def run_bootstrap(tmp_path: Path, resuming: int) -> list[dict[str, str]]:
    """Run the real handler (as Lambda would: `index.handler(event, context)`) on the event the
    component sends, with a stand-in boto3 and time.sleep."""
    (tmp_path / "boto3.py").write_text(FAKE_BOTO3)
    (tmp_path / "sitecustomize.py").write_text("import time\ntime.sleep = lambda s: None\n")
    (tmp_path / litellm.BOOTSTRAP_HANDLER_FILE).write_text(litellm.BOOTSTRAP_HANDLER_SOURCE)
    event = litellm.bootstrap_event(
        cluster_arn="arn:aws:rds:us-east-1:123456789012:cluster:gw",
        secret_arn="arn:aws:secretsmanager:us-east-1:123456789012:secret:rds!c-AbCdEf",
        database="litellm",
        user="litellm",
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(tmp_path),
        "FAKE_CALLS": str(tmp_path / "calls"),
        "FAKE_RESUMING": str(resuming),
    }
    argv = [sys.executable, "-c", RUN_HANDLER, str(tmp_path), event]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "db-bootstrap: role litellm ready" in proc.stdout
    lines = (tmp_path / "calls").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_the_bootstrap_is_a_one_off_function_with_its_own_role() -> None:
    """Issue 33 item 4: the master user's grants belong to a function `pulumi up` invokes once,
    never to the gateway's serving task."""
    rec = record()
    function = rec.one("aws:lambda/function:Function").inputs
    assert function["handler"] == litellm.BOOTSTRAP_HANDLER
    code = function["code"]["assets"][litellm.BOOTSTRAP_HANDLER_FILE]["text"]
    assert code == litellm.BOOTSTRAP_HANDLER_SOURCE
    invocation = rec.one("aws:lambda/invocation:Invocation").inputs
    assert invocation["functionName"] == function["name"]
    event = json.loads(invocation["input"])
    assert event["statements"] == list(litellm.bootstrap_statements("litellm", "litellm"))
    policy = json.loads(rec.one("aws:iam/rolePolicy:RolePolicy").inputs["policy"])
    actions = {s["Sid"]: s["Action"] for s in policy["Statement"]}
    assert actions["BootstrapThroughDataApi"] == "rds-data:ExecuteStatement"
    assert actions["DataApiReadsTheMasterSecret"] == "secretsmanager:GetSecretValue"
    trust = json.loads(rec.one("aws:iam/role:Role").inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "lambda.amazonaws.com"}


def test_the_bootstrap_runs_every_statement_through_the_data_api(tmp_path: Path) -> None:
    calls = run_bootstrap(tmp_path, resuming=2)
    assert [c["sql"] for c in calls] == list(litellm.bootstrap_statements("litellm", "litellm"))
    assert {c["resourceArn"] for c in calls} == {"arn:aws:rds:us-east-1:123456789012:cluster:gw"}
    assert all(c["database"] == "litellm" and c["secretArn"].startswith("arn:") for c in calls)


def test_bootstrap_statements_refuse_anything_but_identifiers() -> None:
    with pytest.raises(ValueError, match="identifiers"):
        litellm.bootstrap_statements("litellm; DROP ROLE x", "litellm")
