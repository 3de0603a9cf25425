"""Requests and responses checked against the Iceberg REST catalog's OpenAPI document
(``../shared/spec/iceberg-rest-catalog-open-api.yaml``): the operation is found by method and path, its request
body and the response of the status code validated with the schemas the document gives them (JSON Schema
2020-12, as OpenAPI 3.1; the document's few OpenAPI 3.0 ``nullable`` flags read as "or null").

The document lives in the shared folder beside the checkout, not in the repository. Where it is missing, a clone
alone (``make test`` with nothing beside it) runs the REST tests without the check, and the run's summary says so
once (:data:`UNCHECKED`); in CI (``CI=true``), or where ``SPARKBERG_SHARED`` names the folder, a missing document
is itself a violation of every exchange, so the run fails rather than passing unchecked.
"""
from __future__ import annotations

import functools
import os
import re

SPEC = os.path.join(os.environ.get("SPARKBERG_SHARED") or os.path.join(os.path.dirname(__file__), "..", "..",
                                                                        "shared"),
                    "spec", "iceberg-rest-catalog-open-api.yaml")
REQUIRED = os.environ.get("CI", "").lower() == "true" or bool(os.environ.get("SPARKBERG_SHARED"))
UNCHECKED: list[str] = []  # the exchanges that went unchecked for want of the document (a lone clone)
_ERROR_MODEL = "#/components/schemas/ErrorModel"


def _nullable(node):
    if isinstance(node, dict):
        node = {k: _nullable(v) for k, v in node.items()}
        if node.pop("nullable", False) is True and isinstance(node.get("type"), str):
            node["type"] = [node["type"], "null"]
        return node
    if isinstance(node, list):
        return [_nullable(v) for v in node]
    return node


@functools.lru_cache(maxsize=1)
def document() -> dict:
    import yaml
    with open(SPEC, encoding="utf-8") as f:
        return _nullable(yaml.safe_load(f))


@functools.lru_cache(maxsize=1)
def _operations() -> list[tuple[re.Pattern, str]]:
    out = []
    for template in document()["paths"]:
        # (a catalog without a prefix serves /v1/namespaces...: the {prefix} level is optional)
        pattern = re.escape(template).replace(re.escape("/{prefix}"), "(?:/[^/]+)?")
        pattern = re.sub(r"\\\{[^}]+\\\}", "[^/]+", pattern)
        out.append((re.compile(f"^{pattern}$"), template))
    # the most specific first: literal levels beat parameters
    return sorted(out, key=lambda p: (-p[1].count("/"), p[1].count("{")))


def _resolve(node: dict) -> dict:
    doc = document()
    while "$ref" in node and node["$ref"].startswith("#/components/") and "schemas" not in node["$ref"]:
        kind, name = node["$ref"].split("/")[2:4]
        node = doc["components"][kind][name]
    return node


def _validator(schema: dict):
    import jsonschema
    root = {**schema, "components": document()["components"]}
    return jsonschema.Draft202012Validator(root)


def operation(method: str, path: str) -> dict | None:
    """The OpenAPI operation a request is (None when the document has none for it)."""
    for pattern, template in _operations():
        if pattern.match(path):
            return document()["paths"][template].get(method.lower())
    return None


def violations(method: str, path: str, request: dict | None, status: int, response: dict | None) -> list[str]:
    """What in one exchange does not conform: the operation, the request body, the response body."""
    if not os.path.exists(SPEC):
        if REQUIRED:
            return [f"{method} {path}: not checked, the REST catalog's OpenAPI document {SPEC} is missing"]
        UNCHECKED.append(f"{method} {path}")
        return []
    op = operation(method, path)
    if op is None:
        return [f"{method} {path}: no such operation in the REST catalog spec"]
    out = []
    body = op.get("requestBody")
    if request is not None and body is not None:
        schema = _resolve(body)["content"]["application/json"]["schema"]
        out += [f"{method} {path} request: {e.message} at {list(e.absolute_path)}"
                for e in _validator(schema).iter_errors(request)]
    responses = op["responses"]
    answer = next((responses[k] for k in (status, str(status), f"{status // 100}XX", "default") if k in responses),
                  None)
    if answer is None:
        out.append(f"{method} {path}: status {status} is not a response of this operation")
    elif response is not None:
        content = _resolve(answer).get("content", {}).get("application/json")
        if content is not None:
            schema = content["schema"]
            if status >= 400 and schema.get("$ref") == _ERROR_MODEL:
                # (the view routes' errors name the bare ErrorModel, where the document's own examples for them,
                # every other route and its "JSON wrapper for all error responses (non-2xx)" have it wrapped, as
                # Iceberg Java's servers send it: the document's slip, read as the wrapper)
                schema = {"$ref": "#/components/schemas/IcebergErrorResponse"}
            out += [f"{method} {path} response {status}: {e.message} at {list(e.absolute_path)}"
                    for e in _validator(schema).iter_errors(response)]
    return out
