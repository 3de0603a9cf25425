"""The Iceberg REST catalog client (``../shared/spec/iceberg-rest-catalog-open-api.yaml``).

The server keeps the tables: it writes each table's metadata files and swaps the current one atomically. A
commit sends the updates a change states and the requirements it states of the version it was built on
(:class:`~sparkberg.commit.pending.PendingCommit`, as Iceberg Java's ``UpdateTableRequest``); the server answers
with the new metadata. A 409 is a lost race
(:class:`~sparkberg.errors.CommitFailedException`: the table refreshes and retries per ``commit.retry.*``); a
5xx or a lost connection after the request went out leaves the outcome unknown
(:class:`~sparkberg.errors.CommitStateUnknownException`: the writer's files are kept).

Configuration is Iceberg's (the keys of ``spark.sql.catalog.<name>.*``): ``uri``, ``warehouse`` (sent to the
config endpoint, which answers with the defaults and overrides, the ``prefix`` among them), ``token`` (a bearer
token), ``credential`` (``client_id:client_secret`` for OAuth2's client credentials grant at
``oauth2-server-uri``, by default ``<uri>/v1/oauth/tokens``, with ``scope``, by default ``catalog``), a subject
token to exchange (RFC 8693, under its token type's name: :class:`_Auth`), ``token-refresh-enabled`` and
``token-exchange-enabled``, and ``header.<name>`` (an HTTP header sent with every request). A table's load may vend
a ``token`` of its own, which that table's requests then carry, storage credentials (:meth:`RestCatalog.table_io`),
or ``s3.remote-signing-enabled``: the catalog then signs each of the table's S3 requests (:class:`RemoteSigner`).
"""
from __future__ import annotations

import base64
import json
import threading
import time
from typing import Any, Iterator, Sequence
from urllib.parse import quote, urlencode

import requests

from sparkberg.catalog.base import Identifier, parse_identifier, parse_namespace
from sparkberg.catalog.sigv4 import SigV4Signer, sigv4_enabled
from sparkberg.commit.pending import PendingCommit
from sparkberg.errors import (
    CommitFailedException, CommitStateUnknownException, NamespaceAlreadyExistsError, NamespaceNotEmptyError,
    NoSuchNamespaceError, NoSuchTableError, NoSuchViewError, NotAuthorizedError, NotSupportedError, RestCatalogError,
    StorageError, TableAlreadyExistsError, ValidationError, ViewAlreadyExistsError,
)
from sparkberg.io.fileio import file_io_for
from sparkberg.io.stores import expires_at_ms
from sparkberg import redact
from sparkberg.format import updates as U
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.views import ViewMetadata

NAMESPACE_SEPARATOR = "\x1f"  # joins a namespace's levels in a URL path (the spec's default)
DEFAULT_SCOPE = "catalog"
TIMEOUT_S = 60.0
# a token is fetched again this long before the server said it expires
TOKEN_REFRESH_MARGIN_S = 60.0
_UNKNOWN_STATES = (500, 502, 503, 504)


def update_json(u: U.TableUpdate, format_version: int) -> dict:
    """A table update as the REST protocol's ``TableUpdate``."""
    if isinstance(u, U.AssignUUID):
        return {"action": "assign-uuid", "uuid": u.uuid}
    if isinstance(u, U.UpgradeFormatVersion):
        return {"action": "upgrade-format-version", "format-version": u.format_version}
    if isinstance(u, U.AddSchema):
        out = {"action": "add-schema", "schema": u.schema.to_json()}
        if u.last_column_id is not None:
            out["last-column-id"] = u.last_column_id
        return out
    if isinstance(u, U.SetCurrentSchema):
        return {"action": "set-current-schema", "schema-id": u.schema_id}
    if isinstance(u, U.AddPartitionSpec):
        return {"action": "add-spec", "spec": u.spec.to_json(format_version)}
    if isinstance(u, U.SetDefaultSpec):
        return {"action": "set-default-spec", "spec-id": u.spec_id}
    if isinstance(u, U.AddSortOrder):
        return {"action": "add-sort-order", "sort-order": u.sort_order.to_json()}
    if isinstance(u, U.SetDefaultSortOrder):
        return {"action": "set-default-sort-order", "sort-order-id": u.sort_order_id}
    if isinstance(u, U.AddSnapshot):
        return {"action": "add-snapshot", "snapshot": u.snapshot.to_json()}
    if isinstance(u, U.SetSnapshotRef):
        out = {"action": "set-snapshot-ref", "ref-name": u.ref_name, "snapshot-id": u.snapshot_id, "type": u.type}
        for key, value in (("min-snapshots-to-keep", u.min_snapshots_to_keep),
                           ("max-snapshot-age-ms", u.max_snapshot_age_ms), ("max-ref-age-ms", u.max_ref_age_ms)):
            if value is not None:
                out[key] = value
        return out
    if isinstance(u, U.RemoveSnapshots):
        return {"action": "remove-snapshots", "snapshot-ids": list(u.snapshot_ids)}
    if isinstance(u, U.RemoveSnapshotRef):
        return {"action": "remove-snapshot-ref", "ref-name": u.ref_name}
    if isinstance(u, U.SetProperties):
        return {"action": "set-properties", "updates": dict(u.updates)}
    if isinstance(u, U.RemoveProperties):
        return {"action": "remove-properties", "removals": list(u.removals)}
    if isinstance(u, U.SetLocation):
        return {"action": "set-location", "location": u.location}
    if isinstance(u, U.SetStatistics):
        return {"action": "set-statistics", "snapshot-id": u.statistics.snapshot_id,
                "statistics": u.statistics.to_json()}
    if isinstance(u, U.RemoveStatistics):
        return {"action": "remove-statistics", "snapshot-id": u.snapshot_id}
    if isinstance(u, U.SetPartitionStatistics):
        return {"action": "set-partition-statistics", "partition-statistics": u.partition_statistics.to_json()}
    if isinstance(u, U.RemovePartitionStatistics):
        return {"action": "remove-partition-statistics", "snapshot-id": u.snapshot_id}
    raise ValidationError(f"no REST form for the table update {u!r}")


def requirement_json(r: U.TableRequirement) -> dict:
    """A commit requirement as the REST protocol's ``TableRequirement``."""
    if isinstance(r, U.AssertTableUUID):
        return {"type": "assert-table-uuid", "uuid": r.uuid}
    if isinstance(r, U.AssertRefSnapshotId):
        return {"type": "assert-ref-snapshot-id", "ref": r.ref, "snapshot-id": r.snapshot_id}
    if isinstance(r, U.AssertCurrentSchemaId):
        return {"type": "assert-current-schema-id", "current-schema-id": r.schema_id}
    if isinstance(r, U.AssertLastAssignedFieldId):
        return {"type": "assert-last-assigned-field-id", "last-assigned-field-id": r.last_assigned_field_id}
    if isinstance(r, U.AssertLastAssignedPartitionId):
        return {"type": "assert-last-assigned-partition-id",
                "last-assigned-partition-id": r.last_assigned_partition_id}
    if isinstance(r, U.AssertDefaultSpecId):
        return {"type": "assert-default-spec-id", "default-spec-id": r.spec_id}
    if isinstance(r, U.AssertDefaultSortOrderId):
        return {"type": "assert-default-sort-order-id", "default-sort-order-id": r.sort_order_id}
    raise ValidationError(f"no REST form for the commit requirement {r!r}")


# the subject token types a catalog's properties may hold for an exchange, in Iceberg Java's order of preference
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
TOKEN_TYPES = ("urn:ietf:params:oauth:token-type:id_token", ACCESS_TOKEN_TYPE, "urn:ietf:params:oauth:token-type:jwt",
               "urn:ietf:params:oauth:token-type:saml2", "urn:ietf:params:oauth:token-type:saml1")
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


def _jwt_expiry(token: str) -> float | None:
    """When a JWT access token expires (its ``exp`` claim, epoch seconds); None for a token that is no JWT or
    states no expiry."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        return float(claims["exp"]) if isinstance(claims, dict) and "exp" in claims else None
    except (ValueError, TypeError):
        return None


def _true(properties: dict[str, str], key: str) -> bool:
    return str(properties.get(key, "true")).lower() != "false"


class _Auth:
    """The ``Authorization`` header of a catalog (or of one table, whose load vends a ``token``), as the REST
    spec's OAuth2 section and Iceberg Java's client have it:

    - ``token``: a bearer token, used as given;
    - ``credential`` (``client_id:client_secret``): OAuth2's client credentials grant at ``oauth2-server-uri``;
    - a subject token under its RFC 8693 type (``urn:ietf:params:oauth:token-type:id_token`` and the others of
      :data:`TOKEN_TYPES`): exchanged for an access token (``token``, when given too, acts as the actor).

    A token whose expiry is known (the token endpoint's ``expires_in``, or a JWT's ``exp``) is renewed before it
    expires: exchanged for a fresh one (``token-exchange-enabled``), else (or when the exchange is refused) fetched
    again from the credential or the subject token; ``token-refresh-enabled=false`` turns renewal off. A 401 fetches
    a new token once."""

    def __init__(self, session: requests.Session, uri: str, properties: dict[str, str]):
        self._session = session
        self._token = properties.get("token")
        self._credential = properties.get("credential")
        self._subject = next(((properties[t], t) for t in TOKEN_TYPES if properties.get(t)), None)
        # (the token given beside a subject token acts in its exchanges; the token those give is the catalog's)
        self._actor = self._token if self._subject else None
        if self._subject:
            self._token = None
        self._server = properties.get("oauth2-server-uri") or f"{uri}/v1/oauth/tokens"
        self._scope = properties.get("scope", DEFAULT_SCOPE)
        self._refresh = _true(properties, "token-refresh-enabled")
        self._exchange = _true(properties, "token-exchange-enabled")
        self._expires: float | None = None
        if self._token is not None:
            self._expires_at(_jwt_expiry(self._token))
        self._lock = threading.Lock()

    def _expires_at(self, epoch_s: float | None) -> None:
        self._expires = None if epoch_s is None else \
            time.monotonic() + max(0.0, epoch_s - time.time() - TOKEN_REFRESH_MARGIN_S)

    def for_token(self, token: str) -> "_Auth":
        """The auth of a table whose load vended ``token``: that token, renewed as this catalog's is."""
        out = object.__new__(_Auth)
        out.__dict__.update(self.__dict__)
        out._token, out._credential, out._subject, out._actor = token, None, None, None
        out._expires_at(_jwt_expiry(token))
        out._lock = threading.Lock()
        return out

    def header(self) -> dict[str, str]:
        with self._lock:
            if self._token is None and (self._credential or self._subject):
                self._fetch()
            elif self._refresh and self._expires is not None and time.monotonic() >= self._expires:
                self._renew()
        return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    def renew(self) -> bool:
        """Fetch a new token after a 401 (False when there is nothing to fetch one with)."""
        if not (self._credential or self._subject):
            return False
        with self._lock:
            self._fetch()
        return True

    def _renew(self) -> None:
        """A token about to expire: exchanged for a fresh one, else fetched again; kept (the server will say when
        it no longer takes it) when neither can be had."""
        if self._exchange:
            try:
                self._post({"grant_type": TOKEN_EXCHANGE, "subject_token": self._token,
                            "subject_token_type": ACCESS_TOKEN_TYPE, "scope": self._scope},
                           {"Authorization": f"Bearer {self._token}"})
                return
            except (NotAuthorizedError, RestCatalogError):
                if not (self._credential or self._subject):
                    raise
        if self._credential or self._subject:
            self._fetch()
        else:
            self._expires = None

    def _fetch(self) -> None:
        if self._credential:
            client_id, _, secret = self._credential.rpartition(":")
            form = {"grant_type": "client_credentials", "client_secret": secret, "scope": self._scope}
            if client_id:
                form["client_id"] = client_id
            self._post(form, {})
            return
        subject, kind = self._subject
        form = {"grant_type": TOKEN_EXCHANGE, "subject_token": subject, "subject_token_type": kind,
                "scope": self._scope}
        if self._actor:
            form.update(actor_token=self._actor, actor_token_type=ACCESS_TOKEN_TYPE)
        self._post(form, {"Authorization": f"Bearer {self._actor}"} if self._actor else {})

    def _post(self, form: dict[str, str], headers: dict[str, str]) -> None:
        try:
            r = self._session.post(self._server, data=form, headers=headers, timeout=TIMEOUT_S)
        except requests.RequestException as e:
            raise RestCatalogError(redact.text(f"cannot reach the OAuth2 token endpoint {self._server}: {e}")) \
                from None
        if r.status_code != 200:
            what = "the token exchange" if form["grant_type"] == TOKEN_EXCHANGE else "the credential"
            raise NotAuthorizedError(redact.text(f"OAuth2 token endpoint {self._server} refused {what} "
                                                 f"(HTTP {r.status_code}): {_message(r)}"))
        body = r.json()
        self._token = body["access_token"]
        expires_in = body.get("expires_in")
        self._expires_at(time.time() + float(expires_in) if expires_in is not None else _jwt_expiry(self._token))


def _message(r: requests.Response) -> str:
    """The server's error message (the spec's ``ErrorModel``, or OAuth2's ``error`` and
    ``error_description``), else the body's start; with any credential it quotes masked (a server may echo the
    request's ``Authorization`` header or a signed URL)."""
    try:
        body = r.json()
        error = body.get("error") or {}
        if isinstance(error, str):
            return redact.text(f"{error}: {body.get('error_description', '')}".strip(": "))
        return redact.text(f"{error.get('type', '')}: {error.get('message', '')}".strip(": "))
    except (ValueError, AttributeError):
        return redact.text(r.text[:200])


def _error_type(r: requests.Response) -> str:
    try:
        return (r.json().get("error") or {}).get("type") or ""
    except (ValueError, AttributeError):
        return ""


class RestCatalog:
    """A catalog served over the Iceberg REST protocol (see the module docstring)."""

    def __init__(self, uri: str, name: str, warehouse: str | None = None, properties: dict[str, str] | None = None):
        # (requests go to _base, which may hold a password in its userinfo; uri is what messages show)
        self._base = uri.rstrip("/")
        self.uri = redact.uri(self._base)
        self.name = name
        props = dict(properties or {})
        self._session = requests.Session()
        # (vended credentials asked for unless told otherwise, as PyIceberg asks: a server that vends none ignores it)
        self._headers = {"Content-Type": "application/json", "X-Client-Version": "sparkberg",
                         "X-Iceberg-Access-Delegation": "vended-credentials",
                         **{k[len("header."):]: v for k, v in props.items() if k.startswith("header.")}}
        self._vended: dict[Identifier, dict[str, str]] = {}
        self._auth = _Auth(self._session, self._base, props)
        # (a table whose load vended a token: that table's further requests carry it, as the spec's config says)
        self._table_auth: dict[Identifier, _Auth] = {}
        self._signing: dict[Identifier, dict] = {}  # (each table's remote-signing-config)
        self._views: dict[Identifier, ViewMetadata] = {}  # (each view's last loaded metadata: what a commit changes)
        self._signer = SigV4Signer(props) if sigv4_enabled(props) else None
        self._endpoints: set[str] = set()
        self._prefix = "v1/"
        config = self._request("GET", "v1/config", params={"warehouse": warehouse} if warehouse else None)
        merged = {**(config.get("defaults") or {}), **props, **(config.get("overrides") or {})}
        prefix = merged.get("prefix")
        self._prefix = f"v1/{prefix.strip('/')}/" if prefix else "v1/"
        self.warehouse = merged.get("warehouse") or warehouse or ""
        self.properties = merged
        # (the routes the server says it serves: no other is called; a server that lists none serves the spec's
        # original ones)
        self._endpoints = set(config.get("endpoints") or [])
        # (the FileIO of the merged configuration: the warehouse may be a name the server resolves, not a location)
        self.io = file_io_for(None, merged)

    def __repr__(self) -> str:
        return f"RestCatalog({self.name!r}, {self.uri})"

    # --- HTTP -----------------------------------------------------------------------------------------
    def _request(self, method: str, path: str, body: dict | None = None, params: dict | None = None,
                 errors: dict[int, Any] | None = None, commit: bool = False, auth: _Auth | None = None) -> dict:
        """One call; the JSON answer ({} for none). ``errors``: an exception class (or a function of the
        server's error type giving one) per status code, before the general mapping; ``auth``: a table's own
        (else the catalog's)."""
        auth = auth or self._auth
        self._check_offered(method, path)
        # (every reserved character encoded, "/" too, as SigV4's canonical query string has them)
        query = f"?{urlencode(params, quote_via=lambda v, *_: quote(v, safe='-_.~'))}" if params else ""
        url = f"{self._base}/{path}{query}"
        shown = f"{self.uri}/{path}"
        data = None if body is None else json.dumps(body).encode()
        for attempt in (0, 1):
            headers = {**self._headers, **auth.header()}
            if self._signer is not None:
                headers = self._signer.sign(method, url, headers, data)
            try:
                r = self._session.request(method, url, data=data, headers=headers, timeout=TIMEOUT_S)
            except requests.ConnectionError as e:
                if commit and not _never_sent(e):
                    raise CommitStateUnknownException(redact.text(
                        f"commit to {shown}: the connection was lost ({e}); it may or may not have landed")) from None
                raise RestCatalogError(redact.text(f"cannot reach the REST catalog at {self.uri}: {e}")) from None
            except requests.Timeout as e:
                if commit:
                    raise CommitStateUnknownException(redact.text(
                        f"commit to {shown} timed out ({e}); it may or may not have landed")) from None
                raise RestCatalogError(redact.text(f"REST catalog {self.uri} did not answer {method} {path}: {e}")) \
                    from None
            if r.status_code == 401 and attempt == 0 and auth.renew():
                continue
            break
        if r.status_code in (200, 201, 202, 204):
            try:
                return r.json() if r.content else {}
            except ValueError:
                raise RestCatalogError(f"REST catalog {self.uri}: {method} {path} -> HTTP {r.status_code} with a "
                                       f"body that is not JSON: {redact.text(r.text[:200])!r}") from None
        raise self._error(r, method, path, errors or {}, commit)

    def _check_offered(self, method: str, path: str) -> None:
        """A route the server's config does not list among its ``endpoints`` (when it lists any) is not called:
        a named error says which."""
        if not self._endpoints or not path.startswith(self._prefix) or path == "v1/config":
            return
        # (the spec's endpoint names always hold {prefix}, whether the server has one or not)
        route = f"{method} /v1/{{prefix}}/{_route(path[len(self._prefix):])}"
        if route not in self._endpoints:
            raise NotSupportedError(f"REST catalog {self.uri} does not offer {route} (its config lists the "
                                    f"endpoints it serves)")

    def _error(self, r: requests.Response, method: str, path: str, errors: dict[int, Any],
               commit: bool) -> Exception:
        what = f"REST catalog {self.uri}: {method} {path} -> HTTP {r.status_code}: {_message(r)}"
        mapped = errors.get(r.status_code)
        if mapped is not None:
            cls = mapped if isinstance(mapped, type) else mapped(_error_type(r))
            return cls(what)
        if commit and r.status_code in _UNKNOWN_STATES:
            return CommitStateUnknownException(f"{what} (the commit may or may not have landed)")
        if r.status_code == 404:
            kind = _error_type(r)
            return NoSuchNamespaceError(what) if "Namespace" in kind else NoSuchTableError(what)
        if r.status_code in (401, 403, 419):
            return NotAuthorizedError(what)
        if r.status_code == 400:
            return ValidationError(what)
        return RestCatalogError(what)

    def _paged(self, path: str, key: str, params: dict | None = None) -> Iterator[Any]:
        """The items under ``key`` of a listing, page after page (``next-page-token``)."""
        params = dict(params or {})
        while True:
            body = self._request("GET", path, params=params,
                                 errors={404: NoSuchNamespaceError})
            yield from body.get(key) or []
            token = body.get("next-page-token")
            if not token:
                return
            params["pageToken"] = token

    def _ns(self, namespace: tuple[str, ...]) -> str:
        return f"{self._prefix}namespaces/{quote(NAMESPACE_SEPARATOR.join(namespace), safe='')}"

    def _table(self, ident: Identifier) -> str:
        return f"{self._ns(ident.namespace)}/tables/{quote(ident.name, safe='')}"

    # --- namespaces -----------------------------------------------------------------------------------
    def create_namespace(self, namespace, properties: dict[str, str] | None = None) -> None:
        ns = parse_namespace(namespace)
        self._request("POST", f"{self._prefix}namespaces",
                      {"namespace": list(ns), "properties": {k: str(v) for k, v in (properties or {}).items()}},
                      errors={409: NamespaceAlreadyExistsError})

    def namespace_exists(self, namespace) -> bool:
        try:
            self.load_namespace_properties(namespace)
            return True
        except NoSuchNamespaceError:
            return False

    def list_namespaces(self, parent=()) -> list[tuple[str, ...]]:
        prefix = parse_namespace(parent) if parent else ()
        params = {"parent": NAMESPACE_SEPARATOR.join(prefix)} if prefix else None
        return sorted(tuple(ns) for ns in self._paged(f"{self._prefix}namespaces", "namespaces", params))

    def load_namespace_properties(self, namespace) -> dict[str, str]:
        ns = parse_namespace(namespace)
        body = self._request("GET", self._ns(ns), errors={404: NoSuchNamespaceError})
        return dict(body.get("properties") or {})

    def update_namespace_properties(self, namespace, updates: dict[str, str] | None = None,
                                    removals: Sequence[str] = ()) -> None:
        """Set ``updates`` and remove ``removals`` (the server applies both at once)."""
        ns = parse_namespace(namespace)
        overlap = set(updates or {}) & set(removals)
        if overlap:
            raise ValidationError(f"properties both set and removed: {sorted(overlap)}")
        self._request("POST", f"{self._ns(ns)}/properties",
                      {"updates": {k: str(v) for k, v in (updates or {}).items()}, "removals": list(removals)},
                      errors={404: NoSuchNamespaceError})

    def drop_namespace(self, namespace) -> None:
        ns = parse_namespace(namespace)
        self._request("DELETE", self._ns(ns), errors={404: NoSuchNamespaceError, 409: NamespaceNotEmptyError})

    # --- tables ---------------------------------------------------------------------------------------
    def list_tables(self, namespace) -> list[Identifier]:
        ns = parse_namespace(namespace)
        return sorted((Identifier(tuple(i["namespace"]), i["name"])
                       for i in self._paged(f"{self._ns(ns)}/tables", "identifiers")), key=str)

    def tables(self) -> Iterator[Identifier]:
        def walk(parent: tuple[str, ...]) -> Iterator[Identifier]:
            for ns in self.list_namespaces(parent):
                yield from self.list_tables(ns)
                yield from walk(ns)
        yield from walk(())

    def table_exists(self, identifier) -> bool:
        try:
            self.load(identifier)
            return True
        except NoSuchTableError:
            return False

    def default_table_location(self, identifier) -> str:
        """Where a new table goes unless told: the server decides (this is the warehouse's usual place, the
        metadata's until the server answers)."""
        ident = parse_identifier(identifier)
        return "/".join([self.warehouse.rstrip("/"), *ident.namespace, ident.name])

    def _loaded(self, ident: Identifier, body: dict) -> tuple[Identifier, str, TableMetadata]:
        location = body.get("metadata-location")
        metadata = TableMetadata.from_json(body["metadata"], location or str(ident))
        self._vended[ident] = vended_properties(body, metadata.location)
        self._signing[ident] = dict(body.get("remote-signing-config") or {})
        token = (body.get("config") or {}).get("token")
        if token:
            self._table_auth[ident] = self._auth.for_token(str(token))
        else:
            self._table_auth.pop(ident, None)
        return ident, location, metadata

    def table_io(self, identifier: Identifier, metadata: TableMetadata):
        """The table's FileIO: the catalog's configuration, the table's properties over it, and what the server
        vended with the table's last load (``config``, the ``storage-credentials`` of the longest prefix of the
        table's location) over those."""
        ident = parse_identifier(identifier)
        vended = self._vended.get(ident, {})
        io = self.io.with_properties({**metadata.properties, **vended})
        auth = self._table_auth.get(ident, self._auth)
        if str(io.properties.get("s3.remote-signing-enabled", "false")).lower() == "true":
            io = io.with_signer(self._remote_signer(ident, vended, auth))
        if expires_at_ms(vended) is None or \
                str(self.properties.get("client.refresh-credentials-enabled", "true")).lower() == "false":
            return io
        # credentials that expire are fetched again before they do: from the credentials endpoint where the server
        # lists it (or vends its path, as Iceberg Java's client reads it), else by loading the table again
        path = vended.get("client.refresh-credentials-endpoint")
        if path is None:
            listed = CREDENTIALS_ENDPOINT in self._endpoints
            path = f"{self._table(ident)}/credentials" if listed else self._table(ident)
        shown = f"{self.uri}/{path.lstrip('/')}"
        url = path if "://" in path else f"{self._base}/{path.lstrip('/')}"
        return io.with_renewal(VendedCredentials(url, shown, {**self._headers, **auth.header()},
                                                 metadata.location, self._signer))

    def _remote_signer(self, ident: Identifier, vended: dict[str, str], auth: _Auth) -> "RemoteSigner":
        """The signer of a table's S3 requests: the spec's per-table ``sign`` route, or the deprecated
        ``signer.endpoint`` (against ``signer.uri``, by default the catalog's) where the table's config names one;
        with the static ``properties`` and ``headers`` of its ``remote-signing-config``."""
        config = self._signing.get(ident, {})
        endpoint = vended.get("signer.endpoint")
        if endpoint is None:
            path = f"{self._table(ident)}/sign"
            self._check_offered("POST", path)
            url = f"{self._base}/{path}"
        elif "://" in endpoint:
            url = endpoint
        else:
            url = f"{vended.get('signer.uri', self._base).rstrip('/')}/{endpoint.lstrip('/')}"
        headers = {**self._headers, **auth.header(),
                   **{k: ",".join(v) if isinstance(v, list) else str(v)
                      for k, v in (config.get("headers") or {}).items()}}
        return RemoteSigner(url, redact.uri(url), headers, dict(config.get("properties") or {}), self._signer)

    def load(self, identifier) -> tuple[Identifier, str, TableMetadata]:
        """(identifier, metadata location, metadata) of the table's current version."""
        ident = parse_identifier(identifier)
        return self._loaded(ident, self._request("GET", self._table(ident), errors={404: _table_or_namespace},
                                                 auth=self._table_auth.get(ident)))

    def create(self, identifier, metadata: TableMetadata) -> tuple[Identifier, str, TableMetadata]:
        """Create the table ``metadata`` describes (schema, spec, sort order, properties, format version); the
        server assigns its ids, and its location unless ``metadata`` has one other than
        :meth:`default_table_location`."""
        ident = parse_identifier(identifier)
        location = metadata.location if metadata.location != self.default_table_location(ident) else None
        body: dict[str, Any] = {
            "name": ident.name, "schema": metadata.current_schema.to_json(),
            "partition-spec": metadata.default_spec.to_json(metadata.format_version),
            "write-order": metadata.sort_order().to_json(), "stage-create": False,
            "properties": {**metadata.properties, "format-version": str(metadata.format_version)}}
        if location:
            body["location"] = location
        out = self._request("POST", f"{self._ns(ident.namespace)}/tables", body,
                            errors={409: TableAlreadyExistsError, 404: NoSuchNamespaceError})
        return self._loaded(ident, out)

    def register(self, identifier, metadata_location: str) -> tuple[Identifier, str, TableMetadata]:
        """Add a table whose metadata file exists already (written by any engine)."""
        ident = parse_identifier(identifier)
        out = self._request("POST", f"{self._ns(ident.namespace)}/register",
                            {"name": ident.name, "metadata-location": metadata_location},
                            errors={409: TableAlreadyExistsError, 404: NoSuchNamespaceError})
        return self._loaded(ident, out)

    def commit(self, identifier, base_location: str, pending: PendingCommit) -> tuple[str, TableMetadata]:
        """Send ``pending``'s updates with the requirements it states; returns the new metadata location and
        metadata as the server wrote them."""
        ident = parse_identifier(identifier)
        version = pending.metadata.format_version
        body = {"identifier": {"namespace": list(ident.namespace), "name": ident.name},
                "requirements": [requirement_json(r) for r in pending.requirements],
                "updates": [update_json(u, version) for u in pending.updates]}
        out = self._request("POST", self._table(ident), body,
                            errors={409: CommitFailedException, 404: _table_or_namespace}, commit=True,
                            auth=self._table_auth.get(ident))
        _, location, metadata = self._loaded(ident, out)
        return location, metadata

    def rename(self, source, target) -> None:
        """Rename a table (its files stay where they are)."""
        src, dst = parse_identifier(source), parse_identifier(target)
        self._request("POST", f"{self._prefix}tables/rename",
                      {"source": {"namespace": list(src.namespace), "name": src.name},
                       "destination": {"namespace": list(dst.namespace), "name": dst.name}},
                      errors={409: TableAlreadyExistsError, 404: _table_or_namespace})

    def drop(self, identifier, purge: bool = False) -> None:
        """Drop the table; with ``purge`` the server also deletes its files."""
        ident = parse_identifier(identifier)
        self._request("DELETE", self._table(ident), params={"purgeRequested": "true" if purge else "false"},
                      errors={404: _table_or_namespace}, auth=self._table_auth.pop(ident, None))


    # --- views ----------------------------------------------------------------------------------------
    def _view(self, ident: Identifier) -> str:
        return f"{self._ns(ident.namespace)}/views/{quote(ident.name, safe='')}"

    def list_views(self, namespace) -> list[Identifier]:
        ns = parse_namespace(namespace)
        return sorted((Identifier(tuple(i["namespace"]), i["name"])
                       for i in self._paged(f"{self._ns(ns)}/views", "identifiers")), key=str)

    def view_exists(self, identifier) -> bool:
        try:
            self.load_view(identifier)
            return True
        except NoSuchViewError:
            return False

    def _loaded_view(self, ident: Identifier, body: dict) -> tuple[Identifier, str, ViewMetadata]:
        location = body["metadata-location"]
        metadata = ViewMetadata.from_json(body["metadata"], location)
        self._views[ident] = metadata
        return ident, location, metadata

    def load_view(self, identifier) -> tuple[Identifier, str, ViewMetadata]:
        """(identifier, metadata location, metadata) of the view's current version."""
        ident = parse_identifier(identifier)
        return self._loaded_view(ident, self._request("GET", self._view(ident),
                                                      errors={404: _view_or_namespace}))

    def create_view(self, identifier, metadata: ViewMetadata) -> tuple[Identifier, str, ViewMetadata]:
        """Create the view ``metadata`` describes (its first version, schema and properties; the server assigns
        the ids and writes the file)."""
        ident = parse_identifier(identifier)
        version = metadata.current_version
        body = {"name": ident.name, "location": metadata.location, "schema": metadata.schema().to_json(),
                "view-version": version.to_json(), "properties": dict(metadata.properties)}
        out = self._request("POST", f"{self._ns(ident.namespace)}/views", body,
                            errors={409: ViewAlreadyExistsError, 404: NoSuchNamespaceError})
        return self._loaded_view(ident, out)

    def commit_view(self, identifier, base_location: str, metadata: ViewMetadata,
                    base: ViewMetadata | None = None) -> tuple[str, ViewMetadata]:
        """Send what ``metadata`` changes of ``base`` (the version it was made from; by default the view's last
        loaded one): its properties, schemas, versions and the current one, with the view's uuid as the
        requirement, which is all the spec's view commit requires (the server applies the updates to the view as
        it is then); returns the new location and metadata as the server wrote them."""
        ident = parse_identifier(identifier)
        base = base or self._views.get(ident)
        if base is None:
            base = self.load_view(ident)[2]
        updates: list[dict] = []
        removed = sorted(set(base.properties) - set(metadata.properties))
        changed = {k: v for k, v in metadata.properties.items() if base.properties.get(k) != v}
        if changed:
            updates.append({"action": "set-properties", "updates": changed})
        if removed:
            updates.append({"action": "remove-properties", "removals": removed})
        known = {s.schema_id for s in base.schemas}
        added_schema = None
        for schema in metadata.schemas:
            if schema.schema_id not in known:
                updates.append({"action": "add-schema", "schema": schema.to_json()})
                added_schema = schema.schema_id
        known_versions = {v.version_id for v in base.versions}
        added_version = None
        for version in metadata.versions:
            if version.version_id not in known_versions:
                out = version.to_json()
                if version.schema_id == added_schema:
                    out["schema-id"] = -1  # (the schema this commit adds, whatever id the server gives it)
                updates.append({"action": "add-view-version", "view-version": out})
                added_version = version.version_id
        if metadata.current_version_id != base.current_version_id:
            updates.append({"action": "set-current-view-version",
                            "view-version-id": -1 if metadata.current_version_id == added_version
                            else metadata.current_version_id})
        body = {"identifier": {"namespace": list(ident.namespace), "name": ident.name},
                "requirements": [{"type": "assert-view-uuid", "uuid": base.view_uuid}], "updates": updates}
        out = self._request("POST", self._view(ident), body,
                            errors={409: CommitFailedException, 404: _view_or_namespace}, commit=True)
        _, location, written = self._loaded_view(ident, out)
        return location, written

    def rename_view(self, source, target) -> None:
        """Rename a view."""
        src, dst = parse_identifier(source), parse_identifier(target)
        self._request("POST", f"{self._prefix}views/rename",
                      {"source": {"namespace": list(src.namespace), "name": src.name},
                       "destination": {"namespace": list(dst.namespace), "name": dst.name}},
                      errors={409: ViewAlreadyExistsError, 404: _view_or_namespace})
        self._views.pop(src, None)

    def drop_view(self, identifier) -> None:
        """Drop the view."""
        ident = parse_identifier(identifier)
        self._request("DELETE", self._view(ident), errors={404: _view_or_namespace})
        self._views.pop(ident, None)


CREDENTIALS_ENDPOINT = "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials"


def _route(path: str) -> str:
    """A request path below the prefix as the spec's route template: ``namespaces/a/tables/t`` is
    ``namespaces/{namespace}/tables/{table}``."""
    parts = path.strip("/").split("/")
    names = {"namespaces": "{namespace}", "tables": "{table}", "views": "{view}"}
    out = []
    for k, part in enumerate(parts):
        if k > 0 and out[k - 1] in names and part not in ("rename",):
            out.append(names[parts[k - 1]])
        else:
            out.append(part)
    return "/".join(out)


class VendedCredentials:
    """Fetches a table's vended storage credentials again (the REST spec's ``loadCredentials``, or the table's
    load), for its FileIO when they are about to expire. Picklable: it travels with the FileIO to the executors,
    with the catalog's headers of when the table was loaded; its ``repr`` names the endpoint, never a header."""

    def __init__(self, url: str, shown: str, headers: dict[str, str], location: str,
                 signer: SigV4Signer | None = None):
        self._url, self._shown, self._headers, self._location = url, shown, headers, location
        self._signer = signer

    def __repr__(self) -> str:
        return f"VendedCredentials({self._shown})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VendedCredentials) and (other._url, other._location) == (self._url, self._location)

    def __hash__(self) -> int:
        return hash((self._url, self._location))

    def __call__(self) -> dict[str, str]:
        """The FileIO properties the server vends for the table now."""
        headers = self._headers if self._signer is None else self._signer.sign("GET", self._url, self._headers, None)
        try:
            r = requests.get(self._url, headers=headers, timeout=TIMEOUT_S)
        except requests.RequestException as e:
            raise StorageError(redact.text(f"cannot renew the credentials of {self._location} at {self._shown}: "
                                           f"{e}")) from None
        if r.status_code != 200:
            raise StorageError(redact.text(f"cannot renew the credentials of {self._location}: {self._shown} -> "
                                           f"HTTP {r.status_code}: {_message(r)}"))
        return vended_properties(r.json(), self._location)


class RemoteSigner:
    """Has the catalog sign a table's S3 requests (the REST spec's ``RemoteSignRequest`` to the table's ``sign``
    route): ``(method, url, headers, body, region) -> (url, headers)`` to send. Picklable: it travels with the FileIO to
    the executors, with the catalog's headers of when the table was loaded; its ``repr`` names the endpoint,
    never a header."""

    def __init__(self, url: str, shown: str, headers: dict[str, str], properties: dict[str, str],
                 signer: SigV4Signer | None = None):
        self._url, self._shown, self._headers, self._properties = url, shown, headers, properties
        self._signer = signer

    def __repr__(self) -> str:
        return f"RemoteSigner({self._shown})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RemoteSigner) and other._url == self._url

    def __hash__(self) -> int:
        return hash(self._url)

    def __call__(self, method: str, url: str, headers: dict[str, str], body: bytes | None, region: str
                 ) -> tuple[str, dict[str, str]]:
        request = {"region": region, "uri": url, "method": method,
                   "headers": {k: [v] for k, v in headers.items()}, "provider": "s3"}
        if self._properties:
            request["properties"] = self._properties
        data = json.dumps(request).encode()
        sent = {**self._headers, "Content-Type": "application/json"}
        if self._signer is not None:
            sent = self._signer.sign("POST", self._url, sent, data)
        try:
            r = requests.post(self._url, data=data, headers=sent, timeout=TIMEOUT_S)
        except requests.RequestException as e:
            raise StorageError(redact.text(f"cannot reach the S3 request signer {self._shown}: {e}")) from None
        if r.status_code != 200:
            raise StorageError(redact.text(f"the S3 request signer {self._shown} refused to sign {method} "
                                           f"{redact.uri(url.split('?')[0])}: HTTP {r.status_code}: {_message(r)}"))
        out = r.json()
        return out["uri"], {k: ",".join(v) if isinstance(v, list) else str(v)
                            for k, v in (out.get("headers") or {}).items()}


def vended_properties(body: dict, table_location: str) -> dict[str, str]:
    """What a ``LoadTableResult`` vends for its table's FileIO: its ``config``, and over it the ``config`` of the
    ``storage-credentials`` entry whose ``prefix`` is the longest one the table's location starts with."""
    out = {str(k): str(v) for k, v in (body.get("config") or {}).items()}
    credentials = [c for c in body.get("storage-credentials") or []
                   if isinstance(c, dict) and table_location.startswith(str(c.get("prefix", "")))]
    if credentials:
        best = max(credentials, key=lambda c: len(str(c.get("prefix", ""))))
        out.update({str(k): str(v) for k, v in (best.get("config") or {}).items()})
    return out


def _view_or_namespace(kind: str) -> type:
    """The exception of a 404 on a view, from the server's error type: its namespace's or its own."""
    return NoSuchNamespaceError if "Namespace" in kind else NoSuchViewError


def _table_or_namespace(kind: str) -> type:
    """The exception of a 404 on a table, from the server's error type: its namespace's or its own."""
    return NoSuchNamespaceError if "Namespace" in kind else NoSuchTableError


def _never_sent(e: requests.ConnectionError) -> bool:
    """Whether a connection error happened before the request could reach the server (connection refused)."""
    text = repr(e)
    return "NewConnectionError" in text or "Connection refused" in text or "ConnectTimeout" in text
