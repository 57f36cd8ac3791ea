package org.apache.kafka.tools;
import java.util.*;
public class FillBench {
    static void fill(byte[] payload, SplittableRandom random) {
        for (int j = 0; j < payload.length; j++) payload[j] = (byte) (random.nextInt(26) + 65);
    }
    public static void main(String[] a) throws Exception {
        int size = Integer.parseInt(a[0]); int n = Integer.parseInt(a[1]);
        byte[] p = new byte[size]; SplittableRandom r = new SplittableRandom(0); List<byte[]> empty = new ArrayList<>();
        long sink = 0;
        for (int round = 0; round < 4; round++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++) { fill(p, r); sink += p[i % size]; }
            long t1 = System.nanoTime();
            for (int i = 0; i < n; i++) { p = ProducerPerformance.generateRandomPayload(size, empty, p, r, false, i); sink += p[i % size]; }
            long t2 = System.nanoTime();
            System.out.printf("round %d: hostcosts fill %.2f ns/B   perf-test %.2f ns/B%n", round, (t1-t0)/(double)n/size, (t2-t1)/(double)n/size);
        }
        System.out.println(sink);
    }
}
