"""AWS Signature Version 4 for the REST catalog's requests: what AWS Glue's Iceberg REST endpoint, S3 Tables and
REST catalogs behind API Gateway ask for.

Configured by Iceberg's REST properties: ``rest.sigv4-enabled``, ``rest.signing-name`` (the service, by default
``execute-api``; ``glue`` and ``s3tables`` for AWS's endpoints), ``rest.signing-region`` (else ``client.region``),
and the credentials ``rest.access-key-id``, ``rest.secret-access-key``, ``rest.session-token`` (else AWS's default
chain: environment, profile, instance role). As Iceberg Java's client does, the body's SHA-256 is sent and signed
as ``x-amz-content-sha256``, and an ``Authorization`` header of the catalog's own (a bearer token) is sent as
``Original-Authorization``, the signature taking its place. Signing is botocore's (the ``aws`` extra), AWS's own
implementation of the canonical request, whose encoding rules are easy to get subtly wrong.
"""
from __future__ import annotations

import hashlib
from typing import Any

from sparkberg.errors import NotSupportedError, ValidationError

SIGV4_ENABLED = "rest.sigv4-enabled"
DEFAULT_SIGNING_NAME = "execute-api"


def sigv4_enabled(properties: dict[str, Any]) -> bool:
    """Whether ``properties`` ask for signed requests."""
    value = str(properties.get(SIGV4_ENABLED, "false")).strip().lower()
    if value not in ("true", "false"):
        raise ValidationError(f"REST catalog property {SIGV4_ENABLED} must be true or false, got {value!r}")
    return value == "true"


class SigV4Signer:
    """Signs a request's method, URL, headers and body with the configured credentials (see the module
    docstring); its ``repr`` names the service and region only."""

    def __init__(self, properties: dict[str, Any]):
        self._properties = {k: v for k, v in properties.items() if k.startswith(("rest.", "client."))}
        try:
            from botocore.credentials import Credentials
        except ImportError:
            raise NotSupportedError("SigV4 signing (rest.sigv4-enabled) needs botocore: pip install "
                                    "'sparkberg[aws]'") from None
        self.service = str(properties.get("rest.signing-name") or DEFAULT_SIGNING_NAME)
        self.region = properties.get("rest.signing-region") or properties.get("client.region")
        access, secret = properties.get("rest.access-key-id"), properties.get("rest.secret-access-key")
        if access and secret:
            credentials = Credentials(access, secret, properties.get("rest.session-token"))
        else:
            import botocore.session
            session = botocore.session.get_session()
            credentials = session.get_credentials()
            self.region = self.region or session.get_config_variable("region")
            if credentials is None:
                raise ValidationError("SigV4 signing: no AWS credentials (rest.access-key-id and "
                                      "rest.secret-access-key, or AWS's default chain)")
        if not self.region:
            raise ValidationError("SigV4 signing needs a region: rest.signing-region or client.region")
        self._credentials = credentials

    def __repr__(self) -> str:
        return f"SigV4Signer({self.service}, {self.region})"

    def __reduce__(self):
        # (made anew where it is unpickled: a default chain's credentials are that process's)
        return SigV4Signer, (self._properties,)

    def sign(self, method: str, url: str, headers: dict[str, str], body: bytes | None,
             params: dict[str, str] | None = None) -> dict[str, str]:
        """``headers`` with the signature's (``Authorization``, ``X-Amz-Date``, ``x-amz-content-sha256``, and
        ``X-Amz-Security-Token`` for temporary credentials) for a request to ``url`` with query ``params``."""
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        out = {k: v for k, v in headers.items() if k.lower() != "authorization"}
        own = next((v for k, v in headers.items() if k.lower() == "authorization"), None)
        if own is not None:
            out["Original-Authorization"] = own
        out["x-amz-content-sha256"] = hashlib.sha256(body or b"").hexdigest()
        request = AWSRequest(method=method, url=url, data=body or b"", params=params or {}, headers=out)
        # (the credentials as they are now: a role's are renewed by botocore as they near expiry)
        SigV4Auth(self._credentials.get_frozen_credentials(), self.service, self.region).add_auth(request)
        return dict(request.headers.items())
