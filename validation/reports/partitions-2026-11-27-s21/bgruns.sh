cd /work/main
S="--set cluster.brokers=3 --set topic.partitions=6 --set topic.replication.factor=3 --set producer.acks=all --set workload.records=200000 --set producer.batch.size=65536 --set producer.linger.ms=5"
mk() { .venv/bin/python -c "
from kafkasim.validation import admin
from kafkasim.validation.kafka_dist import ensure_kafka
admin.create_topic(ensure_kafka(), '127.0.0.1:9092', '$1', $2, 3, timeout=300)"; sleep 20; }
mk bg100 100
for i in 1 2 3; do echo "bg100 run $i"; nice -n -10 .venv/bin/python -m kafkasim.validation.jit examples/local-1broker.yaml $S --interval 100 2>&1 | grep -E '^total|^brokers'; done
mk bg1900 1900
for i in 1 2 3 4; do echo "bg2000 run $i"; nice -n -10 .venv/bin/python -m kafkasim.validation.jit examples/local-1broker.yaml $S --interval 100 2>&1 | grep -E '^total|^brokers'; done
echo done
