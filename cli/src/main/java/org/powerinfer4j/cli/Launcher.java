package org.powerinfer4j.cli;

import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Entry point of the fat jar. The engine needs {@code --add-modules jdk.incubator.vector}, which no jar
 * manifest attribute can express; when the JVM was started without it (a plain {@code java -jar}), the
 * launcher starts the same JVM again with the flags and the user's own JVM options, wired to the same
 * terminal, and exits with its status. With the flags present it runs {@link Main} directly.
 */
public final class Launcher {
    static final List<String> ENGINE_FLAGS = List.of("--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED");

    private Launcher() {}

    public static void main(String[] args) throws Exception {
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()) {
            Main.main(args);
            return;
        }
        String java = ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        List<String> cmd = new ArrayList<>();
        cmd.add(java);
        cmd.addAll(ENGINE_FLAGS);
        cmd.add("-Dpowerinfer4j.quietVectorWarning=true");
        cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(Main.class.getName());
        cmd.addAll(List.of(args));
        ignoreInterrupts(); // Ctrl-C reaches the child (same process group); the parent just waits for it
        Process p = new ProcessBuilder(cmd).redirectInput(ProcessBuilder.Redirect.INHERIT)
                .redirectOutput(ProcessBuilder.Redirect.INHERIT).start();
        Thread err = Thread.ofPlatform().daemon().start(() -> copyStderrDroppingIncubatorWarning(p.getErrorStream()));
        int status = p.waitFor();
        err.join(1000);
        System.exit(status);
    }

    /** Passes the child's stderr through unchanged, except the JVM's one-line incubator-module notice. */
    private static void copyStderrDroppingIncubatorWarning(java.io.InputStream in) {
        try (in) {
            java.io.ByteArrayOutputStream first = new java.io.ByteArrayOutputStream();
            int c;
            while ((c = in.read()) != -1 && c != '\n') first.write(c);
            String line = first.toString(java.nio.charset.StandardCharsets.UTF_8);
            if (!line.startsWith("WARNING: Using incubator modules")) {
                System.err.write(first.toByteArray());
                if (c == '\n') System.err.write('\n');
            }
            System.err.flush();
            in.transferTo(System.err);
            System.err.flush();
        } catch (java.io.IOException ignored) {
            // child gone
        }
    }

    @SuppressWarnings("removal")
    private static void ignoreInterrupts() {
        try {
            sun.misc.Signal.handle(new sun.misc.Signal("INT"), s -> { });
        } catch (Throwable ignored) {
            // signal handling unavailable: a Ctrl-C then ends both processes, which is acceptable
        }
    }
}
