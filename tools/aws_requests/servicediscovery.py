"""Cloud Map: HTTP namespaces."""

from __future__ import annotations

from tools.aws_requests.registry import ApiRequest, Inputs, drop_none, maps, tags


@maps("aws:servicediscovery/httpNamespace:HttpNamespace")
def _http_namespace(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "servicediscovery",
            "CreateHttpNamespace",
            drop_none(
                {
                    "Name": name,
                    "Description": i.get("description"),
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]
