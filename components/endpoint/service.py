"""Endpoint: the one authenticated HTTPS entry point every model and re-ranker sits behind.

Creates an Application Load Balancer (internal by default, in the given subnets) with:

- a security group that admits 443 (and 80, which only redirects) from the configured client
  networks alone, and egresses 443 anywhere, because the ALB itself calls Cognito's token and
  JWKS endpoints (an internal ALB reaches them through the NAT gateway), plus the serving ports
  towards the VPC CIDR so it can reach the tasks;
- an HTTPS listener with a TLS 1.3 security policy whose default action is a fixed 404, so a
  request matches a per-service rule (which authenticates) or nothing; an HTTP listener that
  only redirects to HTTPS; invalid header fields dropped; an idle timeout decided from the
  routed services' longest request (an SSE stream that is idle longer is cut mid-answer);
- the certificate from an ACM ARN or, for dev stacks, a self-signed one imported into ACM;
- access logs in an S3 bucket (SSE-S3: ALB log delivery does not support SSE-KMS), with public
  access blocked, TLS-only access, a retention lifecycle and the bucket policy ELB log delivery
  needs;
- Cognito (`auth.CognitoAuth`, its base class).

`Endpoint.route(service, ...)` adds the two authenticated listener rules of one service
(`routes`): no rule forwards without authenticating.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_aws as aws
import pulumi_tls as tls

from ecs_inference import ledger
from ecs_inference.arns import AwsContext, arn_of, aws_context
from ecs_inference.contracts.aws_limits import ELBV2_NAME, LISTENER_RULE_PRIORITY_MAX
from ecs_inference.endpoint.auth import CognitoAuth
from ecs_inference.endpoint.decisions import Routes, default_domain_prefix, idle_timeout
from ecs_inference.endpoint.input import EndpointConfig
from ecs_inference.endpoint.routes import check_service, service_rules
from ecs_inference.iam import deny_insecure_transport, partition_of
from ecs_inference.rollouts.hook import SmokeHook
from ecs_inference.services.base import replacement_name
from ecs_inference.sizing import IdleTimeout

if TYPE_CHECKING:
    from ecs_inference.network.vpc import Network

# Where ELB delivers access logs inside the bucket (the prefix must not contain "AWSLogs").
ACCESS_LOG_PREFIX = "alb"
# Regions launched before August 2022 deliver ALB access logs from a regional ELB account; newer
# regions from the log-delivery service principal. The bucket policy grants the service
# principal everywhere and adds the regional account where one exists (Elastic Load Balancing
# user guide, "Enable access logs for your Application Load Balancer", step 2).
ELB_LOG_DELIVERY_SERVICE = "logdelivery.elasticloadbalancing.amazonaws.com"
ELB_LOG_DELIVERY_ACCOUNTS: dict[str, str] = {
    "us-east-1": "127311923021",
    "us-east-2": "033677994240",
    "us-west-1": "027434742980",
    "us-west-2": "797873946194",
    "af-south-1": "098369216593",
    "ap-east-1": "754344448648",
    "ap-southeast-3": "589379963580",
    "ap-south-1": "718504428378",
    "ap-northeast-3": "383597477331",
    "ap-northeast-2": "600734575887",
    "ap-southeast-1": "114774131450",
    "ap-southeast-2": "783225319266",
    "ap-northeast-1": "582318560864",
    "ca-central-1": "985666609251",
    "eu-central-1": "054676820928",
    "eu-west-1": "156460612806",
    "eu-west-2": "652711504416",
    "eu-south-1": "635631232127",
    "eu-west-3": "009996457667",
    "eu-north-1": "897822967062",
    "me-south-1": "076674570225",
    "sa-east-1": "507241528517",
    "us-gov-west-1": "048591011584",
    "us-gov-east-1": "190560391635",
    "cn-north-1": "638102146993",
    "cn-northwest-1": "037604701340",
}

NOT_FOUND_BODY = "no such service on this endpoint"


@dataclass(frozen=True, kw_only=True)
class EndpointWiring:
    """What `Endpoint` takes from around it: the network (Outputs), the services routed through
    it and the stack's `protect`."""

    vpc_id: pulumi.Input[str]
    """The VPC of the ALB and its security group."""
    vpc_cidr: str
    """The VPC's CIDR; the ALB egresses to it on the routed services' ports only."""
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    """Private subnets (public ones when `internetFacing`), at least two AZs."""
    hook_subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]] | None = None
    """Private subnets of the smoke hook (`routes.smoke_hook`); default None: `subnet_ids`."""
    routes: Routes = field(default_factory=Routes)
    """What the services routed through it decide (ports, longest request, smoke hook); default
    none yet (idle timeout 90 s)."""
    protect: bool = True
    """A new user pool gets deletion protection and, like the access-log bucket, is retained by
    `pulumi destroy`; False: both are deleted (the bucket with its logs). Default True."""

    @classmethod
    def on(cls, network: Network, routes: Routes) -> EndpointWiring:
        """The wiring of an endpoint in `network` (its VPC, CIDR and load-balancer subnets)
        routing `routes`, with the other defaults."""
        return cls(
            vpc_id=network.vpc_id,
            vpc_cidr=network.cidr_block,
            subnet_ids=network.load_balancer_subnet_ids,
            routes=routes,
        )


def _tcp(description: str, port: int, **peers: Any) -> dict[str, Any]:
    """A security group rule of TCP `port` with the `peers` that are not empty."""
    rule = {"description": description, "protocol": "tcp", "from_port": port, "to_port": port}
    return rule | {key: value for key, value in peers.items() if value}


def security_group_rules(
    allowed_cidrs: Sequence[str], vpc_cidr: str, target_ports: Sequence[int]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(ingress, egress) rules of the ALB security group as plain dicts.

    Ingress: 443 and 80 (redirect only) from the client networks, IPv4 and IPv6 kept apart as
    the API requires. Egress: 443 anywhere (Cognito token/JWKS endpoints, reached through NAT
    from an internal ALB) and each serving port to the VPC CIDR only.
    """
    v4 = [c for c in allowed_cidrs if ipaddress.ip_network(c).version == 4]
    v6 = [c for c in allowed_cidrs if ipaddress.ip_network(c).version == 6]
    ingress = [
        _tcp(why, port, cidr_blocks=v4, ipv6_cidr_blocks=v6)
        for port, why in ((443, "HTTPS from client networks"), (80, "HTTP (redirects to HTTPS)"))
    ]
    idp = "HTTPS to the identity provider (Cognito token and JWKS endpoints)"
    egress = [_tcp(idp, 443, cidr_blocks=["0.0.0.0/0"])] + [
        _tcp(f"targets on {port} inside the VPC", port, cidr_blocks=[vpc_cidr])
        for port in sorted(set(target_ports))
    ]
    return ingress, egress


def access_log_bucket_policy(
    bucket_arn: str, account_id: str, region: str, prefix: str = ACCESS_LOG_PREFIX
) -> dict[str, Any]:
    """Bucket policy for ALB access logs: ELB log delivery may put objects under
    `<prefix>/AWSLogs/<account>/`, and any request without TLS is denied."""
    principals: list[tuple[str, dict[str, str]]] = [
        ("ElbLogDelivery", {"Service": ELB_LOG_DELIVERY_SERVICE})
    ]
    if legacy := ELB_LOG_DELIVERY_ACCOUNTS.get(region):
        root = f"arn:{partition_of(region)}:iam::{legacy}:root"
        principals.append(("ElbLogDeliveryRegionalAccount", {"AWS": root}))
    objects = f"{bucket_arn}/{prefix}/AWSLogs/{account_id}/*"
    statements: list[dict[str, Any]] = [
        {
            "Sid": sid,
            "Effect": "Allow",
            "Principal": who,
            "Action": "s3:PutObject",
            "Resource": objects,
        }
        for sid, who in principals
    ]
    resources = [bucket_arn, f"{bucket_arn}/*"]
    statements.append(deny_insecure_transport("DenyInsecureTransport", "s3:*", resources))
    return {"Version": "2012-10-17", "Statement": statements}


class Endpoint(CognitoAuth):
    """The authenticated ALB in front of every service; `route` attaches a service. It decides
    its idle timeout itself from `wiring.routes` (`components.endpoint.decisions`), as a stack's
    plan does, and the Cognito side's attributes are its own (`CognitoAuth`)."""

    certificate_arn: pulumi.Output[str]
    """The HTTPS listener's certificate (given, or the imported self-signed one)."""
    certificate: aws.acm.Certificate | None
    """The imported self-signed certificate; None with `certificate_arn`."""
    access_log_bucket: aws.s3.Bucket | None
    """The access logs; None without access logs."""
    access_log_bucket_policy: aws.s3.BucketPolicy | None
    """ELB log delivery into it; None without access logs."""
    security_group: aws.ec2.SecurityGroup
    """Clients on 443/80 in; the IdP and the targets out."""
    idle_timeout_seconds: int
    """The load balancer's idle timeout in seconds (a routed service keeps its streams alive
    inside it)."""
    load_balancer: aws.lb.LoadBalancer
    """The ALB."""
    dns_name: pulumi.Output[str]
    """Its DNS name."""
    https_listener: aws.lb.Listener
    """HTTPS (TLS 1.3 policy); only the services' rules forward."""
    http_listener: aws.lb.Listener
    """HTTP, redirecting to HTTPS."""
    dns_record: aws.route53.Record | None
    """Alias of `domainName`; None without `hostedZoneId`."""
    smoke_hook: SmokeHook | None
    """The lifecycle hook blue/green, canary and linear services run; None without
    `routes.smoke_hook`."""

    def __init__(
        self,
        name: str,
        input: EndpointConfig,
        wiring: EndpointWiring,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        # Decided before anything registers: a too-short override fails with the stack's message.
        idle = idle_timeout(input, wiring.routes.longest_request_seconds)
        super().__init__("ecs-inference:ingress:Endpoint", name, None, opts)
        ledger.record_decisions("endpoint", [idle.summary()])
        self._name = name
        self._input = input
        self._routes: dict[str, tuple[int, int]] = {}
        self.idle_timeout_seconds = idle.seconds
        child = pulumi.ResourceOptions(parent=self)
        ctx = aws_context(self)

        self.certificate_arn, self.certificate = self._certificate(name, input, child)
        prefix = input.auth.domain_prefix or default_domain_prefix(
            pulumi.get_project(), pulumi.get_stack()
        )
        self._cognito(name, input.auth, input.domain_name, prefix, wiring.protect, ctx)
        self.smoke_hook = None
        if wiring.routes.smoke_hook:
            self.smoke_hook = SmokeHook(f"{name}-hook", vpc_id=wiring.vpc_id, opts=child)
            self.smoke_hook.build(
                subnet_ids=wiring.hook_subnet_ids or wiring.subnet_ids,  # pyright: ignore[reportArgumentType]
                user_pool_id=self.user_pool_id,
                scope=self.api_scopes[0],
                depends_on=[self.resource_server, *self.domain_dependencies()],
            )
        self.access_log_bucket = None
        self.access_log_bucket_policy = None
        log_dependencies: list[pulumi.Resource] = []
        if input.access_logs:
            log_dependencies = self._access_log_bucket(name, input, wiring.protect, ctx)

        self._load_balancer(name, input, wiring, idle, log_dependencies)
        self._listeners(name, input)

        # Cognito's callback and the certificate both name domain_name: the record makes that
        # name reach this ALB (an alias, so no extra query cost and it follows the ALB's IPs).
        self.dns_record = None
        if input.hosted_zone_id:
            self.dns_record = aws.route53.Record(
                f"{name}-dns",
                zone_id=input.hosted_zone_id,
                name=input.domain_name,
                type="A",
                aliases=[
                    aws.route53.RecordAliasArgs(
                        name=self.load_balancer.dns_name,
                        zone_id=self.load_balancer.zone_id,
                        evaluate_target_health=True,
                    )
                ],
                opts=child,
            )

        self.register_outputs(
            {
                "dnsName": self.dns_name,
                "certificateArn": self.certificate_arn,
                "userPoolId": self.user_pool_id,
                "issuer": self.issuer,
                "tokenUrl": self.token_url,
                "apiClientId": self.api_client_id,
            }
        )

    def _load_balancer(
        self,
        name: str,
        input: EndpointConfig,
        wiring: EndpointWiring,
        idle: IdleTimeout,
        log_dependencies: list[pulumi.Resource],
    ) -> None:
        """The ALB's security group and the ALB itself."""
        child = pulumi.ResourceOptions(parent=self)
        ingress, egress = security_group_rules(
            input.allowed_cidrs, wiring.vpc_cidr, wiring.routes.ports
        )
        if self.smoke_hook is not None:
            hook = [self.smoke_hook.security_group.id]
            ingress.append(
                _tcp("HTTPS from the smoke hook (test listener rule)", 443, security_groups=hook)
            )
        self.security_group = aws.ec2.SecurityGroup(
            f"{name}-alb-sg",
            description="Inference ALB: clients on 443/80, egress to IdP and targets only",
            vpc_id=wiring.vpc_id,
            ingress=[aws.ec2.SecurityGroupIngressArgs(**rule) for rule in ingress],
            egress=[aws.ec2.SecurityGroupEgressArgs(**rule) for rule in egress],
            opts=child,
        )
        access_logs = None
        if self.access_log_bucket is not None:
            access_logs = aws.lb.LoadBalancerAccessLogsArgs(
                bucket=self.access_log_bucket.bucket, prefix=ACCESS_LOG_PREFIX, enabled=True
            )
        forcing = {"loadBalancerType": "application", "internal": not input.internet_facing}
        self.load_balancer = aws.lb.LoadBalancer(
            f"{name}-alb",
            # Load-balancer names are capped at 32 characters like target groups; a fitted name
            # changes with what replaces the load balancer.
            name=replacement_name(f"{name}-alb", ELBV2_NAME, forcing),
            load_balancer_type=forcing["loadBalancerType"],
            internal=forcing["internal"],
            subnets=wiring.subnet_ids,
            security_groups=[self.security_group.id],
            idle_timeout=idle.seconds,
            # Malformed headers are a request-smuggling vector; the ALB drops them.
            drop_invalid_header_fields=True,
            access_logs=access_logs,
            # ELB checks that it can write to the bucket when logging is enabled.
            opts=pulumi.ResourceOptions(parent=self, depends_on=log_dependencies),
        )
        self.dns_name = self.load_balancer.dns_name

    def _listeners(self, name: str, input: EndpointConfig) -> None:
        """HTTPS (only the services' rules forward; anything else is 404) and HTTP redirecting
        to HTTPS."""
        child = pulumi.ResourceOptions(parent=self)
        self.https_listener = aws.lb.Listener(
            f"{name}-https",
            load_balancer_arn=self.load_balancer.arn,
            port=443,
            protocol="HTTPS",
            ssl_policy=input.ssl_policy,
            certificate_arn=self.certificate_arn,
            # Only per-service rules (which authenticate first) forward; anything else is 404.
            default_actions=[
                aws.lb.ListenerDefaultActionArgs(
                    type="fixed-response",
                    fixed_response=aws.lb.ListenerDefaultActionFixedResponseArgs(
                        content_type="text/plain",
                        status_code="404",
                        message_body=NOT_FOUND_BODY,
                    ),
                )
            ],
            opts=child,
        )
        self.http_listener = aws.lb.Listener(
            f"{name}-http",
            load_balancer_arn=self.load_balancer.arn,
            port=80,
            protocol="HTTP",
            default_actions=[
                aws.lb.ListenerDefaultActionArgs(
                    type="redirect",
                    redirect=aws.lb.ListenerDefaultActionRedirectArgs(
                        protocol="HTTPS", port="443", status_code="HTTP_301"
                    ),
                )
            ],
            opts=child,
        )

    # -- certificate -------------------------------------------------------------------------
    def _certificate(
        self, name: str, input: EndpointConfig, child: pulumi.ResourceOptions
    ) -> tuple[pulumi.Output[str], aws.acm.Certificate | None]:
        if input.certificate_arn:
            return pulumi.Output.from_input(input.certificate_arn), None
        key = tls.PrivateKey(f"{name}-tls-key", algorithm="RSA", rsa_bits=2048, opts=child)
        cert = tls.SelfSignedCert(
            f"{name}-tls-cert",
            private_key_pem=key.private_key_pem,
            subject=tls.SelfSignedCertSubjectArgs(
                common_name=input.domain_name, organization="ecs-inference dev (self-signed)"
            ),
            dns_names=[input.domain_name],
            validity_period_hours=24 * 365,
            early_renewal_hours=24 * 30,
            allowed_uses=["key_encipherment", "digital_signature", "server_auth"],
            opts=child,
        )
        imported = aws.acm.Certificate(
            f"{name}-cert",
            private_key=key.private_key_pem,
            certificate_body=cert.cert_pem,
            opts=child,
        )
        return imported.arn, imported

    # -- access logs -------------------------------------------------------------------------
    def _access_log_bucket(
        self, name: str, input: EndpointConfig, protect: bool, ctx: AwsContext
    ) -> list[pulumi.Resource]:
        child = pulumi.ResourceOptions(parent=self)
        bucket = aws.s3.Bucket(
            f"{name}-logs",
            # S3 deletes only empty buckets: an unprotected (dev) stack empties it on destroy; a
            # protected one keeps bucket and logs (audit evidence) in the account.
            force_destroy=not protect,
            opts=pulumi.ResourceOptions.merge(
                child, pulumi.ResourceOptions(retain_on_delete=protect)
            ),
        )
        self.access_log_bucket = bucket
        ownership = aws.s3.BucketOwnershipControls(
            f"{name}-logs-ownership",
            bucket=bucket.bucket,
            rule=aws.s3.BucketOwnershipControlsRuleArgs(object_ownership="BucketOwnerEnforced"),
            opts=child,
        )
        public_block = aws.s3.BucketPublicAccessBlock(
            f"{name}-logs-public-access",
            bucket=bucket.bucket,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
            opts=child,
        )
        # ALB access logs support only SSE-S3 (AES256); SSE-KMS makes delivery fail silently.
        encryption = aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-logs-encryption",
            bucket=bucket.bucket,
            rules=[
                aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                    apply_server_side_encryption_by_default=aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                        sse_algorithm="AES256"
                    )
                )
            ],
            opts=child,
        )
        aws.s3.BucketLifecycleConfiguration(
            f"{name}-logs-lifecycle",
            bucket=bucket.bucket,
            rules=[
                aws.s3.BucketLifecycleConfigurationRuleArgs(
                    id="expire-access-logs",
                    status="Enabled",
                    filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(
                        prefix=f"{ACCESS_LOG_PREFIX}/"
                    ),
                    expiration=aws.s3.BucketLifecycleConfigurationRuleExpirationArgs(
                        days=input.access_log_retention_days
                    ),
                    abort_incomplete_multipart_upload=aws.s3.BucketLifecycleConfigurationRuleAbortIncompleteMultipartUploadArgs(
                        days_after_initiation=7
                    ),
                )
            ],
            opts=child,
        )
        # The bucket's ARN from its name: known at preview, so the pack judges the policy then.
        policy = pulumi.Output.all(arn_of(bucket, ctx), ctx.account_id, ctx.region).apply(
            lambda values: json.dumps(access_log_bucket_policy(values[0], values[1], values[2]))
        )
        # Bucket policy, public access block and ownership writes to one bucket conflict when
        # they run concurrently (S3 OperationAborted), so the policy waits for the other two.
        self.access_log_bucket_policy = aws.s3.BucketPolicy(
            f"{name}-logs-policy",
            bucket=bucket.bucket,
            policy=policy,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[public_block, ownership]),
        )
        return [self.access_log_bucket_policy, encryption]

    # -- services ----------------------------------------------------------------------------
    def smoke_target(
        self, service: str, api_path: str
    ) -> tuple[pulumi.Output[str], pulumi.Output[dict[str, Any]]]:
        """The smoke hook's function ARN and the endpoint's part of a service's `hookDetails`:
        the URL through the test rule (the ALB's DNS name, the certificate's name to verify),
        the token endpoint, the hook's client and its secret, the scope."""
        hook = self.smoke_hook
        if hook is None:
            raise ValueError(
                "this endpoint has no smoke hook (EndpointWiring(routes=Routes(smoke_hook=True)))"
            )
        check_service(service)
        ca = self.certificate.certificate_body if self.certificate is not None else None
        details = pulumi.Output.all(
            self.load_balancer.dns_name,
            self.token_url,
            hook.client.id,
            hook.secret.arn,
            pulumi.Output.from_input(ca),
        ).apply(
            lambda a: {
                "url": f"https://{a[0]}/{service}{api_path}",
                "tlsName": self._input.domain_name,
                "tokenUrl": a[1],
                "clientId": a[2],
                "clientSecretArn": a[3],
                "scope": self.api_scopes[0],
                "caPem": a[4],
            }
        )
        return hook.function.arn, details

    def service_url(self, service: str) -> pulumi.Output[str]:
        """`https://<domain>/<service>/`, the base URL clients use for `service`."""
        check_service(service)
        return pulumi.Output.from_input(f"https://{self._input.domain_name}/{service}/")

    def route(
        self,
        service: str,
        *,
        target_group_arn: pulumi.Input[str],
        priority: int,
        opts: pulumi.ResourceOptions | None = None,
        alternate_target_group_arn: pulumi.Input[str] | None = None,
    ) -> list[aws.lb.ListenerRule]:
        """Route `/<service>` and `/<service>/*` to `target_group_arn`, authenticated.

        Creates two rules on the HTTPS listener: `priority` for requests carrying
        `Authorization: Bearer *` (jwt-validation, then forward) and `priority + 1` for all
        others (authenticate-cognito, then forward). Both strip the service prefix. Priorities
        must be unique across routes; `opts` may re-parent the rules (default parent: self).

        With `alternate_target_group_arn` (a blue/green, canary or linear service) the two rules
        are ECS's: the test rule at `priority` and the production (bearer) rule at `priority + 1`,
        each forwarding to both target groups (`routes.service_rules`); returned [test, production].
        """
        check_service(service)
        top = LISTENER_RULE_PRIORITY_MAX - 1
        if isinstance(priority, bool) or not isinstance(priority, int) or not 1 <= priority <= top:
            raise ValueError(
                f"route {service!r}: priority must be 1-{top} "
                f"(it takes {priority} and {priority}+1), got {priority!r}"
            )
        if service in self._routes:
            raise ValueError(f"route {service!r} is already defined on this endpoint")
        taken = {p for pair in self._routes.values() for p in pair}
        if {priority, priority + 1} & taken:
            raise ValueError(
                f"route {service!r}: priorities {priority} and {priority + 1} overlap another "
                f"route's ({sorted(taken)})"
            )
        self._routes[service] = (priority, priority + 1)
        arns = [target_group_arn]
        if alternate_target_group_arn is not None:
            if self.smoke_hook is None:
                raise ValueError(
                    f"route {service!r}: a blue/green, canary or linear service needs the "
                    "endpoint's smoke hook (EndpointWiring(routes=Routes(smoke_hook=True)))"
                )
            arns.append(alternate_target_group_arn)
        return service_rules(
            self,
            f"{self._name}-{service}",
            service,
            listener_arn=self.https_listener.arn,
            target_group_arns=arns,
            priority=priority,
            session_timeout_seconds=self._input.auth.session_timeout_seconds,
            opts=opts,
        )
