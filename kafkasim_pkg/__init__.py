"""kafkasim: predict Kafka producer throughput and latency, and check the prediction against real clusters."""

__version__ = "0.1.0"
