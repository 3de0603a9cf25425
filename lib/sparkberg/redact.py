"""Secrets never become text: the one place that removes them from what sparkberg shows.

A catalog URI may carry a password (``http://user:SECRET@host``, ``postgresql://etl:SECRET@db/c``,
``...?password=SECRET``), and a server's error body may quote the request's ``Authorization`` header, an OAuth2
token or a signed URL. :func:`uri` masks a URI's password and secret query parameters; :func:`text` masks every
credential it recognizes in free text (a message quoted from a server, an exception's text, a URI inside a
sentence). Every message that shows a URI or quotes a server passes through one of them.
"""
from __future__ import annotations

import re

MASK = "***"

# the password of a URI's userinfo: scheme://user:PASSWORD@host
_USERINFO = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^:@/\s'\"]*):[^@/\s'\"]*@")
# a query parameter or form field that carries a secret (AWS SigV4 and presigned URLs, Azure SAS, OAuth2, JDBC)
_SECRET_PARAMS = (
    "password", "passwd", "pwd", "secret", "client_secret", "access_token", "refresh_token", "id_token", "token",
    "subject_token", "actor_token", "x-amz-signature", "x-amz-credential", "x-amz-security-token", "sig",
    "signature", "x-goog-signature", "x-goog-credential", "credential", "sas", "sas-token", "account-key",
    "sharedaccesssignature", "accountkey",
)
_PARAM = re.compile(r"(?i)(?P<head>(?:[?&;]|\b)(?:" + "|".join(map(re.escape, _SECRET_PARAMS)) + r")=)[^&;\s'\"]+")
# an Authorization (or Proxy-Authorization) header's value, quoted anywhere: "Authorization: Bearer x",
# {"Authorization": "AWS4-HMAC-SHA256 Credential=..., Signature=..."}
_AUTH_HEADER = re.compile(
    r"(?i)(?P<head>\b(?:proxy-)?authorization['\"]?\s*[:=]\s*['\"]?)[^'\"\r\n}]+")
# a scheme's credentials outside a header: "Bearer eyJ...", "Basic dXNl..."
_AUTH_SCHEME = re.compile(r"(?i)(?P<head>\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]{4,}")
# a JSON (or dict repr) member whose name says it holds a secret: "access_token": "x", 'client_secret': 'x'
_SECRET_KEYS = (
    "access_token", "refresh_token", "id_token", "token", "client_secret", "password", "secret", "credential",
    "s3.secret-access-key", "s3.session-token", "s3.access-key-id", "secret-access-key", "session-token",
    "secret_access_key", "session_token", "gcs.oauth2.token", "adls.account-key", "account-key", "jdbc.password",
    "aws_secret_access_key", "aws_session_token", "rest.secret-access-key", "rest.session-token",
)
_SECRET_MEMBER = re.compile(
    r"(?i)(?P<head>(?P<q>['\"])(?:" + "|".join(map(re.escape, _SECRET_KEYS)) +
    r"|adls\.sas-token\.[^'\"]*|adls\.connection-string\.[^'\"]*)(?P=q)\s*:\s*(?P<q2>['\"]))[^'\"]*(?P=q2)")


def uri(value: str) -> str:
    """``value`` with its userinfo's password and its secret query parameters masked (``***``)."""
    return _PARAM.sub(lambda m: m.group("head") + MASK, _USERINFO.sub(lambda m: m.group("head") + ":" + MASK + "@",
                                                                        value))


def text(value: object) -> str:
    """``str(value)`` with every credential this module recognizes masked: URIs' passwords, secret query
    parameters, ``Authorization`` headers, bearer and basic credentials, and JSON members named for secrets."""
    out = str(value)
    out = _SECRET_MEMBER.sub(lambda m: m.group("head") + MASK + m.group("q2"), out)
    out = _AUTH_HEADER.sub(lambda m: m.group("head") + MASK, out)
    out = _AUTH_SCHEME.sub(lambda m: m.group("head") + MASK, out)
    return uri(out)

