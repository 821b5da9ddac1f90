"""The stack configuration: the only place `ecs-inference:platform` is parsed and validated.

A stack file carries one structured key::

    config:
      aws:region: us-east-1
      ecs-inference:platform:
        network: {...}
        endpoint: {...}
        images: {...}
        gpuPools: {<pool>: {...}}
        neuronPools: {<pool>: {...}}
        models: {<service>: {...}}
        rerankers: {<service>: {...}}

Every model is frozen and forbids unknown keys, so a typo is an error rather than a silently
ignored setting. Keys are camelCase in YAML (`maxModelLen`) and snake_case in Python.
`load_stack_config` turns every pydantic error into a `ConfigIssue` whose path is the config
path the user edits (`platform.models.llama.maxModelLen`) and raises one `ConfigError` listing
all of them, before any resource is registered. Checks that need the instance catalog or the
sizing method (does the model fit its pool?) run in `components.plan`, also before any resource.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from ecs_inference.config.issues import ConfigError, ConfigIssue
from ecs_inference.contracts import aws_limits, litellm
from ecs_inference.contracts.engine import (
    ENV_REGION_VARIABLES,
    HUB_OFFLINE_VARIABLES,
    HUB_TOKEN_VARIABLES,
)
from ecs_inference.contracts.metrics import METRICS_BY_KIND
from ecs_inference.contracts.vllm import ENV_API_KEY as VLLM_API_KEY
from ecs_inference.iam import KMS_KEY_ARN
from ecs_inference.specs import managed_instances
from ecs_inference.specs.weights import EfsConfigError, parse_efs_uri

ROOT = "platform"

_IDLE_TIMEOUT = aws_limits.ALB_IDLE_TIMEOUT_RANGE
_SESSION = aws_limits.COGNITO_SESSION_TIMEOUT_RANGE
_TOKEN_MINUTES = aws_limits.COGNITO_ACCESS_TOKEN_MINUTES_RANGE

# Service and pool names end up in resource names, ALB path prefixes and target group names
# (32 characters at most, including the stack-derived prefix), so they are kept short and DNS-safe.
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9-]{0,19}[a-z0-9]$")
S3_URI_PATTERN = aws_limits.S3_URI
ACM_ARN_PATTERN = aws_limits.ACM_CERTIFICATE_ARN
SECRET_ARN_PATTERN = aws_limits.SECRETS_MANAGER_ARN
ENV_NAME_PATTERN = re.compile(r"^[A-Z_][A-Z0-9_]*$")
# Environment names that look like credentials must come from Secrets Manager instead.
SECRET_NAME_HINT = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
IMAGE_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._/:-]*(@sha256:[a-f0-9]{64})?$")


def _name(value: str) -> str:
    if not NAME_PATTERN.match(value):
        raise ValueError(
            "must be 2-21 characters of lowercase letters, digits and '-', starting with a "
            "letter (it becomes part of resource names and the URL path)"
        )
    return value


def _s3_uri(value: str) -> str:
    if not S3_URI_PATTERN.match(value):
        raise ValueError("must be an S3 URI like s3://my-bucket/models/llama-3.1-8b/")
    return value


def _image(value: str) -> str:
    if ":latest" in value or (":" not in value.rsplit("/", 1)[-1] and "@" not in value):
        raise ValueError(
            "must be pinned by tag or digest (for example "
            "123456789012.dkr.ecr.us-east-1.amazonaws.com/vllm:v0.33.0); 'latest' is not "
            "reproducible"
        )
    if not IMAGE_PATTERN.match(value):
        raise ValueError("is not a valid image reference")
    return value


def _weights_uri(value: str) -> str:
    if value.startswith("efs://"):
        # The file system and path are resolved against `weightStores` by check_references.
        return value
    if not S3_URI_PATTERN.match(value):
        raise ValueError(
            "must be an S3 URI like s3://my-bucket/models/llama-3.1-8b/ or an EFS location "
            "like efs://<file-system>/models/llama-3.1-8b"
        )
    return value


Name = Annotated[str, AfterValidator(_name)]
S3Uri = Annotated[str, AfterValidator(_s3_uri)]
WeightsUri = Annotated[str, AfterValidator(_weights_uri)]
Image = Annotated[str, AfterValidator(_image)]


class _Section(BaseModel):
    """Base for every config section: camelCase keys, unknown keys rejected, immutable."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        str_strip_whitespace=True,
    )
    # Field docstrings document each key; tools/config_reference.py reads them from this file's
    # source into the README. (pydantic's use_attribute_docstrings would do the same at import,
    # parsing this module's source on every `pulumi up`; the reference is built offline instead.)


# --------------------------------------------------------------------------------------------
# network, cluster, endpoint
# --------------------------------------------------------------------------------------------


class NetworkConfig(_Section):
    """The VPC. Defaults: 10.40.0.0/16, 2 AZs, a single NAT gateway, VPC endpoints on."""

    cidr_block: str = "10.40.0.0/16"
    """VPC CIDR (/16 to /20); subnets are carved out of it per AZ."""
    availability_zones: int = Field(2, ge=2, le=6)
    """Number of AZs (2-6; an ALB needs subnets in at least two). Default 2."""
    availability_zone_names: list[str] | None = None
    """Explicit AZ names; overrides `availabilityZones` when given."""
    nat_gateways: Literal["single", "perAz"] = "single"
    """`single` (cheaper, one AZ is a single point of failure) or `perAz` (production)."""
    vpc_endpoints: bool = True
    """S3 gateway + ECR/logs/STS/Secrets Manager/SSM interface endpoints. Default on."""

    @field_validator("cidr_block")
    @classmethod
    def _cidr(cls, value: str) -> str:
        try:
            net = ipaddress.IPv4Network(value)
        except ValueError as exc:
            raise ValueError(f"must be an IPv4 CIDR like 10.40.0.0/16 ({exc})") from None
        if not 16 <= net.prefixlen <= 20:
            raise ValueError("prefix must be between /16 and /20 to leave room for subnets")
        return value

    @model_validator(mode="after")
    def _az_names(self) -> NetworkConfig:
        names = self.availability_zone_names
        if names is not None and not 2 <= len(names) <= 6:
            raise ValueError("availabilityZoneNames must list 2 to 6 zones")
        return self

    @property
    def az_count(self) -> int:
        return len(self.availability_zone_names or []) or self.availability_zones


class ClusterConfig(_Section):
    """The ECS cluster. Defaults: enhanced Container Insights, ECS Exec off."""

    container_insights: Literal["enhanced", "enabled", "disabled"] = "enhanced"
    """Container Insights level; `enhanced` adds per-task and per-container metrics."""
    execute_command: bool = False
    """ECS Exec (`aws ecs execute-command`) into every service's tasks: the services enable it,
    the task roles get the ssmmessages channels and may write the session log. Off: no shell
    into a serving container at all."""
    execute_command_logging: bool = True
    """With `executeCommand`: log every session (who ran what in a task) to CloudWatch."""


class AuthConfig(_Section):
    """Who may call the endpoint. Defaults: a new Cognito user pool, scope `invoke`.

    Browsers sign in through the ALB's authenticate-cognito action (cookie session); API
    callers obtain a token with the client-credentials grant and send `Authorization: Bearer`,
    which the ALB checks with its jwt-validation action.
    """

    existing_user_pool_id: str | None = None
    """Use this Cognito user pool instead of creating one (requires `existingUserPoolDomain`)."""
    existing_user_pool_domain: str | None = None
    """Hosted domain prefix of the existing pool (with `existingUserPoolId`)."""
    domain_prefix: str | None = None
    """Cognito hosted-domain prefix; default `<project>-<stack>`. Must be globally unique."""
    api_scopes: list[Name] = Field(default_factory=lambda: ["invoke"], min_length=1)
    """Scopes of the resource server; API clients get them with the client-credentials grant."""
    session_timeout_seconds: int = Field(28_800, ge=_SESSION[0], le=_SESSION[1])
    """Browser session length on the ALB. Default 8 h."""
    access_token_validity_minutes: int = Field(60, ge=_TOKEN_MINUTES[0], le=_TOKEN_MINUTES[1])
    """Lifetime of access tokens issued to API callers."""

    @model_validator(mode="after")
    def _existing_pool(self) -> AuthConfig:
        if bool(self.existing_user_pool_id) != bool(self.existing_user_pool_domain):
            raise ValueError(
                "existingUserPoolId and existingUserPoolDomain must be given together "
                "(the ALB needs the pool's hosted domain for the browser sign-in)"
            )
        return self


class EndpointConfig(_Section):
    """The load balancer every service sits behind.

    Defaults: internal, HTTPS only with TLS 1.3 policy, access logs on, idle timeout derived
    from the longest `maxGenerationSeconds` of the routed services.
    """

    domain_name: str
    """Host name clients use (the certificate must cover it; Cognito calls back to it)."""
    certificate_arn: str | None = None
    """ACM certificate for `domainName`. Required unless `selfSignedCertificate` is true."""
    self_signed_certificate: bool = False
    """Dev only: generate a self-signed certificate and import it into ACM."""
    allowed_cidrs: list[str] = Field(min_length=1)
    """Client networks admitted by the ALB security group (VPC, peered VPCs, VPN)."""
    internet_facing: bool = False
    """Put the ALB in public subnets. Every rule still authenticates first."""
    idle_timeout_seconds: int | None = Field(None, ge=_IDLE_TIMEOUT[0], le=_IDLE_TIMEOUT[1])
    """Override of the derived idle timeout; must still cover the longest generation."""
    ssl_policy: str = "ELBSecurityPolicy-TLS13-1-2-2021-06"
    """HTTPS listener security policy (TLS 1.3 and 1.2 only)."""
    access_logs: bool = True
    """ALB access logs to an encrypted, private S3 bucket."""
    access_log_retention_days: int = Field(90, ge=1, le=3650)
    """Days before access logs expire."""
    auth: AuthConfig = Field(default_factory=lambda: AuthConfig.model_validate({}))
    """Cognito user pool and clients; see `AuthConfig`."""
    hosted_zone_id: str | None = Field(None, pattern=r"^Z[A-Z0-9]{1,31}$")
    """Route 53 hosted zone (usually private) in which to create an alias record for
    `domainName` pointing at the ALB. Default none: you manage DNS."""
    listener_rule_quota: int = Field(100, ge=2, le=1000)
    """Your account's "Rules per Application Load Balancer" quota (default 100). Each service
    takes two rules; raise this only after the quota increase is granted."""

    @field_validator("domain_name")
    @classmethod
    def _domain(cls, value: str) -> str:
        if not re.match(
            r"^(?=.{4,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$", value
        ):
            raise ValueError("must be a lowercase DNS name like models.example.internal")
        return value

    @field_validator("certificate_arn")
    @classmethod
    def _cert(cls, value: str | None) -> str | None:
        if value is not None and not ACM_ARN_PATTERN.match(value):
            raise ValueError(
                "must be an ACM certificate ARN (arn:aws:acm:<region>:<account>:certificate/<id>)"
            )
        return value

    @field_validator("allowed_cidrs")
    @classmethod
    def _cidrs(cls, values: list[str]) -> list[str]:
        for value in values:
            try:
                ipaddress.ip_network(value)
            except ValueError:
                raise ValueError(f"{value!r} is not a CIDR block like 10.0.0.0/8") from None
        return values

    @model_validator(mode="after")
    def _certificate_source(self) -> EndpointConfig:
        if bool(self.certificate_arn) == bool(self.self_signed_certificate):
            raise ValueError(
                "set exactly one of certificateArn (production) or selfSignedCertificate: true "
                "(dev only)"
            )
        if not self.internet_facing and any(c in ("0.0.0.0/0", "::/0") for c in self.allowed_cidrs):
            raise ValueError(
                "allowedCidrs of an internal endpoint should name your client networks, not "
                "0.0.0.0/0"
            )
        return self


class ImagesConfig(_Section):
    """Default container images per engine; a service may override with its own `image`.

    Pin by tag or digest (CI feeds digests from the image build). With `build: true` the stack
    builds and pushes the images its services need instead (see `build`)."""

    build: bool = False
    """Build the images from this repository's `images/<engine>/` and push them to ECR
    repositories the stack owns (needs Docker with buildx where `pulumi up` runs). Default
    false: CI builds and feeds digests. An explicit reference still wins: a service's own
    `image`, then `images.vllm`/`neuron`/`reranker`; only images no service gets that way are
    built."""

    vllm: Image | None = None
    """Image for `engine: vllm` services (built from images/vllm)."""
    neuron: Image | None = None
    """Image for `engine: neuron` services (built from images/neuron)."""
    reranker: Image | None = None
    """Image for re-rankers (built from images/reranker)."""
    sglang: Image | None = None
    """Image for `engine: sglang` services (built from images/sglang)."""
    tgi: Image | None = None
    """Image for `engine: tgi` services (built from images/tgi)."""
    metrics: Image | None = None
    """Metrics sidecar image, run next to every model and re-ranker (built from images/metrics,
    for x86_64 and ARM64). Needed unless `operations.metricsSidecar` is false."""


# --------------------------------------------------------------------------------------------
# capacity pools
# --------------------------------------------------------------------------------------------


class WarmPoolConfig(_Section):
    """Pre-initialised instances (booted, driver loaded, then parked) that join faster than new
    ones. Defaults: 1 instance kept Stopped."""

    min_size: int = Field(1, ge=0, le=100)
    """Instances kept pre-initialised in the warm pool."""
    max_group_prepared_capacity: int | None = Field(None, ge=0, le=100)
    """Cap on ASG + warm pool instances; default: the ASG's maxSize."""
    state: Literal["Stopped", "Running"] = "Stopped"
    """State of warm instances (`Stopped` costs only the EBS volume). Hibernation does not
    apply to these accelerated instance types."""


class PoolConfig(_Section):
    """One Auto Scaling group used as an ECS capacity provider: one accelerator instance type,
    several, or every catalog type that fits the models placed on it (cheapest first), bought
    On-Demand or partly as Spot through a mixed instances policy.

    Defaults: types from sizing, 0..2 instances, 200 GiB gp3 root volume, target capacity 100 %,
    300 s warm-up, no warm pool, all On-Demand.
    """

    instance_type: str | None = None
    """One accelerator instance type from the catalog (the group launches only it). Give this
    or `instanceTypes`, or neither to take the types from sizing."""
    instance_types: list[str] | None = Field(None, min_length=1, max_length=40)
    """Several catalog types in priority order (a mixed instances policy). Every type must hold
    every model on the pool with the same GPU count / Neuron devices; otherwise the preview
    fails and proposes the split. Default: from sizing (every catalog type that fits, cheapest
    first, within `maxPriceRatio`)."""
    excluded_instance_types: list[str] = Field(default_factory=list, max_length=400)
    """Types or wildcards (`p5*`, `g6e.*`) never used, e.g. ones your account has no quota for."""
    max_instance_types: int | None = Field(None, ge=1, le=40)
    """Keep at most this many of the cheapest types taken from sizing. Default: all."""
    max_price_ratio: float | None = Field(2.0, ge=1)
    """Types taken from sizing cost at most this multiple of the cheapest fitting one (so an
    8-GPU host is not a fallback for a one-GPU model); null keeps every price."""
    min_size: int = Field(0, ge=0, le=1000)
    """Instances always running."""
    max_size: int = Field(2, ge=1, le=1000)
    """Upper bound; leave room for a rolling deploy (see the deploy decision)."""
    root_volume_gib: int = Field(200, ge=50, le=16_384)
    """Root EBS volume; GPU/Neuron images are several GB and ECS keeps old ones until cleanup."""
    target_capacity_percent: int = Field(100, ge=1, le=100)
    """Capacity-provider managed scaling target; below 100 keeps spare instances."""
    instance_warmup_seconds: int = Field(300, ge=0, le=10_000)
    """Time a new instance takes before it counts toward capacity metrics."""
    warm_pool: WarmPoolConfig | None = None
    """Pre-initialised instances with the image already pulled; default none. Only with one
    instance type bought On-Demand (EC2 Auto Scaling refuses a warm pool on a group with a
    mixed instances policy or Spot)."""
    on_demand_base_capacity: int = Field(1, ge=0, le=1000)
    """Instances always bought On-Demand before any Spot."""
    on_demand_percentage_above_base_capacity: int = Field(100, ge=0, le=100)
    """On-Demand share of the capacity above the base; below 100 buys the rest as Spot."""
    spot_allocation_strategy: str = "price-capacity-optimized"
    """`price-capacity-optimized`, `capacity-optimized` or `capacity-optimized-prioritized`
    (`lowest-price` is refused for accelerators: the cheapest Spot pool is reclaimed most)."""
    on_demand_allocation_strategy: str = "prioritized"
    """`prioritized` (the type order: cheapest first from sizing) or `lowest-price`."""
    capacity_rebalance: bool = True
    """Launch a replacement on a Spot rebalance recommendation, before the 2-minute notice."""
    spot_max_price: str | None = None
    """Maximum Spot price, USD per hour; default: capped at the On-Demand price."""

    @field_validator("instance_type")
    @classmethod
    def _type(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^[a-z][a-z0-9]*\.[a-z0-9]+$", value):
            raise ValueError("must be an EC2 instance type like g6e.xlarge")
        return value

    @model_validator(mode="after")
    def _sizes(self) -> PoolConfig:
        if self.min_size > self.max_size:
            raise ValueError(f"minSize ({self.min_size}) must not exceed maxSize ({self.max_size})")
        if self.instance_type is not None and self.instance_types is not None:
            raise ValueError(
                "give instanceType (one type) or instanceTypes (several), not both; omit both "
                "to take the types from sizing"
            )
        return self


class ManagedInstancePoolConfig(_Section):
    """NVIDIA GPU capacity from Amazon ECS Managed Instances: ECS launches, patches and replaces
    the instances (at most 21 days each) among the types that fit the vLLM models placed on the
    pool. No Auto Scaling group: `warmPool`, `minSize`, `maxSize`, `amiId`, root volume and
    Spot-mix options are refused with the reason. Models needing more than one GPU per task stay
    on `gpuPools` (Managed Instances tasks cannot size /dev/shm).

    Defaults: types from sizing, 200 GiB data volume, detailed monitoring, On-Demand,
    idle instances kept 30 minutes.
    """

    instance_types: list[str] | None = Field(None, min_length=1, max_length=400)
    """Catalog types ECS may launch (`allowedInstanceTypes`). Default: from sizing, as for
    `gpuPools`."""
    excluded_instance_types: list[str] = Field(default_factory=list, max_length=400)
    """Types or wildcards never used."""
    max_instance_types: int | None = Field(None, ge=1, le=400)
    """Keep at most this many of the cheapest types taken from sizing. Default: all."""
    max_price_ratio: float | None = Field(2.0, ge=1)
    """Types taken from sizing cost at most this multiple of the cheapest fitting one."""
    storage_gib: int = Field(200, ge=1, le=16_384)
    """Data volume of each instance (image layers and container storage)."""
    monitoring: Literal["BASIC", "DETAILED"] = "DETAILED"
    """EC2 monitoring: `DETAILED` publishes one-minute metrics."""
    capacity_option_type: Literal["ON_DEMAND", "SPOT", "RESERVED"] = "ON_DEMAND"
    """How instances are bought; changing it replaces the capacity provider. To mix On-Demand
    and Spot, use two pools."""
    reservation_preference: (
        Literal["RESERVATIONS_ONLY", "RESERVATIONS_FIRST", "RESERVATIONS_EXCLUDED"] | None
    ) = None
    """With `capacityOptionType: RESERVED`, how Capacity Reservations are used."""
    reservation_group_arn: str | None = None
    """With `RESERVATIONS_ONLY`, the Capacity Reservation resource group."""
    scale_in_after_seconds: int | None = Field(1800, ge=-1, le=3600)
    """Seconds an idle instance is kept (with its image cache) before ECS removes it; -1
    never."""
    auto_repair: bool = True
    """Let ECS replace instances it finds unhealthy."""
    propagate_tags: bool = True
    """Copy the capacity provider's tags to the instances."""


# --------------------------------------------------------------------------------------------
# services
# --------------------------------------------------------------------------------------------


class ArchitectureConfig(_Section):
    """Explicit model shape, for models not in the catalog (or to override catalog values)."""

    params_billion: float | None = Field(None, gt=0, le=2000)
    """Parameter count in billions (all experts for MoE models)."""
    layers: int | None = Field(None, gt=0, le=1000)
    """Transformer layers."""
    attention_heads: int | None = Field(None, gt=0, le=1024)
    """Query attention heads (tensor parallel size must divide them)."""
    kv_heads: int | None = Field(None, gt=0, le=1024)
    """Key/value heads (grouped-query attention); equals attentionHeads without GQA."""
    head_dim: int | None = Field(None, gt=0, le=4096)
    """Dimension of each attention head."""
    max_position_embeddings: int | None = Field(None, gt=0)
    """Longest context the model supports; maxModelLen may not exceed it."""


class NeuronCompileConfig(_Section):
    """The shape the Neuron artifact was compiled for; serving must match it exactly."""

    batch_size: int = Field(gt=0, le=256)
    """Batch size the artifact was compiled for."""
    sequence_length: int = Field(gt=0, le=1_048_576)
    """Sequence length the artifact was compiled for."""
    tp_degree: int = Field(gt=0, le=64)
    """Tensor parallel degree (NeuronCores) the artifact was compiled for."""


class AutoscalingConfig(_Section):
    """Target tracking on the engine's own load.

    Defaults: `engineLoad` (requests waiting + running per task, from the metrics sidecar) at
    80 % of `maxConcurrentSequences`; scale-out cooldown = the health-check grace period (a new
    task serves only after it), scale-in cooldown at least twice that and at least 300 s. Scale
    out fast (a late task costs latency), scale in slow (a warm model is expensive to reload).
    """

    metric: Literal["engineLoad", "kvCache", "albRequests"] = "engineLoad"
    """`engineLoad`: requests waiting + running per task (metric math) against the batch the
    engine runs at once; `kvCache`: KV-cache usage per task (long contexts fill memory before
    the batch); `albRequests`: ALBRequestCountPerTarget (blind to tokens per request). The
    first two need the metrics sidecar (`operations.metricsSidecar`)."""
    target_utilization: float = Field(0.8, gt=0, le=1)
    """Share of the engine's capacity (batch size or KV cache) at which to add a task."""
    target_requests_per_target: float = Field(30.0, gt=0)
    """`albRequests` target (requests per task per minute)."""
    scale_out_cooldown_seconds: int | None = Field(None, ge=0, le=3600)
    """Wait after a scale-out before the next one; default the health-check grace period."""
    scale_in_cooldown_seconds: int = Field(300, ge=0, le=86_400)
    """Least wait after a scale-in (raised to twice the scale-out cooldown)."""

    @model_validator(mode="after")
    def _asymmetric(self) -> AutoscalingConfig:
        out = self.scale_out_cooldown_seconds
        if out is not None and self.scale_in_cooldown_seconds < out:
            raise ValueError(
                "scaleInCooldownSeconds must be >= scaleOutCooldownSeconds: scale out fast, "
                "scale in slow"
            )
        return self


class StartupConfig(_Section):
    """Inputs of the health-check grace period estimate (image pull + weight load + warm-up).

    Defaults: image 10 GiB pulled at 100 MiB/s, weights read at 500 MiB/s, 120 s warm-up."""

    image_gib: float = Field(10.0, gt=0, le=100)
    """Compressed image size."""
    image_pull_mib_per_second: float = Field(100.0, gt=0)
    """Image pull + extraction rate on a cold instance."""
    weight_load_mib_per_second: float = Field(500.0, gt=0)
    """Weight streaming rate from S3 to accelerator memory."""
    warmup_seconds: int = Field(120, ge=0, le=3600)
    """Engine warm-up after the weights are loaded (graph capture, compilation cache)."""


class KmsKeysConfig(_Section):
    """Customer-managed KMS keys a service's data is encrypted with (default none: SSE-S3
    objects and secrets under the AWS-managed key need no KMS permission)."""

    weights: str | None = None
    """Key ARN of the weights' (or re-ranker model's) SSE-KMS objects: the task role gets
    kms:Decrypt on it, through S3 only."""
    secrets: list[str] = Field(default_factory=list)
    """Key ARNs of the `secrets`: the execution role gets kms:Decrypt on them, through Secrets
    Manager only."""

    @field_validator("weights")
    @classmethod
    def _weights(cls, arn: str | None) -> str | None:
        if arn is not None and not KMS_KEY_ARN.match(arn):
            raise ValueError(
                f"must be a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>), got {arn!r}"
            )
        return arn

    @field_validator("secrets")
    @classmethod
    def _secrets(cls, arns: list[str]) -> list[str]:
        for arn in arns:
            if not KMS_KEY_ARN.match(arn):
                raise ValueError(
                    f"must be KMS key ARNs (arn:aws:kms:<region>:<account>:key/<id>), got {arn!r}"
                )
        return arns


def _vllm_api_key_message(section: str) -> str:
    return (
        f"{section}.{VLLM_API_KEY} would make vLLM reject every request: the ALB forwards the "
        "caller's Cognito token as `Authorization: Bearer`, which is not that key. Remove it; "
        "the ALB already authenticates every request"
    )


def _model_hub_message(section: str, name: str) -> str | None:
    """Why `section.name` would let a serving container download weights at start, or None."""
    if name not in HUB_TOKEN_VARIABLES:
        return None
    return (
        f"{name} is a Hugging Face Hub credential: it would let the container download weights "
        "from the hub at every task start (egress cost, rate limits, minutes of cold start). "
        f"Remove it from `{section}`, stage the weights in S3 or EFS and point `weightsUri` (a "
        "re-ranker's `modelUri`) at them; the serving images run with HF_HUB_OFFLINE=1"
    )


class _ServiceBase(_Section):
    image: Image | None = None
    """Container image; default: the engine's entry in `images`, else the stack's own build
    (`images.build`)."""
    desired_count: int = Field(1, ge=0, le=1000)
    """Tasks at deploy time (autoscaling moves it within min..max)."""
    min_count: int = Field(1, ge=0, le=1000)
    """Autoscaling lower bound, at least 1: no supported scaling metric can scale out from zero
    tasks (target tracking on a per-task metric has no data then)."""
    max_count: int = Field(2, ge=1, le=1000)
    """Autoscaling upper bound."""
    environment: dict[str, str] = Field(default_factory=dict)
    """Plain settings for the container. Credentials are rejected here: use `secrets`."""
    secrets: dict[str, str] = Field(default_factory=dict)
    """Environment name -> Secrets Manager secret ARN, injected by ECS at start."""
    log_retention_days: int = Field(30, ge=1, le=max(aws_limits.CLOUDWATCH_LOG_RETENTION_DAYS))
    """CloudWatch log retention."""
    kms_key_arns: KmsKeysConfig = Field(default_factory=KmsKeysConfig)
    """Customer-managed KMS keys of the weights bucket and of `secrets`."""

    # Whether the service serves a model it loads at start (models, re-rankers): such a service
    # may not carry a model hub credential or turn the hub back on.
    SERVES_MODEL: ClassVar[bool] = False

    @field_validator("environment")
    @classmethod
    def _env(cls, values: dict[str, str]) -> dict[str, str]:
        for name, value in values.items():
            if not ENV_NAME_PATTERN.match(name):
                raise ValueError(f"{name!r} is not a valid environment variable name")
            if cls.SERVES_MODEL and (hub := _model_hub_message("environment", name)):
                raise ValueError(hub)
            if cls.SERVES_MODEL and name in HUB_OFFLINE_VARIABLES and value != "1":
                raise ValueError(
                    f"{name}={value!r} would let the container download weights from the "
                    "Hugging Face Hub at every task start; remove it (the serving images run "
                    "with HF_HUB_OFFLINE=1) and stage the weights in S3 or EFS (`weightsUri`, a "
                    "re-ranker's `modelUri`)"
                )
            if name == VLLM_API_KEY:
                raise ValueError(_vllm_api_key_message("environment"))
            if name in ENV_REGION_VARIABLES:
                raise ValueError(
                    f"{name!r} is set by the stack to its own region (aws:region) in every "
                    "container; remove it here"
                )
            if SECRET_NAME_HINT.search(name):
                raise ValueError(
                    f"{name!r} looks like a credential: put its Secrets Manager ARN under "
                    "`secrets` instead of a plain value"
                )
        return values

    @field_validator("secrets")
    @classmethod
    def _secrets(cls, values: dict[str, str]) -> dict[str, str]:
        for name, arn in values.items():
            if not ENV_NAME_PATTERN.match(name):
                raise ValueError(f"{name!r} is not a valid environment variable name")
            if cls.SERVES_MODEL and (hub := _model_hub_message("secrets", name)):
                raise ValueError(hub)
            if not SECRET_ARN_PATTERN.match(arn):
                raise ValueError(f"{name}: must be a Secrets Manager secret ARN, got {arn!r}")
        return values

    # Whether the service's scaling metric has data with zero tasks (a queue backlog does; a
    # per-task metric such as ALBRequestCountPerTarget or average CPU does not).
    SCALES_FROM_ZERO: ClassVar[bool] = False

    @model_validator(mode="after")
    def _counts(self) -> _ServiceBase:
        if self.min_count == 0 and not self.SCALES_FROM_ZERO:
            # Target tracking on a per-task metric (ALBRequestCountPerTarget, the service's
            # average CPU) has no data points with zero tasks, so the alarm that would scale
            # out never fires: a service at 0 stays at 0 while requests get 503s.
            raise ValueError(
                "minCount 0 is not supported: target tracking scales on a per-task metric, "
                "which has no data with zero tasks, so the service could never scale back out; "
                "use minCount 1 or more"
            )
        if not self.min_count <= self.desired_count <= self.max_count:
            raise ValueError(
                f"need minCount <= desiredCount <= maxCount, got {self.min_count} <= "
                f"{self.desired_count} <= {self.max_count}"
            )
        return self


class CustomEngineConfig(_Section):
    """A bring-your-own serving image (`engine: custom`); the contract it must meet is in
    docs/engines.md. Defaults: the image's own command, port 8000, `/health`, 120 s warm-up, no
    SSE keep-alive declared."""

    command: list[str] = Field(default_factory=list)
    """Container command (exec form); default: the image's CMD."""
    port: int = Field(8000, ge=1024, le=65535)
    """Port the image listens on (all interfaces); non-root, so 1024 or above."""
    health_path: str = Field("/health", min_length=1, max_length=aws_limits.HEALTH_CHECK_PATH_MAX)
    """Path that answers 200 once the image can serve (the ALB's health check)."""
    gpus: int = Field(0, ge=0, le=16)
    """GPUs the task reserves (on a gpuPools pool); give this or `neuronDevices`."""
    neuron_devices: int = Field(0, ge=0, le=16)
    """Neuron devices mapped into the task (on a neuronPools pool)."""
    accelerator_memory_gib: float | None = Field(None, gt=0, alias="acceleratorMemoryGiB")
    """The model's whole accelerator-memory need, when no `architecture`/`parameters` sizes it."""
    sse_keep_alive_seconds: int | None = Field(None, ge=1)
    """Longest silence the image allows itself during a stream; unset: none, so the endpoint's
    idle timeout must cover `maxGenerationSeconds`."""
    warmup_seconds: int = Field(120, ge=0, le=3600)
    """Time from weights loaded to ready (grace-period input)."""


class WeightStoreConfig(_Section):
    """A stack-managed EFS file system for model weights (`weightsUri: efs://<name>/<path>`):
    encrypted, General Purpose, mount targets in the private subnets, an access point per model.
    Defaults: Elastic throughput."""

    throughput_mode: Literal["elastic", "provisioned"] = "elastic"
    """Elastic scales reads with demand (billed per GiB read); provisioned fixes a rate."""
    provisioned_mib_per_second: float | None = Field(None, ge=1, le=3414)
    """Required with throughputMode provisioned; reads get up to three times this."""

    @model_validator(mode="after")
    def _provisioned(self) -> WeightStoreConfig:
        if (self.throughput_mode == "provisioned") != (self.provisioned_mib_per_second is not None):
            raise ValueError(
                "give provisionedMibPerSecond exactly when throughputMode is provisioned"
            )
        return self


GPU_ENGINES = ("vllm", "sglang", "tgi")
"""Engines that run on a gpuPools pool (custom: when it declares gpus)."""


class ModelConfig(_ServiceBase):
    """An LLM served by vLLM, SGLang or TGI on a GPU pool, optimum-neuron on an Inferentia pool,
    or your own image (`custom`).

    Defaults: bf16 weights, KV cache in the model dtype, 16 concurrent sequences, 90 % GPU memory
    utilisation, 300 s longest generation, 1..2 tasks.
    """

    SERVES_MODEL: ClassVar[bool] = True

    engine: Literal["vllm", "neuron", "sglang", "tgi", "custom"]
    """`vllm`, `sglang` or `tgi` on a GPU pool, `neuron` (optimum-neuron) on an
    Inferentia/Trainium pool, or `custom` (your image, settings under `custom`)."""
    pool: Name
    """Key of a `gpuPools` or `managedInstancePools` entry (vllm, sglang, tgi, custom with gpus)
    or a `neuronPools` entry (neuron, custom with neuronDevices)."""
    weights_uri: WeightsUri | None = None
    """Where the weights are: an S3 prefix (vllm, sglang: streamed; tgi: staged to disk; neuron:
    the precompiled artifact) or `efs://<file-system>/<path>` (sglang, tgi, custom: read in place
    from a `weightStores` file system or an existing one by id). Required except for custom.
    Nothing is downloaded from a model hub."""
    extra_args: list[str] = Field(default_factory=list)
    """Extra engine flags (not for custom), each checked against the pinned release's real
    flags; flags the platform sets from the service's own settings are refused."""
    max_input_tokens: int | None = Field(None, gt=0)
    """tgi: longest prompt; default maxModelLen - 1."""
    custom: CustomEngineConfig | None = None
    """Required for engine custom: how the image runs."""
    architecture: str | None = None
    """Catalog id of a known architecture (e.g. llama-3.1-8b)."""
    parameters: ArchitectureConfig | None = None
    """Explicit shape; overrides catalog values field by field."""
    served_model_name: str | None = None
    """Name clients pass as `model`; default: the service key."""
    dtype: Literal["fp32", "fp16", "bf16", "fp8", "int8", "int4", "awq", "gptq"] = "bf16"
    """Weight dtype / quantisation (sets bytes per parameter in sizing)."""
    kv_cache_dtype: Literal["auto", "fp8", "fp16", "bf16"] = "auto"
    """KV cache dtype; `auto` = 16-bit activations."""
    max_model_len: int | None = Field(None, gt=0, le=1_048_576)
    """Longest prompt + completion in tokens. Required for vllm; for neuron it defaults to
    (and may not exceed) the compiled `neuron.sequenceLength`."""
    max_concurrent_sequences: int = Field(16, gt=0, le=4096)
    """Sequences in flight per task (vLLM --max-num-seqs); sizes the KV cache."""
    gpu_memory_utilization: float = Field(0.9, gt=0.3, le=0.98)
    """Fraction of each GPU's memory vLLM may use."""
    tensor_parallel_size: int | None = Field(None, gt=0, le=64)
    """Override of the derived tensor parallel size (vllm)."""
    memory_overhead_fraction: float = Field(0.15, ge=0.05, le=0.5)
    """Activations/CUDA context/fragmentation headroom on weights + KV cache."""
    neuron: NeuronCompileConfig | None = None
    """Required for engine neuron: the compiled batch size, sequence length and tp degree."""
    max_generation_seconds: int = Field(300, ge=1, le=3600)
    """Longest request (prompt + streamed completion) the service must keep open."""
    health_check_grace_period_seconds: int | None = Field(None, ge=0, le=7200)
    """Override of the estimate from `startup`."""
    startup: StartupConfig = Field(default_factory=lambda: StartupConfig.model_validate({}))
    """Inputs of the health-check grace period estimate."""
    autoscaling: AutoscalingConfig = Field(
        default_factory=lambda: AutoscalingConfig.model_validate({})
    )
    """Target tracking on ALB requests per target."""

    @model_validator(mode="after")
    def _engine_fields(self) -> ModelConfig:
        declared = self.custom is not None and self.custom.accelerator_memory_gib is not None
        if self.architecture is None and self.parameters is None and not declared:
            raise ValueError(
                "give `architecture` (a catalog id) or `parameters` (explicit shape)"
                + (" or `custom.acceleratorMemoryGiB`" if self.engine == "custom" else "")
            )
        if self.engine == "custom":
            if self.custom is None:
                raise ValueError(
                    "engine custom needs `custom: {port, healthPath, gpus or neuronDevices, ...}`"
                )
            if self.image is None:
                raise ValueError("engine custom needs `image` (your serving image)")
            if bool(self.custom.gpus) == bool(self.custom.neuron_devices):
                raise ValueError(
                    "engine custom needs exactly one of custom.gpus, custom.neuronDevices"
                )
        elif self.custom is not None:
            raise ValueError("`custom` settings only apply to engine custom")
        elif self.weights_uri is None:
            raise ValueError(f"engine {self.engine} needs `weightsUri`")
        if self.extra_args and self.engine == "custom":
            raise ValueError("`extraArgs` does not apply to engine custom: set `custom.command`")
        if self.max_input_tokens is not None and self.engine != "tgi":
            raise ValueError("`maxInputTokens` applies to engine tgi")
        efs = self.weights_uri is not None and self.weights_uri.startswith("efs://")
        if efs and self.engine in ("vllm", "neuron"):
            raise ValueError(
                f"engine {self.engine} loads weights from S3 only; use an s3:// weightsUri "
                "or engine sglang/tgi/custom for EFS"
            )
        if self.engine in ("sglang", "tgi") and self.max_model_len is None:
            raise ValueError(
                f"engine {self.engine} needs `maxModelLen` (longest prompt + completion)"
            )
        if self.engine == "neuron" and self.neuron is None:
            raise ValueError(
                "engine neuron needs `neuron: {batchSize, sequenceLength, tpDegree}` matching "
                "the precompiled artifact"
            )
        if self.engine == "vllm" and self.max_model_len is None:
            raise ValueError("engine vllm needs `maxModelLen` (longest prompt + completion)")
        if (
            self.neuron is not None
            and self.max_model_len is not None
            and self.max_model_len > self.neuron.sequence_length
        ):
            raise ValueError(
                f"maxModelLen ({self.max_model_len}) exceeds the compiled neuron.sequenceLength "
                f"({self.neuron.sequence_length}); recompile the artifact or lower maxModelLen"
            )
        if self.engine != "neuron" and self.neuron is not None:
            raise ValueError("`neuron` settings only apply to engine neuron")
        if VLLM_API_KEY in self.secrets:
            # vLLM and Neuron serve through vLLM, which then demands its own bearer key; the
            # other engines never read it, so the name there is a mistake either way.
            raise ValueError(_vllm_api_key_message("secrets"))
        if self.engine == "neuron" and self.tensor_parallel_size is not None:
            raise ValueError("engine neuron takes its tp degree from `neuron.tpDegree`")
        if self.tensor_parallel_size is not None and self.tensor_parallel_size & (
            self.tensor_parallel_size - 1
        ):
            raise ValueError("tensorParallelSize must be a power of two")
        return self

    @property
    def context_length(self) -> int:
        """Tokens per sequence the service is sized for."""
        if self.max_model_len is not None:
            return self.max_model_len
        if self.neuron is None:
            raise ValueError(f"engine {self.engine} has no maxModelLen")
        return self.neuron.sequence_length

    @property
    def on_gpu(self) -> bool:
        """Runs on a gpuPools pool (else a neuronPools pool)."""
        if self.engine == "custom":
            return self.custom is not None and self.custom.gpus > 0
        return self.engine in GPU_ENGINES


class RerankerConfig(_ServiceBase):
    """A CPU cross-encoder re-ranker on Fargate.

    Give `cpu` and `memoryMib` exactly (validated against the Fargate grid), or a need
    (`needMemoryMib`, `needVcpu`) and the cheapest valid size is chosen. Defaults: ARM64,
    need 2 GiB and 1 vCPU, 2..4 tasks, scale on 100 requests per target.
    """

    SERVES_MODEL: ClassVar[bool] = True

    model_uri: S3Uri
    """S3 prefix with the exported ONNX model and tokenizer (staged into the task at start)."""
    cpu: int | None = None
    """Exact Fargate CPU units (with memoryMib), validated against the grid."""
    memory_mib: int | None = None
    """Exact Fargate memory in MiB (with cpu)."""
    need_memory_mib: int | None = Field(None, gt=0)
    """Memory the task needs; the cheapest grid size that fits is chosen."""
    need_vcpu: float | None = Field(None, gt=0)
    """vCPUs the task needs; the cheapest grid size that fits is chosen."""
    cpu_architecture: Literal["ARM64", "X86_64"] = "ARM64"
    """Graviton (cheaper for small CPU models) or x86_64."""
    platform_version: str = "LATEST"
    """Fargate platform version; 8 vCPU and above need 1.4.0 or LATEST."""
    desired_count: int = Field(2, ge=0, le=1000)
    """Tasks at deploy time."""
    min_count: int = Field(1, ge=0, le=1000)
    """Autoscaling lower bound, at least 1: no supported scaling metric can scale out from zero
    tasks (target tracking on a per-task metric has no data then)."""
    max_count: int = Field(4, ge=1, le=1000)
    """Autoscaling upper bound."""
    scaling_metric: Literal["requestCount", "cpu"] = "requestCount"
    """ALBRequestCountPerTarget or ECSServiceAverageCPUUtilization."""
    scaling_target: float = Field(100.0, gt=0)
    """Requests per target per minute, or average CPU %."""
    max_request_seconds: int = Field(30, ge=1, le=600)
    """Longest request; sets the deregistration delay."""

    @model_validator(mode="after")
    def _size(self) -> RerankerConfig:
        exact = (self.cpu, self.memory_mib)
        need = (self.need_memory_mib, self.need_vcpu)
        if any(v is not None for v in exact) and any(v is not None for v in need):
            raise ValueError("give either cpu + memoryMib, or needMemoryMib/needVcpu, not both")
        if (self.cpu is None) != (self.memory_mib is None):
            raise ValueError("cpu and memoryMib must be given together")
        if self.scaling_metric == "cpu" and not 1 <= self.scaling_target <= 100:
            raise ValueError("scalingTarget for the cpu metric is a percentage (1-100)")
        return self


# --------------------------------------------------------------------------------------------
# AI gateway and queue workers (issue 17)
# --------------------------------------------------------------------------------------------


def _secret_arn(value: str | None) -> str | None:
    if value is not None and not SECRET_ARN_PATTERN.match(value):
        raise ValueError(f"must be a Secrets Manager secret ARN, got {value!r}")
    return value


class BedrockConfig(_Section):
    """Amazon Bedrock models the gateway also routes to. Default: none."""

    region: str | None = None
    """Region whose Bedrock endpoint serves the models (model access is granted per region).
    Required when `models` is not empty."""
    models: dict[str, str] = Field(default_factory=dict)
    """Gateway model name -> Bedrock model id (`anthropic.claude-3-5-haiku-20241022-v1:0`) or
    system inference profile id (`us.anthropic...`). The task role may invoke exactly these."""


class GatewayDatabaseConfig(_Section):
    """LiteLLM's PostgreSQL (Aurora Serverless v2, private subnets): virtual keys, per-team
    budgets and rate limits, spend logs. Off by default."""

    enabled: bool = False
    """Create the database and point LiteLLM at it."""
    min_capacity_acu: float = Field(default=0.5, ge=0, le=256)
    """Aurora Serverless v2 minimum capacity (ACUs; 0 lets it pause when idle)."""
    max_capacity_acu: float = Field(default=4.0, ge=1, le=256)
    """Aurora Serverless v2 maximum capacity (ACUs)."""
    salt_key_secret_arn: str | None = None
    """Secrets Manager secret holding LITELLM_SALT_KEY (encrypts stored credentials; never
    rotate it). Required when enabled."""

    @field_validator("salt_key_secret_arn")
    @classmethod
    def _salt(cls, value: str | None) -> str | None:
        return _secret_arn(value)

    @model_validator(mode="after")
    def _needs_salt(self) -> GatewayDatabaseConfig:
        if self.enabled and self.salt_key_secret_arn is None:
            raise ValueError("enabled needs `saltKeySecretArn` (LiteLLM's LITELLM_SALT_KEY)")
        if self.min_capacity_acu > self.max_capacity_acu:
            raise ValueError("minCapacityAcu must not exceed maxCapacityAcu")
        return self


class GatewayConfig(_ServiceBase):
    """LiteLLM's proxy on Fargate: one OpenAI-compatible endpoint for every model service (and
    optional Bedrock models), behind the same ALB and authentication on its own path.

    Defaults: path `gateway`, ARM64, 1 vCPU / 2 GB, 2..4 tasks scaling on CPU at 60 %, routes to
    every model service under its served model name, no Bedrock, no database.
    """

    image: Image | None = litellm.IMAGE
    """LiteLLM proxy image; default the pinned release's (`LITELLM_VERSION`)."""
    path: Name = "gateway"
    """ALB path prefix (`/<path>/v1/chat/completions`); must not be a service name."""
    master_key_secret_arn: str
    """Secrets Manager secret holding LITELLM_MASTER_KEY (`sk-...`), the admin key clients send
    in `x-litellm-api-key` (the ALB's JWT stays in `Authorization`)."""
    routes: dict[str, str] | None = None
    """Gateway model name -> model service key; default every model service under its served
    model name."""
    bedrock: BedrockConfig = Field(default_factory=BedrockConfig)
    """Bedrock models routed next to the stack's own."""
    database: GatewayDatabaseConfig = Field(default_factory=GatewayDatabaseConfig)
    """LiteLLM's database (off by default)."""
    cpu: int = 1024
    """Fargate CPU units (with memoryMib, on the Fargate grid)."""
    memory_mib: int = 2048
    """Fargate memory in MiB."""
    cpu_architecture: Literal["ARM64", "X86_64"] = "ARM64"
    """Fargate CPU architecture."""
    desired_count: int = Field(2, ge=0, le=1000)
    """Tasks at deploy time (two: one per AZ)."""
    min_count: int = Field(2, ge=0, le=1000)
    """Autoscaling lower bound."""
    max_count: int = Field(4, ge=1, le=1000)
    """Autoscaling upper bound."""
    target_cpu_percent: float = Field(60.0, ge=10, le=90)
    """Target tracking on average CPU (the proxy is async I/O; CPU follows request rate)."""

    @field_validator("master_key_secret_arn")
    @classmethod
    def _master(cls, value: str) -> str:
        return _secret_arn(value) or value


class WorkerConfig(_ServiceBase):
    """A queue worker on Fargate: the user's image takes jobs from its own SQS queue (with a
    dead-letter queue) and calls models through the gateway (`GATEWAY_URL`, `QUEUE_URL`
    injected). It scales on backlog per task, to zero when the queue is empty.

    Defaults: ARM64, 0.25 vCPU / 512 MiB, one job at a time, 0..10 tasks, 3 receives before the
    DLQ, 4 days retention, scale to zero after 15 idle minutes.
    """

    SCALES_FROM_ZERO: ClassVar[bool] = True  # the queue's backlog exists with zero tasks

    image: Image | None = None
    """The worker's image (pinned by tag or digest). Required."""
    max_job_seconds: int = Field(ge=1)
    """Longest job; the queue's visibility timeout is derived from it (SQS allows at most 12 h
    in total)."""
    job_seconds: float = Field(gt=0)
    """Typical time per job (sets the backlog a task may hold)."""
    acceptable_latency_seconds: float = Field(gt=0)
    """How long a job may wait before it starts; with jobSeconds it sets the scaling target."""
    concurrency: int = Field(1, ge=1, le=1000)
    """Jobs one task works on at once."""
    cpu: int = 256
    """Fargate CPU units (with memoryMib, on the Fargate grid)."""
    memory_mib: int = 512
    """Fargate memory in MiB."""
    cpu_architecture: Literal["ARM64", "X86_64"] = "ARM64"
    """Fargate CPU architecture (X86_64 needs an amd64 image)."""
    desired_count: int = Field(0, ge=0, le=1000)
    """Tasks at deploy time; the queue decides afterwards."""
    min_count: int = Field(0, ge=0, le=1000)
    """Autoscaling lower bound (0: scale to zero on an empty queue)."""
    max_count: int = Field(10, ge=1, le=1000)
    """Autoscaling upper bound."""
    max_receive_count: int = Field(3, ge=1, le=1000)
    """Receives before a message moves to the dead-letter queue."""
    retention_seconds: int = Field(345_600, ge=60, le=1_209_600)
    """How long an unprocessed message is kept (the DLQ keeps messages 14 days)."""
    idle_minutes: int = Field(15, ge=1, le=1440)
    """Minutes with nothing waiting or in flight before scaling to zero."""
    kms_key_id: str | None = None
    """KMS key for queue encryption; default SQS-managed keys (SSE-SQS)."""
    result_queue: bool = False
    """Create a result queue (`<queue>-results`, encrypted like the work queue) that the worker
    may send to (`RESULT_QUEUE_URL`); default none (images/worker then logs each result)."""

    @model_validator(mode="after")
    def _worker(self) -> WorkerConfig:
        if self.image is None:
            raise ValueError("a worker needs `image`: its own image, pinned by tag or digest")
        return self


class AlarmsConfig(_Section):
    """Thresholds of the paging alarms. Defaults: target 5xx above 5 % of requests, TTFT p99
    above 10 s, a task pending (or a Fargate service short of its desired count) 15 minutes, GPU
    memory above 95 %, the gateway's memory above 90 %. The gateway's and the workers' other
    thresholds derive from their own settings (longest route, CPU target, acceptable latency,
    backlog target)."""

    target_5xx_percent: float = Field(5.0, gt=0, le=100)
    """Share of requests the engines answer 5xx (3 of 5 minutes) that pages."""
    ttft_p99_seconds: float = Field(10.0, gt=0, le=3600)
    """Time to first token p99 of the slowest task (3 of 5 minutes) that pages."""
    pending_minutes: int = Field(15, ge=1, le=1440)
    """Minutes a task may wait for capacity before it pages."""
    gpu_memory_percent: float = Field(95.0, gt=0, le=100)
    """GPU memory use (5 minutes) that pages."""
    gateway_memory_percent: float = Field(90.0, gt=0, le=100)
    """The gateway's memory use, in % of its task size (5 minutes), that pages."""


class SubscriptionConfig(_Section):
    """One alarm recipient."""

    protocol: Literal["email", "email-json", "https", "sms"]
    """SNS protocol (e-mail subscriptions must be confirmed by the recipient)."""
    endpoint: str
    """E-mail address, https:// URL or E.164 phone number."""


class OperationsConfig(_Section):
    """Day-2 operations. Defaults: the metrics sidecar in every task, the CloudWatch agent on
    every pool instance, one dashboard, alarms with the default thresholds to an SNS topic with
    no subscriptions (add them here or subscribe later)."""

    metrics_sidecar: bool = True
    """Run the metrics sidecar (images/metrics) next to every engine; engine-load scaling and
    the engine alarms need it."""
    host_telemetry: bool = True
    """CloudWatch agent on the pool instances: nvidia-smi metrics on GPU hosts, neuron-monitor
    on Inferentia/Trainium hosts."""
    dashboard: bool = True
    """One CloudWatch dashboard for the stack."""
    alarms: AlarmsConfig = Field(default_factory=lambda: AlarmsConfig.model_validate({}))
    """Alarm thresholds."""
    alarm_subscriptions: list[SubscriptionConfig] = Field(default_factory=list, max_length=50)
    """Who the alarm topic notifies."""


class StackConfig(_Section):
    """Everything one stack deploys. Only `endpoint` is required; pools and services are maps
    keyed by short names. Tags for every resource come from the provider's own
    `aws:defaultTags` stack setting."""

    network: NetworkConfig = Field(default_factory=lambda: NetworkConfig.model_validate({}))
    """VPC, NAT and VPC endpoints."""
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    """ECS cluster settings."""
    endpoint: EndpointConfig
    """The authenticated internal ALB in front of every service."""
    images: ImagesConfig = Field(default_factory=ImagesConfig)
    """Default image per engine."""
    gpu_pools: dict[Name, PoolConfig] = Field(default_factory=dict)
    """NVIDIA GPU capacity pools, by name."""
    neuron_pools: dict[Name, PoolConfig] = Field(default_factory=dict)
    """Inferentia/Trainium capacity pools, by name."""
    managed_instance_pools: dict[Name, ManagedInstancePoolConfig] = Field(default_factory=dict)
    """ECS Managed Instances GPU capacity pools, by name."""
    models: dict[Name, ModelConfig] = Field(default_factory=dict)
    """LLM services, by name (the name is the URL path prefix)."""
    rerankers: dict[Name, RerankerConfig] = Field(default_factory=dict)
    """Fargate cross-encoder re-rankers, by name (also the URL path prefix)."""
    weight_stores: dict[Name, WeightStoreConfig] = Field(default_factory=dict)
    """Stack-managed EFS file systems for weights, by name (`weightsUri: efs://<name>/...`)."""
    operations: OperationsConfig = Field(
        default_factory=lambda: OperationsConfig.model_validate({})
    )
    """Metrics, host telemetry, dashboard and alarms."""
    gateway: GatewayConfig | None = None
    """The AI gateway (LiteLLM) in front of every model and optional Bedrock models; default
    none."""
    workers: dict[Name, WorkerConfig] = Field(default_factory=dict)
    """Queue workers on Fargate, by name; they call models through the gateway."""
    protect: bool = True
    """Keep what cannot be recreated when the stack is destroyed: on (prod), the Cognito user
    pool has deletion protection and, like the ALB access-log bucket, is retained by `pulumi
    destroy` (left in the account, dropped from the state); off (dev), both are deleted, the
    bucket with its logs."""

    def service_names(self) -> list[str]:
        return [*self.models, *self.rerankers]

    def metrics_sidecar_services(self) -> list[str]:
        """Services that run the metrics sidecar: with `operations.metricsSidecar`, every
        re-ranker and every model whose engine the sidecar can scrape (`contracts.metrics`
        knows the vLLM and Neuron families; SGLang, TGI and custom engines name theirs
        differently, so they run without it and scale on ALB requests)."""
        if not self.operations.metrics_sidecar:
            return []
        return [
            *(n for n, m in self.models.items() if m.engine in METRICS_BY_KIND),
            *self.rerankers,
        ]


# --------------------------------------------------------------------------------------------
# loading: pydantic errors -> ConfigIssue with config paths
# --------------------------------------------------------------------------------------------


def _path(loc: tuple[Any, ...]) -> str:
    parts = [ROOT]
    for item in loc:
        if isinstance(item, int):
            parts[-1] += f"[{item}]"
        elif item in ("[key]",):
            continue
        else:
            parts.append(str(item))
    return ".".join(parts)


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    """Keys valid at the parent of `loc`, by walking the schema (for 'unknown key' hints)."""
    model: Any = StackConfig
    for item in loc[:-1]:
        if isinstance(model, type) and issubclass(model, BaseModel):
            field = next(
                (f for n, f in model.model_fields.items() if item in (n, f.alias)),
                None,
            )
            if field is None:
                return []
            model = field.annotation
        # unwrap dict[Name, X] / X | None to X
        args = getattr(model, "__args__", ())
        if args:
            model = next(
                (a for a in reversed(args) if isinstance(a, type) and issubclass(a, BaseModel)),
                model,
            )
    if isinstance(model, type) and issubclass(model, BaseModel):
        return sorted(f.alias or n for n, f in model.model_fields.items())
    return []


_MSG_WORDS = (
    ("Input should be", "must be"),
    ("greater than or equal to", ">="),
    ("less than or equal to", "<="),
    ("greater than", ">"),
    ("less than", "<"),
)


def _message(err: Mapping[str, Any]) -> str:
    kind = err["type"]
    if kind == "missing":
        return "is required but missing; add it (see the configuration reference in README.md)"
    if kind == "extra_forbidden":
        allowed = _allowed_keys(err["loc"])
        hint = f"; valid keys here: {', '.join(allowed)}" if allowed else ""
        return f"unknown key{hint}"
    msg = err["msg"]
    if msg.startswith("Value error, "):
        return msg[len("Value error, ") :]
    if msg.startswith("Assertion failed, "):
        return msg[len("Assertion failed, ") :]
    for long, short in _MSG_WORDS:
        msg = msg.replace(long, short)
    got = err.get("input")
    if isinstance(got, (str, int, float, bool)) or got is None:
        return f"{msg[0].lower()}{msg[1:]} (got {got!r})"
    return f"{msg[0].lower()}{msg[1:]}"


def issues_from_validation_error(exc: ValidationError) -> list[ConfigIssue]:
    """One `ConfigIssue` per pydantic error, with camelCase config paths."""
    return [ConfigIssue(_path(tuple(e["loc"])), _message(e)) for e in exc.errors()]


def check_references(cfg: StackConfig) -> list[ConfigIssue]:
    """Cross-section checks: pools exist and match the engine, names unique, images given."""
    issues: list[ConfigIssue] = []
    for name, model in cfg.models.items():
        gpu = model.on_gpu
        section = "gpuPools or managedInstancePools" if gpu else "neuronPools"
        pools = [*cfg.gpu_pools, *cfg.managed_instance_pools] if gpu else [*cfg.neuron_pools]
        if model.weights_uri is not None and model.weights_uri.startswith("efs://"):
            try:
                parse_efs_uri(
                    model.weights_uri, f"{ROOT}.models.{name}.weightsUri", list(cfg.weight_stores)
                )
            except EfsConfigError as exc:
                path, _, message = str(exc).partition(": ")
                issues.append(ConfigIssue(path, message))
        if model.pool not in pools:
            known = ", ".join(sorted(pools)) or "none defined"
            issues.append(
                ConfigIssue(
                    f"{ROOT}.models.{name}.pool",
                    f"engine {model.engine} needs a pool from {section} (known: {known}); "
                    f"got {model.pool!r}",
                )
            )
        if (
            not cfg.images.build
            and model.image is None
            and model.engine != "custom"
            and getattr(cfg.images, model.engine) is None
        ):
            issues.append(
                ConfigIssue(
                    f"{ROOT}.models.{name}.image",
                    f"no image: set `image` here or `images.{model.engine}`, or "
                    "`images.build: true`",
                )
            )
    for name, rr in cfg.rerankers.items():
        if name in cfg.models:
            issues.append(
                ConfigIssue(
                    f"{ROOT}.rerankers.{name}",
                    "a model service has the same name; service names share the URL path space",
                )
            )
        if not cfg.images.build and rr.image is None and cfg.images.reranker is None:
            issues.append(
                ConfigIssue(
                    f"{ROOT}.rerankers.{name}.image",
                    "no image: set `image` here or `images.reranker`, or `images.build: true`",
                )
            )
    if cfg.metrics_sidecar_services() and not cfg.images.build and cfg.images.metrics is None:
        issues.append(
            ConfigIssue(
                f"{ROOT}.images.metrics",
                "the metrics sidecar needs an image: set `images.metrics`, or `images.build: "
                "true`, or turn it off with `operations.metricsSidecar: false`",
            )
        )
    for name, model in cfg.models.items():
        if model.engine not in METRICS_BY_KIND and (
            "metric" in model.autoscaling.model_fields_set
            and model.autoscaling.metric != "albRequests"
        ):
            issues.append(
                ConfigIssue(
                    f"{ROOT}.models.{name}.autoscaling.metric",
                    f"{model.autoscaling.metric} scaling reads engine metrics the metrics sidecar "
                    f"cannot scrape from engine {model.engine} (it knows the vLLM and Neuron "
                    "families); set `albRequests`, the default for this engine",
                )
            )
    if not cfg.operations.metrics_sidecar:
        for name, model in cfg.models.items():
            if model.engine in METRICS_BY_KIND and model.autoscaling.metric != "albRequests":
                issues.append(
                    ConfigIssue(
                        f"{ROOT}.models.{name}.autoscaling.metric",
                        f"{model.autoscaling.metric} scaling reads the engine's metrics, which "
                        "the metrics sidecar publishes; set `albRequests` or turn "
                        "`operations.metricsSidecar` on",
                    )
                )
    if cfg.images.build and not images_to_build(cfg):
        issues.append(
            ConfigIssue(
                f"{ROOT}.images.build",
                "nothing to build: every service already has an image (its own `image` or "
                "`images.<engine>`); remove `build: true` or the references it should replace",
            )
        )
    # Models name their pool across every section, and a pool names its capacity provider.
    seen: dict[str, str] = {}
    for section, pools in (
        ("gpuPools", cfg.gpu_pools),
        ("neuronPools", cfg.neuron_pools),
        ("managedInstancePools", cfg.managed_instance_pools),
    ):
        for pool in pools:
            if pool in seen:
                issues.append(
                    ConfigIssue(
                        f"{ROOT}.{section}.{pool}",
                        f"a pool in {seen[pool]} has the same name; rename one (pool names are "
                        "unique across gpuPools, neuronPools and managedInstancePools)",
                    )
                )
            else:
                seen[pool] = section
    return issues


def managed_instance_option_issues(raw: dict[str, Any]) -> tuple[dict[str, Any], list[ConfigIssue]]:
    """`raw` without the keys of `managedInstancePools.<name>` that only an ASG pool takes, and
    one issue per such key saying why a Managed Instances pool cannot take it (instead of the
    schema's bare "unknown key")."""
    section = raw.get("managedInstancePools")
    if not isinstance(section, dict):
        return raw, []
    issues: list[ConfigIssue] = []
    cleaned: dict[str, Any] = {}
    for name, pool in section.items():
        if not isinstance(pool, dict):
            cleaned[name] = pool
            continue
        found = managed_instances.unsupported_option_problems(pool)
        issues += [
            ConfigIssue(f"{ROOT}.managedInstancePools.{name}.{key}", message)
            for key, message in found
        ]
        dropped = {key for key, _ in found}
        cleaned[name] = {k: v for k, v in pool.items() if k not in dropped}
    return {**raw, "managedInstancePools": cleaned}, issues


def images_to_build(cfg: StackConfig) -> dict[str, list[str]]:
    """With `images.build`, the images the stack must build: image name (`vllm`, `neuron`,
    `reranker`) -> the services that run it (those without their own `image` and without an
    `images.<engine>` reference). Empty when `images.build` is false."""
    if not cfg.images.build:
        return {}
    users: dict[str, list[str]] = {}
    for name, model in cfg.models.items():
        if model.engine == "custom":
            continue  # a custom service always names its own image
        if model.image is None and getattr(cfg.images, model.engine) is None:
            users.setdefault(model.engine, []).append(name)
    for name, rr in cfg.rerankers.items():
        if rr.image is None and cfg.images.reranker is None:
            users.setdefault("reranker", []).append(name)
    if cfg.images.metrics is None and cfg.metrics_sidecar_services():
        users["metrics"] = cfg.metrics_sidecar_services()
    return users


def load_stack_config(raw: object, stack: str | None = None) -> StackConfig:
    """Validate the raw `ecs-inference:platform` value; raise one `ConfigError` listing all issues.

    `raw` is what `pulumi.Config("ecs-inference").get_object("platform")` returns (a dict),
    or None when the key is absent.
    """
    if raw is None:
        raise ConfigError(
            ConfigIssue(
                ROOT,
                "missing: set the structured key `ecs-inference:platform` in "
                f"Pulumi.{stack or '<stack>'}.yaml (see Pulumi.dev.yaml for a complete example)",
            ),
            stack,
        )
    if not isinstance(raw, dict):
        raise ConfigError(
            ConfigIssue(ROOT, f"must be a mapping of sections, got {type(raw).__name__}"),
            stack,
        )
    raw, issues = managed_instance_option_issues(raw)
    try:
        cfg = StackConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(issues + issues_from_validation_error(exc), stack) from None
    issues += check_references(cfg)
    if issues:
        raise ConfigError(issues, stack)
    return cfg
