"""Systems Manager Parameter Store: the parameters the stack keeps its secret values in."""

from __future__ import annotations

from tools.aws_requests.registry import ApiRequest, Inputs, drop_none, maps, tags


@maps("aws:ssm/parameter:Parameter")
def _parameter(i: Inputs, name: str | None) -> list[ApiRequest]:
    # The provider creates the parameter with PutParameter (Overwrite only on update) and adds
    # tags in the same request.
    return [
        ApiRequest(
            "ssm",
            "PutParameter",
            drop_none(
                {
                    "Name": name,
                    "Description": i.get("description"),
                    "Value": i.get("value")
                    if i.get("value") is not None
                    else i.get("insecureValue"),
                    "Type": i.get("type"),
                    "KeyId": i.get("keyId"),
                    "AllowedPattern": i.get("allowedPattern"),
                    "Tier": i.get("tier"),
                    "DataType": i.get("dataType"),
                    "Overwrite": i.get("overwrite"),
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]
