"""ACM: imported and requested certificates."""

from __future__ import annotations

from collections.abc import Iterable

from tools.aws_requests.registry import ApiRequest, Inputs, drop_none, known, maps, rule, tags


@maps("aws:acm/certificate:Certificate")
def _acm_certificate(i: Inputs, _name: str | None) -> list[ApiRequest]:
    if i.get("certificateBody") is not None or i.get("privateKey") is not None:
        return [
            ApiRequest(
                "acm",
                "ImportCertificate",
                drop_none(
                    {
                        "Certificate": i.get("certificateBody"),
                        "PrivateKey": i.get("privateKey"),
                        "CertificateChain": i.get("certificateChain"),
                        "Tags": tags(i.get("tags")),
                    }
                ),
            )
        ]
    return [
        ApiRequest(
            "acm",
            "RequestCertificate",
            drop_none(
                {
                    "DomainName": i.get("domainName"),
                    "ValidationMethod": i.get("validationMethod"),
                    "SubjectAlternativeNames": i.get("subjectAlternativeNames"),
                    "KeyAlgorithm": i.get("keyAlgorithm"),
                    "CertificateAuthorityArn": i.get("certificateAuthorityArn"),
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]


@rule("aws:acm/certificate:Certificate")
def _acm_pem(i: Inputs, _name: str | None) -> Iterable[str]:
    for key, marker in (("certificateBody", "CERTIFICATE"), ("privateKey", "PRIVATE KEY")):
        value = i.get(key)
        if isinstance(value, str) and known(value) and "-----BEGIN " not in value:
            yield f"{key} is not PEM (no -----BEGIN ...{marker}----- block)"
