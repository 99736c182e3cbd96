package org.powerinfer4j.cli;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Entry point of the fat jar. The engine needs {@code --add-modules jdk.incubator.vector}, which no jar
 * manifest attribute can express; when the JVM was started without it (a plain {@code java -jar}), the
 * launcher starts the same JVM again with the flags and the user's own JVM options, wired to the same
 * terminal, and exits with its status. With the flags present it runs {@link Main} directly.
 *
 * <p>The two JVMs live and die together, so that a supervisor signalling the launcher's PID stops the server:
 * <ul>
 *   <li>SIGTERM and SIGHUP to the launcher are sent on to the child, and the launcher exits with the child's status
 *       once it has stopped.</li>
 *   <li>SIGINT: on a terminal, Ctrl-C already reaches both (one process group) and the launcher ignores it, so that
 *       {@code chat} can stop an answer and go on. Without a terminal (a supervisor's {@code kill -INT}) it is sent on.</li>
 *   <li>SIGKILL cannot be caught: the child polls the launcher and exits (running its shutdown hooks) once it is gone.</li>
 * </ul>
 */
public final class Launcher {
    static final List<String> ENGINE_FLAGS = List.of("--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED");
    /** Set on the child: the launcher's PID, which the child watches. */
    static final String LAUNCHER_PID_PROPERTY = "powerinfer4j.launcherPid";
    private static final long PARENT_POLL_MILLIS = 500;

    private Launcher() {}

    public static void main(String[] args) throws Exception {
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()) {
            exitWhenLauncherEnds();
            Main.main(args);
            return;
        }
        String java = ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        List<String> cmd = new ArrayList<>();
        cmd.add(java);
        cmd.addAll(ENGINE_FLAGS);
        cmd.add("-Dpowerinfer4j.quietVectorWarning=true");
        cmd.add("-D" + LAUNCHER_PID_PROPERTY + "=" + ProcessHandle.current().pid());
        cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(Launcher.class.getName());
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectInput(ProcessBuilder.Redirect.INHERIT)
                .redirectOutput(ProcessBuilder.Redirect.INHERIT).start();
        boolean terminal = System.console() != null && System.console().isTerminal();
        forwardSignals(p, terminal);
        Thread err = Thread.ofPlatform().daemon().start(() -> copyStderrDroppingIncubatorWarning(p.getErrorStream()));
        int status = p.waitFor();
        err.join(1000);
        System.exit(status);
    }

    /** In the child: exit (shutdown hooks run, so a server closes its port) when the launcher that started it is gone. */
    private static void exitWhenLauncherEnds() {
        String pid = System.getProperty(LAUNCHER_PID_PROPERTY);
        if (pid == null) return;
        ProcessHandle.of(Long.parseLong(pid)).ifPresentOrElse(launcher -> Thread.ofPlatform().daemon().name("launcher-watch").start(() -> {
            try {
                while (launcher.isAlive()) Thread.sleep(PARENT_POLL_MILLIS);
            } catch (InterruptedException e) {
                return;
            }
            System.exit(1);
        }), () -> System.exit(1));
    }

    @SuppressWarnings("removal")
    private static void forwardSignals(Process child, boolean terminal) {
        for (String name : List.of("TERM", "HUP", "INT")) {
            // on a terminal, Ctrl-C has reached the child already (same process group); a second one would count twice in chat
            boolean alreadyDelivered = terminal && name.equals("INT");
            try {
                // with a handler the launcher does not exit on the signal: it waits for the child and takes its status
                sun.misc.Signal.handle(new sun.misc.Signal(name), s -> {
                    if (!alreadyDelivered) send(child, name);
                });
            } catch (Throwable unavailable) {
                // -Xrs or a platform without the signal: the JVM's default handling applies
            }
        }
    }

    /** Sends signal {@code name} to the child: with kill(1), which can send any signal, else SIGTERM via {@link Process#destroy()}. */
    private static void send(Process child, String name) {
        try {
            Process kill = new ProcessBuilder("kill", "-s", name, Long.toString(child.pid()))
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (kill.waitFor(5, TimeUnit.SECONDS) && kill.exitValue() == 0) return;
        } catch (IOException e) {
            // no kill(1): fall through
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        child.destroy();
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
}
