import java.io.FileInputStream;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.server.util.ThroughputThrottler;
import org.apache.kafka.tools.ToolsUtils;

/**
 * kafkasim: kafka-producer-perf-test with several sending threads sharing one KafkaProducer, as an application's
 * worker threads do (the Kontur talk's load generator). `kafkasim measure` runs it for scenarios with threads > 1.
 *
 * It takes ProducerPerformance's flags and prints its lines (window, total, steady state, the --print-metrics table,
 * through Kafka's own ToolsUtils), so one parser reads both, plus one line with the time the threads spent inside
 * send() (the talk's "worker latency"). What it keeps of ProducerPerformance: latency = callback time − the time
 * taken just before send(), in whole ms; a window line every --reporting-interval ms from the callbacks;
 * percentiles from at most 500000 samples; fresh random upper-case letters per record (each thread its own
 * SplittableRandom and payload array); Kafka's own ThroughputThrottler, one per thread at --throughput / threads.
 * The records and --warmup-records are split over the threads as numpy.array_split would (the model's split).
 *
 * Extra flags: --threads N; --partition-choice partitioner (the client's own, for records without a key),
 * per-thread (explicit partitions t, t+N, t+2N, ... of thread t: it stays on one for a batch's worth of records,
 * their uncompressed size, then takes its next), round-robin (explicit partitions from one counter shared by the
 * threads, counter++ % partitions: what the Java client's DefaultPartitioner did for records without a key up to
 * 2.3); --partitions P (the topic's, for the explicit choices); --repeat-payload (each thread's first value in
 * every record it sends, as ProducerPerformance did before 3.0).
 */
public class ProducerThreads {
    static final int MAX_SAMPLES = 500_000;
    static final int BATCH_HEADER = 61;      // DefaultRecordBatch.RECORD_BATCH_OVERHEAD

    public static void main(String[] args) throws Exception {
        Args a = new Args(args);
        Properties props = new Properties();
        if (a.commandConfig != null) {
            try (InputStream in = new FileInputStream(a.commandConfig)) {
                props.load(in);
            }
        }
        for (String kv : a.commandProperties) {
            int eq = kv.indexOf('=');
            props.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, a.bootstrap);
        props.putIfAbsent(ProducerConfig.CLIENT_ID_CONFIG, "perf-producer-client");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        int batchSize = Integer.parseInt(props.getProperty(ProducerConfig.BATCH_SIZE_CONFIG, "16384"));
        int perBatch = Math.max(1, (batchSize - BATCH_HEADER) / recordBytes(a.recordSize));

        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props);
        Stats stats = new Stats(a.numRecords, a.reportingInterval, false);
        // The steady-state stats start with the first record past the warm-up, as ProducerPerformance's do.
        AtomicReference<Stats> steady = new AtomicReference<>();
        if (a.warmupRecords > 0)
            System.out.printf("Warmup first %d records. Steady state results will print after the complete test "
                              + "summary.%n", a.warmupRecords);
        AtomicInteger counter = new AtomicInteger(new SplittableRandom().nextInt(a.partitions));
        long[] counts = split(a.numRecords, a.threads);
        long[] warmups = split(a.warmupRecords, a.threads);
        long[] sendNanos = new long[a.threads];
        long[] errors = new long[1];
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < a.threads; t++) {
            final int id = t;
            Thread thread = new Thread(() -> {
                SplittableRandom random = new SplittableRandom();
                byte[] payload = new byte[a.recordSize];
                int[] own = ownPartitions(id, a.threads, a.partitions);
                ThroughputThrottler throttler = new ThroughputThrottler(a.throughput / a.threads,
                                                                        System.currentTimeMillis());
                long inSend = 0;
                for (long i = 0; i < counts[id]; i++) {
                    for (int j = 0; j < payload.length && (i == 0 || !a.repeatPayload); j++)
                        payload[j] = (byte) (random.nextInt(26) + 65);
                    Integer partition = null;
                    if (a.choice.equals("per-thread"))
                        partition = own[(int) ((i / perBatch) % own.length)];
                    else if (a.choice.equals("round-robin"))
                        partition = (counter.getAndIncrement() & Integer.MAX_VALUE) % a.partitions;
                    ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(a.topic, partition, null, payload);
                    if (a.warmupRecords > 0 && i == warmups[id])
                        steady.compareAndSet(null, new Stats(a.numRecords - a.warmupRecords, a.reportingInterval,
                                                             true));
                    Stats steadyStats = a.warmupRecords > 0 && i >= warmups[id] ? steady.get() : null;
                    long sendStartMs = System.currentTimeMillis();
                    long before = System.nanoTime();
                    producer.send(record, (metadata, exception) -> {
                        long now = System.currentTimeMillis();
                        if (exception != null) {
                            synchronized (errors) {
                                if (errors[0]++ < 20)
                                    System.err.println("delivery error: " + exception);
                            }
                            return;
                        }
                        stats.record((int) (now - sendStartMs), a.recordSize, now);
                        if (steadyStats != null)
                            steadyStats.record((int) (now - sendStartMs), a.recordSize, now);
                    });
                    inSend += System.nanoTime() - before;
                    if (throttler.shouldThrottle(i, sendStartMs))
                        throttler.throttle();
                }
                sendNanos[id] = inSend;
            }, "kafkasim-worker-" + t);    // /proc shows "kafkasim-worker": the measurement counts it as a worker
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads)
            thread.join();
        producer.flush();
        stats.printTotal();
        if (steady.get() != null)
            steady.get().printTotal();
        long sent = Arrays.stream(counts).sum();
        System.out.printf("%d records sent by %d threads, %.3f us avg time in send().%n", sent, a.threads,
                          Arrays.stream(sendNanos).sum() / 1000.0 / Math.max(1, sent));
        if (errors[0] > 0)
            System.err.println(errors[0] + " delivery errors");
        if (a.printMetrics)
            ToolsUtils.printMetrics(producer.metrics());
        producer.close();
    }

    /** n split over k threads as numpy.array_split: the first n % k take one more. */
    static long[] split(long n, int k) {
        long[] out = new long[k];
        for (int t = 0; t < k; t++)
            out[t] = n / k + (t < n % k ? 1 : 0);
        return out;
    }

    static int[] ownPartitions(int thread, int threads, int partitions) {
        int[] own = new int[(partitions - thread + threads - 1) / threads];
        for (int i = 0; i < own.length; i++)
            own[i] = thread + i * threads;
        return own;
    }

    /** A record's size in a v2 batch (DefaultRecord), without a key or headers, with 2-byte deltas: an estimate. */
    static int recordBytes(int valueSize) {
        int body = 1 + 2 + 2 + 1 + varintBytes(valueSize) + valueSize + 1;
        return varintBytes(body) + body;
    }

    static int varintBytes(int value) {
        int zigzag = (value << 1) ^ (value >> 31);
        int bytes = 1;
        while ((zigzag & 0xffffff80) != 0) {
            zigzag >>>= 7;
            bytes++;
        }
        return bytes;
    }

    /** ProducerPerformance.Stats: called from the producer's network thread (the callbacks) only. */
    static final class Stats {
        final long start = System.currentTimeMillis();
        final int sampling;
        final int[] latencies;
        final long reportingInterval;
        final boolean steady;
        long windowStart = start, iteration, count, bytes, totalLatency, windowCount, windowBytes, windowTotalLatency;
        int index, maxLatency, windowMaxLatency;

        Stats(long numRecords, long reportingInterval, boolean steady) {
            this.sampling = (int) (numRecords / Math.max(1, Math.min(numRecords, MAX_SAMPLES)));
            this.latencies = new int[(int) (numRecords / Math.max(1, sampling)) + 1];
            this.reportingInterval = reportingInterval;
            this.steady = steady;
        }

        synchronized void record(int latency, int size, long time) {
            count++;
            bytes += size;
            totalLatency += latency;
            maxLatency = Math.max(maxLatency, latency);
            windowCount++;
            windowBytes += size;
            windowTotalLatency += latency;
            windowMaxLatency = Math.max(windowMaxLatency, latency);
            if (iteration % sampling == 0 && index < latencies.length)
                latencies[index++] = latency;
            iteration++;
            if (!steady && time - windowStart >= reportingInterval) {
                long elapsed = Math.max(1, time - windowStart);
                System.out.printf("%d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, "
                                  + "%.1f ms max latency.%n", windowCount, 1000.0 * windowCount / elapsed,
                                  1000.0 * windowBytes / elapsed / (1024 * 1024),
                                  windowTotalLatency / (double) Math.max(1, windowCount), (double) windowMaxLatency);
                windowStart = time;
                windowCount = windowBytes = windowTotalLatency = 0;
                windowMaxLatency = 0;
            }
        }

        synchronized void printTotal() {
            long elapsed = Math.max(1, System.currentTimeMillis() - start);
            int[] sorted = Arrays.copyOf(latencies, index);
            Arrays.sort(sorted);
            int[] pct = new int[4];
            double[] at = {0.5, 0.95, 0.99, 0.999};
            for (int i = 0; i < 4; i++)
                pct[i] = sorted.length == 0 ? 0 : sorted[(int) (at[i] * sorted.length)];
            System.out.printf("%d %s, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, "
                              + "%d ms 50th, %d ms 95th, %d ms 99th, %d ms 99.9th.%n", count,
                              steady ? "steady state records sent" : "records sent", 1000.0 * count / elapsed,
                              1000.0 * bytes / elapsed / (1024 * 1024), totalLatency / (double) Math.max(1, count),
                              (double) maxLatency, pct[0], pct[1], pct[2], pct[3]);
        }
    }

    /** ProducerPerformance's flags (those kafkasim passes) and this tool's own. */
    static final class Args {
        String bootstrap, topic, commandConfig, choice = "partitioner";
        long numRecords, warmupRecords;
        int recordSize, threads = 1, partitions = 1;
        double throughput = -1;
        long reportingInterval = 5000;
        boolean printMetrics, repeatPayload;   // --repeat-payload: one value in every record (perf-test before 3.0)
        List<String> commandProperties = new ArrayList<>();

        Args(String[] args) {
            for (int i = 0; i < args.length; i++) {
                switch (args[i]) {
                    case "--bootstrap-server": bootstrap = args[++i]; break;
                    case "--topic": topic = args[++i]; break;
                    case "--num-records": numRecords = Long.parseLong(args[++i]); break;
                    case "--record-size": recordSize = Integer.parseInt(args[++i]); break;
                    case "--throughput": throughput = Double.parseDouble(args[++i]); break;
                    case "--reporting-interval": reportingInterval = Long.parseLong(args[++i]); break;
                    case "--warmup-records": warmupRecords = Long.parseLong(args[++i]); break;
                    case "--command-config": commandConfig = args[++i]; break;
                    case "--print-metrics": printMetrics = true; break;
                    case "--repeat-payload": repeatPayload = true; break;
                    case "--threads": threads = Integer.parseInt(args[++i]); break;
                    case "--partitions": partitions = Integer.parseInt(args[++i]); break;
                    case "--partition-choice": choice = args[++i]; break;
                    case "--command-property":
                        while (i + 1 < args.length && !args[i + 1].startsWith("--"))
                            commandProperties.add(args[++i]);
                        break;
                    default: throw new IllegalArgumentException("unknown flag " + args[i]);
                }
            }
            if (bootstrap == null || topic == null || recordSize <= 0 || numRecords <= 0 || threads < 1)
                throw new IllegalArgumentException("needs --bootstrap-server, --topic, --num-records > 0, "
                                                   + "--record-size > 0 and --threads >= 1");
            if (!List.of("partitioner", "per-thread", "round-robin").contains(choice))
                throw new IllegalArgumentException("--partition-choice " + choice
                                                   + ": allowed partitioner, per-thread, round-robin");
            if (choice.equals("per-thread") && partitions < threads)
                throw new IllegalArgumentException("--partition-choice per-thread needs --partitions >= --threads");
        }
    }
}
