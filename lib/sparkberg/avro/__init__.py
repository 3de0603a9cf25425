"""Manifest lists and manifests as Avro (fastavro); no pyspark."""
