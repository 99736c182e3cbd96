package org.powerinfer4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

/**
 * {@code java -jar powerinfer4j.jar serve} as a supervisor sees it: a plain JVM (no vector module) runs {@link Launcher},
 * which re-executes itself as the server. Signalling the launcher's PID must stop the server, free its port and leave no
 * child behind; the launcher exits with the child's status.
 */
@EnabledOnOs({OS.LINUX, OS.MAC})
class LauncherSignalsTest {
    private static final Path STORIES = Path.of(System.getProperty("powerinfer4j.testdata"), "models/stories260K.gguf");
    private static final Pattern SERVING = Pattern.compile("serving .* on http://127\\.0\\.0\\.1:(\\d+)/v1");

    /** A launcher serving stories260K on a free port, its output drained. */
    record Served(Process launcher, List<ProcessHandle> children, int port, StringBuffer stderr) {}

    private final List<ProcessHandle> started = new java.util.ArrayList<>();

    @org.junit.jupiter.api.AfterEach
    void killLeftovers() {
        started.forEach(ProcessHandle::destroyForcibly);               // a failed assertion leaves no server behind
    }

    Served serve() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        // no --add-modules: this JVM is the launcher, as under java -jar
        Process launcher = new ProcessBuilder(java, "-Xmx256m", "-cp", System.getProperty("java.class.path"), Launcher.class.getName(),
                "serve", "-m", STORIES.toString(), "--port", "0", "-t", "1").redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        started.add(launcher.toHandle());
        launcher.getOutputStream().close();
        StringBuffer stderr = new StringBuffer();
        CompletableFuture<Integer> port = new CompletableFuture<>();
        Thread.ofPlatform().daemon().start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(launcher.getErrorStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    stderr.append(line).append('\n');
                    Matcher m = SERVING.matcher(line);
                    if (m.find()) port.complete(Integer.parseInt(m.group(1)));
                }
                port.completeExceptionally(new IllegalStateException("the server ended before serving: " + stderr));
            } catch (IOException e) {
                port.completeExceptionally(e);
            }
        });
        int p = port.get(60, TimeUnit.SECONDS);
        List<ProcessHandle> children = launcher.toHandle().descendants().toList();
        started.addAll(children);
        assertThat(children).as("the re-executed server JVM").isNotEmpty();
        return new Served(launcher, children, p, stderr);
    }

    @Test
    void sigtermStopsTheServerAndTheLauncherExitsWithItsStatus() throws Exception {
        Served s = serve();
        s.launcher().destroy();                                        // SIGTERM to the launcher only
        assertStopped(s);
        assertThat(s.launcher().exitValue()).as(s.stderr().toString()).isEqualTo(128 + 15);
    }

    @Test
    void sigintWithoutATerminalIsSentOn() throws Exception {
        Served s = serve();
        Process kill = new ProcessBuilder("kill", "-s", "INT", Long.toString(s.launcher().pid())).start();
        assertThat(kill.waitFor()).isZero();
        assertStopped(s);
        assertThat(s.launcher().exitValue()).as(s.stderr().toString()).isEqualTo(128 + 2);
    }

    @Test
    void sigkillOfTheLauncherEndsTheChild() throws Exception {
        Served s = serve();
        s.launcher().destroyForcibly();                                // SIGKILL: nothing runs in the launcher
        assertStopped(s);
    }

    private static void assertStopped(Served s) throws Exception {
        assertThat(s.launcher().waitFor(15, TimeUnit.SECONDS)).as("launcher exited").isTrue();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (s.children().stream().anyMatch(ProcessHandle::isAlive) && System.nanoTime() < deadline) Thread.sleep(100);
        assertThat(s.children().stream().filter(ProcessHandle::isAlive).toList()).as("children still running").isEmpty();
        try (ServerSocket free = new ServerSocket(s.port(), 1, java.net.InetAddress.getByName("127.0.0.1"))) {
            assertThat(free.getLocalPort()).isEqualTo(s.port());
        }
    }
}
