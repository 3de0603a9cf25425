# sparkberg: `make demo` and `make test` each create their own virtualenv from setup.cfg.
PYTHON ?= python3
VENV   ?= .venv
IVENV  ?= .venv-interop
# the reference stack's scripts (shared/interop): next to the checkout, or wherever $SPARKBERG_SHARED says
SHARED ?= $(or $(SPARKBERG_SHARED),../shared)
PYTEST_FLAGS ?= -q
# make test runs on two pytest-xdist workers (a Spark session each), tests handed out one at a time: the suite is
# mostly Spark's own CPU, with subprocess tests that wait; two workers keep both cores busy
TEST_WORKERS ?= -n 2 --dist worksteal
# make interop runs on two workers too, each with its own Iceberg Java session, a module's tests on one worker (its
# servers, a Hive Metastore's among them, start once): 276 passed in 9:42 against 14-19 minutes on one
INTEROP_WORKERS ?= -n 2 --dist loadfile
# make test's JVMs (every Spark driver it starts, through spark-submit) compile with C1 only: most of them live
# for seconds or a few minutes on tiny data, where C2's compiling costs more CPU than its code saves (make test on
# 2 cores: 29:14 against 32:28 with the JVM's default in the same session, 1266 passed each). Not make interop
# (14:24 with it against 12:40: longer sessions, more data), make demo or make bench: they run the JVM as users
# do. A SPARK_SUBMIT_OPTS of the caller's own is kept.
# They also collect garbage with the serial collector: a test's driver keeps a heap of at most 1 GB (Spark's default
# driver memory) that G1's concurrent marking and parallel threads cost more CPU to keep than one thread does, on two
# cores that two pytest workers already keep busy (make test 12:49 against 13:46 with G1, one run each; alone,
# tests/spark/test_changes.py took 109 CPU-seconds against 116, test_jobs.py with test_row_level.py 139 against 149).
TEST_JVM_OPTS ?= -XX:TieredStopAtLevel=1 -XX:+UseSerialGC
# They also start from a class-data-sharing archive of Spark's classes (tests/jvm_archive.py, written once per venv,
# in about 50 s): a session and its first job come up in 6.5-6.9 s against 11.8-12.4 s without it, and make test
# took 27:16 against 29:14 (one run each). A JVM the archive does not fit (another classpath) loads its classes as
# before, silently (-Xlog:cds*=off).
TEST_JVM_ARCHIVE = $(abspath $(VENV))/spark-classes.jsa
# (the JVM options that start from archive $(1), when one was written: the shell's words in a recipe)
jvm_archive = $$(test -s $(1) && echo '-XX:SharedArchiveFile=$(1) -Xlog:cds*=off')
# make test's SPARK_SUBMIT_OPTS (also those of the PySpark 4 processes make interop starts)
test_submit_opts = $(or $(SPARK_SUBMIT_OPTS),$(TEST_JVM_OPTS) $(call jvm_archive,$(TEST_JVM_ARCHIVE)))

.PHONY: demo test test-spec test-pyspark interop bench docs notebooks clean postgres-server jdbc-drivers jvm-archives
# Azure's storage emulator for the object store tests (tests/objectstores.py), from npm into the venv: Azurite 3.35,
# the last that runs on Debian's Node.js 18 (3.36 and later ask for Node 22)
AZURITE = $(VENV)/azurite/.installed

$(VENV)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/python jobs/demo.py --warehouse ./warehouse

# PostgreSQL's server for the SQL catalog tests, from Debian's package (the tests start and stop clusters of
# their own, on 127.0.0.1)
postgres-server:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; }

$(AZURITE): $(VENV)/.installed
	@command -v npm >/dev/null || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; }
	npm install --prefix $(VENV)/azurite --no-audit --no-fund --omit=dev --loglevel=error azurite@3.35.0 >/dev/null
	touch $@

$(TEST_JVM_ARCHIVE): $(VENV)/.installed tests/jvm_archive.py
	$(VENV)/bin/python tests/jvm_archive.py $@ $(TEST_JVM_OPTS)

test: $(VENV)/.installed $(TEST_JVM_ARCHIVE) postgres-server $(AZURITE)
	SPARK_SUBMIT_OPTS="$(test_submit_opts)" \
		$(VENV)/bin/python -m pytest $(PYTEST_FLAGS) $(TEST_WORKERS) tests/spec tests/spark

test-spec: $(VENV)/.installed postgres-server $(AZURITE)
	$(VENV)/bin/python -m pytest $(PYTEST_FLAGS) tests/spec

# The Spark suite on another PySpark than make test's, in a venv of its own: `make test-pyspark PYSPARK=4.1.4`. Not
# in .ci/run (make test runs the newest 4.x, make interop 3.5): the 4.x lines before differ in what their Parquet
# reader opens and what they hand Python data sources, which only a run on them shows
# (docs/contributing/how-it-works.md#tests)
PYSPARK ?=
PVENV = .venv-pyspark-$(PYSPARK)
$(PVENV)/.installed: setup.cfg pyproject.toml $(AZURITE)
	@test -n "$(PYSPARK)" || { echo "make test-pyspark PYSPARK=<version>, e.g. 4.1.4"; exit 2; }
	$(PYTHON) -m venv $(PVENV)
	$(PVENV)/bin/pip install -q --upgrade pip
	$(PVENV)/bin/pip install -q -e '.[test]' 'pyspark[connect]==$(PYSPARK)'
	ln -sfn $(abspath $(VENV))/azurite $(PVENV)/azurite
	touch $@

test-pyspark: $(PVENV)/.installed postgres-server
	SPARK_SUBMIT_OPTS="$(or $(SPARK_SUBMIT_OPTS),$(TEST_JVM_OPTS))" PYSPARK_PYTHON=$(abspath $(PVENV))/bin/python \
		$(PVENV)/bin/python -m pytest $(PYTEST_FLAGS) $(TEST_WORKERS) tests/spark

# Reference engines: Apache Iceberg 1.10.2 (Java, PySpark 3.5), PyIceberg 0.12, DuckDB 1.5.5
$(IVENV)/.installed: setup.cfg pyproject.toml $(wildcard $(SHARED)/interop/setup-reference.sh)
	@test -f $(SHARED)/interop/setup-reference.sh || { echo "no $(SHARED)/interop/setup-reference.sh: set SPARKBERG_SHARED to the shared folder" >&2; exit 2; }
	bash $(SHARED)/interop/setup-reference.sh $(IVENV)
	# sparkberg and the test runner only: the test extras pin engines (PyIceberg, Spark Connect) for the main suite
	$(IVENV)/bin/pip install -q -e '.[postgres]' "pytest>=8" "pytest-xdist>=3.5" "hypothesis>=6" "pytest-timeout>=2" \
		"pyyaml>=6" "moto[server]>=5.2.5" "sqlalchemy>=2" \
		"jsonschema>=4.18"
	# DuckDB writes Iceberg only through a REST catalog, over HTTP: its httpfs extension, from PyPI like the others
	$(IVENV)/bin/pip install -q "duckdb-extension-httpfs==1.5.5"
	$(IVENV)/bin/python -c "import pyspark; assert pyspark.__version__.startswith('3.5'), pyspark.__version__"
	touch $@

# Iceberg Java's JdbcCatalog on the SQL catalog's databases: the JDBC drivers Debian ships
jdbc-drivers:
	@test -f /usr/share/java/sqlite-jdbc.jar -a -f /usr/share/java/postgresql.jar || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libxerial-sqlite-jdbc-java libpostgresql-jdbc-java \
		>/dev/null; }

# Iceberg Java's REST client needs Apache HttpClient 5, relocated as the official runtime jar bundles it and the
# one on PyPI does not: Debian's, relocated by tests/interop/iceberg_http_jars.py (jarjar)
$(IVENV)/iceberg-http/.built: $(IVENV)/.installed tests/interop/iceberg_http_jars.py
	@test -f /usr/share/java/httpclient5.jar -a -f /usr/share/java/httpcore5.jar || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libhttpclient5-java libhttpcore5-java >/dev/null; }
	$(IVENV)/bin/python tests/interop/iceberg_http_jars.py $(IVENV)/iceberg-http >/dev/null
	touch $@

# make interop's JVMs (PySpark 3.5, the JVM's default JIT) start from an archive of their own the same way (make
# interop 11:15 against 12:40, one run each) and collect garbage with the serial collector as make test's do (make
# interop 5:45 against 6:08, one run each; its metadata tables and SQL statements tests 194 CPU-seconds against
# 218); the streaming reads it runs on PySpark 4, in the main venv (SPARKBERG_SPARK4_PYTHON), start as make test's
# do (SPARKBERG_SPARK4_JVM_OPTS)
INTEROP_JVM_OPTS ?= -XX:+UseSerialGC
INTEROP_JVM_ARCHIVE = $(abspath $(IVENV))/spark-classes.jsa

$(INTEROP_JVM_ARCHIVE): $(IVENV)/.installed tests/jvm_archive.py
	$(IVENV)/bin/python tests/jvm_archive.py $@ $(INTEROP_JVM_OPTS)

# both venvs and both archives (.ci/run builds them side by side: make -j2 jvm-archives)
jvm-archives: $(TEST_JVM_ARCHIVE) $(INTEROP_JVM_ARCHIVE)

interop: $(IVENV)/.installed $(VENV)/.installed postgres-server jdbc-drivers $(IVENV)/iceberg-http/.built \
		$(INTEROP_JVM_ARCHIVE) $(TEST_JVM_ARCHIVE)
	SPARK_SUBMIT_OPTS="$(or $(SPARK_SUBMIT_OPTS),$(INTEROP_JVM_OPTS) $(call jvm_archive,$(INTEROP_JVM_ARCHIVE)))" \
	SPARKBERG_SPARK4_JVM_OPTS="$(test_submit_opts)" \
	SPARKBERG_SHARED=$(abspath $(SHARED)) SPARKBERG_SPARK4_PYTHON=$(abspath $(VENV))/bin/python \
		$(IVENV)/bin/python -m pytest $(PYTEST_FLAGS) $(INTEROP_WORKERS) tests/interop

# Benchmarks against Iceberg Java in the same session (not tests); smaller: BENCH_SIZES=10,10000 BENCH_ROWS=1000000
# (the merge-on-read reads also on PySpark 4, in the main venv: BENCH_SPARK4_PYTHON)
bench: $(IVENV)/.installed $(VENV)/.installed postgres-server jdbc-drivers $(IVENV)/iceberg-http/.built
	SPARKBERG_SHARED=$(abspath $(SHARED)) BENCH_SPARK4_PYTHON=$(abspath $(VENV))/bin/python \
		$(IVENV)/bin/python tests/benchmarks/bench.py --json bench.json

# The documentation site (docs/, mkdocs.yml) into site/; any warning fails the build; needs no network
$(VENV)/.docs-installed: $(VENV)/.installed setup.cfg
	$(VENV)/bin/pip install -q -e '.[test,docs]'
	touch $@

# (then checks that it reads offline, opened from disk: no page loads anything from the network, and links name
# .html files rather than directories)
docs: $(VENV)/.docs-installed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet
	@! grep -rlE 'fonts\.(googleapis|gstatic)\.com|<script src="https?://|<link[^>]*href="https?://' site --include='*.html' \
		|| { echo "site/ loads something from the network" >&2; exit 1; }
	@grep -q 'href="getting-started.html"' site/index.html \
		|| { echo "site/ links to directories: it cannot be browsed from disk" >&2; exit 1; }

# Runs the notebooks and stores them with their outputs and plots (on a scratch warehouse, removed after)
notebooks: $(VENV)/.installed
	$(VENV)/bin/python tests/notebooks.py --store notebooks/*.ipynb

clean:
	rm -rf $(VENV) $(IVENV) .venv-pyspark-* warehouse site
