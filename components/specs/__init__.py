"""Pure specs: what each component builds, as frozen Pulumi-free dataclasses, with their checks.

The plan (`components.plan`) builds one spec per component from the validated config; the
component adds only the wiring (Outputs of other components). Checks here name the AWS limit
they enforce and raise or return issues before any resource exists.
"""
