import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * kafkasim measure's tailing consumer: Kafka's own KafkaConsumer in a group of its own, reading a topic while a
 * producer writes it, and each record's end-to-end latency — poll() returning it, less its CreateTime (which the
 * producer sets in send(); producer and consumer share this host's clock).
 *
 * Flags: --bootstrap-server B --topic T --group G --records N [--timeout-ms MS] [--command-config FILE]
 * [--command-property K=V ...] (as Kafka's tools: the file's properties, then those given).
 * Prints {@code READY} once its partitions are assigned and its positions set at the log's end (the producer may
 * start), then, after N records (or MS
 * without one), {@code RESULT {json}}: records, the end-to-end percentiles in ms (avg, p50, p99, p99.9, max, as
 * EndToEndLatency rounds them: whole ms), the poll thread's CPU and the consumer's fetch metrics.
 */
public class TailConsumer {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        // the topic holds the warm-up runs' records: read from its end, which is where the producer starts
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "latest");
        props.put(ConsumerConfig.METRICS_SAMPLE_WINDOW_MS_CONFIG, "3600000");
        String topic = null;
        long records = 0, timeoutMs = 30_000;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--bootstrap-server": props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[++i]); break;
                case "--topic": topic = args[++i]; break;
                case "--group": props.put(ConsumerConfig.GROUP_ID_CONFIG, args[++i]); break;
                case "--records": records = Long.parseLong(args[++i]); break;
                case "--timeout-ms": timeoutMs = Long.parseLong(args[++i]); break;
                case "--command-config":
                    try (java.io.Reader file = new java.io.FileReader(args[++i])) {
                        Properties given = new Properties();
                        given.load(file);
                        given.forEach((k, v) -> props.putIfAbsent(k, v));
                    }
                    break;
                case "--command-property":
                    while (i + 1 < args.length && !args[i + 1].startsWith("--")) {
                        String kv = args[++i];
                        props.put(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
                    }
                    break;
                default: throw new IllegalArgumentException("unknown flag " + args[i]);
            }
        }
        long[] latency = new long[(int) records];
        int n = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            boolean[] ready = {false};
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) { }
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    for (TopicPartition p : partitions) consumer.position(p);   // the log's end, looked up now
                    if (!ready[0] && !partitions.isEmpty()) {
                        ready[0] = true;
                        System.out.println("READY");
                        System.out.flush();
                    }
                }
            });
            long cpu0 = ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
            long last = System.currentTimeMillis();
            while (n < records && System.currentTimeMillis() - last < timeoutMs) {
                ConsumerRecords<byte[], byte[]> got = consumer.poll(Duration.ofMillis(100));
                long now = System.currentTimeMillis();
                for (ConsumerRecord<byte[], byte[]> r : got) {
                    if (n < latency.length) latency[n++] = now - r.timestamp();
                }
                if (!got.isEmpty()) last = now;
            }
            double cpu = (ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime() - cpu0) / 1e9;
            Map<String, Object> out = new TreeMap<>();
            out.put("records", (double) n);
            out.put("poll_cpu_s", cpu);
            out.put("process_cpu_s", ((com.sun.management.OperatingSystemMXBean)
                                       ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime() / 1e9);
            long[] sorted = Arrays.copyOf(latency, n);
            Arrays.sort(sorted);
            double sum = 0;
            for (long x : sorted) sum += x;
            out.put("e2e_avg_ms", n > 0 ? sum / n : 0.0);
            out.put("e2e_p50_ms", n > 0 ? (double) sorted[(int) (n * 0.5)] : 0.0);
            out.put("e2e_p99_ms", n > 0 ? (double) sorted[(int) (n * 0.99)] : 0.0);
            out.put("e2e_p999_ms", n > 0 ? (double) sorted[(int) (n * 0.999)] : 0.0);
            out.put("e2e_max_ms", n > 0 ? (double) sorted[n - 1] : 0.0);
            for (Map.Entry<MetricName, ? extends Metric> e : consumer.metrics().entrySet()) {
                MetricName m = e.getKey();
                Object v = e.getValue().metricValue();
                if (m.group().equals("consumer-fetch-manager-metrics") && m.tags().size() == 1 && v instanceof Number)
                    out.put(m.name(), ((Number) v).doubleValue());
            }
            StringBuilder s = new StringBuilder("{");
            for (Map.Entry<String, Object> e : out.entrySet()) {
                if (s.length() > 1) s.append(", ");
                double x = (Double) e.getValue();
                s.append('"').append(e.getKey()).append("\": ")
                 .append(Double.isFinite(x) ? String.format(Locale.ROOT, "%.6g", x) : "null");
            }
            System.out.println("RESULT " + s.append('}'));
        }
    }
}
