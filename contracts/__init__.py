"""Stdlib-only contracts shared by components, images, tools and the policy pack.

Nothing here imports Pulumi, pydantic or any third-party package: the Dockerfiles copy this
folder into images, and the offline preview and the pack read the same facts.
"""
