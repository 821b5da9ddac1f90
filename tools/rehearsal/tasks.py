"""A task start on its launch type, as ECS documents it, and the calls its containers make.

Before any container of a task starts, ECS (the agent on EC2 and Managed Instances, Fargate
itself) with the task's execution role:
- pulls every container's image: `ecr:GetAuthorizationToken`, then `ecr:BatchGetImage` and
  `ecr:GetDownloadUrlForLayer` on the image's repository (sidecars too). On EC2 a task without
  an execution role pulls with the container instance role; Fargate and Managed Instances need
  the execution role ("Amazon ECS task execution IAM role");
- reads every `secrets[].valueFrom` (Secrets Manager `GetSecretValue`, SSM `GetParameters`) and
  a private registry's `repositoryCredentials` secret; with a customer key, `kms:Decrypt` through
  the service, which the key policy must allow as well; the execution role is needed on every
  launch type. It reads them only then, so a password from a secret RDS rotates is refused;
- creates each awslogs container's stream `<prefix>/<container>/<task id>` and puts events to it
  (`CreateLogStream`, `PutLogEvents`; `CreateLogGroup` with `awslogs-create-group`);
- mounts every EFS volume; with IAM authorisation, with the task role (`ClientMount`, and
  `ClientWrite` when a container mounts it writable), evaluated with the file system policy and
  the access point and TLS the mount uses.
Then the containers' own calls (declared beside each image's contract, `contracts/aws_calls.py`)
and ECS Exec's `ssmmessages` channels (when the service enables it) are made with the task role.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from ecs_inference.contracts.aws_calls import AwsCall
from tools.aws_requests import Resource
from tools.aws_shapes import UNKNOWN
from tools.rehearsal.calls import TASK_ID, Call, Refusal, Unverified, session_arn
from tools.rehearsal.model import SERVICE, Launch, Role, StackModel, document, known, listify
from tools.rehearsal.registry import ImageReferenceError, ecr_repository
from tools.rehearsal.secrets import secret_reads, stale_password

Check = Call | Unverified | Refusal
ContainerCalls = Callable[[Mapping[str, str]], Sequence[AwsCall]]

LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
FILE_SYSTEM_POLICY = "aws:efs/fileSystemPolicy:FileSystemPolicy"
ACCESS_POINT = "aws:efs/accessPoint:AccessPoint"
FILE_SYSTEM = "aws:efs/fileSystem:FileSystem"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"

ECS_EXEC_CHANNELS = (
    "ssmmessages:CreateControlChannel",
    "ssmmessages:CreateDataChannel",
    "ssmmessages:OpenControlChannel",
    "ssmmessages:OpenDataChannel",
)
"""What the SSM agent ECS injects into a task calls with the task role for an Exec session."""

EFS_DEFAULT_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"AWS": "*"},
            "Action": [
                "elasticfilesystem:ClientRootAccess",
                "elasticfilesystem:ClientWrite",
                "elasticfilesystem:ClientMount",
            ],
            "Resource": "*",
            "Condition": {"Bool": {"elasticfilesystem:AccessedViaMountTarget": "true"}},
        }
    ],
}
"""The policy EFS applies to a file system that has none ("Default EFS file system policy")."""


def repository_policy(model: StackModel, repository_arn: str) -> Any:
    """The policy the stack declares for the ECR repository `repository_arn`, or None."""
    name = repository_arn.split(":repository/", 1)[-1]
    for r in model.of("aws:ecr/repositoryPolicy:RepositoryPolicy"):
        if r.inputs.get("repository") == name:
            return document(r.inputs.get("policy"))
    return None


class TaskStart:
    """The checks of one task definition's start on one launch."""

    def __init__(
        self,
        model: StackModel,
        task: Resource,
        launch: Launch,
        services: Sequence[Resource],
        contracts: Sequence[ContainerCalls],
    ) -> None:
        self.model = model
        self.task = task
        self.launch = launch
        self.services = services
        self.contracts = contracts
        self.execution = model.role(task.inputs.get("executionRoleArn"))
        self.task_role = model.role(task.inputs.get("taskRoleArn"))
        self.family = task.inputs.get("family") or task.name

    def who(self, container: str | None = None) -> str:
        where = f"task {self.family} on {self.launch.kind}"
        return f"{where}, container {container}" if container else where

    def checks(self) -> Iterator[Check]:
        containers = self.model.containers(self.task)
        if containers is None:
            yield Unverified(self.task, self.who(), "container definitions unknown at preview")
            return
        for role_input, role in (
            ("executionRoleArn", self.execution),
            ("taskRoleArn", self.task_role),
        ):
            ref = self.task.inputs.get(role_input)
            if known(ref) and role is None:
                yield Unverified(self.task, self.who(), f"{role_input} {ref} is not in this stack")
        for c in containers:
            name = str(c.get("name"))
            yield from self.pull(c, name)
            yield from self.secrets(c, name)
            yield from self.logs(c, name)
            yield from self.runtime(c, name)
        yield from self.volumes(containers)
        if any(s.inputs.get("enableExecuteCommand") is True for s in self.services):
            yield from self.exec_session()

    # -- the agent, with the execution role ------------------------------------------------
    def agent_role(self, what: str) -> tuple[Role | None, Refusal | None]:
        """The role ECS uses for `what` (a pull or a log stream): the execution role; on EC2
        without one, the container instance role."""
        if self.task.inputs.get("executionRoleArn") is not None:
            return self.execution, None
        if self.launch.kind == "EC2":
            return self.instance_role(), None
        return None, Refusal(
            self.task,
            self.who(),
            f"no executionRoleArn: on {self.launch.kind} ECS needs the execution role to {what}",
        )

    def instance_role(self) -> Role | None:
        provider = self.launch.provider
        if provider is None:
            return None
        asg = self.model.by_arn(
            (provider.inputs.get("autoScalingGroupProvider") or {}).get("autoScalingGroupArn"),
            "aws:autoscaling/group:Group",
        )
        if asg is None:
            return None
        template = launch_template_of(self.model, asg)
        profile = (template.inputs.get("iamInstanceProfile") or {}) if template else {}
        return self.model.instance_profile_role(profile.get("arn") or profile.get("name"))

    def call(self, role: Role, who: str, action: str, resource: str, why: str, **kw: Any) -> Call:
        return Call(
            self.task,
            who,
            session_arn(role, self.model.account_id, TASK_ID),
            action,
            resource,
            why,
            role=role,
            **{"account_id": self.model.account_id, **kw},
        )

    def pull(self, container: Mapping[str, Any], name: str) -> Iterator[Check]:
        image = container.get("image")
        if not isinstance(image, str):
            yield Unverified(self.task, self.who(name), "image unknown at preview")
            return
        credentials = (container.get("repositoryCredentials") or {}).get("credentialsParameter")
        if credentials:
            yield from self.secret(name, credentials, "log in to the private registry")
        try:
            repository = ecr_repository(image, self.model.partition)
        except ImageReferenceError as exc:
            yield Refusal(self.task, self.who(name), str(exc))
            return
        if repository is None:
            return
        role, refusal = self.agent_role(f"pull {image}")
        if refusal is not None:
            yield refusal
            return
        if role is None:
            yield Unverified(self.task, self.who(name), "no stack role to pull the image with")
            return
        why = f"pull {image}"
        yield self.call(role, self.who(name), "ecr:GetAuthorizationToken", "*", why)
        owner = repository.split(":")[4]
        policy = None
        if owner != self.model.account_id:
            # Another account's repository: its own policy must admit the role as well.
            policy = repository_policy(self.model, repository)
            if policy is None:
                yield Unverified(
                    self.task,
                    self.who(name),
                    f"{image} is in account {owner}'s registry: the pull needs that repository's "
                    "policy to admit this role, and the stack does not declare it",
                )
                return
        for action in ("ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"):
            yield self.call(
                role, self.who(name), action, repository, why,
                resource_policy=policy, account_id=owner,
            )  # fmt: skip

    def secret(self, name: str, value_from: Any, why: str) -> Iterator[Check]:
        if self.task.inputs.get("executionRoleArn") is None:
            yield Refusal(self.task, self.who(name), f"no executionRoleArn: ECS needs it to {why}")
            return
        if self.execution is None:
            return
        for read in secret_reads(self.model, value_from):
            if isinstance(read, str):
                yield Unverified(self.task, self.who(name), read)
                continue
            yield self.call(
                self.execution,
                self.who(name),
                read.action,
                read.resource,
                why,
                resource_policy=read.resource_policy,
                context=read.context,
            )

    def secrets(self, container: Mapping[str, Any], name: str) -> Iterator[Check]:
        for entry in listify(container.get("secrets")):
            if not isinstance(entry, Mapping):
                continue
            value_from = entry.get("valueFrom")
            yield from self.secret(name, value_from, f"read secret {entry.get('name')}")
            if (stale := stale_password(self.model, value_from)) is not None:
                yield Refusal(self.task, self.who(name), f"secret {entry.get('name')}: {stale}")

    def logs(self, container: Mapping[str, Any], name: str) -> Iterator[Check]:
        config = container.get("logConfiguration") or {}
        if config.get("logDriver") != "awslogs":
            return
        options = config.get("options") or {}
        group = options.get("awslogs-group")
        prefix = options.get("awslogs-stream-prefix")
        if not group:
            yield Refusal(self.task, self.who(name), "awslogs without awslogs-group")
            return
        if not prefix and self.launch.kind == "FARGATE":
            yield Refusal(
                self.task, self.who(name), "awslogs on Fargate needs awslogs-stream-prefix"
            )
            return
        region = options.get("awslogs-region") or self.model.region
        create = str(options.get("awslogs-create-group", "")).lower() == "true"
        if not create and self.model.by_name(group, LOG_GROUP) is None:
            yield Unverified(
                self.task, self.who(name), f"log group {group} is not in this stack: it must exist"
            )
        role, refusal = self.agent_role(f"write the {group} log group")
        if refusal is not None:
            yield refusal
            return
        if role is None:
            yield Unverified(self.task, self.who(name), "no stack role to write its logs with")
            return
        stream = f"{prefix}/{name}/{TASK_ID}" if prefix else TASK_ID
        arn = f"arn:{self.model.partition}:logs:{region}:{self.model.account_id}:log-group:{group}"
        why = f"send its output to {group}"
        if create:
            yield self.call(role, self.who(name), "logs:CreateLogGroup", arn, why)
        for action in ("logs:CreateLogStream", "logs:PutLogEvents"):
            yield self.call(role, self.who(name), action, f"{arn}:log-stream:{stream}", why)

    # -- the containers, with the task role -------------------------------------------------
    def task_calls(
        self, name: str, calls: Sequence[AwsCall], what: str, **values: str
    ) -> Iterator[Check]:
        """The container's own `calls` with the task role; `values` fill placeholders beyond
        partition, region, account, cluster and task (a call whose placeholder has no value is
        noted, not guessed)."""
        if not calls:
            return
        if self.task_role is None:
            if self.task.inputs.get("taskRoleArn") is None:
                yield Refusal(
                    self.task, self.who(name), f"no taskRoleArn, but the container must {what}"
                )
            return
        cluster = self.cluster_name()
        for aws_call in calls:
            try:
                bound = aws_call.bound(
                    partition=self.model.partition,
                    region=self.model.region,
                    account=self.model.account_id,
                    cluster=cluster,
                    task=TASK_ID,
                    **values,
                )
            except KeyError as missing:
                why = f"{aws_call.action}: {missing} unknown at preview"
                yield Unverified(self.task, self.who(name), why)
                continue
            yield self.call(
                self.task_role,
                self.who(name),
                bound.action,
                bound.resource,
                bound.why,
                context=dict(bound.context),
            )

    def runtime(self, container: Mapping[str, Any], name: str) -> Iterator[Check]:
        environment = {
            str(e.get("name")): str(e.get("value"))
            for e in listify(container.get("environment"))
            if isinstance(e, Mapping) and known(e.get("value"))
        }
        calls = [call for contract in self.contracts for call in contract(environment)]
        values = {}
        if (resource := self.database_resource_id(environment.get("DATABASE_HOST"))) is not None:
            values["db_resource_id"] = resource
        yield from self.task_calls(
            name, calls, "make the calls its image's contract declares", **values
        )

    def database_resource_id(self, host: str | None) -> str | None:
        """The resource id of the stack's Aurora cluster whose endpoint is `host`."""
        for cluster in self.model.of("aws:rds/cluster:Cluster"):
            outputs = getattr(cluster, "outputs", None) or {}
            if host is not None and outputs.get("endpoint") == host:
                resource = outputs.get("clusterResourceId")
                return str(resource) if known(resource) else None
        return None

    def exec_session(self) -> Iterator[Check]:
        calls = [AwsCall(a, "*", "open an ECS Exec session") for a in ECS_EXEC_CHANNELS]
        yield from self.task_calls("(ECS Exec agent)", calls, "serve ECS Exec sessions")
        yield from self.exec_logging()

    def exec_logging(self) -> Iterator[Check]:
        cluster = self.model.cluster(self.services[0].inputs.get("cluster"))
        configuration = (cluster.inputs.get("configuration") or {}) if cluster else {}
        exec_config = configuration.get("executeCommandConfiguration") or {}
        logging = (exec_config.get("logConfiguration") or {}).get("cloudWatchLogGroupName")
        if exec_config.get("logging") != "OVERRIDE" or not known(logging):
            return
        arn = self.model.arn("logs", f"log-group:{logging}")
        why = f"write the ECS Exec session log to {logging}"
        calls = [
            AwsCall("logs:DescribeLogGroups", "*", why),
            AwsCall("logs:CreateLogStream", f"{arn}:log-stream:{TASK_ID}", why),
            AwsCall("logs:DescribeLogStreams", f"{arn}:log-stream:", why),
            AwsCall("logs:PutLogEvents", f"{arn}:log-stream:{TASK_ID}", why),
        ]
        yield from self.task_calls("(ECS Exec agent)", calls, "log ECS Exec sessions")

    def cluster_name(self) -> str:
        ref = self.services[0].inputs.get("cluster") if self.services else "default"
        cluster = self.model.cluster(ref)
        if cluster is not None and known(self.model.output(cluster, "name")):
            return str(self.model.output(cluster, "name"))
        return str(ref).rsplit("/", 1)[-1] if known(ref) else "default"

    # -- EFS volumes ------------------------------------------------------------------------
    def volumes(self, containers: Sequence[Mapping[str, Any]]) -> Iterator[Check]:
        for volume in listify(self.task.inputs.get("volumes")):
            efs = volume.get("efsVolumeConfiguration") if isinstance(volume, Mapping) else None
            if isinstance(efs, Mapping):
                yield from self.efs_mount(str(volume.get("name")), efs, containers)

    def efs_mount(
        self, volume: str, efs: Mapping[str, Any], containers: Sequence[Mapping[str, Any]]
    ) -> Iterator[Check]:
        who = f"{self.who()}, volume {volume}"
        auth = efs.get("authorizationConfig") or {}
        fs_id = efs.get("fileSystemId")
        if not known(fs_id):
            yield Unverified(self.task, who, "file system id unknown at preview")
            return
        policy = next(
            (
                document(p.inputs.get("policy"))
                for p in self.model.of(FILE_SYSTEM_POLICY)
                if p.inputs.get("fileSystemId") == fs_id
            ),
            EFS_DEFAULT_POLICY,
        )
        if policy == UNKNOWN:
            yield Unverified(self.task, who, "file system policy unknown at preview")
            return
        fs_arn = self.model.arn("elasticfilesystem", f"file-system/{fs_id}")
        context: dict[str, str] = {
            "aws:SecureTransport": "true" if efs.get("transitEncryption") == "ENABLED" else "false",
            "elasticfilesystem:AccessedViaMountTarget": "true",
        }
        if known(auth.get("accessPointId")) and auth.get("accessPointId"):
            context["elasticfilesystem:AccessPointArn"] = self.model.arn(
                "elasticfilesystem", f"access-point/{auth['accessPointId']}"
            )
        writable = any(
            not m.get("readOnly")
            for c in containers
            for m in listify(c.get("mountPoints"))
            if isinstance(m, Mapping) and m.get("sourceVolume") == volume
        )
        actions = ["elasticfilesystem:ClientMount"]
        actions += ["elasticfilesystem:ClientWrite"] if writable else []
        iam = auth.get("iam") == "ENABLED"
        if iam and self.task_role is None:
            if self.task.inputs.get("taskRoleArn") is None:
                yield Refusal(self.task, who, "EFS IAM authorization without a taskRoleArn")
            return
        for action in actions:
            why = f"mount {fs_id}" + (" writable" if action.endswith("Write") else "")
            if iam and self.task_role is not None:
                yield self.call(
                    self.task_role,
                    who,
                    action,
                    fs_arn,
                    why,
                    resource_policy=policy,
                    context=context,
                )
            else:
                yield Call(
                    self.task,
                    who,
                    "*",
                    action,
                    fs_arn,
                    why + " (anonymous client: IAM authorization off)",
                    resource_policy=policy,
                    context=context,
                    account_id=self.model.account_id,
                )


def launch_template_of(model: StackModel, asg: Resource) -> Resource | None:
    """The launch template an Auto Scaling group launches from (directly or through its mixed
    instances policy): the launch template resource the group's inputs depend on."""
    depends = set(getattr(asg, "dependencies", ()))
    for key in ("launchTemplate", "mixedInstancesPolicy"):
        depends |= set((getattr(asg, "property_dependencies", None) or {}).get(key, ()))
    templates = [t for t in model.of(LAUNCH_TEMPLATE) if t.urn in depends]
    return templates[0] if len(templates) == 1 else None


def launches_of(model: StackModel, task: Resource) -> list[tuple[Launch, list[Resource]]]:
    """Each distinct launch the task definition is started on, with its services; a task
    definition no service runs is rehearsed on its first requiresCompatibilities entry."""
    services = model.services_of(task)
    out: dict[tuple[str, str], tuple[Launch, list[Resource]]] = {}
    for service in services:
        launch = model.launch(service)
        key = (launch.kind, launch.provider.urn if launch.provider else "")
        out.setdefault(key, (launch, []))[1].append(service)
    if not out:
        compat = listify(task.inputs.get("requiresCompatibilities"))
        kind = str(compat[0]) if compat and known(compat[0]) else "EC2"
        return [(Launch(kind), [])]
    return list(out.values())


def task_checks(model: StackModel, contracts: Sequence[ContainerCalls]) -> Iterator[Check]:
    """Every task definition's start, on every launch its services use."""
    for task in model.of("aws:ecs/taskDefinition:TaskDefinition"):
        for launch, services in launches_of(model, task):
            yield from TaskStart(model, task, launch, services, contracts).checks()


__all__ = ["SERVICE", "TaskStart", "task_checks"]
