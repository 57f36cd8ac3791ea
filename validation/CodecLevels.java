import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Method;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;

import org.apache.kafka.common.utils.ByteBufferOutputStream;

/**
 * kafkasim: what each compression level of the Java producer costs and saves (python -m kafkasim.validation.codec_levels
 * runs it). Batches are built the way the producer builds them: the record bytes are written through the codec's
 * own stream (Compression.wrapForOutput, as MemoryRecordsBuilder does) until the batch holds batch.size bytes, and
 * the stream is closed. The thread's CPU time per uncompressed byte and the compressed/uncompressed size are
 * printed per codec, level and payload, after a warm-up that lets the JIT compile the Java half of each codec.
 *
 * Arguments: record size, batch size, seconds per level, text sample file, then codec:level ... (codec: gzip, lz4,
 * zstd, snappy). Output: one CSV line per codec, level and payload (random-letters, text, repeated). Runs with any Java
 * client from 2.2 on: the codec streams are found by reflection, through Compression (3.8 on, KIP-390's levels) or
 * CompressionType (before, each codec at its one level: the level given is ignored).
 */
public class CodecLevels {
    static final byte MAGIC_V2 = 2;

    public static void main(String[] args) throws Exception {
        int recordSize = Integer.parseInt(args[0]);
        int batchSize = Integer.parseInt(args[1]);
        double seconds = Double.parseDouble(args[2]);
        byte[] text = Files.readAllBytes(Path.of(args[3]));
        ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
        System.out.println("codec,level,payload,ns_per_byte,ratio");
        for (int i = 4; i < args.length; i++) {
            String[] spec = args[i].split(":");
            Wrap compression = build(spec[0], Integer.parseInt(spec[1]));
            for (String payload : new String[] {"random-letters", "text", "repeated"}) {
                Records records = new Records(payload, text, recordSize);
                measure(compression, records, batchSize, seconds / 3, cpu);     // warm-up, discarded
                double[] result = measure(compression, records, batchSize, seconds, cpu);
                System.out.printf("%s,%s,%s,%.3f,%.4f%n", spec[0], spec[1], payload, result[0], result[1]);
            }
        }
    }

    /** The producer's codec stream around a batch's buffer. */
    interface Wrap {
        OutputStream around(ByteBufferOutputStream buffer) throws Exception;
    }

    static Wrap build(String codec, int level) throws Exception {
        if (!java.util.List.of("gzip", "lz4", "zstd", "snappy").contains(codec)) {
            throw new IllegalArgumentException("codec " + codec + ": allowed gzip, lz4, zstd, snappy");
        }
        try {
            Class<?> compression = Class.forName("org.apache.kafka.common.compress.Compression");
            Object builder = compression.getMethod(codec).invoke(null);
            if (!codec.equals("snappy")) {
                Method setLevel = builder.getClass().getMethod("level", int.class);
                setLevel.setAccessible(true);
                builder = setLevel.invoke(builder, level);
            }
            Method build = builder.getClass().getMethod("build");
            build.setAccessible(true);
            Object built = build.invoke(builder);
            Method wrap = compression.getMethod("wrapForOutput", ByteBufferOutputStream.class, byte.class);
            return buffer -> (OutputStream) wrap.invoke(built, buffer, MAGIC_V2);
        } catch (ClassNotFoundException before38) {
            Class<?> type = Class.forName("org.apache.kafka.common.record.CompressionType");
            Object value = type.getField(codec.toUpperCase()).get(null);
            Method wrap = type.getMethod("wrapForOutput", ByteBufferOutputStream.class, byte.class);
            return buffer -> (OutputStream) wrap.invoke(value, buffer, MAGIC_V2);
        }
    }

    /** Batches for `seconds` of CPU: {ns of CPU per uncompressed byte, compressed / uncompressed}. */
    static double[] measure(Wrap compression, Records records, int batchSize, double seconds, ThreadMXBean cpu)
            throws Exception {
        long start = cpu.getCurrentThreadCpuTime(), used = 0, in = 0, out = 0;
        while (used < seconds * 1e9) {
            ByteBufferOutputStream buffer = new ByteBufferOutputStream(batchSize);
            OutputStream stream = compression.around(buffer);
            for (int written = 0; written < batchSize; written += records.size) {
                stream.write(records.next());
            }
            stream.close();
            in += batchSize;
            out += buffer.position();
            used = cpu.getCurrentThreadCpuTime() - start;
        }
        return new double[] {(double) used / in, (double) out / in};
    }

    /** Record values as perf-test makes them (random capital letters, new for every record; repeated: the first
     *  record's in every record, as perf-test before 3.0 sent) or slices of a text. */
    static final class Records {
        final int size;
        final byte[][] values = new byte[4096][];
        int next;

        Records(String payload, byte[] text, int size) {
            this.size = size;
            Random random = new Random(1);
            for (int i = 0; i < values.length; i++) {
                if (i > 0 && payload.equals("repeated")) {
                    values[i] = values[0];
                    continue;
                }
                values[i] = new byte[size];
                for (int j = 0; j < size; j++) {
                    values[i][j] = payload.equals("text") ? text[(i * size + j) % text.length]
                                                          : (byte) ('A' + random.nextInt(26));
                }
            }
        }

        byte[] next() {
            next = (next + 1) % values.length;
            return values[next];
        }
    }
}
