import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.locks.LockSupport;

import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.BufferSupplier;
import org.apache.kafka.common.utils.CloseableIterator;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * kafkasim calibrate host: the CPU a real Java producer and real brokers spend, counted per thread, over a designed
 * matrix of producer configurations run one after another in this one JVM (so the JIT is warm after the first).
 *
 * Lines on stdin, one configuration each: {@code id=X topic=T assign=1:2|2:1 records=N warmup=W size=S rate=R
 * p.KEY=VALUE ...} (assign: each partition's replicas, leader first, by node id; p.* are producer properties; rate
 * ≤ 0 is unthrottled; bootstrap=B another listener, c.KEY=VALUE a property of its producer and consumers alike:
 * security.protocol and the truststore of an SSL listener). The topic is created for the configuration and deleted after it. For each, a discarded warm-up producer sends W records,
 * then a fresh producer sends one record (connections and metadata), and N measured records; one line
 * {@code RESULT {json}} gives the measured phase: the worker's (this thread's) and the Sender's CPU, the JIT
 * compilers' CPU so far, the producer's own counters (requests, batches, bytes before and after compression,
 * request latency), the collector's CPU and the record-seconds the producer held (send() to callback), and each
 * broker's CPU by thread kind and request counts read over JMX. With {@code consume=F1,F2,...} the topic is then
 * read from its start by a fresh consumer once per fetch size (max.partition.fetch.bytes), each read's poll loop
 * (this thread's) CPU, the consumer's fetches, records and bytes, and the brokers' CPU ({@code consumed}); with
 * {@code consume_warmup=1} a first read warms the consumer's code and is left out. The payload is
 * random upper-case letters, fresh for each record, as kafka-producer-perf-test's --record-size makes it.
 *
 * After the last configuration (stdin closed), and alone with {@code --codecs}: each codec's CPU alone on this thread
 * (compressing a batch, reading it back), printed as {@code CODECS {json}}; then, and alone with {@code --speed}: the
 * host's speed score (a fixed piece of the client's hot paths: random payload, record batches built with lz4, their
 * CRC32C), printed as {@code SPEED {json}}.
 */
public class HostCosts {
    static final String SENDER = "kafka-producer-network-thread";
    static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    static final com.sun.management.OperatingSystemMXBean OS =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    static long clockTicks = 100;
    static volatile long blackhole;     // what timed loops compute, kept so the JIT cannot drop the work

    public static void main(String[] args) throws Exception {
        String bootstrap = null;
        List<String> jmx = new ArrayList<>();
        List<String> pids = new ArrayList<>();
        boolean speedOnly = false, codecsOnly = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--bootstrap-server": bootstrap = args[++i]; break;
                case "--jmx": jmx.addAll(Arrays.asList(args[++i].split(","))); break;
                case "--broker-pids": pids.addAll(Arrays.asList(args[++i].split(","))); break;
                case "--clock-ticks": clockTicks = Long.parseLong(args[++i]); break;
                case "--speed": speedOnly = true; break;
                case "--codecs": codecsOnly = true; break;
                default: throw new IllegalArgumentException("unknown flag " + args[i]);
            }
        }
        if (codecsOnly) {
            System.out.println("CODECS " + json(codecs()));
            return;
        }
        if (speedOnly) {
            System.out.println("SPEED " + json(speed()));
            return;
        }
        List<Broker> brokers = new ArrayList<>();
        for (int i = 0; i < jmx.size(); i++) brokers.add(new Broker(jmx.get(i), i < pids.size() ? pids.get(i) : null));
        Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        Admin admin = Admin.create(adminProps);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            Map<String, String> config = new LinkedHashMap<>();
            for (String token : line.trim().split("\\s+")) {
                int eq = token.indexOf('=');
                config.put(token.substring(0, eq), token.substring(eq + 1));
            }
            String topic = config.get("topic");
            String only = config.getOrDefault("only", "");
            if (only.equals("delete")) admin.deleteTopics(List.of(topic)).all().get();
            else create(admin, topic, assignment(config.get("assign")));
            if (!only.isEmpty()) {              // a topic made or deleted for what runs later, nothing measured
                System.out.println("RESULT {}");
                System.out.flush();
                continue;
            }
            try {
                Map<String, Object> result = run(config, bootstrap, brokers);
                System.out.println("RESULT " + json(result));
                System.out.flush();
            } finally {
                admin.deleteTopics(List.of(topic)).all().get();
            }
        }
        admin.close();
        for (Broker b : brokers) b.close();
        System.out.println("CODECS " + json(codecs()));
        System.out.println("SPEED " + json(speed()));       // last: its own JIT work must not count in the runs'
    }

    /** Creates the topic and waits until each partition is led by its first replica with every replica in sync. */
    static void create(Admin admin, String topic, Map<Integer, List<Integer>> assignment) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, assignment))).all().get();
        long deadline = System.nanoTime() + 300_000_000_000L;
        while (true) {
            try {
                List<TopicPartitionInfo> parts = admin.describeTopics(List.of(topic)).allTopicNames().get()
                        .get(topic).partitions();
                if (parts.size() == assignment.size() && parts.stream().allMatch(p -> p.leader() != null
                        && p.leader().id() == assignment.get(p.partition()).get(0)
                        && p.isr().size() == assignment.get(p.partition()).size())) return;
            } catch (java.util.concurrent.ExecutionException e) {
                if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) throw e;
            }
            if (System.nanoTime() > deadline) throw new IllegalStateException("topic " + topic
                    + ": its partitions were not all led and in sync after 300 s");
            Thread.sleep(100);
        }
    }

    static Map<Integer, List<Integer>> assignment(String text) {
        Map<Integer, List<Integer>> out = new TreeMap<>();
        String[] partitions = text.split("\\|");
        for (int p = 0; p < partitions.length; p++) {
            List<Integer> replicas = new ArrayList<>();
            for (String id : partitions[p].split(":")) replicas.add(Integer.parseInt(id));
            out.put(p, replicas);
        }
        return out;
    }

    // ---- one configuration ------------------------------------------------------------------------------------
    static Map<String, Object> run(Map<String, String> c, String bootstrap, List<Broker> brokers) throws Exception {
        Properties props = new Properties();
        for (Map.Entry<String, String> e : c.entrySet())
            if (e.getKey().startsWith("p.")) props.put(e.getKey().substring(2), e.getValue());
        bootstrap = c.getOrDefault("bootstrap", bootstrap);
        Properties client = new Properties();
        for (Map.Entry<String, String> e : c.entrySet())
            if (e.getKey().startsWith("c.")) client.put(e.getKey().substring(2), e.getValue());
        props.putAll(client);
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        // one window for the whole phase, so the *-avg metrics are sums over counts of everything the producer did
        props.put(ProducerConfig.METRICS_SAMPLE_WINDOW_MS_CONFIG, "3600000");
        String topic = c.get("topic");
        int size = Integer.parseInt(c.get("size"));
        long records = Long.parseLong(c.get("records"));
        long warmup = Long.parseLong(c.getOrDefault("warmup", "0"));
        double rate = Double.parseDouble(c.getOrDefault("rate", "-1"));
        SplittableRandom random = new SplittableRandom();
        byte[] payload = new byte[size];

        Map<String, Object> out = new LinkedHashMap<>();
        out.put("id", c.get("id"));
        if (warmup > 0) {
            props.put(ProducerConfig.CLIENT_ID_CONFIG, "kafkasim-warmup-" + c.get("id"));
            out.put("warmup", phase(props, topic, payload, random, warmup, rate, null, true));
        }
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "kafkasim-" + c.get("id"));
        out.put("measured", phase(props, topic, payload, random, records, rate, brokers, false));
        if (c.containsKey("consume")) {
            int partitions = c.get("assign").split("\\|").length;
            if (c.getOrDefault("consume_warmup", "0").equals("1"))
                consume(bootstrap, client, topic, partitions, 1048576, null);
            List<Map<String, Object>> reads = new ArrayList<>();
            for (String fetch : c.get("consume").split(","))
                reads.add(consume(bootstrap, client, topic, partitions, Integer.parseInt(fetch), brokers));
            out.put("consumed", reads);
        }
        out.put("jit_cpu_s", jitSeconds());
        return out;
    }

    /** A fresh consumer reads the topic from its start to its end, polling on this thread. */
    static Map<String, Object> consume(String bootstrap, Properties client, String topic, int partitions,
                                       int fetchSize, List<Broker> brokers) throws Exception {
        Properties props = new Properties();
        props.putAll(client);
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, String.valueOf(fetchSize));
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.METRICS_SAMPLE_WINDOW_MS_CONFIG, "3600000");
        Map<String, Object> out = new LinkedHashMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> parts = new ArrayList<>();
            for (int p = 0; p < partitions; p++) parts.add(new TopicPartition(topic, p));
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            long total = 0;
            for (long end : consumer.endOffsets(parts).values()) total += end;
            List<Map<String, Double>> brokersBefore = new ArrayList<>();
            if (brokers != null) for (Broker b : brokers) brokersBefore.add(b.snapshot());
            long cpu0 = THREADS.getCurrentThreadCpuTime(), start = System.nanoTime();
            long records = 0, bytes = 0;
            while (records < total) {
                ConsumerRecords<byte[], byte[]> got = consumer.poll(java.time.Duration.ofMillis(500));
                for (org.apache.kafka.clients.consumer.ConsumerRecord<byte[], byte[]> r : got) {
                    records++;
                    bytes += r.serializedValueSize();
                }
            }
            out.put("fetch_size", (double) fetchSize);
            out.put("seconds", (System.nanoTime() - start) / 1e9);
            out.put("poll_cpu_s", (THREADS.getCurrentThreadCpuTime() - cpu0) / 1e9);
            out.put("records", (double) records);
            out.put("value_bytes", (double) bytes);
            for (Map.Entry<MetricName, ? extends Metric> e : consumer.metrics().entrySet()) {
                MetricName m = e.getKey();
                if (m.group().equals("consumer-fetch-manager-metrics") && m.tags().size() == 1
                        && (m.name().equals("fetch-total") || m.name().equals("bytes-consumed-total")))
                    out.put(m.name(), ((Number) e.getValue().metricValue()).doubleValue());
            }
            if (brokers != null) out.put("brokers", since(brokers, brokersBefore));
        }
        return out;
    }

    /** Each broker's counters since `before`; a histogram's mean over the span from its all-time sums. */
    static List<Map<String, Double>> since(List<Broker> brokers, List<Map<String, Double>> before) throws Exception {
        List<Map<String, Double>> deltas = new ArrayList<>();
        for (int i = 0; i < brokers.size(); i++) {
            Map<String, Double> now = brokers.get(i).snapshot(), was = before.get(i);
            Map<String, Double> d = new TreeMap<>();
            for (String k : now.keySet()) d.put(k, now.get(k) - was.getOrDefault(k, 0.0));
            for (String h : Broker.HISTOGRAMS) {
                double count = d.getOrDefault(h + ".count", 0.0);
                d.put(h + ".mean", count > 0 ? d.get(h + ".sum") / count : 0.0);
            }
            deltas.add(d);
        }
        return deltas;
    }

    /** A fresh producer: one record to connect, then n records measured. */
    static Map<String, Object> phase(Properties props, String topic, byte[] payload, SplittableRandom random, long n,
                                     double rate, List<Broker> brokers, boolean timeFirstSend) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        long errors[] = new long[1];
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            fill(payload, random);
            long t0 = System.nanoTime();
            producer.send(new ProducerRecord<>(topic, payload));
            out.put("first_send_ms", (System.nanoTime() - t0) / 1e6);
            producer.flush();
            Map<String, Double> before = counters(producer);
            List<Map<String, Double>> brokersBefore = new ArrayList<>();
            if (brokers != null) for (Broker b : brokers) brokersBefore.add(b.snapshot());
            long sender0 = senderNanos(), worker0 = THREADS.getCurrentThreadCpuTime(), start = System.nanoTime();
            long process0 = OS.getProcessCpuTime();
            double jit0 = jitSeconds(), gc0 = gcSeconds();
            heldNanos = 0;
            double nsPerRecord = rate > 0 ? 1e9 / rate : 0;
            for (long i = 0; i < n; i++) {
                fill(payload, random);
                long sendStart = System.nanoTime();
                producer.send(new ProducerRecord<>(topic, payload), (meta, exc) -> {
                    if (exc != null) errors[0]++;
                    lastLatency = System.nanoTime() - sendStart;       // (perf-test's callback work)
                    heldNanos += lastLatency;
                });
                if (nsPerRecord > 0) {
                    long due = start + (long) ((i + 1) * nsPerRecord);
                    long ahead = due - System.nanoTime();
                    if (ahead > 2_000_000) LockSupport.parkNanos(ahead);
                }
            }
            producer.flush();
            long wall = System.nanoTime() - start;
            long worker = THREADS.getCurrentThreadCpuTime() - worker0;
            long sender = senderNanos() - sender0;
            Map<String, Double> after = counters(producer);
            out.put("seconds", wall / 1e9);
            out.put("worker_cpu_s", worker / 1e9);
            out.put("sender_cpu_s", sender / 1e9);
            out.put("process_cpu_s", (OS.getProcessCpuTime() - process0) / 1e9);
            out.put("phase_jit_cpu_s", jitSeconds() - jit0);
            out.put("gc_cpu_s", gcSeconds() - gc0);
            out.put("held_record_s", heldNanos / 1e9);
            out.put("jit_cpu_s", jitSeconds());
            out.put("records", (double) n);
            out.put("errors", (double) errors[0]);
            for (String k : after.keySet())
                if (k.endsWith("-total") || k.equals("batches") || k.equals("bytes") || k.equals("uncompressed"))
                    out.put(k, after.get(k) - before.getOrDefault(k, 0.0));
            out.put("request-latency-avg", after.get("request-latency-avg"));
            if (brokers != null) out.put("brokers", since(brokers, brokersBefore));
        }
        return out;
    }

    static volatile long lastLatency;
    // Σ over the phase's records of send() to callback: record-seconds held (Little's law: the mean held × seconds).
    // Callbacks run on the Sender thread alone; flush() returns after the last has run.
    static long heldNanos;

    static void fill(byte[] payload, SplittableRandom random) {
        for (int j = 0; j < payload.length; j++) payload[j] = (byte) (random.nextInt(26) + 65);
    }

    /** The producer's counters, and its batches: byte-total ÷ batch-size-avg (both recorded once per batch). */
    static Map<String, Double> counters(KafkaProducer<byte[], byte[]> producer) {
        Map<String, Double> out = new TreeMap<>();
        double topicBytes = 0, uncompressed = 0;
        for (Map.Entry<MetricName, ? extends Metric> e : producer.metrics().entrySet()) {
            MetricName m = e.getKey();
            Object v = e.getValue().metricValue();
            if (!(v instanceof Number)) continue;
            double x = ((Number) v).doubleValue();
            if (m.group().equals("producer-metrics") && m.tags().size() == 1) {
                switch (m.name()) {
                    case "request-total": case "record-send-total": case "outgoing-byte-total":
                    case "batch-size-avg": case "compression-rate-avg": case "request-latency-avg":
                    case "record-size-avg": case "records-per-request-avg":
                        out.put(m.name(), x);
                }
            } else if (m.group().equals("producer-topic-metrics") && m.name().equals("byte-total")) {
                topicBytes += x;
            }
        }
        double avg = out.getOrDefault("batch-size-avg", 0.0);
        out.put("bytes", topicBytes);
        out.put("batches", avg > 0 && !Double.isNaN(avg) ? topicBytes / avg : 0.0);
        double ratio = out.getOrDefault("compression-rate-avg", 1.0);
        out.put("uncompressed", ratio > 0 && !Double.isNaN(ratio) ? topicBytes / ratio : topicBytes);
        return out;
    }

    static long senderNanos() {
        long total = 0;
        for (Thread t : Thread.getAllStackTraces().keySet())
            if (t.getName().startsWith(SENDER)) total += Math.max(0, THREADS.getThreadCpuTime(t.getId()));
        return total;
    }

    /** CPU-seconds this JVM's C1 and C2 compiler threads have taken so far (/proc: they are not Java threads). */
    static double jitSeconds() {
        return nativeSeconds("self", "C1 Compiler", "C2 Compiler");
    }

    /** CPU-seconds this JVM's garbage collector threads (G1's workers, refinement and marking) have taken so far. */
    static double gcSeconds() {
        return nativeSeconds("self", "GC Thread", "G1 ");
    }

    /** CPU-seconds so far of process pid's threads whose name starts with one of the prefixes (from /proc). */
    static double nativeSeconds(String pid, String... prefixes) {
        double total = 0;
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Paths.get("/proc", pid, "task"))) {
            for (Path task : tasks) {
                String comm = Files.readString(task.resolve("comm")).trim();
                boolean match = false;
                for (String p : prefixes) match |= comm.startsWith(p);
                if (!match) continue;
                String stat = Files.readString(task.resolve("stat"));
                String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                total += (Long.parseLong(f[11]) + Long.parseLong(f[12])) / (double) clockTicks;
            }
        } catch (Exception e) {
            return -1;
        }
        return total;
    }

    // ---- each codec alone ----------------------------------------------------------------------------------------
    /** Each codec's CPU per uncompressed byte alone on this thread, beyond an uncompressed batch's: building a batch
     *  of 64 records of 1000 random letters through the producer's codec stream ({codec}.compress_ns), and reading
     *  its records back as the leader's LogValidator does ({codec}.decompress_ns). The least of 4 timings of
     *  0.08 s each after one of warm-up: the codec's own cost with the host to itself, a floor for its in-run cost.
     *  Also the random letters' own cost per byte (payload.fill_ns). */
    static Map<String, Object> codecs() throws Exception {
        SplittableRandom random = new SplittableRandom(7);
        byte[][] values = new byte[64][1000];
        for (byte[] v : values) fill(v, random);
        ByteBuffer buffer = ByteBuffer.allocate(1 << 20);
        Map<String, Object> out = new LinkedHashMap<>();
        double[] plain = null;
        for (String codec : new String[] {"none", "gzip", "snappy", "lz4", "zstd"}) {
            Compression compression = switch (codec) {
                case "gzip" -> Compression.gzip().build();
                case "snappy" -> Compression.snappy().build();
                case "lz4" -> Compression.lz4().build();
                case "zstd" -> Compression.zstd().build();
                default -> Compression.NONE;
            };
            double[] ns = codecTimes(compression, values, buffer);
            if (plain == null) {
                plain = ns;
                continue;
            }
            out.put(codec + ".compress_ns", Math.max(0.0, ns[0] - plain[0]));
            out.put(codec + ".decompress_ns", Math.max(0.0, ns[1] - plain[1]));
        }
        out.put("payload.fill_ns", fillTime(values, random));
        return out;
    }

    /** CPU ns per byte of drawing fresh random letters into the records, as each measured send() is preceded by
     *  (perf-test's own work, not the client's), the least of 4 timings of 0.08 s after one of warm-up. */
    static double fillTime(byte[][] values, SplittableRandom random) {
        double best = Double.MAX_VALUE;
        for (int round = -1; round < 4; round++) {
            long bytes = 0, start = THREADS.getCurrentThreadCpuTime(), end = start + 80_000_000L;
            while (THREADS.getCurrentThreadCpuTime() < end)
                for (byte[] v : values) {
                    fill(v, random);
                    bytes += v.length;
                }
            if (round >= 0) best = Math.min(best, (double) (THREADS.getCurrentThreadCpuTime() - start) / bytes);
        }
        return best;
    }

    /** {build, read} CPU ns per uncompressed byte of one batch with `compression`, the least of 4 timings. */
    static double[] codecTimes(Compression compression, byte[][] values, ByteBuffer buffer) throws Exception {
        double[] best = {Double.MAX_VALUE, Double.MAX_VALUE};
        BufferSupplier supplier = BufferSupplier.create();
        long bytes = 0;
        for (byte[] v : values) bytes += v.length;
        for (int round = -1; round < 4; round++) {           // (a round of warm-up)
            long build = 0, read = 0, batches = 0, sink = 0;
            long end = THREADS.getCurrentThreadCpuTime() + 80_000_000L;
            while (THREADS.getCurrentThreadCpuTime() < end) {
                long t0 = THREADS.getCurrentThreadCpuTime();
                buffer.clear();
                MemoryRecordsBuilder builder = MemoryRecords.builder(buffer, compression, TimestampType.CREATE_TIME, 0L);
                for (int i = 0; i < values.length; i++) builder.append(i, null, values[i]);
                MemoryRecords records = builder.build();
                long t1 = THREADS.getCurrentThreadCpuTime();
                for (RecordBatch batch : records.batches())
                    try (CloseableIterator<Record> it = batch.streamingIterator(supplier)) {
                        while (it.hasNext()) sink += it.next().valueSize();
                    }
                build += t1 - t0;
                read += THREADS.getCurrentThreadCpuTime() - t1;
                batches++;
            }
            blackhole += sink;
            if (round >= 0) {
                best[0] = Math.min(best[0], (double) build / batches / bytes);
                best[1] = Math.min(best[1], (double) read / batches / bytes);
            }
        }
        return best;
    }

    // ---- the host's speed score -----------------------------------------------------------------------------
    /** Units of a fixed piece of the client's hot paths per second: fill 64 records of 1000 random letters,
     *  append them to an lz4 batch, close it (compress, CRC32C). Best of 7 timings after a JIT warm-up. */
    static Map<String, Object> speed() {
        SplittableRandom random = new SplittableRandom(42);
        byte[] value = new byte[1000];
        ByteBuffer buffer = ByteBuffer.allocate(1 << 20);
        long sink = 0;
        long warmEnd = System.nanoTime() + 1_500_000_000L;
        while (System.nanoTime() < warmEnd) sink += unit(random, value, buffer);
        double[] rates = new double[7];
        for (int r = 0; r < rates.length; r++) {
            long t0 = System.nanoTime();
            int units = 0;
            while (System.nanoTime() - t0 < 250_000_000L) {
                sink += unit(random, value, buffer);
                units++;
            }
            rates[r] = units / ((System.nanoTime() - t0) / 1e9);
        }
        Arrays.sort(rates);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("score", rates[rates.length - 1]);
        out.put("median", rates[rates.length / 2]);
        out.put("spread", (rates[rates.length - 1] - rates[0]) / rates[rates.length / 2]);
        out.put("sink", (double) (sink & 1));
        return out;
    }

    static long unit(SplittableRandom random, byte[] value, ByteBuffer buffer) {
        buffer.clear();
        MemoryRecordsBuilder builder = MemoryRecords.builder(buffer, Compression.lz4().build(),
                                                             TimestampType.CREATE_TIME, 0L);
        for (int i = 0; i < 64; i++) {
            fill(value, random);
            builder.append(i, null, value);
        }
        return builder.build().sizeInBytes();
    }

    // ---- a broker, over JMX -------------------------------------------------------------------------------------
    static class Broker {
        static final String[] HISTOGRAMS = {"produce.request_queue_ms", "produce.response_queue_ms",
                                            "produce.local_ms", "produce.total_ms"};
        final JMXConnector connector;
        final MBeanServerConnection server;
        final com.sun.management.ThreadMXBean threads;
        final com.sun.management.OperatingSystemMXBean os;
        final String pid;      // where known (a broker on this host): its compiler and collector threads' CPU

        Broker(String address, String pid) throws Exception {
            this.pid = pid;
            connector = JMXConnectorFactory.connect(
                new JMXServiceURL("service:jmx:rmi:///jndi/rmi://" + address + "/jmxrmi"));
            server = connector.getMBeanServerConnection();
            threads = ManagementFactory.newPlatformMXBeanProxy(server, ManagementFactory.THREAD_MXBEAN_NAME,
                                                              com.sun.management.ThreadMXBean.class);
            os = ManagementFactory.newPlatformMXBeanProxy(server, ManagementFactory.OPERATING_SYSTEM_MXBEAN_NAME,
                                                         com.sun.management.OperatingSystemMXBean.class);
        }

        /** CPU-seconds by thread kind (io: request handlers; network: the client listener's network threads;
         *  fetcher: replica fetchers; process: the whole JVM), request counts and request-time sums. */
        Map<String, Double> snapshot() throws Exception {
            Map<String, Double> out = new TreeMap<>();
            long[] ids = threads.getAllThreadIds();
            long[] cpu = threads.getThreadCpuTime(ids);
            java.lang.management.ThreadInfo[] info = threads.getThreadInfo(ids);
            for (int i = 0; i < ids.length; i++) {
                if (info[i] == null || cpu[i] < 0) continue;
                String kind = kind(info[i].getThreadName());
                out.merge(kind + "_cpu_s", cpu[i] / 1e9, Double::sum);
            }
            out.put("process_cpu_s", os.getProcessCpuTime() / 1e9);
            if (pid != null) {
                out.put("jit_cpu_s", nativeSeconds(pid, "C1 Compiler", "C2 Compiler"));
                out.put("gc_cpu_s", nativeSeconds(pid, "GC Thread", "G1 "));
            }
            out.put("produce.requests", count("RequestsPerSec", "Produce"));
            out.put("fetch_follower.requests", count("RequestsPerSec", "FetchFollower"));
            out.put("fetch_consumer.requests", count("RequestsPerSec", "FetchConsumer"));
            String[] names = {"RequestQueueTimeMs", "ResponseQueueTimeMs", "LocalTimeMs", "TotalTimeMs"};
            for (int i = 0; i < names.length; i++) {
                double[] h = histogram(names[i], "Produce");
                out.put(HISTOGRAMS[i] + ".count", h[0]);
                out.put(HISTOGRAMS[i] + ".sum", h[0] * h[1]);
            }
            return out;
        }

        static String kind(String name) {
            if (name.startsWith("data-plane-kafka-request-handler")) return "io";
            if (name.startsWith("data-plane-kafka-network-thread") && !name.contains("CONTROLLER")) return "network";
            if (name.startsWith("ReplicaFetcherThread")) return "fetcher";
            return "other";
        }

        double count(String metric, String request) throws Exception {
            double total = 0;
            Set<ObjectName> names = server.queryNames(new ObjectName(
                "kafka.network:type=RequestMetrics,name=" + metric + ",request=" + request + ",*"), null);
            for (ObjectName n : names) total += ((Number) server.getAttribute(n, "Count")).doubleValue();
            return total;
        }

        double[] histogram(String metric, String request) throws Exception {
            ObjectName n = new ObjectName("kafka.network:type=RequestMetrics,name=" + metric + ",request=" + request);
            if (!server.isRegistered(n)) return new double[] {0, 0};
            return new double[] {((Number) server.getAttribute(n, "Count")).doubleValue(),
                                 ((Number) server.getAttribute(n, "Mean")).doubleValue()};
        }

        void close() {
            try { connector.close(); } catch (Exception e) { /* leaving anyway */ }
        }
    }

    // ---- output -------------------------------------------------------------------------------------------------
    @SuppressWarnings("unchecked")
    static String json(Object v) {
        if (v instanceof Map) {
            StringBuilder s = new StringBuilder("{");
            for (Map.Entry<String, Object> e : ((Map<String, Object>) v).entrySet()) {
                if (s.length() > 1) s.append(", ");
                s.append('"').append(e.getKey()).append("\": ").append(json(e.getValue()));
            }
            return s.append('}').toString();
        }
        if (v instanceof List) {
            StringBuilder s = new StringBuilder("[");
            for (Object o : (List<Object>) v) {
                if (s.length() > 1) s.append(", ");
                s.append(json(o));
            }
            return s.append(']').toString();
        }
        if (v instanceof Double) {
            double d = (Double) v;
            return Double.isFinite(d) ? String.format(Locale.ROOT, "%.9g", d) : "null";
        }
        if (v == null) return "null";
        return '"' + v.toString().replace("\\", "\\\\").replace("\"", "\\\"") + '"';
    }
}
