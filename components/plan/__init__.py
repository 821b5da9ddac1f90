"""The plan: every decision a stack's resources depend on, made before any resource exists.

`build_plan(config)` checks what the config alone cannot — instance types that exist and match
their pool kind, models that fit their pool's accelerators, Neuron artifacts that fit their
instance, Fargate sizes on the grid, timeouts that cover the longest generation, deploys that
can make progress on scarce accelerators — and returns each component's spec, with the
decisions behind it as lines the preview prints and the stack exports. It raises one
`ConfigError` with every problem, each naming the config path to edit, so an invalid stack
registers nothing. One module per config section; `stack` composes them.
"""

from ecs_inference.plan.stack import PLATFORM_NAME, Plan, build_plan

__all__ = ["PLATFORM_NAME", "Plan", "build_plan"]
