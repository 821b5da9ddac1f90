"""Test-side name of `tools.aws_shapes` (the botocore request-shape checks moved to tools/ so the
offline preview runs them too; tests keep importing them from here)."""

from tools.aws_shapes import *  # noqa: F403
from tools.aws_shapes import (  # noqa: F401  (names tests import explicitly)
    UNKNOWN,
    ShapeError,
    check,
    container_definitions,
    create_listener_request,
    create_rule_request,
    create_user_pool_client_request,
    create_user_pool_request,
    elbv2_action,
    elbv2_condition,
    elbv2_transform,
    input_shape,
    named_shape,
    register_task_definition_request,
    service_model,
    to_api,
    validate_named_shape,
    validate_shape,
)
