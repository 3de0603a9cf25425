"""Builds the HTTP client jars Iceberg Java's ``RESTCatalog`` needs, which the Iceberg runtime jar on PyPI
(snowpark-connect-deps-iceberg) lacks: Apache HttpClient 5 relocated under ``org.apache.iceberg.shaded``, as the
official runtime jar bundles it.

Usage: ``iceberg_http_jars.py OUT_DIR`` (idempotent). The classes come from Debian's libhttpclient5-java and
libhttpcore5-java (5.2.1), relocated with jarjar (Debian's libjarjar-java, which the reference stack's setup
installs for the same purpose with Jackson). Iceberg 1.10 was built against HttpClient 5.4+, whose
``TlsSocketStrategy`` interface 5.2.1 does not have: the JVM must load that interface to verify Iceberg's HTTP
client, which uses it only when a custom TLS configurer is set (not in the tests), so an empty interface of that
name stands in (written here as a class file: no Java source is compiled).
"""
from __future__ import annotations

import os
import struct
import subprocess
import sys
import zipfile

DEBIAN = "/usr/share/java"
JARS = ("httpclient5", "httpcore5", "httpcore5-h2")
RULE = "rule org.apache.hc.** org.apache.iceberg.shaded.org.apache.hc.@1\n"
TLS_STRATEGY = "org/apache/iceberg/shaded/org/apache/hc/client5/http/ssl/TlsSocketStrategy"


def _empty_interface(name: str) -> bytes:
    """The class file of ``public interface <name> {}`` (Java 8 format)."""
    def utf8(s: str) -> bytes:
        b = s.encode()
        return b"\x01" + struct.pack(">H", len(b)) + b
    pool = [b"\x07" + struct.pack(">H", 2), utf8(name), b"\x07" + struct.pack(">H", 4), utf8("java/lang/Object")]
    header = b"\xca\xfe\xba\xbe" + struct.pack(">HH", 0, 52) + struct.pack(">H", len(pool) + 1)
    # ACC_PUBLIC | ACC_INTERFACE | ACC_ABSTRACT, this, super, no interfaces, fields, methods or attributes
    return header + b"".join(pool) + struct.pack(">HHHHHHH", 0x0601, 1, 3, 0, 0, 0, 0)


def build(out: str) -> list[str]:
    """The jars to add to ``spark.jars`` (built into ``out`` when missing)."""
    os.makedirs(out, exist_ok=True)
    rules = os.path.join(out, "rules.txt")
    with open(rules, "w") as f:
        f.write(RULE)
    built = []
    for name in JARS:
        target = os.path.join(out, f"shaded-{name}.jar")
        if not os.path.exists(target):
            clean = os.path.join(out, f"clean-{name}.jar")
            with zipfile.ZipFile(os.path.join(DEBIAN, f"{name}.jar")) as zi, \
                    zipfile.ZipFile(clean, "w", zipfile.ZIP_DEFLATED) as zo:
                for m in zi.namelist():
                    if "module-info" not in m and not m.startswith("META-INF/versions/"):
                        zo.writestr(m, zi.read(m))
            subprocess.run(["java", "-jar", os.path.join(DEBIAN, "jarjar.jar"), "process", rules, clean, target],
                           check=True)
            os.remove(clean)
        built.append(target)
    stub = os.path.join(out, "tls-socket-strategy.jar")
    if not os.path.exists(stub):
        with zipfile.ZipFile(stub, "w") as z:
            z.writestr(TLS_STRATEGY + ".class", _empty_interface(TLS_STRATEGY))
    return built + [stub]


if __name__ == "__main__":
    print("\n".join(build(sys.argv[1])))
