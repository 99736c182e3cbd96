package org.powerinfer4j.engine.api;

import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;

/** Run in a second JVM by {@link DeterminismTest}: prints the SHA-256 of the logits' bits for a model and a token script. */
public final class LogitsProbe {
    private LogitsProbe() {}

    public static void main(String[] args) throws Exception {
        int[] script = new int[args.length - 1];
        for (int i = 1; i < args.length; i++) script[i - 1] = Integer.parseInt(args[i]);
        System.out.println(digest(DeterminismTest.run(Path.of(args[0]), 2, script)));
    }

    static String digest(List<float[]> logits) throws Exception {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        for (float[] l : logits)
            for (float f : l) {
                int b = Float.floatToRawIntBits(f);
                md.update(new byte[] {(byte) b, (byte) (b >> 8), (byte) (b >> 16), (byte) (b >>> 24)});
            }
        return HexFormat.of().formatHex(md.digest());
    }
}
