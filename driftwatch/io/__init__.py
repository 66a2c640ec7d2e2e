"""The shell around the core: Kafka, Prometheus, checkpoints, alarm publishing."""
