package org.powerinfer4j.cli.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.powerinfer4j.cli.Main;

/** The {@code serve} command's failures: one-line errors and exit code 1, as every command. */
@Timeout(60)
class ServeCommandTest {
    record Result(int code, String err) {}

    static Result run(String... args) {
        PrintStream old = System.err;
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try {
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            int code = Main.run(args);
            return new Result(code, err.toString(StandardCharsets.UTF_8));
        } finally {
            System.setErr(old);
        }
    }

    @Test
    void badOptionsAreOneLineErrors() {
        String model = ServerTestSupport.STORIES.toString();
        Result r = run("serve", "-m", model, "--parallel", "0");
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err()).contains("error: --parallel must be >= 1").doesNotContain("\tat ");
        assertThat(run("serve", "-m", model, "--max-body", "0").err()).contains("error: --max-body");
        assertThat(run("serve", "-m", model, "--port", "70000").err()).contains("error: --port");
        assertThat(run("serve", "-m", "/no/such/model.gguf").code()).isEqualTo(1);
    }

    @Test
    void portInUseIsAnError() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Result r = run("serve", "-m", ServerTestSupport.STORIES.toString(), "-t", "1", "--port", String.valueOf(taken.getLocalPort()));
            assertThat(r.code()).isEqualTo(1);
            assertThat(r.err()).contains("error: Failed to bind").doesNotContain("\tat ");
        }
    }
}
