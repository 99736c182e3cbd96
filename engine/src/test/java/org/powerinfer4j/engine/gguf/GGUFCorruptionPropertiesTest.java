package org.powerinfer4j.engine.gguf;

import java.io.IOException;
import java.util.Arrays;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/** Random corruption of GGUF headers; each case must open or fail with a clean {@link GGUFFormatException}. */
class GGUFCorruptionPropertiesTest {

    @Property(tries = 1000)
    void randomByteFlipsInTheHeader(@ForAll("flips") int[][] flips) throws IOException {
        byte[] b = GGUFRobustnessTest.tinyModel().clone();
        int headerEnd = (int) GGUFRobustnessTest.tinyDataOffset; // header, metadata, tensor infos
        for (int[] fl : flips) b[fl[0] % headerEnd] = (byte) fl[1];
        GGUFRobustnessTest.open(b, "flipped.gguf");
    }

    @Provide
    Arbitrary<int[][]> flips() {
        Arbitrary<int[]> one = Arbitraries.integers().between(4, 1 << 20)
                .flatMap(pos -> Arbitraries.of(0, 1, 2, 0x7F, 0x80, 0xFF).map(v -> new int[] {pos, v}));
        Arbitrary<int[]> random = Arbitraries.integers().between(0, 1 << 20)
                .flatMap(pos -> Arbitraries.integers().between(0, 255).map(v -> new int[] {pos, v}));
        return Arbitraries.oneOf(one, random).array(int[][].class).ofMinSize(1).ofMaxSize(6);
    }

    @Property(tries = 300)
    void randomGarbageAfterAValidPreamble(@ForAll("garbage") byte[] tail) {
        GGUFRobustnessTest.Raw r = new GGUFRobustnessTest.Raw().magic().i32(3);
        byte[] b = r.bytes();
        byte[] all = Arrays.copyOf(b, b.length + tail.length);
        System.arraycopy(tail, 0, all, b.length, tail.length);
        GGUFRobustnessTest.open(all, "garbage.gguf");
    }

    @Provide
    Arbitrary<byte[]> garbage() {
        return Arbitraries.bytes().array(byte[].class).ofMaxSize(512);
    }
}
