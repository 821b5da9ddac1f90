"""What counts as model serving, for ``scope: model-serving``.

A route reaches a model when something on it needs an accelerator, runs a known model-serving
image or listens on a model port, runs on a GPU / Inferentia / Trainium instance type, or is
tagged ``ml:serving=true``. A value unknown at preview counts as serving (the route is then
judged, never waved through on a guess).
"""

from __future__ import annotations

import re
from typing import Any

from pulumi_policy.proxy import UnknownValueError

from .. import tags
from ..resources import (
    APP_RUNNER,
    EIP,
    EXPRESS_SERVICE,
    INSTANCE,
    LAUNCH_CONFIGURATION,
    LAUNCH_TEMPLATE,
    LIGHTSAIL_INSTANCE,
    LIGHTSAIL_PUBLIC_PORTS,
    SERVICE,
    TARGET_GROUP,
    TASK_SET,
    accelerator_needs,
    as_list,
    as_number,
    container_definitions,
    get,
    get_path,
    is_native,
    tags_of,
)
from .global_accelerator import eip_holders
from .index import Leg, Model, Resource

#: Images of model servers: vLLM, TGI / TEI, Triton, Ollama, SGLang, LMDeploy, TorchServe,
#: TF Serving, Ray, llama.cpp, LocalAI, NVIDIA NIM, DJL / LMI, Xinference, OpenLLM.
SERVING_IMAGE = re.compile(
    r"(vllm|text-generation-inference|text-embeddings-inference|tritonserver|triton|ollama|"
    r"sglang|lmdeploy|torchserve|tensorflow[-/]serving|rayproject|ray-ml|kuberay|llama[.-]?cpp|"
    r"localai|/nim/|nvcr\.io/nim|djl-inference|djl-serving|xinference|openllm|"
    r"huggingface-pytorch-tgi|huggingface-pytorch-inference)",
    re.IGNORECASE,
)
GPU_INSTANCE = re.compile(r"^(p\d|g\d|inf\d|trn\d|dl\d)", re.IGNORECASE)
SERVING_TAG = tags.SERVING


def model_serving(model: Model, leg: Leg, model_ports: set[int]) -> bool:
    """Whether a route reaches a model: an accelerator task or instance, a serving image or
    container port, a target group on a model port, or a resource tagged ``ml:serving=true``.

    A value unknown at preview counts as serving (the route is then judged, never waved
    through on a guess).
    """
    try:
        return _serving(model, leg, model_ports)
    except UnknownValueError:
        return True


def _serving(model: Model, leg: Leg, model_ports: set[int]) -> bool:
    if not leg.ends:  # what it reaches is outside the stack or unresolved: judged, as unknown
        return True
    return any(_serves(model, r, model_ports) for r in (*leg.hops, *leg.via, *leg.ends))


def _serves(model: Model, resource: Resource, model_ports: set[int]) -> bool:
    """Whether one resource on a route marks it as model serving."""
    if _tagged(resource):
        return True
    rtype = resource.resource_type
    props = resource.props
    if rtype in TARGET_GROUP:
        port = as_number(get(props, "port"))
        return port is not None and int(port) in model_ports
    if rtype in SERVICE | TASK_SET:
        return any(
            _tagged(td) or task_serves_model(td, model_ports)
            for td in model.task_definitions(resource)
        )
    if rtype in INSTANCE | LAUNCH_TEMPLATE | LAUNCH_CONFIGURATION:
        return bool(GPU_INSTANCE.match(str(instance_type(resource) or "")))
    if rtype in APP_RUNNER:
        source = ("sourceConfiguration", "imageRepository")
        image = get_path(props, *source, "imageIdentifier")
        port = get_path(props, *source, "imageConfiguration", "port")
        return (
            bool(SERVING_IMAGE.search(str(image or ""))) or (as_number(port) or -1) in model_ports
        )
    if rtype in EIP:
        return any(_serves(model, holder, model_ports) for holder in eip_holders(model, resource))
    if rtype in LIGHTSAIL_PUBLIC_PORTS:
        return any(
            _covers(get(p, "fromPort"), get(p, "toPort"), model_ports)
            for p in as_list(get(props, "portInfos"))
        )
    if rtype in LIGHTSAIL_INSTANCE and is_native(rtype):
        return any(
            _covers(get(p, "fromPort"), get(p, "toPort"), model_ports)
            for p in as_list(get_path(props, "networking", "ports"))
        )
    if rtype in EXPRESS_SERVICE:
        return any(
            SERVING_IMAGE.search(str(get(c, "image", "")))
            or (as_number(get(c, "containerPort")) or -1) in model_ports
            for c in as_list(get(props, "primaryContainer"))
        )
    return False


def _covers(low: Any, high: Any, model_ports: set[int]) -> bool:
    """A port range (``low``-``high``, inclusive) that holds a model port."""
    first, last = as_number(low), as_number(high)
    if first is None:
        return False
    top = int(last if last is not None else first)
    return any(int(first) <= port <= top for port in model_ports)


def _tagged(resource: Resource) -> bool:
    found = tags_of(resource.props)
    return str(found.get(SERVING_TAG, "")).lower() == "true"


def instance_type(resource: Resource) -> Any:
    """The ``instanceType`` of an instance, launch template (aws-native: in
    ``launchTemplateData``) or launch configuration."""
    if resource.resource_type in LAUNCH_TEMPLATE and is_native(resource.resource_type):
        return get_path(resource.props, "launchTemplateData", "instanceType")
    return get(resource.props, "instanceType")


def task_serves_model(td: Resource, model_ports: set[int]) -> bool:
    """A task definition that needs an accelerator, runs a known serving image or listens on
    a model port."""
    if accelerator_needs(td.props, td.resource_type):
        return True
    for container in container_definitions(td.props):
        if SERVING_IMAGE.search(str(get(container, "image", ""))):
            return True
        for mapping in as_list(get(container, "portMappings")):
            port = as_number(get(mapping, "containerPort"))
            if port is not None and int(port) in model_ports:
                return True
    return False
