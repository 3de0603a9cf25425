"""Iceberg Java's own REST catalog server logic, served for the interop tests.

Every request is handled by Iceberg Java 1.10's ``org.apache.iceberg.rest.CatalogHandlers`` (in the Spark runtime
jar) over a ``JdbcCatalog``, in the JVM of the tests' Spark session: the request body is parsed and the answer
written by Java's REST object mapper (``RESTObjectMapper``, reached by reflection: it is package-private), and
Java's exceptions become the spec's error responses with the status codes Java's own ``RESTCatalogAdapter``
gives them. Only the HTTP listening is Python's (the standard library's server, on 127.0.0.1), so no Java code of
ours is compiled: what sparkberg's client talks to is Java's server behaviour, and Iceberg Java's
``RESTCatalog``, PyIceberg's ``RestCatalog`` and DuckDB talk to the same tables.
"""
from __future__ import annotations

import json
import os
import sys

from py4j.protocol import Py4JJavaError

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from restserver import http_server  # noqa: E402

# Java exception -> (status, as Java's RESTCatalogAdapter maps them)
STATUS = {
    "NoSuchNamespaceException": 404, "NoSuchTableException": 404, "NoSuchIcebergTableException": 404,
    "NoSuchViewException": 404, "AlreadyExistsException": 409, "CommitFailedException": 409,
    "NamespaceNotEmptyException": 409, "ValidationException": 400, "IllegalArgumentException": 400,
    "BadRequestException": 400, "NotAuthorizedException": 401, "ForbiddenException": 403,
    "UnsupportedOperationException": 406, "CommitStateUnknownException": 500,
}


class JavaRestServer:
    """Iceberg Java's ``CatalogHandlers`` over a ``JdbcCatalog`` (``jdbc_uri``, ``properties``) in ``spark``'s
    JVM, at :attr:`uri`."""

    def __init__(self, spark, name: str, jdbc_uri: str, warehouse: str, properties: dict[str, str] | None = None):
        jvm = spark._jvm
        self._jvm = jvm
        self._handlers = jvm.org.apache.iceberg.rest.CatalogHandlers
        props = jvm.java.util.HashMap()
        for k, v in {"uri": jdbc_uri, "warehouse": warehouse, "jdbc.schema-version": "V1",
                     **(properties or {})}.items():
            props.put(k, v)
        self.catalog = jvm.org.apache.iceberg.jdbc.JdbcCatalog()
        self.catalog.setConf(spark._jsc.hadoopConfiguration())
        self.catalog.initialize(name, props)
        loader = jvm.org.apache.iceberg.rest.RESTUtil._java_lang_class.getClassLoader()
        self._loader = loader
        mapper_class = jvm.java.lang.Class.forName("org.apache.iceberg.rest.RESTObjectMapper", True, loader)
        gateway = spark.sparkContext._gateway
        method = mapper_class.getDeclaredMethod("mapper", gateway.new_array(jvm.java.lang.Class, 0))
        method.setAccessible(True)
        self._mapper = method.invoke(None, gateway.new_array(jvm.java.lang.Object, 0))
        self.requests: list[str] = []
        self.server, self.uri = http_server(lambda method, path, query, raw, headers: self.handle(
            method, path, query, raw))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.catalog.close()

    def _parse(self, raw: str, class_name: str):
        cls = self._jvm.java.lang.Class.forName(class_name, True, self._loader)
        return self._mapper.readValue(raw, cls)

    def handle(self, method: str, path: str, query: dict, raw: bytes) -> tuple[int, bytes]:
        """One exchange: (status, JSON body)."""
        self.requests.append(f"{method} {path}")
        try:
            status, out = self.route(method, path.strip("/").split("/"), query, raw.decode())
        except Py4JJavaError as e:
            java = e.java_exception
            kind = java.getClass().getSimpleName()
            status = STATUS.get(kind, 500)
            out = json.dumps({"error": {"message": str(java.getMessage()), "type": kind, "code": status}})
        return status, out.encode()

    def _write(self, response) -> tuple[int, str]:
        return 200, self._mapper.writeValueAsString(response)

    def route(self, method: str, parts: list[str], query: dict, raw: str) -> tuple[int, str]:
        jvm, h, cat = self._jvm, self._handlers, self.catalog
        if parts[:1] == ["v1"]:
            parts = parts[1:]
        if parts == ["config"]:
            # (no endpoint list, as older servers: then Java's client calls the view routes only when told the
            # server has them)
            return 200, json.dumps({"defaults": {}, "overrides": {"view-endpoints-supported": "true"}})
        if parts == ["namespaces"]:
            if method == "POST":
                return self._write(h.createNamespace(cat, self._parse(
                    raw, "org.apache.iceberg.rest.requests.CreateNamespaceRequest")))
            parent = jvm.org.apache.iceberg.rest.RESTUtil.decodeNamespace(query["parent"][0]) \
                if query.get("parent") else jvm.org.apache.iceberg.catalog.Namespace.empty()
            return self._write(h.listNamespaces(cat, parent))
        if parts == ["transactions", "commit"]:
            request = self._parse(raw, "org.apache.iceberg.rest.requests.CommitTransactionRequest")
            for change in request.tableChanges():  # (one table at a time, as DuckDB commits one)
                h.updateTable(cat, change.identifier(), change)
            return 204, ""
        if parts == ["tables", "rename"]:
            h.renameTable(cat, self._parse(raw, "org.apache.iceberg.rest.requests.RenameTableRequest"))
            return 204, ""
        if parts == ["views", "rename"]:
            h.renameView(cat, self._parse(raw, "org.apache.iceberg.rest.requests.RenameTableRequest"))
            return 204, ""
        ns = jvm.org.apache.iceberg.rest.RESTUtil.decodeNamespace(parts[1])
        if len(parts) == 2:
            if method == "DELETE":
                h.dropNamespace(cat, ns)
                return 204, ""
            if method == "HEAD":
                h.namespaceExists(cat, ns)
                return 204, ""
            return self._write(h.loadNamespace(cat, ns))
        if parts[2:] == ["properties"]:
            return self._write(h.updateNamespaceProperties(cat, ns, self._parse(
                raw, "org.apache.iceberg.rest.requests.UpdateNamespacePropertiesRequest")))
        if parts[2:] == ["register"]:
            return self._write(h.registerTable(cat, ns, self._parse(
                raw, "org.apache.iceberg.rest.requests.RegisterTableRequest")))
        if parts[2:] == ["tables"]:
            if method == "POST":
                request = self._parse(raw, "org.apache.iceberg.rest.requests.CreateTableRequest")
                if request.stageCreate():
                    return self._write(h.stageTableCreate(cat, ns, request))
                return self._write(h.createTable(cat, ns, request))
            return self._write(h.listTables(cat, ns))
        if parts[2:] == ["views"]:
            if method == "POST":
                return self._write(h.createView(cat, ns, self._parse(
                    raw, "org.apache.iceberg.rest.requests.CreateViewRequest")))
            return self._write(h.listViews(cat, ns))
        if parts[2:3] == ["views"]:
            view = jvm.org.apache.iceberg.catalog.TableIdentifier.of(ns, jvm.org.apache.iceberg.rest.RESTUtil
                                                                     .decodeString(parts[3]))
            if method == "POST":
                return self._write(h.updateView(cat, view, self._parse(
                    raw, "org.apache.iceberg.rest.requests.UpdateTableRequest")))
            if method == "DELETE":
                h.dropView(cat, view)
                return 204, ""
            if method == "HEAD":
                h.viewExists(cat, view)
                return 204, ""
            return self._write(h.loadView(cat, view))
        if parts[4:] == ["metrics"]:
            return 204, ""  # (scan and commit reports: not kept)
        ident = jvm.org.apache.iceberg.catalog.TableIdentifier.of(ns, jvm.org.apache.iceberg.rest.RESTUtil
                                                                  .decodeString(parts[3]))
        if method == "POST":
            return self._write(h.updateTable(cat, ident, self._parse(
                raw, "org.apache.iceberg.rest.requests.UpdateTableRequest")))
        if method == "DELETE":
            if (query.get("purgeRequested") or ["false"])[0] == "true":
                h.purgeTable(cat, ident)
            else:
                h.dropTable(cat, ident)
            return 204, ""
        if method == "HEAD":
            h.tableExists(cat, ident)
            return 204, ""
        return self._write(h.loadTable(cat, ident))
